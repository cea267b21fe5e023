"""The per-chunk decoders, Cython vs pure Python: ``FrameDecoder`` and ``SSEDecoder``
(``agui_wire._codec.stream_decoder``) give the same events, errors (class, text,
index, offsets), warnings and counts, call by call, for any stream, any chunking
and the options ``EventDecoder`` passes; the SSE twin also matches the general
SSE parser alone (no fast path), and both twins give the same for any buffer type."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agui_wire._codec import stream_decoder
from agui_wire.errors import DecodeError
from tests.support import captures
from tests.support.twins import fast_or_skip

_fast = fast_or_skip("FrameDecoder")


FRAMES = st.sampled_from([*captures.FRAMES, b"\x00\x00\x00\x09abc"])  # and a cut frame
OPTIONS = st.sampled_from(
    [
        {},
        {"unknown_events": "raw"},
        {"unknown_events": "raise"},
        {"invalid_utf8": "replace", "max_depth": 3},
        {"max_events": 5, "max_frame_size": 4000},
    ]
)


def outcome(call: Any) -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            result: Any = ("ok", call())
        except DecodeError as exc:
            result = (type(exc), str(exc), exc.index, exc.offset, exc.frame_offset)
        except TypeError as exc:
            result = (TypeError, str(exc))
    return result, [(w.category, str(w.message)) for w in record]


def split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    return [stream[a:b] for a, b in itertools.pairwise([0, *points, len(stream)])]


def trace(decoder: Any, chunks: list[Any]) -> list[Any]:
    """What each call gives, and the counts and pending error after it."""
    steps = []
    for chunk in [*chunks, None]:
        call = decoder.close if chunk is None else (lambda c=chunk: decoder.feed(c))
        error = decoder.pending_error
        steps.append((outcome(call), decoder.events_read, error and str(error)))
    return steps


@given(st.lists(FRAMES, max_size=10), st.lists(st.integers(0, 10**6), max_size=5), OPTIONS)
def test_frame_decoder_twins_agree(frames: list[bytes], cuts: list[int], options: Any) -> None:
    chunks = split(b"".join(frames), cuts)
    fast = trace(_fast.FrameDecoder(**options), chunks)
    assert fast == trace(stream_decoder.FrameDecoder(**options), chunks)
    # a mutable chunk (copied payloads) decodes the same
    assert fast == trace(_fast.FrameDecoder(**options), [bytearray(c) for c in chunks])


class GeneralSSEDecoder(stream_decoder.SSEDecoder):
    """The pure SSEDecoder with its reader's fast path off: every chunk goes to the
    general WHATWG parser (what SSEEventReader.feed does when the fast path declines)."""

    __slots__ = ()

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
        if self._failed is not None:
            raise self._failed
        reader = self._reader
        if reader._error is not None:
            raise reader._error
        return self._deliver(reader._decode(reader.parser.feed(chunk)))


BLOCKS = st.sampled_from(captures.SSE_BLOCKS)
SSE_OPTIONS = st.sampled_from(
    [
        {},
        {"max_depth": 30, "max_event_size": 4096},
        {"invalid_utf8": "replace"},
        {"max_events": 3},
    ]
)


@given(st.lists(BLOCKS, max_size=10), st.lists(st.integers(0, 10**6), max_size=5), SSE_OPTIONS)
def test_sse_decoder_twins_agree(blocks: list[bytes], cuts: list[int], options: Any) -> None:
    chunks = split(b"".join(blocks), cuts)
    fast = _fast.SSEDecoder(**options)
    steps = trace(fast, chunks)
    assert steps == trace(stream_decoder.SSEDecoder(**options), chunks)
    # the general parser's answer (no fast path)
    assert steps == trace(GeneralSSEDecoder(**options), chunks)
    # a chunk of any buffer type (read in place by the C fast path) decodes the same
    for kind in (bytearray, lambda c: memoryview(b"xy" + c + b"z")[2:-1]):
        assert steps == trace(_fast.SSEDecoder(**options), [kind(c) for c in chunks])
        assert steps == trace(stream_decoder.SSEDecoder(**options), [kind(c) for c in chunks])
    # what the fast path skipped is accounted for in the parser
    pure = stream_decoder.SSEDecoder(**options)
    trace(pure, chunks)
    for attr in ("events_read", "bytes_fed", "last_event_id", "retry"):
        assert getattr(fast.reader.parser, attr) == getattr(pure.reader.parser, attr)
