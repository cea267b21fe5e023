"""encode_sse: the reference's omitOptionalNulls, orjson, SSE framing."""

from __future__ import annotations

import json
import random
from types import MappingProxyType

import orjson
import pytest
from hypothesis import given, settings

from agui_wire import schema
from agui_wire._codec import sse_writer
from agui_wire._codec.sse_reader import SSEEventReader, SSEParser
from agui_wire._codec.sse_writer import encode_sse, encode_sse_many
from agui_wire.errors import EncodeError
from tests.support.compare import same
from tests.support.strategies import json_values


def body(data: bytes):
    assert data.startswith(b"data: ")
    assert data.endswith(b"\n\n")
    assert b"\n" not in data[:-2]
    assert b"\r" not in data
    return json.loads(data[6:-2])


def test_plain_event():
    ev = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"}
    assert (
        encode_sse(ev) == b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi"}\n\n'
    )


def test_newlines_and_separators_escaped_or_harmless():
    ev = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a\nb\r\n\u2028\u2029\x00"}
    out = encode_sse(ev)
    assert body(out) == ev
    assert SSEEventReader().feed(out) == [ev]


# -- omitOptionalNulls, case by case (each checked against @ag-ui/encoder 1.0.0) -----------

CASES = [
    (  # optional base and event fields dropped, required and unknown ones kept
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": None,
            "subagentRunId": None,
            "timestamp": None,
            "rawEvent": None,
            "metadata": None,
            "extra": None,
        },
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": None, "extra": None},
    ),
    (  # the nullable JSON values stay null; opaque JSON is never walked
        {"type": "STATE_SNAPSHOT", "snapshot": None, "timestamp": None},
        {"type": "STATE_SNAPSHOT", "snapshot": None},
    ),
    (
        {"type": "CUSTOM", "name": "n", "value": None, "rawEvent": {"a": None}},
        {"type": "CUSTOM", "name": "n", "value": None, "rawEvent": {"a": None}},
    ),
    (
        {"type": "RAW", "event": None, "source": None},
        {"type": "RAW", "event": None},
    ),
    (
        {
            "type": "STATE_SNAPSHOT",
            "snapshot": {"messages": [{"id": "x", "role": "user", "name": None}]},
            "metadata": {"name": None},
        },
        {
            "type": "STATE_SNAPSHOT",
            "snapshot": {"messages": [{"id": "x", "role": "user", "name": None}]},
            "metadata": {"name": None},
        },
    ),
    (  # patch operations have no optional keys
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "add", "path": "/a", "value": None},
                {"op": "remove", "path": "/b", "value": None, "from": None},
            ],
        },
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "add", "path": "/a", "value": None},
                {"op": "remove", "path": "/b", "value": None, "from": None},
            ],
        },
    ),
    (  # messages: by role
        {
            "type": "MESSAGES_SNAPSHOT",
            "timestamp": None,
            "messages": [
                {"id": "1", "role": "assistant", "content": None, "toolCalls": None, "name": None},
                {
                    "id": "2",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "t",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                            "metadata": None,
                            "encryptedValue": None,
                        }
                    ],
                },
                {"id": "3", "role": "tool", "content": "x", "toolCallId": "t", "name": None},
                {"id": "4", "role": "tool", "content": "x", "toolCallId": None, "error": None},
                {"id": "5", "role": "developer", "content": None, "name": None, "error": None},
                {"id": "6", "role": "activity", "activityType": None, "content": {"a": None}},
                {"id": "7", "role": "reasoning", "content": "r", "name": None},
                {"id": "8", "role": "robot", "name": None},
                {
                    "id": "9",
                    "role": "user",
                    "metadata": None,
                    "content": [
                        {"type": "text", "text": "hi", "id": None, "metadata": None},
                        {
                            "type": "image",
                            "id": None,
                            "source": {"type": "url", "value": "u", "mimeType": None},
                        },
                        {
                            "type": "document",
                            "source": {"type": "data", "value": "v", "mimeType": None},
                        },
                        {
                            "type": "audio",
                            "source": {"type": "file", "value": "f", "provider": None},
                        },
                        {"type": "hologram", "id": None},
                    ],
                },
                {
                    "id": "10",
                    "role": "developer",
                    "content": "c",
                    "toolCalls": [{"id": "t", "metadata": None}],
                },
            ],
        },
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "1", "role": "assistant"},
                {
                    "id": "2",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "t",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"id": "3", "role": "tool", "content": "x", "toolCallId": "t", "name": None},
                {"id": "4", "role": "tool", "content": "x", "toolCallId": None},
                {"id": "5", "role": "developer", "content": None, "error": None},
                {"id": "6", "role": "activity", "activityType": None, "content": {"a": None}},
                {"id": "7", "role": "reasoning", "content": "r", "name": None},
                {"id": "8", "role": "robot", "name": None},
                {
                    "id": "9",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "hi"},
                        {"type": "image", "source": {"type": "url", "value": "u"}},
                        {
                            "type": "document",
                            "source": {"type": "data", "value": "v", "mimeType": None},
                        },
                        {"type": "audio", "source": {"type": "file", "value": "f"}},
                        {"type": "hologram", "id": None},
                    ],
                },
                {
                    "id": "10",
                    "role": "developer",
                    "content": "c",
                    "toolCalls": [{"id": "t", "metadata": None}],
                },
            ],
        },
    ),
    (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "t",
            "role": None,
            "content": [{"type": "text", "text": "x", "id": None}],
        },
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "t",
            "content": [{"type": "text", "text": "x"}],
        },
    ),
    (
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "t", "content": None},
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "t", "content": None},
    ),
    (  # run input
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "parentRunId": None,
            "input": {
                "threadId": "t",
                "runId": "r",
                "state": None,
                "forwardedProps": None,
                "messages": [{"id": "1", "role": "user", "content": "c", "name": None}],
                "tools": [{"name": "n", "description": "d", "parameters": None}],
                "context": [{"description": "d", "value": None}],
                "resume": [{"interruptId": "i", "status": "s", "payload": None}],
            },
        },
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "1", "role": "user", "content": "c"}],
                "tools": [{"name": "n", "description": "d"}],
                "context": [{"description": "d", "value": None}],
                "resume": [{"interruptId": "i", "status": "s"}],
            },
        },
    ),
    (  # outcomes, interrupts and usage
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "result": None,
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i", "reason": "r", "message": None, "metadata": None}],
                "pendingToolCallIds": None,
            },
            "usage": [{"model": None, "inputTokens": 3, "other": None}],
        },
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i", "reason": "r"}],
                "pendingToolCallIds": None,
            },
            "usage": [{"inputTokens": 3, "other": None}],
        },
    ),
    (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": None},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ),
    (
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "success", "pendingToolCallIds": None},
        },
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}},
    ),
    (
        {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": "s",
            "outcome": {"type": "suspended", "interruptIds": None},
        },
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "outcome": {"type": "suspended"}},
    ),
    (
        {"type": "RUN_ERROR", "message": "m", "code": None, "usage": [{"provider": None}]},
        {"type": "RUN_ERROR", "message": "m", "usage": [{}]},
    ),
    (  # an event of a later protocol: as given
        {"type": "FUTURE_EVENT", "timestamp": None, "x": None},
        {"type": "FUTURE_EVENT", "timestamp": None, "x": None},
    ),
]


@pytest.mark.parametrize(("event", "want"), CASES)
def test_omit_optional_nulls(event, want):
    before = json.dumps(event)
    assert body(encode_sse(event)) == want
    assert json.dumps(event) == before  # the input is never mutated


def test_no_walk_without_none(monkeypatch):
    def boom(value):
        raise AssertionError("walked")

    monkeypatch.setattr(
        sse_writer, "_EVENTS", {t: (boom, nested) for t, (_, nested) in sse_writer._EVENTS.items()}
    )
    ev = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"}
    assert encode_sse(ev) == b"data: " + orjson.dumps(ev) + b"\n\n"
    snap = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": str(i), "role": "user", "content": "x" * 50} for i in range(100)],
    }
    assert body(encode_sse(snap)) == snap
    # a null inside array elements of opaque JSON is not an object member
    state = {"type": "STATE_SNAPSHOT", "snapshot": [None, None]}
    assert body(encode_sse(state)) == state


def test_mappings_and_tuples():
    ev = MappingProxyType(
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": (
                MappingProxyType({"id": "1", "role": "user", "content": "c", "name": None}),
            ),
        }
    )
    assert body(encode_sse(ev)) == {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "1", "role": "user", "content": "c"}],
    }


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "path", "match"),
    [
        ({"type": "CUSTOM", "name": "n", "value": {1: "x"}}, "/value/1", "not a string"),
        ({"type": "CUSTOM", "name": "n", "value": ["ok", "\ud800"]}, "/value/1", "surrogate"),
        ({"type": "CUSTOM", "name": "n", "value": {"a/b": 2**64}}, "/value/a~1b", "64 bits"),
        ({"type": "CUSTOM", "name": "n", "value": {"s": {1, 2}}}, "/value/s", "set is not a JSON"),
        ({"type": "CUSTOM", "name": "n", "value": {"\udcff": 1}}, "/value/\udcff", "surrogate"),
    ],
)
def test_orjson_refusals_become_encode_errors(event, path, match):
    with pytest.raises(EncodeError, match=match) as info:
        encode_sse(event)
    assert info.value.event_type == "CUSTOM"
    assert info.value.path == path


def nested(levels: int, leaf: object = 1) -> object:
    value = leaf
    for i in range(levels):
        value = [value] if i % 2 else {"k": value, "n": None}
    return value


@pytest.mark.parametrize("levels", [254, 255, 300, 1000, sse_writer.SSE_MAX_NESTING - 1])
def test_deeper_than_orjson_writes(levels):
    # orjson.dumps stops at 255 levels; the event's JSON is written anyway, up to
    # what the SSE readers (orjson.loads, ours) read back
    ev = {"type": "STATE_SNAPSHOT", "snapshot": nested(levels), "timestamp": None}
    out = encode_sse(ev)
    text = b"1"
    for i in range(levels):
        text = b"[" + text + b"]" if i % 2 else b'{"k":' + text + b',"n":null}'
    assert out == b'data: {"type":"STATE_SNAPSHOT","snapshot":' + text + b"}\n\n"
    want = {"type": "STATE_SNAPSHOT", "snapshot": nested(levels)}
    (got,) = SSEEventReader().feed(out)
    assert same(got, want)


def test_too_deep_for_the_readers():
    levels = sse_writer.SSE_MAX_NESTING  # with the event object: one more than readers take
    with pytest.raises(EncodeError, match="deeper than 1023 levels") as info:
        encode_sse({"type": "STATE_SNAPSHOT", "snapshot": nested(levels)})
    assert info.value.event_type == "STATE_SNAPSHOT"
    assert info.value.path.startswith("/snapshot/0/k/0/k/")
    assert info.value.path.count("/") == levels


@pytest.mark.parametrize(
    ("leaf", "path_end", "match"),
    [
        ("\ud800", "/k", "lone surrogate at index 0"),
        (2**64, "/k", "64 bits"),
        ({1, 2}, "/k", "set is not a JSON value"),
        ({3: 1}, "/k/3", "key 3 is not a string"),
        ({"\udcff": 1}, "/k/\udcff", "key holds a lone surrogate"),
    ],
)
def test_refusals_deep_down_are_located(leaf, path_end, match):
    with pytest.raises(EncodeError, match=match) as info:
        encode_sse({"type": "STATE_SNAPSHOT", "snapshot": nested(400, leaf)})
    assert info.value.path.startswith("/snapshot/0/k/0/k/")
    assert info.value.path.endswith(path_end)
    assert info.value.path.count("/") == 401 + path_end.count("/") - 1


@settings(max_examples=300)
@given(json_values)
def test_the_deep_writer_writes_what_orjson_writes(value):
    # _write only runs where orjson.dumps refuses; on anything orjson takes it must
    # give the same bytes, so that depth changes nothing but whether it works
    assert sse_writer._write(value, "RAW") == orjson.dumps(value)


def test_exotic_input_is_written_as_its_plain_json():
    from collections import OrderedDict

    value = {
        "t": (1, 2.5, None, True),
        "m": MappingProxyType({"a": [-0.0, 1e16, 2**64 - 1, -(2**63)]}),
        "o": OrderedDict(b=1, a=2),
        "s": '\u2028\x00"\\é🎉',
        "e": {},
        "l": [],
    }
    plain = {
        "t": [1, 2.5, None, True],
        "m": {"a": [-0.0, 1e16, 2**64 - 1, -(2**63)]},
        "o": {"b": 1, "a": 2},
        "s": '\u2028\x00"\\é🎉',
        "e": {},
        "l": [],
    }
    assert encode_sse({"type": "RAW", "event": value}) == encode_sse(
        {"type": "RAW", "event": plain}
    )
    assert sse_writer._write(plain, "RAW") == orjson.dumps(plain)


@pytest.mark.parametrize(
    "event",
    [
        None,
        [("type", "X")],
        "data",
        {},
        {"type": ""},
        {"type": None},
        {"type": 5},
        {"type": ["X"]},
    ],
)
def test_not_an_event(event):
    with pytest.raises(EncodeError):
        encode_sse(event)  # type: ignore[arg-type]


def test_encode_sse_many():
    evs = [{"type": "A", "x": 1}, {"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": None}]
    out = encode_sse_many(evs)
    assert (
        out == b'data: {"type":"A","x":1}\n\ndata: {"type":"TEXT_MESSAGE_END","messageId":"m"}\n\n'
    )
    assert encode_sse_many([]) == b""
    with pytest.raises(EncodeError):
        encode_sse_many([{"type": "A"}, {}])


# -- ids ----------------------------------------------------------------------------------------


def test_id():
    ev = {"type": "A"}
    assert encode_sse(ev, id="42") == b'id: 42\ndata: {"type":"A"}\n\n'
    assert encode_sse(ev, id="") == b'id: \ndata: {"type":"A"}\n\n'
    p = SSEParser()
    msgs = p.feed(encode_sse(ev, id=" spaced \u00e9") + encode_sse(ev))
    assert [m.id for m in msgs] == [" spaced \u00e9", " spaced \u00e9"]


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00b", "\ud800", 42, b"1"])
def test_bad_id(bad):
    with pytest.raises(EncodeError):
        encode_sse({"type": "A"}, id=bad)  # type: ignore[arg-type]


def test_roundtrip_through_our_reader():
    rng = random.Random(7)
    events = _events(rng, 300)
    stream = encode_sse_many(events)
    reader = SSEEventReader()
    got = reader.feed(stream) + reader.close()
    assert got == [body(encode_sse(e)) for e in events]


# Random events with None sprinkled over every key the shapes know (and some they do not).

_KEYS = {n: [f.name for f in m.fields] for n, m in schema.MESSAGES.items()}
_ROLES = ["developer", "system", "assistant", "user", "tool", "activity", "reasoning", "robot"]


def _opaque(r: random.Random, depth: int = 0) -> object:
    c = r.random()
    if depth > 2 or c < 0.3:
        return r.choice([None, 1, "x", True, 1.5, ":null"])
    if c < 0.6:
        keys = ["a", "name", "id", "metadata", "type", "role"]
        return {r.choice(keys): _opaque(r, depth + 1) for _ in range(r.randint(0, 3))}
    return [_opaque(r, depth + 1) for _ in range(r.randint(0, 3))]


def _obj(r: random.Random, keys) -> dict:
    o = {}
    for k in [*keys, "unknownKey"]:
        if r.random() < 0.6:
            o[k] = None if r.random() < 0.5 else _value(r, k)
    return o


def _tagged(r: random.Random, key: str, tags, keys) -> dict:
    o = _obj(r, keys)
    o[key] = r.choice(tags)
    return o


def _source(r):
    return _tagged(r, "type", ["data", "url", "file", "zzz"], ["value", "mimeType", "provider"])


def _part(r):
    o = _tagged(
        r,
        "type",
        ["text", "image", "audio", "video", "document", "zzz"],
        ["text", "id", "metadata"],
    )
    if r.random() < 0.7:
        o["source"] = _source(r)
    return o


def _message(r):
    o = _tagged(r, "role", _ROLES, [*_KEYS["Message"], "content"])
    if r.random() < 0.5:
        o["content"] = [_part(r) for _ in range(r.randint(0, 3))]
    if r.random() < 0.5:
        o["toolCalls"] = [_tool_call(r) for _ in range(r.randint(0, 2))]
    return o


def _tool_call(r):
    o = _obj(r, _KEYS["ToolCall"])
    if r.random() < 0.7:
        o["function"] = _obj(r, ["name", "arguments"])
    return o


def _value(r: random.Random, k: str) -> object:
    if k == "messages":
        return [_message(r) for _ in range(r.randint(0, 3))]
    if k in ("delta", "patch") and r.random() < 0.5:
        ops = ["add", "remove", "move", "test", "zz"]
        return [_tagged(r, "op", ops, ["path", "from", "value"]) for _ in range(r.randint(0, 3))]
    if k == "content" and r.random() < 0.5:
        return [_part(r) for _ in range(r.randint(0, 3))]
    if k == "toolCalls":
        return [_tool_call(r) for _ in range(r.randint(0, 2))]
    if k == "input":
        o = _obj(r, _KEYS["RunAgentInput"])
        for key, spec in (("tools", "Tool"), ("resume", "ResumeEntry"), ("context", "Context")):
            if r.random() < 0.5:
                o[key] = [_obj(r, _KEYS[spec]) for _ in range(2)]
        if r.random() < 0.7:
            o["messages"] = [_message(r) for _ in range(r.randint(0, 2))]
        return o
    if k == "usage":
        return [_obj(r, _KEYS["Usage"]) for _ in range(r.randint(0, 2))]
    if k == "interrupts":
        return [_obj(r, _KEYS["Interrupt"]) for _ in range(r.randint(0, 2))]
    if k == "source" and r.random() < 0.5:
        return _source(r)
    if k == "function":
        return _obj(r, ["name", "arguments"])
    return _opaque(r)


def _events(r: random.Random, n: int) -> list[dict]:
    types = [*schema.EVENTS, "FUTURE_EVENT"]
    out = []
    for i in range(n):
        t = types[i % len(types)]
        if t == "FUTURE_EVENT":
            out.append({"type": t, "a": None, "timestamp": None})
            continue
        keys = [f.name for f in schema.EVENTS[t].message.fields]
        o = _obj(r, [*keys, "timestamp", "rawEvent", "metadata", "content", "subagentRunId"])
        if t == "RUN_FINISHED" and r.random() < 0.8:
            o["outcome"] = _tagged(
                r,
                "type",
                ["success", "interrupt", "cancelled", "zz"],
                ["pendingToolCallIds", "interrupts"],
            )
        if t == "SUBAGENT_FINISHED" and r.random() < 0.8:
            o["outcome"] = _tagged(r, "type", ["success", "suspended", "zz"], ["interruptIds"])
        if t == "TOOL_CALL_RESULT" and r.random() < 0.6:
            o["content"] = [_part(r) for _ in range(r.randint(0, 3))]
        out.append({"type": t, **o})
    return out
