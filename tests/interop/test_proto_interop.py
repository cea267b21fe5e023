"""Our binary transport against the real @ag-ui/proto / @ag-ui/encoder 1.0.0.

For the corpus (all 31 types, every optional field, the edge values of the wire
contract) and for hypothesis-generated events:

* our frames are byte-identical to the reference's ``encodeBinary``;
* frames we encode decode with ``@ag-ui/proto`` to the JSON we decode them to;
* frames the reference encodes decode with ours to the JSON it decodes them to;
* the documented exceptions behave as documented (docs/wire-format.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import agui_wire
from agui_wire import normalize
from tests.support.corpus import CASES, CORPUS
from tests.support.strategies import events as event_strategy
from tests.support.wire import json_equal

pytestmark = pytest.mark.interop


def _no_proto_keys(event: Any) -> bool:
    """The reference drops ``__proto__`` keys (a documented exception), so events
    carrying one are left to test_proto_key_is_kept."""
    stack = [event]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "__proto__" in item:
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def check_against_reference(node_harness, events: list[dict[str, Any]]) -> None:
    ours = [agui_wire.encode_proto(e) for e in events]
    theirs = node_harness.encode_proto(events)
    mismatched = [
        (i, events[i]["type"]) for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b
    ]
    assert not mismatched, f"not byte-identical: {mismatched[:10]}"
    stream = b"".join(ours)
    reference_view = node_harness.decode_proto_events(stream)
    our_view = agui_wire.decode_proto(stream)
    assert len(reference_view) == len(our_view) == len(events)
    for i, (r, o, e) in enumerate(zip(reference_view, our_view, events, strict=True)):
        assert json_equal(o, r), f"event {i}: we decode {o!r:.2000}, the reference {r!r:.2000}"
        assert json_equal(o, normalize(e)), f"event {i}: not the documented normalisation"


def test_corpus_is_byte_identical_and_decodes_alike(node_harness) -> None:
    check_against_reference(node_harness, CORPUS)


def test_reference_frames_decode_with_ours(node_harness) -> None:
    frames = node_harness.encode_proto(CORPUS)
    reference_view = node_harness.decode_proto_events(b"".join(frames))
    for name, frame, expected in zip(CASES, frames, reference_view, strict=True):
        assert json_equal(agui_wire.decode_proto(frame), [expected]), name
        assert json_equal(
            agui_wire.event_from_proto(agui_wire.event_to_proto(CASES[name])), expected
        ), name


# Each example is two node runs; shrinking a batch through node takes minutes, so
# a failure is reported unshrunk, with the index of the offending event.
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
@given(st.lists(event_strategy.filter(_no_proto_keys), min_size=40, max_size=80))
def test_generated_events_are_byte_identical(node_harness, events: list[dict[str, Any]]) -> None:
    check_against_reference(node_harness, events)


def test_proto_key_is_kept(node_harness) -> None:
    event = {"type": "CUSTOM", "name": "n", "value": {"__proto__": {"x": 1}, "a": 1}}
    ours = agui_wire.encode_proto(event)
    assert agui_wire.decode_proto(ours) == [event]
    # the reference drops the entry (ts-proto assigns it to the prototype)
    assert node_harness.decode_proto_events(node_harness.encode_proto([event])) == [
        {"type": "CUSTOM", "name": "n", "value": {"a": 1}}
    ]


def test_lossy_numbers_write_what_the_reference_writes(node_harness) -> None:
    # Integers a double cannot hold, sent to Node as JSON digits: JSON.parse rounds
    # them to the nearest double, ±Infinity past the largest one, and encode writes
    # that; lossy_numbers=True (and agui_wire.compat) writes the same bytes.
    value = {
        "ns": 1_712_345_678_901_234_567,
        "neg": -(2**64) - 1,
        "max": 2**1024 - 2**971,  # rounds down to the largest double
        "edge": 2**1024 - 2**970,  # the halfway point: rounds to Infinity
        "up": 10**400,
        "down": -(10**400),
        "list": [2**53 + 1, 10**309],
    }
    event = {"type": "CUSTOM", "name": "n", "value": value}
    (reference,) = node_harness.encode_proto([event])
    assert agui_wire.encode_proto(event, lossy_numbers=True) == reference
    decoded = node_harness.decode_proto_events(reference)[0]["value"]
    inf = float("inf")
    assert [decoded[k] for k in ("up", "down", "edge", "max")] == [
        inf,
        -inf,
        inf,
        1.7976931348623157e308,
    ]


@pytest.mark.parametrize(
    "event",
    [
        {"type": "FOO_BAR"},
        {"type": "SUBAGENT_STARTED"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": 42, "delta": "d"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", "timestamp": 2**60},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", "metadata": [1]},
        {"type": "STATE_DELTA", "delta": [{"op": "ADD", "path": "/a", "value": 1}]},
    ],
)
def test_what_the_reference_garbles_we_refuse(node_harness, event: dict[str, Any]) -> None:
    result = node_harness.encode_proto_results([event])[0]
    assert result.warnings or result.error or result.message == b"", "reference accepted it cleanly"
    with pytest.raises(agui_wire.EncodeError):
        agui_wire.encode_proto(event)


def test_unknown_arm_is_skipped_like_the_reference_client(node_harness) -> None:
    good = agui_wire.encode_proto({"type": "TEXT_MESSAGE_END", "messageId": "m"})
    future_payload = b"\x82\x02\x04\x0a\x02\x08\x28"  # arm 32: {base_event {type: 40}}
    future = len(future_payload).to_bytes(4, "big") + future_payload
    stream = good + future + good
    client = node_harness.parse_stream(stream, node_harness.PROTO_MEDIA_TYPE)
    assert client.error is None
    with pytest.warns(agui_wire.UnknownEventWarning):
        ours = agui_wire.decode_proto(stream)
    assert ours == client.events
    raw = agui_wire.decode_proto(stream, unknown_events="raw")
    assert raw[1]["type"] == "RAW"
    assert raw[1]["event"]["fields"][0]["number"] == 32
    with pytest.raises(agui_wire.UnknownEventError) as info:
        agui_wire.decode_proto(stream, unknown_events="raise")
    assert (info.value.index, info.value.frame_offset) == (1, len(good))
    assert info.value.events == client.events[:1]
