"""Exit codes, errors, stderr messages and the terminal test shared by every
``agui-wire`` command.

Contract: a command returns its exit status or raises ``CliError``; ``main``
turns the error into one ``agui-wire: ...`` line on stderr and its code. Codes:
0 ok; 1 problems found (decode errors, invalid events, failed encodes); 2 usage
error (bad options, ambiguous input, binary output to a terminal); 3 I/O error
(a file that cannot be read or written, an input over a size limit).
"""

from __future__ import annotations

import sys
from typing import Any, Final, TextIO

__all__ = [
    "EXIT_IO",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "EXIT_USAGE",
    "CliError",
    "InputError",
    "UsageError",
    "human_bytes",
    "is_terminal",
    "say",
]

EXIT_OK: Final = 0
EXIT_PROBLEMS: Final = 1
EXIT_USAGE: Final = 2
EXIT_IO: Final = 3
PROG: Final = "agui-wire"


class CliError(Exception):
    """An error ending the command with ``code`` and ``message`` on stderr."""

    code = EXIT_PROBLEMS

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class UsageError(CliError):
    code = EXIT_USAGE


class InputError(CliError):
    code = EXIT_IO


def say(message: str, stream: TextIO | None = None) -> None:
    """One ``agui-wire: ...`` line on stderr."""
    print(f"{PROG}: {message}", file=stream or sys.stderr, flush=True)


def human_bytes(n: float) -> str:
    """``1.2 MiB``-style size."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal; ``False`` for a closed, replaced or absent one."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
