"""agui_wire.read_records / RecordReader: records with positions, past bad frames."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agui_wire
from agui_wire import (
    PROTO_MEDIA_TYPE,
    SSE_MEDIA_TYPE,
    DecodeError,
    FrameTooLarge,
    Record,
    RecordReader,
    SSEError,
    StreamClosed,
    TruncatedStream,
    UnknownEventError,
    read_records,
)
from agui_wire.errors import SSELimitExceeded

TMC = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
EVENTS = [dict(TMC, delta=f"d{i}") for i in range(3)]
FRAMES = [agui_wire.encode_proto(e) for e in EVENTS]
BAD_PAYLOAD = b"\x00\x00\x00\x02\xff\xff"  # framing intact, payload not an Event
FUTURE = b"\x00\x00\x00\x07\x82\x02\x04\x0a\x02\x08\x28"  # only an unknown Event arm


def shape(records: list[Record]) -> list[tuple[Any, ...]]:
    return [
        (
            r.index,
            r.offset,
            r.length,
            r.event,
            None if r.error is None else (type(r.error), str(r.error)),
            r.unknown is not None,
            r.fatal,
        )
        for r in records
    ]


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def test_bad_payload_between_good_frames() -> None:
    data = FRAMES[0] + BAD_PAYLOAD + FRAMES[1]
    kept = list(read_records(data, keep_going=True))
    assert [r.event for r in kept] == [EVENTS[0], None, EVENTS[1]]
    second = len(FRAMES[0])
    assert [(r.index, r.offset, r.length) for r in kept] == [
        (0, 0, len(FRAMES[0])),
        (1, second, 6),
        (2, second + 6, len(FRAMES[1])),
    ]
    err = kept[1].error
    assert isinstance(err, DecodeError)
    assert not kept[1].fatal
    assert (err.index, err.frame_offset) == (1, second)
    assert second + 4 <= (err.offset or 0) < second + 6  # inside the payload
    assert bytes(kept[1].payload or b"") == b"\xff\xff"
    # without keep_going the error record is the last one
    stopped = list(read_records(data))
    assert shape(stopped) == shape(kept[:2])


def test_stopped_reader_stays_stopped() -> None:
    reader = RecordReader(PROTO_MEDIA_TYPE)
    records = reader.feed(FRAMES[0] + BAD_PAYLOAD + FRAMES[1])
    assert len(records) == 2
    assert reader.stopped is records[1].error
    with pytest.raises(DecodeError) as info:
        reader.feed(FRAMES[2])
    assert info.value is records[1].error
    with pytest.raises(DecodeError):
        reader.close()
    done = RecordReader(PROTO_MEDIA_TYPE)
    assert done.close() == []
    with pytest.raises(StreamClosed):
        done.feed(FRAMES[0])


def test_oversize_length_prefix_ends_the_stream() -> None:
    data = FRAMES[0] + b"\x7f\xff\xff\xff" + FRAMES[1]
    records = list(read_records(data, keep_going=True))
    assert [r.event for r in records] == [EVENTS[0], None]
    last = records[-1]
    assert isinstance(last.error, FrameTooLarge)
    assert last.fatal
    assert (last.index, last.offset) == (1, len(FRAMES[0]))


def test_cut_mid_frame() -> None:
    data = FRAMES[0] + FRAMES[1][:7]
    records = list(read_records(data, PROTO_MEDIA_TYPE, keep_going=True))
    last = records[-1]
    assert isinstance(last.error, TruncatedStream)
    assert last.fatal
    assert (last.index, last.offset, last.length) == (1, len(FRAMES[0]), 7)


def test_unknown_event_policies() -> None:
    data = FRAMES[0] + FUTURE + FRAMES[1]
    skipped = list(read_records(data))  # no warning: the record says it
    assert [r.event for r in skipped] == [EVENTS[0], None, EVENTS[1]]
    assert isinstance(skipped[1].unknown, UnknownEventError)
    assert skipped[1].unknown.frame_offset == len(FRAMES[0])
    raised = list(read_records(data, unknown_events="raise", keep_going=True))
    assert isinstance(raised[1].error, UnknownEventError)
    assert len(raised) == 3
    raw = list(read_records(data, unknown_events="raw"))[1].event
    assert raw is not None
    assert raw["source"] == "agui_wire.unknown_event"


def test_sse_bad_json_is_skipped() -> None:
    good = [agui_wire.encode_sse(e) for e in EVENTS]
    bad = b"data: {not json\n\n"
    data = good[0] + bad + good[1] + b"data: [1]\n\n" + good[2]
    records = list(read_records(data, keep_going=True))
    assert [r.event for r in records] == [EVENTS[0], None, EVENTS[1], None, EVENTS[2]]
    offsets = list(itertools.accumulate([0, len(good[0]), len(bad), len(good[1]), 11]))
    assert [r.offset for r in records] == offsets
    assert [r.index for r in records] == [0, 1, 2, 3, 4]
    assert all(isinstance(r.error, SSEError) for r in (records[1], records[3]))
    assert not any(r.fatal for r in records)
    assert all(r.length is None for r in records)
    assert len(list(read_records(data))) == 2


def test_sse_over_max_event_size_then_resync() -> None:
    good = [agui_wire.encode_sse(e) for e in EVENTS]
    big = b"data: " + b"x" * 300 + b"\r\n\r\n"  # CRLF: the resync finds any line end
    data = good[0] + big + good[1] + b"\xff\n\n" + good[2]
    records = list(read_records(data, SSE_MEDIA_TYPE, keep_going=True, max_event_size=100))
    assert [r.event for r in records] == [EVENTS[0], None, EVENTS[1], None, EVENTS[2]]
    assert isinstance(records[1].error, SSELimitExceeded)
    assert isinstance(records[3].error, SSEError)  # invalid UTF-8
    at = len(good[0]) + len(big)
    assert [(r.index, r.offset) for r in records] == [
        (0, 0),
        (1, len(good[0])),
        (2, at),
        (3, at + len(good[1])),
        (4, at + len(good[1]) + 3),
    ]
    assert (records[3].error.offset, records[3].error.index) == (at + len(good[1]), 3)  # type: ignore[union-attr]


def test_unreadable_first_byte() -> None:
    (record,) = list(read_records(b"\x80abc", keep_going=True))
    assert record.fatal
    assert isinstance(record.error, DecodeError)
    assert "cannot tell the stream format" in str(record.error)


def test_options_are_checked() -> None:
    for options in ({"max_frame_size": -1}, {"max_event_size": 0}, {"max_depth": 0}):
        with pytest.raises(ValueError, match=next(iter(options))):
            RecordReader(**options)
    with pytest.raises(ValueError, match="unknown_events"):
        RecordReader(unknown_events="ignore")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RecordReader(SSE_MEDIA_TYPE).feed(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"max_frame_size": -1, "max_event_size": 0},
        {"max_depth": 0, "max_frame_size": -1},
        {"invalid_utf8": "ignore", "max_depth": 0},
    ],
)
def test_the_first_bad_option_is_eventdecoders(options: dict[str, Any]) -> None:
    # One option check for every decoder (_codec.options): with two bad options,
    # RecordReader names the one EventDecoder names (it named max_event_size before
    # max_frame_size)
    first = next(iter(options))
    with pytest.raises(ValueError, match=f"^{first} ") as expected:
        agui_wire.EventDecoder(**options)
    with pytest.raises(ValueError, match=f"^{first} ") as got:
        RecordReader(**options)
    assert str(got.value) == str(expected.value)


_PROTO_STREAM = FRAMES[0] + BAD_PAYLOAD + FUTURE + FRAMES[1] + FRAMES[2][:9]
_SSE_STREAM = (
    b"\xef\xbb\xbf"
    + agui_wire.encode_sse(EVENTS[0])
    + b": keep-alive\r\n\r\n"
    + b"data: {oops\n\n"
    + b"data: "
    + b"y" * 200
    + b"\r\r"
    + agui_wire.encode_sse(EVENTS[1])
    + b"data: \xc3\x28\n\n"
    + b"id: 7\ndata: "
    + agui_wire.encode_sse(EVENTS[2])[6:-1]
)


@settings(max_examples=150, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0), max_size=12), proto=st.booleans())
def test_any_chunking_gives_the_same_records(cuts: list[int], proto: bool) -> None:
    data, options = (_PROTO_STREAM, {}) if proto else (_SSE_STREAM, {"max_event_size": 150})
    whole = shape(list(read_records([data], keep_going=True, **options)))
    assert whole == shape(list(read_records(chunked(data, cuts), keep_going=True, **options)))
    # and a byte at a time
    if not cuts:
        singles = [data[i : i + 1] for i in range(len(data))]
        assert whole == shape(list(read_records(singles, keep_going=True, **options)))


def test_the_chunking_stream_is_what_it_claims() -> None:
    proto = shape(list(read_records(_PROTO_STREAM, keep_going=True)))
    assert [(p[0], p[3] is not None, p[4] is not None, p[5], p[6]) for p in proto] == [
        (0, True, False, False, False),
        (1, False, True, False, False),
        (2, False, False, True, False),
        (3, True, False, False, False),
        (4, False, True, False, True),
    ]
    sse = list(read_records(_SSE_STREAM, keep_going=True, max_event_size=150))
    assert [r.event for r in sse] == [EVENTS[0], None, None, EVENTS[1], None, EVENTS[2]]
    assert sse[0].offset == 3  # the BOM counts


def test_event_decoder_agrees_with_the_reader() -> None:
    # EventDecoder locates its errors with the reader's per-frame records
    data = FRAMES[0] + BAD_PAYLOAD
    with pytest.raises(DecodeError) as info:
        agui_wire.decode_proto(data)
    (_, bad) = list(read_records(data))
    assert str(info.value) == str(bad.error)
    assert info.value.offset == bad.error.offset


def test_aread_records_gives_what_read_records_gives() -> None:
    data = FRAMES[0] + BAD_PAYLOAD + FRAMES[1] + FRAMES[2][:5]

    async def collect(**options: Any) -> list[Record]:
        async def chunks() -> Any:
            for i in range(0, len(data), 7):
                yield data[i : i + 7]

        return [r async for r in agui_wire.aread_records(chunks(), **options)]

    for options in ({}, {"keep_going": True}):
        got = asyncio.run(collect(**options))
        assert shape(got) == shape(list(read_records(data, **options)))
    assert len(asyncio.run(collect(keep_going=True))) == 4


def test_many_resyncs_in_one_chunk_stay_linear() -> None:
    # each refused SSE event restarts the parser on the rest of the data: in
    # bounded pieces, or 8x the events would cost ~64x (it did: 31x at 16,000)
    def cost(n: int) -> float:
        data = b'data: {"type":"X","v":"\xff"}\n\n' * n
        best = float("inf")
        for _ in range(2):
            start = time.process_time()
            records = list(read_records(data, SSE_MEDIA_TYPE, keep_going=True))
            best = min(best, time.process_time() - start)
        assert len(records) == n
        assert all(isinstance(r.error, SSEError) for r in records)
        return best

    ratio = cost(16_000) / cost(2_000)
    assert ratio < 20, f"8x the input took {ratio:.1f}x the time"
