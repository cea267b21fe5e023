"""Decoding a stream: ``EventDecoder``, its two per-transport halves, and the one-shots.

Strategy: one decoder object per stream, fed bytes split anywhere. Once the
transport is known, a chunk is one call into a per-transport decoder: for protobuf
a ``FrameDecoder`` (a ``FrameReader`` that decodes each frame's payload as it cuts
it), for SSE an ``SSEDecoder`` (an ``SSEEventReader`` with the event count). With
no content type the format is sniffed from the first byte (``sources.sniff``). A
live stream often arrives one event per chunk, so what a chunk costs besides
decoding its event is what a live consumer pays: ``EventDecoder.feed`` becomes the
per-transport decoder's bound ``feed`` once the transport is known. The Cython twins
(``_stream_decoder.pxi``) do a chunk's common case in one C call: frames are decoded
straight from the chunk's memory (no payload objects, no list of them), and plain SSE
blocks are parsed straight from the bytes while the parser is at a block start;
anything else (an error, an event of a later protocol, a limit, a chunk the SSE fast
path does not take) goes through the functions of this module, so both twins say
and do the same. This module never imports ``selected``: ``EventDecoder.readers``
names the per-transport decoders it starts (the pure ones here; the C twin's
subclass of ``EventDecoder`` names its own), and ``SSEEventReader`` is handed the
C kernel by the C ``SSEDecoder``.

Contract of ``EventDecoder``, for both transports:

* ``feed(chunk)`` returns the events the chunk completes, in order. A bad frame or
  event is never skipped silently and never loses the good events before it: the
  call returns those and the error (a ``DecodeError`` carrying the frame/event
  ``index``, the stream byte ``offset`` and ``frame_offset``) is raised by the next
  ``feed()`` or ``close()`` — at once when nothing precedes it — and is visible as
  ``pending_error``. A failed decoder stays failed.
* ``close()`` ends the stream: it returns the events still held (an SSE event with
  no trailing blank line) or raises ``TruncatedStream`` for a binary stream that
  ends inside a frame.
* An event from a later protocol (a frame with only unknown arms) follows
  ``unknown_events``: ``"skip"`` (default; warns ``UnknownEventWarning``, as the
  reference client does), ``"raise"`` (``UnknownEventError``) or ``"raw"`` (a RAW
  event with ``source`` ``"agui_wire.unknown_event"`` whose ``event`` holds the
  unknown field numbers and their bytes in base64). A frame's payload is decoded
  once: from a refused one on, the rest of the chunk goes through
  ``records.payload_records`` with the refusal handed on, not decoded again.
* Limits: ``max_frame_size`` (binary, default: exactly what the reference client
  accepts), ``max_event_size`` (SSE), ``max_depth`` (JSON nesting), ``max_events``
  (events per decoder, ``LimitExceeded`` / ``SSELimitExceeded`` at that index;
  unlimited for streams, ``DEFAULT_MAX_BATCH_EVENTS`` for the whole-buffer
  one-shots, which hold every event in memory at once). Every option is checked
  when the decoder is made (``options.check_options``).

``decode_proto``, ``decode_sse`` and ``decode`` are the one-shots
(``agui_wire.decode_proto``, ``agui_wire.decode``): a whole capture in one call,
exactly an ``EventDecoder`` fed it and closed (the same events, errors, warnings;
the error raised carries the events before it in ``.events``), then, when that gave
no event, judged by its first bytes: text that is not SSE is ``not_a_stream``'s
``DecodeError``, not ``[]`` (``sources``). The pure twins are
that. The Cython ``decode_proto`` cuts and decodes a buffer's frames with no reader
object, and hands a refused frame and the rest to the same functions
(``decode_rest``, ``over_limit``, ``framing``'s error builders); the Cython
``decode_sse`` takes a ``bytes`` capture that is plain blocks only (the SSE fast
path's, which has no side effects); the Cython ``decode`` takes bytes with no options
to those two C paths. Anything else (an invalid option, a file, chunks) is the C
``EventDecoder`` fed it and closed (``decode_all``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple, Protocol, cast

from .._compression import GZIP_HINT, GZIP_MAGIC
from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, media_type
from ..errors import (
    DecodeError,
    LimitExceeded,
    SSELimitExceeded,
    StreamClosed,
    UnknownEventWarning,
)
from ..schema import (
    DEFAULT_MAX_BATCH_EVENTS,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_EVENT_SIZE,
    DEFAULT_MAX_FRAME_SIZE,
    FRAME_HEADER_SIZE,
)
from . import proto_reader
from .framing import FrameReader, as_bytes_view
from .options import UnknownPolicy, Utf8Policy, check_options
from .records import payload_records
from .sources import Buffer, ByteSource, StreamHead, chunks, sniff
from .sse_reader import SSEEventReader

__all__ = [
    "ChunkDecoder",
    "EventDecoder",
    "FrameDecoder",
    "Readers",
    "SSEDecoder",
    "bound_decoder",
    "decode",
    "decode_all",
    "decode_proto",
    "decode_rest",
    "decode_sse",
    "decode_whole",
    "over_limit",
]

Event = dict[str, Any]


class ChunkDecoder(Protocol):
    """What ``EventDecoder`` drives and ``decode_all`` feeds: bytes in, events out."""

    @property
    def content_type(self) -> str | None: ...

    @property
    def pending_error(self) -> DecodeError | None: ...

    @property
    def events_read(self) -> int: ...

    def feed(self, chunk: Buffer) -> list[Event]: ...

    def close(self) -> list[Event]: ...


class SSEChunkDecoder(ChunkDecoder, Protocol):
    @property
    def last_event_id(self) -> str: ...


def bound_decoder(
    decode_payload: Callable[..., Event], invalid_utf8: str, max_depth: int
) -> Callable[[Any], Event]:
    """``decode_payload`` with these options bound (itself for the defaults)."""
    if invalid_utf8 == "error" and max_depth == DEFAULT_MAX_DEPTH:
        return decode_payload
    return functools.partial(decode_payload, invalid_utf8=invalid_utf8, max_depth=max_depth)


def decode_rest(
    events: list[Event],
    payloads: list[Any],
    refused: DecodeError,
    index: int,
    offset: int,
    decode_payload: Callable[[Any], Event],
    unknown_events: UnknownPolicy,
    stacklevel: int,
) -> DecodeError | None:
    """From the first payload that did not decode (``payloads[0]``, frame ``index``
    at stream byte ``offset``, which raised ``refused``): append to ``events``
    what the policy makes of it and the events of the payloads after it; return
    the first error (located), or ``None`` when every refusal was a skipped
    event of a later protocol. ``stacklevel``: the warning's, from here to the
    caller of ``feed`` (``EventDecoder.feed`` is the reader's bound ``feed``)."""
    for record in payload_records(payloads, index, offset, decode_payload, unknown_events, refused):
        if record.error is not None:
            return record.error
        if record.event is not None:
            events.append(record.event)
        elif record.unknown is not None:
            warnings.warn(
                f"skipped an event of a later protocol: {record.unknown}",
                UnknownEventWarning,
                stacklevel=stacklevel,
            )
    return None


def over_limit(events: list[Event], count: int, max_events: int, sse: bool) -> LimitExceeded:
    """Cut ``events`` (handed out after ``count`` others) at ``max_events``; the error."""
    del events[max_events - count :]
    cls = SSELimitExceeded if sse else LimitExceeded
    return cls(f"more than max_events={max_events} events", index=max_events)


class FrameDecoder(FrameReader):
    """Frames in, events out, per chunk (see the module doc)."""

    __slots__ = ("_count", "_decode", "_failed", "_max_events", "_unknown")

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        *,
        invalid_utf8: Utf8Policy = "error",
        max_depth: int = DEFAULT_MAX_DEPTH,
        unknown_events: UnknownPolicy = "skip",
        max_events: int | None = None,
    ) -> None:
        super().__init__(max_frame_size)
        # the options are EventDecoder's, checked there
        self._decode = bound_decoder(proto_reader.decode_payload, invalid_utf8, max_depth)
        self._unknown: UnknownPolicy = unknown_events
        self._max_events = max_events
        self._count = 0
        self._failed: DecodeError | None = None

    @property
    def content_type(self) -> str:
        """The transport it reads."""
        return PROTO_MEDIA_TYPE

    @property
    def events_read(self) -> int:
        """Events handed out so far."""
        return self._count

    @property
    def pending_error(self) -> DecodeError | None:
        return self._failed or self._error

    def feed(self, chunk: Buffer) -> list[Event]:  # type: ignore[override]
        """Add ``chunk`` to the stream; return the events of the frames it completes."""
        if self._failed is not None:
            raise self._failed
        index, offset = self._frames, self._offset
        payloads = FrameReader.feed(self, chunk)
        decode = self._decode
        events: list[Event] = []
        error: DecodeError | None = None
        try:
            for payload in payloads:
                events.append(decode(payload))
        except DecodeError as exc:
            done = len(events)
            offset += sum(FRAME_HEADER_SIZE + len(p) for p in payloads[:done])
            rest = payloads[done:]
            error = decode_rest(events, rest, exc, index + done, offset, decode, self._unknown, 3)
        return self._deliver(events, error)

    def _deliver(self, events: list[Event], error: DecodeError | None) -> list[Event]:
        limit = self._max_events
        if limit is not None and self._count + len(events) > limit:
            error = over_limit(events, self._count, limit, False)
        self._count += len(events)
        if error is not None:
            self._failed = error
            if not events:
                raise error
        return events

    def close(self) -> list[Event]:  # type: ignore[override]
        """End of stream: ``[]``, or ``TruncatedStream`` if it ended inside a frame."""
        if self._failed is not None:
            raise self._failed
        FrameReader.close(self)
        return []


class SSEDecoder:
    """SSE in, events out, per chunk (see the module doc)."""

    __slots__ = ("_count", "_failed", "_max_events", "_reader")

    def __init__(
        self,
        *,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        invalid_utf8: Utf8Policy = "error",
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_events: int | None = None,
    ) -> None:
        errors: Literal["strict", "replace"] = "strict" if invalid_utf8 == "error" else "replace"
        self._reader = SSEEventReader(
            max_event_size=max_event_size, errors=errors, max_depth=max_depth
        )
        self._max_events = max_events
        self._count = 0
        self._failed: DecodeError | None = None

    @property
    def reader(self) -> SSEEventReader:
        """The ``SSEEventReader`` (its ``parser``: ``last_event_id``, ``retry``...)."""
        return self._reader

    @property
    def content_type(self) -> str:
        """The transport it reads."""
        return SSE_MEDIA_TYPE

    @property
    def events_read(self) -> int:
        """Events handed out so far."""
        return self._count

    @property
    def last_event_id(self) -> str:
        """The last ``id:`` seen (for ``Last-Event-ID`` on reconnect)."""
        return self._reader.parser.last_event_id

    @property
    def pending_error(self) -> DecodeError | None:
        return self._failed or self._reader.pending_error

    def feed(self, chunk: Buffer) -> list[Event]:
        """Add ``chunk`` to the stream; return the events it completes."""
        if self._failed is not None:
            raise self._failed
        return self._deliver(self._reader.feed(chunk))

    def close(self) -> list[Event]:
        """End of stream: the events still held, including a last one without a blank line."""
        if self._failed is not None:
            raise self._failed
        return self._deliver(self._reader.close())

    def _deliver(self, events: list[Event]) -> list[Event]:
        limit = self._max_events
        if limit is not None and self._count + len(events) > limit:
            self._failed = over_limit(events, self._count, limit, True)
            if not events:
                raise self._failed
        self._count += len(events)
        return events


class Readers(NamedTuple):
    """The per-transport decoders an ``EventDecoder`` starts (classes, or factories)."""

    frames: Callable[..., ChunkDecoder]
    sse: Callable[..., SSEChunkDecoder]


class EventDecoder:
    """Sans-I/O decoder of one AG-UI stream (see the module doc)."""

    #: The per-transport decoders it starts: here the pure twins; the C twin's
    #: subclass (``agui_wire._fast.EventDecoder``) names the C ones.
    readers: ClassVar[Readers] = Readers(FrameDecoder, SSEDecoder)

    __slots__ = (
        "__dict__",
        "_closed",
        "_depth",
        "_error",
        "_feed",
        "_held",
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
        self._reader: ChunkDecoder | None = None
        # the reader's bound feed once the transport is known, until close(): a
        # chunk is one call into it (one C call with the extension)
        self._feed: Callable[[Any], list[dict[str, Any]]] | None = None
        self._closed = False
        self._held = b""  # a lone first byte 0x1f, until the next byte names the error
        if self.content_type is not None:
            self._start(self.content_type)

    def _start(self, content_type: str) -> None:
        self.content_type = content_type
        readers = self.readers
        reader: ChunkDecoder
        if content_type == PROTO_MEDIA_TYPE:
            reader = readers.frames(
                self._max_frame_size,
                invalid_utf8=self._utf8,
                max_depth=self._depth,
                unknown_events=self._unknown,
                max_events=self._max_events,
            )
        else:
            reader = readers.sse(
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
        if reader is None or self.content_type != SSE_MEDIA_TYPE:
            return ""
        return cast(SSEChunkDecoder, reader).last_event_id

    def feed(self, chunk: Buffer) -> list[dict[str, Any]]:
        """Add ``chunk`` to the stream; return the events it completes."""
        feed = self._feed
        if feed is not None:
            return feed(chunk)
        if self._error is not None:
            raise self._error
        if self._closed:
            raise StreamClosed("EventDecoder.feed() called after close()")
        # the transport is not known yet
        try:
            if type(chunk) is bytes and not self._held:
                kind = sniff(chunk, final=False)
                held = chunk
            else:  # a TypeError for what is not bytes-like; the view is released
                with as_bytes_view(chunk) as view:  # (a stored error must not pin it)
                    held = self._held + bytes(view[: 2 - len(self._held)])
                    kind = sniff(held, final=False)
        except DecodeError as exc:
            self._error = exc  # a failed decoder stays failed
            raise
        if kind is None:  # no bytes yet, or a lone 0x1f (sniff raises for it later)
            self._held = held
            return []
        self._start(kind)
        assert self._feed is not None
        return self._feed(chunk)

    def close(self) -> list[dict[str, Any]]:
        """End of stream: the events still held; ``TruncatedStream`` if a frame is cut."""
        if self._error is not None:
            raise self._error
        if self._held:  # the stream was one byte, 0x1f: what sniff says of it
            try:
                sniff(self._held)
            except DecodeError as exc:
                self._error = exc
                raise
        self._closed = True
        self._feed = None
        self.__dict__.pop("feed", None)
        return [] if self._reader is None else self._reader.close()


def decode_all(reader: ChunkDecoder, source: ByteSource) -> list[Event]:
    """Every event of ``source`` (``chunks``) fed to ``reader``, which is then
    closed; the ``DecodeError`` raised carries the events before it in ``.events``.
    SSE that gave no event and is text of another kind raises
    ``sources.not_a_stream``'s error."""
    out: list[Event] = []
    head = StreamHead()
    try:
        for chunk in chunks(source):
            head.add(chunk)
            out += reader.feed(chunk)
            if reader.pending_error is not None:  # the events before it are out
                raise reader.pending_error
        out += reader.close()
        if not out:
            error = head.error(reader.content_type)
            if error is not None:
                raise error
    except DecodeError as exc:
        if head.data[:2] == GZIP_MAGIC and not out and GZIP_HINT not in exc.reason:
            exc = exc.with_hint(GZIP_HINT)  # a compressed capture, read as SSE
            exc.events = out
            raise exc from None
        exc.events = out
        raise
    return out


def decode_whole(
    decoder: Callable[..., ChunkDecoder],
    content_type: str,
    data: ByteSource,
    max_events: int | None,
    unknown_events: UnknownPolicy,
    invalid_utf8: Utf8Policy,
    max_depth: int,
    max_frame_size: int,
    max_event_size: int,
) -> list[Event]:
    """The body of ``decode_proto`` and ``decode_sse`` (and their C twins' way for
    what their C paths do not take): ``decoder`` (an ``EventDecoder`` class: this
    module's, or the C twin's) for ``content_type`` with the one-shots' options, which
    it checks, fed ``data`` and closed."""
    reader = decoder(
        content_type,
        unknown_events=unknown_events,
        invalid_utf8=invalid_utf8,
        max_depth=max_depth,
        max_frame_size=max_frame_size,
        max_event_size=max_event_size,
        max_events=max_events,
    )
    return decode_all(reader, data)


def decode_proto(
    data: ByteSource,
    *,
    max_events: int | None = DEFAULT_MAX_BATCH_EVENTS,
    unknown_events: UnknownPolicy = "skip",
    invalid_utf8: Utf8Policy = "error",
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
) -> list[Event]:
    """Every event in a buffer of binary frames (``decode`` with the protobuf type;
    the options are ``EventDecoder``'s, ``max_events`` bounds the events held)."""
    return decode_whole(
        EventDecoder,
        PROTO_MEDIA_TYPE,
        data,
        max_events,
        unknown_events,
        invalid_utf8,
        max_depth,
        max_frame_size,
        max_event_size,
    )


def decode_sse(
    data: ByteSource,
    *,
    max_events: int | None = DEFAULT_MAX_BATCH_EVENTS,
    unknown_events: UnknownPolicy = "skip",
    invalid_utf8: Utf8Policy = "error",
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
) -> list[Event]:
    """Every event of a whole SSE capture (``decode`` with the SSE type; the
    options are ``EventDecoder``'s, ``max_events`` bounds the events held)."""
    return decode_whole(
        EventDecoder,
        SSE_MEDIA_TYPE,
        data,
        max_events,
        unknown_events,
        invalid_utf8,
        max_depth,
        max_frame_size,
        max_event_size,
    )


def decode(
    source: ByteSource,
    content_type: str | None = None,
    *,
    max_events: int | None = DEFAULT_MAX_BATCH_EVENTS,
    **options: Any,
) -> list[Event]:
    """Every event of a whole capture (bytes, a binary file, or chunks), the format
    sniffed unless ``content_type`` is given. On a bad frame or event the
    ``DecodeError`` raised carries the events before it in ``.events``."""
    return decode_all(EventDecoder(content_type, max_events=max_events, **options), source)
