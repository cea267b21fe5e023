"""Reading a stream record by record, with positions, past bad frames on request; sans I/O.

Strategy: ``RecordReader`` is fed the bytes of one stream (binary frames or SSE)
split anywhere and hands back one ``Record`` per frame or SSE event: its index,
stream byte offset, length (binary), and either the event, the ``DecodeError``
that frame raised (located: index, offset, frame_offset), or the later-protocol
event it skipped. It drives the same sans-I/O pieces as ``EventDecoder``
(``FrameReader`` + the payload decoder; ``SSEParser`` + ``decode_sse_message``),
one record per frame, and ``EventDecoder`` locates its errors and applies the
unknown-event policy with the same ``payload_records`` (``_codec.records``), so the
two cannot drift.
``read_records`` is the iterator over a source (bytes, a binary file, chunks).

Contract:

* Without ``keep_going`` the first error record ends the stream: every record
  before it has been returned. With ``keep_going`` the reader goes on where the
  stream can be trusted: binary, a payload that does not decode is reported and
  skipped (the framing is intact); SSE, an event whose data is not a JSON object
  with a ``type`` is reported and skipped, and an event the parser refuses
  (invalid UTF-8, over ``max_event_size``) is reported and reading resumes after
  the next blank line (the event boundary), with a fresh parser.
* ``Record.fatal``: nothing after this error can be read, even with
  ``keep_going`` — a length prefix over ``max_frame_size`` (trusting it would be
  a guess), a stream cut mid-frame, a first byte that is neither binary nor text.
* After the stream has ended on an error, ``feed()``/``close()`` raise that
  error (a stopped reader stays stopped); ``feed()`` after ``close()`` raises
  ``StreamClosed``.
* ``unknown_events``: ``"skip"`` (default) gives a record with ``unknown`` set
  (no event, no error, no warning: the record says it); ``"raise"`` an
  ``UnknownEventError`` record (skipped with ``keep_going``); ``"raw"`` a RAW
  event as ``EventDecoder`` gives.
* Positions: ``offset`` is where the frame (its length prefix) or the SSE
  event's block starts in the stream (a BOM counts); binary ``length`` is
  4 + payload; SSE ``length`` is ``None`` (a block ends at a blank line, which
  the parser does not report). After a resync, SSE indices go on counting from
  the refused event.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from typing import Any, Final, Literal

from ._codec import selected
from ._codec.framing import as_bytes_view
from ._codec.options import UnknownPolicy, Utf8Policy, check_options
from ._codec.records import Record, payload_records
from ._codec.sources import Buffer, ByteSource, chunks, sniff
from ._codec.sse_reader import (
    WINDOW,
    SSEMessage,
    SSEParser,
    decode_sse_message,
)
from ._codec.stream_decoder import bound_decoder
from ._mediatypes import SSE_MEDIA_TYPE, media_type
from .errors import DecodeError, StreamClosed
from .schema import DEFAULT_MAX_DEPTH, DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE

__all__ = ["RecordReader", "aread_records", "read_records"]

# an event boundary: a blank line, whatever the line ends (WHATWG: CRLF, LF, CR)
_BLANK_LINE: Final = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
# SSE with keep_going is fed in pieces of at most this many bytes: each resync
# re-feeds the rest of the piece to a fresh parser (a copy), so a bounded piece
# keeps many bad events in one big chunk linear, not quadratic.
_SSE_PIECE: Final = 1 << 14


class RecordReader:
    """Sans-I/O reader of one stream, one ``Record`` per frame or SSE event."""

    __slots__ = (
        "_carry",
        "_closed",
        "_decode_payload",
        "_depth",
        "_fed",
        "_frames",
        "_held",
        "_ibase",
        "_max_event_size",
        "_pbase",
        "_skipping",
        "_sse",
        "_stopped",
        "_unknown",
        "_utf8",
        "content_type",
        "keep_going",
    )

    def __init__(
        self,
        content_type: str | None = None,
        *,
        keep_going: bool = False,
        unknown_events: UnknownPolicy = "skip",
        invalid_utf8: Utf8Policy = "error",
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
    ) -> None:
        # EventDecoder's checks, in its order (no max_events here)
        check_options(unknown_events, invalid_utf8, max_depth, max_frame_size, max_event_size, None)
        #: The stream's transport; ``None`` until sniffed when none was given.
        self.content_type: str | None = None if content_type is None else media_type(content_type)
        self.keep_going = keep_going
        self._unknown: UnknownPolicy = unknown_events
        self._utf8 = invalid_utf8
        self._depth = max_depth
        self._max_event_size = max_event_size
        self._frames = selected.FrameReader(max_frame_size)
        # the per-frame call is the hot loop of a binary stream: bound once
        self._decode_payload = bound_decoder(selected.decode_payload, invalid_utf8, max_depth)
        self._sse: SSEParser | None = None
        self._pbase = 0  # SSE: stream offset where the current parser started
        self._ibase = 0  # SSE: index of the current parser's event 0
        self._skipping = False  # SSE: resynchronising, looking for a blank line
        self._carry = b""  # SSE: the last bytes seen while skipping
        self._fed = 0  # bytes fed
        self._held = b""  # a lone first byte 0x1f, until the next byte names the error
        self._stopped: DecodeError | None = None
        self._closed = False
        if self.content_type == SSE_MEDIA_TYPE:
            self._sse = self._new_parser()

    @property
    def bytes_fed(self) -> int:
        """Bytes passed to ``feed()`` so far."""
        return self._fed

    @property
    def stopped(self) -> DecodeError | None:
        """The error that ended the stream, or ``None``."""
        return self._stopped

    def feed(self, chunk: Buffer) -> list[Record]:
        """Add ``chunk`` (any contiguous bytes-like object) to the stream; return
        the records it completes."""
        if self._stopped is not None:
            raise self._stopped
        if self._closed:
            raise StreamClosed("RecordReader.feed() called after close()")
        if type(chunk) is not bytes:
            # read in place, never copied whole (a TypeError for what is not bytes-like);
            # released after, so that no stored error pins the caller's buffer
            with as_bytes_view(chunk) as view:
                return self._feed(view)
        return self._feed(chunk)

    def _feed(self, chunk: bytes | memoryview) -> list[Record]:
        if self.content_type is None:
            held = self._held + bytes(chunk[: 2 - len(self._held)])
            try:
                kind = sniff(held, final=False)
            except DecodeError as exc:
                return self._settle([Record(0, 0, error=exc, fatal=True)])
            if kind is None:  # no bytes yet, or a lone 0x1f (sniff raises for it later)
                self._held = held
                return []
            self.content_type = kind
            if kind == SSE_MEDIA_TYPE:
                self._sse = self._new_parser()
        at = self._fed
        self._fed += len(chunk)
        if self._sse is None:
            return self._settle(self._feed_frames(chunk))
        if type(chunk) is bytes and (not self.keep_going or len(chunk) <= _SSE_PIECE):
            return self._settle(self._feed_sse(chunk, at))
        # bounded pieces of bytes: the parser is fed a stream split anywhere
        piece = _SSE_PIECE if self.keep_going else WINDOW
        records: list[Record] = []
        for start in range(0, len(chunk), piece):
            records += self._feed_sse(bytes(chunk[start : start + piece]), at + start)
            if not self.keep_going and records and records[-1].error is not None:
                break  # the stream has ended
        return self._settle(records)

    def close(self) -> list[Record]:
        """End of stream: the records still held (an SSE event without a blank line
        after it, or the error of a frame cut short)."""
        if self._stopped is not None:
            raise self._stopped
        if self._closed:
            return []
        self._closed = True
        if self._held:  # the stream was one byte, 0x1f: what sniff says of it
            try:
                sniff(self._held)
            except DecodeError as exc:
                return self._settle([Record(0, 0, error=exc, fatal=True)])
        if self._sse is not None:
            return self._settle(self._close_sse())
        frames = self._frames
        try:
            frames.close()
        except DecodeError as exc:
            start = exc.frame_offset or 0
            index = frames.frames_read if exc.index is None else exc.index
            return self._settle([Record(index, start, self._fed - start, error=exc, fatal=True)])
        return []

    def _settle(self, records: list[Record]) -> list[Record]:
        # Cut the records at the one that ends the stream, and remember why.
        for i, record in enumerate(records):
            error = record.error
            if error is not None and (record.fatal or not self.keep_going):
                self._stopped = error
                return records[: i + 1]
        return records

    # -- binary -------------------------------------------------------------------------

    def _feed_frames(self, chunk: bytes | memoryview) -> list[Record]:
        frames = self._frames
        index, offset = frames.frames_read, frames.offset
        try:
            payloads = frames.feed(chunk)
        except DecodeError as exc:  # a bad prefix with no frame before it
            return [self._bad_prefix(exc, index)]
        records = list(
            payload_records(payloads, index, offset, self._decode_payload, self._unknown)
        )
        pending = frames.pending_error
        if pending is not None:
            records.append(self._bad_prefix(pending, frames.frames_read))
        return records

    @staticmethod
    def _bad_prefix(exc: DecodeError, index: int) -> Record:
        index = index if exc.index is None else exc.index
        return Record(index, exc.frame_offset or 0, error=exc, fatal=True)

    # -- SSE ----------------------------------------------------------------------------

    def _new_parser(self) -> SSEParser:
        errors: Literal["strict", "replace"] = "strict" if self._utf8 == "error" else "replace"
        return SSEParser(max_event_size=self._max_event_size, errors=errors)

    def _feed_sse(self, data: bytes, data_at: int) -> list[Record]:
        records: list[Record] = []
        while data:
            if self._skipping:
                window = self._carry + data
                match = _BLANK_LINE.search(window)
                if match is None:
                    self._carry = window[-3:]
                    break
                used = match.end() - len(self._carry)
                data, data_at = data[used:], data_at + used
                self._skipping, self._carry = False, b""
                self._sse, self._pbase = self._new_parser(), data_at
            parser = self._sse
            assert parser is not None
            err: DecodeError | None
            try:
                messages = parser.feed(data)
            except DecodeError as exc:
                messages, err = [], exc
            else:
                err = parser.pending_error
            records += self._messages(messages)
            if err is None:
                break
            bad = self._relocate(err)
            records.append(Record(bad.index or 0, bad.frame_offset or 0, error=bad))
            if not self.keep_going:
                break
            # resume after the refused event's block: the next blank line from
            # where the parser stopped
            self._ibase = (bad.index or 0) + 1
            skip_from = max(0, (bad.offset or 0) - data_at)
            data, data_at = data[skip_from:], data_at + skip_from
            self._skipping, self._carry = True, b""
        return records

    def _close_sse(self) -> list[Record]:
        if self._skipping:
            return []
        parser = self._sse
        assert parser is not None
        try:
            messages = parser.close()
        except DecodeError as exc:
            bad = self._relocate(exc)
            return [Record(bad.index or 0, bad.frame_offset or 0, error=bad, fatal=True)]
        records = self._messages(messages)
        if parser.pending_error is not None:
            bad = self._relocate(parser.pending_error)
            records.append(Record(bad.index or 0, bad.frame_offset or 0, error=bad, fatal=True))
        return records

    def _relocate(self, err: DecodeError) -> DecodeError:
        # errors of a parser started after a resync count from where it started
        pbase, ibase = self._pbase, self._ibase
        if not pbase and not ibase:
            return err
        start = err.frame_offset if err.frame_offset is not None else err.offset or 0
        return err.located(index=ibase + (err.index or 0), frame_offset=pbase + start, base=pbase)

    def _messages(self, messages: list[SSEMessage]) -> list[Record]:
        records = []
        for message in messages:
            record = Record(self._ibase + message.index, self._pbase + message.offset)
            try:
                record.event = decode_sse_message(message, max_depth=self._depth)
            except DecodeError as exc:
                record.error = self._relocate(exc)
            records.append(record)
        return records


def read_records(
    source: ByteSource, content_type: str | None = None, **options: Any
) -> Iterator[Record]:
    """One ``Record`` per frame or SSE event of ``source`` (bytes, a binary file
    object, or an iterable of byte chunks), as they complete. ``options`` are
    those of ``RecordReader`` (``keep_going``, ``unknown_events``, limits). It
    never raises a ``DecodeError``: the error is a record, and the last one
    unless ``keep_going`` can go past it."""
    reader = RecordReader(content_type, **options)
    for chunk in chunks(source):
        records = reader.feed(chunk)
        yield from records
        if reader.stopped is not None:
            return
    yield from reader.close()


async def aread_records(
    source: AsyncIterable[bytes], content_type: str | None = None, **options: Any
) -> AsyncIterator[Record]:
    """``read_records`` for an async iterable of byte chunks (``response.aiter_bytes()``)."""
    reader = RecordReader(content_type, **options)
    async for chunk in source:
        for record in reader.feed(chunk):
            yield record
        if reader.stopped is not None:
            return
    for record in reader.close():
        yield record
