"""The shared corpus: valid AG-UI 1.0 events, each exactly as ``@ag-ui/core`` parses it.

Every event is a JSON dict (camelCase keys, absent optionals omitted, never an
optional key set to None) that ``EventSchemas.parse`` of ``@ag-ui/core`` 1.0.0
accepts and that ``@ag-ui/proto`` encodes without a warning;
tests/interop/test_corpus_valid.py proves both against the pinned packages.

Coverage: all 31 types, each minimal (required fields only) and full (every
optional field set), then the edge cases of the wire contract (§1.3):
timestamps 0, -1, 1.7e12, ±(2^53-1); ``rawEvent`` of every JSON kind;
``metadata`` empty, with null values, nested, with integer-like keys (JS orders
them first), with an empty key; opaque JSON values (null, booleans, integers,
doubles down to 5e-324, -0.0, ±(2^53-1), strings with astral characters, NUL and
U+2028, arrays, objects, nesting); explicit presence ("" / 0 / false in
optional fields); all six patch ops; all seven message roles; all five
content-part kinds and all three source kinds; full ``RunAgentInput``; every
``RUN_FINISHED`` and ``SUBAGENT_FINISHED`` outcome; usage arrays; multi-byte
length prefixes.

Deliberately absent: extra (unknown) keys and lone surrogates, which are valid
JSON but which the binary transport drops or replaces by design (wire-contract
§2.1, §3.2) — they belong in tests of that behaviour, not in a round-trip corpus.

``ROUND_TRIP_LOSSY`` names the events whose reference binary round trip
(``encode`` then ``decode``) is not the identity, with the reason, and
``SSE_LOSSY`` those the reference SSE path changes; every other event comes back
equal (as parsed JSON: key order and -0.0 vs 0 aside). test_corpus_valid.py
checks both claims against the reference.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from agui_wire._sample import realistic_run

__all__ = [
    "CASES",
    "CORPUS",
    "EVENT_TYPES",
    "JSON_VALUES",
    "METADATA",
    "RAW_EVENTS",
    "ROUND_TRIP_LOSSY",
    "SSE_LOSSY",
    "TIMESTAMPS",
    "corpus_by_type",
    "realistic_run",
]

Event = dict[str, Any]

MAX_SAFE = 2**53 - 1

# The 31 types in EventType enum order.
EVENT_TYPES = (
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
    "MESSAGES_SNAPSHOT",
    "RAW",
    "CUSTOM",
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    "STEP_STARTED",
    "STEP_FINISHED",
    "SUBAGENT_STARTED",
    "SUBAGENT_FINISHED",
    "SUBAGENT_ERROR",
    "TEXT_MESSAGE_CHUNK",
    "TOOL_CALL_CHUNK",
    "TOOL_CALL_RESULT",
    "ACTIVITY_SNAPSHOT",
    "ACTIVITY_DELTA",
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_MESSAGE_CHUNK",
    "REASONING_END",
    "REASONING_ENCRYPTED_VALUE",
)

# Events that belong to a subagent may say so; these types may not (or must).
_NOT_ATTRIBUTABLE = {"MESSAGES_SNAPSHOT", "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"}
_SUBAGENT_TYPES = {"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"}

TIMESTAMPS: tuple[int, ...] = (0, -1, 1, 1_700_000_000_000, 1_712_345_678_901, MAX_SAFE, -MAX_SAFE)

_UNICODE = 'héllo wörld — 日本語 😀 𝄞 \u2028\u2029 tab\t nl\n cr\r nul\x00 esc\x1b del\x7f /\\"'

# Opaque JSON values (google.protobuf.Value): (name, value).
JSON_VALUES: tuple[tuple[str, Any], ...] = (
    ("null", None),
    ("true", True),
    ("false", False),
    ("zero", 0),
    ("one", 1),
    ("minus-one", -1),
    ("half", 0.5),
    ("minus-2.25", -2.25),
    ("tenth", 0.1),
    ("pi", math.pi),
    ("1e300", 1e300),
    ("minus-1e-300", -1e-300),
    ("min-subnormal", 5e-324),
    ("max-double", 1.7976931348623157e308),
    ("minus-zero", -0.0),
    ("max-safe", MAX_SAFE),
    ("minus-max-safe", -MAX_SAFE),
    ("2^53", 2.0**53),
    # JS and Python spell these differently: byte-identical SSE needs JS formatting.
    ("1e21", 1e21),
    ("1e20", 1e20),
    ("1e-7", 1e-7),
    ("1e-6", 1e-6),
    ("float-100", 100.0),
    ("empty-string", ""),
    ("string", "value"),
    ("unicode", _UNICODE),
    ("astral-only", "😀"),
    ("line-separator", "\u2028"),
    ("empty-list", []),
    ("empty-object", {}),
    ("list", [None, True, False, 0, -1.5, "s", [], {}, [1, [2, [3]]], {"k": "v"}]),
    (
        "object",
        {"null": None, "bool": True, "num": 42, "str": "s", "list": [1, 2], "obj": {"a": {}}},
    ),
    ("nested", {"a": [{"b": [{"c": [{"d": {"e": [1, 2, {"f": None}]}}]}]}]}),
    ("deep-objects", {"l1": {"l2": {"l3": {"l4": {"l5": {"l6": {"l7": {"l8": {"l9": {}}}}}}}}}}),
    ("deep-lists", [[[[[[[[[[[["bottom"]]]]]]]]]]]]),
    ("integer-like-keys", {"b": 1, "a": 2, "10": 3, "2": 4, "0": 5}),
    (
        "index-boundary-keys",
        {"z": 0, "4294967295": 1, "4294967294": 2, "01": 3, "-1": 4, "1.5": 5, "7": 6},
    ),
    ("empty-key", {"": "empty", "x": {"": None}}),
    ("unicode-keys", {"ключ": 1, "😀": 2, "\u2028": 3, "a\x00b": 4}),
    ("long-string", "x" * 200),  # 2-byte length varints
    ("very-long-string", "y" * 70_000),  # 3-byte length varints
)

# rawEvent: any JSON except null.
RAW_EVENTS: tuple[tuple[str, Any], ...] = tuple((n, v) for n, v in JSON_VALUES if v is not None)

# metadata (a JSON object; google.protobuf.Struct in BaseEvent): (name, value).
METADATA: tuple[tuple[str, dict[str, Any]], ...] = (
    ("empty", {}),
    ("flat", {"source": "test", "attempt": 2, "ok": True}),
    ("null-values", {"a": None, "b": None}),
    ("nested", {"trace": {"spans": [{"id": "s1", "tags": {"k": "v"}}], "sampled": False}}),
    ("integer-like-keys", {"b": 1, "a": 2, "10": 3, "2": 4}),
    ("empty-key", {"": None}),
    ("empty-key-value", {"": "v", "k": ""}),
    ("mixed", {"": 0, "0": "", "x": [None, {}], "y": {"": {"": []}}}),
)

# -- building blocks ------------------------------------------------------------------

_URL = "https://example.com/files/report.pdf"
_B64 = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

SOURCES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("data", {"type": "data", "value": _B64, "mimeType": "image/png"}),
    ("data-empty", {"type": "data", "value": "", "mimeType": ""}),
    ("url-minimal", {"type": "url", "value": _URL}),
    ("url-full", {"type": "url", "value": _URL, "mimeType": "application/pdf"}),
    ("file-minimal", {"type": "file", "value": "file-abc123"}),
    ("file-full", {"type": "file", "value": "file-abc123", "provider": "openai", "mimeType": ""}),
)


def _parts() -> list[tuple[str, dict[str, Any]]]:
    """Every content-part kind, minimal and full, over every source kind."""
    out: list[tuple[str, dict[str, Any]]] = [
        ("text-minimal", {"type": "text", "text": "Describe this."}),
        ("text-empty", {"type": "text", "text": ""}),
        ("text-full", {"type": "text", "text": "hi 😀", "id": "p1", "metadata": {"lang": "en"}}),
        # Part metadata is any JSON (a Value), not just an object.
        ("text-metadata-string", {"type": "text", "text": "t", "metadata": "note"}),
        ("text-metadata-list", {"type": "text", "text": "t", "metadata": [1, None, "x"]}),
        ("text-metadata-false", {"type": "text", "text": "t", "metadata": False, "id": ""}),
    ]
    for kind in ("image", "audio", "video", "document"):
        for source_name, source in SOURCES:
            out.append((f"{kind}-{source_name}", {"type": kind, "source": source}))
        out.append(
            (
                f"{kind}-full",
                {
                    "type": kind,
                    "source": SOURCES[3][1],
                    "id": f"{kind}-1",
                    "metadata": {"caption": kind, "n": 1},
                },
            )
        )
    return out


PARTS = tuple(_parts())

TOOL_CALL_MIN = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
TOOL_CALL_FULL = {
    "id": "call_2",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Zürich", "days": [1, 2]}'},
    "encryptedValue": "enc:tool-call",
    "metadata": {"provider": {"id": "x"}, "": None},
}


def _messages() -> list[tuple[str, dict[str, Any]]]:
    """All seven roles, minimal and full; user and tool with strings and with parts."""
    common = {"name": "n", "encryptedValue": "enc", "metadata": {"k": [1]}, "subagentRunId": "sub"}
    parts = [p for _, p in PARTS[:1]] + [p for n, p in PARTS if n.endswith("-full")]
    return [
        ("developer-minimal", {"id": "m1", "role": "developer", "content": "Be terse."}),
        ("developer-full", {"id": "m1", "role": "developer", "content": "", **common}),
        ("system-minimal", {"id": "m2", "role": "system", "content": "You are helpful."}),
        ("system-full", {"id": "m2", "role": "system", "content": _UNICODE, **common}),
        ("assistant-minimal", {"id": "m3", "role": "assistant"}),
        ("assistant-empty-content", {"id": "m3", "role": "assistant", "content": ""}),
        (
            "assistant-full",
            {
                "id": "m3",
                "role": "assistant",
                "content": "Calling tools.",
                "toolCalls": [TOOL_CALL_MIN, TOOL_CALL_FULL],
                **common,
            },
        ),
        (
            "assistant-tool-calls-only",
            {"id": "m3", "role": "assistant", "toolCalls": [TOOL_CALL_MIN]},
        ),
        ("user-minimal", {"id": "m4", "role": "user", "content": "Hello"}),
        ("user-empty-string", {"id": "m4", "role": "user", "content": ""}),
        ("user-parts", {"id": "m4", "role": "user", "content": parts}),
        ("user-no-parts", {"id": "m4", "role": "user", "content": []}),
        ("user-full", {"id": "m4", "role": "user", "content": [PARTS[2][1]], **common}),
        ("tool-minimal", {"id": "m5", "role": "tool", "content": "42", "toolCallId": "call_1"}),
        ("tool-empty-string", {"id": "m5", "role": "tool", "content": "", "toolCallId": ""}),
        (
            "tool-parts",
            {"id": "m5", "role": "tool", "content": parts[:3], "toolCallId": "call_1"},
        ),
        (
            "tool-full",
            {
                "id": "m5",
                "role": "tool",
                "content": "failed",
                "toolCallId": "call_2",
                "error": "timeout",
                "encryptedValue": "enc",
                "metadata": {},
                "subagentRunId": "sub",
            },
        ),
        (
            "activity-minimal",
            {"id": "m6", "role": "activity", "activityType": "PLAN", "content": {}},
        ),
        (
            "activity-full",
            {
                "id": "m6",
                "role": "activity",
                "activityType": "SEARCH",
                "content": {"query": "q", "results": [{"url": _URL, "score": 0.5}], "10": None},
                "metadata": {"a": 1},
                "subagentRunId": "sub",
            },
        ),
        ("reasoning-minimal", {"id": "m7", "role": "reasoning", "content": "thinking"}),
        (
            "reasoning-full",
            {
                "id": "m7",
                "role": "reasoning",
                "content": "",
                "encryptedValue": "enc:reasoning",
                "metadata": {"effort": "high"},
                "subagentRunId": "sub",
            },
        ),
    ]


MESSAGES = tuple(_messages())

INTERRUPT_MIN = {"id": "int-1", "reason": "approval"}
INTERRUPT_FULL = {
    "id": "int-2",
    "reason": "input_required",
    "message": "Approve the transfer?",
    "toolCallId": "call_2",
    "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}}},
    "expiresAt": "2030-01-01T00:00:00Z",
    "metadata": {"risk": "high", "": None},
    "subagentRunId": "sub-1",
}

USAGE_FULL = {
    "provider": "openai",
    "model": "gpt-4.1",
    "inputTokens": 1200,
    "outputTokens": 345,
    "totalTokens": 1545,
    "reasoningTokens": 0,
    "cachedInputTokens": 1024,
    "cacheWriteInputTokens": MAX_SAFE,
}
USAGES: tuple[tuple[str, list[dict[str, Any]]], ...] = (
    ("usage-one-empty", [{}]),
    ("usage-one", [{"provider": "anthropic", "inputTokens": 10, "outputTokens": 5}]),
    ("usage-full", [USAGE_FULL]),
    ("usage-several", [USAGE_FULL, {"model": "small", "totalTokens": 0}, {}]),
)

PATCH_OPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("add", {"op": "add", "path": "/a", "value": 1}),
    ("add-null", {"op": "add", "path": "/a", "value": None}),
    ("add-object", {"op": "add", "path": "/a/b~1c/~0d", "value": {"x": [1, {"y": None}]}}),
    ("add-append", {"op": "add", "path": "/list/-", "value": "tail"}),
    ("add-root", {"op": "add", "path": "", "value": {}}),
    ("remove", {"op": "remove", "path": "/a"}),
    ("remove-with-value", {"op": "remove", "path": "/a", "value": "leftover"}),
    ("replace", {"op": "replace", "path": "/a/0", "value": False}),
    ("replace-empty-string", {"op": "replace", "path": "/", "value": ""}),
    ("move", {"op": "move", "from": "/a", "path": "/b"}),
    ("move-empty-from", {"op": "move", "from": "", "path": "/b"}),
    ("copy", {"op": "copy", "from": "/b", "path": "/c"}),
    ("test", {"op": "test", "path": "/c", "value": 0}),
    ("test-list", {"op": "test", "path": "/c", "value": [1, 2.5, "3"]}),
)

TOOLS = (
    {"name": "noop", "description": ""},
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "metadata": {"category": "info", "cost": 0.01},
    },
    # parameters is any JSON (a Value); metadata an object.
    {"name": "raw", "description": "d", "parameters": True, "metadata": {}},
)

RUN_INPUT_FULL = {
    "threadId": "thread-1",
    "runId": "run-1",
    "parentRunId": "run-0",
    "state": {"counter": 3, "items": ["a", "b"], "nested": {"k": None}},
    "messages": [m for _, m in MESSAGES],
    "tools": list(TOOLS),
    "context": [
        {"description": "user locale", "value": "de-CH"},
        {"description": "", "value": ""},
    ],
    "forwardedProps": {"temperature": 0.2, "stream": True, "tags": ["a"]},
    "resume": [
        {"interruptId": "int-1", "status": "resolved"},
        {
            "interruptId": "int-2",
            "status": "cancelled",
            "payload": {"approved": False},
            "metadata": {"by": "user"},
        },
        {"interruptId": "int-3", "status": "resolved", "payload": 0},
    ],
    "protocolVersion": "1.0",
}


# -- the events --------------------------------------------------------------------------


def _minimal_and_full() -> Iterator[tuple[str, Event]]:
    """Every type with only its required fields, then with every optional field."""
    sub = {"subagentRunId": "sub-1"}
    base = {
        "timestamp": 1_712_345_678_901,
        "rawEvent": {"provider": "test", "id": 7},
        "metadata": {"trace": "t-1", "n": 1},
    }
    spec: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "TEXT_MESSAGE_START": ({"messageId": "msg-1"}, {"role": "assistant", "name": "bot"}),
        "TEXT_MESSAGE_CONTENT": ({"messageId": "msg-1", "delta": "Hello"}, {}),
        "TEXT_MESSAGE_END": ({"messageId": "msg-1"}, {}),
        "TOOL_CALL_START": (
            {"toolCallId": "call-1", "toolCallName": "search"},
            {"parentMessageId": "msg-1"},
        ),
        "TOOL_CALL_ARGS": ({"toolCallId": "call-1", "delta": '{"q": "x"}'}, {}),
        "TOOL_CALL_END": ({"toolCallId": "call-1"}, {}),
        "STATE_SNAPSHOT": ({"snapshot": {"count": 1}}, {}),
        "STATE_DELTA": ({"delta": [{"op": "replace", "path": "/count", "value": 2}]}, {}),
        "MESSAGES_SNAPSHOT": ({"messages": []}, {}),
        "RAW": ({"event": {"kind": "vendor"}}, {"source": "openai"}),
        "CUSTOM": ({"name": "progress", "value": 0.5}, {}),
        "RUN_STARTED": (
            {"threadId": "thread-1", "runId": "run-1"},
            {"parentRunId": "run-0", "input": RUN_INPUT_FULL, "protocolVersion": "1.0"},
        ),
        "RUN_FINISHED": (
            {"threadId": "thread-1", "runId": "run-1"},
            {
                "result": {"answer": 42},
                "outcome": {"type": "success", "pendingToolCallIds": ["call-1", "call-2"]},
                "usage": [USAGE_FULL],
            },
        ),
        "RUN_ERROR": ({"message": "boom"}, {"code": "E_TIMEOUT", "usage": [USAGE_FULL]}),
        "STEP_STARTED": ({"stepName": "plan"}, {}),
        "STEP_FINISHED": ({"stepName": "plan"}, {}),
        "SUBAGENT_STARTED": (
            {"subagentRunId": "sub-1", "name": "researcher"},
            {
                "description": "Finds sources",
                "parentSubagentRunId": "sub-0",
                "parentToolCallId": "call-1",
                "parentMessageId": "msg-1",
            },
        ),
        "SUBAGENT_FINISHED": (
            {"subagentRunId": "sub-1"},
            {"result": ["a", 1], "outcome": {"type": "suspended", "interruptIds": ["int-1"]}},
        ),
        "SUBAGENT_ERROR": ({"subagentRunId": "sub-1", "message": "crashed"}, {"code": "E1"}),
        "TEXT_MESSAGE_CHUNK": (
            {},
            {"messageId": "msg-1", "role": "user", "delta": "Hi", "name": "alice"},
        ),
        "TOOL_CALL_CHUNK": (
            {},
            {
                "toolCallId": "call-1",
                "toolCallName": "search",
                "parentMessageId": "msg-1",
                "delta": "{",
            },
        ),
        "TOOL_CALL_RESULT": (
            {"messageId": "msg-2", "toolCallId": "call-1", "content": "result"},
            {"role": "tool"},
        ),
        "ACTIVITY_SNAPSHOT": (
            {"messageId": "act-1", "activityType": "PLAN", "content": {"steps": ["a"]}},
            {"replace": True},
        ),
        "ACTIVITY_DELTA": (
            {
                "messageId": "act-1",
                "activityType": "PLAN",
                "patch": [{"op": "add", "path": "/steps/-", "value": "b"}],
            },
            {},
        ),
        "REASONING_START": ({"messageId": "r-1"}, {}),
        "REASONING_MESSAGE_START": ({"messageId": "r-1", "role": "reasoning"}, {}),
        "REASONING_MESSAGE_CONTENT": ({"messageId": "r-1", "delta": "Let me think"}, {}),
        "REASONING_MESSAGE_END": ({"messageId": "r-1"}, {}),
        "REASONING_MESSAGE_CHUNK": ({}, {"messageId": "r-1", "delta": "hmm"}),
        "REASONING_END": ({"messageId": "r-1"}, {}),
        "REASONING_ENCRYPTED_VALUE": (
            {"subtype": "message", "entityId": "r-1", "encryptedValue": "gAAAAB..."},
            {},
        ),
    }
    assert sorted(spec) == sorted(EVENT_TYPES)
    for type_ in EVENT_TYPES:
        required, optional = spec[type_]
        yield f"{type_}/minimal", {"type": type_, **required}
        full = {"type": type_, **required, **optional, **base}
        if type_ not in _NOT_ATTRIBUTABLE | _SUBAGENT_TYPES:
            full.update(sub)
        yield f"{type_}/full", full


def _presence() -> Iterator[tuple[str, Event]]:
    """Optional fields set to their proto3 defaults: explicit presence must keep them."""
    yield "presence/timestamp-0", {"type": "TEXT_MESSAGE_END", "messageId": "", "timestamp": 0}
    yield "presence/required-empty", {"type": "TEXT_MESSAGE_CONTENT", "messageId": "", "delta": ""}
    yield (
        "presence/start-empty-name",
        {
            "type": "TEXT_MESSAGE_START",
            "messageId": "",
            "name": "",
            "subagentRunId": "",
        },
    )
    yield (
        "presence/text-chunk-empty",
        {
            "type": "TEXT_MESSAGE_CHUNK",
            "messageId": "",
            "delta": "",
            "name": "",
            "subagentRunId": "",
        },
    )
    yield (
        "presence/tool-chunk-empty",
        {
            "type": "TOOL_CALL_CHUNK",
            "toolCallId": "",
            "toolCallName": "",
            "parentMessageId": "",
            "delta": "",
        },
    )
    yield (
        "presence/reasoning-chunk-empty",
        {
            "type": "REASONING_MESSAGE_CHUNK",
            "messageId": "",
            "delta": "",
        },
    )
    yield (
        "presence/activity-replace-false",
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "",
            "activityType": "",
            "content": {},
            "replace": False,
        },
    )
    yield "presence/raw-source-empty", {"type": "RAW", "event": "", "source": ""}
    yield "presence/run-error-code-empty", {"type": "RUN_ERROR", "message": "", "code": ""}
    yield (
        "presence/subagent-started-empty",
        {
            "type": "SUBAGENT_STARTED",
            "subagentRunId": "",
            "name": "",
            "description": "",
            "parentSubagentRunId": "",
            "parentToolCallId": "",
            "parentMessageId": "",
        },
    )
    yield (
        "presence/run-started-empty",
        {
            "type": "RUN_STARTED",
            "threadId": "",
            "runId": "",
            "parentRunId": "",
            "protocolVersion": "",
        },
    )
    yield (
        "presence/usage-zeros",
        {
            "type": "RUN_ERROR",
            "message": "m",
            "usage": [
                {
                    "provider": "",
                    "model": "",
                    "inputTokens": 0,
                    "outputTokens": 0,
                    "totalTokens": 0,
                    "reasoningTokens": 0,
                    "cachedInputTokens": 0,
                    "cacheWriteInputTokens": 0,
                }
            ],
        },
    )
    yield (
        "presence/tool-result-empty",
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "",
            "toolCallId": "",
            "content": "",
            "subagentRunId": "",
        },
    )


def _base_fields() -> Iterator[tuple[str, Event]]:
    for ts in TIMESTAMPS:
        yield f"timestamp/{ts}", {"type": "STEP_STARTED", "stepName": "s", "timestamp": ts}
    # TEXT_MESSAGE_START has BaseEvent.type 0, so its base_event is otherwise empty.
    yield (
        "timestamp/start-max",
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "timestamp": MAX_SAFE},
    )
    for name, value in RAW_EVENTS:
        yield f"rawEvent/{name}", {"type": "TEXT_MESSAGE_END", "messageId": "m", "rawEvent": value}
    for name, value in METADATA:
        yield f"metadata/{name}", {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": value}
    yield "metadata/on-start", {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {}}
    yield (
        "base/all-three-on-start",
        {
            "type": "TEXT_MESSAGE_START",
            "messageId": "m",
            "timestamp": -1,
            "rawEvent": [],
            "metadata": {"2": None, "1": None},
        },
    )


def _values() -> Iterator[tuple[str, Event]]:
    for name, value in JSON_VALUES:
        yield f"STATE_SNAPSHOT/{name}", {"type": "STATE_SNAPSHOT", "snapshot": value}
        yield f"RAW/{name}", {"type": "RAW", "event": value}
        yield f"CUSTOM/{name}", {"type": "CUSTOM", "name": name, "value": value}
    for name, value in JSON_VALUES:
        if isinstance(value, dict):
            yield (
                f"ACTIVITY_SNAPSHOT/{name}",
                {
                    "type": "ACTIVITY_SNAPSHOT",
                    "messageId": "a",
                    "activityType": "T",
                    "content": value,
                },
            )
    yield (
        "TEXT_MESSAGE_CONTENT/unicode",
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "😀",
            "delta": _UNICODE,
        },
    )
    yield (
        "TEXT_MESSAGE_CONTENT/very-long",
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": "word " * 30_000,
        },
    )


def _patches() -> Iterator[tuple[str, Event]]:
    for name, op in PATCH_OPS:
        yield f"STATE_DELTA/{name}", {"type": "STATE_DELTA", "delta": [op]}
    yield "STATE_DELTA/empty", {"type": "STATE_DELTA", "delta": []}
    yield "STATE_DELTA/all", {"type": "STATE_DELTA", "delta": [op for _, op in PATCH_OPS]}
    yield (
        "ACTIVITY_DELTA/empty",
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a",
            "activityType": "T",
            "patch": [],
        },
    )
    yield (
        "ACTIVITY_DELTA/all",
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a",
            "activityType": "T",
            "patch": [op for _, op in PATCH_OPS],
            "subagentRunId": "sub",
        },
    )


def _messages_events() -> Iterator[tuple[str, Event]]:
    for name, message in MESSAGES:
        yield f"MESSAGES_SNAPSHOT/{name}", {"type": "MESSAGES_SNAPSHOT", "messages": [message]}
    yield (
        "MESSAGES_SNAPSHOT/all",
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [m for _, m in MESSAGES],
            "timestamp": 1,
        },
    )
    yield (
        "MESSAGES_SNAPSHOT/tool-calls-empty",
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "m", "role": "assistant", "content": "c", "toolCalls": []}],
        },
    )
    for name, part in PARTS:
        yield (
            f"TOOL_CALL_RESULT/part-{name}",
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "r",
                "toolCallId": "c",
                "content": [part],
            },
        )
    yield (
        "TOOL_CALL_RESULT/parts-all",
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "r",
            "toolCallId": "c",
            "content": [p for _, p in PARTS],
            "role": "tool",
        },
    )
    yield (
        "TOOL_CALL_RESULT/parts-empty",
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "r",
            "toolCallId": "c",
            "content": [],
        },
    )
    yield (
        "TOOL_CALL_RESULT/json-string",
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "r",
            "toolCallId": "c",
            "content": '{"temperature": 21.5, "unit": "C"}',
        },
    )


_INPUT_VALUES = {
    "true",
    "false",
    "zero",
    "minus-one",
    "half",
    "empty-string",
    "unicode",
    "empty-list",
    "empty-object",
    "list",
    "object",
    "nested",
    "integer-like-keys",
    "empty-key",
}


def _runs() -> Iterator[tuple[str, Event]]:
    ids = {"threadId": "t", "runId": "r"}
    yield (
        "RUN_STARTED/input-minimal",
        {
            "type": "RUN_STARTED",
            **ids,
            "input": {"threadId": "t", "runId": "r", "messages": []},
        },
    )
    yield (
        "RUN_STARTED/input-empty-lists",
        {
            "type": "RUN_STARTED",
            **ids,
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "tools": [],
                "context": [],
                "resume": [],
            },
        },
    )
    yield (
        "RUN_STARTED/input-state-null",
        {
            "type": "RUN_STARTED",
            **ids,
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "tools": [],
                "context": [],
                "resume": [],
                "state": None,
            },
        },
    )
    for name, value in JSON_VALUES:
        if name not in _INPUT_VALUES:
            continue
        yield (
            f"RUN_STARTED/input-state-{name}",
            {
                "type": "RUN_STARTED",
                **ids,
                "input": {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [],
                    "tools": [],
                    "context": [],
                    "resume": [],
                    "state": value,
                    "forwardedProps": value,
                },
            },
        )

    yield "RUN_FINISHED/no-outcome", {"type": "RUN_FINISHED", **ids}
    yield "RUN_FINISHED/success", {"type": "RUN_FINISHED", **ids, "outcome": {"type": "success"}}
    yield (
        "RUN_FINISHED/success-pending",
        {
            "type": "RUN_FINISHED",
            **ids,
            "outcome": {"type": "success", "pendingToolCallIds": ["call-1"]},
        },
    )
    yield (
        "RUN_FINISHED/success-pending-empty",
        {
            "type": "RUN_FINISHED",
            **ids,
            "outcome": {"type": "success", "pendingToolCallIds": []},
        },
    )
    yield (
        "RUN_FINISHED/interrupt",
        {
            "type": "RUN_FINISHED",
            **ids,
            "outcome": {"type": "interrupt", "interrupts": [INTERRUPT_MIN]},
        },
    )
    yield (
        "RUN_FINISHED/interrupt-full",
        {
            "type": "RUN_FINISHED",
            **ids,
            "outcome": {"type": "interrupt", "interrupts": [INTERRUPT_MIN, INTERRUPT_FULL]},
            "result": "partial",
        },
    )
    yield (
        "RUN_FINISHED/cancelled",
        {"type": "RUN_FINISHED", **ids, "outcome": {"type": "cancelled"}},
    )
    for name, value in RAW_EVENTS[:8]:
        yield f"RUN_FINISHED/result-{name}", {"type": "RUN_FINISHED", **ids, "result": value}
    for name, usage in USAGES:
        yield f"RUN_FINISHED/{name}", {"type": "RUN_FINISHED", **ids, "usage": usage}
        yield f"RUN_ERROR/{name}", {"type": "RUN_ERROR", "message": "m", "usage": usage}
    yield "RUN_FINISHED/usage-empty", {"type": "RUN_FINISHED", **ids, "usage": []}
    yield "RUN_ERROR/usage-empty", {"type": "RUN_ERROR", "message": "m", "usage": []}

    sub = {"subagentRunId": "sub-1"}
    yield (
        "SUBAGENT_FINISHED/success",
        {
            "type": "SUBAGENT_FINISHED",
            **sub,
            "outcome": {"type": "success"},
        },
    )
    yield (
        "SUBAGENT_FINISHED/suspended",
        {
            "type": "SUBAGENT_FINISHED",
            **sub,
            "outcome": {"type": "suspended"},
        },
    )
    yield (
        "SUBAGENT_FINISHED/suspended-ids",
        {
            "type": "SUBAGENT_FINISHED",
            **sub,
            "outcome": {"type": "suspended", "interruptIds": ["int-1", "int-2", ""]},
            "result": {},
        },
    )
    yield (
        "SUBAGENT_FINISHED/suspended-ids-empty",
        {
            "type": "SUBAGENT_FINISHED",
            **sub,
            "outcome": {"type": "suspended", "interruptIds": []},
        },
    )
    yield (
        "REASONING_ENCRYPTED_VALUE/tool-call",
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "tool-call",
            "entityId": "call-1",
            "encryptedValue": "",
            "subagentRunId": "sub",
        },
    )
    for role in ("developer", "system", "user"):
        yield (
            f"TEXT_MESSAGE_START/role-{role}",
            {
                "type": "TEXT_MESSAGE_START",
                "messageId": "m",
                "role": role,
            },
        )
        yield f"TEXT_MESSAGE_CHUNK/role-{role}", {"type": "TEXT_MESSAGE_CHUNK", "role": role}


def _cases() -> dict[str, Event]:
    cases: dict[str, Event] = {}
    for source in (
        _minimal_and_full,
        _presence,
        _base_fields,
        _values,
        _patches,
        _messages_events,
        _runs,
    ):
        for name, event in source():
            assert name not in cases, f"duplicate corpus name {name}"
            cases[name] = event
    return cases


# name -> event, in a stable order. Use CASES for pytest ids, CORPUS for the list.
CASES: dict[str, Event] = _cases()
CORPUS: list[Event] = list(CASES.values())

# Events whose reference binary round trip (encode -> decode) is not the
# identity, and why (wire-contract §3.2 rows 1-5, plus the zod/omitOptionalNulls
# treatment of RunAgentInput.state null).
ROUND_TRIP_LOSSY: dict[str, str] = {
    "RUN_STARTED/input-minimal": "input.tools/context/resume default to []",
    "RUN_STARTED/input-state-null": "input.state null is absent",
    "MESSAGES_SNAPSHOT/tool-calls-empty": "toolCalls [] is removed",
    "RUN_FINISHED/usage-empty": "usage [] is removed",
    "RUN_ERROR/usage-empty": "usage [] is removed",
    "RUN_FINISHED/success-pending-empty": "pendingToolCallIds [] is removed",
    "SUBAGENT_FINISHED/suspended-ids-empty": "interruptIds [] is removed",
}
# Events that the reference SSE path (encode -> @ag-ui/client parse) changes.
SSE_LOSSY: dict[str, str] = {
    "RUN_STARTED/input-state-null": "omitOptionalNulls drops input.state null",
}
assert set(ROUND_TRIP_LOSSY) <= set(CASES)
assert set(SSE_LOSSY) <= set(CASES)


def corpus_by_type() -> dict[str, list[Event]]:
    """The corpus grouped by ``type``, every one of the 31 types present."""
    out: dict[str, list[Event]] = {t: [] for t in EVENT_TYPES}
    for event in CORPUS:
        out[event["type"]].append(event)
    return out
