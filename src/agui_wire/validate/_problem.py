"""``Problem``: what every layer of the validator reports, and how it reads.

A problem is data (severity, stable rule code, position, JSON path, message), so
one pass over a capture collects all of them; ``str(problem)`` is the line the
CLI prints and ``as_dict()`` its JSON form. The helpers below name values and
entities the same way in every layer's messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from .._jsonnames import json_excerpt

__all__ = ["ABSENT", "Problem", "Severity", "label", "short"]

Severity = Literal["error", "note"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong (``error``) or worth knowing (``note``) about a stream."""

    severity: Severity
    rule: str  # stable code: "schema.type", "text.not-started", "state.patch", ...
    message: str
    index: int | None = None  # event index in the stream; None: the stream as a whole
    offset: int | None = None  # stream byte offset of the event, when known
    path: str = ""  # JSON pointer inside the event
    event_type: str | None = None

    def located(self, index: int | None, offset: int | None) -> Problem:
        return Problem(
            self.severity, self.rule, self.message, index, offset, self.path, self.event_type
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "message": self.message,
            "index": self.index,
            "offset": self.offset,
            "path": self.path,
            "type": self.event_type,
        }

    def __str__(self) -> str:
        if self.index is not None:
            where = f"event {self.index}"
        else:
            where = "end of stream" if self.event_type is None else ""
        if self.offset is not None:
            where += f" (byte {self.offset})"
        if self.event_type:
            where += f" {self.event_type}"
        at = f" at {self.path}" if self.path else ""
        head = f"{where.strip()}: " if where.strip() else ""
        return f"{head}{self.severity} [{self.rule}]{at}: {self.message}"


ABSENT: Final = object()  # a key the event does not have ("undefined" in JS)


def short(value: Any) -> str:
    """A value as a message quotes it."""
    return json_excerpt(value, 40)


def label(value: Any) -> str:
    """An id as a message names it: strings bare, ``ABSENT`` as JS prints it."""
    return "undefined" if value is ABSENT else value if isinstance(value, str) else short(value)
