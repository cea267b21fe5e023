"""Decoding holds events to the same contract as encoding, on both transports.

An SSE event (or a frame) ``@ag-ui/core``'s schemas reject is an ``InvalidEvent``
naming the event index, the byte offset and the JSON pointer, in
``validate_event``'s words (``SSEInvalidEvent`` on SSE); ``invalid_events="keep"``
hands it over (``RecordReader`` marks it); an SSE event whose ``type`` this
protocol does not have follows ``unknown_events``, as a frame of a later protocol
does; a capture that ends inside an event says so. Runs on the backend of the pass
(Cython, then the pure twins).
"""

from __future__ import annotations

import warnings
from typing import Any

import orjson
import pytest

import agui_wire
from agui_wire import (
    PROTO_MEDIA_TYPE,
    SSE_MEDIA_TYPE,
    EventDecoder,
    decode,
    decode_proto,
    read_records,
    validate_event,
)
from agui_wire._pb import events_pb2
from agui_wire.errors import (
    InvalidEvent,
    SSEInvalidEvent,
    SSETruncatedStream,
    SSEUnknownEvent,
    UnknownEventWarning,
)
from tests.support.validation_cases import BROKEN_EVENTS, VALID_ODDITIES

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def sse(*events: Any) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


def first_error(event: Any) -> Any:
    return next(p for p in validate_event(event) if p.severity == "error")


# events of a known type that @ag-ui/core rejects, as JSON can carry them
REJECTED = {
    name: event
    for name, (event, _) in BROKEN_EVENTS.items()
    if isinstance(event, dict)
    and event.get("type") in agui_wire.schema.EVENTS
    and isinstance(event.get("type"), str)
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_sse_decoding_refuses_what_the_reference_rejects(name: str) -> None:
    event = REJECTED[name]
    data = sse(RS, event, RF)
    with pytest.raises(SSEInvalidEvent) as caught:
        decode(data, SSE_MEDIA_TYPE)
    err, problem = caught.value, first_error(event)
    assert (err.index, err.offset, err.frame_offset) == (1, len(sse(RS)), len(sse(RS)))
    assert (err.path, err.reason, err.event_type) == (problem.path, problem.message, event["type"])
    assert err.events == [RS]  # what came before it
    assert isinstance(err, InvalidEvent)
    # kept on request, as decoded
    assert decode(data, SSE_MEDIA_TYPE, invalid_events="keep") == [RS, event, RF]


@pytest.mark.parametrize("name", sorted(VALID_ODDITIES))
def test_sse_decoding_reads_what_the_reference_accepts(name: str) -> None:
    event = VALID_ODDITIES[name]
    assert decode(sse(event), SSE_MEDIA_TYPE) == [event]


def test_a_stream_hands_out_the_events_before_the_invalid_one() -> None:
    bad = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}
    decoder = EventDecoder(SSE_MEDIA_TYPE)
    assert decoder.feed(sse(RS, bad, RF)) == [RS]
    assert isinstance(decoder.pending_error, SSEInvalidEvent)
    with pytest.raises(SSEInvalidEvent, match=r"event 1, byte \d+, TEXT_MESSAGE_CONTENT at /delta"):
        decoder.feed(b"")


def test_records_mark_what_they_keep() -> None:
    bad = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "bot"}
    records = list(read_records(sse(RS, bad, RF), invalid_events="keep"))
    assert [r.event for r in records] == [RS, bad, RF]
    assert [r.invalid is None for r in records] == [True, False, True]
    assert records[1].invalid is not None
    assert records[1].invalid.path == "/role"
    records = list(read_records(sse(RS, bad, RF), keep_going=True))
    assert [r.event for r in records] == [RS, None, RF]
    assert isinstance(records[1].error, SSEInvalidEvent)


# -- an event of a later protocol: the unknown-event policy, as for a frame -----------------


def test_an_sse_event_of_a_later_protocol_follows_unknown_events() -> None:
    later = {"type": "FUTURE_EVENT", "x": 1}
    data = sse(RS, later, RF)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert decode(data, SSE_MEDIA_TYPE) == [RS, RF]
    assert [w.category for w in seen] == [UnknownEventWarning]
    assert "unknown event type 'FUTURE_EVENT'" in str(seen[0].message)
    with pytest.raises(SSEUnknownEvent) as caught:
        decode(data, SSE_MEDIA_TYPE, unknown_events="raise")
    assert (caught.value.index, caught.value.event) == (1, later)
    raw = decode(data, SSE_MEDIA_TYPE, unknown_events="raw")
    assert raw[1] == {"type": "RAW", "source": "agui_wire.unknown_event", "event": later}
    records = list(read_records(data))
    assert records[1].unknown is not None
    assert records[1].event is None


# -- the protobuf decoder says the same, where the wire can say it ------------------------------


def frame(event: events_pb2.Event) -> bytes:
    payload = event.SerializeToString()
    return len(payload).to_bytes(4, "big") + payload


def _role_tool() -> events_pb2.Event:
    ev = events_pb2.Event()
    ev.text_message_start.base_event.SetInParent()
    ev.text_message_start.message_id = "m"
    ev.text_message_start.role = "tool"
    return ev


def _bad_path() -> events_pb2.Event:
    ev = events_pb2.Event()
    body = ev.state_delta
    body.base_event.type = events_pb2.STATE_DELTA
    op = body.delta.add()
    op.path = "a/b"
    op.value.number_value = 1
    return ev


def _negative_count() -> events_pb2.Event:
    ev = events_pb2.Event()
    body = ev.run_error
    body.base_event.type = events_pb2.RUN_ERROR
    body.message = "m"
    body.usage.add().input_tokens = -1
    return ev


def _big_timestamp() -> events_pb2.Event:
    ev = events_pb2.Event()
    body = ev.text_message_end
    body.base_event.type = events_pb2.TEXT_MESSAGE_END
    body.base_event.timestamp = 2**60
    body.message_id = "m"
    return ev


def _unknown_role() -> events_pb2.Event:
    ev = events_pb2.Event()
    body = ev.messages_snapshot
    body.base_event.type = events_pb2.MESSAGES_SNAPSHOT
    message = body.messages.add()
    message.id = "1"
    message.role = "robot"
    return ev


def _interrupt_without_interrupts() -> events_pb2.Event:
    ev = events_pb2.Event()
    body = ev.run_finished
    body.base_event.type = events_pb2.RUN_FINISHED
    body.thread_id, body.run_id, body.outcome = "t", "r", "interrupt"
    return ev


@pytest.mark.parametrize(
    "build",
    [
        _role_tool,
        _bad_path,
        _negative_count,
        _big_timestamp,
        _unknown_role,
        _interrupt_without_interrupts,
    ],
)
def test_protobuf_decoding_says_what_sse_decoding_says(build: Any) -> None:
    data = frame(build())
    with pytest.raises(InvalidEvent) as by_proto:
        decode_proto(data)
    kept = decode_proto(data, invalid_events="keep")
    assert len(kept) == 1
    with pytest.raises(SSEInvalidEvent) as by_sse:
        decode(sse(*kept), SSE_MEDIA_TYPE)
    a, b = by_proto.value, by_sse.value
    assert (a.index, a.offset, a.frame_offset) == (0, 4, 0)
    assert (a.path, a.reason, a.event_type) == (b.path, b.reason, b.event_type)
    with pytest.raises(InvalidEvent):
        decode(data, PROTO_MEDIA_TYPE)
    (record,) = read_records(data, invalid_events="keep")
    assert record.event == kept[0]
    assert record.invalid is not None


# -- a capture that ends inside an event ------------------------------------------------------


def test_a_truncated_capture_says_the_stream_ended_inside_the_event() -> None:
    run = sse(RS, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hello"}, RF)
    cut = run[: len(run) - 30]
    with pytest.raises(SSETruncatedStream) as caught:
        decode(cut, SSE_MEDIA_TYPE)
    err = caught.value
    assert err.index == 2
    assert err.offset == len(run) - len(sse(RF))
    assert "the stream ended inside event 2" in str(err)
    assert "not valid JSON" not in str(err)
    assert isinstance(err, agui_wire.errors.TruncatedStream)
    (*_, last) = read_records(cut, keep_going=True)
    assert last.fatal
    assert isinstance(last.error, SSETruncatedStream)
    # a last event that is whole without its blank line is read, as the reference does
    assert decode(run[:-2], SSE_MEDIA_TYPE)[-1] == RF
    # data broken before the cut is broken data, not a truncation
    broken = sse(RS) + b'data: {"type": x, "threadId": "t'
    with pytest.raises(agui_wire.errors.SSEError) as caught:
        decode(broken, SSE_MEDIA_TYPE)
    assert not isinstance(caught.value, SSETruncatedStream)
    assert "data is not valid JSON" in str(caught.value)
