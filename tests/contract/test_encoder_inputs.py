"""What the encoders take, on every entry point of both transports.

Strategy: one event shape (``CUSTOM`` with the value under test) through every
public way to encode it: ``encode_sse`` (with and without an id), ``encode_proto``,
``EventEncoder`` on either transport (``encode`` and ``encode_many``), and
``EventStreamResponse``. The suite runs once on the Cython backend and once with
``AGUI_WIRE_PURE=1``; tests/differential/ compares the two directly, and
tests/fuzz/fuzz_encode.py throws generated object graphs at both.

Held here:
* every container kind (list, tuple, dict, their subclasses, other mappings),
  nested thousands deep or inside itself (a cycle), is an ``EncodeError`` with a
  JSON pointer, never a crash (orjson does not count tuple depth: a deep tuple
  handed to it takes the process down);
* the depth the SSE encoders write is the depth the SSE decoders read;
* subclasses of str/int/float are written as their plain value, whatever their
  methods say, and the SDK's ``EventType`` enum as ``type`` gives the bytes the
  plain string gives, on both transports;
* NaN and the infinities are refused on both transports;
* an SDK (pydantic) event pydantic cannot dump (a cycle, an object) is an
  ``EncodeError``, as the same value in a dict is (found by fuzz_encode.py).
"""

from __future__ import annotations

import datetime
import math
import uuid
from collections import OrderedDict, UserDict
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from agui_wire import (
    PROTO_MEDIA_TYPE,
    EncodeError,
    EventEncoder,
    decode,
    encode_proto,
    encode_sse,
)
from agui_wire._codec.sse_writer import SSE_MAX_NESTING
from agui_wire.asgi import EventStreamResponse
from tests.fuzz.graphs import Color, Dict, Float, Int, Level, List, Pair, Plain, Str, Tuple
from tests.unit.test_asgi import Driver

SSE = "text/event-stream"

Encode = Callable[[Any], bytes]


def _sse_many(event: Any) -> bytes:
    return EventEncoder().encode_many([event])


def _proto_many(event: Any) -> bytes:
    return EventEncoder(PROTO_MEDIA_TYPE).encode_many([event])


SSE_ENCODERS: dict[str, Encode] = {
    "encode_sse": encode_sse,
    "encode_sse(id=)": lambda e: encode_sse(e, id="7"),
    "EventEncoder(SSE).encode": EventEncoder().encode,
    "EventEncoder(SSE).encode_many": _sse_many,
}
PROTO_ENCODERS: dict[str, Encode] = {
    "encode_proto": encode_proto,
    "EventEncoder(proto).encode": EventEncoder(PROTO_MEDIA_TYPE).encode,
    "EventEncoder(proto).encode_many": _proto_many,
}
ENCODERS = {**SSE_ENCODERS, **PROTO_ENCODERS}


def custom(value: Any) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": "n", "value": value}


# -- every container kind, deep and cyclic ------------------------------------------


def _mapping_cycle(wrap: Callable[[dict[str, Any]], Any]) -> Any:
    inner: dict[str, Any] = {}
    outer = wrap(inner)
    inner["k"] = outer
    return outer


def _self_cycle(mapping: Any) -> Any:
    """A mapping that copies what it is built from, made to hold itself."""
    mapping["k"] = [mapping]
    return mapping


def _sequence_cycle(wrap: Callable[[list[Any]], Any]) -> Any:
    inner: list[Any] = []
    outer = wrap(inner)
    inner.append(outer)
    return outer


# name -> (wrap one child in this kind of container, a cycle through this kind)
KINDS: dict[str, tuple[Callable[[Any], Any], Callable[[], Any]]] = {
    "list": (lambda c: [c], lambda: _sequence_cycle(lambda x: x)),
    "tuple": (lambda c: (c,), lambda: _sequence_cycle(lambda x: (x,))),
    "dict": (lambda c: {"k": c}, lambda: _mapping_cycle(lambda x: x)),
    "dict subclass": (lambda c: Dict(k=c), lambda: _mapping_cycle(lambda x: Dict(k=x))),
    "list subclass": (lambda c: List([c]), lambda: _sequence_cycle(lambda x: List([x]))),
    "tuple subclass": (lambda c: Tuple((c,)), lambda: _sequence_cycle(lambda x: Tuple((x,)))),
    "namedtuple": (lambda c: Pair(c, 1), lambda: _sequence_cycle(lambda x: Pair(x, 1))),
    "OrderedDict": (lambda c: OrderedDict(k=c), lambda: _self_cycle(OrderedDict())),
    "UserDict": (lambda c: UserDict(k=c), lambda: _self_cycle(UserDict())),
    "mappingproxy": (
        lambda c: MappingProxyType({"k": c}),
        lambda: _mapping_cycle(MappingProxyType),
    ),
    "alternating": (
        lambda c: [{"k": (c,)}],
        lambda: _sequence_cycle(lambda x: [{"k": (x,)}]),
    ),
}


def nest(kind: str, levels: int, leaf: Any = 1) -> Any:
    wrap = KINDS[kind][0]
    value = leaf
    for _ in range(levels):
        value = wrap(value)
    return value


@pytest.mark.parametrize("name", list(ENCODERS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_deep_nesting_of_any_container_is_an_encode_error(name: str, kind: str) -> None:
    with pytest.raises(EncodeError) as info:
        ENCODERS[name](custom(nest(kind, 5000)))
    assert info.value.event_type == "CUSTOM"
    assert info.value.path.startswith("/value/")


@pytest.mark.parametrize("name", list(ENCODERS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_cycle_through_any_container_is_an_encode_error(name: str, kind: str) -> None:
    with pytest.raises(EncodeError) as info:
        ENCODERS[name](custom(KINDS[kind][1]()))
    assert info.value.path.startswith("/value/")
    # named as a cycle, at the place it closes, on both transports
    assert "a cycle" in info.value.reason
    assert info.value.path.count("/") <= 2 + 2 * _levels(kind)


@pytest.mark.parametrize("kind", ["tuple", "list", "dict", "alternating", "dict subclass"])
def test_a_cycle_in_a_server_run_ends_the_run_not_the_server(kind: str) -> None:
    start = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    for accept in (SSE, PROTO_MEDIA_TYPE):
        for bad in (custom(KINDS[kind][1]()), custom(nest(kind, 5000))):
            d = Driver(accept=accept).run(EventStreamResponse([start, bad]))
            assert [e["type"] for e in d.events()] == ["RUN_STARTED", "RUN_ERROR"]
            assert d.events()[-1]["code"] == "ENCODE_ERROR"


def _levels(kind: str) -> int:
    """Containers one nest() level adds."""
    return 3 if kind == "alternating" else 1


@pytest.mark.parametrize("kind", list(KINDS))
def test_sse_writes_exactly_the_depth_sse_reads(kind: str) -> None:
    # the event object is one level; its value may nest SSE_MAX_NESTING - 1 more
    per = _levels(kind)
    most = (SSE_MAX_NESTING - 1) // per
    for name, enc in SSE_ENCODERS.items():
        out = enc(custom(nest(kind, most)))
        (event,) = decode(out, SSE)
        assert event["type"] == "CUSTOM", name
        if per == 1:
            with pytest.raises(EncodeError, match="deeper than 1023 levels") as info:
                enc(custom(nest(kind, most + 1)))
            assert info.value.path.count("/") == SSE_MAX_NESTING


# -- values read by what they hold ---------------------------------------------------------


def _odd_values() -> tuple[dict[str, Any], dict[str, Any]]:
    """(an event full of subclasses, the same event in plain values)."""
    odd = custom(
        {
            Str("key"): Str("héllo"),
            "i": Int(12),
            "f": Float(2.5),
            "whole": Float(3.0),
            "e": Color.RED,
            "l": Level.HIGH,
            "d": Dict(a=Str("x")),
            "ls": List([Int(1), Float(0.5)]),
            "t": Tuple((Str("y"),)),
        }
    )
    plain = custom(
        {
            "key": "héllo",
            "i": 12,
            "f": 2.5,
            "whole": 3.0,
            "e": "red",
            "l": 3,
            "d": {"a": "x"},
            "ls": [1, 0.5],
            "t": ["y"],
        }
    )
    return odd, plain


@pytest.mark.parametrize("name", list(SSE_ENCODERS))
def test_subclasses_are_written_as_their_plain_values_on_sse(name: str) -> None:
    odd, plain = _odd_values()
    assert SSE_ENCODERS[name](odd) == SSE_ENCODERS[name](plain)


@pytest.mark.parametrize("name", list(ENCODERS))
def test_sdk_event_type_enum_gives_the_plain_strings_bytes(name: str) -> None:
    from ag_ui.core import EventType

    enc = ENCODERS[name]
    for etype in (EventType.TEXT_MESSAGE_CONTENT, Str("TEXT_MESSAGE_CONTENT")):
        event = {"type": etype, "messageId": "m", "delta": "d", "timestamp": None}
        assert enc(event) == enc({**event, "type": "TEXT_MESSAGE_CONTENT"})


# -- what JSON cannot hold ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ENCODERS))
@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf, Float("nan")])
def test_nan_and_infinities_are_refused(name: str, number: float) -> None:
    enc = ENCODERS[name]
    with pytest.raises(EncodeError, match="not a JSON number") as info:
        enc(custom({"a": [1, number]}))
    assert info.value.path == "/value/a/1"
    with pytest.raises(EncodeError) as info:
        enc({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", "timestamp": number})
    assert info.value.path == "/timestamp"


@pytest.mark.parametrize("name", list(ENCODERS))
@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        frozenset(),
        b"bytes",
        bytearray(b"x"),
        object(),
        Plain.A,
        datetime.datetime(2025, 1, 1),
        datetime.date(2025, 1, 1),
        uuid.UUID(int=1),
        1j,
    ],
    ids=type,
)
def test_values_json_has_no_type_for_are_refused(name: str, value: Any) -> None:
    # orjson writes several of these (datetimes, UUIDs, enums) by itself; neither
    # transport takes them, so an event encodes on both or on neither
    with pytest.raises(EncodeError, match="not a JSON value") as info:
        ENCODERS[name](custom([{"a": value}]))
    assert info.value.path == "/value/0/a"


def _cyclic() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize("name", list(ENCODERS))
@pytest.mark.parametrize(
    "value",
    [_cyclic(), object(), {"a": datetime.timezone}],
    # stable ids (no address): pytest-xdist's workers must collect the same names
    ids=["cyclic-list", "object()", "{'a': datetime.timezone}"],
)
def test_an_sdk_event_pydantic_cannot_dump_is_an_encode_error(name: str, value: Any) -> None:
    # was: pydantic's PydanticSerializationError escaped every encoder
    from ag_ui.core import CustomEvent

    with pytest.raises(EncodeError, match="the SDK event does not serialize") as info:
        ENCODERS[name](CustomEvent(name="n", value=value))
    assert info.value.event_type == "CUSTOM"


def _deep_tuple(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = (value,)
    return value


@pytest.mark.parametrize("name", list(ENCODERS))
def test_an_integer_past_the_str_digit_limit_is_an_encode_error(name: str) -> None:
    # was: ValueError (int -> str limit) from the protobuf encoders' message
    with pytest.raises(EncodeError) as info:
        ENCODERS[name](custom([10**5000]))
    assert info.value.path == "/value/0"


@pytest.mark.parametrize("name", list(ENCODERS))
@pytest.mark.parametrize(
    "event",
    [
        # a deep container: a message must not quote the value with repr()
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "t", "role": "tool",
         "content": [{"type": _deep_tuple(2000)}]},
        {"type": "STATE_DELTA", "delta": [{"op": _deep_tuple(2000), "path": "/a"}]},
        custom({_deep_tuple(2000): 1}),
    ],
    ids=["content part type", "patch op", "object key"],
)  # fmt: skip
def test_a_message_never_quotes_a_deep_container(name: str, event: dict[str, Any]) -> None:
    # was: RecursionError from repr() while wording the EncodeError (SSE refuses a
    # deep value for its depth first)
    with pytest.raises(EncodeError, match=r"an array|deeper than"):
        ENCODERS[name](event)
