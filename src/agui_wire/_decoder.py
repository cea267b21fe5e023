"""Reading events: ``EventDecoder``, the stream iterators and the one-shots, as the
selector gives them.

Strategy: the decoding is the codec's (``_codec.stream_decoder``, whose module doc is
the contract: ``EventDecoder``, ``decode``, ``decode_proto``); this module names what
``selected`` picked for each (the C twin with the extension: ``EventDecoder`` starts
the C per-transport decoders, and the one-shots are C functions, which have no Python
frame) and adds the iterators over a source: ``iter_decode`` (bytes, a binary file,
or chunks) and ``aiter_decode`` (an async iterable of chunks). Memory stays bounded by
the largest frame or event, whatever the length of the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterator
from typing import Any

from ._codec import selected
from ._codec.sources import ByteSource, StreamHead, chunks

__all__ = ["EventDecoder", "aiter_decode", "decode", "decode_proto", "iter_decode"]

# Sans-I/O decoder of one AG-UI stream (contract: _codec.stream_decoder).
EventDecoder = selected.EventDecoder

# One call, no EventDecoder: the selected one-shot (exactly EventDecoder(proto) fed
# data and closed). With the extension it is a C function: one small frame costs
# about what EventDecoder(proto).feed does.
decode_proto = selected.decode_proto

# Every event of a whole capture (bytes, a file, or chunks): bytes with no options
# go to the transport's one-shot (a C function with the extension, which has no
# Python frame); anything else is an EventDecoder fed it and closed.
decode = selected.decode


def iter_decode(
    source: ByteSource, content_type: str | None = None, **options: Any
) -> Iterator[dict[str, Any]]:
    """Events from a live or captured stream, as they complete: ``source`` is bytes,
    a binary file object, or an iterable of byte chunks (``response.iter_bytes()``).
    ``options`` are those of ``EventDecoder``. Memory stays bounded by the largest
    frame or event, whatever the length of the stream. Text with no event that is not
    SSE raises ``DecodeError`` at the end (``sources.not_a_stream``), as ``decode`` does."""
    decoder = EventDecoder(content_type, **options)
    head: StreamHead | None = StreamHead()  # until the first event
    for chunk in chunks(source):
        events = decoder.feed(chunk)
        if head is not None:
            head = _judged(head, chunk, events)
        yield from events
        if decoder.pending_error is not None:  # raise now, not when the next chunk comes
            raise decoder.pending_error
    yield from _closed(decoder, head)


async def aiter_decode(
    source: AsyncIterable[bytes], content_type: str | None = None, **options: Any
) -> Any:
    """``iter_decode`` for an async iterable of byte chunks (``response.aiter_bytes()``)."""
    decoder = EventDecoder(content_type, **options)
    head: StreamHead | None = StreamHead()  # until the first event
    async for chunk in source:
        events = decoder.feed(chunk)
        if head is not None:
            head = _judged(head, chunk, events)
        for event in events:
            yield event
        if decoder.pending_error is not None:
            raise decoder.pending_error
    for event in _closed(decoder, head):
        yield event


def _judged(head: StreamHead, chunk: Any, events: list[dict[str, Any]]) -> StreamHead | None:
    """``head`` with ``chunk`` counted, or None once the stream has given an event."""
    if events:
        return None
    head.add(chunk)
    return head


def _closed(decoder: Any, head: StreamHead | None) -> list[dict[str, Any]]:
    """``decoder.close()``'s events; ``head``'s error when the stream gave none."""
    events: list[dict[str, Any]] = decoder.close()
    if head is not None and not events:
        error = head.error(decoder.content_type)
        if error is not None:
            raise error
    return events
