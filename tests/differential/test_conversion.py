"""JSON <-> protobuf conversion: property tests over all 31 event types.

Three implementations are held to one another and to the documented
normalisation: the pure-Python direct codec (proto_writer/proto_reader), the upb
message path (upb.py), and — when built — the Cython codec (_fast), which
differential/test_proto_codec.py compares byte for byte with the pure one.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agui_wire._codec import proto_reader, proto_writer, upb
from agui_wire._codec.proto_writer import js_key_order
from agui_wire._normalize import normalize
from agui_wire._pb import events_pb2
from agui_wire.schema import EVENT_TYPES, EVENTS
from tests.support.strategies import EVENT_STRATEGIES, deep_events, events
from tests.support.wire import json_equal


def _dicts(value: Any):
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def upb_order_agrees(event: dict[str, Any]) -> bool:
    """True when upb's deterministic map order equals JS property order for every
    object in the event and no object has an empty key, i.e. when the reference's
    bytes and upb's bytes must be identical."""
    for d in _dicts(event):
        keys = list(d)
        if "" in d or js_key_order(d) != keys:
            return False
        if keys != sorted(keys, key=lambda k: k.encode("utf-8", "surrogatepass")):
            return False
    return True


def test_all_31_types_have_a_strategy() -> None:
    assert sorted(EVENT_STRATEGIES) == sorted(EVENT_TYPES)
    assert len(EVENTS) == 31


@pytest.mark.parametrize("etype", EVENT_TYPES)
@given(data=st.data())
def test_round_trip_is_the_documented_normalisation(etype: str, data: st.DataObject) -> None:
    event = data.draw(EVENT_STRATEGIES[etype])
    original = copy.deepcopy(event)
    payload = proto_writer.encode_payload(event)
    assert event == original, "encoding must not modify its input"
    assert proto_reader.decode_payload(payload) == normalize(event)


@given(events)
def test_encoding_is_deterministic(event: dict[str, Any]) -> None:
    first = proto_writer.encode_payload(event)
    assert proto_writer.encode_payload(copy.deepcopy(event)) == first
    assert proto_writer.encode_payload(normalize(event)) == first


@given(events)
def test_frame_is_length_prefix_and_payload(event: dict[str, Any]) -> None:
    payload = proto_writer.encode_payload(event)
    assert proto_writer.encode_proto(event) == len(payload).to_bytes(4, "big") + payload


@given(events)
def test_upb_path_builds_the_same_message(event: dict[str, Any]) -> None:
    payload = proto_writer.encode_payload(event)
    message = upb.event_to_proto(event)
    assert events_pb2.Event.FromString(payload) == message
    if upb_order_agrees(event):
        assert message.SerializeToString(deterministic=True) == payload


@given(events)
def test_upb_path_decodes_to_the_same_dict(event: dict[str, Any]) -> None:
    payload = proto_writer.encode_payload(event)
    expected = proto_reader.decode_payload(payload)
    assert upb.decode_payload(payload) == expected
    assert upb.event_from_proto(events_pb2.Event.FromString(payload)) == expected


@given(deep_events())
def test_deep_json_values_round_trip(event: dict[str, Any]) -> None:
    payload = proto_writer.encode_payload(event)
    assert json_equal(proto_reader.decode_payload(payload), normalize(event))
    assert json_equal(upb.decode_payload(payload), normalize(event))
