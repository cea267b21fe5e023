"""Server-Sent Events in, AG-UI events out; sans I/O.

Strategy: two layers, both fed bytes split anywhere.

``SSEParser`` is the WHATWG event-stream parser (HTML Living Standard, "Parsing an
event stream"), on bytes: it finds line ends itself (LF, CRLF and lone CR, also a
CR ending one chunk and an LF starting the next, without delaying the line until
the next chunk), decodes each complete line as UTF-8 (a line end is ASCII, so a
multi-byte sequence split across chunks is whole by then), and applies the field
rules: one leading BOM ignored; ``:`` comments; a field without a colon has an
empty value; one space after the colon removed; ``data`` lines joined with LF;
``event`` names the type (``"message"`` when absent); ``id`` sets the last event
id unless it contains NUL, and that id persists across events (an ``id:`` block
without data still updates it; ``id:`` with nothing resets it to ``""``);
``retry`` takes only ASCII digits; field names are case-sensitive; an event is
dispatched on a blank line, and one without data is dropped. Unlike the spec and
like the reference client, an event not followed by a blank line is still
delivered by ``close()``. Each message carries its 0-based index and the byte
offset (in the raw stream, BOM included) of the first line of its block.

``SSEEventReader`` turns each message's data into an event dict with orjson and
raises ``SSEError`` (event index, byte offset) unless it is a JSON object with a
non-empty string ``type``. The SSE event name is not looked at (the reference
ignores ``event:`` too). ``data:`` with an empty value is data, and not JSON: an
error (as in the reference). Blocks without data (comments, keep-alives, a lone
``event:``/``id:``/``retry:``) never reach this layer.

Fast path: what AG-UI servers write is blocks of one ``data: <json>`` line and a
blank line. From a block start, with no CR in the chunk, ``SSEEventReader`` parses
such blocks straight from the bytes with orjson and accounts for them in the
parser; anything else stops the fast path and the general parser takes over at
that byte, so events, errors, indices and offsets are the general parser's
(tests/differential/test_sse_fast_path.py holds the two to each other). The scan itself is
``plain_sse_blocks``, with a Cython twin: a reader is handed the scan it runs
(``plain_blocks``; the C ``SSEDecoder`` hands it the C one), this module never
imports ``selected``.

Decisions:

* Invalid UTF-8 raises ``SSEError`` at the exact byte offset by default
  (``errors="strict"``; anywhere in the stream, comments included). The spec
  replaces it with U+FFFD, as does the reference client: ``errors="replace"``.
* ``max_event_size`` (default 10 MiB, like the reference) bounds memory: the
  bytes of one event's data so far plus the line being read may not exceed it,
  checked while buffering, so a stream without line ends cannot grow memory
  without bound (``SSELimitExceeded``, a ``LimitExceeded`` that counts events).
  Invalid UTF-8 before the first byte past the limit is the ``SSEError``
  instead (the first fault in the stream wins); the JSON of an event over the
  limit is never judged, since judging it would mean holding it whole.
  A ``retry`` longer than 18 digits is ignored.
* What the parser holds is those bytes, whatever the chunk: a line is checked
  against the limit before it is copied out of the chunk (never the chunk
  whole); an event's data is kept as bytes and decoded once at dispatch (its
  first value, when short, is decoded at once: the common one-line event costs
  what it did), since a ``str`` per line costs 8-24x the bytes the limit counts
  for short lines; a long line's UTF-8 is checked ``WINDOW`` bytes at a time.
  A chunk of any contiguous buffer type is read ``WINDOW`` bytes at a time,
  each piece copied to ``bytes`` (``bytes.find`` finds line ends; a memoryview
  has no such search), and every view of the caller's buffer is released before
  ``feed`` returns, so a held error never pins a ``bytearray`` or ``mmap``.
  Peak memory for an event over the limit: at most about ``max_event_size``
  plus a window, for any buffer type (tests/contract/test_buffers.py).
* Errors never lose good events: ``feed()`` returns what was complete before the
  error, which is then raised by the next ``feed()``/``close()`` (at once if
  nothing precedes it) and is visible as ``pending_error``. A failed reader stays
  failed. Work is linear in the input: the partial line is appended to, never
  re-scanned, and line ends are found with C-level searches.
* orjson, not JavaScript, parses the JSON: numbers that overflow a double
  (``1e400``) and lone surrogate escapes (``"\\ud800"``) are errors here where
  the reference yields ``Infinity`` / a lone surrogate.
* ``max_depth`` (default 1024, as for the binary decoders) bounds the nesting
  below the event object (``{"type": "X", "v": [[1]]}`` is 2 deep):
  ``SSELimitExceeded`` past it. orjson itself refuses documents nested deeper
  than 1024 levels counting the event object, so an SSE event can be at most
  1023 deep whatever ``max_depth`` says; that too is ``SSELimitExceeded``, never
  a JSON syntax error (orjson reads up to the level past its cap: a syntax
  error before it is the ``SSEError``, what follows it is not read). So a
  ``max_depth`` of 1023 or more costs nothing more; below that, the check costs
  two ``str.count`` calls unless the data has more brackets than
  ``max_depth + 1``, when orjson's cap measures it: the data is parsed again
  inside ``1023 - max_depth`` arrays (cheaper than walking the event in Python,
  so refusing costs about two parses where accepting costs one).
"""

from __future__ import annotations

from codecs import utf_8_decode as _utf8_decode
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal

import orjson

from .._jsonnames import json_type
from ..errors import DecodeError, SSEError, SSELimitExceeded, StreamClosed
from ..schema import DEFAULT_MAX_DEPTH, DEFAULT_MAX_EVENT_SIZE, JSON_MAX_NESTING
from .framing import as_bytes_view
from .proto_reader import check_max_depth
from .sources import Buffer

__all__ = [
    "SSEEventReader",
    "SSEMessage",
    "SSEParser",
    "decode_sse_message",
    "plain_sse_blocks",
    "utf8_fault",
]

_BOM: Final = b"\xef\xbb\xbf"
_MAX_RETRY_DIGITS: Final = 18
# orjson refuses documents nested deeper than this, the event object included
ORJSON_MAX_DEPTH: Final = JSON_MAX_NESTING
# A chunk that is not bytes is read this many bytes at a time, each piece copied to
# bytes (pure Python finds line ends with bytes.find, which a memoryview lacks): the
# copy is bounded by this, never the whole chunk. Long lines are checked for UTF-8
# this many bytes at a time too.
WINDOW: Final = 1 << 18
# a data value at least this long is appended through a view, not a slice (a copy)
_VIEW_MIN: Final = 1 << 16

Errors = Literal["strict", "replace"]


def check_max_event_size(max_event_size: int) -> int:
    """``max_event_size`` if it is valid, else ``ValueError``."""
    if type(max_event_size) is not int or max_event_size < 1:
        raise ValueError(f"max_event_size must be a positive int, not {max_event_size!r}")
    return max_event_size


class SSEMessage:
    """One dispatched SSE event (immutable by convention; compares by value)."""

    __slots__ = ("data", "event", "id", "index", "offset", "retry")

    data: str
    event: str  # the event type; "message" when the block had no (or an empty) event field
    id: str  # the last event id at dispatch (persists across events)
    retry: int | None  # a reconnection time this block set, else None
    index: int  # 0-based among dispatched events
    offset: int  # stream byte offset of the first line of the event's block

    def __init__(
        self,
        data: str,
        event: str = "message",
        id: str = "",
        retry: int | None = None,
        index: int = 0,
        offset: int = 0,
    ) -> None:
        self.data = data
        self.event = event
        self.id = id
        self.retry = retry
        self.index = index
        self.offset = offset

    def _astuple(self) -> tuple[str, str, str, int | None, int, int]:
        return (self.data, self.event, self.id, self.retry, self.index, self.offset)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SSEMessage):
            return NotImplemented
        return self._astuple() == other._astuple()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"SSEMessage(data={self.data!r}, event={self.event!r}, id={self.id!r}, "
            f"retry={self.retry!r}, index={self.index}, offset={self.offset})"
        )


class SSEParser:
    """Incremental WHATWG event-stream parser (see the module doc)."""

    __slots__ = (
        "_block",
        "_buf",
        "_buf_start",
        "_closed",
        "_data",
        "_data_len",
        "_error",
        "_errors",
        "_event",
        "_fed",
        "_head",
        "_id",
        "_index",
        "_last_id",
        "_max",
        "_retry",
        "_skip_lf",
        "_strict",
        "_text",
        "retry",
    )

    def __init__(
        self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, errors: Errors = "strict"
    ) -> None:
        if errors not in ("strict", "replace"):
            raise ValueError("errors must be 'strict' or 'replace'")
        self._max = check_max_event_size(max_event_size)
        self._errors = errors
        self._strict = errors == "strict"
        self._fed = 0  # bytes fed
        self._head = True  # still looking at the first bytes (BOM)
        self._buf = bytearray()  # the incomplete line
        self._buf_start = 0  # stream offset of the incomplete line
        self._skip_lf = False  # the last chunk ended with CR: ignore one LF
        # The event's data: its first value decoded when it is short (_text), else
        # every value so far as bytes, each followed by an LF (_data), decoded at
        # dispatch: a str per line would cost far more than the bytes the limit counts
        self._text: str | None = None
        self._data = bytearray()
        self._data_len = 0  # bytes of data values so far, plus one LF each
        self._event = ""
        self._id = ""  # the last event id buffer
        self._last_id = ""  # the last event id string
        self._retry: int | None = None  # retry set in this block
        self._block = -1  # stream offset of the block's first line, -1 if none yet
        self._index = 0
        self._error: DecodeError | None = None
        self._closed = False
        #: The reconnection time (ms) most recently set by a ``retry`` field.
        self.retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The last event id string (what a reconnect sends as ``Last-Event-ID``)."""
        return self._last_id

    @property
    def events_read(self) -> int:
        """Events dispatched so far: the index of the next one."""
        return self._index

    @property
    def bytes_fed(self) -> int:
        return self._fed

    @property
    def pending_error(self) -> DecodeError | None:
        """The error this parser has hit (raised by the next call), or ``None``."""
        return self._error

    def feed(self, chunk: Buffer) -> list[SSEMessage]:
        """Add ``chunk`` (any contiguous bytes-like object) to the stream; return
        the events it completes."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise StreamClosed("SSEParser.feed() called after close()")
        out: list[SSEMessage] = []
        try:
            if type(chunk) is bytes:
                self._feed(chunk, 0, len(chunk), out)
            else:
                with as_bytes_view(chunk) as view:
                    for start in range(0, len(view), WINDOW):
                        piece = view[start : start + WINDOW].tobytes()
                        self._feed(piece, 0, len(piece), out)
        except DecodeError as exc:
            return self._fail(exc, out)
        return out

    def _feed_part(self, chunk: bytes, start: int, end: int) -> list[SSEMessage]:
        """``feed(chunk[start:end])`` without the slice (a copy of it)."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise StreamClosed("SSEParser.feed() called after close()")
        out: list[SSEMessage] = []
        try:
            self._feed(chunk, start, end, out)
        except DecodeError as exc:
            return self._fail(exc, out)
        return out

    def close(self) -> list[SSEMessage]:
        """End of stream: the last line and event, even without a blank line after them."""
        if self._error is not None:
            raise self._error
        if self._closed:
            return []
        self._closed = True
        out: list[SSEMessage] = []
        try:
            if self._buf:
                line = self._buf
                self._buf = bytearray()
                self._line(line, self._buf_start, out)
            self._dispatch(out)
        except DecodeError as exc:
            return self._fail(exc, out)
        return out

    def _at_block_start(self) -> bool:
        """Whether the next byte starts a block with nothing pending (no partial
        line, field or BOM check): where ``SSEEventReader``'s fast path may run."""
        return (
            not self._head
            and not self._buf
            and not self._skip_lf
            and self._block < 0
            and not self._data_len
            and not self._event
            and self._retry is None
            and self._error is None
            and not self._closed
        )

    def _at_line_start(self) -> bool:
        """Whether the last line ended exactly at the end of the last chunk."""
        return not self._head and not self._buf and not self._skip_lf

    def _may_skip_bom(self, chunk: bytes) -> bool:
        """Settle the leading-BOM question from ``chunk`` if it can be settled
        without the general parser: False when the parser must look itself."""
        if not self._head:
            return True
        if len(chunk) < 3 or chunk.startswith(_BOM[: min(len(chunk), 3)]) or self._buf:
            return False
        self._head = False
        self._buf_start = self._fed
        return True

    def _skip_blocks(self, nbytes: int, nevents: int) -> None:
        """Account for ``nevents`` plain blocks (``nbytes``) handled by the fast path."""
        self._fed += nbytes
        self._index += nevents

    def _fail(self, exc: DecodeError, out: list[SSEMessage]) -> list[SSEMessage]:
        self._error = exc
        self._buf = bytearray()
        self._text = None
        self._data = bytearray()
        if not out:
            raise exc
        return out

    def _feed(self, chunk: bytes, pos: int, n: int, out: list[SSEMessage]) -> None:
        # chunk[pos:n] is the next part of the stream; never sliced whole (a copy):
        # each line is checked against the limit before it is copied out
        base = self._fed - pos  # stream offset of chunk[0]
        self._fed += n - pos
        if self._head:
            pos = self._settle_head(chunk, pos, n)
            if pos < 0:
                return
        if self._skip_lf and pos < n:
            self._skip_lf = False
            if chunk[pos] == 0x0A:
                pos += 1
        # next LF / CR at or after pos; n when there is none before n (two-argument
        # find: cheaper, and only _feed_part's first part ends before the chunk does,
        # with a blank line, so no search runs past n twice)
        lf = chunk.find(b"\n", pos)
        if lf < 0 or lf > n:
            lf = n
        cr = chunk.find(b"\r", pos)
        if cr < 0 or cr > n:
            cr = n
        buf = self._buf
        line: bytes | bytearray
        while True:
            end = lf if lf < cr else cr
            if end >= n:
                break
            if buf:
                start = self._buf_start
                if self._data_len + len(buf) + end - pos > self._max:
                    raise self._too_big(buf, chunk, pos, end, start)
                buf += chunk[pos:end]
                line = buf
                buf = self._buf = bytearray()
            else:
                start = base + pos
                if self._data_len + end - pos > self._max:
                    raise self._too_big(b"", chunk, pos, end, start)
                line = chunk[pos:end]
            if line:
                self._line(line, start, out)
            else:
                self._dispatch(out)
            if end == cr:
                if end + 1 < n:
                    if chunk[end + 1] == 0x0A:
                        end += 1
                else:
                    self._skip_lf = True
                pos = end + 1
                if cr < pos:
                    cr = chunk.find(b"\r", pos)
                    if cr < 0 or cr > n:
                        cr = n
                if lf < pos:
                    lf = chunk.find(b"\n", pos)
                    if lf < 0 or lf > n:
                        lf = n
            else:
                pos = end + 1
                lf = chunk.find(b"\n", pos)
                if lf < 0 or lf > n:
                    lf = n
        if pos < n:
            if not buf:
                self._buf_start = base + pos
            if self._data_len + len(buf) + n - pos > self._max:
                raise self._too_big(buf, chunk, pos, n, self._buf_start)
            buf += chunk[pos:n]

    def _settle_head(self, chunk: bytes, pos: int, n: int) -> int:
        """Judge the leading BOM (it may arrive split: up to 3 bytes are held until
        it can be judged). Where the stream goes on in ``chunk``, -1 if undecided."""
        held = bytes(self._buf)  # 0-2 bytes, the start of a BOM
        take = min(3 - len(held), n - pos)
        head = held + chunk[pos : pos + take]
        if len(head) < 3 and _BOM.startswith(head):
            self._buf = bytearray(head)
            return -1
        self._head = False
        if head == _BOM:
            self._buf = bytearray()
            return pos + take
        # no BOM: the bytes held (no line end among them) start the first line
        self._buf_start = 0
        return pos

    def _too_big(
        self, head: bytes | bytearray, chunk: bytes, pos: int, end: int, line_start: int
    ) -> DecodeError:
        """``SSELimitExceeded`` at the first byte past ``max_event_size`` of the line
        ``head + chunk[pos:end]`` (never joined: a copy), unless a fault comes before
        that byte: invalid UTF-8 is then the error (a sequence the limit cuts is not a
        fault). The event's JSON is not judged: it is never held whole, which is what
        the limit is for."""
        room = max(self._max - self._data_len, 0)
        at = line_start + room
        if self._errors == "strict":
            rest = max(room - len(head), 0)
            fault = utf8_fault(((head, 0, min(room, len(head))), (chunk, pos, pos + rest)), False)
            if fault is not None:
                return self._bad_utf8(fault[0], fault[1], line_start)
        return SSELimitExceeded(
            f"SSE event larger than max_event_size {self._max} bytes",
            index=self._index,
            offset=at,
            frame_offset=self._block if self._block >= 0 else line_start,
        )

    def _line(self, line: bytes | bytearray, start: int, out: list[SSEMessage]) -> None:
        if not line:
            self._dispatch(out)
            return
        if self._data_len + len(line) > self._max:
            raise self._too_big(line, b"", 0, 0, start)
        if self._block < 0:
            self._block = start
        # fast path: a data line (field names are ASCII, so bytes compare as text)
        if line.startswith(b"data: "):
            skip = 6
        elif line.startswith(b"data:"):
            skip = 5
        else:
            skip = 0
        if skip:
            if not self._data_len and len(line) <= WINDOW:
                self._text = self._decode(line, start, skip)  # the common case: one value
                self._data_len = len(line) - skip + 1
            else:
                self._add_value(line, start, skip)
            return
        if line[0] == 0x3A:  # ":" a comment: checked, not kept
            if self._strict and not line.isascii():
                self._check_utf8(line, start)
            return
        text = self._decode(line, start, 0)
        colon = text.find(":")
        if colon < 0:
            name = text
            value = ""
        else:
            name = text[:colon]
            value = text[colon + 1 :]
            if value[:1] == " ":
                value = value[1:]
        if name == "data":  # "data" without a colon: an empty value
            self._add_value(line, start, len(line))
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif (
            name == "retry"
            and value.isascii()
            and value.isdigit()
            and len(value) <= _MAX_RETRY_DIGITS
        ):
            self._retry = self.retry = int(value)

    def _add_value(self, line: bytes | bytearray, start: int, skip: int) -> None:
        """Add ``line[skip:]`` to the event's data as bytes (checked, in strict mode)."""
        if self._strict and not line.isascii():
            self._check_utf8(line, start)
        data = self._data
        if self._text is not None:  # the first value joins the bytes
            data += self._text.encode()
            data.append(0x0A)
            self._text = None
        if len(line) - skip < _VIEW_MIN:
            data += line[skip:]
        else:
            with memoryview(line) as view:  # no second copy of a long line
                data += view[skip:]
        data.append(0x0A)
        self._data_len += len(line) - skip + 1

    def _check_utf8(self, line: bytes | bytearray, start: int) -> None:
        """``SSEError`` unless ``line`` (at stream offset ``start``) is valid UTF-8;
        a long line is checked a window at a time (never decoded whole)."""
        if len(line) <= WINDOW:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self._bad_utf8(exc.start, exc.reason, start) from None
            return
        fault = utf8_fault(((line, 0, len(line)),), True)
        if fault is not None:
            raise self._bad_utf8(fault[0], fault[1], start)

    def _decode(self, line: bytes | bytearray, start: int, skip: int) -> str:
        try:
            return (line[skip:] if skip else line).decode("utf-8", self._errors)
        except UnicodeDecodeError as exc:
            raise self._bad_utf8(exc.start, exc.reason, start + skip) from None

    def _bad_utf8(self, at: int, reason: str, start: int) -> SSEError:
        """The error for invalid UTF-8 ``at`` bytes into bytes that start at stream
        offset ``start``."""
        return SSEError(
            f"invalid UTF-8 ({reason})",
            index=self._index,
            offset=start + at,
            frame_offset=self._block if self._block >= 0 else start,
        )

    def _dispatch(self, out: list[SSEMessage]) -> None:
        self._last_id = self._id
        if self._data_len:
            text = self._text
            if text is None:
                data = self._data
                del data[-1]  # the LF after the last value
                # strict: every line was checked; replace: a line end never joins
                # a bad sequence, so this is each line decoded, joined with LF
                text = data.decode("utf-8", self._errors)
                self._data = bytearray()
            else:
                self._text = None
            out.append(
                SSEMessage(
                    text,
                    self._event or "message",
                    self._last_id,
                    self._retry,
                    self._index,
                    self._block,
                )
            )
            self._index += 1
            self._data_len = 0
        self._event = ""
        self._retry = None
        self._block = -1


def utf8_fault(parts: Iterable[tuple[Buffer, int, int]], final: bool) -> tuple[int, str] | None:
    """The first invalid UTF-8 in the bytes ``obj[start:end]`` of each part, joined:
    its offset in them and the decoder's reason, else ``None``. ``final``: a
    sequence the end cuts short is a fault. Decoded ``WINDOW`` bytes at a time and
    dropped, so it never holds them whole (as a ``str``, up to 4x their size)."""
    carry = b""  # the start of a sequence a window cut
    at = 0  # offset of carry[0] in the joined bytes
    for obj, start, end in parts:
        if start >= end:
            continue
        with memoryview(obj) as view:
            for lo in range(start, end, WINDOW):
                window = carry + view[lo : min(lo + WINDOW, end)]
                try:
                    used = _utf8_decode(window, "strict", False)[1]
                except UnicodeDecodeError as exc:
                    return at + exc.start, exc.reason
                carry = window[used:]
                at += used
    if final and carry:
        try:
            _utf8_decode(carry, "strict", True)
        except UnicodeDecodeError as exc:
            return at + exc.start, exc.reason
    return None


def decode_sse_message(
    message: SSEMessage, *, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """The AG-UI event in one SSE message; ``SSEError`` unless its data is a JSON
    object with a non-empty string ``type``, ``SSELimitExceeded`` when it nests
    deeper than ``max_depth`` below the event object."""
    data = message.data
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):  # orjson's own cap, not a syntax error
            cap = ORJSON_MAX_DEPTH - 1
            if max_depth <= cap:
                raise _too_deep(message, f"max_depth={max_depth}") from None
            raise _too_deep(message, f"{cap} levels, orjson's limit for SSE events") from None
        raise SSEError(
            f"data is not valid JSON: {exc}",
            index=message.index,
            offset=message.offset,
            frame_offset=message.offset,
        ) from None
    if type(event) is not dict:
        raise SSEError(
            f"data is not a JSON object (a JSON {json_type(event)})",
            index=message.index,
            offset=message.offset,
            frame_offset=message.offset,
        )
    etype = event.get("type")
    if type(etype) is not str or not etype:
        raise SSEError(
            "the event has no type (a non-empty string 'type' is required)",
            index=message.index,
            offset=message.offset,
            frame_offset=message.offset,
        )
    # orjson has refused what nests deeper than its own cap; a document with at
    # most max_depth + 1 brackets cannot nest deeper than max_depth
    if (
        max_depth < ORJSON_MAX_DEPTH - 1
        and data.count("{") + data.count("[") > max_depth + 1
        and _deeper_than(data, max_depth)
    ):
        raise _too_deep(message, f"max_depth={max_depth}")
    return event


def _deeper_than(data: str, max_depth: int) -> bool:
    """Whether the JSON object ``data`` (valid: orjson has read it) nests deeper
    than ``max_depth`` below itself: orjson's own cap tells, on ``data`` wrapped
    in enough arrays that one level more than ``max_depth`` passes the cap. One
    more parse in C, where a walk of the parsed event in Python took 3x the
    parse (benchmarks/refusals.py)."""
    pad = ORJSON_MAX_DEPTH - 1 - max_depth
    try:
        orjson.loads(f"{'[' * pad}{data}{']' * pad}")
    except orjson.JSONDecodeError:
        return True  # valid JSON in valid brackets: only the depth can fail
    return False


def _too_deep(message: SSEMessage, limit: str) -> SSELimitExceeded:
    return SSELimitExceeded(
        f"JSON value nested deeper than {limit}",
        index=message.index,
        offset=message.offset,
        frame_offset=message.offset,
    )


def plain_sse_blocks(
    chunk: bytes, pos: int, max_size: int, max_brackets: int
) -> tuple[list[dict[str, Any]], int]:
    """SSEEventReader's fast path, for what AG-UI servers write: from ``pos`` (a
    block start), every block that is one ``data: <json>`` line and a blank line
    (LF only) whose data is at most ``max_size`` bytes and whose JSON is an event
    (an object with a non-empty str ``type``), parsed straight from the bytes.
    Returns the events and where the first other block starts: anything else
    stops it there, and the general parser takes over (and raises, if there is
    something to raise). A data line with more than ``max_brackets`` of ``{``
    and ``[`` stops it too, before it is parsed: possibly too deep, which the
    general path measures.
    The Cython twin is ``_fast.plain_sse_blocks``."""
    if pos < 0:
        raise ValueError("pos must be >= 0")
    events: list[dict[str, Any]] = []
    view = memoryview(chunk)
    loads = orjson.loads
    n = len(chunk)
    while chunk.startswith(b"data: ", pos):
        nl = chunk.find(b"\n", pos + 6)
        if nl < 0 or nl + 1 >= n or chunk[nl + 1] != 0x0A or nl - pos > max_size:
            break
        # counted before parsing: a refusal for depth then parses once less
        if (
            nl - pos - 6 > max_brackets
            and chunk.count(b"{", pos, nl) + chunk.count(b"[", pos, nl) > max_brackets
        ):
            break
        try:
            event = loads(view[pos + 6 : nl])
        except orjson.JSONDecodeError:
            break
        if type(event) is not dict:
            break
        etype = event.get("type")
        if type(etype) is not str or not etype:
            break
        events.append(event)
        pos = nl + 2
    return events, pos


# plain_sse_blocks' signature: (chunk, pos, max_size, max_brackets) -> (events, end)
PlainBlocks = Callable[[bytes, int, int, int], tuple[list[dict[str, Any]], int]]


class SSEEventReader:
    """AG-UI events (dicts) from an SSE byte stream (see the module doc)."""

    __slots__ = ("_error", "_max_brackets", "_max_depth", "_plain_blocks", "parser")

    def __init__(
        self,
        *,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        errors: Errors = "strict",
        max_depth: int = DEFAULT_MAX_DEPTH,
        plain_blocks: PlainBlocks | None = None,
    ) -> None:
        check_max_depth(max_depth)
        #: The underlying parser: ``last_event_id``, ``retry``, ``events_read``.
        self.parser = SSEParser(max_event_size=max_event_size, errors=errors)
        self._max_depth = max_depth
        # what the fast path may take without counting depth: orjson itself
        # refuses anything deeper than 1023, so a max_depth past that needs no count
        self._max_brackets = max_depth + 1 if max_depth < ORJSON_MAX_DEPTH - 1 else max_event_size
        self._error: DecodeError | None = None
        # the fast path's scan: this module's, or a twin of it handed in
        self._plain_blocks = plain_sse_blocks if plain_blocks is None else plain_blocks

    @property
    def pending_error(self) -> DecodeError | None:
        """The error this reader has hit (raised by the next call), or ``None``."""
        return self._error or self.parser.pending_error

    def feed(self, chunk: Buffer) -> list[dict[str, Any]]:
        """Add ``chunk`` (any contiguous bytes-like object) to the stream; return
        the events it completes."""
        if self._error is not None:
            raise self._error
        if type(chunk) is not bytes:
            with as_bytes_view(chunk) as view:
                return self._feed_view(view)
        parser = self.parser
        if b"\r" in chunk or not parser._may_skip_bom(chunk):
            return self._decode(parser.feed(chunk))
        # The general parser finishes what an earlier chunk left open (up to the
        # first blank line); from a block start the fast path takes plain blocks;
        # the general parser does the rest (and raises if there is cause).
        out: list[dict[str, Any]] = []
        pos = 0
        if not parser._at_block_start():
            if parser._at_line_start() and chunk[:1] == b"\n":
                pos = 1
            else:
                pos = chunk.find(b"\n\n") + 2
                if pos < 2:
                    return self._decode(parser.feed(chunk))
            out = self._decode(parser._feed_part(chunk, 0, pos))
            if self.pending_error is not None or not parser._at_block_start():
                return self._rest(out, chunk, pos)
        events, end = self._plain_blocks(chunk, pos, parser._max, self._max_brackets)
        if events:
            parser._skip_blocks(end - pos, len(events))
            out += events
        return self._rest(out, chunk, end)

    def _feed_view(self, view: memoryview) -> list[dict[str, Any]]:
        """``feed`` of a flat byte view: ``WINDOW`` bytes at a time, each copied to
        bytes (the parser is fed a stream split anywhere: the same events and
        errors as the whole chunk). An error after events waits for the next call."""
        if not view:
            return self.feed(b"")
        out: list[dict[str, Any]] = []
        for start in range(0, len(view), WINDOW):
            try:
                out += self.feed(view[start : start + WINDOW].tobytes())
            except DecodeError:
                if not out:
                    raise
                break  # held as pending_error
            if self.pending_error is not None:
                break
        return out

    def _rest(self, out: list[dict[str, Any]], chunk: Buffer, pos: int) -> list[dict[str, Any]]:
        """``out`` and the events of ``chunk[pos:]`` (``chunk``: bytes or a flat
        byte view), read by the general parser."""
        if pos >= len(chunk) or self.pending_error is not None:
            return out
        try:
            if type(chunk) is bytes:
                return out + self._decode(self.parser._feed_part(chunk, pos, len(chunk)))
            with memoryview(chunk) as view, view[pos:] as rest:
                return out + self._decode(self.parser.feed(rest))
        except DecodeError as exc:
            if not out:
                raise
            self._error = exc  # raised by the next call: the events before it come first
            return out

    def close(self) -> list[dict[str, Any]]:
        """End of stream: the events still held, including a last one without a blank line."""
        if self._error is not None:
            raise self._error
        return self._decode(self.parser.close())

    def _decode(self, messages: list[SSEMessage]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in messages:
            try:
                out.append(decode_sse_message(message, max_depth=self._max_depth))
            except DecodeError as exc:
                self._error = exc
                if not out:
                    raise
                break
        return out
