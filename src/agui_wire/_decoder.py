"""Reading events: ``EventDecoder`` (sans I/O) and the stream and capture decoders.

Strategy: one decoder object per stream, fed bytes split anywhere. Once the
transport is known, a chunk is one call into its reader (``_codec.frame_decoder``,
one C call with the extension): for protobuf a ``FrameDecoder`` cuts frames and
decodes each payload from the chunk's memory; for SSE an ``SSEDecoder`` parses the
event stream and orjson the data. With no content type the format is sniffed from
the first byte: a binary stream starts with the high byte of a frame length, which
is 0 for any frame the reference accepts (< 16 MiB), while SSE is text.

Contract, for both transports:

* ``feed(chunk)`` returns the events the chunk completes, in order. A bad frame or
  event is never skipped silently and never loses the good events before it: the
  call returns those and the error (a ``DecodeError`` carrying the frame/event
  ``index`` and the stream byte ``offset``) is raised by the next ``feed()`` or
  ``close()`` — at once when nothing precedes it — and is visible as
  ``pending_error``. A failed decoder stays failed.
* ``close()`` ends the stream: it returns the events still held (an SSE event with
  no trailing blank line) or raises ``TruncatedStream`` for a binary stream that
  ends inside a frame.
* An event from a later protocol (a frame with only unknown arms) follows
  ``unknown_events``: ``"skip"`` (default; warns ``UnknownEventWarning``, as the
  reference client does), ``"raise"`` (``UnknownEventError``) or ``"raw"`` (a RAW
  event with ``source`` ``"agui_wire.unknown_event"`` whose ``event`` holds the
  unknown field numbers and their bytes in base64).
* Limits: ``max_frame_size`` (binary, default: exactly what the reference client
  accepts), ``max_event_size`` (SSE), ``max_depth`` (JSON nesting), ``max_events``
  (events per decoder; unlimited for streams, 1,000,000 for the whole-buffer
  ``decode``/``decode_proto``, which hold every event in memory at once).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Iterator
from typing import Any

from ._codec import backend
from ._codec.framing import as_bytes_view
from ._mediatypes import PROTO_MEDIA_TYPE, media_type
from ._reader import (
    Source,
    UnknownPolicy,
    Utf8Policy,
    check_options,
    chunks,
    sniff,
)
from .errors import DecodeError, StreamClosed
from .schema import DEFAULT_MAX_DEPTH, DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE

__all__ = [
    "EventDecoder",
    "aiter_decode",
    "decode",
    "decode_proto",
    "iter_decode",
]


class EventDecoder:
    """Sans-I/O decoder of one AG-UI stream (see the module doc)."""

    __slots__ = (
        "__dict__",
        "_closed",
        "_depth",
        "_error",
        "_feed",
        "_max_event_size",
        "_max_events",
        "_max_frame_size",
        "_reader",
        "_unknown",
        "_utf8",
        "content_type",
    )

    def __init__(
        self,
        content_type: str | None = None,
        *,
        unknown_events: UnknownPolicy = "skip",
        invalid_utf8: Utf8Policy = "error",
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_events: int | None = None,
    ) -> None:
        # every option is checked here, not when the transport is known (not at all
        # when each is its default, the very object: most decoders, every connection)
        if (
            max_events is not None
            or unknown_events != "skip"
            or invalid_utf8 != "error"
            or max_depth is not DEFAULT_MAX_DEPTH
            or max_frame_size is not DEFAULT_MAX_FRAME_SIZE
            or max_event_size is not DEFAULT_MAX_EVENT_SIZE
        ):
            check_options(
                unknown_events, invalid_utf8, max_depth, max_frame_size, max_event_size, max_events
            )
        #: The stream's transport; ``None`` until sniffed when none was given.
        self.content_type: str | None = None if content_type is None else media_type(content_type)
        self._unknown: UnknownPolicy = unknown_events
        self._utf8: Utf8Policy = invalid_utf8
        self._depth = max_depth
        self._max_frame_size = max_frame_size
        self._max_event_size = max_event_size
        self._max_events = max_events
        self._error: DecodeError | None = None
        self._reader: backend.FrameDecoder | backend.SSEDecoder | None = None
        # the reader's bound feed once the transport is known, until close(): a
        # chunk is one call into it (one C call with the extension)
        self._feed: Callable[[Any], list[dict[str, Any]]] | None = None
        self._closed = False
        if self.content_type is not None:
            self._start(self.content_type)

    def _start(self, content_type: str) -> None:
        self.content_type = content_type
        reader: backend.FrameDecoder | backend.SSEDecoder
        if content_type == PROTO_MEDIA_TYPE:
            reader = backend.FrameDecoder(
                self._max_frame_size,
                invalid_utf8=self._utf8,
                max_depth=self._depth,
                unknown_events=self._unknown,
                max_events=self._max_events,
            )
        else:
            reader = backend.SSEDecoder(
                max_event_size=self._max_event_size,
                invalid_utf8=self._utf8,
                max_depth=self._depth,
                max_events=self._max_events,
            )
        self._reader = reader
        self._feed = feed = reader.feed
        # decoder.feed is now the reader's (an instance attribute wins over a
        # method): a chunk costs no Python frame, only the reader's C call
        self.__dict__["feed"] = feed

    @property
    def pending_error(self) -> DecodeError | None:
        """The error this decoder has hit (raised by the next call), or ``None``."""
        if self._error is not None:
            return self._error
        reader = self._reader
        return None if reader is None else reader.pending_error

    @property
    def events_read(self) -> int:
        """Events handed out so far."""
        return 0 if self._reader is None else self._reader.events_read

    @property
    def last_event_id(self) -> str:
        """SSE: the last ``id:`` seen (for ``Last-Event-ID`` on reconnect); else ``""``."""
        reader = self._reader
        return reader.last_event_id if isinstance(reader, backend.SSEDecoder) else ""

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
        """Add ``chunk`` to the stream; return the events it completes."""
        feed = self._feed
        if feed is not None:
            return feed(chunk)
        if self._error is not None:
            raise self._error
        if self._closed:
            raise StreamClosed("EventDecoder.feed() called after close()")
        # the transport is not known yet
        if type(chunk) is not bytes:
            chunk = as_bytes_view(chunk)  # a TypeError for what is not bytes-like
        try:
            kind = sniff(chunk)
        except DecodeError as exc:
            self._error = exc  # a failed decoder stays failed
            raise
        if kind is None:
            return []
        self._start(kind)
        assert self._feed is not None
        return self._feed(chunk)

    def close(self) -> list[dict[str, Any]]:
        """End of stream: the events still held; ``TruncatedStream`` if a frame is cut."""
        if self._error is not None:
            raise self._error
        self._closed = True
        self._feed = None
        self.__dict__.pop("feed", None)
        return [] if self._reader is None else self._reader.close()


def iter_decode(
    source: Source, content_type: str | None = None, **options: Any
) -> Iterator[dict[str, Any]]:
    """Events from a live or captured stream, as they complete: ``source`` is bytes,
    a binary file object, or an iterable of byte chunks (``response.iter_bytes()``).
    ``options`` are those of ``EventDecoder``. Memory stays bounded by the largest
    frame or event, whatever the length of the stream."""
    decoder = EventDecoder(content_type, **options)
    for chunk in chunks(source):
        yield from decoder.feed(chunk)
        if decoder.pending_error is not None:  # raise now, not when the next chunk comes
            raise decoder.pending_error
    yield from decoder.close()


async def aiter_decode(
    source: AsyncIterable[bytes], content_type: str | None = None, **options: Any
) -> Any:
    """``iter_decode`` for an async iterable of byte chunks (``response.aiter_bytes()``)."""
    decoder = EventDecoder(content_type, **options)
    async for chunk in source:
        for event in decoder.feed(chunk):
            yield event
        if decoder.pending_error is not None:
            raise decoder.pending_error
    for event in decoder.close():
        yield event


# One call, no EventDecoder: the backend's one-shot (exactly EventDecoder(proto) fed
# data and closed; contract in _codec.frame_decoder). With the extension it is a C
# function: one small frame costs about what EventDecoder(proto).feed does.
decode_proto = backend.decode_proto

# Every event of a whole capture (bytes, a file, or chunks): bytes with no options
# go to the transport's one-shot (a C function with the extension, which has no
# Python frame); anything else is an EventDecoder fed it and closed.
decode = backend.decode
