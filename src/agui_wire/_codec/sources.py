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
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from mmap import mmap
from typing import IO, Final, TypeAlias

from .._compression import GZIP_HINT, GZIP_MAGIC
from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ..errors import DecodeError, not_bytes

__all__ = ["READ_SIZE", "Buffer", "ByteSource", "chunks", "sniff"]

READ_SIZE: Final = 1 << 16

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
