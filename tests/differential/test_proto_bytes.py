"""The Cython decoder (_fast) against its pure-Python reference on hostile wire bytes.

The decoding half of test_proto_codec.py (which holds valid events both ways and the
encoder's refusals): handmade payloads (merges, wrong wire types, groups, invalid
UTF-8, depth), every truncation and byte flip of the corpus, random bytes and random
arm bodies, and structural mutations of valid payloads. For each input both decoders
give the same dict (exact types, key order, float bits), the same warnings, or the same
exception (class, args and every attribute: offset, fields).
"""

from __future__ import annotations

import copy
import struct
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_wire._codec import proto_reader, proto_writer
from agui_wire.errors import UnknownPartWarning
from tests.support.compare import assert_same_outcome
from tests.support.strategies import events
from tests.support.twins import fast_or_skip
from tests.support.wire import tag, varint

fast = fast_or_skip("encode_payload")
fast_or_skip("decode_payload")

from tests.support.corpus import CASES, CORPUS  # noqa: E402  (after the skip: corpus imports agui_wire._sample)


def assert_decodes_same(data: Any, **kwargs: Any) -> None:
    assert_same_outcome(fast.decode_payload, proto_reader.decode_payload, data, **kwargs)


# -- decoding malformed bytes ------------------------------------------------------------


def ld(number: int, body: bytes) -> bytes:
    return tag(number, 2) + varint(len(body)) + body


def event_bytes(arm: int, body: bytes, type_value: int | None = None) -> bytes:
    """Event{arm: {base_event: {type}, ...body}}."""
    base = b"" if not type_value else tag(1, 0) + varint(type_value)
    return ld(arm, ld(1, base) + body)


def snapshot(value_body: bytes) -> bytes:
    return event_bytes(7, ld(2, value_body), 6)


NULL = tag(1, 0) + b"\x00"


def number(x: float) -> bytes:
    return tag(2, 1) + struct.pack("<d", x)


def string(b: bytes) -> bytes:
    return ld(3, b)


def entry(key: bytes | None, value: bytes | None) -> bytes:
    return ld(
        1, (ld(1, key) if key is not None else b"") + (ld(2, value) if value is not None else b"")
    )


def struct_value(*entries: bytes) -> bytes:
    return ld(5, b"".join(entries))


def list_value(*values: bytes) -> bytes:
    return ld(6, b"".join(ld(1, v) for v in values))


def deep_list(depth: int) -> bytes:
    value = NULL
    for _ in range(depth):
        value = list_value(value)
    return value


TMC = event_bytes(2, ld(2, b"m") + ld(3, b"delta"), 1)
HANDMADE: dict[str, bytes] = {
    "empty": b"",
    "only base": event_bytes(3, b"", 2),
    "no base": ld(3, ld(2, b"m")),
    "type mismatch": event_bytes(3, ld(2, b"m"), 5),
    "two arms": TMC + event_bytes(3, ld(2, b"m"), 2),
    "arm twice (merge)": TMC + event_bytes(2, ld(3, b"second"), 1),
    # merged occurrences are each a message of their own: no field straddles two
    "straddling arm": ld(2, ld(1, tag(1, 0) + b"\x01") + tag(2, 2)) + ld(2, varint(1) + b"m"),
    "straddling struct": snapshot(
        ld(5, tag(1, 2)) + ld(5, varint(len(entry(b"a", NULL)) - 2) + entry(b"a", NULL)[2:])
    ),
    "straddling entry value": snapshot(
        struct_value(ld(1, ld(1, b"a") + ld(2, tag(3, 2)) + ld(2, b"\x01x")))
    ),
    "base twice (merge)": ld(2, ld(1, b"") + ld(2, b"m") + ld(1, tag(1, 0) + b"\x01")),
    "string twice": event_bytes(2, ld(2, b"a") + ld(2, b"b") + ld(3, b"d"), 1),
    "overwritten bad utf8": event_bytes(2, ld(2, b"\xff") + ld(2, b"b"), 1),
    "bad utf8": event_bytes(2, ld(2, b"a\xc3"), 1),
    "surrogate utf8": event_bytes(2, ld(2, b"\xed\xa0\x80"), 1),
    "overlong utf8": event_bytes(2, ld(2, b"\xc0\xaf"), 1),
    "wrong wire type field": event_bytes(2, tag(2, 0) + b"\x05" + ld(3, b"d"), 1),
    "wrong wire type arm": tag(2, 0) + b"\x01",
    "wrong wire type base": ld(2, tag(1, 0) + b"\x00"),
    "group skipped": event_bytes(2, tag(9, 3) + tag(1, 0) + b"\x01" + tag(9, 4) + ld(2, b"m"), 1),
    "nested groups": event_bytes(2, tag(9, 3) + tag(8, 3) + tag(8, 4) + tag(9, 4), 1),
    "group mismatch": event_bytes(2, tag(9, 3) + tag(8, 4), 1),
    "group unclosed": event_bytes(2, tag(9, 3) + tag(1, 0) + b"\x01", 1),
    "end group alone": event_bytes(2, tag(9, 4), 1),
    "field zero": event_bytes(2, tag(0, 0) + b"\x00", 1),
    "wire type 7": event_bytes(2, tag(3, 7), 1),
    "varint 10 bytes": event_bytes(2, tag(9, 0) + b"\xff" * 9 + b"\x01", 1),
    "varint overflow": event_bytes(2, tag(9, 0) + b"\xff" * 9 + b"\x02", 1),
    "varint 11 bytes": event_bytes(2, tag(9, 0) + b"\xff" * 10 + b"\x00", 1),
    "tag overflow": event_bytes(2, varint(1 << 40), 1),
    "length past end": ld(2, ld(1, b"") + tag(2, 2) + b"\x7f"),
    "fixed64 truncated": event_bytes(2, tag(9, 1) + b"\x00" * 3, 1),
    "fixed32": event_bytes(2, tag(9, 5) + b"\x00" * 4, 1),
    "unknown arm": ld(40, ld(1, b"")),
    "unknown arm junk": ld(40, b"\xff"),
    "no event": tag(40, 0) + b"\x01",
    "negative type": ld(1, ld(1, tag(1, 0) + varint(-1))),
    "patch op out of range": event_bytes(8, ld(2, tag(1, 0) + b"\x09" + ld(2, b"/a")), 7),
    "patch op negative": event_bytes(8, ld(2, tag(1, 0) + varint(-2) + ld(2, b"/a")), 7),
    "value no kind": snapshot(b""),
    "value only unknown": snapshot(tag(9, 0) + b"\x01"),
    "value null varint 7": snapshot(tag(1, 0) + b"\x07"),
    "value nan": snapshot(number(float("nan"))),
    "value -0": snapshot(number(-0.0)),
    "value 2**53": snapshot(number(2.0**53)),
    "value 2**53+2": snapshot(number(2.0**53 + 2)),
    "value inf": snapshot(number(float("inf"))),
    "value bool 2": snapshot(tag(4, 0) + b"\x02"),
    "value two kinds": snapshot(NULL + string(b"x")),
    "value replaced bad string": snapshot(string(b"\xff") + NULL),
    "value replaced struct": snapshot(struct_value(entry(b"a", NULL)) + string(b"s")),
    "value structs merge": snapshot(
        struct_value(entry(b"a", NULL)) + struct_value(entry(b"b", string(b"x")))
    ),
    "value lists merge": snapshot(list_value(NULL) + list_value(number(2)) + list_value()),
    "value struct list struct": snapshot(
        struct_value(entry(b"a", NULL)) + list_value(NULL) + struct_value(entry(b"b", NULL))
    ),
    "value replaced too deep": snapshot(deep_list(4) + NULL),
    "entry duplicate key": snapshot(
        struct_value(entry(b"a", NULL), entry(b"b", NULL), entry(b"a", string(b"x")))
    ),
    "entry no value removes": snapshot(
        struct_value(entry(b"a", NULL), entry(b"b", NULL), entry(b"a", None))
    ),
    "entry kindless value removes": snapshot(
        struct_value(entry(b"a", NULL), entry(b"a", b""), entry(b"a", NULL))
    ),
    "entry no key": snapshot(struct_value(entry(None, NULL))),
    "entry two keys": snapshot(struct_value(ld(1, ld(1, b"a") + ld(1, b"b") + ld(2, NULL)))),
    "entry two keys bad first": snapshot(struct_value(ld(1, ld(1, b"\xff") + ld(1, b"b")))),
    "entry two values": snapshot(
        struct_value(
            ld(
                1,
                ld(1, b"a")
                + ld(2, struct_value(entry(b"x", NULL)))
                + ld(2, struct_value(entry(b"y", NULL))),
            )
        )
    ),
    "entry wrong wire type": snapshot(ld(5, tag(1, 0) + b"\x01" + entry(b"a", NULL))),
    "list kindless element": snapshot(list_value(b"", NULL, tag(9, 0) + b"\x00")),
    "list wrong wire type": snapshot(ld(6, tag(1, 0) + b"\x01" + ld(1, NULL))),
    "metadata merge": ld(
        3,
        ld(1, tag(1, 0) + b"\x02" + ld(4, entry(b"a", NULL)))
        + ld(1, ld(4, entry(b"b", NULL)))
        + ld(2, b"m"),
    ),
    "message role content": event_bytes(
        9, ld(2, ld(1, b"1") + ld(2, b"assistant") + ld(8, ld(1, ld(1, b"t")))), 8
    ),
    "user text and parts": event_bytes(
        9, ld(2, ld(1, b"1") + ld(2, b"user") + ld(3, b"x") + ld(8, ld(1, ld(1, b"t")))), 8
    ),
    "user no content": event_bytes(9, ld(2, ld(1, b"1") + ld(2, b"user")), 8),
    "activity no content": event_bytes(9, ld(2, ld(1, b"1") + ld(2, b"activity")), 8),
    "activity map twice": event_bytes(
        9,
        ld(
            2,
            ld(1, b"1")
            + ld(2, b"activity")
            + ld(13, entry(b"a", NULL))
            + ld(13, entry(b"b", NULL)),
        ),
        8,
    ),
    "unknown role two forms": event_bytes(
        9, ld(2, ld(1, b"1") + ld(2, b"robot") + ld(3, b"x") + ld(13, b"")), 8
    ),
    "unknown role parts": event_bytes(
        9, ld(2, ld(1, b"1") + ld(2, b"robot") + ld(8, ld(1, b""))), 8
    ),
    "part unknown kind": event_bytes(22, ld(3, b"m") + ld(4, b"t") + ld(7, ld(9, b"")), 21),
    "part two arms": event_bytes(22, ld(3, b"m") + ld(7, ld(1, b"") + ld(2, b"")), 21),
    "part source unknown": event_bytes(22, ld(7, ld(2, ld(1, ld(7, b"")))), 21),
    "part no source": event_bytes(22, ld(7, ld(2, ld(3, b"id"))), 21),
    "part source two arms": event_bytes(22, ld(7, ld(3, ld(1, ld(1, b"") + ld(2, b"")))), 21),
    "part arm twice": event_bytes(22, ld(7, ld(1, ld(1, b"a")) + ld(1, ld(2, b"id"))), 21),
    "tool result text and parts": event_bytes(22, ld(5, b"x") + ld(7, ld(1, b"")), 21),
    "tool result nothing": event_bytes(22, ld(3, b"m"), 21),
    "run finished outcome lists": event_bytes(
        13, ld(5, b"success") + ld(8, b"a") + ld(6, ld(1, b"i")) + ld(8, b"b"), 12
    ),
    "run finished interrupt": event_bytes(13, ld(5, b"interrupt") + ld(8, b"a"), 12),
    "run finished no outcome": event_bytes(13, ld(8, b"a") + ld(6, ld(1, b"i")), 12),
    "run finished outcome twice": event_bytes(13, ld(5, b"\xff") + ld(5, b"cancelled"), 12),
    "subagent outcome": event_bytes(20, ld(4, b"suspended") + ld(5, b"i1") + ld(5, b"i2"), 17),
    "subagent no outcome": event_bytes(20, ld(5, b"i1"), 17),
    "usage omitted when empty": event_bytes(14, ld(3, b"boom"), 13),
    "usage ints": event_bytes(14, ld(4, tag(3, 0) + varint(-5) + tag(8, 0) + varint(2**63)), 13),
    "tool call function merge": event_bytes(
        9,
        ld(
            2,
            ld(1, b"1") + ld(2, b"assistant") + ld(5, ld(3, ld(1, b"f")) + ld(3, ld(2, b"{}"))),
        ),
        8,
    ),
}


@pytest.mark.parametrize("name", list(HANDMADE))
def test_handmade_payloads(name: str) -> None:
    data = HANDMADE[name]
    for kwargs in ({}, {"invalid_utf8": "replace"}, {"max_depth": 2}):
        assert_decodes_same(data, **kwargs)


@pytest.mark.parametrize("depth", [1, 2, 3, 64, 1000])
def test_decode_depth_boundary(depth: int) -> None:
    data = snapshot(deep_list(depth))
    # TEXT_MESSAGE_END with metadata {"a": <depth - 1 nested lists>}
    meta = ld(
        3, ld(1, tag(1, 0) + b"\x02" + ld(4, entry(b"a", deep_list(depth - 1)))) + ld(2, b"m")
    )
    for d in (depth - 1, depth, depth + 1):
        if 1 <= d <= 10_000:
            assert_decodes_same(data, max_depth=d)
            assert_decodes_same(meta, max_depth=d)


def test_decode_options_behave_the_same() -> None:
    for kwargs in (
        {"invalid_utf8": "ignore"},
        {"invalid_utf8": None},
        {"max_depth": 0},
        {"max_depth": 10_001},
        {"max_depth": 2.5},
        {"max_depth": True},
    ):
        assert_decodes_same(TMC, **kwargs)


@pytest.mark.parametrize(
    "make",
    [
        bytes,
        bytearray,
        memoryview,
        lambda b: memoryview(b"xx" + b + b"yy")[2:-2],
        lambda b: memoryview(bytes(2 * len(b)))[::2],  # non-contiguous
        lambda b: type("B", (bytes,), {})(b),
        lambda b: list(b),
        lambda b: b.decode("latin-1"),
        lambda b: 7,
    ],
)
def test_decode_input_types(make: Callable[[bytes], Any]) -> None:
    for event in CORPUS[:40]:
        assert_decodes_same(make(proto_writer.encode_payload(event)))


@pytest.mark.parametrize("name", list(CASES))
def test_every_truncation(name: str) -> None:
    payload = proto_writer.encode_payload(CASES[name])
    for n in range(len(payload)):
        assert_decodes_same(payload[:n])


def flip_positions(n: int) -> range | list[int]:
    """Every byte of a short payload; of a long one (a long string inside, whose
    bytes all play the same part) both ends and a stride through the middle."""
    if n <= 1024:
        return range(n)
    return [*range(512), *range(512, n - 512, 61), *range(n - 512, n)]


@pytest.mark.parametrize("name", list(CASES))
def test_byte_flips(name: str) -> None:
    payload = proto_writer.encode_payload(CASES[name])
    for i in flip_positions(len(payload)):
        for flip in (0x01, 0x80, 0xFF):
            mutated = bytearray(payload)
            mutated[i] ^= flip
            assert_decodes_same(bytes(mutated))


@given(st.binary(max_size=300))
@settings(max_examples=500)
def test_random_bytes(data: bytes) -> None:
    assert_decodes_same(data)


@given(st.binary(max_size=60), st.sampled_from([2, 7, 10, 11, 3, 9, 22, 13]))
@settings(max_examples=300)
def test_random_arm_bodies(body: bytes, arm: int) -> None:
    assert_decodes_same(ld(arm, body))
    assert_decodes_same(ld(arm, ld(1, b"") + body))


# A tiny protobuf model for structural mutations: a message is a list of
# (number, wire type, payload) with payload int (varint), bytes (fixed,
# length-delimited) or, for length-delimited payloads that parse, a nested list.


def parse(buf: bytes, depth: int = 0) -> list[tuple[int, int, Any]] | None:
    fields: list[tuple[int, int, Any]] = []
    pos = 0
    try:
        while pos < len(buf):
            key, pos = _read_varint(buf, pos)
            number, wt = key >> 3, key & 7
            if number == 0:
                return None
            if wt == 0:
                value, pos = _read_varint(buf, pos)
            elif wt == 2:
                n, pos = _read_varint(buf, pos)
                if pos + n > len(buf):
                    return None
                raw = buf[pos : pos + n]
                pos += n
                sub = parse(raw, depth + 1) if depth < 12 and raw else None
                value = sub if sub is not None else raw
            elif wt == 1:
                value, pos = buf[pos : pos + 8], pos + 8
            elif wt == 5:
                value, pos = buf[pos : pos + 4], pos + 4
            else:
                return None
            fields.append((number, wt, value))
    except IndexError:
        return None
    return fields if pos == len(buf) else None


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise IndexError


def emit(fields: list[tuple[int, int, Any]]) -> bytes:
    out = bytearray()
    for number, wt, value in fields:
        out += tag(number, wt)
        if wt == 0:
            out += varint(value)
        elif wt == 2:
            body = emit(value) if isinstance(value, list) else value
            out += varint(len(body)) + body
        else:
            out += value
    return bytes(out)


def messages_in(fields: list[tuple[int, int, Any]]) -> Iterator[list[tuple[int, int, Any]]]:
    yield fields
    for _, _, value in fields:
        if isinstance(value, list):
            yield from messages_in(value)


@st.composite
def mutated_payloads(draw: st.DrawFn) -> bytes:
    event = draw(events)
    tree = parse(proto_writer.encode_payload(event))
    assert tree is not None
    for _ in range(draw(st.integers(1, 4))):
        fields = draw(st.sampled_from(list(messages_in(tree))))
        op = draw(st.integers(0, 8))
        if not fields:
            fields.append((draw(st.integers(1, 16)), 2, b""))
            continue
        i = draw(st.integers(0, len(fields) - 1))
        number, wt, value = fields[i]
        if op == 0:  # repeat a field: merge / last wins / repeated
            fields.insert(draw(st.integers(0, len(fields))), copy.deepcopy(fields[i]))
        elif op == 1:
            del fields[i]
        elif op == 2:  # another wire type: an unknown field now
            fields[i] = (number, 0, draw(st.integers(0, 2**64 - 1)))
        elif op == 3:
            fields[i] = (number, 2, draw(st.binary(max_size=8)))
        elif op == 4:  # another field number
            fields[i] = (draw(st.integers(1, 20)), wt, value)
        elif op == 5:  # invalid UTF-8 / random bytes in a string
            fields[i] = (number, 2, draw(st.sampled_from([b"\xff", b"a\xc3", b"\xed\xa0\x80"])))
        elif op == 6:  # a group in between
            fields.insert(i, (draw(st.integers(1, 20)), 3, b""))
            fields.insert(i + 1, (fields[i][0], 4, b""))
        elif op == 7:  # move a field
            fields.insert(draw(st.integers(0, len(fields))), fields.pop(i))
        else:
            fields[i] = (number, 1, struct.pack("<d", draw(st.floats())))
    return emit_with_groups(tree)


def emit_with_groups(fields: list[tuple[int, int, Any]]) -> bytes:
    out = bytearray()
    for number, wt, value in fields:
        if wt in (3, 4):
            out += tag(number, wt)
        else:
            out += emit(
                [(number, wt, value if not isinstance(value, list) else emit_with_groups(value))]
            )
    return bytes(out)


@given(mutated_payloads(), st.sampled_from([{}, {"invalid_utf8": "replace"}, {"max_depth": 3}]))
@settings(max_examples=500)
def test_structurally_mutated_payloads(data: bytes, kwargs: dict[str, Any]) -> None:
    assert_decodes_same(data, **kwargs)


@given(st.lists(events, min_size=2, max_size=3))
def test_concatenated_payloads_merge(batch: list[dict[str, Any]]) -> None:
    # the same arm twice merges, two arms are an error
    assert_decodes_same(b"".join(proto_writer.encode_payload(e) for e in batch))


value_bodies = st.deferred(
    lambda: st.lists(
        st.one_of(
            st.just(NULL),
            st.floats().map(number),
            st.sampled_from([b"a", b"", b"\xff", "é".encode()]).map(string),
            st.booleans().map(lambda b: tag(4, 0) + (b"\x01" if b else b"\x00")),
            st.lists(
                st.tuples(
                    st.sampled_from([b"a", b"b", b"", None]), st.one_of(st.none(), value_bodies)
                ),
                max_size=3,
            ).map(lambda es: struct_value(*(entry(k, v) for k, v in es))),
            st.lists(value_bodies, max_size=3).map(lambda vs: list_value(*vs)),
            st.just(tag(9, 0) + b"\x01"),
            st.just(tag(3, 0) + b"\x01"),  # string_value with a varint: unknown
        ),
        max_size=3,
    ).map(b"".join)
)


@given(value_bodies, st.sampled_from([{}, {"invalid_utf8": "replace"}, {"max_depth": 2}]))
@settings(max_examples=500)
def test_random_values(body: bytes, kwargs: dict[str, Any]) -> None:
    assert_decodes_same(snapshot(body), **kwargs)
    # the same body as BaseEvent.raw_event and, reinterpreted, as metadata (a Struct)
    assert_decodes_same(ld(3, ld(1, tag(1, 0) + b"\x02" + ld(3, body) + ld(4, body))), **kwargs)


def test_warnings_match() -> None:
    data = HANDMADE["part unknown kind"]
    with pytest.warns(UnknownPartWarning) as record:
        fast.decode_payload(data)
    assert [str(w.message) for w in record] == [
        "dropped a content part of a kind this AG-UI version does not know"
    ]
    assert_decodes_same(HANDMADE["part source unknown"])


def test_warning_as_error_and_no_double_warning() -> None:
    # a warning turned into an error raises the same exception; a payload that
    # warns and then fails warns once (from the reference), not twice
    data = HANDMADE["part unknown kind"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_decodes_same(data)
    bad = event_bytes(22, ld(3, b"m") + ld(7, ld(9, b"")) + ld(4, b"\xff"), 21)
    assert_decodes_same(bad)
