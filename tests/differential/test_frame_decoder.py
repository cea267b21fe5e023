"""The per-chunk decoders, Cython vs pure Python: ``FrameDecoder`` and ``SSEDecoder``
(``agui_wire._codec.frame_decoder``) give the same events, errors (class, text,
index, offsets), warnings and counts, call by call, for any stream, any chunking
and the options ``EventDecoder`` passes; the SSE twin also matches the SSE reader
fed ``bytearray`` chunks (which never take the fast path)."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agui_wire
from agui_wire._codec import frame_decoder
from agui_wire.errors import DecodeError
from tests.support.corpus import CORPUS

try:
    from agui_wire import _fast
except ImportError:  # pragma: no cover - the extension is optional
    _fast = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(
    _fast is None or not hasattr(_fast, "FrameDecoder"),
    reason="agui_wire._fast not built (python setup.py build_ext --inplace)",
)


def _ld(number: int, body: bytes) -> bytes:
    tag = number << 3 | 2
    head = bytes([tag]) if tag < 0x80 else bytes([tag & 0x7F | 0x80, tag >> 7])
    return head + bytes([len(body)]) + body


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


GOOD = [agui_wire.encode_proto(e) for e in CORPUS[:40]]
FRAMES = st.sampled_from(
    [
        *GOOD,
        # a content part of an unknown kind: decodes, with a warning
        _frame(_ld(22, _ld(1, b"\x08\x15") + _ld(3, b"m") + _ld(4, b"t") + _ld(7, _ld(9, b"")))),
        b"\x00\x00\x00\x07\x82\x02\x04\x0a\x02\x08\x28",  # an event of a later protocol
        b"\x00\x00\x00\x00",  # empty frame: refused
        _frame(b"\xff\xff"),  # not protobuf
        _frame(_ld(7, _ld(1, b"\x08\x06") + _ld(2, _ld(3, b"\xff")))),  # bad UTF-8
        b"\x00\x01\x00\x00",  # over max_frame_size below
        b"\x00\x00\x00\x09abc",  # cut short (at the end of a stream)
    ]
)
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
    assert fast == trace(frame_decoder.FrameDecoder(**options), chunks)
    # a mutable chunk (copied payloads) decodes the same
    assert fast == trace(_fast.FrameDecoder(**options), [bytearray(c) for c in chunks])


EVENT = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}'
BLOCKS = st.sampled_from(
    [
        *(agui_wire.encode_sse(e) for e in CORPUS[:20]),
        b"data: " + EVENT + b"\n\n",
        b"data:" + EVENT + b"\n\n",
        b"data: " + EVENT + b"\r\n\r\n",
        b"id: 7\ndata: " + EVENT + b"\n\n",
        b": keep-alive\n\n",
        b'data: {"type":\ndata: "CUSTOM","name":"n","value":1}\n\n',
        b"\n",
        b"data: [1]\n\n",
        b"data: {bad\n\n",
        b'data: {"type":"CUSTOM","name":"\xff","value":1}\n\n',
        b'data: {"type":"CUSTOM","name":"n","value":' + b"[" * 40 + b"]" * 40 + b"}\n\n",
        b'data: {"type":"CUSTOM","name":"' + b"x" * 4053 + b'","value":1}\n\n',
        b"\xef\xbb\xbf",
        b"data: " + EVENT,
    ]
)
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
    assert steps == trace(frame_decoder.SSEDecoder(**options), chunks)
    # bytearray chunks never take the fast path: the general parser's answer
    assert steps == trace(_fast.SSEDecoder(**options), [bytearray(c) for c in chunks])
    # what the fast path skipped is accounted for in the parser
    pure = frame_decoder.SSEDecoder(**options)
    trace(pure, chunks)
    for attr in ("events_read", "bytes_fed", "last_event_id", "retry"):
        assert getattr(fast.reader.parser, attr) == getattr(pure.reader.parser, attr)
