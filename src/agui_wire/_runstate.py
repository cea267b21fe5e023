"""A run's events applied to its messages and state, as the reference client does.

``RunState.apply(event)`` folds one event into ``messages`` (a list of
``@ag-ui/core`` message dicts) and ``state`` (any JSON value, ``UNKNOWN`` until the
stream shows it) the way ``@ag-ui/client`` 1.0.0's ``defaultApplyEvents`` does
(apply/default.ts, rule for rule, for a client without subscribers): text and
reasoning messages grow from their deltas, tool calls land in their parent
assistant message (created when missing), results after it, activities are
snapshotted and patched, ``MESSAGES_SNAPSHOT`` replaces what it names and drops
activities and reasoning it makes stale, metadata is merged shallowly. State comes
from ``STATE_SNAPSHOT``, else from the ``RUN_STARTED`` input echo (the state the
client sent), and ``STATE_DELTA`` patches it (RFC 6902, ``agui_wire._jsonpatch``).
A patch that does not apply leaves things as they were, as in the client (which
``console.warn``s); ``apply`` returns that ``PatchError``. Events are trusted to be
schema-valid (the client refuses others before applying); ``*_CHUNK`` events are
not expanded. Ids are compared as JS compares them (``entity_key``).

Contract: one port of the client, which two layers use: the validator's state layer
(``validate._state.StateChecker``) and the run store's compaction
(``agui_wire._apply.Compactor``, whose snapshots are ``messages``/``state`` as they
stand); so it sits below both. tests/interop/test_run_state.py holds the fold to
the reference client. Unlike the client's scans and string concatenation
(quadratic over a long run), lookups by id are indexed and consecutive deltas are
joined once, when anything reads.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._jsonnames import json_excerpt
from ._jsonpatch import apply_patch
from .errors import PatchError

__all__ = ["UNKNOWN", "RunState", "entity_key"]


class _Same:
    """An id that is a JSON array or object: equal only to itself, as JS compares
    objects, and named by its JSON in messages."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

    def __repr__(self) -> str:
        return json_excerpt(self.value, 40)


def entity_key(value: Any) -> Any:
    """A dict/set key for an id as JS would compare it (objects never match)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return _Same(value)


UNKNOWN: Final = object()  # RunState.state before the stream shows it
# Events that only append to a string (RunState._grow).
_APPENDING: Final = frozenset(
    {"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS"}
)

Event = dict[str, Any]
Message = dict[str, Any]


def _merge_metadata(entity: dict[str, Any], event: Event) -> None:
    """The event's metadata merged over the entity's (shallow, as the client's)."""
    incoming = event.get("metadata")
    if incoming is None:
        return
    existing = entity.get("metadata")
    if existing is None:
        entity["metadata"] = copy.deepcopy(incoming)
    else:
        entity["metadata"] = {**existing, **copy.deepcopy(incoming)}


def _without_null_owner(message: Any) -> Any:
    """A message as the client keeps it: ``subagentRunId: null`` left out."""
    if (
        isinstance(message, dict)
        and "subagentRunId" in message
        and message["subagentRunId"] is None
    ):
        return {k: v for k, v in message.items() if k != "subagentRunId"}
    return message


class RunState:
    """A run's messages and state as the reference client builds them (module doc).

    ``messages`` is for reading: the lookups by message and tool call id are
    indexed (the client scans the list, which is quadratic over a long run), and
    the index follows only the changes ``apply`` makes.
    """

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self.state: Any = UNKNOWN
        # deltas appended to a string since the last event of another kind, joined
        # once (a 50,000-token message must not cost 50,000 copies):
        # id(entity) -> (entity, key, parts)
        self._grown: dict[int, tuple[dict[str, Any], str, list[str]]] = {}
        self._ids: dict[Any, Message] = {}  # id -> the first message with it
        self._calls: dict[Any, tuple[Message, dict[str, Any]]] = {}  # call id -> first holder
        self._stale = False  # the list changed other than at its end: rebuild the index

    def apply(self, event: Event) -> PatchError | None:
        """Fold one schema-valid event in; the patch error when a delta did not apply."""
        etype = event.get("type")
        if self._grown and etype not in _APPENDING:
            self._join()
        handler = _APPLY.get(etype)  # type: ignore[arg-type]
        return None if handler is None else handler(self, event)

    @property
    def messages(self) -> list[Message]:
        """The messages as they stand (for reading; ``apply`` alone changes them)."""
        if self._grown:
            self._join()
        return self._messages

    def find(self, message_id: Any) -> Message | None:
        """The first message with this id (the client's ``messages.find``)."""
        if self._grown:
            self._join()
        return self._find(message_id)

    def tool_call(self, call_id: Any) -> tuple[Message, dict[str, Any]] | None:
        """The first message holding a tool call with this id, and the call."""
        if self._grown:
            self._join()
        return self._tool_call(call_id)

    def _find(self, message_id: Any) -> Message | None:
        if self._stale:
            self._reindex()
        return self._ids.get(entity_key(message_id))

    def _tool_call(self, call_id: Any) -> tuple[Message, dict[str, Any]] | None:
        if self._stale:
            self._reindex()
        return self._calls.get(entity_key(call_id))

    # -- growing strings -----------------------------------------------------------------

    def _grow(self, entity: dict[str, Any], key: str, delta: Any) -> None:
        """``entity[key] += delta`` (a non-string start counts as ""), joined later."""
        entry = self._grown.get(id(entity))
        if entry is None:
            base = entity.get(key)
            entry = self._grown[id(entity)] = (entity, key, [base if isinstance(base, str) else ""])
        entry[2].append(delta if isinstance(delta, str) else str(delta))

    def _join(self) -> None:
        for entity, key, parts in self._grown.values():
            entity[key] = "".join(parts)
        self._grown.clear()

    # -- the list and its index ----------------------------------------------------------

    def _reindex(self) -> None:
        self._ids, self._calls, self._stale = {}, {}, False
        for m in self._messages:
            self._note(m)

    def _note(self, message: Message) -> None:
        """Index a message that sits after every message indexed so far."""
        self._ids.setdefault(entity_key(message.get("id")), message)
        calls = message.get("toolCalls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict):
                self._calls.setdefault(entity_key(call.get("id")), (message, call))

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        if not self._stale:
            self._note(message)

    def _add_call(self, message: Message, call: dict[str, Any]) -> None:
        message["toolCalls"].append(call)
        if not self._stale:
            self._calls.setdefault(entity_key(call.get("id")), (message, call))

    def _insert(self, at: int, message: Message) -> None:
        self._messages.insert(at, message)
        if entity_key(message.get("id")) in self._ids or message.get("toolCalls"):
            self._stale = True  # it may now come first for its id
        elif not self._stale:
            self._note(message)

    def _replace(self, message: Message, by: Message) -> None:
        """``message`` (in the list) becomes ``by``, in place, keeping its index entry."""
        if message.get("toolCalls"):
            self._stale = True
        message.clear()
        message.update(by)

    def _parent(self, parent_id: Any, call_id: Any) -> tuple[Message, bool]:
        """The assistant message a tool call goes to, created when there is none,
        and whether a message with its id existed before."""
        if parent_id:
            existing = self._find(parent_id)
            if existing is not None and existing.get("role") == "assistant":
                return existing, True
            created = {
                "id": call_id if existing is not None else parent_id,
                "role": "assistant",
                "toolCalls": [],
            }
        else:
            created = {"id": call_id, "role": "assistant", "toolCalls": []}
        known = self._find(created["id"]) is not None
        self._append(created)
        return created, known


# -- what each event does (apply/default.ts's switch) --------------------------------------

Apply = Callable[[RunState, Event], "PatchError | None"]


def _run_started(run: RunState, event: Event) -> None:
    run_input = event.get("input")
    if not isinstance(run_input, dict):
        return
    for message in run_input.get("messages") or ():
        if isinstance(message, dict) and run._find(message.get("id")) is None:
            run._append(copy.deepcopy(_without_null_owner(message)))
    if run.state is UNKNOWN and "state" in run_input:
        # The client's state at the start is the input it sent.
        run.state = copy.deepcopy(run_input["state"])


def _text_start(role: str | None) -> Apply:
    """TEXT_MESSAGE_START (``role`` None: the event's, else assistant) and
    REASONING_MESSAGE_START (``role`` "reasoning")."""

    def handler(run: RunState, event: Event) -> None:
        mid = event.get("messageId")
        message = run._find(mid)
        if message is not None and message.get("role") == "activity":
            return
        if message is None:
            message = {"id": mid, "role": role or event.get("role") or "assistant", "content": ""}
            if role is None and event.get("name") is not None:
                message["name"] = event["name"]
            if event.get("subagentRunId") is not None:
                message["subagentRunId"] = event["subagentRunId"]
            run._append(message)
        _merge_metadata(message, event)

    return handler


def _text_content(run: RunState, event: Event) -> None:
    message = run._find(event.get("messageId"))
    if message is None or message.get("role") == "activity":
        return
    run._grow(message, "content", event.get("delta"))
    _merge_metadata(message, event)


def _text_end(run: RunState, event: Event) -> None:
    message = run._find(event.get("messageId"))
    if message is not None and message.get("role") != "activity":
        _merge_metadata(message, event)


def _tool_call_start(run: RunState, event: Event) -> None:
    call_id = event.get("toolCallId")
    name = event.get("toolCallName")
    found = run._tool_call(call_id)
    if found is not None:
        found[1]["function"]["name"] = name
        _merge_metadata(found[1], event)
        return
    parent, known = run._parent(event.get("parentMessageId"), call_id)
    if not known and event.get("subagentRunId") is not None:
        parent.setdefault("subagentRunId", event["subagentRunId"])
    if parent.get("toolCalls") is None:
        parent["toolCalls"] = []
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    run._add_call(parent, call)
    _merge_metadata(call, event)


def _tool_call_args(run: RunState, event: Event) -> None:
    found = run._tool_call(event.get("toolCallId"))
    if found is not None:
        run._grow(found[1]["function"], "arguments", event.get("delta", ""))
        _merge_metadata(found[1], event)


def _tool_call_end(run: RunState, event: Event) -> None:
    found = run._tool_call(event.get("toolCallId"))
    if found is not None:
        _merge_metadata(found[1], event)


def _tool_call_result(run: RunState, event: Event) -> None:
    call_id = event.get("toolCallId")
    message: Message = {
        "id": event.get("messageId"),
        "toolCallId": call_id,
        "role": event.get("role") or "tool",
        "content": event.get("content"),
    }
    if event.get("subagentRunId") is not None:
        message["subagentRunId"] = event["subagentRunId"]
    _merge_metadata(message, event)
    # after the first assistant message with the call, and the results already there
    found = run._tool_call(call_id)
    if found is None:
        run._append(message)
        return
    messages = run._messages
    if found[0].get("role") == "assistant":  # the usual case: find it from the end
        at = next(i for i in range(len(messages) - 1, -1, -1) if messages[i] is found[0])
    else:
        at = next(
            (
                i
                for i, m in enumerate(messages)
                if m.get("role") == "assistant"
                and any(c.get("id") == call_id for c in m.get("toolCalls") or ())
            ),
            -1,
        )
        if at == -1:
            run._append(message)
            return
    at += 1
    while at < len(messages) and messages[at].get("role") == "tool":
        at += 1
    run._insert(at, message)


def _state_snapshot(run: RunState, event: Event) -> None:
    run.state = copy.deepcopy(event.get("snapshot"))


def _state_delta(run: RunState, event: Event) -> PatchError | None:
    if run.state is UNKNOWN:
        return None
    try:
        run.state = apply_patch(run.state, event.get("delta"))
    except PatchError as exc:
        return exc  # the client warns and keeps the state as it was
    return None


def _messages_snapshot(run: RunState, event: Event) -> None:
    incoming = [
        copy.deepcopy(_without_null_owner(m))
        for m in event.get("messages") or ()
        if isinstance(m, dict)
    ]
    by_id = {entity_key(m.get("id")): m for m in incoming}
    authoritative = _authoritative_activity_types(event)
    has_activity = any(m.get("role") == "activity" for m in by_id.values())
    has_reasoning = any(m.get("role") == "reasoning" for m in by_id.values())

    def kept(m: Message) -> bool:
        """A message the snapshot does not name that the client keeps."""
        if m.get("role") == "activity":
            if authoritative is None:
                return False
            if authoritative is not UNKNOWN:
                return m.get("activityType") not in authoritative
            return not has_activity
        return m.get("role") == "reasoning" and not has_reasoning

    messages = [
        by_id.get(entity_key(m.get("id")), m)
        for m in run._messages
        if entity_key(m.get("id")) in by_id or kept(m)
    ]
    present = {entity_key(m.get("id")) for m in messages}
    run._messages = messages + [m for m in incoming if entity_key(m.get("id")) not in present]
    run._stale = True


def _authoritative_activity_types(event: Event) -> Any:
    """The snapshot's ``metadata["@ag-ui/client"].authoritativeActivityTypes``:
    ``UNKNOWN`` when absent, ``None`` when null, else the list (``[]`` if malformed)."""
    metadata = event.get("metadata")
    if not isinstance(metadata, dict) or "@ag-ui/client" not in metadata:
        return UNKNOWN
    own = metadata["@ag-ui/client"]
    if not isinstance(own, dict):
        return []
    if "authoritativeActivityTypes" not in own:
        return UNKNOWN
    types = own["authoritativeActivityTypes"]
    if types is None:
        return None
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return types
    return []


def _activity_snapshot(run: RunState, event: Event) -> None:
    existing = run._find(event.get("messageId"))
    replace = event.get("replace")
    replace = True if replace is None else replace
    fresh: Message = {
        "id": event.get("messageId"),
        "role": "activity",
        "activityType": event.get("activityType"),
        "content": copy.deepcopy(event.get("content")),
    }
    if event.get("subagentRunId") is not None:
        fresh["subagentRunId"] = event["subagentRunId"]
    if existing is None:
        run._append(fresh)
        existing = fresh
    elif existing.get("role") == "activity":
        if replace:
            updated = {
                **existing,
                "activityType": event.get("activityType"),
                "content": copy.deepcopy(event.get("content")),
                "subagentRunId": event.get("subagentRunId"),
            }
            if event.get("subagentRunId") is None:
                del updated["subagentRunId"]
            run._replace(existing, updated)
    elif replace:
        run._replace(existing, fresh)
    else:
        return  # another role's message, kept as it is (metadata too)
    _merge_metadata(existing, event)


def _activity_delta(run: RunState, event: Event) -> PatchError | None:
    message = run._find(event.get("messageId"))
    if message is None or message.get("role") != "activity":
        return None  # the client ignores deltas for messages it does not have
    _merge_metadata(message, event)
    try:
        content = apply_patch(message.get("content") or {}, event.get("patch") or [])
    except PatchError as exc:
        return exc  # the client warns and keeps the activity as it was
    run._replace(
        message, {**message, "content": content, "activityType": event.get("activityType")}
    )
    return None


def _encrypted_value(run: RunState, event: Event) -> None:
    entity = event.get("entityId")
    if event.get("subtype") == "tool-call":
        found = run._tool_call(entity)
        if found is not None and found[0].get("role") == "assistant":
            found[1]["encryptedValue"] = event.get("encryptedValue")
    else:
        message = run._find(entity)
        if message is not None and message.get("role") != "activity":
            message["encryptedValue"] = event.get("encryptedValue")


#: What each event type does to messages and state; the others do nothing.
_APPLY: Final[Mapping[str, Apply]] = {
    "RUN_STARTED": _run_started,
    "TEXT_MESSAGE_START": _text_start(None),
    "TEXT_MESSAGE_CONTENT": _text_content,
    "TEXT_MESSAGE_END": _text_end,
    "REASONING_MESSAGE_START": _text_start("reasoning"),
    "REASONING_MESSAGE_CONTENT": _text_content,
    "REASONING_MESSAGE_END": _text_end,
    "TOOL_CALL_START": _tool_call_start,
    "TOOL_CALL_ARGS": _tool_call_args,
    "TOOL_CALL_END": _tool_call_end,
    "TOOL_CALL_RESULT": _tool_call_result,
    "STATE_SNAPSHOT": _state_snapshot,
    "STATE_DELTA": _state_delta,
    "MESSAGES_SNAPSHOT": _messages_snapshot,
    "ACTIVITY_SNAPSHOT": _activity_snapshot,
    "ACTIVITY_DELTA": _activity_delta,
    "REASONING_ENCRYPTED_VALUE": _encrypted_value,
}
