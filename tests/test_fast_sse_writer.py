"""The Cython SSE writer (_fast.SSEEncoder) against its pure twin (sse_writer.SSEEncoder).

Differential, like test_fast_codec.py: for the same input both give the same
bytes or raise the same exception (class, args, event_type, path). The C code
writes only the common case itself; these tests also hold it to covering that
case (``_sse_fallbacks`` stays put) and to handing over every event with a
``None`` the reference would omit.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import EVENT_STRATEGIES, events
from test_fast_codec import assert_same_outcome

from agui_wire import sse_writer
from agui_wire.encoder import as_event_dict
from agui_wire.schema import EVENT_TYPES

fast = pytest.importorskip("agui_wire._fast")
if not hasattr(fast, "SSEEncoder"):
    pytest.skip("agui_wire._fast is built without the SSE writer", allow_module_level=True)

from corpus import CASES, CORPUS  # noqa: E402  (after the skip: corpus imports agui_wire.sample)

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


def deep(levels: int) -> list[Any]:
    value: list[Any] = []
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
}


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
