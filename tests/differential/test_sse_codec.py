"""The Cython SSE code (_codec/_sse_writer.pxi, _codec/_sse_reader.pxi) against its pure
twins: the writer (_fast.SSEEncoder vs sse_writer.SSEEncoder) and the reader's fast path
(_fast.plain_sse_blocks vs sse_reader.plain_sse_blocks).

Differential, like test_proto_codec.py: for the same input both give the same
bytes or events (and stopping offset), or raise the same exception (class,
args, event_type, path). The C writer writes only the common case itself; these
tests also hold it to covering that case (``_sse_fallbacks`` stays put) and to
handing over every event with a ``None`` the reference would omit.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_wire._codec import sse_reader, sse_writer
from agui_wire._encoder import as_event_dict
from agui_wire.schema import EVENT_TYPES
from tests.support.compare import assert_same_outcome, outcome, same
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


@pytest.mark.parametrize("etype", EVENT_TYPES)
@given(data=st.data())
def test_every_type(etype: str, data: Any) -> None:
    event = data.draw(EVENT_STRATEGIES[etype])
    before = fast._sse_fallbacks()
    assert_same(event)
    if not has_none(event):
        assert fast._sse_fallbacks() == before, "an event without None left the fast path"


@pytest.mark.parametrize("name", list(CASES))
def test_corpus(name: str) -> None:
    assert_same(CASES[name])


def test_the_corpus_stays_on_the_fast_path() -> None:
    plain = [e for e in CORPUS if not has_none(e)]
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
    "required None kept": {**TOP, "delta": None},
    "unknown key None kept": {**TOP, "extra": None},
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
    "unsupported value": {"type": "RAW", "event": {1, 2}},
    "too deep for orjson": {"type": "RAW", "event": deep(300)},
    # refusals whose pointer the C scan builds (escapes, indices) and whose index the
    # reason names (a code point index, past an astral character)
    "NaN under escaped keys": {"type": "RAW", "event": {"a/b": [{"c~d": [1, float("nan")]}]}},
    "infinity deep": {"type": "RAW", "event": deep(200, float("-inf"))},
    "lone surrogate past an astral": {"type": "RAW", "event": {"x/y": ["ab\U0001f600\udfff"]}},
    "lone surrogate in a key": {"type": "RAW", "event": {"k~\ud800": 1}},
}


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
    block = b'data: {"type":"X","v":[[1]]}\n\n'
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
