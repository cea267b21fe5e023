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
    (  # optional base and event fields dropped, unknown ones kept
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": "d",
            "subagentRunId": None,
            "timestamp": None,
            "rawEvent": None,
            "metadata": None,
            "extra": None,
        },
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", "extra": None},
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
                {"id": "4", "role": "tool", "content": "x", "toolCallId": "t", "error": None},
                {"id": "5", "role": "developer", "content": "c", "name": None, "error": None},
                {"id": "6", "role": "activity", "activityType": "a", "content": {"a": None}},
                {"id": "7", "role": "reasoning", "content": "r", "name": None},
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
                            "source": {"type": "data", "value": "v", "mimeType": "m/t"},
                        },
                        {
                            "type": "audio",
                            "source": {"type": "file", "value": "f", "provider": None},
                        },
                    ],
                },
                {  # a key the role does not declare: written as given, nulls and all
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
                {"id": "4", "role": "tool", "content": "x", "toolCallId": "t"},
                {"id": "5", "role": "developer", "content": "c", "error": None},
                {"id": "6", "role": "activity", "activityType": "a", "content": {"a": None}},
                {"id": "7", "role": "reasoning", "content": "r", "name": None},
                {
                    "id": "9",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "hi"},
                        {"type": "image", "source": {"type": "url", "value": "u"}},
                        {
                            "type": "document",
                            "source": {"type": "data", "value": "v", "mimeType": "m/t"},
                        },
                        {"type": "audio", "source": {"type": "file", "value": "f"}},
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
                "context": [{"description": "d", "value": "v", "extra": None}],
                "resume": [{"interruptId": "i", "status": "resolved", "payload": None}],
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
                "context": [{"description": "d", "value": "v", "extra": None}],
                "resume": [{"interruptId": "i", "status": "resolved"}],
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
        ({"type": "CUSTOM", "name": "n", "value": {1: "x"}}, "/value", "key 1 is not a string"),
        ({"type": "CUSTOM", "name": "n", "value": ["ok", "\ud800"]}, "/value/1", "surrogate"),
        (
            {"type": "CUSTOM", "name": "n", "value": {"a/b": 2**64}},
            "/value/a~1b",
            "does not fit a double exactly",
        ),
        ({"type": "CUSTOM", "name": "n", "value": {"s": {1, 2}}}, "/value/s", "set is not a JSON"),
        ({"type": "CUSTOM", "name": "n", "value": {"\udcff": 1}}, "/value/\udcff", "surrogate"),
        ({"type": "CUSTOM", "name": "n", "value": 1, "x": [float("nan")]}, "/x/0", "nan is not"),
        ({"type": "CUSTOM", "name": "n", "value": 1, 5: "k"}, "", "key 5 is not a string"),
        ({"type": "CUSTOM", "name": "n", "value": 1, "\ud800": 1}, "/\ud800", "surrogate"),
    ],
)
def test_what_json_cannot_hold_is_refused(event, path, match):
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
        (2**64, "/k", "does not fit a double exactly"),
        ({1, 2}, "/k", "set is not a JSON value"),
        ({3: 1}, "/k", "key 3 is not a string"),
        ({"\udcff": 1}, "/k/\udcff", "lone surrogate at index 0"),
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
    lossy = {"lossy_numbers": True}  # integers past 2**53: written as they are
    assert encode_sse({"type": "RAW", "event": value}, **lossy) == encode_sse(
        {"type": "RAW", "event": plain}, **lossy
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
    evs = [
        {"type": "RAW", "event": 1, "x": 1},
        {"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": None},
    ]
    out = encode_sse_many(evs)
    assert out == (
        b'data: {"type":"RAW","event":1,"x":1}\n\n'
        b'data: {"type":"TEXT_MESSAGE_END","messageId":"m"}\n\n'
    )
    assert encode_sse_many([]) == b""
    with pytest.raises(EncodeError):
        encode_sse_many([evs[0], {}])


# -- ids ----------------------------------------------------------------------------------------


def test_id():
    ev = {"type": "STEP_STARTED", "stepName": "s"}
    data = b'data: {"type":"STEP_STARTED","stepName":"s"}\n\n'
    assert encode_sse(ev, id="42") == b"id: 42\n" + data
    assert encode_sse(ev, id="") == b"id: \n" + data
    p = SSEParser()
    msgs = p.feed(encode_sse(ev, id=" spaced \u00e9") + encode_sse(ev))
    assert [m.id for m in msgs] == [" spaced \u00e9", " spaced \u00e9"]


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00b", "\ud800", 42, b"1"])
def test_bad_id(bad):
    with pytest.raises(EncodeError):
        encode_sse({"type": "STEP_STARTED", "stepName": "s"}, id=bad)  # type: ignore[arg-type]


def written(events: list[dict]) -> list[dict]:
    """The events the contract lets through (most random ones it refuses)."""
    out = []
    for e in events:
        try:
            encode_sse(e)
        except EncodeError:
            continue
        out.append(e)
    return out


def test_roundtrip_through_our_reader():
    rng = random.Random(7)
    events = written(_events(rng, 3000))
    assert len(events) > 100
    stream = encode_sse_many(events)
    reader = SSEEventReader()
    got = reader.feed(stream) + reader.close()
    assert got == [body(encode_sse(e)) for e in events]


# Corpus events with None sprinkled over them: a value replaced by None (an
# optional key: left out; a required one: refused), a key added as None (one the
# shape declares optional: left out; one it does not know: kept as null).

_POOL = sorted(
    {f.name for m in schema.MESSAGES.values() for f in m.fields}
    | {f.name for f in schema.BASE_FIELDS}
    | {"content", "outcome", "unknownKey"}
)


def _sprinkle(r: random.Random, value: object) -> object:
    if isinstance(value, list):
        return [_sprinkle(r, v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        out[k] = None if k != "type" and r.random() < 0.08 else _sprinkle(r, v)
    for _ in range(r.randint(0, 2)):
        k = r.choice(_POOL)
        out.setdefault(k, None)
    return out


def _events(r: random.Random, n: int) -> list[dict]:
    from tests.support.corpus import CORPUS

    return [_sprinkle(r, CORPUS[i % len(CORPUS)]) for i in range(n)]  # type: ignore[misc]
