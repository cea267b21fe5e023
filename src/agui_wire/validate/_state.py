"""The state layer: snapshots and deltas applied to a run's state, as a client does.

What it checks (agui_wire's own; the reference client only ``console.warn``s):
every ``STATE_DELTA`` must apply (RFC 6902, ``agui_wire._jsonpatch``) to the
state built so far from ``STATE_SNAPSHOT`` (or the ``RUN_STARTED`` input's
``state``), every ``ACTIVITY_DELTA`` to its activity's content from
``ACTIVITY_SNAPSHOT`` (or a ``MESSAGES_SNAPSHOT``/input message of role
``activity``). A patch that fails leaves the state as it was, as in the
reference client, which applies deltas with ``fast-json-patch`` and drops one
that fails: an error here (``state.patch``, ``activity.patch``), since the
consumer's state has silently diverged from the producer's. A delta before any
state is known, or for an activity the stream never showed, cannot be checked: a
note, once (``state.unknown``, ``activity.unknown``).

Strategy: ``StateChecker.feed(event, et, patch_ok)`` per event; a delta whose
own shape the schema layer refused (``patch_ok`` false) is not applied.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from .._jsonpatch import apply_patch
from ..errors import PatchError
from ._problem import Severity, entity_key, label

__all__ = ["StateChecker"]

_UNKNOWN: Final = object()  # state not known (no snapshot yet)

# (severity, rule, message, JSON path inside the event)
Finding = tuple[Severity, str, str, str]


class StateChecker:
    """The run's state and activity contents as a client builds them."""

    def __init__(self) -> None:
        self.state: Any = _UNKNOWN
        self._state_note = False
        self._activities: dict[Any, Any] = {}  # activity message id -> content
        self._activity_notes: set[Any] = set()

    def feed(self, event: dict[str, Any], et: str | None, patch_ok: bool) -> Iterator[Finding]:
        if et == "STATE_SNAPSHOT" and "snapshot" in event:
            self.state = event["snapshot"]
        elif et == "RUN_STARTED":
            inp = event.get("input")
            if isinstance(inp, dict) and inp.get("state") is not None and self.state is _UNKNOWN:
                self.state = inp["state"]
            self._remember_activities(inp.get("messages") if isinstance(inp, dict) else None, False)
        elif et == "MESSAGES_SNAPSHOT":
            self._remember_activities(event.get("messages"), True)
        elif et == "STATE_DELTA":
            yield from self._state_delta(event, patch_ok)
        elif et == "ACTIVITY_SNAPSHOT":
            mid = entity_key(event.get("messageId"))
            if (mid not in self._activities or event.get("replace") is not False) and isinstance(
                event.get("content"), dict
            ):
                self._activities[mid] = event["content"]
        elif et == "ACTIVITY_DELTA":
            yield from self._activity_delta(event, patch_ok)

    def _state_delta(self, event: dict[str, Any], patch_ok: bool) -> Iterator[Finding]:
        if self.state is _UNKNOWN:
            if not self._state_note:
                self._state_note = True
                yield (
                    "note",
                    "state.unknown",
                    "STATE_DELTA before any STATE_SNAPSHOT (and no RUN_STARTED input state):"
                    " the state it patches is not in the stream, so deltas are not checked"
                    " until a snapshot",
                    "/delta",
                )
        elif patch_ok:
            try:
                self.state = apply_patch(self.state, event.get("delta"))
            except PatchError as exc:
                yield (
                    "error",
                    "state.patch",
                    f"the delta does not apply to the state built so far: {exc}; the "
                    "reference client drops the whole delta (state diverges)",
                    "/delta" if exc.index is None else f"/delta/{exc.index}",
                )

    def _activity_delta(self, event: dict[str, Any], patch_ok: bool) -> Iterator[Finding]:
        mid = entity_key(event.get("messageId"))
        if mid not in self._activities:
            if mid not in self._activity_notes:
                self._activity_notes.add(mid)
                yield (
                    "note",
                    "activity.unknown",
                    f"ACTIVITY_DELTA for activity '{label(event.get('messageId'))}', "
                    "which this stream never snapshotted: its patches are not checked (the "
                    "reference client ignores deltas for messages it does not have)",
                    "/messageId",
                )
        elif patch_ok:
            try:
                self._activities[mid] = apply_patch(self._activities[mid], event.get("patch"))
            except PatchError as exc:
                yield (
                    "error",
                    "activity.patch",
                    f"the patch does not apply to activity '{label(event.get('messageId'))}'"
                    f" as built so far: {exc}; the reference client drops it",
                    "/patch" if exc.index is None else f"/patch/{exc.index}",
                )

    def _remember_activities(self, messages: Any, authoritative: bool) -> None:
        if not isinstance(messages, list):
            return
        for msg in messages:
            if (
                isinstance(msg, dict)
                and msg.get("role") == "activity"
                and isinstance(msg.get("content"), dict)
            ):
                mid = entity_key(msg.get("id"))
                if authoritative or mid not in self._activities:
                    self._activities[mid] = msg["content"]
