"""What a decoder reads from: a capture as bytes, a binary file or chunks, and its format.

Strategy: every whole-capture reader (the one-shot decoders, ``read_records``,
``iter_decode``) takes a ``ByteSource`` and walks it with ``chunks``: a buffer (any
contiguous bytes-like object, an ``mmap`` included) is one chunk, a file is read
``READ_SIZE`` bytes at a time, anything else is iterated as it is. ``sniff`` tells
the transport from the first byte, so a reader given no content type can pick its
decoder before it has seen more than one chunk.

Contract: ``sniff(head)`` is ``PROTO_MEDIA_TYPE`` for a first byte of 0 (the high
byte of the length prefix of any frame under 16 MiB), ``SSE_MEDIA_TYPE`` for a
first byte that text starts with (a BOM, a line end, a tab or a printable
character), ``None`` for no bytes, and a located ``DecodeError`` for anything else
(saying so when it is gzip's magic). ``chunks`` of a path, a str, a text-mode file
or str chunks is a ``TypeError`` saying what to pass (``errors.not_bytes``).
``not_a_stream(head, size)``: text read as SSE that gave no event is a stream without
events when its first ``HEAD_SIZE`` bytes are blank lines, comments and SSE fields,
and a located ``DecodeError`` ("not an AG-UI stream") when they hold any other line
(a web page, a log, a path's text): the readers of a whole stream (``decode``,
``iter_decode``...) keep a ``StreamHead`` and raise it rather than hand back no
events for input that was never a stream.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator
from mmap import mmap
from typing import IO, Final, TypeAlias

from .._compression import GZIP_HINT, GZIP_MAGIC
from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ..errors import DecodeError, not_bytes

__all__ = [
    "HEAD_SIZE",
    "READ_SIZE",
    "SSE_LINE",
    "Buffer",
    "ByteSource",
    "StreamHead",
    "chunks",
    "not_a_stream",
    "sniff",
]

READ_SIZE: Final = 1 << 16
# The first bytes of a stream kept to judge it when it gives no event.
HEAD_SIZE: Final = 1024
# A line an SSE stream of AG-UI events has: blank, a comment, or a field it uses.
SSE_LINE: Final = re.compile(rb"\A(?:|:.*|(?:data|event|id|retry)(?::.*)?)\Z", re.S)
# how a line the head cuts may start (a field name ends at the colon: "retry:" is 6)
_SSE_START: Final = re.compile(rb"\A(?:.{0,5}\Z|:|(?:data|event|id|retry):)", re.S)
_LINE_END: Final = re.compile(rb"\r\n|\r|\n")
_BOM: Final = b"\xef\xbb\xbf"

# What the decoders are fed: any contiguous bytes-like object (these are the usual
# ones; ``framing.as_bytes_view`` takes any other, an ``array.array`` say).
Buffer: TypeAlias = bytes | bytearray | memoryview | mmap
ByteSource = Buffer | IO[bytes] | Iterable[bytes]


def chunks(source: ByteSource) -> Iterator[Buffer]:
    """The chunks of ``source``: a buffer whole (an ``mmap`` too, read in place,
    not through its file position), a file ``READ_SIZE`` bytes at a time, an
    iterable of chunks as it comes; ``TypeError`` for anything else."""
    if isinstance(source, (bytes, bytearray, memoryview, mmap)):
        yield source
    elif isinstance(source, (str, os.PathLike, io.TextIOBase)):
        raise not_bytes(source)  # a path, or text: say what to pass
    elif hasattr(source, "read"):
        read = source.read
        while chunk := read(READ_SIZE):
            if isinstance(chunk, str):
                raise not_bytes(source)
            yield chunk
    else:
        try:
            memoryview(source).release()  # type: ignore[arg-type]
        except TypeError:
            pass
        else:  # another bytes-like object (array.array...): one chunk
            yield source  # type: ignore[misc]
            return
        try:
            parts = iter(source)
        except TypeError:
            raise TypeError(
                "source must be a bytes-like object, a binary file or an iterable of "
                f"chunks, not {type(source).__name__}"
            ) from None
        for chunk in parts:
            if isinstance(chunk, str):  # the lines of a text-mode file, say
                raise not_bytes(chunk, "chunk")
            yield chunk


def sniff(head: bytes | bytearray | memoryview, *, final: bool = True) -> str | None:
    """The transport of a capture from its first bytes, ``None`` if ``head`` is empty.

    A frame's length prefix starts with a 0 byte for every frame under 16 MiB;
    SSE is text, whose first byte is a BOM, a line end or a printable character.
    A stream fed in pieces passes ``final=False``: then a lone first byte 0x1f is
    ``None`` too, since the next byte tells gzip's magic from a bad first byte and
    the error must read the same however the stream is cut.
    """
    if not head:
        return None
    first = head[0]
    if not final and len(head) == 1 and first == GZIP_MAGIC[0]:
        return None
    if first == 0:
        return PROTO_MEDIA_TYPE
    if first in (0xEF, 0x0A, 0x0D, 0x09) or 0x20 <= first < 0x7F:
        return SSE_MEDIA_TYPE
    if bytes(head[:2]) == GZIP_MAGIC:
        raise DecodeError(f"cannot tell the stream format: {GZIP_HINT}", index=0, offset=0)
    raise DecodeError(
        f"cannot tell the stream format: first byte is 0x{first:02x}, neither the "
        "start of a protobuf frame nor text (pass content_type)",
        index=0,
        offset=0,
    )


class StreamHead:
    """A stream's first ``HEAD_SIZE`` bytes and its size, kept as it is read, to judge
    it by when it ends with no event (``error``: ``not_a_stream``'s, for SSE)."""

    __slots__ = ("data", "size")

    def __init__(self) -> None:
        self.data = b""
        self.size = 0

    def add(self, chunk: object) -> None:
        """Count ``chunk``; nothing for what is not a contiguous bytes-like object
        (the decoder it is fed to says what is wrong)."""
        if type(chunk) is bytes:
            if len(self.data) < HEAD_SIZE:
                self.data += chunk[: HEAD_SIZE - len(self.data)]
            self.size += len(chunk)
            return
        try:
            with memoryview(chunk) as view, view.cast("B") as flat:  # type: ignore[arg-type]
                if len(self.data) < HEAD_SIZE:
                    self.data += flat[: HEAD_SIZE - len(self.data)].tobytes()
                self.size += flat.nbytes
        except (TypeError, ValueError):
            pass

    def error(self, content_type: str | None) -> DecodeError | None:
        """For a stream of ``content_type`` that gave no event: why it is not a stream."""
        if self.size and content_type == SSE_MEDIA_TYPE:
            return not_a_stream(self.data, self.size)
        return None


def not_a_stream(head: bytes, size: int) -> DecodeError | None:
    """For text read as SSE that gave no event: the error, at the first line no AG-UI
    stream has, when ``head`` (its first ``HEAD_SIZE`` bytes, of ``size`` in all) holds
    one; else ``None`` (an empty stream, or one of comments and keep-alives only). A
    line the head cuts is judged by its start."""
    pos = len(_BOM) if head.startswith(_BOM) else 0
    ends = list(_LINE_END.finditer(head, pos))
    starts = [pos] + [m.end() for m in ends]
    lines = [(a, m.start(), SSE_LINE) for a, m in zip(starts, ends, strict=False)]
    lines.append((starts[-1], len(head), SSE_LINE if len(head) >= size else _SSE_START))
    for number, (a, b, rule) in enumerate(lines, 1):
        if not rule.match(head[a:b]):
            line = head[a:b][:40].decode("utf-8", "replace")
            more = "..." if b - a > 40 or b == len(head) < size else ""
            return DecodeError(
                f"not an AG-UI stream: no event in {size:,} bytes, and line {number} "
                f"({line!r}{more}) is neither an SSE field (data:, event:, id:, retry:) "
                "nor a comment",
                offset=a,
            )
    return None
