"""Reading a capture frame by frame, with positions, past bad frames on request.

Strategy: ``CaptureStream(source)`` yields one ``CaptureFrame`` per binary frame, SSE
event or JSON line: its index, stream byte offset, length, and either the event,
the ``DecodeError`` that frame raised, or a note (an event of a later protocol
that was skipped). Binary frames and SSE events are the library's
``RecordReader`` records (``agui_wire._reader``: the same reader as
``agui_wire.read_records``, which goes past bad frames with ``keep_going``); this
adapter adds the capture's ``Input`` (chunks, progress), the notes, SSE
lengths, and JSON Lines, a capture format of this command only.

Contract:

* Without ``keep_going`` the first bad frame is yielded (``fatal``) and reading
  stops: the events before it have all been yielded.
* With ``keep_going``: binary and SSE as ``RecordReader`` says (a bad payload
  or event is skipped; a length prefix over ``max_frame_size`` or a stream cut
  mid-frame ends the stream). JSON Lines — a line that is not a JSON object, or
  an object without ``type`` (refused as on SSE), is reported and skipped.
* JSON Lines may be what ``decode --envelope`` writes (and ``decode`` of a HAR
  with several AG-UI responses): ``{"entry"?, "index", "offset", "event"}``
  objects are unwrapped to their ``event``. Envelopes of a second HAR entry end
  the stream with an error saying how to pick one: two streams are not one.
* ``describe_empty()``, for a stream that held no event: what was found, and
  whether it is an AG-UI stream that is merely empty (no bytes, SSE comments or
  fields without ``data:``, an empty JSON array) or something else (text that
  is not SSE, for one).
* ``CaptureFrame.length``: binary, 4 + payload; JSON Lines, the line; SSE, with
  ``sse_lengths`` the bytes up to the next event (or the end), which costs a
  one-event delay (live streams should leave it off), else ``None``.
* ``progress`` (optional) is called with the raw bytes consumed after each chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .._codec.records import Record
from .._codec.sources import SSE_LINE
from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from .._reader import RecordReader
from ..errors import DecodeError, JsonLineError
from ..schema import DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE
from ._inputs import Input

__all__ = ["CaptureFrame", "CaptureStream"]

_MAX_JSON_DOC: Final = 64 * 1024 * 1024
_HEAD: Final = 64 * 1024  # bytes kept from the start, to say what an eventless input was
_ENVELOPE_KEYS: Final = frozenset({"entry", "index", "offset", "event"})
_UNSET: Final = object()


@dataclass(slots=True)
class CaptureFrame:
    """One frame / SSE event / JSON line of a capture."""

    index: int
    offset: int | None
    length: int | None = None
    event: dict[str, Any] | None = None
    error: DecodeError | None = None
    fatal: bool = False  # the stream cannot be read past this error
    note: str | None = None  # skipped, not an error (an event of a later protocol)
    payload: bytes | None = None  # binary: the payload bytes, when kept


class CaptureStream:
    """Iterable of ``CaptureFrame``s for one ``Input`` (see the module doc)."""

    def __init__(
        self,
        source: Input,
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
        self.head = b""  # the first bytes read (describe_empty)
        self._entry: object = _UNSET  # JSON Lines envelopes: the HAR entry they came from

    def _chunks(self) -> Iterator[bytes]:
        for chunk in self.source.chunks:
            if len(self.head) < _HEAD:
                self.head += chunk[: _HEAD - len(self.head)]
            if self.tap is not None:
                self.tap(chunk, self.end_offset)
            self.end_offset += len(chunk)
            yield chunk
            if self.progress is not None:
                self.progress(self.source.consumed(self.end_offset))

    def __iter__(self) -> Iterator[CaptureFrame]:
        fmt = self.source.format
        frames = self._jsonl() if fmt == "jsonl" else self._records()
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

    # -- binary and SSE: the library's reader ------------------------------------------

    def _records(self) -> Iterator[CaptureFrame]:
        fmt = self.source.format
        reader = RecordReader(
            PROTO_MEDIA_TYPE if fmt == "proto" else SSE_MEDIA_TYPE,
            keep_going=self.keep_going,
            unknown_events="raise" if self.unknown_events == "error" else self.unknown_events,  # type: ignore[arg-type]
            invalid_utf8=self.invalid_utf8,  # type: ignore[arg-type]
            max_frame_size=self.max_frame_size,
            max_event_size=self.max_event_size,
        )
        for chunk in self._chunks():
            yield from map(self._frame, reader.feed(chunk))
            if reader.stopped is not None:
                return
        yield from map(self._frame, reader.close())

    def _frame(self, record: Record) -> CaptureFrame:
        frame = CaptureFrame(
            record.index, record.offset, record.length, record.event, record.error, record.fatal
        )
        if self.keep_payload and record.payload is not None:
            frame.payload = bytes(record.payload)
        if record.unknown is not None:
            numbers = ", ".join(str(n) for n, _ in record.unknown.fields)
            frame.note = (
                f"skipped an event of a later protocol (unknown Event field {numbers}); "
                "--unknown-events raw keeps it as a RAW event"
            )
        return frame

    def _with_lengths(self, frames: Iterator[CaptureFrame]) -> Iterator[CaptureFrame]:
        held: CaptureFrame | None = None
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

    def _jsonl(self) -> Iterator[CaptureFrame]:
        index = 0
        line_no = 0
        pending: list[bytes] = []  # lines of a multi-line (pretty) JSON value
        pending_at = (0, 0)  # (offset, line number) where it started
        pending_size = 0
        array: bytearray | None = None  # the input is one JSON array

        def lines() -> Iterator[tuple[bytes, int]]:
            # A line within a chunk is one slice of it; a line across chunks is
            # gathered in place (bytes joined per chunk, and searched whole each
            # time, were quadratic in the line's length).
            tail = bytearray()  # a line the chunks so far have not ended
            tail_at = 0
            base = 0  # stream offset of chunk[0]
            for chunk in self._chunks():
                start = 0
                nl = chunk.find(b"\n")
                if tail:
                    if nl < 0:
                        tail += chunk
                        base += len(chunk)
                        continue
                    tail += chunk[: nl + 1]
                    yield bytes(tail), tail_at
                    tail = bytearray()
                    start = nl + 1
                    nl = chunk.find(b"\n", start)
                while nl >= 0:
                    yield chunk[start : nl + 1], base + start
                    start = nl + 1
                    nl = chunk.find(b"\n", start)
                if start < len(chunk):
                    tail_at = base + start
                    tail += chunk[start:]
                base += len(chunk)
            if tail:
                yield bytes(tail), tail_at

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
            value = _UNSET
            # the value is an object: only a line ending with "}" can end it, so the
            # lines are joined and parsed there only (every line was quadratic)
            if text.endswith(b"}"):
                with suppress(orjson.JSONDecodeError):
                    value = orjson.loads(b"".join(pending))
            if value is _UNSET:
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
    ) -> CaptureFrame:
        err = JsonLineError(reason, index=index, offset=offset, frame_offset=offset)
        return CaptureFrame(index, offset, length, error=err, fatal=fatal)

    def _json_event(
        self, value: Any, index: int, offset: int | None, length: int | None, line: int | None
    ) -> CaptureFrame:
        where = f"line {line}: " if line is not None else f"item {index}: "
        if isinstance(value, dict) and "type" not in value and _is_envelope(value):
            entry = value.get("entry")
            if self._entry is _UNSET:
                self._entry = entry
            elif entry != self._entry:
                reason = (
                    f"{where}an envelope of HAR entry {entry} after entry {self._entry}: this is "
                    "`decode` of several AG-UI responses, which are separate streams; pick one "
                    f"with `agui-wire decode HAR --entry {self._entry}` or "
                    f"`jq -c 'select(.entry == {self._entry}) | .event'`"
                )
                return self._json_error(index, offset, reason, length, fatal=True)
            value = value["event"]
        if not isinstance(value, dict):
            kind = "an array" if isinstance(value, list) else type(value).__name__
            return self._json_error(index, offset, f"{where}not a JSON object ({kind})", length)
        if not isinstance(value.get("type"), str) or not value["type"]:
            keys = ", ".join(list(value)[:5]) or "none"
            reason = (
                f"{where}the event has no type (a non-empty string 'type' is required; "
                f"its keys: {keys})"
            )
            return self._json_error(index, offset, reason, length)
        return CaptureFrame(index, offset, length, event=value)

    # -- an input with no event -------------------------------------------------------------

    def describe_empty(self) -> tuple[bool, str]:
        """(merely empty, what was found) for a stream that yielded no event."""
        size, head, fmt = self.end_offset, self.head, self.source.format
        if size == 0:
            return True, "the input is empty (0 bytes)"
        lines = head.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        if len(head) < size:
            lines = lines[:-1]  # the last one may be cut
        if fmt == "jsonl":
            if not head.strip(b" \t\r\n[]"):
                return True, f"{size:,} bytes: an empty JSON array or only whitespace"
            return False, f"{size:,} bytes of JSON with no event"
        if fmt == "sse" and all(SSE_LINE.match(line) for line in lines):
            comments = sum(line.startswith(b":") for line in lines)
            fields = sum(bool(line) and not line.startswith(b":") for line in lines)
            found = [f"{comments:,} comment line(s)"] if comments else []
            found += [f"{fields:,} field line(s)"] if fields else []
            what = " and ".join(found) or "blank lines only"
            return True, f"{size:,} bytes of SSE: {what}, no `data:` line"
        start = head[:32].decode("utf-8", "replace")
        more = "…" if size > 32 else ""
        return False, (
            f"{size:,} bytes, no SSE `data:` line and no frame header; it starts {start!r}{more}"
        )


def _is_envelope(value: dict[str, Any]) -> bool:
    """``decode --envelope``'s wrapping: ``{"entry"?, "index", "offset", "event": {...}}``."""
    return isinstance(value.get("event"), dict) and value.keys() <= _ENVELOPE_KEYS
