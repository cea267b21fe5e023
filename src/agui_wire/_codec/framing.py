"""Length-prefix framing of the binary AG-UI transport, sans I/O (pure Python).

Strategy: a binary stream is a concatenation of frames, each a 4-byte big-endian
unsigned length N followed by N payload bytes (one serialized ``ag_ui.Event``). No
header, trailer or delimiter. ``frame()`` writes one frame; ``FrameReader`` is fed
the stream in chunks split anywhere and hands back complete payloads. It never
touches a socket and never looks inside a payload: a 0-length frame is handed back
as an empty payload (the event decoder rejects it, the framer is only transport).
``agui_wire._fast`` has a Cython twin with identical behaviour and errors;
``agui_wire._codec.selected`` picks one.

Contract of ``FrameReader``:

* The limit is on the payload: a frame is refused when ``N > max_frame_size``,
  checked the moment its 4-byte prefix is complete, before any of its body is
  buffered or waited for (so a declared 0xFFFFFFFF costs nothing). The default,
  ``DEFAULT_MAX_FRAME_SIZE = 10 MiB - 4``, accepts exactly the frames the reference
  client (``@ag-ui/client`` 1.0.0, which refuses ``4 + N > 10 MiB``) accepts.
* Work is amortised O(bytes fed): complete frames inside a chunk are sliced out of
  it in place; only the tail of an incomplete frame is copied into an internal
  buffer, which grows by appending and is handed back (copied once) when whole.
* Payload lifetime: every returned payload is independent of later ``feed()`` calls
  and of the caller's buffer. A payload of at least ``ZERO_COPY_MIN`` bytes that
  lies entirely inside an immutable ``bytes`` chunk comes back as a read-only
  ``memoryview`` of that chunk (zero copy; it keeps the chunk alive). Every other
  payload is a ``bytes`` copy: small ones (a copy is cheaper than a view), ones
  assembled across chunks, and ones fed in a mutable buffer (``bytearray``,
  ``memoryview``) that the caller may reuse. Both types support the buffer protocol.
* Errors never lose good frames: ``feed()`` returns every frame completed before a
  bad prefix; the error (``FrameTooLarge``) is raised by that call when no frame
  precedes it in the chunk, otherwise by the next ``feed()`` or ``close()``, and it
  is visible at once as ``pending_error``. Once failed the reader stays failed and
  re-raises the same error. ``close()`` raises ``TruncatedStream`` (how many bytes
  were left over) when the stream ends inside a frame.
* Positions for errors: read ``frames_read`` and ``offset`` before a ``feed()``;
  payload k of the list it returns is frame ``frames_read + k``, which starts at
  ``offset + sum(4 + len(p) for the payloads before it)`` (its payload 4 bytes
  later).
"""

from __future__ import annotations

from mmap import mmap
from struct import Struct
from typing import Final

from .._compression import GZIP_HINT, GZIP_MAGIC
from ..errors import (
    DecodeError,
    EncodeError,
    FrameTooLarge,
    StreamClosed,
    TruncatedStream,
    not_bytes,
)
from ..schema import DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER_SIZE, MAX_FRAME_PAYLOAD

__all__ = [
    "ZERO_COPY_MIN",
    "FrameReader",
    "frame",
]

# Payloads at least this long that sit inside an immutable bytes chunk are handed
# back as memoryviews instead of copies.
ZERO_COPY_MIN: Final = 2048
_GZIP_PREFIX: Final = int.from_bytes(GZIP_MAGIC, "big")  # as the high half of a prefix

_U32: Final = Struct(">I")
_unpack_from = _U32.unpack_from


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """One frame: the 4-byte big-endian length of ``payload``, then ``payload``.

    Raises ``EncodeError`` for a payload longer than 0xFFFFFFFF bytes.
    """
    if type(payload) is bytes:
        n = len(payload)
    else:
        payload = memoryview(payload)
        n = payload.nbytes
        if n <= MAX_FRAME_PAYLOAD and not payload.c_contiguous:
            payload = payload.tobytes()
    if n > MAX_FRAME_PAYLOAD:
        raise EncodeError(_too_long_to_frame(n))
    return _U32.pack(n) + payload


def _too_long_to_frame(n: int) -> str:
    return f"payload of {n} bytes does not fit a 4-byte length prefix (at most {MAX_FRAME_PAYLOAD})"


# Error texts, shared with the Cython twin so both say exactly the same thing.


def _too_large(index: int, offset: int, declared: int, limit: int) -> FrameTooLarge:
    # a gzip stream read as frames: its magic 1f 8b is the first prefix's high bytes
    gzip = f"; {GZIP_HINT}" if offset == 0 and declared >> 16 == _GZIP_PREFIX else ""
    return FrameTooLarge(
        f"frame declares {declared} bytes, above max_frame_size {limit}{gzip}",
        index=index,
        offset=offset,
        frame_offset=offset,
    )


def _truncated(
    index: int, frame_offset: int, end: int, header: int, declared: int
) -> TruncatedStream:
    left = end - frame_offset
    if declared < 0:
        detail = f"length prefix incomplete: {header} of {FRAME_HEADER_SIZE} bytes"
    else:
        detail = f"frame declares {declared} bytes, {left - FRAME_HEADER_SIZE} received"
    return TruncatedStream(
        f"stream ended mid-frame: {left} trailing bytes could not be read as a "
        f"complete frame ({detail})",
        index=index,
        offset=end,
        frame_offset=frame_offset,
    )


def check_max_frame_size(max_frame_size: int) -> int:
    """``max_frame_size`` if it is valid, else ``ValueError`` (bool is not an int here)."""
    if type(max_frame_size) is not int or not 0 <= max_frame_size <= MAX_FRAME_PAYLOAD:
        raise ValueError(
            f"max_frame_size must be an int in [0, {MAX_FRAME_PAYLOAD}], not {max_frame_size!r}"
        )
    return max_frame_size


_CLOSED = "FrameReader.feed() called after close()"


def as_bytes_view(chunk: object) -> memoryview:
    """A flat byte view of ``chunk``; ``TypeError`` for anything that is not a
    contiguous bytes-like object (an int is not: ``bytes(5)`` would be 5 NULs)."""
    try:
        mv = memoryview(chunk)  # type: ignore[arg-type]
    except TypeError:
        if isinstance(chunk, str):
            raise not_bytes(chunk, "chunk") from None
        raise TypeError(f"chunk must be a bytes-like object, not {type(chunk).__name__}") from None
    if not mv.c_contiguous:
        raise TypeError("chunk must be a contiguous bytes-like object")
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    return mv


class FrameReader:
    """Incremental reader of length-prefixed frames (see the module doc)."""

    __slots__ = (
        "_body",
        "_closed",
        "_error",
        "_fed",
        "_frames",
        "_header",
        "_max",
        "_need",
        "_offset",
    )

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._max = check_max_frame_size(max_frame_size)
        self._frames = 0  # complete frames handed out
        self._offset = 0  # stream offset of the next (incomplete) frame
        self._fed = 0  # bytes fed so far
        self._header = b""  # 0-3 bytes of an incomplete prefix
        self._need = -1  # declared length of the frame being assembled, -1 if unknown
        self._body = bytearray()  # body bytes of the frame being assembled
        self._error: DecodeError | None = None
        self._closed = False

    @property
    def max_frame_size(self) -> int:
        """The largest payload accepted, in bytes."""
        return self._max

    @property
    def frames_read(self) -> int:
        """Complete frames handed out so far: the index of the next frame."""
        return self._frames

    @property
    def offset(self) -> int:
        """Stream byte offset where the next (not yet complete) frame starts."""
        return self._offset

    @property
    def bytes_fed(self) -> int:
        """Bytes passed to ``feed()`` so far."""
        return self._fed

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held back (0 between frames)."""
        return len(self._header) + len(self._body) + (FRAME_HEADER_SIZE if self._need >= 0 else 0)

    @property
    def pending_error(self) -> DecodeError | None:
        """The error this reader has hit (raised by the next call), or ``None``."""
        return self._error

    @property
    def closed(self) -> bool:
        return self._closed

    def feed(self, chunk: bytes | bytearray | memoryview | mmap) -> list[bytes | memoryview]:
        """Add ``chunk`` (any contiguous bytes-like object) to the stream; return the
        payloads of the frames it completes."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise StreamClosed(_CLOSED)
        if type(chunk) is bytes:  # immutable: slices may be views
            return self._feed(chunk, memoryview(chunk))
        with as_bytes_view(chunk) as mv:  # released: no stored error pins the caller's buffer
            return self._feed(None, mv)

    def _feed(self, data: bytes | None, mv: memoryview) -> list[bytes | memoryview]:
        # data: the chunk when it is bytes (views of it may be handed out), else None
        n = len(mv)
        self._fed += n
        out: list[bytes | memoryview] = []
        pos = 0
        if self._need >= 0 or self._header:
            pos = self._resume(mv, n, out)
            if pos < 0:  # frame still incomplete, or refused
                return self._settle(out)
        limit = self._max
        frames = self._frames
        offset = self._offset
        while n - pos >= FRAME_HEADER_SIZE:
            size = _unpack_from(mv, pos)[0]
            if size > limit:
                self._frames = frames
                self._offset = offset
                self._error = _too_large(frames, offset, size, limit)
                return self._settle(out)
            end = pos + FRAME_HEADER_SIZE + size
            if end > n:
                self._need = size
                self._body = bytearray(mv[pos + FRAME_HEADER_SIZE :])
                break
            if data is None:
                out.append(mv[pos + FRAME_HEADER_SIZE : end].tobytes())
            elif size >= ZERO_COPY_MIN:
                out.append(mv[pos + FRAME_HEADER_SIZE : end])
            else:
                out.append(data[pos + FRAME_HEADER_SIZE : end])
            frames += 1
            offset += end - pos
            pos = end
        else:
            if pos < n:
                self._header = mv[pos:].tobytes()
        self._frames = frames
        self._offset = offset
        return out

    def _resume(self, mv: memoryview, n: int, out: list[bytes | memoryview]) -> int:
        # Continue the frame left incomplete by the previous chunk. Returns the
        # position in ``mv`` after it, or -1 when it is still incomplete (all of
        # ``mv`` consumed) or its prefix was refused.
        pos = 0
        if self._need < 0:
            take = min(FRAME_HEADER_SIZE - len(self._header), n)
            header = self._header + mv[:take].tobytes()
            pos = take
            if len(header) < FRAME_HEADER_SIZE:
                self._header = header
                return -1
            size = _unpack_from(header)[0]
            if size > self._max:
                self._error = _too_large(self._frames, self._offset, size, self._max)
                return -1
            self._header = b""
            self._need = size
        take = min(self._need - len(self._body), n - pos)
        if take:
            self._body += mv[pos : pos + take]
            pos += take
        if len(self._body) < self._need:
            return -1
        out.append(bytes(self._body))
        self._frames += 1
        self._offset += FRAME_HEADER_SIZE + self._need
        self._need = -1
        self._body = bytearray()
        return pos

    def _settle(self, out: list[bytes | memoryview]) -> list[bytes | memoryview]:
        # Hand out the good frames; an error found after them waits for the next call.
        if self._error is not None:
            self._need = -1
            self._header = b""
            self._body = bytearray()
            if not out:
                raise self._error
        return out

    def close(self) -> None:
        """End of stream. Raises ``TruncatedStream`` if it ended inside a frame."""
        if self._error is not None:
            raise self._error
        if self._closed:
            return
        self._closed = True
        if self._need >= 0 or self._header:
            self._error = _truncated(
                self._frames, self._offset, self._fed, len(self._header), self._need
            )
            self._need = -1
            self._header = b""
            self._body = bytearray()
            raise self._error

    def __repr__(self) -> str:
        return (
            f"<FrameReader frames_read={self._frames} offset={self._offset} "
            f"buffered={self.buffered} max_frame_size={self._max}>"
        )
