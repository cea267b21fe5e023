"""EventEncoder, EventDecoder and the capture/stream decoders, both transports."""

from __future__ import annotations

import asyncio
import functools
import gzip
import io
import itertools
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agui_wire
from agui_wire import (
    PROTO_MEDIA_TYPE,
    SSE_MEDIA_TYPE,
    DecodeError,
    EventDecoder,
    EventEncoder,
    FrameTooLarge,
    LimitExceeded,
    SSEError,
    TruncatedStream,
    UnknownEventWarning,
    compat,
    normalize,
)
from agui_wire._sample import realistic_run
from tests.support.corpus import CORPUS

RUN = realistic_run(300, seed=3)
TMC = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        (None, SSE_MEDIA_TYPE),
        ("*/*", SSE_MEDIA_TYPE),
        ("text/event-stream, */*", SSE_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto", PROTO_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto, text/event-stream", PROTO_MEDIA_TYPE),
    ],
)
def test_encoder_writes_what_it_declares(accept: str | None, content_type: str) -> None:
    encoder = EventEncoder(accept)
    assert encoder.content_type == encoder.get_content_type() == content_type
    body = b"".join(encoder.encode(e) for e in RUN)
    assert body == encoder.encode_many(RUN)
    assert agui_wire.sniff(body) == content_type
    assert agui_wire.decode(body, content_type) == (
        RUN if content_type == SSE_MEDIA_TYPE else [normalize(e) for e in RUN]
    )


def test_strict_negotiation() -> None:
    with pytest.raises(agui_wire.NotAcceptable):
        EventEncoder("application/json", strict=True)
    assert EventEncoder("application/json").content_type == SSE_MEDIA_TYPE
    # the shared encoder the call without options now finds is never the strict answer
    assert EventEncoder("application/json") is EventEncoder("application/json")
    with pytest.raises(agui_wire.NotAcceptable):
        EventEncoder("application/json", strict=True)


@given(
    st.lists(st.integers(0, 10**6), max_size=12),
    st.sampled_from([SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE]),
)
def test_any_chunking_gives_the_same_events(cuts: list[int], content_type: str) -> None:
    body = EventEncoder(content_type).encode_many(RUN[:60])
    expected = agui_wire.decode(body)
    decoder = EventDecoder(content_type)
    got: list[dict[str, Any]] = []
    for chunk in chunked(body, cuts):
        got += decoder.feed(chunk)
    got += decoder.close()
    assert got == expected
    assert decoder.events_read == len(expected) == 60


def test_sniffing() -> None:
    assert agui_wire.sniff(b"") is None
    assert agui_wire.sniff(b"\x00\x00\x00\x05") == PROTO_MEDIA_TYPE
    assert agui_wire.sniff(b"data: {}") == SSE_MEDIA_TYPE
    assert agui_wire.sniff(b"\xef\xbb\xbfdata:") == SSE_MEDIA_TYPE
    assert agui_wire.sniff(b": keep-alive\n\n") == SSE_MEDIA_TYPE
    with pytest.raises(DecodeError, match="first byte is 0x1f"):
        agui_wire.sniff(b"\x1f\x00")
    with pytest.raises(DecodeError, match="it is gzip-compressed, so decompress it first"):
        agui_wire.sniff(gzip.compress(b"data: x"))
    decoder = EventDecoder()
    assert decoder.content_type is None
    assert decoder.feed(b"") == []
    assert decoder.feed(agui_wire.encode_proto(TMC)) == [TMC]
    assert decoder.content_type == PROTO_MEDIA_TYPE


def test_content_type_parameters_and_aliases() -> None:
    frame = agui_wire.encode_proto(TMC)
    assert agui_wire.decode(frame, "Application/Vnd.AG-UI.Event+Proto; charset=binary") == [TMC]
    assert agui_wire.decode(frame, "application/x-ag-ui") == [TMC]
    assert agui_wire.decode(agui_wire.encode_sse(TMC), "text/event-stream; charset=utf-8") == [TMC]
    with pytest.raises(ValueError, match="not an AG-UI stream content type"):
        EventDecoder("application/json")


def test_sources_bytes_file_chunks() -> None:
    body = EventEncoder(PROTO_MEDIA_TYPE).encode_many(RUN)
    expected = [normalize(e) for e in RUN]
    assert agui_wire.decode(body) == expected
    assert agui_wire.decode(io.BytesIO(body)) == expected
    assert agui_wire.decode(iter([body[:7], body[7:100], body[100:]])) == expected
    assert agui_wire.decode(memoryview(body)) == expected
    assert list(agui_wire.iter_decode(io.BytesIO(body), PROTO_MEDIA_TYPE)) == expected


def test_aiter_decode() -> None:
    body = EventEncoder(SSE_MEDIA_TYPE).encode_many(RUN)

    async def chunks() -> Any:
        for i in range(0, len(body), 97):
            await asyncio.sleep(0)
            yield body[i : i + 97]

    async def collect() -> list[dict[str, Any]]:
        return [e async for e in agui_wire.aiter_decode(chunks(), SSE_MEDIA_TYPE)]

    assert asyncio.run(collect()) == RUN


def test_error_positions_and_good_events_first() -> None:
    frames = [agui_wire.encode_proto(e) for e in CORPUS[:5]]
    bad = b"\x00\x00\x00\x02\x12\x05"  # arm 2 declares 5 bytes, none follow
    body = b"".join(frames[:3]) + bad + frames[3]
    offset = sum(len(f) for f in frames[:3])
    decoder = EventDecoder(PROTO_MEDIA_TYPE)
    events = decoder.feed(body)
    assert events == [normalize(e) for e in CORPUS[:3]]
    assert decoder.pending_error is not None
    with pytest.raises(DecodeError) as info:
        decoder.feed(b"")
    err = info.value
    assert (err.index, err.frame_offset, err.offset) == (3, offset, offset + 4)
    assert "frame 3, byte" in str(err)
    with pytest.raises(DecodeError):  # a failed decoder stays failed
        decoder.close()
    with pytest.raises(DecodeError) as whole:
        agui_wire.decode_proto(body)
    assert whole.value.events == events


def test_sse_error_positions() -> None:
    good = agui_wire.encode_sse(TMC)
    body = good + good + b"data: [1, 2]\n\n" + good
    with pytest.raises(SSEError) as info:
        agui_wire.decode(body)
    assert (info.value.index, info.value.offset) == (2, 2 * len(good))
    assert info.value.events == [TMC, TMC]
    with pytest.raises(SSEError, match="no type"):
        agui_wire.decode(b'data: {"type": ""}\n\n')


def test_truncated_binary_stream() -> None:
    frame = agui_wire.encode_proto(TMC)
    for cut in range(1, len(frame)):
        with pytest.raises(TruncatedStream) as info:
            agui_wire.decode_proto(frame + frame[:cut])
        assert info.value.events == [TMC]
        assert str(cut) in str(info.value)


def test_limits() -> None:
    frame = agui_wire.encode_proto(TMC)
    assert agui_wire.decode_proto(frame, max_frame_size=len(frame) - 4) == [TMC]
    with pytest.raises(FrameTooLarge):
        agui_wire.decode_proto(frame, max_frame_size=len(frame) - 5)
    with pytest.raises(FrameTooLarge):
        agui_wire.decode_proto(b"\xff\xff\xff\xff")
    assert agui_wire.decode_proto(frame * 3, max_events=3) == [TMC] * 3
    with pytest.raises(LimitExceeded) as info:
        agui_wire.decode_proto(frame * 4, max_events=3)
    assert info.value.events == [TMC] * 3
    with pytest.raises(LimitExceeded):
        agui_wire.decode(agui_wire.encode_sse(TMC) * 4, max_events=3)
    sse = agui_wire.encode_sse(TMC)
    with pytest.raises(LimitExceeded):
        agui_wire.decode(sse, max_event_size=len(sse) - 10)


def test_unknown_event_policies() -> None:
    future = b"\x00\x00\x00\x07\x82\x02\x04\x0a\x02\x08\x28"
    body = agui_wire.encode_proto(TMC) + future
    with pytest.warns(UnknownEventWarning, match="later protocol"):
        assert agui_wire.decode_proto(body) == [TMC]
    raw = agui_wire.decode_proto(body, unknown_events="raw")[1]
    assert raw == {
        "type": "RAW",
        "source": "agui_wire.unknown_event",
        "event": {"fields": [{"number": 32, "payload": "CgIIKA=="}]},
    }
    with pytest.raises(ValueError, match="unknown_events"):
        EventDecoder(PROTO_MEDIA_TYPE, unknown_events="ignore")  # type: ignore[arg-type]


def test_invalid_utf8_policy_applies_to_both_transports() -> None:
    bad_sse = b'data: {"type": "CUSTOM", "name": "\xff", "value": 1}\n\n'
    with pytest.raises(DecodeError):
        agui_wire.decode(bad_sse)
    assert agui_wire.decode(bad_sse, invalid_utf8="replace")[0]["name"] == "\ufffd"


def test_last_event_id_for_resuming() -> None:
    body = agui_wire.encode_sse(TMC, id="7") + agui_wire.encode_sse(TMC, id="8")
    decoder = EventDecoder(SSE_MEDIA_TYPE)
    assert decoder.feed(body) == [TMC, TMC]
    assert decoder.last_event_id == "8"


def test_live_stream_error_is_raised_without_waiting_for_more_data() -> None:
    good = agui_wire.encode_proto(TMC)

    def stalls_after_bad_frame() -> Any:
        yield good + b"\x00\x00\x00\x00" + good  # a 0-length frame: no event
        raise AssertionError("the decoder asked for more data after the bad frame")

    events = agui_wire.iter_decode(stalls_after_bad_frame(), PROTO_MEDIA_TYPE)
    assert next(events) == TMC
    with pytest.raises(DecodeError, match="empty frame"):
        next(events)


# -- the caller's mistakes, on whichever backend runs ------------------------------------

ALL_TYPES = (None, PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE)


@pytest.mark.parametrize("accept", [5, 0, 1.5, ["text/event-stream"], object()])
def test_an_accept_that_is_no_header_is_a_type_error_saying_so(accept: Any) -> None:
    for make in (EventEncoder, agui_wire.negotiate, compat.SDKEventEncoder):
        with pytest.raises(TypeError, match="accept must be the request's Accept header") as got:
            make(accept)
        assert f"not {type(accept).__name__}" in str(got.value)


@pytest.mark.parametrize(
    "header",
    [
        "text/event-stream",
        "application/vnd.ag-ui.event+proto",
        "application/vnd.ag-ui.event+proto;q=0.5, text/event-stream",
        "*/*",
        "application/json",
        "",
    ],
)
def test_asgi_header_bytes_negotiate_as_their_text(header: str) -> None:
    raw = header.encode("latin-1")  # what an ASGI scope's headers hold
    assert EventEncoder(raw).content_type == EventEncoder(header).content_type
    assert agui_wire.negotiate(raw) == agui_wire.negotiate(header)
    assert compat.SDKEventEncoder(raw).get_content_type() == agui_wire.negotiate(header)
    if header == "application/json":
        with pytest.raises(agui_wire.NotAcceptable, match="application/json"):
            EventEncoder(raw, strict=True)


@pytest.mark.parametrize(
    ("option", "hint"),
    [("lossy", "did you mean 'lossy_numbers'?"), ("strikt", "did you mean 'strict'?"), ("x", "")],
)
def test_an_unknown_option_names_the_public_class_and_its_options(option: str, hint: str) -> None:
    with pytest.raises(TypeError) as got:
        EventEncoder(None, **{option: True})
    message = str(got.value)
    assert message.startswith(f"EventEncoder() got an unexpected keyword argument {option!r}")
    assert hint in message
    assert "strict, wildcard_proto, lossy_numbers, extra_keys, max_depth" in message
    assert "_new" not in message


NOT_A_STREAM = {
    "a line of text": (b"hello world", 0, "line 1 ('hello world')"),
    "a web page": (b"<!doctype html>\n<html></html>\n", 0, "line 1"),
    "a log after a comment": (b": hi\r\n2026-12-07 INFO started\r\n", 6, "line 2"),
    "one long line": (b"x" * 5000, 0, "line 1"),
}


@pytest.mark.parametrize("name", sorted(NOT_A_STREAM))
def test_text_that_is_no_sse_stream_is_a_decode_error_not_no_events(name: str) -> None:
    data, offset, line = NOT_A_STREAM[name]

    async def chunks_of(data: bytes) -> Any:
        for i in range(0, len(data), 7):
            yield data[i : i + 7]

    async def collect() -> list[dict[str, Any]]:
        return [e async for e in agui_wire.aiter_decode(chunks_of(data))]

    readers = {
        "decode": lambda: agui_wire.decode(data),
        "decode as SSE": lambda: agui_wire.decode(data, SSE_MEDIA_TYPE),
        "decode a file": lambda: agui_wire.decode(io.BytesIO(data)),
        "iter_decode": lambda: list(agui_wire.iter_decode(data)),
        "iter_decode in pieces": lambda: list(agui_wire.iter_decode(chunked(data, [3, 9]))),
        "aiter_decode": lambda: asyncio.run(collect()),
    }
    for reader, read in readers.items():
        with pytest.raises(DecodeError, match="not an AG-UI stream") as got:
            read()
        assert got.value.offset == offset, reader
        assert f"no event in {len(data):,} bytes, and {line}" in str(got.value), reader
        assert "neither an SSE field (data:, event:, id:, retry:) nor a comment" in str(got.value)


@pytest.mark.parametrize(
    "data", [b"", b"\n\n", b": keep-alive\n\n", b"event: ping\nid: 4\n\n", b"\xef\xbb\xbf: hi\n"]
)
def test_a_stream_without_events_is_still_no_events(data: bytes) -> None:
    assert agui_wire.decode(data) == []
    assert list(agui_wire.iter_decode(data)) == []


def test_a_failed_sniff_stays_failed() -> None:
    decoder = EventDecoder()
    with pytest.raises(DecodeError, match="cannot tell the stream format") as first:
        decoder.feed(b"\x80garbage")
    assert decoder.pending_error is first.value
    for call in (lambda: decoder.feed(agui_wire.encode_sse(TMC)), decoder.close):
        with pytest.raises(DecodeError) as again:
            call()
        assert again.value is first.value


@pytest.mark.parametrize("content_type", ALL_TYPES)
@pytest.mark.parametrize("chunk", [5, 10**9, "data: x\n\n", None, 1.5, [1, 2]])
def test_feed_takes_bytes_like_only(content_type: str | None, chunk: Any) -> None:
    decoder = EventDecoder(content_type)
    with pytest.raises(TypeError, match="bytes-like"):
        decoder.feed(chunk)
    # nothing was appended: the next event is read whole
    body = agui_wire.encode_sse(TMC) if content_type != PROTO_MEDIA_TYPE else TMC_FRAME
    assert decoder.feed(body) == [TMC]


@pytest.mark.parametrize("content_type", ALL_TYPES)
@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_feed_takes_any_bytes_like(content_type: str | None, kind: Any) -> None:
    body = agui_wire.encode_sse(TMC) if content_type != PROTO_MEDIA_TYPE else TMC_FRAME
    assert EventDecoder(content_type).feed(kind(body)) == [TMC]


@pytest.mark.parametrize("content_type", ALL_TYPES)
def test_feed_after_close_is_a_typed_error(content_type: str | None) -> None:
    decoder = EventDecoder(content_type)
    assert decoder.close() == []
    assert decoder.close() == []  # idempotent
    with pytest.raises(agui_wire.StreamClosed, match="after close"):
        decoder.feed(TMC_FRAME)
    assert issubclass(agui_wire.StreamClosed, RuntimeError)
    assert issubclass(agui_wire.StreamClosed, agui_wire.AguiWireError)


@pytest.mark.parametrize(
    "options",
    [
        {"max_frame_size": -1},
        {"max_frame_size": 2**32},
        {"max_frame_size": True},
        {"max_event_size": 0},
        {"max_event_size": 1.0},
        {"max_depth": 1.5},
        {"max_depth": True},
        {"max_depth": 0},
        {"max_events": -1},
        {"max_events": 2.0},
        # equal to the defaults, but not ints: no shortcut may take them for those
        {"max_depth": 1024.0},
        {"max_frame_size": 10 * 1024 * 1024 - 4.0},
        {"max_event_size": 10 * 1024 * 1024 + 0.0},
        {"unknown_events": b"skip"},
    ],
)
def test_options_are_checked_at_construction(options: dict[str, Any]) -> None:
    for content_type in ALL_TYPES:  # whatever the transport, and before any feed
        with pytest.raises(ValueError, match=next(iter(options))):
            EventDecoder(content_type, **options)


TMC_FRAME = agui_wire.encode_proto(TMC)


# -- a refused frame after good ones (issue 15 item 8a), on whichever backend runs ------


def _ld(number: int, body: bytes) -> bytes:
    assert number < 1 << 11  # a 1-2 byte tag
    assert len(body) < 128  # a 1-byte length
    tag = number << 3 | 2
    head = bytes([tag]) if tag < 0x80 else bytes([tag & 0x7F | 0x80, tag >> 7])
    return head + bytes([len(body)]) + body


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


# TOOL_CALL_RESULT whose content has one part of a kind this version does not know:
# it decodes (content []) with one UnknownPartWarning
WARNS = _frame(_ld(22, _ld(1, b"\x08\x15") + _ld(3, b"m") + _ld(4, b"t") + _ld(7, _ld(9, b""))))
WARNED = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "t", "content": []}
FUTURE = b"\x00\x00\x00\x07\x82\x02\x04\x0a\x02\x08\x28"  # an event of a later protocol


def test_a_frame_before_a_refused_one_decodes_once() -> None:
    # frames before a bad one in the same chunk are decoded once: one warning, not two
    decoder = EventDecoder(PROTO_MEDIA_TYPE)
    with pytest.warns(agui_wire.UnknownPartWarning) as record:
        assert decoder.feed(TMC_FRAME + WARNS + b"\x00\x00\x00\x00" + TMC_FRAME) == [TMC, WARNED]
    assert len(record) == 1
    error = decoder.pending_error
    assert isinstance(error, DecodeError)
    assert "empty frame" in str(error)
    assert (error.index, error.frame_offset) == (2, len(TMC_FRAME) + len(WARNS))
    with pytest.raises(DecodeError) as again:
        decoder.feed(TMC_FRAME)
    assert again.value is error


@pytest.mark.parametrize("policy", ["skip", "raw"])
def test_frames_around_a_skipped_event_decode_once(policy: Any) -> None:
    decoder = EventDecoder(PROTO_MEDIA_TYPE, unknown_events=policy)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        events = decoder.feed(WARNS + FUTURE + WARNS)
    kinds = [type(w.message) for w in record]
    assert kinds.count(agui_wire.UnknownPartWarning) == 2
    assert kinds.count(UnknownEventWarning) == (policy == "skip")
    assert events[0] == events[-1] == WARNED
    assert len(events) == (2 if policy == "skip" else 3)
    assert decoder.pending_error is None
    assert decoder.events_read == len(events)


def _outcome(fn: Any, data: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(data))
    except DecodeError as exc:
        return (type(exc).__name__, (str(exc), exc.events))


def test_decode_proto_is_decode_with_the_protobuf_type() -> None:
    # decode_proto's shortcut for bytes with default options (straight to the reader
    # an EventDecoder starts) must say and return what decode() says.
    frame = agui_wire.encode_proto(TMC)
    future = b"\x00\x00\x00\x07\x82\x02\x04\x0a\x02\x08\x28"
    inputs = [
        b"",
        frame,
        frame * 5,
        frame + frame[:3],
        frame + b"\x00\x00\x00\x02\xff\xff" + frame,
        b"\xff\xff\xff\xff",
        frame + future,
    ]
    via_decode = functools.partial(agui_wire.decode, content_type=agui_wire.PROTO_MEDIA_TYPE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownEventWarning)
        for data in inputs:
            for kind in (bytes, bytearray, memoryview):
                assert _outcome(agui_wire.decode_proto, kind(data)) == _outcome(via_decode, data)
