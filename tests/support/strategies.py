"""Hypothesis strategies: any valid AG-UI 1.0 event of each of the 31 types.

Valid means what ``@ag-ui/core`` 1.0.0's zod schemas accept, written as the JSON
``JSON.parse`` would give: camelCase keys, absent optionals omitted. Optional
fields are sometimes present, sometimes absent and sometimes ``None`` (which the
encoders treat as absent, as the reference's omitOptionalNulls does). JSON values
cover unicode (astral, U+2028), big and tiny floats, integers up to 2**53, -0.0,
integer-like and empty keys, and deep nesting.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

SAFE = 2**53 - 1

ids = st.text(max_size=12)
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
keys = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
    st.sampled_from(
        ["", "0", "1", "2", "10", "007", "-1", "4294967294", "4294967295", "__proto__"]
    ),
)
numbers = st.one_of(
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 0.1, 5e-324, 1e300, -1e-300, 2.0**53, 1e21, 3.141592653589793]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(keys, json_values, max_size=4)
non_null_json = json_values.filter(lambda v: v is not None)


@st.composite
def deep_json(draw: st.DrawFn, min_depth: int = 30, max_depth: int = 1000) -> Any:
    """Objects and arrays nested ``min_depth``..``max_depth`` levels deep."""
    depth = draw(st.integers(min_depth, max_depth))
    shape = draw(st.lists(st.booleans(), min_size=depth, max_size=depth))
    value: Any = draw(scalars)
    for is_dict in shape:
        value = {draw(keys): value} if is_dict else [value]
    return value


def opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """An optional field's value: a value, or None (means absent)."""
    return st.one_of(strategy, strategy, st.none())


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {k: v if isinstance(v, st.SearchStrategy) else st.just(v) for k, v in required.items()},
        optional={k: opt(v) for k, v in (optional or {}).items()},
    )


timestamps = st.one_of(
    st.integers(-SAFE, SAFE), st.sampled_from([0, -1, 1700000000000, 1712345678901, SAFE, -SAFE])
)
base = {"timestamp": timestamps, "rawEvent": non_null_json, "metadata": json_objects}
attributable = {**base, "subagentRunId": ids}
text_roles = st.sampled_from(["developer", "system", "assistant", "user"])

sources = st.one_of(
    obj({"type": "data", "value": texts, "mimeType": texts}),
    obj({"type": "url", "value": texts}, {"mimeType": texts}),
    obj({"type": "file", "value": texts}, {"provider": texts, "mimeType": texts}),
)
parts = st.one_of(
    obj({"type": "text", "text": texts}, {"id": ids, "metadata": non_null_json}),
    *[
        obj({"type": kind, "source": sources}, {"id": ids, "metadata": non_null_json})
        for kind in ("image", "audio", "video", "document")
    ],
)
part_lists = st.lists(parts, max_size=3)
tool_calls = obj(
    {
        "id": ids,
        "type": "function",
        "function": obj({"name": texts, "arguments": texts}),
    },
    {"encryptedValue": texts, "metadata": json_objects},
)
_msg_common = {"subagentRunId": ids, "metadata": json_objects}
messages = st.one_of(
    obj(
        {"id": ids, "role": "developer", "content": texts},
        {**_msg_common, "name": texts, "encryptedValue": texts},
    ),
    obj(
        {"id": ids, "role": "system", "content": texts},
        {**_msg_common, "name": texts, "encryptedValue": texts},
    ),
    obj(
        {"id": ids, "role": "assistant"},
        {
            **_msg_common,
            "name": texts,
            "encryptedValue": texts,
            "content": texts,
            "toolCalls": st.lists(tool_calls, max_size=2),
        },
    ),
    obj(
        {"id": ids, "role": "user", "content": st.one_of(texts, part_lists)},
        {**_msg_common, "name": texts, "encryptedValue": texts},
    ),
    obj(
        {"id": ids, "role": "tool", "content": st.one_of(texts, part_lists), "toolCallId": ids},
        {**_msg_common, "error": texts, "encryptedValue": texts},
    ),
    obj(
        {"id": ids, "role": "activity", "activityType": texts, "content": json_objects}, _msg_common
    ),
    obj(
        {"id": ids, "role": "reasoning", "content": texts}, {**_msg_common, "encryptedValue": texts}
    ),
)
pointers = st.lists(st.text(max_size=5), max_size=3).map(
    lambda segs: "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segs)
)
patch_ops = st.one_of(
    *[obj({"op": op, "path": pointers, "value": json_values}) for op in ("add", "replace", "test")],
    obj({"op": "remove", "path": pointers}),
    *[obj({"op": op, "path": pointers, "from": pointers}) for op in ("move", "copy")],
)
patches = st.lists(patch_ops, max_size=4)
interrupts = obj(
    {"id": ids, "reason": texts},
    {
        "subagentRunId": ids,
        "message": texts,
        "toolCallId": ids,
        "responseSchema": json_objects,
        "expiresAt": texts,
        "metadata": json_objects,
    },
)
tokens = st.integers(0, SAFE)
usage = obj(
    {},
    {
        "provider": texts,
        "model": texts,
        "inputTokens": tokens,
        "outputTokens": tokens,
        "totalTokens": tokens,
        "reasoningTokens": tokens,
        "cachedInputTokens": tokens,
        "cacheWriteInputTokens": tokens,
    },
)
usages = st.lists(usage, max_size=2)
tools = obj(
    {"name": texts, "description": texts}, {"parameters": non_null_json, "metadata": json_objects}
)
run_input = obj(
    {"threadId": ids, "runId": ids, "messages": st.lists(messages, max_size=3)},
    {
        "protocolVersion": st.just("1.0"),
        "parentRunId": ids,
        "state": json_values,
        "tools": st.lists(tools, max_size=2),
        "context": st.lists(obj({"description": texts, "value": texts}), max_size=2),
        "forwardedProps": non_null_json,
        "resume": st.lists(
            obj(
                {"interruptId": ids, "status": st.sampled_from(["resolved", "cancelled"])},
                {"payload": non_null_json, "metadata": json_objects},
            ),
            max_size=2,
        ),
    },
)
run_outcomes = st.one_of(
    obj({"type": "success"}, {"pendingToolCallIds": st.lists(ids, max_size=3)}),
    obj({"type": "interrupt", "interrupts": st.lists(interrupts, min_size=1, max_size=2)}),
    obj({"type": "cancelled"}),
)
subagent_outcomes = st.one_of(
    obj({"type": "success"}),
    obj({"type": "suspended"}, {"interruptIds": st.lists(ids, max_size=3)}),
)


def _event(
    etype: str, required: dict[str, Any], optional: dict[str, Any]
) -> st.SearchStrategy[Any]:
    return obj({"type": etype, **required}, optional)


EVENT_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "TEXT_MESSAGE_START": _event(
        "TEXT_MESSAGE_START",
        {"messageId": ids},
        {**attributable, "role": text_roles, "name": texts},
    ),
    "TEXT_MESSAGE_CONTENT": _event(
        "TEXT_MESSAGE_CONTENT", {"messageId": ids, "delta": texts}, attributable
    ),
    "TEXT_MESSAGE_END": _event("TEXT_MESSAGE_END", {"messageId": ids}, attributable),
    "TEXT_MESSAGE_CHUNK": _event(
        "TEXT_MESSAGE_CHUNK",
        {},
        {**attributable, "messageId": ids, "role": text_roles, "delta": texts, "name": texts},
    ),
    "TOOL_CALL_START": _event(
        "TOOL_CALL_START",
        {"toolCallId": ids, "toolCallName": texts},
        {**attributable, "parentMessageId": ids},
    ),
    "TOOL_CALL_ARGS": _event("TOOL_CALL_ARGS", {"toolCallId": ids, "delta": texts}, attributable),
    "TOOL_CALL_END": _event("TOOL_CALL_END", {"toolCallId": ids}, attributable),
    "TOOL_CALL_CHUNK": _event(
        "TOOL_CALL_CHUNK",
        {},
        {
            **attributable,
            "toolCallId": ids,
            "toolCallName": texts,
            "parentMessageId": ids,
            "delta": texts,
        },
    ),
    "TOOL_CALL_RESULT": _event(
        "TOOL_CALL_RESULT",
        {"messageId": ids, "toolCallId": ids, "content": st.one_of(texts, part_lists)},
        {**attributable, "role": st.just("tool")},
    ),
    "STATE_SNAPSHOT": _event("STATE_SNAPSHOT", {"snapshot": json_values}, attributable),
    "STATE_DELTA": _event("STATE_DELTA", {"delta": patches}, attributable),
    "MESSAGES_SNAPSHOT": _event(
        "MESSAGES_SNAPSHOT", {"messages": st.lists(messages, max_size=4)}, base
    ),
    "ACTIVITY_SNAPSHOT": _event(
        "ACTIVITY_SNAPSHOT",
        {"messageId": ids, "activityType": texts, "content": json_objects},
        {**attributable, "replace": st.booleans()},
    ),
    "ACTIVITY_DELTA": _event(
        "ACTIVITY_DELTA", {"messageId": ids, "activityType": texts, "patch": patches}, attributable
    ),
    "RAW": _event("RAW", {"event": json_values}, {**attributable, "source": texts}),
    "CUSTOM": _event("CUSTOM", {"name": texts, "value": json_values}, attributable),
    "RUN_STARTED": _event(
        "RUN_STARTED",
        {"threadId": ids, "runId": ids},
        {**base, "protocolVersion": st.just("1.0"), "parentRunId": ids, "input": run_input},
    ),
    "RUN_FINISHED": _event(
        "RUN_FINISHED",
        {"threadId": ids, "runId": ids},
        {**base, "result": non_null_json, "outcome": run_outcomes, "usage": usages},
    ),
    "RUN_ERROR": _event("RUN_ERROR", {"message": texts}, {**base, "code": texts, "usage": usages}),
    "STEP_STARTED": _event("STEP_STARTED", {"stepName": texts}, attributable),
    "STEP_FINISHED": _event("STEP_FINISHED", {"stepName": texts}, attributable),
    "REASONING_START": _event("REASONING_START", {"messageId": ids}, attributable),
    "REASONING_MESSAGE_START": _event(
        "REASONING_MESSAGE_START", {"messageId": ids, "role": "reasoning"}, attributable
    ),
    "REASONING_MESSAGE_CONTENT": _event(
        "REASONING_MESSAGE_CONTENT", {"messageId": ids, "delta": texts}, attributable
    ),
    "REASONING_MESSAGE_END": _event("REASONING_MESSAGE_END", {"messageId": ids}, attributable),
    "REASONING_MESSAGE_CHUNK": _event(
        "REASONING_MESSAGE_CHUNK", {}, {**attributable, "messageId": ids, "delta": texts}
    ),
    "REASONING_END": _event("REASONING_END", {"messageId": ids}, attributable),
    "REASONING_ENCRYPTED_VALUE": _event(
        "REASONING_ENCRYPTED_VALUE",
        {
            "subtype": st.sampled_from(["tool-call", "message"]),
            "entityId": ids,
            "encryptedValue": texts,
        },
        attributable,
    ),
    "SUBAGENT_STARTED": _event(
        "SUBAGENT_STARTED",
        {"subagentRunId": ids, "name": texts},
        {
            **base,
            "description": texts,
            "parentSubagentRunId": ids,
            "parentToolCallId": ids,
            "parentMessageId": ids,
        },
    ),
    "SUBAGENT_FINISHED": _event(
        "SUBAGENT_FINISHED",
        {"subagentRunId": ids},
        {**base, "result": non_null_json, "outcome": subagent_outcomes},
    ),
    "SUBAGENT_ERROR": _event(
        "SUBAGENT_ERROR", {"subagentRunId": ids, "message": texts}, {**base, "code": texts}
    ),
}

events = st.one_of(*EVENT_STRATEGIES.values())


@st.composite
def deep_events(draw: st.DrawFn) -> dict[str, Any]:
    """An event carrying a JSON value nested up to ~1000 levels."""
    value = draw(deep_json())
    kind = draw(st.sampled_from(["STATE_SNAPSHOT", "CUSTOM", "RAW", "metadata"]))
    if kind == "STATE_SNAPSHOT":
        return {"type": kind, "snapshot": value}
    if kind == "CUSTOM":
        return {"type": kind, "name": "deep", "value": value}
    if kind == "RAW":
        return {"type": kind, "event": value}
    return {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"deep": value}}
