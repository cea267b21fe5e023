"""The validator's state layer: deltas checked against the state a client builds.

``StateChecker`` runs ``agui_wire._runstate.RunState`` (the reference client's fold)
over the stream (agui_wire's own: the reference only warns): a delta that does not
apply is an error (``state.patch``, ``activity.patch``), since the consumer's state
has silently diverged from the producer's; a delta before any state is known, or for
an activity the client does not have, cannot be checked: a note, once
(``state.unknown``, ``activity.unknown``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._runstate import UNKNOWN, RunState, entity_key
from ._problem import Severity, label

__all__ = ["StateChecker"]

Event = dict[str, Any]
# (severity, rule, message, JSON path inside the event)
Finding = tuple[Severity, str, str, str]


class StateChecker:
    """Deltas checked against the ``RunState`` the stream builds (module doc)."""

    def __init__(self) -> None:
        self.run = RunState()
        self._state_note = False
        self._activity_notes: set[Any] = set()

    def feed(self, event: Event, et: str | None, valid: bool) -> Iterator[Finding]:
        """``valid``: the event passed the schema; the client applies no other."""
        if et == "STATE_DELTA" and self.run.state is UNKNOWN and not self._state_note:
            self._state_note = True
            yield (
                "note",
                "state.unknown",
                "STATE_DELTA before any STATE_SNAPSHOT (and no RUN_STARTED input state):"
                " the state it patches is not in the stream, so deltas are not checked"
                " until a snapshot",
                "/delta",
            )
        elif et == "ACTIVITY_DELTA":
            target = self.run.find(event.get("messageId"))
            mid = entity_key(event.get("messageId"))
            if (target is None or target.get("role") != "activity") and (
                mid not in self._activity_notes
            ):
                self._activity_notes.add(mid)
                yield (
                    "note",
                    "activity.unknown",
                    f"ACTIVITY_DELTA for activity '{label(event.get('messageId'))}', which "
                    "this stream never snapshotted: its patches are not checked (the "
                    "reference client ignores deltas for messages it does not have)",
                    "/messageId",
                )
        if not valid:
            return
        error = self.run.apply(event)
        if error is None:
            return
        if et == "STATE_DELTA":
            yield (
                "error",
                "state.patch",
                f"the delta does not apply to the state built so far: {error}; the "
                "reference client drops the whole delta (state diverges)",
                "/delta" if error.index is None else f"/delta/{error.index}",
            )
        else:
            yield (
                "error",
                "activity.patch",
                f"the patch does not apply to activity '{label(event.get('messageId'))}'"
                f" as built so far: {error}; the reference client drops it",
                "/patch" if error.index is None else f"/patch/{error.index}",
            )
