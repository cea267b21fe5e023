"""Opening captures: a file or stdin, gzip, HAR, and telling the format.

Strategy: every file (or stdin) becomes one or more ``Input``s (not a
``_streaming`` producer, nor a decoder's ``ByteSource``), each a stream of byte
chunks in one format (``proto``, ``sse`` or ``jsonl``) with a label for messages
and, for HAR, the entry it came from. Nothing is read whole except HAR, which is
JSON and must be parsed at once (up to ``max_har_size`` bytes).

Detection, in order:

1. gzip is recognised by its magic bytes (``1f 8b``), whatever the file is
   called, and unwrapped as a stream (then detection continues inside it);
2. ``--format`` wins when given;
3. HAR: a JSON object whose first key is ``"log"`` (or a ``.har`` name);
4. JSON Lines of events: text starting with ``{`` or ``[``;
5. otherwise ``agui_wire.sniff``: a 0 byte starts a binary stream (every frame
   the reference accepts is under 16 MiB), text is SSE, anything else is an
   error that says what the first byte was.

HAR (browser devtools export, ``log.entries[]``): an entry is an AG-UI response
when its response content type (``content.mimeType``, else the
``Content-Type`` header) is ``text/event-stream`` or
``application/vnd.ag-ui.event+proto`` (also ``application/x-ag-ui``); its body is
``content.text``, base64-decoded when ``content.encoding`` is ``base64`` (how
Chrome stores binary bodies). Entries are numbered as in the file (0-based).
With several AG-UI entries, ``entry`` picks one (``None`` returns all of them,
and the command decides whether that is ambiguous).

Reads use ``read1`` so a live stream piped into stdin is decoded as it arrives.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import os
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Final

import orjson

from .._codec.sources import sniff
from .._compression import GZIP_MAGIC
from .._mediatypes import PROTO_MEDIA_TYPE, media_type
from ..errors import DecodeError
from ._common import CliError, InputError, UsageError, human_bytes

__all__ = [
    "DEFAULT_MAX_HAR_SIZE",
    "FORMATS",
    "HarEntry",
    "Input",
    "describe_entries",
    "format_of",
    "open_sources",
]

FORMATS: Final = ("auto", "proto", "sse", "jsonl", "har")
DEFAULT_MAX_HAR_SIZE: Final = 512 * 1024 * 1024
READ_SIZE: Final = 1 << 16
_HAR_HEAD: Final = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"log"\s*:')


class _Peekable:
    """A binary stream with ``peek(n)``; counts the bytes read from the raw stream."""

    def __init__(self, raw: IO[bytes], counter: _Peekable | None = None) -> None:
        self.raw = raw
        self.head = b""
        self.pos = 0  # bytes read from raw
        self.counter = counter  # the outermost stream (what progress measures)

    def _read_raw(self, n: int) -> bytes:
        read1 = getattr(self.raw, "read1", None)
        data = read1(n) if read1 is not None else self.raw.read(n)
        self.pos += len(data)
        return data

    def peek(self, n: int) -> bytes:
        while len(self.head) < n:
            data = self._read_raw(max(n - len(self.head), READ_SIZE))
            if not data:
                break
            self.head += data
        return self.head[:n]

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            rest = self.raw.read()
            self.pos += len(rest)
            out, self.head = self.head + rest, b""
            return out
        return self.read1(n)

    def read1(self, n: int = READ_SIZE) -> bytes:
        if self.head:
            out, self.head = self.head[:n], self.head[n:]
            return out
        return self._read_raw(n)

    @property
    def consumed(self) -> int:
        """Bytes of the outermost (raw, maybe compressed) input read so far."""
        return self.counter.pos if self.counter is not None else self.pos


@dataclass
class HarEntry:
    """One AG-UI response found in a HAR file."""

    index: int  # position in log.entries
    method: str
    url: str
    status: int | None
    content_type: str
    body: bytes | None  # None: the export has no body for it
    base64: bool
    # for inspect --timeline: when the request started (ISO 8601), how long it took in all
    # and by phase (ms), and when each SSE message arrived (_eventSourceMessages, epoch s)
    started: str | None = None
    time: float | None = None
    timings: dict[str, Any] | None = None
    message_times: list[float] | None = None

    def exchange(self) -> str:
        """Its request and response in a line: method, URL, status, type, body size."""
        size = "no body captured" if self.body is None else f"{len(self.body):,} bytes"
        if self.base64 and self.body is not None:
            size += " (base64)"
        url = self.url if len(self.url) <= 70 else self.url[:69] + "…"
        return f"{self.method} {url}  {self.status or '-'}  {self.content_type}  {size}"

    def describe(self) -> str:
        """Its line in a list of entries: the index, then ``exchange()``."""
        return f"entry {self.index:>3}  {self.exchange()}"


@dataclass
class Input:
    """One stream to decode: its chunks, format, and where it came from."""

    label: str  # for messages: a path, "stdin", "x.har entry 3"
    format: str  # "proto", "sse" or "jsonl"
    chunks: Iterator[bytes]
    size: int | None = None  # raw bytes in total, when known (progress)
    entry: int | None = None  # HAR entry index
    har: HarEntry | None = None
    _reader: _Peekable | None = field(default=None, repr=False)

    def consumed(self, fallback: int) -> int:
        """Raw input bytes read so far (for progress); ``fallback`` when not counted."""
        return self._reader.consumed if self._reader is not None else fallback


def _chunks(reader: _Peekable) -> Iterator[bytes]:
    while True:
        data = reader.read1(READ_SIZE)
        if not data:
            return
        yield data


def _open_raw(path: str) -> tuple[IO[bytes], str, int | None]:
    if path == "-":
        return sys.stdin.buffer, "stdin", None
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed when the process ends)
    except IsADirectoryError:
        raise InputError(f"cannot read {path}: it is a directory") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        size: int | None = os.fstat(fh.fileno()).st_size
    except OSError:
        size = None
    return fh, path, size


def format_of(content_type: str | None) -> str | None:
    """The capture format of an AG-UI response's Content-Type (``proto``, ``sse``),
    ``None`` for anything else."""
    if not content_type:
        return None
    try:
        kind = media_type(content_type)
    except ValueError:
        return None
    return "proto" if kind == PROTO_MEDIA_TYPE else "sse"


def _header(headers: Any, name: str) -> str | None:
    if isinstance(headers, list):
        for h in headers:
            if isinstance(h, dict) and str(h.get("name", "")).lower() == name:
                value = h.get("value")
                return value if isinstance(value, str) else None
    return None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _har_entries(data: bytes, label: str) -> tuple[list[HarEntry], int]:
    try:
        har = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CliError(f"{label}: not a valid HAR file (JSON error: {exc})") from None
    entries = har.get("log", {}).get("entries") if isinstance(har, dict) else None
    if not isinstance(entries, list):
        raise CliError(f"{label}: not a HAR file (no log.entries array)")
    found: list[HarEntry] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        response = _obj(entry.get("response"))
        content = _obj(response.get("content"))
        ctype = content.get("mimeType") if isinstance(content.get("mimeType"), str) else None
        header_ctype = _header(response.get("headers"), "content-type")
        kind = format_of(ctype) or format_of(header_ctype)
        if kind is None:
            continue
        request = _obj(entry.get("request"))
        text = content.get("text")
        encoded = content.get("encoding") == "base64"
        body: bytes | None = None
        if isinstance(text, str):
            if encoded:
                try:
                    body = base64.b64decode(text, validate=False)
                except (binascii.Error, ValueError) as exc:
                    raise CliError(f"{label}: entry {i}: body is not valid base64: {exc}") from None
            else:
                body = text.encode("utf-8", "surrogatepass")
        status = response.get("status")
        total = entry.get("time")
        found.append(
            HarEntry(
                index=i,
                method=str(request.get("method", "?")),
                url=str(request.get("url", "?")),
                status=status if isinstance(status, int) else None,
                content_type=(ctype or header_ctype or "").split(";")[0].strip(),
                body=body,
                base64=encoded,
                started=entry.get("startedDateTime")
                if isinstance(entry.get("startedDateTime"), str)
                else None,
                time=float(total) if isinstance(total, (int, float)) and total >= 0 else None,
                timings=entry.get("timings") if isinstance(entry.get("timings"), dict) else None,
                message_times=_message_times(entry.get("_eventSourceMessages")),
            )
        )
    return found, len(entries)


def _message_times(messages: Any) -> list[float] | None:
    """The ``time`` (epoch seconds) of each message of a HAR entry's
    ``_eventSourceMessages`` (added by some HAR writers); None unless all have one."""
    if not isinstance(messages, list) or not messages:
        return None
    times = [m.get("time") if isinstance(m, dict) else None for m in messages]
    ok = all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in times)
    return [float(t) for t in times] if ok else None  # type: ignore[arg-type]


def describe_entries(entries: list[HarEntry]) -> str:
    return "\n".join("  " + e.describe() for e in entries)


def _detect(reader: _Peekable, path: str) -> str:
    head = reader.peek(1)
    if not head:
        return "sse"  # empty: any format yields no events
    if head[:1] in (b"{", b"[", b" ", b"\t", b"\r", b"\n", b"\xef"):
        # JSON-ish (or SSE starting with blank lines / a BOM): look further.
        more = reader.peek(256)
        if _HAR_HEAD.match(more):
            return "har"
        stripped = more.lstrip(b"\xef\xbb\xbf \t\r\n")
        if stripped[:1] in (b"{", b"["):
            return "har" if path.lower().endswith((".har", ".har.gz")) else "jsonl"
    kind = sniff(head)
    return "proto" if kind == PROTO_MEDIA_TYPE else "sse"


def _read_all(reader: _Peekable, limit: int, label: str) -> bytes:
    out = bytearray()
    while True:
        data = reader.read1(READ_SIZE)
        if not data:
            return bytes(out)
        out += data
        if len(out) > limit:
            raise InputError(
                f"{label}: HAR input is over {human_bytes(limit)}, the limit for HAR files "
                "(which are loaded whole); raise it with --max-har-size"
            )


def open_sources(
    path: str,
    *,
    format: str = "auto",
    entry: int | None = None,
    max_har_size: int = DEFAULT_MAX_HAR_SIZE,
) -> list[Input]:
    """The streams in the input at ``path`` (``-``: stdin); see the module doc."""
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (choose from {', '.join(FORMATS)})")
    raw, label, size = _open_raw(path)
    outer = _Peekable(raw)
    reader = outer
    try:
        if outer.peek(2) == GZIP_MAGIC:
            reader = _Peekable(gzip.GzipFile(fileobj=outer, mode="rb"), counter=outer)  # type: ignore[call-overload]
            label += " (gzip)"
        kind = format if format != "auto" else _detect(reader, path)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read {label}: {exc}") from None
    except DecodeError:
        first = reader.peek(1)
        raise CliError(
            f"{label}: cannot tell the format: the first byte is 0x{first[0]:02x}, neither the "
            "start of a binary frame (0x00) nor text; not an AG-UI capture? "
            "(--format proto|sse|jsonl|har forces one)"
        ) from None
    if kind != "har":
        if entry is not None:
            raise UsageError(f"--entry is for HAR files; {label} is not one")
        return [Input(label, kind, _guard(_chunks(reader), label), size, _reader=reader)]
    try:
        data = _read_all(reader, max_har_size, label)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read {label}: {exc}") from None
    entries, total = _har_entries(data, label)
    if not entries:
        raise CliError(
            f"{label}: no AG-UI responses among its {total} entries (looked for content type "
            "text/event-stream or application/vnd.ag-ui.event+proto)"
        )
    if entry is not None:
        picked = [e for e in entries if e.index == entry]
        if not picked:
            if not 0 <= entry < total:
                last = f"0..{total - 1}" if total > 1 else "0"
                what = f"no entry {entry}: it has {total} entries ({last})"
            else:
                what = f"entry {entry} is not an AG-UI response"
            raise UsageError(
                f"{label}: {what}; the AG-UI responses are:\n" + describe_entries(entries)
            )
        entries = picked
    sources = []
    for e in entries:
        body = e.body if e.body is not None else b""
        fmt = format if format not in ("auto", "har") else None
        sources.append(
            Input(
                f"{label} entry {e.index}",
                fmt or _body_format(e),
                iter([body[i : i + READ_SIZE] for i in range(0, len(body), READ_SIZE)]),
                len(body),
                entry=e.index,
                har=e,
            )
        )
    return sources


def _body_format(entry: HarEntry) -> str:
    return format_of(entry.content_type) or "sse"


def _guard(chunks: Iterator[bytes], label: str) -> Iterator[bytes]:
    """Read errors in the middle of a stream (a corrupt gzip member...) as InputError."""
    try:
        yield from chunks
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read {label}: {exc}") from None
