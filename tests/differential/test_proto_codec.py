"""The Cython codec (_fast) against its pure-Python reference (proto_writer / proto_reader).

Everything here is differential: for the same input both implementations must
give the same bytes or dict (exact types, key order, float bits), the same
warnings, or the same exception (class, args and every attribute: event_type,
path, reason, offset, fields). Inputs: every valid event the strategies and the
corpus produce (encoded and decoded); every single-key mutation of the corpus;
random mutations of valid events; exotic but valid input and re-entry. Hostile
wire bytes for the decoders are test_proto_bytes.py's. The fast path is also held
to covering valid input itself: the C code hands nothing valid to the reference
(``_encoder_fallbacks`` / ``_decoder_fallbacks`` stay put).
"""

from __future__ import annotations

import copy
import enum
import gc
import threading
from collections import OrderedDict, UserDict
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_wire._codec import proto_reader, proto_writer
from agui_wire.schema import EVENT_TYPES
from tests.support.compare import assert_same_outcome, clone, outcome, same
from tests.support.strategies import EVENT_STRATEGIES, deep_events, events, json_values
from tests.support.twins import fast_or_skip

fast = fast_or_skip("encode_payload")
fast_or_skip("decode_payload")

from tests.support.corpus import CASES  # noqa: E402  (after the skip: corpus imports agui_wire._sample)


class FallbackCounter:
    """Counts how many calls the C code handed to the reference."""

    def __enter__(self) -> FallbackCounter:
        self.enc = fast._encoder_fallbacks()
        self.dec = fast._decoder_fallbacks()
        return self

    def __exit__(self, *exc: object) -> None:
        self.enc = fast._encoder_fallbacks() - self.enc
        self.dec = fast._decoder_fallbacks() - self.dec


ENC_FUNCS = [
    (fast.encode_payload, proto_writer.encode_payload),
    (fast.encode_proto, proto_writer.encode_proto),
]


def assert_encodes_same(event: Any, **kwargs: Any) -> None:
    for fast_fn, pure_fn in ENC_FUNCS:
        assert_same_outcome(fast_fn, pure_fn, event, **kwargs)


def assert_decodes_same(data: Any, **kwargs: Any) -> None:
    assert_same_outcome(fast.decode_payload, proto_reader.decode_payload, data, **kwargs)


# -- valid events: same bytes, same dicts, no fallback -------------------------------


def check_valid(event: dict[str, Any], **kwargs: Any) -> None:
    original = clone(event)
    with FallbackCounter() as fb:
        payload = fast.encode_payload(event, **kwargs)
        frame = fast.encode_proto(event, **kwargs)
        decoded = fast.decode_payload(payload)
    assert payload == proto_writer.encode_payload(event, **kwargs)
    assert frame == len(payload).to_bytes(4, "big") + payload
    assert same(decoded, proto_reader.decode_payload(payload))
    assert same(event, original), "encoding must not modify its input"
    assert (fb.enc, fb.dec) == (0, 0), "valid input must not leave the fast path"


@pytest.mark.parametrize("etype", EVENT_TYPES)
@given(data=st.data())
def test_every_type_encodes_and_decodes_like_the_reference(etype: str, data: Any) -> None:
    check_valid(data.draw(EVENT_STRATEGIES[etype]))


@given(events)
def test_events_with_options(event: dict[str, Any]) -> None:
    check_valid(event, extra_keys="error")
    check_valid(event, lossy_numbers=True, max_depth=10_000)


@given(deep_events())
def test_deep_events(event: dict[str, Any]) -> None:
    check_valid(event)


@pytest.mark.parametrize("name", list(CASES))
def test_corpus(name: str) -> None:
    check_valid(CASES[name])


@given(st.lists(events, max_size=8))
def test_frames_batch(batch: list[dict[str, Any]]) -> None:
    want = proto_writer.encode_frames(batch)
    assert fast.encode_frames(batch) == want
    assert fast.encode_frames(tuple(batch)) == want
    assert fast.encode_frames(iter(batch)) == want
    assert fast.encode_frames(e for e in batch) == want


def test_frames_of_a_realistic_run() -> None:
    from agui_wire._sample import realistic_run

    run = realistic_run(2000, seed=3)
    with FallbackCounter() as fb:
        got = fast.encode_frames(run)
    assert got == proto_writer.encode_frames(run)
    assert fb.enc == 0
    assert fast.encode_frames([]) == b""


# -- invalid events: the same error ----------------------------------------------------

WRONG_VALUES: list[Any] = [
    None,
    5,
    -1,
    1.5,
    "x",
    "",
    True,
    [],
    [1],
    {},
    {"k": 1},
    2**53 + 1,
    2**70,
    float("nan"),
    float("inf"),
    "\ud800",
    b"bytes",
    (1, 2),
]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key/index path inside a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from paths(v, (*prefix, i))


def containers(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every dict inside a JSON value (the value itself included)."""
    if isinstance(value, dict):
        yield prefix
        for k, v in value.items():
            yield from containers(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from containers(v, (*prefix, i))


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        value = value[p]
    return value


def replaced(event: Any, path: tuple[Any, ...], new: Any) -> Any:
    out = copy.deepcopy(event)
    at(out, path[:-1])[path[-1]] = new
    return out


def deleted(event: Any, path: tuple[Any, ...]) -> Any:
    out = copy.deepcopy(event)
    del at(out, path[:-1])[path[-1]]
    return out


# the "full" corpus events set every optional field: every nesting level is there
FULL = [name for name in CASES if name.endswith("/full")]


@pytest.mark.parametrize("name", FULL)
def test_every_single_mutation_of_full_events(name: str) -> None:
    event = CASES[name]
    for path in paths(event):
        assert_encodes_same(deleted(event, path))
        for value in WRONG_VALUES:
            mutated = replaced(event, path, value)
            assert_encodes_same(mutated)
            assert_encodes_same(mutated, lossy_numbers=True, extra_keys="error")


@pytest.mark.parametrize("name", FULL)
def test_extra_keys_at_every_level(name: str) -> None:
    event = CASES[name]
    for path in containers(event):
        for key, value in (("unknownKey", 1), (5, "int key"), ("\ud800", 1), ("", None)):
            mutated = copy.deepcopy(event)
            at(mutated, path)[key] = value
            assert_encodes_same(mutated)
            assert_encodes_same(mutated, extra_keys="error")


INVALID: dict[str, tuple[Any, dict[str, Any]]] = {
    "not a dict": ([("type", "RAW")], {}),
    "no type": ({"messageId": "m"}, {}),
    "type None": ({"type": None}, {}),
    "type int": ({"type": 5}, {}),
    "unknown type": ({"type": "NOPE"}, {}),
    "type lone surrogate": ({"type": "\ud800"}, {}),
    "missing required": ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"}, {}),
    "required None": ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": None}, {}),
    "wrong string": ({"type": "TEXT_MESSAGE_CONTENT", "messageId": 1, "delta": "d"}, {}),
    "metadata list": ({"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": [1]}, {}),
    "metadata str": ({"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": "x"}, {}),
    "non-str key": ({"type": "RAW", "event": {1: 2}}, {}),
    "non-str key deep": ({"type": "RAW", "event": [{"a": {(1,): 2}}]}, {}),
    "nan": ({"type": "RAW", "event": float("nan")}, {}),
    "inf deep": ({"type": "RAW", "event": {"a": [1, float("-inf")]}}, {}),
    "big int": ({"type": "RAW", "event": 2**53 + 1}, {}),
    "big int lossy": ({"type": "RAW", "event": 2**53 + 1}, {"lossy_numbers": True}),
    "huge int lossy": ({"type": "RAW", "event": 10**400}, {"lossy_numbers": True}),
    "negative big int": ({"type": "RAW", "event": -(2**64)}, {}),
    "timestamp float": (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1.5},
        {},
    ),
    "timestamp too big": (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 2**53},
        {"lossy_numbers": True},
    ),
    "timestamp bool": (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": True},
        {},
    ),
    "surrogate value": ({"type": "RAW", "event": "a\udc00b"}, {}),
    "surrogate key": ({"type": "RAW", "event": {"\udfff": 1}}, {}),
    "surrogate field": ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "\ud83d"}, {}),
    "not JSON": ({"type": "RAW", "event": {1, 2}}, {}),
    "object value": ({"type": "RAW", "event": object()}, {}),
    "bytes value": ({"type": "CUSTOM", "name": "n", "value": b"x"}, {}),
    "unknown op": ({"type": "STATE_DELTA", "delta": [{"op": "nope", "path": "/a"}]}, {}),
    "op missing value": ({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a"}]}, {}),
    "op missing from": ({"type": "STATE_DELTA", "delta": [{"op": "move", "path": "/a"}]}, {}),
    "unknown role content": (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "1", "role": "assistant", "content": [{"type": "text"}]}],
        },
        {},
    ),
    "tool without toolCallId": (
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "1", "role": "tool", "content": "x"}]},
        {},
    ),
    "activity content str": (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "1", "role": "activity", "activityType": "a", "content": "x"}],
        },
        {},
    ),
    "unknown part": (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "t",
            "content": [{"type": "x"}],
        },
        {},
    ),
    "unknown source": (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "t",
            "content": [{"type": "image", "source": {"type": "ftp", "value": "v"}}],
        },
        {},
    ),
    "tool result content dict": (
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "t", "content": {}},
        {},
    ),
    "outcome not an object": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": "success"},
        {},
    ),
    "outcome empty type": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": ""}},
        {},
    ),
    "interrupt without interrupts": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt"}},
        {},
    ),
    "outcome extra key": (
        {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": "s",
            "outcome": {"type": "success", "interruptIds": ["x"]},
        },
        {"extra_keys": "error"},
    ),
    "extra key": ({"type": "TEXT_MESSAGE_END", "messageId": "m", "x": 1}, {"extra_keys": "error"}),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_events_raise_the_same_error(name: str) -> None:
    event, kwargs = INVALID[name]
    assert_encodes_same(event, **kwargs)
    assert_same_outcome(fast.encode_frames, proto_writer.encode_frames, [event], **kwargs)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@pytest.mark.parametrize("depth", [1, 2, 5, 100])
def test_max_depth_boundary(depth: int) -> None:
    for d in (depth - 1, depth, depth + 1):
        for event in (
            {"type": "RAW", "event": nested(d)},
            {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"a": nested(d - 1)}},
        ):
            assert_encodes_same(event, max_depth=depth)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"extra_keys": "nope"},
        {"extra_keys": None},
        {"max_depth": 0},
        {"max_depth": 10_001},
        {"max_depth": 2**80},
        {"max_depth": 3.5},
        {"max_depth": True},
        {"lossy_numbers": 1},
        {"lossy_numbers": None},
    ],
)
def test_options_behave_the_same(kwargs: dict[str, Any]) -> None:
    for event in ({"type": "RAW", "event": nested(4)}, {"type": "RAW", "event": 2**60}):
        assert_encodes_same(event, **kwargs)
        assert_same_outcome(fast.encode_frames, proto_writer.encode_frames, [event], **kwargs)


def test_batch_reports_the_first_bad_event() -> None:
    good = {"type": "TEXT_MESSAGE_END", "messageId": "m"}
    batch = [good, {"type": "RAW"}, good, {"type": "NOPE"}]
    assert_same_outcome(fast.encode_frames, proto_writer.encode_frames, batch)

    def gen() -> Iterator[dict[str, Any]]:
        yield good
        yield good
        raise RuntimeError("iterator failed")

    assert outcome(fast.encode_frames, gen()) == outcome(proto_writer.encode_frames, gen())
    assert_same_outcome(fast.encode_frames, proto_writer.encode_frames, 5)


# -- random mutations of valid events --------------------------------------------------

strange_values = st.one_of(
    json_values,
    st.sampled_from(WRONG_VALUES),
    st.integers(),
    st.floats(),
    st.text(max_size=5),  # lone surrogates included
    st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), st.integers(), max_size=2),
    st.tuples(st.integers()),
)


@given(st.data())
@settings(max_examples=300)
def test_mutated_events_behave_the_same(data: Any) -> None:
    event = data.draw(events)
    for _ in range(data.draw(st.integers(1, 3))):
        options = list(paths(event))
        if not options:
            break
        path = data.draw(st.sampled_from(options))
        if data.draw(st.booleans()):
            event = deleted(event, path)
        else:
            event = replaced(event, path, data.draw(strange_values))
    kwargs = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "lossy_numbers": st.booleans(),
                "extra_keys": st.sampled_from(["drop", "error"]),
                "max_depth": st.integers(1, 6),
            },
        )
    )
    assert_encodes_same(event, **kwargs)


# -- exotic but valid input: subclasses and re-entry ------------------------------------


class EventType(str, enum.Enum):
    TEXT_MESSAGE_CONTENT = "TEXT_MESSAGE_CONTENT"
    RAW = "RAW"


class Level(enum.IntEnum):
    HIGH = 3


class Role(str, enum.Enum):
    USER = "user"


class MyDict(dict):  # type: ignore[type-arg]
    pass


class MyList(list):  # type: ignore[type-arg]
    pass


class MyStr(str):
    pass


EXOTIC = {
    "str enum type": {"type": EventType.TEXT_MESSAGE_CONTENT, "messageId": "m", "delta": "d"},
    "str enum value": {"type": "RAW", "event": {"role": Role.USER}},
    "int enum value": {"type": "RAW", "event": [Level.HIGH], "timestamp": Level.HIGH},
    "ordered dict moved": {"type": "RAW", "event": OrderedDict([("b", 1), ("a", 2)])},
    "dict subclass event": MyDict(type="TEXT_MESSAGE_END", messageId="m"),
    "dict subclass value": {"type": "RAW", "event": MyDict(a=1)},
    "list subclass": {"type": "RAW", "event": MyList([1, 2])},
    "str subclass key": {"type": "RAW", "event": {MyStr("k"): 1}},
    "str subclass field": {"type": "TEXT_MESSAGE_END", "messageId": MyStr("m")},
    "str subclass role": {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "1", "role": Role.USER, "content": "hi"}],
    },
    "tuple values": {"type": "RAW", "event": (1, (2, "x"), {"a": ()})},
    "float subclass": {"type": "RAW", "event": type("F", (float,), {})(1.5)},
}
EXOTIC["ordered dict moved"]["event"].move_to_end("b")


@pytest.mark.parametrize("name", list(EXOTIC))
def test_exotic_input(name: str) -> None:
    assert_encodes_same(EXOTIC[name])
    assert_encodes_same(EXOTIC[name], extra_keys="error")
    assert_same_outcome(fast.encode_frames, proto_writer.encode_frames, [EXOTIC[name]] * 2)


def test_str_enum_type_stays_on_the_fast_path() -> None:
    with FallbackCounter() as fb:
        fast.encode_proto(EXOTIC["str enum type"])
    assert fb.enc == 0


def test_reentrant_encoding() -> None:
    # a `type` whose hash runs Python code that encodes too
    inner = {"type": "TEXT_MESSAGE_END", "messageId": "inner"}

    class Sneaky(str):
        def __hash__(self) -> int:
            fast.encode_proto(inner)
            return str.__hash__(self)

        def __eq__(self, other: object) -> bool:
            return str.__eq__(self, other)

    event = {"type": Sneaky("TEXT_MESSAGE_END"), "messageId": "outer", "metadata": {"a": [1]}}
    assert_encodes_same(event)

    def gen() -> Iterator[dict[str, Any]]:
        for i in range(3):
            fast.encode_proto({"type": "RAW", "event": nested(50, i)})  # between batch items
            yield {"type": "RAW", "event": nested(20, i)}

    assert fast.encode_frames(gen()) == proto_writer.encode_frames(
        {"type": "RAW", "event": nested(20, i)} for i in range(3)
    )


def test_gc_during_decode_is_safe() -> None:
    # a finalizer that decodes while a decode is in progress
    payload = proto_writer.encode_payload({"type": "RAW", "event": nested(30, "leaf")})

    class Trap:
        def __del__(self) -> None:
            fast.decode_payload(payload)

    gc.collect()
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        for _ in range(50):
            trap = Trap()
            trap.cycle = trap  # type: ignore[attr-defined]
            del trap
            assert same(fast.decode_payload(payload), proto_reader.decode_payload(payload))
    finally:
        gc.set_threshold(*threshold)


def test_huge_event_then_small_ones() -> None:
    big = {"type": "RAW", "event": ["x" * 1000] * 2000}
    small = {"type": "TEXT_MESSAGE_END", "messageId": "m"}
    for event in (big, small, big, small):
        assert fast.encode_payload(event) == proto_writer.encode_payload(event)


# -- refusals inside JSON values: located in C, worded by proto_writer ---------------

# what a fault (or a value proto_writer reads itself) inside a JSON value can be
_JSON_ODDITIES: list[Any] = [
    float("nan"),
    float("-inf"),
    "a\ud800",
    {1, 2},
    2**60,
    -(2**70),
    {1: "k"},
    {"x": 1, 2: "k"},
    {"9": 1, "a": float("nan")},  # an integer-like key: walked in JSON order by the reference
    {"\ud800": 1},
    OrderedDict(a=float("nan")),
    (1, float("inf")),
    [[[[[1]]]]],
    object(),
]


@st.composite
def json_with_faults(draw: st.DrawFn) -> Any:
    """A JSON value with one to three oddities put in at random places."""
    value = draw(st.lists(json_values, min_size=1, max_size=4))
    for _ in range(draw(st.integers(1, 3))):
        holder: Any = value
        while True:
            inner = [v for v in (holder.values() if isinstance(holder, dict) else holder)]
            inner = [v for v in inner if type(v) in (dict, list) and v]
            if not inner or draw(st.booleans()):
                break
            holder = draw(st.sampled_from(inner))
        odd = copy.deepcopy(draw(st.sampled_from(_JSON_ODDITIES)))
        if isinstance(holder, dict):
            holder[draw(st.sampled_from(["k", "0", "z", *holder]))] = odd
        else:
            holder.insert(draw(st.integers(0, len(holder))), odd)
    return value


@given(json_with_faults(), st.integers(2, 8), st.booleans())
@settings(max_examples=400)
def test_refusals_inside_json_values_are_the_references(
    value: Any, max_depth: int, lossy: bool
) -> None:
    # The C encoder hands an event it does not write to proto_writer with its own
    # JSON reader (_json_value): the same first fault, in the reference's order.
    for event in (
        {"type": "STATE_SNAPSHOT", "snapshot": value},
        {"type": "CUSTOM", "name": "n", "value": {"v": value}},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": {"state": value}},
    ):
        options = {"max_depth": max_depth, "lossy_numbers": lossy}
        for fast_fn, pure_fn in ENC_FUNCS:
            assert_same_outcome(fast_fn, pure_fn, event, **options)
        assert_same_outcome(
            fast.FrameEncoder(**options).encode, proto_writer.FrameEncoder(**options).encode, event
        )


@given(json_values, st.booleans())
def test_json_value_writes_what_the_reference_writes(value: Any, as_struct: bool) -> None:
    if as_struct:
        value = {"v": value}
    ref = proto_writer._Encoder("CUSTOM", lossy=False, extra="drop", max_depth=1024)
    want = ref.struct(value, "value") if as_struct else ref.value(value, "value")
    assert fast._json_value(value, as_struct, 1024, False, []) == want


@pytest.mark.parametrize(
    "content",
    [OrderedDict(a=1, b=[1, 2]), MappingProxyType({"a": {"b": 2}}), UserDict({"a": 1})],
    ids=["dict subclass", "mappingproxy", "Mapping"],
)
def test_json_value_leaves_a_struct_that_is_not_a_dict_to_the_reference(content: Any) -> None:
    # a Struct root is read as an exact dict in C: anything else is proto_writer's
    # (fuzz_encode found the size of a non-dict read as a dict's: an empty object)
    assert fast._json_value(content, True, 1024, False, []) is None
    event = {"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "a"}
    event["content"] = content
    assert fast.encode_proto(event) == proto_writer.encode_proto(event)


def test_a_refusal_in_a_big_json_value_is_not_walked_in_python(monkeypatch) -> None:
    # issue 15 item 2: a 50 KB value refused for its last item cost 120x accepting it
    # when proto_writer walked it again (benchmarks/refusals.py); now C finds the
    # fault and proto_writer only words it: no JSON container is opened in Python
    frames = [0]
    frame = proto_writer._Frame

    def counted(*args: Any) -> Any:
        frames[0] += 1
        return frame(*args)

    monkeypatch.setattr(proto_writer, "_Frame", counted)
    docs = [{"id": i, "tags": ["a", "b"], "score": i / 7} for i in range(2000)]
    for last, match in ((float("nan"), "nan is not"), ("\ud800", "lone surrogate"), ({1}, "set")):
        docs[-1]["last"] = last
        event = {"type": "STATE_SNAPSHOT", "snapshot": {"docs": docs}}
        for encode in (fast.encode_proto, fast.encode_payload, fast.FrameEncoder().encode):
            with pytest.raises(proto_writer.EncodeError, match=match) as info:
                encode(event)
            assert info.value.path == "/snapshot/docs/1999/last"
        with pytest.raises(proto_writer.EncodeError, match=match):
            fast.encode_frames([event])
    assert frames[0] == 0


def _self_holding() -> dict[str, Any]:
    event: dict[str, Any] = {"type": "CUSTOM", "name": "n"}
    event["value"] = {"k": [event]}
    return event


def _tmc(**fields: Any) -> dict[str, Any]:
    event = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", **fields}
    return {k: v for k, v in event.items() if v is not ...}


def _custom(value: Any, **fields: Any) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": "n", "value": value, **fields}


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


# (event, a fragment of the reason): refused for a top-level field, which the C
# encoder locates itself (_en_find)
TOP_LEVEL_REFUSALS = {
    "required missing": (_tmc(delta=...), "required field is missing"),
    "required null": (_tmc(delta=None), "required, got null"),
    "not a string": (_tmc(messageId=42), "expected a string, got number"),
    "lone surrogate": (_tmc(delta="a\ud800"), "lone surrogate"),
    "timestamp string": (_tmc(timestamp="1"), "expected an integer, got string"),
    "timestamp bool": (_tmc(timestamp=True), "expected an integer, got boolean"),
    "timestamp fraction": (_tmc(timestamp=1.5), "expected an integer"),
    "timestamp NaN": (_tmc(timestamp=float("nan")), "expected an integer"),
    "timestamp unsafe": (_tmc(timestamp=2**60), "outside the safe range"),
    "base before arm": (_tmc(timestamp="1", messageId=42), "expected an integer"),
    "arm field order": (_tmc(messageId=42, delta=None), "expected a string"),
    "struct not an object": (_tmc(metadata=[1]), "expected an object, got array"),
    "struct bad key": (_tmc(metadata={"a": {1: 2}}), "key 1 is not a string"),
    "value NaN": (_custom({"a": [1, "two", 3.0], "last": float("nan")}), "nan is not"),
    "value surrogate": (_custom(["\udc80"]), "lone surrogate"),
    "value set": (_custom([1, {2}]), "set is not a JSON value"),
    "value big int": (_custom([2**60]), "does not fit a double"),
    "value too deep": (_custom(_deep(30)), "max_depth=20"),
    "value cycle": (_self_holding(), "a cycle: this is the event again"),
    "rawEvent NaN": (_custom(1, rawEvent=[float("inf")]), "inf is not"),
    "rawEvent before value": (_custom(float("nan"), rawEvent=[float("inf")]), "inf is not"),
}


@pytest.mark.parametrize("case", list(TOP_LEVEL_REFUSALS))
def test_a_refusal_in_a_top_level_field_is_located_in_c(case: str, monkeypatch) -> None:
    # issue 15 item 2: a small event refused cost ~50x writing it, proto_writer
    # walking the whole event to find the fault; now C finds the field (in
    # proto_writer's order) and proto_writer only words it: the same error
    event, fragment = TOP_LEVEL_REFUSALS[case]
    options: dict[str, Any] = {"max_depth": 20}
    want = outcome(proto_writer.encode_payload, event, **options)
    assert fragment in str(want), want

    def walked(*args: Any) -> Any:
        raise AssertionError("proto_writer walked the event")

    monkeypatch.setattr(proto_writer, "_encode", walked)
    for encode in (
        fast.encode_payload,
        lambda e, **o: fast.encode_proto(e, **o),
        lambda e, **o: fast.encode_frames([e], **o),
        lambda e, **o: fast.FrameEncoder(**o).encode(e),
    ):
        assert same(outcome(encode, event, **options), want)


def test_deep_nesting_in_a_small_thread_stack() -> None:
    # 10000 levels each way must not use C stack proportional to the depth
    value = nested(10_000)
    event = {"type": "RAW", "event": value}
    payload = proto_writer.encode_payload(event, max_depth=10_000)
    results: dict[str, Any] = {}

    def work() -> None:
        results["enc"] = fast.encode_payload(event, max_depth=10_000)
        results["dec"] = fast.decode_payload(payload, max_depth=10_000)
        results["too deep"] = outcome(fast.decode_payload, payload, max_depth=9_999)

    previous = threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert results["enc"] == payload
    assert same(results["dec"], proto_reader.decode_payload(payload, max_depth=10_000))
    assert results["too deep"] == outcome(proto_reader.decode_payload, payload, max_depth=9_999)
