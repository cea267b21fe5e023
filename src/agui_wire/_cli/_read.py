"""Reading a capture frame by frame, with positions, past bad frames on request.

Strategy: ``read_frames(source)`` yields one ``Frame`` per binary frame, SSE
event or JSON line: its index, stream byte offset, length, and either the event,
the ``DecodeError`` that frame raised, or a note (an event of a later protocol
that was skipped). It drives the sans-I/O pieces of agui_wire directly
(``FrameReader`` + the payload decoder; ``SSEParser`` + ``decode_sse_message``)
rather than ``EventDecoder``, because ``EventDecoder`` stays failed after the
first error and a debugging tool must be able to go on.

Contract:

* Without ``keep_going`` the first bad frame is yielded (``fatal``) and reading
  stops: the events before it have all been yielded.
* With ``keep_going``: binary — a frame whose payload does not decode is
  reported and skipped, as long as the framing is intact; a length prefix over
  ``max_frame_size`` or a stream cut mid-frame ends the stream (nothing after
  can be trusted). SSE — an event whose data is not a JSON object with a
  ``type`` is reported and skipped; an event the parser itself refuses (invalid
  UTF-8, over ``max_event_size``) is reported and reading resumes after the end
  of its block (the next blank line). JSON Lines — a line that is not a JSON
  object is reported and skipped.
* ``Frame.length``: binary, 4 + payload; JSON Lines, the line; SSE, with
  ``sse_lengths`` the bytes up to the next event (or the end), which costs a
  one-event delay (live streams should leave it off), else ``None``.
* ``progress`` (optional) is called with the raw bytes consumed after each chunk.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .._codec import backend
from .._codec.framing import DEFAULT_MAX_FRAME_SIZE, HEADER_SIZE
from .._codec.proto_reader import DEFAULT_MAX_DEPTH
from .._codec.sse_reader import DEFAULT_MAX_EVENT_SIZE, SSEMessage, SSEParser, decode_sse_message
from .._decoder import UNKNOWN_EVENT_SOURCE
from ..errors import DecodeError, JsonLineError, SSEError, UnknownEventError
from ._inputs import Source

__all__ = ["Frame", "FrameStream", "read_frames"]

_BLANK_LINE: Final = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
_MAX_JSON_DOC: Final = 64 * 1024 * 1024


def _at(index: int | None, default: int) -> int:
    return default if index is None else index


@dataclass(slots=True)
class Frame:
    """One frame / SSE event / JSON line of a capture."""

    index: int
    offset: int | None
    length: int | None = None
    event: dict[str, Any] | None = None
    error: DecodeError | None = None
    fatal: bool = False  # the stream cannot be read past this error
    note: str | None = None  # skipped, not an error (an event of a later protocol)
    payload: bytes | None = None  # binary: the payload bytes, when kept


class FrameStream:
    """Iterable of ``Frame``s for one ``Source`` (see the module doc)."""

    def __init__(
        self,
        source: Source,
        *,
        keep_going: bool = False,
        unknown_events: str = "skip",
        invalid_utf8: str = "error",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        keep_payload: bool = False,
        sse_lengths: bool = False,
        progress: Callable[[int], None] | None = None,
        tap: Callable[[bytes, int], None] | None = None,
    ) -> None:
        self.source = source
        self.keep_going = keep_going
        self.unknown_events = unknown_events
        self.invalid_utf8 = invalid_utf8
        self.max_frame_size = max_frame_size
        self.max_event_size = max_event_size
        self.keep_payload = keep_payload
        self.sse_lengths = sse_lengths
        self.progress = progress
        self.tap = tap
        self.end_offset = 0  # bytes read so far (decompressed)
        self.events = 0
        self.errors = 0
        self.notes = 0

    def _chunks(self) -> Iterator[bytes]:
        for chunk in self.source.chunks:
            if self.tap is not None:
                self.tap(chunk, self.end_offset)
            self.end_offset += len(chunk)
            yield chunk
            if self.progress is not None:
                self.progress(self.source.consumed(self.end_offset))

    def __iter__(self) -> Iterator[Frame]:
        fmt = self.source.format
        frames = self._proto() if fmt == "proto" else self._sse() if fmt == "sse" else self._jsonl()
        if fmt == "sse" and self.sse_lengths:
            frames = self._with_lengths(frames)
        for frame in frames:
            if frame.error is not None:
                self.errors += 1
            elif frame.note is not None:
                self.notes += 1
            else:
                self.events += 1
            yield frame
            if frame.error is not None and (frame.fatal or not self.keep_going):
                return

    # -- binary -------------------------------------------------------------------------

    def _proto(self) -> Iterator[Frame]:
        reader = backend.FrameReader(self.max_frame_size)
        decode_payload = backend.decode_payload
        utf8 = self.invalid_utf8
        for chunk in self._chunks():
            index, offset = reader.frames_read, reader.offset
            try:
                payloads = reader.feed(chunk)
            except DecodeError as exc:
                yield Frame(_at(exc.index, index), exc.frame_offset, error=exc, fatal=True)
                return
            for payload in payloads:
                size = len(payload)
                start = offset + HEADER_SIZE
                frame = Frame(index, offset, HEADER_SIZE + size)
                if self.keep_payload:
                    frame.payload = bytes(payload)
                try:
                    frame.event = decode_payload(
                        payload, invalid_utf8=utf8, max_depth=DEFAULT_MAX_DEPTH
                    )
                except UnknownEventError as exc:
                    located = exc.located(index=index, frame_offset=offset, base=start)
                    self._unknown(frame, located)  # type: ignore[arg-type]
                except DecodeError as exc:
                    frame.error = exc.located(index=index, frame_offset=offset, base=start)
                yield frame
                index += 1
                offset = start + size
            pending = reader.pending_error
            if pending is not None:
                yield Frame(
                    _at(pending.index, index), pending.frame_offset, error=pending, fatal=True
                )
                return
        try:
            reader.close()
        except DecodeError as exc:
            yield Frame(
                _at(exc.index, reader.frames_read),
                exc.frame_offset,
                self.end_offset - (exc.frame_offset or 0),
                error=exc,
                fatal=True,
            )

    def _unknown(self, frame: Frame, exc: UnknownEventError) -> None:
        if self.unknown_events == "error":
            frame.error = exc
        elif self.unknown_events == "raw":
            frame.event = {
                "type": "RAW",
                "source": UNKNOWN_EVENT_SOURCE,
                "event": {
                    "fields": [
                        {"number": n, "payload": base64.b64encode(data).decode("ascii")}
                        for n, data in exc.fields
                    ]
                },
            }
        else:
            numbers = ", ".join(str(n) for n, _ in exc.fields)
            frame.note = (
                f"skipped an event of a later protocol (unknown Event field {numbers}); "
                "--unknown-events raw keeps it as a RAW event"
            )

    # -- SSE ------------------------------------------------------------------------------

    def _new_parser(self) -> SSEParser:
        errors = "strict" if self.invalid_utf8 == "error" else "replace"
        return SSEParser(max_event_size=self.max_event_size, errors=errors)  # type: ignore[arg-type]

    def _sse(self) -> Iterator[Frame]:
        parser = self._new_parser()
        pbase = 0  # stream offset where the current parser started
        ibase = 0  # event index of the current parser's event 0
        skipping = False  # resynchronising after a bad block: looking for a blank line
        carry = b""  # last bytes seen while skipping (a blank line split across chunks)
        at = 0  # stream offset of the current chunk
        for chunk in self._chunks():
            data, data_at = chunk, at
            at += len(chunk)
            while data:
                if skipping:
                    window = carry + data
                    match = _BLANK_LINE.search(window)
                    if match is None:
                        carry = window[-3:]
                        data = b""
                        break
                    used = match.end() - len(carry)
                    data, data_at = data[used:], data_at + used
                    skipping, carry = False, b""
                    parser, pbase = self._new_parser(), data_at
                err: DecodeError | None = None
                try:
                    messages = parser.feed(data)
                except DecodeError as exc:
                    messages, err = [], exc
                else:
                    err = parser.pending_error
                yield from self._sse_events(messages, pbase, ibase)
                if err is None:
                    break
                bad = self._relocate(err, pbase, ibase)
                yield Frame(
                    _at(bad.index, 0), bad.frame_offset, error=bad, fatal=not self.keep_going
                )
                if not self.keep_going:
                    return
                ibase = _at(bad.index, 0) + 1
                skip_from = max(0, (bad.offset or 0) - data_at)
                data, data_at = data[skip_from:], data_at + skip_from
                skipping, carry = True, b""
        if skipping:
            return
        try:
            messages = parser.close()
        except DecodeError as exc:
            bad = self._relocate(exc, pbase, ibase)
            yield Frame(_at(bad.index, 0), bad.frame_offset, error=bad, fatal=True)
            return
        yield from self._sse_events(messages, pbase, ibase)
        if parser.pending_error is not None:
            bad = self._relocate(parser.pending_error, pbase, ibase)
            yield Frame(_at(bad.index, 0), bad.frame_offset, error=bad, fatal=True)

    @staticmethod
    def _relocate(err: DecodeError, pbase: int, ibase: int) -> DecodeError:
        if not pbase and not ibase:
            return err
        start = err.frame_offset if err.frame_offset is not None else err.offset or 0
        moved = err.located(index=ibase + (err.index or 0), frame_offset=pbase + start, base=pbase)
        return moved

    def _sse_events(self, messages: list[SSEMessage], pbase: int, ibase: int) -> Iterator[Frame]:
        for message in messages:
            frame = Frame(ibase + message.index, pbase + message.offset)
            try:
                frame.event = decode_sse_message(message)
            except SSEError as exc:
                frame.error = self._relocate(exc, pbase, ibase)
            yield frame

    def _with_lengths(self, frames: Iterator[Frame]) -> Iterator[Frame]:
        held: Frame | None = None
        for frame in frames:
            if held is not None:
                if held.offset is not None and frame.offset is not None:
                    held.length = frame.offset - held.offset
                yield held
            held = frame
        if held is not None:
            if held.offset is not None and held.length is None:
                held.length = self.end_offset - held.offset
            yield held

    # -- JSON Lines -------------------------------------------------------------------------

    def _jsonl(self) -> Iterator[Frame]:
        index = 0
        line_no = 0
        pending: list[bytes] = []  # lines of a multi-line (pretty) JSON value
        pending_at = (0, 0)  # (offset, line number) where it started
        pending_size = 0
        buf = b""
        buf_at = 0
        array: bytearray | None = None  # the input is one JSON array

        def lines() -> Iterator[tuple[bytes, int]]:
            nonlocal buf, buf_at
            for chunk in self._chunks():
                buf += chunk
                start = 0
                while (nl := buf.find(b"\n", start)) >= 0:
                    yield buf[start : nl + 1], buf_at + start
                    start = nl + 1
                buf_at += start
                buf = buf[start:]
            if buf:
                yield buf, buf_at

        for line, offset in lines():
            line_no += 1
            if array is not None:
                array += line
                if len(array) > _MAX_JSON_DOC:
                    yield self._json_error(index, 0, "a JSON array over 64 MiB", fatal=True)
                    return
                continue
            text = line.strip()
            if not pending:
                if not text:
                    continue
                if index == 0 and text[:1] == b"[":
                    array = bytearray(line)
                    continue
                try:
                    value = orjson.loads(text)
                except orjson.JSONDecodeError as exc:
                    if (text[:1] == b"{" and text[-1:] == b"}") or text[:1] != b"{":
                        yield self._json_error(index, offset, f"line {line_no}: {exc}", len(line))
                        index += 1
                        continue
                    pending, pending_at, pending_size = [line], (offset, line_no), len(line)
                    continue
                yield self._json_event(value, index, offset, len(line), line_no)
                index += 1
                continue
            pending.append(line)
            pending_size += len(line)
            try:
                value = orjson.loads(b"".join(pending))
            except orjson.JSONDecodeError:
                if pending_size > _MAX_JSON_DOC:
                    yield self._json_error(
                        index,
                        pending_at[0],
                        f"line {pending_at[1]}: a JSON value over 64 MiB that does not end",
                        fatal=True,
                    )
                    return
                continue
            yield self._json_event(value, index, pending_at[0], pending_size, pending_at[1])
            index += 1
            pending = []
        if pending:
            try:
                orjson.loads(b"".join(pending))
            except orjson.JSONDecodeError as exc:
                yield self._json_error(
                    index,
                    pending_at[0],
                    f"line {pending_at[1]}: the JSON value starting here does not end: {exc}",
                    fatal=True,
                )
        if array is not None:
            try:
                values = orjson.loads(bytes(array))
            except orjson.JSONDecodeError as exc:
                yield self._json_error(0, 0, f"the JSON array is not valid: {exc}", fatal=True)
                return
            for i, value in enumerate(values):
                yield self._json_event(value, i, None, None, None)

    @staticmethod
    def _json_error(
        index: int, offset: int | None, reason: str, length: int | None = None, fatal: bool = False
    ) -> Frame:
        err = JsonLineError(reason, index=index, offset=offset, frame_offset=offset)
        return Frame(index, offset, length, error=err, fatal=fatal)

    def _json_event(
        self, value: Any, index: int, offset: int | None, length: int | None, line: int | None
    ) -> Frame:
        if not isinstance(value, dict):
            where = f"line {line}: " if line is not None else f"item {index}: "
            kind = "an array" if isinstance(value, list) else type(value).__name__
            return self._json_error(index, offset, f"{where}not a JSON object ({kind})", length)
        return Frame(index, offset, length, event=value)


def read_frames(source: Source, **options: Any) -> FrameStream:
    """A ``FrameStream`` over ``source`` (``options``: see ``FrameStream``)."""
    return FrameStream(source, **options)
