"""agui_wire._codec.records: ``payload_records`` places each payload in the stream,
locates each refusal, and applies the unknown-event policy; ``Record`` says what it is.

``RecordReader`` (tests/unit/test_reader.py) and the per-chunk decoders of
``EventDecoder`` (tests/unit/test_stream_decoder.py) both go through it; here it is
driven directly, with each payload decoder (pure, and Cython when built).
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from agui_wire._codec import proto_reader
from agui_wire._codec.records import (
    UNKNOWN_EVENT_SOURCE,
    Record,
    payload_records,
    raw_unknown_event,
)
from agui_wire.errors import DecodeError, UnknownEventError
from tests.support.captures import EMPTY, FUTURE, GOOD_FRAMES, NOT_PROTOBUF
from tests.support.twins import twins

GOOD = [f[4:] for f in GOOD_FRAMES[:3]]  # payloads: the frames without their prefix
LATER = FUTURE[4:]  # an event of a later protocol: only an arm this version lacks
BAD = NOT_PROTOBUF[4:]


@pytest.fixture(params=twins(proto_reader, "decode_payload"))
def decode(request: Any) -> Callable[[Any], dict[str, Any]]:
    module = request.param

    def decode(payload: Any) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the skip policy's warning is EventDecoder's
            return module.decode_payload(payload)  # type: ignore[no-any-return]

    return decode


def test_each_payload_follows_the_previous_frame(decode: Any) -> None:
    records = list(payload_records(GOOD, 7, 1000, decode, "skip"))
    offsets = [1000]
    for p in GOOD[:-1]:
        offsets.append(offsets[-1] + 4 + len(p))
    assert [(r.index, r.offset, r.length) for r in records] == [
        (7 + i, offsets[i], 4 + len(p)) for i, p in enumerate(GOOD)
    ]
    assert [r.event for r in records] == [decode(p) for p in GOOD]
    assert all(r.error is None and r.unknown is None and not r.fatal for r in records)
    assert [r.payload for r in records] == GOOD


@pytest.mark.parametrize("bad", [BAD, EMPTY[4:]], ids=["not protobuf", "empty"])
def test_a_refusal_is_located_in_the_stream_and_the_rest_goes_on(decode: Any, bad: bytes) -> None:
    payloads = [GOOD[0], bad, GOOD[1]]
    records = list(payload_records(payloads, 3, 50, decode, "skip"))
    assert records[0].event is not None
    assert records[2].event is not None
    error = records[1].error
    assert isinstance(error, DecodeError)
    start = 50 + 4 + len(GOOD[0])
    assert (error.index, error.frame_offset) == (4, start)
    assert error.offset is not None
    assert error.offset >= start + 4
    assert records[1].event is None
    assert records[1].payload == bad


def test_a_payload_already_refused_is_not_decoded_again(decode: Any) -> None:
    calls: list[Any] = []

    def counted(payload: Any) -> dict[str, Any]:
        calls.append(payload)
        return decode(payload)

    with pytest.raises(DecodeError) as refused:
        decode(BAD)
    records = list(payload_records([BAD, GOOD[0]], 0, 0, counted, "skip", refused.value))
    assert calls == [GOOD[0]]
    assert records[0].error is not None
    assert records[0].error.reason == refused.value.reason


@pytest.mark.parametrize("policy", ["skip", "raise", "raw"])
def test_an_event_of_a_later_protocol_follows_the_policy(decode: Any, policy: str) -> None:
    (record,) = payload_records([LATER], 2, 10, decode, policy)  # type: ignore[arg-type]
    if policy == "skip":
        assert isinstance(record.unknown, UnknownEventError)
        assert (record.event, record.error) == (None, None)
        assert "unknown=" in repr(record)
    elif policy == "raise":
        assert isinstance(record.error, UnknownEventError)
        assert (record.error.index, record.error.frame_offset) == (2, 10)
    else:
        assert record.error is None
        assert record.unknown is None
        assert record.event is not None
        assert record.event["type"] == "RAW"
        assert record.event["source"] == UNKNOWN_EVENT_SOURCE


def test_the_raw_event_carries_each_unknown_field_in_base64(decode: Any) -> None:
    with pytest.raises(UnknownEventError) as unknown:
        decode(LATER)
    raw = raw_unknown_event(unknown.value)
    fields = raw["event"]["fields"]
    assert [(f["number"], base64.b64decode(f["payload"])) for f in fields] == [
        (n, bytes(data)) for n, data in unknown.value.fields
    ]


def test_a_record_says_what_it_is() -> None:
    event = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    assert repr(Record(0, 0, 12, event)) == f"Record(index=0, offset=0, length=12, event={event!r})"
    error = DecodeError("cut", index=1, offset=3)
    assert repr(Record(1, 3, None, error=error, fatal=True)) == (
        f"Record(index=1, offset=3, length=None, error={error!r}, fatal=True)"
    )
