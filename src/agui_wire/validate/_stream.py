"""``StreamValidator``: the three layers over one stream, with positions.

Strategy: ``feed(event, index=, offset=)`` runs the schema layer
(``_shapes.validate_event``), then the sequence layer (``_sequence.Sequencer``)
and the state layer (``_state.StateChecker``) on the event, and locates what they
find at the event's index and byte offset; ``close()`` adds what only the end of
the stream shows. Each layer can be switched off. Nothing raises: bad input is a
problem like any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._problem import Problem
from .._shapes import validate_event
from ._sequence import Sequencer
from ._state import StateChecker

__all__ = ["StreamValidator", "validate_stream"]


class StreamValidator:
    """Incremental checker of one stream: ``feed(event)`` per event, then ``close()``.

    ``schema``, ``sequence`` and ``state`` switch the three layers (package doc).
    ``feed`` and ``close`` return the problems found by that call; ``problems``
    holds all of them. ``index`` defaults to the count of events fed.
    """

    def __init__(self, *, schema: bool = True, sequence: bool = True, state: bool = True) -> None:
        self.schema = schema
        self.sequence = sequence
        self.state = state
        self.problems: list[Problem] = []
        self.events = 0
        self._sequencer = Sequencer()
        self._state = StateChecker()

    def feed(
        self, event: Any, *, index: int | None = None, offset: int | None = None
    ) -> list[Problem]:
        if index is None:
            index = self.events
        self.events += 1
        etype = event.get("type") if isinstance(event, dict) else None
        et = etype if isinstance(etype, str) else None
        found: list[Problem] = []
        # the state layer needs the verdict even when the schema layer is off
        shape = validate_event(event) if self.schema or self.state else []
        if self.schema:
            found += [p.located(index, offset) for p in shape]
        if isinstance(event, dict):
            if self.sequence:
                for rule, message in self._sequencer.feed(event, et):
                    found.append(Problem("error", rule, message, index, offset, "", et))
            if self.state:
                valid = not any(p.severity == "error" for p in shape)
                for severity, rule, message, path in self._state.feed(event, et, valid):
                    found.append(Problem(severity, rule, message, index, offset, path, et))
        self.problems += found
        return found

    def close(self, *, end_offset: int | None = None) -> list[Problem]:
        """End of stream: the problems only the end can show."""
        found: list[Problem] = []
        if self.sequence:
            for severity, rule, message in self._sequencer.close(self.events):
                found.append(Problem(severity, rule, message, None, end_offset))
        self.problems += found
        return found


def validate_stream(
    events: Iterable[Any],
    *,
    offsets: Sequence[int] | None = None,
    end_offset: int | None = None,
    schema: bool = True,
    sequence: bool = True,
    state: bool = True,
) -> list[Problem]:
    """Every problem of a whole stream of events (schema, sequence, state)."""
    validator = StreamValidator(schema=schema, sequence=sequence, state=state)
    for i, event in enumerate(events):
        validator.feed(event, index=i, offset=None if offsets is None else offsets[i])
    validator.close(end_offset=end_offset)
    return validator.problems
