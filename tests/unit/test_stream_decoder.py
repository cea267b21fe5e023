"""The per-chunk decoders (``agui_wire._codec.stream_decoder``), pure Python and Cython
side by side: ``FrameDecoder`` (frames in, events out) and ``SSEDecoder``."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import agui_wire
from agui_wire import (
    PROTO_MEDIA_TYPE,
    SSE_MEDIA_TYPE,
    DecodeError,
    EventDecoder,
    FrameTooLarge,
    LimitExceeded,
    SSEError,
    StreamClosed,
    TruncatedStream,
    UnknownEventError,
    UnknownEventWarning,
    UnknownPartWarning,
)
from agui_wire._codec import selected, stream_decoder
from agui_wire._sample import realistic_run
from agui_wire.errors import SSELimitExceeded
from tests.support.twins import fast, needs_fast, twins

_fast = fast("FrameDecoder")
_need_fast = needs_fast("FrameDecoder")
IMPLS = twins(stream_decoder, "FrameDecoder")


@pytest.fixture(params=IMPLS)
def impl(request: Any) -> Any:
    return request.param


RUN = realistic_run(200, seed=5)
TMC = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
TMC_FRAME = agui_wire.encode_proto(TMC)
EMPTY = b"\x00\x00\x00\x00"  # a 0-length frame: refused ("empty frame")
FUTURE = b"\x00\x00\x00\x07\x82\x02\x04\x0a\x02\x08\x28"  # an event of a later protocol


def _ld(number: int, body: bytes) -> bytes:
    tag = number << 3 | 2
    head = bytes([tag]) if tag < 0x80 else bytes([tag & 0x7F | 0x80, tag >> 7])
    return head + bytes([len(body)]) + body


# TOOL_CALL_RESULT with one content part of an unknown kind: one UnknownPartWarning
WARNS_PAYLOAD = _ld(22, _ld(1, b"\x08\x15") + _ld(3, b"m") + _ld(4, b"t") + _ld(7, _ld(9, b"")))
WARNS = len(WARNS_PAYLOAD).to_bytes(4, "big") + WARNS_PAYLOAD


def caught(call: Any) -> tuple[Any, list[type[Warning]]]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = call()
    return result, [w.category for w in record]


# -- FrameDecoder --------------------------------------------------------------------


def test_one_frame_per_chunk_and_frames_split_anywhere(impl: Any) -> None:
    frames = [agui_wire.encode_proto(e) for e in RUN]
    decoder = impl.FrameDecoder()
    assert [e for f in frames for e in decoder.feed(f)] == RUN
    stream = b"".join(frames)
    for step in (1, 3, 7, 4096):
        decoder = impl.FrameDecoder()
        events = [
            e for i in range(0, len(stream), step) for e in decoder.feed(stream[i : i + step])
        ]
        assert events == RUN
        assert decoder.close() == []
        assert decoder.events_read == len(RUN)
        assert (decoder.frames_read, decoder.offset) == (len(RUN), len(stream))


def test_a_refused_frame_keeps_the_events_before_it(impl: Any) -> None:
    decoder = impl.FrameDecoder()
    events, warned = caught(lambda: decoder.feed(TMC_FRAME + WARNS + EMPTY + TMC_FRAME))
    assert events[0] == TMC
    assert warned == [UnknownPartWarning]  # the frame before the refused one: decoded once
    error = decoder.pending_error
    assert isinstance(error, DecodeError)
    assert "empty frame" in str(error)
    assert (error.index, error.frame_offset) == (2, len(TMC_FRAME) + len(WARNS))
    assert error.offset == len(TMC_FRAME) + len(WARNS) + 4
    for call in (lambda: decoder.feed(TMC_FRAME), decoder.close):
        with pytest.raises(DecodeError) as again:
            call()
        assert again.value is error


def test_a_refused_frame_with_nothing_before_it_raises_at_once(impl: Any) -> None:
    decoder = impl.FrameDecoder()
    assert decoder.feed(TMC_FRAME) == [TMC]
    with pytest.raises(DecodeError, match="empty frame") as info:
        decoder.feed(EMPTY + TMC_FRAME)
    assert (info.value.index, info.value.frame_offset) == (1, len(TMC_FRAME))
    assert decoder.pending_error is info.value


@pytest.mark.parametrize("policy", ["skip", "raw", "raise"])
def test_unknown_events(impl: Any, policy: Any) -> None:
    decoder = impl.FrameDecoder(unknown_events=policy)
    if policy == "raise":
        with pytest.raises(UnknownEventError):
            decoder.feed(FUTURE + TMC_FRAME)
        return
    events, warned = caught(lambda: decoder.feed(WARNS + FUTURE + TMC_FRAME))
    assert warned.count(UnknownPartWarning) == 1
    assert warned.count(UnknownEventWarning) == (policy == "skip")
    assert events[0]["type"] == "TOOL_CALL_RESULT"
    assert events[-1] == TMC
    assert len(events) == (2 if policy == "skip" else 3)
    assert decoder.pending_error is None
    assert decoder.feed(TMC_FRAME) == [TMC]  # and on it goes


def test_a_bad_prefix_after_frames_waits_for_the_next_call(impl: Any) -> None:
    decoder = impl.FrameDecoder(max_frame_size=100)
    assert decoder.feed(TMC_FRAME + b"\x00\x00\x01\x00") == [TMC]
    assert isinstance(decoder.pending_error, FrameTooLarge)
    with pytest.raises(FrameTooLarge):
        decoder.feed(TMC_FRAME)
    # a skipped event before it is a frame too: nothing to return, raised next time
    decoder = impl.FrameDecoder(max_frame_size=100)
    events, _ = caught(lambda: decoder.feed(FUTURE + b"\x00\x00\x01\x00"))
    assert events == []
    assert isinstance(decoder.pending_error, FrameTooLarge)


def test_max_events(impl: Any) -> None:
    decoder = impl.FrameDecoder(max_events=3)
    assert decoder.feed(TMC_FRAME * 2) == [TMC, TMC]
    assert decoder.feed(TMC_FRAME * 2) == [TMC]
    error = decoder.pending_error
    assert isinstance(error, LimitExceeded)
    assert error.index == 3
    with pytest.raises(LimitExceeded):
        decoder.feed(TMC_FRAME)


def test_truncated_stream_and_options(impl: Any) -> None:
    decoder = impl.FrameDecoder(invalid_utf8="replace", max_depth=2)
    assert decoder.feed(TMC_FRAME[:5]) == []
    with pytest.raises(TruncatedStream):
        decoder.close()
    bad = agui_wire.encode_proto({"type": "CUSTOM", "name": "n\u00e9", "value": 1})
    bad = bad.replace("n\u00e9".encode(), b"n\xff\xff")
    assert impl.FrameDecoder(invalid_utf8="replace").feed(bad)[0]["name"] == "n\ufffd\ufffd"
    with pytest.raises(DecodeError):
        impl.FrameDecoder().feed(bad)
    deep = agui_wire.encode_proto({"type": "STATE_SNAPSHOT", "snapshot": [[[1]]]})
    with pytest.raises(LimitExceeded):
        impl.FrameDecoder(max_depth=2).feed(deep)


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_any_bytes_like_and_nothing_else(impl: Any, kind: Any) -> None:
    decoder = impl.FrameDecoder()
    assert decoder.feed(kind(TMC_FRAME * 2)) == [TMC, TMC]
    with pytest.raises(TypeError, match="bytes-like"):
        decoder.feed(5)
    assert decoder.feed(TMC_FRAME) == [TMC]


# -- SSEDecoder ----------------------------------------------------------------------

SSE_RUN = [agui_wire.encode_sse(e) for e in RUN]


def test_sse_one_block_per_chunk_and_split_anywhere(impl: Any) -> None:
    decoder = impl.SSEDecoder()
    assert [e for b in SSE_RUN for e in decoder.feed(b)] == RUN
    parser = decoder.reader.parser  # what the fast path took is accounted for
    assert (parser.events_read, parser.bytes_fed) == (len(RUN), sum(map(len, SSE_RUN)))
    stream = b"\xef\xbb\xbf" + b"".join(SSE_RUN)
    for step in (1, 5, 4096):
        decoder = impl.SSEDecoder()
        events = [
            e for i in range(0, len(stream), step) for e in decoder.feed(stream[i : i + step])
        ]
        assert events + decoder.close() == RUN
        assert decoder.events_read == len(RUN)


def test_sse_errors_positions_and_ids(impl: Any) -> None:
    good = agui_wire.encode_sse(TMC, id="7")
    decoder = impl.SSEDecoder()
    assert decoder.feed(good) == [TMC]
    assert decoder.last_event_id == "7"
    crlf = good.replace(b"\n", b"\r\n")
    assert decoder.feed(crlf) == [TMC]  # CR: the general parser's
    plain = agui_wire.encode_sse(TMC)
    assert decoder.feed(plain) == [TMC]
    assert decoder.feed(good + b"data: {bad\n\n" + good) == [TMC]
    error = decoder.pending_error
    assert isinstance(error, SSEError)
    assert (error.index, error.offset) == (4, 2 * len(good) + len(crlf) + len(plain))
    with pytest.raises(SSEError) as again:
        decoder.feed(good)
    assert again.value is error
    with pytest.raises(SSEError, match="not valid JSON"):
        impl.SSEDecoder().feed(b"data: {bad\n\n" + good)  # nothing before it: at once


def test_sse_max_events(impl: Any) -> None:
    decoder = impl.SSEDecoder(max_events=2)
    block = agui_wire.encode_sse(TMC)
    assert decoder.feed(block) == [TMC]
    assert decoder.feed(block * 2) == [TMC]
    assert isinstance(decoder.pending_error, SSELimitExceeded)
    with pytest.raises(SSELimitExceeded):
        decoder.feed(block)


# -- EventDecoder on them ------------------------------------------------------------


@pytest.mark.parametrize("content_type", [None, PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE])
def test_event_decoder_feed_is_one_call_into_its_reader(content_type: Any) -> None:
    decoder = EventDecoder(content_type)
    body = TMC_FRAME if content_type == PROTO_MEDIA_TYPE else agui_wire.encode_sse(TMC)
    assert decoder.feed(body) == [TMC]
    reader = decoder._reader
    assert isinstance(reader, selected.FrameDecoder | selected.SSEDecoder)
    assert decoder.feed == reader.feed  # no Python frame between them
    assert decoder.feed(chunk=body) == [TMC]  # the signature stays EventDecoder.feed's
    assert decoder.close() == []
    with pytest.raises(StreamClosed, match=r"EventDecoder\.feed"):
        decoder.feed(body)


def test_a_skipped_event_warns_at_the_caller_of_feed() -> None:
    decoder = EventDecoder(PROTO_MEDIA_TYPE)
    decoder.feed(TMC_FRAME)  # the transport is known: feed is the reader's
    with pytest.warns(UnknownEventWarning) as record:
        decoder.feed(FUTURE)
    assert record[0].filename == __file__


def test_an_unknown_part_warns_at_the_caller() -> None:
    with pytest.warns(UnknownPartWarning) as record:
        selected.decode_payload(WARNS_PAYLOAD)  # both backends: the caller's line
    assert record[0].filename == __file__
    if selected.IMPLEMENTATIONS["FrameDecoder"] == "cython":  # the pure twin's is feed's
        decoder = EventDecoder(PROTO_MEDIA_TYPE)
        with pytest.warns(UnknownPartWarning) as record:
            decoder.feed(WARNS)
        assert record[0].filename == __file__
