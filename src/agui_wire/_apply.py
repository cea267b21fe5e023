"""A run's events folded into snapshots, for late joiners (``RunStore`` ``compact=True``).

Strategy: ``Compactor.feed(event)`` applies each event to messages and state the
way ``@ag-ui/client`` 1.0.0's ``defaultApplyEvents`` does (``_runstate.RunState``,
the port of the client the validator folds with too), while tracking what is still
open (text and reasoning messages, tool calls, reasoning spans, steps, subagents).
``prefix()`` then gives the events a joiner reads instead of the whole history:

* the run's ``RUN_STARTED`` as it was (the client's verifier wants it first, and
  it carries the input echo the client applies);
* ``MESSAGES_SNAPSHOT`` of the messages the events built, in their order, open
  ones with their content (and tool call arguments) so far;
* ``STATE_SNAPSHOT`` of the state, when the events determine it (a
  ``STATE_SNAPSHOT``, or the ``RUN_STARTED`` input's ``state``, before any
  delta); otherwise the deltas themselves, since they apply to the joiner's own
  state just as they did to the producer's client;
* what is open, in the order it opened: its start event without ``metadata``
  (the snapshot has it merged already), so the client's verifier accepts the
  tail's continuations; a start for a message or tool call the snapshot holds
  creates nothing in the client, and the tail's deltas append to it;
* the terminal event, when the run has ended.

A client applying the prefix and then the tail ends with the messages and state
of one that read every event (tests/redis hold this against the reference).
What the prefix leaves out: closed steps, ``CUSTOM``/``RAW`` events, and the
messages a client had before the run (only the ``RUN_STARTED`` echo is known).
A run with ``*_CHUNK`` events, or with more than one ``RUN_STARTED``, is not
folded (``foldable`` is false): chunk expansion is the client's, with rules of
its own, and the caller replays such a run whole.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from ._runstate import UNKNOWN, RunState

__all__ = ["Compactor"]

Event = dict[str, Any]

_CHUNKS: Final = frozenset({"TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK"})
# Entities opened and closed unconditionally: event type -> (kind, opens, its key).
_PAIRS: Final = {
    "REASONING_START": ("reasoning", True, ("messageId",)),
    "REASONING_END": ("reasoning", False, ("messageId",)),
    "STEP_STARTED": ("step", True, ("subagentRunId", "stepName")),
    "STEP_FINISHED": ("step", False, ("subagentRunId", "stepName")),
    "SUBAGENT_STARTED": ("subagent", True, ("subagentRunId",)),
    "SUBAGENT_FINISHED": ("subagent", False, ("subagentRunId",)),
    "SUBAGENT_ERROR": ("subagent", False, ("subagentRunId",)),
}
# Messages opened and closed when they are not activities: type -> (kind, opens).
_MESSAGES: Final = {
    "TEXT_MESSAGE_START": ("text", True),
    "TEXT_MESSAGE_END": ("text", False),
    "REASONING_MESSAGE_START": ("reasoning_message", True),
    "REASONING_MESSAGE_END": ("reasoning_message", False),
}


class Compactor:
    """Folds events into messages and state (see the module doc)."""

    def __init__(self) -> None:
        self.run = RunState()
        self.state_deltas: list[Event] = []  # deltas applied to a state we do not know
        self.run_started: Event | None = None
        self.terminal: Event | None = None
        self.foldable = True
        self.count = 0
        # what is open -> its start event; insertion order is opening order
        self._open: dict[tuple[str, Any], Event] = {}

    def feed(self, event: Event) -> None:
        self.count += 1
        if not self.foldable:
            return
        etype = event.get("type")
        if etype in _CHUNKS or (etype == "RUN_STARTED" and self.run_started is not None):
            self.foldable = False
            return
        self._track(event, etype)
        self.run.apply(event)

    def _track(self, event: Event, etype: Any) -> None:
        """What the event opens or closes, and the run's ends (before it is applied)."""
        if etype in _PAIRS:
            kind, opens, keys = _PAIRS[etype]
            key = event.get(keys[0]) if len(keys) == 1 else tuple(event.get(k) for k in keys)
            self._mark(kind, key, event, opens)
        elif etype in _MESSAGES:
            kind, opens = _MESSAGES[etype]
            message = self.run.find(event.get("messageId"))
            if opens and message is not None and message.get("role") == "activity":
                return
            if not opens and (message is None or message.get("role") == "activity"):
                return
            self._mark(kind, event.get("messageId"), event, opens)
        elif etype == "TOOL_CALL_START":
            self._mark("tool_call", event.get("toolCallId"), event, True)
        elif etype == "TOOL_CALL_END":
            if self.run.tool_call(event.get("toolCallId")) is not None:
                self._mark("tool_call", event.get("toolCallId"), event, False)
        elif etype == "STATE_SNAPSHOT":
            self.state_deltas = []
        elif etype == "STATE_DELTA" and self.run.state is UNKNOWN:
            self.state_deltas.append(event)
        elif etype == "RUN_STARTED":
            self.run_started = event
        elif etype in ("RUN_FINISHED", "RUN_ERROR"):
            self.terminal = event

    def _mark(self, kind: str, key: Any, event: Event, opens: bool) -> None:
        if not opens:
            self._open.pop((kind, key), None)
        elif (kind, key) not in self._open:
            self._open[(kind, key)] = event

    def prefix(self) -> list[Event]:
        """The events standing for everything fed so far (see the module doc)."""
        if not self.foldable or self.run_started is None:
            raise ValueError("these events cannot be folded (see Compactor.foldable)")
        out: list[Event] = [self.run_started]
        if self.run.messages:
            out.append({"type": "MESSAGES_SNAPSHOT", "messages": copy.deepcopy(self.run.messages)})
        if self.run.state is not UNKNOWN:
            out.append({"type": "STATE_SNAPSHOT", "snapshot": copy.deepcopy(self.run.state)})
        out += self.state_deltas
        out += [{k: v for k, v in e.items() if k != "metadata"} for e in self._open.values()]
        if self.terminal is not None:
            out.append(self.terminal)
        return out
