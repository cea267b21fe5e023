"""The Cython SSE code (_codec/_sse_writer_*.pxi, _codec/_sse_reader.pxi) against its
pure twins: the writer (_fast.SSEEncoder vs sse_writer.SSEEncoder) and the reader's fast
path (_fast.plain_sse_blocks vs sse_reader.plain_sse_blocks).

Differential, like test_proto_codec.py: for the same input both give the same
bytes or events (and stopping offset), or raise the same exception (class,
args, event_type, path). The C writer writes every valid event of exact JSON
types itself, its JSON included (strings, numbers: orjson's bytes); these tests
also hold it to covering that case (``_sse_fallbacks`` stays put) and its
scalars to orjson's bytes.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_wire._codec import sse_reader, sse_writer
from agui_wire._encoder import as_event_dict
from agui_wire.schema import EVENT_TYPES
from tests.support.compare import assert_same_outcome, outcome, same
from tests.support.mutations import judged_events
from tests.support.strategies import EVENT_STRATEGIES, events
from tests.support.twins import fast_or_skip

fast = fast_or_skip("SSEEncoder")
fast_or_skip("plain_sse_blocks")

from tests.support.corpus import CASES, CORPUS  # noqa: E402  (after the skip: corpus imports agui_wire._sample)

FAST = fast.SSEEncoder()
PURE = sse_writer.SSEEncoder()


def assert_same(event: Any) -> None:
    assert_same_outcome(FAST.encode, PURE.encode, event)
    assert_same_outcome(FAST.encode_many, PURE.encode_many, [event, event])


def has_none(event: Any) -> bool:
    stack = [event]
    while stack:
        v = stack.pop()
        if v is None:
            return True
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def exact(event: Any) -> bool:
    """Whether ``event`` holds only exact dicts, lists, str, int (within 2**53),
    float, bool and None: what the C writer writes itself."""
    stack = [event]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict:
            if any(type(k) is not str for k in v):
                return False
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
        elif t is int:
            if abs(v) > 2**53:
                return False
        elif t not in (str, float, bool, type(None)):
            return False
    return True


@pytest.mark.parametrize("etype", EVENT_TYPES)
@given(data=st.data())
def test_every_type(etype: str, data: Any) -> None:
    event = data.draw(EVENT_STRATEGIES[etype])
    before = fast._sse_fallbacks()
    assert_same(event)
    if exact(event):
        assert fast._sse_fallbacks() == before, "a valid event left the fast path"


@pytest.mark.parametrize("name", list(CASES))
def test_corpus(name: str) -> None:
    assert_same(CASES[name])


def test_the_corpus_stays_on_the_fast_path() -> None:
    plain = [e for e in CORPUS if exact(e)]
    assert len(plain) > 300
    before = fast._sse_fallbacks()
    assert FAST.encode_many(plain) == PURE.encode_many(plain)
    for e in plain:
        assert FAST.encode(e) == PURE.encode(e)
    assert fast._sse_fallbacks() == before


@given(st.lists(events, max_size=8))
def test_batches(batch: list[dict[str, Any]]) -> None:
    assert_same_outcome(FAST.encode_many, PURE.encode_many, batch)


class Kind(str, enum.Enum):
    CONTENT = "TEXT_MESSAGE_CONTENT"


def deep(levels: int, leaf: Any = None) -> list[Any]:
    value: list[Any] = [] if leaf is None else [leaf]
    for _ in range(levels):
        value = [value]
    return value


TOP = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"}
NESTED = {
    "type": "MESSAGES_SNAPSHOT",
    "messages": [{"id": "1", "role": "user", "content": "hi", "name": None}],
}
ODD: dict[str, Any] = {
    "optional None omitted": {**TOP, "timestamp": None},
    "required None refused": {**TOP, "delta": None},
    "unknown key None kept": {**TOP, "extra": None},
    "a delta that is a number": {**TOP, "delta": 5},
    "a role that is not a text role": {**TOP, "type": "TEXT_MESSAGE_START", "role": "tool"},
    "a key of another role": {
        **NESTED,
        "messages": [{"id": "1", "role": "user", "content": "x", "toolCalls": [{"a": None}]}],
    },
    "an unknown role": {**NESTED, "messages": [{"id": "1", "role": "robot"}]},
    "extra keys refused": {**TOP, "extra": 1},
    "nested optional None omitted": NESTED,
    "nested None in opaque JSON kept": {"type": "STATE_SNAPSHOT", "snapshot": {"a": None}},
    "nested type, no None": {**NESTED, "messages": [{"id": "1", "role": "user", "content": "x"}]},
    "null string in opaque JSON": {**NESTED, "messages": [], "x": ":null"},
    "unknown type": {"type": "FUTURE_EVENT", "a": None},
    "empty type": {"type": ""},
    "no type": {"messageId": "m"},
    "type not a str": {"type": 5},
    "str enum type": {**TOP, "type": Kind.CONTENT},
    "not a mapping": [("type", "RAW")],
    "None": None,
    "mapping proxy": MappingProxyType(TOP),
    "ordered dict": OrderedDict(TOP),
    "mapping value": {"type": "RAW", "event": MappingProxyType({"a": 1})},
    "lone surrogate": {**TOP, "delta": "\ud800"},
    "non-str key": {"type": "RAW", "event": {1: 2}},
    "int beyond 64 bits": {"type": "RAW", "event": 2**64},
    "int beyond 2**53": {"type": "RAW", "event": -(2**53) - 1},
    "int at 2**53": {"type": "RAW", "event": [2**53, -(2**53)]},
    "timestamp a float": {**TOP, "timestamp": 1.7e12},
    "timestamp fractional": {**TOP, "timestamp": 1.5},
    "deep for the readers": {"type": "RAW", "event": deep(1023)},
    "too deep for the readers": {"type": "RAW", "event": deep(1024)},
    "a cycle": (lambda c: ({"type": "RAW", "event": c}, c.append(c))[0])([]),
    "tuples": {"type": "RAW", "event": (1, (2.5, None), {"a": ()})},
    "an event inside itself": (lambda e: (e, e.__setitem__("rawEvent", e))[0])(dict(TOP)),
    "unsupported value": {"type": "RAW", "event": {1, 2}},
    "too deep for orjson": {"type": "RAW", "event": deep(300)},
    # refusals whose pointer the C scan builds (escapes, indices) and whose index the
    # reason names (a code point index, past an astral character)
    "NaN under escaped keys": {"type": "RAW", "event": {"a/b": [{"c~d": [1, float("nan")]}]}},
    "infinity deep": {"type": "RAW", "event": deep(200, float("-inf"))},
    "lone surrogate past an astral": {"type": "RAW", "event": {"x/y": ["ab\U0001f600\udfff"]}},
    "lone surrogate in a key": {"type": "RAW", "event": {"k~\ud800": 1}},
}


@pytest.mark.parametrize("name", ["extra keys refused"])
def test_odd_input_with_options(name: str) -> None:
    options = {"extra_keys": "error", "lossy_numbers": True, "max_depth": 3}
    f, p = fast.SSEEncoder(**options), sse_writer.SSEEncoder(**options)
    for event in (ODD[name], ODD["int beyond 2**53"], ODD["int beyond 64 bits"], TOP):
        assert_same_outcome(f.encode, p.encode, event)
    assert_same_outcome(f.encode, p.encode, {"type": "RAW", "event": deep(2)})
    assert_same_outcome(f.encode, p.encode, {"type": "RAW", "event": deep(3)})


def test_refusal_pointers_are_escaped() -> None:
    with pytest.raises(sse_writer.EncodeError) as info:
        FAST.encode(ODD["NaN under escaped keys"])
    assert info.value.path == "/event/a~1b/0/c~0d/1"
    with pytest.raises(sse_writer.EncodeError, match="lone surrogate at index 3") as info:
        FAST.encode(ODD["lone surrogate past an astral"])
    assert info.value.path == "/event/x~1y/0"


@pytest.mark.parametrize("name", list(ODD))
def test_odd_input(name: str) -> None:
    assert_same(ODD[name])


def test_a_bad_event_in_a_batch() -> None:
    batch = [TOP, {**TOP, "delta": "\ud800"}, TOP]
    assert_same_outcome(FAST.encode_many, PURE.encode_many, batch)


def test_convert() -> None:
    from ag_ui.core import TextMessageContentEvent

    sdk = TextMessageContentEvent(message_id="m", delta="d")
    f, p = fast.SSEEncoder(convert=as_event_dict), sse_writer.SSEEncoder(convert=as_event_dict)
    assert f.encode(sdk) == p.encode(sdk) == PURE.encode(as_event_dict(sdk))
    assert f.encode_many([sdk, TOP]) == p.encode_many([sdk, TOP])


def test_input_is_not_modified() -> None:
    event = {**NESTED, "messages": [dict(NESTED["messages"][0])]}
    FAST.encode(event)
    assert event["messages"][0] == {"id": "1", "role": "user", "content": "hi", "name": None}


# -- the reader's fast path: plain_sse_blocks ---------------------------------------------

BLOCKS = [
    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}\n\n',
    b'data: {"type":"STATE_SNAPSHOT","snapshot":[[{"a":[1]}]]}\n\n',
    b'data: {"type":"RAW","event":"{[{[{["}\n\n',
    b'data: {"type":"X"}\n\n',
    b'data: {"type":""}\n\n',
    b'data: {"type":5}\n\n',
    b'data: {"messageId":"m"}\n\n',
    b"data: [1,2]\n\n",
    b"data: {broken\n\n",
    b'data:{"type":"X"}\n\n',
    b'data: {"type":"X"}\n',
    b'data: {"type":"X"}\r\n\r\n',
    b'data: {"type":"X"}\ndata: {}\n\n',
    b": comment\n\n",
    b'id: 7\ndata: {"type":"X"}\n\n',
    b'data: {"type":"\xff"}\n\n',
    b'data: {"type":"X","n":1e400}\n\n',
    b"\n",
    b"data: ",
]


def assert_scans_same(chunk: bytes, pos: int, max_size: int, max_brackets: int) -> None:
    got = outcome(fast.plain_sse_blocks, chunk, pos, max_size, max_brackets)
    want = outcome(sse_reader.plain_sse_blocks, chunk, pos, max_size, max_brackets)
    assert got[0][0] == want[0][0], (got, want)
    if got[0][0] == "returned":
        (g_events, g_end), (w_events, w_end) = got[0][1], want[0][1]
        assert g_end == w_end
        assert same(g_events, w_events)
    else:
        assert got[0][1:3] == want[0][1:3]


@settings(max_examples=500)
@given(
    blocks=st.lists(st.sampled_from(BLOCKS), max_size=8),
    tail=st.binary(max_size=12),
    pos=st.integers(0, 12),
    max_size=st.integers(0, 80),
    max_brackets=st.integers(0, 8),
)
def test_plain_blocks_scan_the_same(
    blocks: list[bytes], tail: bytes, pos: int, max_size: int, max_brackets: int
) -> None:
    assert_scans_same(b"".join(blocks) + tail, pos, max_size, max_brackets)


@given(st.binary(max_size=64), st.integers(0, 70))
def test_plain_blocks_on_random_bytes(chunk: bytes, pos: int) -> None:
    assert_scans_same(b"data: " + chunk, pos, 1 << 20, 1025)
    assert_scans_same(chunk, pos, 1 << 20, 1025)


@pytest.mark.parametrize("name", list(CASES))
def test_plain_blocks_of_the_corpus(name: str) -> None:
    chunk = PURE.encode(CASES[name]) * 2
    assert_scans_same(chunk, 0, 1 << 20, 1025)
    events, end = fast.plain_sse_blocks(chunk, 0, 1 << 20, 1025)
    assert (len(events), end) == (2, len(chunk))


def test_plain_blocks_limits_at_the_bound() -> None:
    block = b'data: {"type":"RAW","event":[[1]]}\n\n'
    size = len(block) - 2  # the line "data: <json>" without its LF
    for max_size in (size - 1, size):
        assert_scans_same(block, 0, max_size, 1025)
    assert fast.plain_sse_blocks(block, 0, size, 1025)[1] == len(block)
    assert fast.plain_sse_blocks(block, 0, size - 1, 1025)[1] == 0
    for max_brackets in (2, 3):
        assert_scans_same(block, 0, 1 << 20, max_brackets)
    assert fast.plain_sse_blocks(block, 0, 1 << 20, 3)[1] == len(block)
    assert fast.plain_sse_blocks(block, 0, 1 << 20, 2)[1] == 0


def test_plain_blocks_bad_arguments() -> None:
    assert_scans_same(b"data: ", -1, 10, 10)
    with pytest.raises(TypeError):
        fast.plain_sse_blocks(None, 0, 10, 10)


# -- the C writer's scalars: orjson's bytes -----------------------------------------------


def fast_json(value: Any) -> bytes:
    return FAST.encode({"type": "RAW", "event": value})[len(b'data: {"type":"RAW","event":') : -3]


@settings(max_examples=2000)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_doubles_are_orjsons(x: float) -> None:
    assert fast_json(x) == orjson.dumps(x)


@pytest.mark.parametrize(
    "x",
    [
        0.0,
        -0.0,
        1.0,
        100.0,
        1e15,
        1e16,
        9999999999999998.0,
        1e-5,
        1e-6,
        2.5e-5,
        5e-324,
        1.7976931348623157e308,
        0.1,
        123456.789,
        1e21,
        1e22,
        -1.5e-300,
    ],
)
def test_double_edges_are_orjsons(x: float) -> None:
    assert fast_json(x) == orjson.dumps(x)


@settings(max_examples=2000)
@given(st.text())
def test_strings_are_orjsons(text: str) -> None:
    try:
        want = orjson.dumps(text)
    except orjson.JSONEncodeError:  # a lone surrogate: refused by both twins
        assert_same({"type": "RAW", "event": text})
        return
    assert fast_json(text) == want
    assert fast_json({text: 1}) == orjson.dumps({text: 1})


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain ascii words",
        "\x00\x01\x1f\x7f",
        '"\\/',
        "\u2028\u2029",
        "é",
        "\ufeff",
        "🎉",
        "a" * 100 + "\n" + "b" * 7,
        "\u00ff" * 9,
        "\u0100x\U0010ffff",
    ],
)
def test_string_edges_are_orjsons(text: str) -> None:
    assert fast_json(text) == orjson.dumps(text)


@given(st.integers(-(2**53), 2**53))
def test_integers_are_orjsons(n: int) -> None:
    assert fast_json(n) == orjson.dumps(n)


# -- dicts read from their entries (_dict_next.h): PyDict_Next's members, in its order ----


class Holder:
    def __init__(self) -> None:
        self.alpha = 1
        self.beta = "two"
        self.gamma = [3.5, None]


def odd_dicts() -> dict[str, dict[Any, Any]]:
    """Dicts whose entries are not simply their members: deleted entries (first, in the
    middle, last), a table that grew and shrank, keys that are not all str, a split
    table (an instance's __dict__), and the empty dict's shared keys."""
    holes: dict[str, Any] = {f"k{i}": i for i in range(12)}
    for i in (0, 5, 6, 11):
        del holes[f"k{i}"]
    grown: dict[str, Any] = {}
    for i in range(200):
        grown[f"g{i}"] = {"i": i}
    for i in range(0, 200, 3):
        del grown[f"g{i}"]
    refilled = dict(holes)
    refilled["k0"] = "back, at the end"
    mixed: dict[Any, Any] = {"a": 1, 2: "b"}
    del mixed[2]  # str keys only now, in a table of any keys
    emptied: dict[str, Any] = {"x": 1}
    del emptied["x"]
    return {
        "holes": holes,
        "grown": grown,
        "refilled": refilled,
        "mixed": mixed,
        "split": vars(Holder()),
        "emptied": emptied,
        "empty": {},
    }


@pytest.mark.parametrize("name", list(odd_dicts()))
def test_dicts_are_written_as_pydict_next_reads_them(name: str) -> None:
    value = odd_dicts()[name]
    message = {"id": "m", "role": "user", "content": "x"}
    if all(type(k) is str for k in value):
        message = odd_dicts()[name]  # the message's own dict, its holes included
        message.update(id="m", role="user", content="x")
    for event in (
        {"type": "STATE_SNAPSHOT", "snapshot": value},
        {"type": "RAW", "event": [value, {"in": value}]},
        {"type": "CUSTOM", "name": "n", "value": value},
        {"type": "MESSAGES_SNAPSHOT", "messages": [message]},
    ):
        want = b"data: " + orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS) + b"\n\n"
        if all(type(k) is str for k in value):
            assert FAST.encode(event) == want
            assert FAST.encode_many([event, event]) == want * 2
        assert_same(event)
    event: dict[str, Any] = {"type": "RAW", "event": 1}
    del event["type"]  # the event's own dict with a hole where its first member was
    event["type"] = "RAW"
    assert FAST.encode(event) == b'data: {"event":1,"type":"RAW"}\n\n'
    assert_same(event)


def test_dict_entries_are_read_where_their_layout_is_known() -> None:
    import sys
    import sysconfig

    known = (
        sys.implementation.name == "cpython"
        and (3, 11) <= sys.version_info[:2] < (3, 14)
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    )
    assert fast._sse_dict_entries() is known


def test_sprinkled_corpus_events() -> None:
    import random

    from tests.unit.test_sse_writer import _events

    for event in _events(random.Random(11), 1500):
        assert_same(event)


# -- the decoders' check of a decoded event: contract_holds ----------------------------------


def decoded(event: Any) -> Any:
    """``event`` as a decoder reads it back: JSON, or None when JSON cannot hold it."""
    try:
        return orjson.loads(orjson.dumps(event))
    except (orjson.JSONEncodeError, orjson.JSONDecodeError):
        return None


def test_the_check_agrees_with_the_pure_twin_on_the_mutation_corpus() -> None:
    from tests.support.mutations import mutation_corpus

    checked = refused = 0
    for name, m in mutation_corpus():
        event = decoded(m.event)
        if type(event) is not dict or event.get("type") not in EVENT_TYPES:
            continue
        checked += 1
        want = sse_reader.contract_holds(event)
        assert fast.contract_holds(event) == want, name
        refused += not want
    assert checked > 4000
    assert refused > 1000


@given(event=judged_events())
def test_the_check_agrees_with_the_pure_twin_on_generated_events(event: Any) -> None:
    event = decoded(event)
    if type(event) is dict and event.get("type") in EVENT_TYPES:
        assert fast.contract_holds(event) == sse_reader.contract_holds(event)


def test_plain_blocks_stop_at_what_the_contract_refuses() -> None:
    good = PURE.encode(TOP)
    bad = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":5}\n\n'
    later = b'data: {"type":"FUTURE_EVENT"}\n\n'
    for chunk in (good + bad + good, good + later + good):
        assert_scans_same(chunk, 0, 1 << 20, 1025)
        assert fast.plain_sse_blocks(chunk, 0, 1 << 20, 1025)[1] == len(good)
    # keep: the contract is not checked (an event of a later protocol still stops it)
    assert fast.plain_sse_blocks(good + bad, 0, 1 << 20, 1025, False)[1] == len(good + bad)
    assert fast.plain_sse_blocks(good + later, 0, 1 << 20, 1025, False)[1] == len(good)
