"""A progress bar on stderr for work that takes more than a moment.

Strategy: ``Progress.update(done)`` is cheap enough to call per chunk or per
repeat; the bar is drawn only once the work has run for ``delay`` seconds, then
at most ``rate`` times a second, on one line rewritten with ``\\r``, and erased by
``close()``. With a known ``total`` it shows a bar, percentage and rate; without,
a running count. Disabled (a no-op) unless stderr is a terminal, or when the
user passed ``--no-progress``, so pipes, files and CI logs never see it.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TextIO

from ._common import human_bytes, is_terminal

__all__ = ["Progress", "progress_enabled"]


def progress_enabled(no_progress: bool = False, stream: TextIO | None = None) -> bool:
    """Whether to draw: stderr is a terminal and the user did not opt out."""
    if no_progress or os.environ.get("AGUI_WIRE_NO_PROGRESS"):
        return False
    return is_terminal(stream or sys.stderr)


class Progress:
    """One progress line (see the module doc). ``unit`` "B" prints sizes."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        enabled: bool = True,
        unit: str = "B",
        stream: TextIO | None = None,
        delay: float = 0.4,
        rate: float = 10.0,
        width: int = 28,
    ) -> None:
        self.label = label
        self.total = total
        self.enabled = enabled
        self.unit = unit
        self.stream = stream or sys.stderr
        self.delay = delay
        self.interval = 1.0 / rate
        self.width = width
        self.start = time.monotonic()
        self.done = 0
        self._next = self.start + delay
        self._drawn = False

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval
        self._draw(now)

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def _amount(self, n: float) -> str:
        return human_bytes(n) if self.unit == "B" else f"{n:,.0f} {self.unit}"

    def line(self, now: float | None = None) -> str:
        """The text of the bar as it would be drawn now."""
        elapsed = max((now or time.monotonic()) - self.start, 1e-9)
        speed = self.done / elapsed
        rate = f"{self._amount(speed)}/s"
        if self.total:
            frac = min(self.done / self.total, 1.0)
            fill = int(frac * self.width)
            bar = "#" * fill + "-" * (self.width - fill)
            return (
                f"{self.label} [{bar}] {frac * 100:5.1f}% "
                f"{self._amount(self.done)} / {self._amount(self.total)}  {rate}"
            )
        return f"{self.label} {self._amount(self.done)}  {rate}"

    def _draw(self, now: float) -> None:
        text = self.line(now)
        self.stream.write("\r" + text[:200] + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the line (if one was drawn)."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
