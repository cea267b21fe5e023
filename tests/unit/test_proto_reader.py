"""Decoding one payload: protobuf semantics, AG-UI rules, and every refusal.

Runs against both codec implementations (``codec`` fixture) and, where it makes
sense, the upb reference path.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agui_wire import DecodeError, LimitExceeded, UnknownEventError, UnknownPartWarning
from agui_wire._codec import upb
from agui_wire._codec.proto_writer import encode_payload
from agui_wire.errors import InvalidEvent
from agui_wire.validate import validate_event
from tests.support.wire import (
    base,
    double,
    entry,
    json_equal,
    ld,
    string,
    tag,
    v_list,
    v_null,
    v_num,
    v_str,
    v_struct,
    varint,
    vi,
)

TMC = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hello"}


def tmc(*fields: bytes) -> bytes:
    """A TEXT_MESSAGE_CONTENT envelope (arm 2, EventType 1) around ``fields``."""
    return ld(2, base(1), *fields)


def snapshot(value: bytes) -> bytes:
    """A STATE_SNAPSHOT envelope (arm 7, EventType 6) whose snapshot Value is ``value``."""
    return ld(7, base(6), ld(2, value))


def both(codec: Any, payload: bytes, **options: Any) -> Any:
    """Decode with the codec and check the upb path agrees (same dict or same error)."""
    shared = {k: v for k, v in options.items() if k == "invalid_events"}
    compare = len(shared) == len(options)
    try:
        ours = codec.decode_payload(payload, **options)
    except DecodeError as exc:
        if compare:
            with pytest.raises(type(exc)):
                upb.decode_payload(payload, **shared)
        raise
    if compare:
        assert json_equal(upb.decode_payload(payload, **shared), ours)
    return ours


def read(codec: Any, payload: bytes) -> Any:
    """The wire mapping, the contract aside: the event as decoded (``invalid_events=
    "keep"``); by default it is refused exactly when ``validate_event`` has an error."""
    kept = both(codec, payload, invalid_events="keep")
    if any(p.severity == "error" for p in validate_event(kept)):
        with pytest.raises(InvalidEvent):
            both(codec, payload)
    else:
        assert both(codec, payload) == kept
    return kept


def test_minimal_events(codec) -> None:
    assert both(codec, ld(1, ld(1))) == {"type": "TEXT_MESSAGE_START", "messageId": ""}
    assert both(codec, tmc(string(2, "m"), string(3, "x"))) == {**TMC, "delta": "x"}


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        (b"", "empty frame"),
        (ld(2), "has no base_event"),
        (ld(2, string(2, "m")), "has no base_event"),
        (
            ld(2, base(5)),
            "envelope carries TEXT_MESSAGE_CONTENT but the base event declares TOOL_CALL_END",
        ),
        (ld(2, base(99)), "base event declares 99"),
        (ld(1, base(0)) + tmc(), "more than one arm"),
        (vi(2, 5), "event arm 2 has wire type 0"),
        (vi(40, 5), "carries no event"),
        (tag(0, 0) + varint(1), "field number 0"),
        (tag(40, 6), "wire type 6"),
        (tag(40, 7), "wire type 7"),
        (b"\x12\x05ab", "declares 5 bytes, 2 remain"),
        (b"\x12\x80", "truncated varint"),
        (b"\x12" + b"\xff" * 10 + b"\x01", "varint"),
        (tag(40, 3) + tag(41, 4), "does not match"),
        (tag(40, 3), "not closed"),
        (tag(40, 1) + b"\x00" * 7, "truncated fixed64"),
        (tag(40, 5) + b"\x00" * 3, "truncated fixed32"),
    ],
)
def test_broken_frames(codec, payload: bytes, fragment: str) -> None:
    with pytest.raises(DecodeError) as info:
        both(codec, payload)
    assert fragment in str(info.value)
    assert not isinstance(info.value, UnknownEventError)


def test_every_truncation_is_an_error(codec) -> None:
    full = encode_payload(
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "1", "role": "user", "content": "hi"}],
                "state": {"a": [1, {"b": None}]},
            },
        }
    )
    for cut in range(len(full)):
        with pytest.raises(DecodeError):
            codec.decode_payload(full[:cut])


def test_unknown_arm_is_an_event_from_a_later_protocol(codec) -> None:
    future = ld(32, base(40), string(2, "x"))
    with pytest.raises(UnknownEventError) as info:
        both(codec, future)
    assert info.value.fields == ((32, future[3:]),)  # after the 2-byte tag and the length
    # beside a known arm, unknown fields are protobuf's to ignore
    assert both(codec, tmc(string(2, "m"), string(3, "hello")) + future) == TMC
    # an unknown field that is not a well-formed message is broken bytes, not the future
    with pytest.raises(DecodeError) as broken:
        both(codec, ld(32, b"\x0a\x05"))
    assert not isinstance(broken.value, UnknownEventError)


def test_same_arm_twice_merges(codec) -> None:
    payload = ld(2, base(1), string(2, "m")) + ld(2, string(3, "hello"))
    assert both(codec, payload) == TMC


def test_repeated_base_event_merges(codec) -> None:
    payload = ld(2, base(1), string(2, "m"), string(3, "hello"), ld(1, vi(2, 7)))
    assert both(codec, payload) == {**TMC, "timestamp": 7}


def test_last_scalar_wins_but_every_string_must_be_utf8(codec) -> None:
    assert both(codec, tmc(string(2, "a"), string(2, "m"), string(3, "hello"))) == TMC
    with pytest.raises(DecodeError, match="UTF-8"):
        both(codec, tmc(ld(2, b"\xff"), string(2, "m")))


def test_wrong_wire_type_is_an_unknown_field(codec) -> None:
    assert both(codec, tmc(string(2, "m"), vi(3, 5), string(3, "hello"), vi(2, 1))) == TMC


def test_invalid_utf8(codec) -> None:
    payload = tmc(string(2, "m"), ld(3, b"ok\xc3("))
    with pytest.raises(DecodeError) as info:
        both(codec, payload)
    assert info.value.offset == payload.index(b"ok\xc3(") + 2
    assert codec.decode_payload(payload, invalid_utf8="replace")["delta"] == "ok\ufffd("
    key = snapshot(v_struct(ld(1, ld(1, b"\xfe"), ld(2, v_null()))))
    with pytest.raises(DecodeError):
        both(codec, key)
    assert codec.decode_payload(key, invalid_utf8="replace")["snapshot"] == {"\ufffd": None}


def test_json_values(codec) -> None:
    def snap(value: bytes) -> Any:
        return read(codec, snapshot(value))["snapshot"]

    assert snap(v_null()) is None
    assert snap(vi(4, 1)) is True
    assert type(snap(v_num(5.0))) is int
    assert type(snap(v_num(2.0**53))) is int
    assert type(snap(v_num(2.0**53 + 2))) is float
    assert math.copysign(1, snap(v_num(-0.0))) == -1
    assert math.isnan(codec.decode_payload(snapshot(v_num(math.nan)))["snapshot"])
    assert snap(v_list(v_num(1), b"", v_str("x"))) == [1, None, "x"]
    assert snap(v_struct(entry("a", v_num(1)), ld(1, string(1, "b")), entry("c", b""))) == {"a": 1}
    # duplicate keys: the last entry wins, a kindless one removes the key
    assert snap(v_struct(entry("a", v_num(1)), entry("a", v_num(2)))) == {"a": 2}
    assert snap(v_struct(entry("a", v_num(1)), entry("a", b""))) == {}
    # the empty key is written without a key field by ts-proto
    assert snap(v_struct(ld(1, ld(2, v_null())))) == {"": None}
    # oneof: a later kind replaces; repeated struct/list occurrences merge
    assert snap(v_str("x") + v_num(3)) == 3
    assert snap(v_struct(entry("a", v_null())) + v_num(3) + v_struct(entry("b", v_null()))) == {
        "b": None
    }
    assert snap(v_struct(entry("a", v_null())) + v_struct(entry("b", v_null()))) == {
        "a": None,
        "b": None,
    }
    assert snap(v_list(v_num(1)) + v_list(v_num(2))) == [1, 2]
    # what a later kind replaces is still checked
    with pytest.raises(DecodeError):
        read(codec, snapshot(v_str("x")[:-1] + b"\xff" + v_num(3)))
    # absent snapshot: no key
    assert read(codec, ld(7, base(6))) == {"type": "STATE_SNAPSHOT"}
    assert read(codec, ld(7, base(6), ld(2))) == {"type": "STATE_SNAPSHOT"}


def test_depth_limit(codec) -> None:
    def nested(levels: int) -> bytes:
        value = v_null()
        for i in range(levels):
            value = v_list(value) if i % 2 else v_struct(entry("k", value))
        return snapshot(value)

    for levels in (1, 2, 31, 32, 33, 100):
        out = codec.decode_payload(nested(levels), max_depth=levels)
        assert out["type"] == "STATE_SNAPSHOT"
        with pytest.raises(LimitExceeded):
            codec.decode_payload(nested(levels + 1), max_depth=levels)
    deep = nested(1024)
    assert both(codec, deep)["type"] == "STATE_SNAPSHOT"
    with pytest.raises(LimitExceeded):
        both(codec, nested(1025))
    # a replaced struct counts too (upb parses it)
    with pytest.raises(LimitExceeded):
        codec.decode_payload(snapshot(nested_value(12) + v_num(1)), max_depth=10)
    assert (
        codec.decode_payload(snapshot(nested_value(10) + v_num(1)), max_depth=10)["snapshot"] == 1
    )


def nested_value(levels: int) -> bytes:
    value = v_null()
    for _ in range(levels):
        value = v_list(value)
    return value


def test_patch_ops(codec) -> None:
    ops = b"".join(ld(2, vi(1, n), string(2, f"/{n}")) for n in (0, 1, 2, 3, 4, 5, 9)) + ld(
        2, vi(1, 2), string(2, "/v"), string(3, "/f"), ld(4, v_null())
    )
    out = read(codec, ld(8, base(7), ops))
    assert [op["op"] for op in out["delta"]] == [
        "add",
        "remove",
        "replace",
        "move",
        "copy",
        "test",
        "9",
        "replace",
    ]
    assert out["delta"][-1] == {"op": "replace", "path": "/v", "from": "/f", "value": None}
    assert out["delta"][0] == {"op": "add", "path": "/0"}


def user(*fields: bytes) -> bytes:
    return ld(9, base(8), ld(2, string(1, "1"), string(2, "user"), *fields))


def part_text(text: str) -> bytes:
    return ld(8, ld(1, string(1, text)))


def test_message_content_carriers(codec) -> None:
    def messages(payload: bytes) -> Any:
        return read(codec, payload)["messages"]

    assert messages(user()) == [{"id": "1", "role": "user", "content": []}]
    assert messages(user(string(3, ""))) == [{"id": "1", "role": "user", "content": ""}]
    assert messages(user(part_text("t"))) == [
        {"id": "1", "role": "user", "content": [{"type": "text", "text": "t"}]}
    ]
    with pytest.raises(DecodeError, match="both string content and content parts"):
        read(codec, user(string(3, "x"), part_text("t")))
    assistant = ld(9, base(8), ld(2, string(1, "1"), string(2, "assistant"), part_text("t")))
    with pytest.raises(DecodeError, match="content parts"):
        read(codec, assistant)
    assistant_map = ld(9, base(8), ld(2, string(1, "1"), string(2, "assistant"), ld(13)))
    with pytest.raises(DecodeError, match="activity content"):
        read(codec, assistant_map)
    activity = ld(9, base(8), ld(2, string(1, "1"), string(2, "activity"), string(3, "x"), ld(13)))
    with pytest.raises(DecodeError, match="activity message carries string content"):
        read(codec, activity)
    future = ld(
        9, base(8), ld(2, string(1, "1"), string(2, "hologram"), ld(13, entry("a", v_num(1))))
    )
    assert messages(future) == [{"id": "1", "role": "hologram", "content": {"a": 1}}]
    with pytest.raises(DecodeError, match="more than one content form"):
        both(
            codec,
            ld(9, base(8), ld(2, string(1, "1"), string(2, "hologram"), string(3, "x"), ld(13))),
        )
    assert messages(ld(9, base(8), ld(2, string(1, "1"), string(2, "hologram"), ld(8, ld(1))))) == [
        {"id": "1", "role": "hologram", "content": [{"type": "text", "text": ""}]}
    ]


def test_content_parts(codec) -> None:
    two_arms = user(ld(8, ld(1, string(1, "t")), ld(2)))
    with pytest.raises(DecodeError, match="more than one arm"):
        read(codec, two_arms)
    with pytest.warns(UnknownPartWarning):
        out = codec.decode_payload(user(ld(8, ld(9, string(1, "x"))), part_text("kept")))
    assert out["messages"][0]["content"] == [{"type": "text", "text": "kept"}]
    with pytest.warns(UnknownPartWarning):
        out = codec.decode_payload(user(ld(8, ld(2, ld(1, ld(7, string(1, "v")))))))
    assert out["messages"][0]["content"] == []
    no_source = read(codec, user(ld(8, ld(2, string(3, "id")))))
    assert no_source["messages"][0]["content"] == [{"type": "image", "id": "id"}]
    with pytest.raises(DecodeError, match="more than one arm"):
        read(codec, user(ld(8, ld(2, ld(1, ld(1), ld(2))))))


def test_tool_call_result_content(codec) -> None:
    def result(*fields: bytes) -> bytes:
        return ld(22, base(21), string(3, "m"), string(4, "c"), *fields)

    assert both(codec, result())["content"] == []
    assert both(codec, result(string(5, "")))["content"] == ""
    with pytest.raises(DecodeError, match="both string content and content parts"):
        both(codec, result(string(5, "x"), ld(7, ld(1, string(1, "t")))))


def test_run_finished_outcomes(codec) -> None:
    def finished(*fields: bytes) -> Any:
        out = read(codec, ld(13, base(12), string(2, "t"), string(3, "r"), *fields))
        return {k: v for k, v in out.items() if k not in ("type", "threadId", "runId")}

    interrupt = ld(6, string(1, "i"), string(2, "why"))
    assert finished() == {}
    assert finished(string(5, "success")) == {"outcome": {"type": "success"}}
    assert finished(string(5, "interrupt")) == {"outcome": {"type": "interrupt", "interrupts": []}}
    assert finished(string(5, "interrupt"), interrupt, string(8, "p")) == {
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i", "reason": "why"}],
            "pendingToolCallIds": ["p"],
        }
    }
    assert finished(string(5, "weird"), string(8, "p")) == {
        "outcome": {"type": "weird", "pendingToolCallIds": ["p"]}
    }
    # no outcome on the wire: the lists stay top-level (pre-1.0 shape), like the reference
    assert finished(interrupt, string(8, "p")) == {
        "pendingToolCallIds": ["p"],
        "interrupts": [{"id": "i", "reason": "why"}],
    }
    assert finished(ld(7)) == {"usage": [{}]}


def test_negative_and_big_int64(codec) -> None:
    out = read(codec, tmc(string(2, "m"), ld(1, vi(1, 1), vi(2, -1))))
    assert out["timestamp"] == -1
    out = read(codec, tmc(string(2, "m"), ld(1, vi(1, 1), vi(2, 2**62))))
    assert out["timestamp"] == 2**62


def test_fixed_width_unknown_fields_are_skipped(codec) -> None:
    payload = tmc(string(2, "m"), string(3, "hello"), double(40, 1.0), tag(41, 5) + b"abcd")
    assert both(codec, payload) == TMC


# -- what a refusal costs (rejecting must cost what accepting costs) ---------
# Counted, not timed: the calls into proto_reader while one payload is refused. The
# pure decoder walks the payload once (twice for a depth fault: the walk at
# MAX_DEPTH_LIMIT that tells a limit from another fault); the Cython decoder walks
# it itself and has proto_reader only word the error, so proto_reader reads at most
# the one field at fault. Before, every refused payload was decoded again in Python.

N_ITEMS = 2000


def _wide(last: bytes) -> bytes:
    """A snapshot list of N_ITEMS strings, then ``last`` (a Value) as its last item."""
    return snapshot(v_list(*([v_str("item")] * N_ITEMS), last))


REFUSED = {
    "bad UTF-8 at the end": (_wide(ld(3, b"ok\xff")), DecodeError, 1),
    "truncated field at the end": (_wide(b"\x1a\x05ab"), DecodeError, 1),
    "group not closed at the end": (_wide(tag(40, 3) + vi(1, 1)), DecodeError, 1),
    "two kinds of content at the end": (
        user(*[part_text("t")] * N_ITEMS, string(3, "and a string")),
        DecodeError,
        1,
    ),
    "10,000 levels deep": (snapshot(nested_value(10_000)), LimitExceeded, 2),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_refused_payload_is_walked_once(codec, name: str, monkeypatch) -> None:
    from agui_wire._codec import proto_reader

    payload, cls, pure_walks = REFUSED[name]
    walks: list[int] = []
    fields = [0]
    event, read_field = proto_reader._Reader.event, proto_reader.read_field

    def counted_event(self: Any) -> Any:
        walks.append(1)
        return event(self)

    def counted_field(*args: Any) -> Any:
        fields[0] += 1
        return read_field(*args)

    monkeypatch.setattr(proto_reader._Reader, "event", counted_event)
    monkeypatch.setattr(proto_reader, "read_field", counted_field)
    fallbacks = _fallbacks()
    with pytest.raises(cls):
        codec.decode_payload(payload)
    if codec.name == "cython":
        assert walks == []
        assert fields[0] <= 1
        assert _fallbacks() == fallbacks
    else:
        assert len(walks) <= pure_walks
        assert fields[0] <= pure_walks * (2 * N_ITEMS + 20_010)


def _fallbacks() -> int:
    try:
        from agui_wire import _fast
    except ImportError:
        return 0
    return int(_fast._decoder_fallbacks())
