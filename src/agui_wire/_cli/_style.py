"""Colour on a terminal, and nowhere else (``validate``'s problems).

Strategy: ANSI SGR codes around a word, only when the stream is a terminal,
``NO_COLOR`` is unset or empty (https://no-color.org) and ``TERM`` is not
``dumb``; a pipe or a file gets plain text, byte for byte what it got before.
"""

from __future__ import annotations

import os
from typing import IO, Final

from ._common import is_terminal

__all__ = ["Style"]

_CODES: Final = {"error": "1;31", "note": "36", "valid": "1;32", "invalid": "1;31", "dim": "2"}


class Style:
    """``paint(text, kind)``: ``text`` in the colour of ``kind`` when colour is on."""

    def __init__(self, stream: IO[str]) -> None:
        self.on = (
            is_terminal(stream)
            and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM", "") != "dumb"
        )

    def paint(self, text: str, kind: str) -> str:
        return f"\x1b[{_CODES[kind]}m{text}\x1b[0m" if self.on else text
