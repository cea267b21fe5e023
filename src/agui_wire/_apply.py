"""A run's events folded into snapshots, for late joiners (``RunStore`` ``compact=True``).

Strategy: ``Compactor.feed(event)`` applies each event to messages and state the
way ``@ag-ui/client`` 1.0.0's ``defaultApplyEvents`` does (apply/default.ts,
ported rule for rule for what it does to ``messages`` and ``state``: a client
without subscribers), while tracking what is still open (text and reasoning
messages, tool calls, reasoning spans, steps, subagents). ``prefix()`` then gives
the events a joiner reads instead of the whole history:

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

from ._jsonpatch import apply_patch
from .errors import PatchError

__all__ = ["Compactor"]

Event = dict[str, Any]

_CHUNKS: Final = frozenset({"TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK"})
# Events that only append to a string: between two other events their deltas are
# collected and joined once (a 50,000-token message must not cost 50,000 copies).
_APPENDING: Final = frozenset(
    {"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS"}
)
_UNKNOWN: Final = object()


def _merge_metadata(entity: dict[str, Any], event: Event) -> None:
    """``O(entity, event)``: the event's metadata merged over the entity's (shallow)."""
    incoming = event.get("metadata")
    if incoming is None:
        return
    existing = entity.get("metadata")
    if existing is None:
        entity["metadata"] = copy.deepcopy(incoming)
    else:
        entity["metadata"] = {**existing, **copy.deepcopy(incoming)}


class Compactor:
    """Folds events into messages and state (see the module doc)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.state: Any = _UNKNOWN
        self.state_deltas: list[Event] = []  # deltas applied to a state we do not know
        self.run_started: Event | None = None
        self.terminal: Event | None = None
        self.foldable = True
        self.count = 0
        # what is open -> its start event; insertion order is opening order
        self._open: dict[tuple[str, Any], Event] = {}
        self._appended: dict[int, tuple[dict[str, Any], str, list[str]]] = {}
        self._last_message: dict[str, Any] | None = None
        self._last_call: tuple[dict[str, Any], dict[str, Any]] | None = None

    # -- folding -------------------------------------------------------------------

    def feed(self, event: Event) -> None:
        self.count += 1
        if not self.foldable:
            return
        etype = event.get("type")
        if etype not in _APPENDING:
            self._flush()
        handler = getattr(self, f"_on_{etype}", None) if isinstance(etype, str) else None
        if etype in _CHUNKS or (etype == "RUN_STARTED" and self.run_started is not None):
            self.foldable = False
        elif handler is not None:
            handler(event)

    def _find(self, message_id: Any) -> dict[str, Any] | None:
        last = self._last_message
        if last is not None and last.get("id") == message_id:
            return last
        for m in self.messages:
            if m.get("id") == message_id:
                self._last_message = m
                return m
        return None

    def _append(self, entity: dict[str, Any], key: str, delta: Any) -> None:
        """``entity[key] += delta``, deferred to ``_flush``."""
        entry = self._appended.get(id(entity))
        if entry is None:
            base = entity.get(key)
            entry = self._appended[id(entity)] = (
                entity,
                key,
                [base if isinstance(base, str) else ""],
            )
        entry[2].append(str(delta))

    def _flush(self) -> None:
        """Join the deltas appended since the last event of another kind (and forget
        the lookup caches: other events may replace messages)."""
        for entity, key, parts in self._appended.values():
            entity[key] = "".join(parts)
        self._appended.clear()
        self._last_message = None
        self._last_call = None

    def _opened(self, kind: str, key: Any, event: Event) -> None:
        if (kind, key) not in self._open:
            self._open[(kind, key)] = event

    def _closed(self, kind: str, key: Any) -> None:
        self._open.pop((kind, key), None)

    def _on_RUN_STARTED(self, event: Event) -> None:
        self.run_started = event
        run_input = event.get("input")
        if not isinstance(run_input, dict):
            return
        for message in run_input.get("messages") or ():
            if not isinstance(message, dict):
                continue
            message = copy.deepcopy(message)
            if "subagentRunId" in message and message["subagentRunId"] is None:
                del message["subagentRunId"]
            if self._find(message.get("id")) is None:
                self.messages.append(message)
        if self.state is _UNKNOWN and "state" in run_input:
            # The client's state at the start is the input it sent.
            self.state = copy.deepcopy(run_input["state"])

    def _on_RUN_FINISHED(self, event: Event) -> None:
        self.terminal = event

    def _on_RUN_ERROR(self, event: Event) -> None:
        self.terminal = event

    def _text_start(self, event: Event, role: str, kind: str) -> None:
        mid = event.get("messageId")
        existing = self._find(mid)
        if existing is not None and existing.get("role") == "activity":
            return
        message = existing
        if message is None:
            message = {"id": mid, "role": role, "content": ""}
            if kind == "text" and event.get("name") is not None:
                message["name"] = event["name"]
            if event.get("subagentRunId") is not None:
                message["subagentRunId"] = event["subagentRunId"]
            self.messages.append(message)
        _merge_metadata(message, event)
        self._opened(kind, mid, event)

    def _text_content(self, event: Event, kind: str) -> None:
        mid = event.get("messageId")
        message = self._find(mid)
        if message is None or message.get("role") == "activity":
            return
        self._append(message, "content", event.get("delta"))
        _merge_metadata(message, event)

    def _text_end(self, event: Event, kind: str) -> None:
        mid = event.get("messageId")
        message = self._find(mid)
        if message is None or message.get("role") == "activity":
            return
        _merge_metadata(message, event)
        self._closed(kind, mid)

    def _on_TEXT_MESSAGE_START(self, event: Event) -> None:
        self._text_start(event, event.get("role") or "assistant", "text")

    def _on_TEXT_MESSAGE_CONTENT(self, event: Event) -> None:
        self._text_content(event, "text")

    def _on_TEXT_MESSAGE_END(self, event: Event) -> None:
        self._text_end(event, "text")

    def _on_REASONING_MESSAGE_START(self, event: Event) -> None:
        self._text_start(event, "reasoning", "reasoning_message")

    def _on_REASONING_MESSAGE_CONTENT(self, event: Event) -> None:
        self._text_content(event, "reasoning_message")

    def _on_REASONING_MESSAGE_END(self, event: Event) -> None:
        self._text_end(event, "reasoning_message")

    def _on_REASONING_START(self, event: Event) -> None:
        self._opened("reasoning", event.get("messageId"), event)

    def _on_REASONING_END(self, event: Event) -> None:
        self._closed("reasoning", event.get("messageId"))

    def _on_STEP_STARTED(self, event: Event) -> None:
        self._opened("step", (event.get("subagentRunId"), event.get("stepName")), event)

    def _on_STEP_FINISHED(self, event: Event) -> None:
        self._closed("step", (event.get("subagentRunId"), event.get("stepName")))

    def _on_SUBAGENT_STARTED(self, event: Event) -> None:
        self._opened("subagent", event.get("subagentRunId"), event)

    def _on_SUBAGENT_FINISHED(self, event: Event) -> None:
        self._closed("subagent", event.get("subagentRunId"))

    def _on_SUBAGENT_ERROR(self, event: Event) -> None:
        self._closed("subagent", event.get("subagentRunId"))

    def _tool_call(self, call_id: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        last = self._last_call
        if last is not None and last[1].get("id") == call_id:
            return last
        for m in self.messages:
            for call in m.get("toolCalls") or ():
                if call.get("id") == call_id:
                    self._last_call = (m, call)
                    return m, call
        return None

    def _on_TOOL_CALL_START(self, event: Event) -> None:
        call_id = event.get("toolCallId")
        name = event.get("toolCallName")
        self._opened("tool_call", call_id, event)
        found = self._tool_call(call_id)
        if found is not None:
            found[1]["function"]["name"] = name
            _merge_metadata(found[1], event)
            return
        known = {m.get("id") for m in self.messages}
        parent = self._parent(event.get("parentMessageId"), call_id)
        if parent.get("id") not in known and event.get("subagentRunId") is not None:
            parent.setdefault("subagentRunId", event["subagentRunId"])
        if parent.get("toolCalls") is None:
            parent["toolCalls"] = []
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        parent["toolCalls"].append(call)
        _merge_metadata(call, event)

    def _parent(self, parent_id: Any, call_id: Any) -> dict[str, Any]:
        """``ie(messages, parentMessageId, toolCallId)``: the assistant message a tool
        call goes to, created when there is none."""
        if parent_id:
            existing = self._find(parent_id)
            if existing is not None and existing.get("role") == "assistant":
                return existing
            created = {
                "id": call_id if existing is not None else parent_id,
                "role": "assistant",
                "toolCalls": [],
            }
        else:
            created = {"id": call_id, "role": "assistant", "toolCalls": []}
        self.messages.append(created)
        return created

    def _on_TOOL_CALL_ARGS(self, event: Event) -> None:
        found = self._tool_call(event.get("toolCallId"))
        if found is None:
            return
        self._append(found[1]["function"], "arguments", event.get("delta", ""))
        _merge_metadata(found[1], event)

    def _on_TOOL_CALL_END(self, event: Event) -> None:
        found = self._tool_call(event.get("toolCallId"))
        if found is None:
            return
        _merge_metadata(found[1], event)
        self._closed("tool_call", event.get("toolCallId"))

    def _on_TOOL_CALL_RESULT(self, event: Event) -> None:
        call_id = event.get("toolCallId")
        message: dict[str, Any] = {
            "id": event.get("messageId"),
            "toolCallId": call_id,
            "role": event.get("role") or "tool",
            "content": event.get("content"),
        }
        if event.get("subagentRunId") is not None:
            message["subagentRunId"] = event["subagentRunId"]
        _merge_metadata(message, event)
        at = next(
            (
                i
                for i, m in enumerate(self.messages)
                if m.get("role") == "assistant"
                and any(c.get("id") == call_id for c in m.get("toolCalls") or ())
            ),
            -1,
        )
        if at == -1:
            self.messages.append(message)
            return
        at += 1
        while at < len(self.messages) and self.messages[at].get("role") == "tool":
            at += 1
        self.messages.insert(at, message)

    def _on_STATE_SNAPSHOT(self, event: Event) -> None:
        self.state = copy.deepcopy(event.get("snapshot"))
        self.state_deltas = []

    def _on_STATE_DELTA(self, event: Event) -> None:
        if self.state is _UNKNOWN:
            self.state_deltas.append(event)
            return
        try:
            self.state = apply_patch(self.state, event.get("delta"))
        except PatchError:
            return  # the reference warns and keeps the state as it was

    def _on_MESSAGES_SNAPSHOT(self, event: Event) -> None:
        incoming = []
        for m in event.get("messages") or ():
            if isinstance(m, dict) and "subagentRunId" in m and m["subagentRunId"] is None:
                m = {k: v for k, v in m.items() if k != "subagentRunId"}
            incoming.append(copy.deepcopy(m))
        by_id = {m.get("id"): m for m in incoming if isinstance(m, dict)}
        authoritative = _authoritative_activity_types(event)
        has_activity = any(m.get("role") == "activity" for m in by_id.values())
        has_reasoning = any(m.get("role") == "reasoning" for m in by_id.values())

        def kept(m: dict[str, Any]) -> bool:
            if m.get("role") == "activity":
                if authoritative is None:
                    return False
                if authoritative is not _UNKNOWN:
                    return m.get("activityType") not in authoritative
                return not has_activity
            return m.get("role") == "reasoning" and not has_reasoning

        self.messages = [
            by_id.get(m.get("id"), m) for m in self.messages if m.get("id") in by_id or kept(m)
        ]
        present = {m.get("id") for m in self.messages}
        self.messages += [m for m in incoming if m.get("id") not in present]

    def _on_ACTIVITY_SNAPSHOT(self, event: Event) -> None:
        mid = event.get("messageId")
        at = next((i for i, m in enumerate(self.messages) if m.get("id") == mid), -1)
        replace = event.get("replace")
        replace = True if replace is None else replace
        fresh: dict[str, Any] = {
            "id": mid,
            "role": "activity",
            "activityType": event.get("activityType"),
            "content": copy.deepcopy(event.get("content")),
        }
        if event.get("subagentRunId") is not None:
            fresh["subagentRunId"] = event["subagentRunId"]
        if at == -1:
            self.messages.append(fresh)
            target = fresh
        elif self.messages[at].get("role") == "activity":
            if replace:
                updated = {
                    **self.messages[at],
                    "activityType": event.get("activityType"),
                    "content": copy.deepcopy(event.get("content")),
                    "subagentRunId": event.get("subagentRunId"),
                }
                if event.get("subagentRunId") is None:
                    del updated["subagentRunId"]
                self.messages[at] = updated
            target = self.messages[at]
        else:
            if replace:
                self.messages[at] = fresh
            target = self.messages[at]
        _merge_metadata(target, event)

    def _on_ACTIVITY_DELTA(self, event: Event) -> None:
        mid = event.get("messageId")
        at = next((i for i, m in enumerate(self.messages) if m.get("id") == mid), -1)
        if at == -1 or self.messages[at].get("role") != "activity":
            return
        message = self.messages[at]
        _merge_metadata(message, event)
        try:
            content = apply_patch(message.get("content") or {}, event.get("patch") or [])
        except PatchError:
            return  # the reference warns and keeps the activity as it was
        self.messages[at] = {
            **message,
            "content": content,
            "activityType": event.get("activityType"),
        }

    def _on_REASONING_ENCRYPTED_VALUE(self, event: Event) -> None:
        entity = event.get("entityId")
        if event.get("subtype") == "tool-call":
            found = self._tool_call(entity)
            if found is not None and found[0].get("role") == "assistant":
                found[1]["encryptedValue"] = event.get("encryptedValue")
        else:
            message = self._find(entity)
            if message is not None and message.get("role") != "activity":
                message["encryptedValue"] = event.get("encryptedValue")

    # -- the prefix -----------------------------------------------------------------

    def prefix(self) -> list[Event]:
        """The events standing for everything fed so far (see the module doc)."""
        self._flush()
        if not self.foldable or self.run_started is None:
            raise ValueError("these events cannot be folded (see Compactor.foldable)")
        out: list[Event] = [self.run_started]
        if self.messages:
            out.append({"type": "MESSAGES_SNAPSHOT", "messages": copy.deepcopy(self.messages)})
        if self.state is not _UNKNOWN:
            out.append({"type": "STATE_SNAPSHOT", "snapshot": copy.deepcopy(self.state)})
        out += self.state_deltas
        out += [{k: v for k, v in e.items() if k != "metadata"} for e in self._open.values()]
        if self.terminal is not None:
            out.append(self.terminal)
        return out


def _authoritative_activity_types(event: Event) -> Any:
    """``y(event)``: the snapshot's ``metadata["@ag-ui/client"].authoritativeActivityTypes``:
    ``_UNKNOWN`` when absent, ``None`` when null, else the list (``[]`` if malformed)."""
    metadata = event.get("metadata")
    if not isinstance(metadata, dict) or "@ag-ui/client" not in metadata:
        return _UNKNOWN
    own = metadata["@ag-ui/client"]
    if not isinstance(own, dict):
        return []
    if "authoritativeActivityTypes" not in own:
        return _UNKNOWN
    types = own["authoritativeActivityTypes"]
    if types is None:
        return None
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return types
    return []
