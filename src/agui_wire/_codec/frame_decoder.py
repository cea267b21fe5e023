"""Live decoding per chunk: ``EventDecoder``'s two halves, one call per chunk (pure Python).

Strategy: a live stream often arrives one event per chunk, so what a chunk costs
besides decoding its event is what a live consumer pays. ``FrameDecoder`` is a
``FrameReader`` that decodes each frame's payload as it cuts it and hands back
events; ``SSEDecoder`` is an ``SSEEventReader`` with the event count. The Cython
twins (``agui_wire._fast``; ``agui_wire._codec.backend`` picks one) do a chunk's
common case in one C call: frames are decoded straight from the chunk's memory
(no payload objects, no list of them), and plain SSE blocks are parsed straight
from the bytes while the parser is at a block start; anything else (an error, an
event of a later protocol, a limit, a chunk the SSE fast path does not take) goes
through the functions of this module, so both twins say and do the same.

Contract (``EventDecoder``'s, see ``agui_wire._decoder``): ``feed(chunk)``
returns the events the chunk completes; a bad frame or event never loses the
good events before it: they are returned and the error (located: ``index``,
``offset``, ``frame_offset``) is raised by the next ``feed()``/``close()``, at
once when no event precedes it, and is ``pending_error`` meanwhile; a failed
decoder stays failed. A frame's payload is decoded once: from a refused one on,
the rest of the chunk goes through ``payload_records`` (which applies
``unknown_events``) with the refusal handed on, not decoded again. ``max_events``
bounds the events handed out (``LimitExceeded`` / ``SSELimitExceeded`` at that
index). Framing errors, limits and positions are ``FrameReader``'s.

``decode_proto``, ``decode_sse`` and ``decode`` are the one-shots
(``agui_wire.decode_proto``, ``agui_wire.decode``): a whole capture in one call,
exactly an ``EventDecoder`` fed it and closed (the same events, errors, warnings;
the error raised carries the events before it in ``.events``). The pure twins are
that; ``decode`` of bytes with no options is the transport's one-shot. The Cython
``decode_proto`` cuts and decodes a buffer's frames with no reader object, and
hands a refused frame and the rest to the same functions (``decode_rest``,
``over_limit``, ``framing``'s error builders); the Cython ``decode_sse`` takes a
``bytes`` capture that is plain blocks only (the SSE fast path's, which has no side
effects) and hands anything else, from its start, to the pure twin; the Cython
``decode`` takes bytes with no options to those two C paths. An invalid option, a
file or chunks go to the pure twin.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from .._reader import (
    Source,
    UnknownPolicy,
    Utf8Policy,
    check_options,
    chunks,
    payload_records,
    sniff,
)
from ..errors import DecodeError, LimitExceeded, SSELimitExceeded, UnknownEventWarning
from ..schema import (
    DEFAULT_MAX_BATCH_EVENTS,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_EVENT_SIZE,
    DEFAULT_MAX_FRAME_SIZE,
    FRAME_HEADER_SIZE,
)
from . import proto_reader
from .framing import FrameReader
from .sse_reader import SSEEventReader

if TYPE_CHECKING:
    from .._decoder import EventDecoder

__all__ = [
    "FrameDecoder",
    "SSEDecoder",
    "decode",
    "decode_all",
    "decode_proto",
    "decode_rest",
    "decode_sse",
    "over_limit",
]

Event = dict[str, Any]


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
    def events_read(self) -> int:
        """Events handed out so far."""
        return self._count

    @property
    def pending_error(self) -> DecodeError | None:
        return self._failed or self._error

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[Event]:  # type: ignore[override]
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


def decode_all(reader: FrameDecoder | SSEDecoder | EventDecoder, source: Source) -> list[Event]:
    """Every event of ``source`` (``chunks``) fed to ``reader``, which is then
    closed; the ``DecodeError`` raised carries the events before it in ``.events``."""
    out: list[Event] = []
    try:
        for chunk in chunks(source):
            out += reader.feed(chunk)
            if reader.pending_error is not None:  # the events before it are out
                raise reader.pending_error
        out += reader.close()
    except DecodeError as exc:
        exc.events = out
        raise
    return out


def decode_proto(
    data: Source,
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
    check_options(
        unknown_events, invalid_utf8, max_depth, max_frame_size, max_event_size, max_events
    )
    reader = backend.FrameDecoder(
        max_frame_size,
        invalid_utf8=invalid_utf8,
        max_depth=max_depth,
        unknown_events=unknown_events,
        max_events=max_events,
    )
    return decode_all(reader, data)


def decode_sse(
    data: Source,
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
    check_options(
        unknown_events, invalid_utf8, max_depth, max_frame_size, max_event_size, max_events
    )
    reader = backend.SSEDecoder(
        max_event_size=max_event_size,
        invalid_utf8=invalid_utf8,
        max_depth=max_depth,
        max_events=max_events,
    )
    return decode_all(reader, data)


def decode(
    source: Source,
    content_type: str | None = None,
    *,
    max_events: int | None = DEFAULT_MAX_BATCH_EVENTS,
    **options: Any,
) -> list[Event]:
    """Every event of a whole capture (bytes, a binary file, or chunks), the format
    sniffed unless ``content_type`` is given. On a bad frame or event the
    ``DecodeError`` raised carries the events before it in ``.events``."""
    if type(source) is bytes and not options:
        # the transport's one-shot, which is an EventDecoder fed source and closed
        kind = content_type
        if kind is None:
            try:
                kind = sniff(source)
            except DecodeError:
                kind = None  # raised by the EventDecoder below, as its feed() does
        if kind == PROTO_MEDIA_TYPE:
            return backend.decode_proto(source, max_events=max_events)
        if kind == SSE_MEDIA_TYPE:
            return backend.decode_sse(source, max_events=max_events)
    # here, not at the top: _decoder imports backend, which loads this module
    from .._decoder import EventDecoder

    return decode_all(EventDecoder(content_type, max_events=max_events, **options), source)


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

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[Event]:
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


# Last: the one-shot's reader is the backend's FrameDecoder, and backend takes this
# module's names when the extension is absent (AGUI_WIRE_PURE=1).
from . import backend  # noqa: E402
