"""Reading events: ``EventDecoder`` (sans I/O) and the stream and capture decoders.

Strategy: one decoder object per stream, fed bytes split anywhere. For protobuf a
``FrameReader`` cuts frames and each payload goes to the Cython decoder (the
pure-Python twin without the extension); for SSE an ``SSEEventReader`` parses the
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

import warnings
from collections.abc import AsyncIterable, Iterator
from typing import Any, Final, Literal

from ._codec import backend
from ._codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameReader, as_bytes_view, check_max_frame_size
from ._codec.proto_reader import DEFAULT_MAX_DEPTH, check_max_depth
from ._codec.sse_reader import DEFAULT_MAX_EVENT_SIZE, SSEEventReader, check_max_event_size
from ._negotiation import PROTO_MEDIA_TYPE
from ._reader import (
    Source,
    UnknownPolicy,
    Utf8Policy,
    check_policies,
    chunks,
    media_type,
    payload_decoder,
    payload_records,
    sniff,
)
from .errors import (
    DecodeError,
    LimitExceeded,
    SSELimitExceeded,
    StreamClosed,
    UnknownEventWarning,
)

__all__ = [
    "DEFAULT_MAX_BATCH_EVENTS",
    "EventDecoder",
    "aiter_decode",
    "decode",
    "decode_proto",
    "iter_decode",
]

DEFAULT_MAX_BATCH_EVENTS: Final = 1_000_000


class EventDecoder:
    """Sans-I/O decoder of one AG-UI stream (see the module doc for the contract)."""

    __slots__ = (
        "_closed",
        "_count",
        "_decode_payload",
        "_depth",
        "_error",
        "_frames",
        "_max_event_size",
        "_max_events",
        "_max_frame_size",
        "_sse",
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
        check_policies(unknown_events, invalid_utf8)
        if max_events is not None and (type(max_events) is not int or max_events < 0):
            raise ValueError(f"max_events must be None or an int >= 0, not {max_events!r}")
        # every option is checked here, not when the transport is known
        check_max_depth(max_depth)
        check_max_frame_size(max_frame_size)
        check_max_event_size(max_event_size)
        #: The stream's transport; ``None`` until sniffed when none was given.
        self.content_type: str | None = None if content_type is None else media_type(content_type)
        self._unknown = unknown_events
        self._utf8 = invalid_utf8
        self._depth = max_depth
        self._max_frame_size = max_frame_size
        self._max_event_size = max_event_size
        self._max_events = max_events
        self._count = 0
        self._error: DecodeError | None = None
        self._frames: FrameReader | None = None
        # bound once: the per-frame call is the hot loop of a binary stream
        self._decode_payload = payload_decoder(invalid_utf8, max_depth)
        self._sse: SSEEventReader | None = None
        self._closed = False
        if self.content_type is not None:
            self._start(self.content_type)

    def _start(self, content_type: str) -> None:
        self.content_type = content_type
        if content_type == PROTO_MEDIA_TYPE:
            self._frames = backend.FrameReader(self._max_frame_size)
        else:
            errors: Literal["strict", "replace"] = "strict" if self._utf8 == "error" else "replace"
            self._sse = SSEEventReader(
                max_event_size=self._max_event_size, errors=errors, max_depth=self._depth
            )

    @property
    def pending_error(self) -> DecodeError | None:
        """The error this decoder has hit (raised by the next call), or ``None``."""
        if self._error is not None:
            return self._error
        reader = self._frames or self._sse
        return None if reader is None else reader.pending_error

    @property
    def events_read(self) -> int:
        """Events handed out so far."""
        return self._count

    @property
    def last_event_id(self) -> str:
        """SSE: the last ``id:`` seen (for ``Last-Event-ID`` on reconnect); else ``""``."""
        return self._sse.parser.last_event_id if self._sse is not None else ""

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
        """Add ``chunk`` to the stream; return the events it completes."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise StreamClosed("EventDecoder.feed() called after close()")
        if self.content_type is None:
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
        if self._sse is not None:
            return self._deliver(self._sse.feed(chunk))
        frames = self._frames
        assert frames is not None
        payloads = frames.feed(chunk)
        limit = self._max_events
        out: list[dict[str, Any]] = []
        refused: DecodeError | None = None
        if limit is None or self._count + len(payloads) <= limit:
            # The hot path of a binary stream: every frame decodes. From a frame
            # that does not, _payloads locates the error and applies the
            # unknown-event policy; the frames before it are not decoded again.
            decode_payload = self._decode_payload
            append = out.append
            try:
                for payload in payloads:
                    append(decode_payload(payload))
            except DecodeError as exc:
                refused = exc
            else:
                self._count += len(out)
                return out
        rest = payloads[len(out) :]
        # where the first frame of rest starts
        index = frames.frames_read - len(rest)
        offset = frames.offset - sum(4 + len(p) for p in rest)
        return self._payloads(out, rest, index, offset, refused)

    def close(self) -> list[dict[str, Any]]:
        """End of stream: the events still held; ``TruncatedStream`` if a frame is cut."""
        if self._error is not None:
            raise self._error
        self._closed = True
        if self._sse is not None:
            return self._deliver(self._sse.close())
        if self._frames is not None:
            self._frames.close()
        return []

    def _payloads(
        self,
        out: list[dict[str, Any]],
        payloads: list[Any],
        index: int,
        offset: int,
        refused: DecodeError | None,
    ) -> list[dict[str, Any]]:
        # out: the events of the frames before these; refused: what payloads[0]
        # raised, if it was decoded already
        error: DecodeError | None = None
        for record in payload_records(
            payloads, index, offset, self._decode_payload, self._unknown, refused
        ):
            if record.error is not None:
                error = record.error
                break
            if record.event is not None:
                out.append(record.event)
            elif record.unknown is not None:
                warnings.warn(
                    f"skipped an event of a later protocol: {record.unknown}",
                    UnknownEventWarning,
                    stacklevel=3,
                )
        return self._deliver(out, error)

    def _deliver(
        self, events: list[dict[str, Any]], error: DecodeError | None = None
    ) -> list[dict[str, Any]]:
        """Count ``events`` against ``max_events`` and keep the first error for the
        next call, raising it now only when no event precedes it."""
        if self._max_events is not None and self._count + len(events) > self._max_events:
            events = events[: self._max_events - self._count]
            cls = LimitExceeded if self._sse is None else SSELimitExceeded
            error = cls(f"more than max_events={self._max_events} events", index=self._max_events)
        self._count += len(events)
        if error is not None:
            self._error = error
            if not events:
                raise error
        return events


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


def decode(
    source: Source,
    content_type: str | None = None,
    *,
    max_events: int | None = DEFAULT_MAX_BATCH_EVENTS,
    **options: Any,
) -> list[dict[str, Any]]:
    """Every event of a whole capture (bytes, a binary file, or chunks), the format
    sniffed unless ``content_type`` is given. On a bad frame or event the
    ``DecodeError`` raised carries the events before it in ``.events``."""
    decoder = EventDecoder(content_type, max_events=max_events, **options)
    events: list[dict[str, Any]] = []
    try:
        for chunk in chunks(source):
            events += decoder.feed(chunk)
            if decoder.pending_error is not None:
                raise decoder.pending_error
        events += decoder.close()
    except DecodeError as exc:
        exc.events = events
        raise
    return events


def decode_proto(
    data: bytes | bytearray | memoryview,
    *,
    max_events: int | None = DEFAULT_MAX_BATCH_EVENTS,
    **options: Any,
) -> list[dict[str, Any]]:
    """Every event in a buffer of binary frames (``decode`` with the protobuf type)."""
    return decode(data, PROTO_MEDIA_TYPE, max_events=max_events, **options)
