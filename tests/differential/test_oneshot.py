"""The one-shot decoders against the streaming path: ``decode_proto(data, **options)``
(the Cython twin, its pure twin, and the public name on this backend) gives exactly
what ``EventDecoder(proto, **options)`` fed ``data`` and closed gives: the same events,
the same error (class, text, index, offsets) carrying the events before it in
``.events``, the same warnings, the same ``ValueError``/``TypeError`` for a bad
option or buffer. The reference readers are the pure twin's ``FrameDecoder`` and the
backend's (what ``EventDecoder`` starts)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import agui_wire
from agui_wire import EventDecoder
from agui_wire._codec import stream_decoder
from agui_wire._codec.sources import StreamHead
from agui_wire.errors import DecodeError
from tests.support import captures
from tests.support.captures import BIG, EMPTY, FUTURE, NOT_PROTOBUF
from tests.support.corpus import CORPUS
from tests.support.twins import fast

_fast = fast("decode")

PROTO = agui_wire.PROTO_MEDIA_TYPE


GOOD = captures.GOOD_FRAMES
FRAMES = st.sampled_from(captures.FRAMES)
# how the buffer ends: whole, or cut inside a length prefix or a body
TAILS = st.sampled_from([b"", b"\x00", b"\x00\x00\x00", b"\x00\x00\x00\x09abc", GOOD[0][:-1]])
OPTIONS = st.sampled_from(
    [
        {},
        {"unknown_events": "raw"},
        {"unknown_events": "raise"},
        {"invalid_utf8": "replace", "max_depth": 3},
        {"max_events": 5, "max_frame_size": 4000},
        {"max_events": 0},
        {"max_events": 1, "unknown_events": "raw"},
        {"max_events": None, "max_frame_size": 0},
        {"max_event_size": 1},
    ]
)
BAD_OPTIONS = [
    {"max_events": -1},
    {"max_events": True},
    {"unknown_events": "drop"},
    {"unknown_events": "drop", "max_events": -1},
    {"invalid_utf8": "ignore"},
    {"max_depth": 0},
    {"max_frame_size": -1},
    {"max_frame_size": 1 << 32},
    {"max_event_size": 0},
    # equal to the defaults, but not ints
    {"max_depth": 1024.0},
    {"max_frame_size": 10 * 1024 * 1024 - 4.0},
    {"max_event_size": 10 * 1024 * 1024 + 0.0},
    {"max_events": 1_000_000.0},
]


def outcome(call: Any) -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            result: Any = ("ok", call())
        except DecodeError as exc:
            result = (type(exc), str(exc), exc.index, exc.offset, exc.frame_offset, exc.events)
        except (TypeError, ValueError) as exc:
            result = (type(exc), str(exc))
    return result, [(w.category, str(w.message)) for w in record]


def streamed(make: Any, data: Any, options: dict[str, Any]) -> Any:
    """``data`` fed to a reader made by ``make(**options)`` and closed, as the
    whole-buffer decoders report it (the error carries the events before it)."""
    options = {"max_events": agui_wire.schema.DEFAULT_MAX_BATCH_EVENTS, **options}
    return lambda: stream_decoder.decode_all(make(**options), data)


def event_decoder(**options: Any) -> EventDecoder:
    return EventDecoder(PROTO, **options)


def pure_reader(**options: Any) -> stream_decoder.FrameDecoder:
    # the pure FrameDecoder takes the reader's options, checked by EventDecoder
    EventDecoder(PROTO, **options)
    options.pop("max_event_size", None)
    return stream_decoder.FrameDecoder(**options)


def one_shots() -> list[Any]:
    fns = [agui_wire.decode_proto, stream_decoder.decode_proto]
    if _fast is not None:
        fns.append(_fast.decode_proto)
    return fns


@given(st.lists(FRAMES, max_size=8), TAILS, OPTIONS)
# which error wins: a refused frame before a refused length, before the end inside a frame
@example([EMPTY, GOOD[0]], b"", {"max_events": None, "max_frame_size": 0})
@example([NOT_PROTOBUF, GOOD[1], BIG], b"", {"max_events": 5, "max_frame_size": 4000})
@example([GOOD[0], FUTURE, BIG], b"", {"max_events": 5, "max_frame_size": 4000})
@example([GOOD[0], EMPTY], b"\x00\x00\x00", {})
@example([GOOD[0], GOOD[1], EMPTY], b"", {"max_events": 1})
@example([GOOD[0], GOOD[1]], b"\x00", {"max_events": 1})
@example([FUTURE, FUTURE, GOOD[2]], GOOD[0][:-1], {"unknown_events": "raw"})
def test_decode_proto_is_the_stream_fed_and_closed(
    frames: list[bytes], tail: bytes, options: dict[str, Any]
) -> None:
    data = b"".join(frames) + tail
    want = outcome(streamed(event_decoder, data, options))
    assert want == outcome(streamed(pure_reader, data, options))
    for fn in one_shots():
        for kind in (bytes, bytearray, memoryview):
            assert outcome(lambda f=fn, k=kind: f(k(data), **options)) == want, (fn, kind)
    # chunks (an iterable) are the pure twin's path: what the stream gives them
    chunks = [data[: len(data) // 2], data[len(data) // 2 :]]
    want = outcome(streamed(event_decoder, chunks, options))
    for fn in one_shots():
        assert outcome(lambda f=fn: f(iter(chunks), **options)) == want


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=repr)
def test_decode_proto_refuses_an_option_as_event_decoder_does(options: dict[str, Any]) -> None:
    want = outcome(lambda: EventDecoder(PROTO, **options))
    assert want[0][0] is ValueError
    for fn in one_shots():
        assert outcome(lambda f=fn: f(GOOD[0], **options)) == want


def test_decode_proto_refuses_what_is_not_a_buffer_as_the_stream_does() -> None:
    strided = memoryview(GOOD[0] * 2)[::2]
    for data in (strided, 5, "text"):
        want = outcome(streamed(event_decoder, data, {}))
        assert want[0][0] is TypeError
        for fn in one_shots():
            assert outcome(lambda f=fn, d=data: f(d)) == want


def test_a_one_shot_error_carries_the_events_before_it() -> None:
    data = GOOD[0] + GOOD[1] + b"\x00\x00\x00\x00" + GOOD[2]
    for fn in one_shots():
        with pytest.raises(DecodeError) as info:
            fn(data)
        assert info.value.index == 2
        assert info.value.frame_offset == len(GOOD[0]) + len(GOOD[1])
        assert info.value.events == agui_wire.decode_proto(GOOD[0] + GOOD[1])


BLOCKS = st.sampled_from(captures.SSE_BLOCKS)
SSE_OPTIONS = st.sampled_from(
    [
        {},
        {"max_depth": 30, "max_event_size": 4096},
        {"invalid_utf8": "replace"},
        {"max_events": 3},
        {"max_events": 0},
        {"max_events": None, "unknown_events": "raise", "max_frame_size": 0},
    ]
)
SSE = agui_wire.SSE_MEDIA_TYPE
PLAIN = agui_wire.encode_sse(CORPUS[0]) + agui_wire.encode_sse(CORPUS[1])


def sse_one_shots() -> list[Any]:
    fns = [
        stream_decoder.decode_sse,
        *(lambda data, f=fn, **o: f(data, SSE, **o) for fn in decoders()),
    ]
    if _fast is not None:
        fns.append(_fast.decode_sse)
    return fns


@given(st.lists(BLOCKS, max_size=8), SSE_OPTIONS)
# plain blocks only (the Cython twin's own path), over max_events or not
@example([PLAIN], {"max_events": 1})
@example([PLAIN], {"max_events": 2})
@example([PLAIN, b"data: [1]\n\n"], {})
def test_decode_sse_is_the_stream_fed_and_closed(blocks: list[bytes], options: Any) -> None:
    data = b"".join(blocks)
    want = outcome(lambda: stream_decoder.decode_all(EventDecoder(SSE, **options), data))
    assert want == outcome(
        lambda: stream_decoder.decode_all(
            stream_decoder.SSEDecoder(
                **{
                    k: v
                    for k, v in options.items()
                    if k not in ("unknown_events", "max_frame_size")
                }
            ),
            data,
        )
    )
    options = {"max_events": agui_wire.schema.DEFAULT_MAX_BATCH_EVENTS, **options}
    for fn in sse_one_shots():
        assert outcome(lambda f=fn: f(data, **options)) == want, fn
    # sniffed (an SSE capture starts with text), and given as chunks
    if data and data[0] != 0:
        assert outcome(lambda: agui_wire.decode(data, **options)) == want
    assert outcome(lambda: agui_wire.decode([data], SSE, **options)) == want


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=repr)
def test_decode_refuses_an_option_as_event_decoder_does(options: dict[str, Any]) -> None:
    want = outcome(lambda: EventDecoder(SSE, **options))
    assert want[0][0] is ValueError
    for fn in sse_one_shots():
        assert outcome(lambda f=fn: f(PLAIN, **options)) == want
    # also when the content type is sniffed, or is not one
    assert outcome(lambda: agui_wire.decode(PLAIN, **options)) == want
    assert outcome(lambda: agui_wire.decode(PLAIN, "text/plain", **options)) == want


@pytest.mark.parametrize(
    "data", [b"", b"\x01\x02", b"\x00\x00\x00", GOOD[0] + GOOD[1], PLAIN, b"\xef\xbb\xbf" + PLAIN]
)
@pytest.mark.parametrize("content_type", [None, PROTO, SSE, SSE + "; charset=utf-8"])
def test_decode_of_bytes_is_the_event_decoder_fed_and_closed(
    data: bytes, content_type: Any
) -> None:
    def stream() -> list[Any]:
        decoder = EventDecoder(content_type, max_events=1_000_000)
        events: list[Any] = []
        head = StreamHead()
        head.add(data)
        try:
            events += decoder.feed(data)
            if decoder.pending_error is not None:
                raise decoder.pending_error
            events += decoder.close()
            error = None if events else head.error(decoder.content_type)
            if error is not None:  # text that is no stream (sources.not_a_stream)
                raise error
        except DecodeError as exc:
            exc.events = events
            raise
        return events

    want = outcome(stream)
    for fn in decoders():
        assert outcome(lambda f=fn: f(data, content_type)) == want, fn
        for options in ({"max_events": 1}, {"max_events": None}, {"max_depth": 3}):
            want_with = outcome(
                lambda o=options: stream_decoder.decode_all(EventDecoder(content_type, **o), data)
            )
            assert outcome(lambda f=fn, o=options: f(data, content_type, **o)) == want_with


def decoders() -> list[Any]:
    """``decode``: the public name, the pure twin, the Cython twin."""
    fns = [agui_wire.decode, stream_decoder.decode]
    if _fast is not None:
        fns.append(_fast.decode)
    return fns


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=repr)
def test_decode_of_anything_refuses_a_bad_option_as_event_decoder_does(
    options: dict[str, Any],
) -> None:
    for content_type in (None, PROTO, SSE):
        want = outcome(lambda c=content_type: EventDecoder(c, **options))
        for fn in decoders():
            for data in (PLAIN, [PLAIN], GOOD[0]):
                assert outcome(lambda f=fn, d=data, c=content_type: f(d, c, **options)) == want
    for fn in decoders():  # an unknown option: EventDecoder's TypeError
        with pytest.raises(TypeError, match="bogus"):
            fn(PLAIN, bogus=1)
