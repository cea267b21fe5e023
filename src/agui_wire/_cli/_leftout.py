"""What a command leaves out, said: every skipped or refused event, listed.

Strategy: a command that goes past an event it cannot use (a frame that does
not decode under ``--keep-going``, an event of a later protocol skipped, an
event that cannot be encoded) hands it to one ``LeftOut`` log, which prints it
at once on stderr — input, index, byte offset, type, reason — for the first
``SHOWN`` of them, every one with ``-v``, and at the end one summary line with
the count by type and how many were not listed. Reasons coming
from the library name Python keywords (``lossy_numbers=True``); ``cli_words``
turns them into the options of this command line (``--lossy-numbers``).

Contract: ``add`` never raises; ``summary()`` is ``None`` when nothing was left
out or every one was listed (``always``: only when nothing was); with ``keep``,
``items`` holds every entry (``cost`` puts them in its report: it holds every event
anyway); without, only the count by type is kept, so ``decode --keep-going`` on a
stream of a million bad frames holds no more than on a clean one.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Final

from ._common import say

__all__ = ["LATER", "SHOWN", "LeftOut", "Skipped", "cli_words"]

SHOWN: Final = 5
LATER: Final = "of a later protocol"  # the type of an event skipped for its unknown Event arm

# keyword=value (or "max_frame_size N") in a library message -> the option of the same
# meaning here; keywords with no option here (max_depth) are left as they are
_KEYWORD = re.compile(
    r"\b(lossy_numbers|keep_going|extra_keys|unknown_events|invalid_utf8|max_frame_size)"
    r"""(?:=|(?= \d))(True|'[^']*'|"[^"]*"|\w+| \d+)"""
)


def cli_words(text: str) -> str:
    """``pass lossy_numbers=True`` -> ``pass --lossy-numbers``;
    ``invalid_utf8='replace'`` -> ``--invalid-utf8 replace``."""

    def flag(m: re.Match[str]) -> str:
        option = "--" + m.group(1).replace("_", "-")
        value = m.group(2).strip("'\" ")
        return option if value == "True" else f"{option} {value}"

    return _KEYWORD.sub(flag, text)


@dataclass(frozen=True, slots=True)
class Skipped:
    """One event (or frame) left out."""

    input: str  # the source's label
    index: int | None
    offset: int | None  # byte offset in the input
    type: str | None  # the event type, when known
    reason: str
    size: int | None = None  # its bytes in the input, when known
    unit: str = "event"  # what index counts: "event" (SSE, JSON Lines) or "frame" (binary)
    path: str = ""  # JSON pointer to the offending value inside the event, when known

    def describe(self) -> str:
        where = [] if self.index is None else [f"{self.unit} {self.index}"]
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        if self.type and self.type != LATER:  # the reason says it
            where.append(self.type)
        head = f"{self.input}: " + ", ".join(where)
        if self.path:
            head += f" at {self.path}"
        return f"{head}: {self.reason}" if where else f"{self.input}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class LeftOut:
    """The events a command left out (see the module doc)."""

    def __init__(
        self, *, verbose: bool = False, action: str = "left out", keep: bool = False
    ) -> None:
        self.verbose = verbose
        self.action = action  # "left out", "skipped", "not encoded"
        self.items: list[Skipped] = []  # every entry, with ``keep``; else none
        self._keep = keep
        self._count = 0
        self._types: Counter[str] = Counter()  # entries by type, in order of appearance

    def __len__(self) -> int:
        return self._count

    def add(
        self,
        input: str,
        index: int | None,
        offset: int | None,
        type: str | None,
        reason: str,
        size: int | None = None,
        unit: str = "event",
        path: str = "",
    ) -> Skipped:
        item = Skipped(input, index, offset, type, cli_words(reason), size, unit, path)
        self._count += 1
        self._types[type or "undecodable"] += 1
        if self._keep:
            self.items.append(item)
        if self.verbose or self._count <= SHOWN:
            said = item.describe()
            say(said if item.reason.startswith(self.action) else f"{said} ({self.action})")
        return item

    def by_type(self) -> str:
        """``STATE_SNAPSHOT x3, RAW x2``."""
        return ", ".join(f"{t} x{n}" if n > 1 else t for t, n in self._types.most_common())

    def summary(self, *, always: bool = False) -> str | None:
        """The count, by type, and how many were not listed; ``None`` when nothing was
        left out, or (unless ``always``) when every one was listed."""
        n = self._count
        hidden = 0 if self.verbose else max(n - SHOWN, 0)
        if not n or not (hidden or always):
            return None
        text = f"{n:,} event(s) {self.action} ({self.by_type()})"
        if hidden:
            text += f"; {hidden:,} not listed above (-v lists every one)"
        return text
