"""Streaming HTTP content codings for event streams: gzip, Brotli, Zstandard.

Strategy: one compressor per response, flushed after every write, so each write
decodes on its own at the client (a browser's ``fetch`` hands the bytes on as
they arrive): ``compress(data)`` returns everything needed to decode ``data``,
``finish()`` ends the stream. What each coding needs:

* ``gzip``: zlib (stdlib), ``Z_SYNC_FLUSH`` per write; level 6.
* ``br``: the ``brotli`` (or ``brotlicffi``) package, ``flush()`` per write;
  quality 5 (11, the library default, costs ~50x the CPU for a few % of bytes),
  window 2**22 (what browsers decode).
* ``zstd``: the stdlib ``compression.zstd`` (Python 3.14+) or the ``zstandard``
  package, a block flush per write; level 3, window at most 8 MiB (Chrome and
  Firefox refuse a larger one in ``Content-Encoding: zstd``, RFC 9659).

``CODINGS`` is the server's preference when a client accepts several, from
``agui-wire cost`` and ``benchmarks/server_cost.py`` on AG-UI traffic: flushed per
event, gzip is the smallest (Brotli and zstd pay more per flush: ~20-30% more
bytes) and zstd the cheapest on CPU (~0.6x gzip's; Brotli ~2x); in large batches
the three are within ~15% of each other. gzip first, then, as every client
decodes it; zstd next for its CPU.
``negotiate_encoding`` picks from ``Accept-Encoding`` (RFC 9110 section 12.5.3).
A coding whose library is missing is not ``available()``; asking for it by name
raises ``CompressionUnavailable`` naming the package to install.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from .errors import CompressionUnavailable

__all__ = [
    "CODINGS",
    "GZIP_HINT",
    "GZIP_MAGIC",
    "Compressor",
    "available",
    "compressor",
    "decompressor",
    "negotiate_encoding",
]

CODINGS: Final = ("gzip", "zstd", "br")
GZIP_LEVEL: Final = 6
BROTLI_QUALITY: Final = 5
BROTLI_LGWIN: Final = 22
ZSTD_LEVEL: Final = 3
ZSTD_WINDOW_LOG: Final = 23  # 8 MiB: the most browsers accept in Content-Encoding

# A gzip stream where an event stream was expected: the decoders and the CLI recognise
# it by its first two bytes and say what to do (decompress it first).
GZIP_MAGIC: Final = b"\x1f\x8b"
GZIP_HINT: Final = (
    "the input starts 1f 8b, gzip's magic: it is gzip-compressed, so decompress it first "
    "(gzip.decompress(data), or gzip.open(path, 'rb') for a file; an HTTP client undoes "
    "Content-Encoding: gzip itself)"
)

_PACKAGES: Final = {"br": "brotli", "zstd": "zstandard"}
_MAX_HEADER: Final = 2048  # Accept-Encoding characters looked at (bounded work)


class Compressor(Protocol):
    def compress(self, data: bytes) -> bytes:
        """``data`` compressed and flushed: the client can decode all of it now."""

    def finish(self) -> bytes:
        """The end of the compressed stream."""


def _module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _brotli() -> Any:
    return _module("brotli", "brotlicffi")


def _zstd() -> tuple[str, Any] | None:
    std = _module("compression.zstd")
    if std is not None:
        return "std", std
    third = _module("zstandard")
    return None if third is None else ("zstandard", third)


def available() -> tuple[str, ...]:
    """The codings this interpreter can produce, in ``CODINGS`` order."""
    return tuple(
        c
        for c in CODINGS
        if c == "gzip" or (c == "br" and _brotli() is not None) or (c == "zstd" and _zstd())
    )


def _missing(coding: str) -> CompressionUnavailable:
    return CompressionUnavailable(coding, _PACKAGES.get(coding, "?"))


class _Gzip:
    __slots__ = ("_c",)

    def __init__(self, level: int) -> None:
        self._c = zlib.compressobj(level, zlib.DEFLATED, 31)

    def compress(self, data: bytes) -> bytes:
        return self._c.compress(data) + self._c.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._c.flush()


class _Brotli:
    __slots__ = ("_c",)

    def __init__(self, lib: Any, quality: int) -> None:
        self._c = lib.Compressor(quality=quality, lgwin=BROTLI_LGWIN)

    def compress(self, data: bytes) -> bytes:
        return bytes(self._c.process(data)) + bytes(self._c.flush())

    def finish(self) -> bytes:
        return bytes(self._c.finish())


class _ZstdStd:
    __slots__ = ("_block", "_c", "_frame")

    def __init__(self, lib: Any, level: int) -> None:
        params = {lib.CompressionParameter.compression_level: level}
        params[lib.CompressionParameter.window_log] = ZSTD_WINDOW_LOG
        self._c = lib.ZstdCompressor(options=params)
        self._block = lib.ZstdCompressor.FLUSH_BLOCK
        self._frame = lib.ZstdCompressor.FLUSH_FRAME

    def compress(self, data: bytes) -> bytes:
        return bytes(self._c.compress(data, self._block))

    def finish(self) -> bytes:
        return bytes(self._c.flush(self._frame))


class _Zstandard:
    __slots__ = ("_block", "_c")

    def __init__(self, lib: Any, level: int) -> None:
        params = lib.ZstdCompressionParameters.from_level(level, window_log=ZSTD_WINDOW_LOG)
        self._c = lib.ZstdCompressor(compression_params=params).compressobj()
        self._block = lib.COMPRESSOBJ_FLUSH_BLOCK

    def compress(self, data: bytes) -> bytes:
        return bytes(self._c.compress(data)) + bytes(self._c.flush(self._block))

    def finish(self) -> bytes:
        return bytes(self._c.flush())


def compressor(coding: str, level: int | None = None) -> Compressor:
    """A new streaming compressor for ``coding`` (``level``: the coding's default)."""
    if coding == "gzip":
        return _Gzip(GZIP_LEVEL if level is None else level)
    if coding == "br":
        lib = _brotli()
        if lib is None:
            raise _missing(coding)
        return _Brotli(lib, BROTLI_QUALITY if level is None else level)
    if coding == "zstd":
        found = _zstd()
        if found is None:
            raise _missing(coding)
        kind, zlib_ = found
        level = ZSTD_LEVEL if level is None else level
        return _ZstdStd(zlib_, level) if kind == "std" else _Zstandard(zlib_, level)
    raise ValueError(f"unknown content coding {coding!r}; known: {', '.join(CODINGS)}")


def decompressor(coding: str) -> Callable[[bytes], bytes]:
    """A streaming decompressor: call it on each chunk in order, as a client does."""
    if coding == "gzip":
        return zlib.decompressobj(31).decompress
    if coding == "br":
        lib = _brotli()
        if lib is None:
            raise _missing(coding)
        d = lib.Decompressor()
        return d.process if hasattr(d, "process") else d.decompress  # type: ignore[no-any-return]
    if coding == "zstd":
        found = _zstd()
        if found is None:
            raise _missing(coding)
        kind, lib = found
        if kind == "std":
            return lib.ZstdDecompressor().decompress  # type: ignore[no-any-return]
        return lib.ZstdDecompressor().decompressobj().decompress  # type: ignore[no-any-return]
    raise ValueError(f"unknown content coding {coding!r}; known: {', '.join(CODINGS)}")


def _weight(text: str) -> float | None:
    try:
        q = float(text)
    except ValueError:
        return None
    return q if 0.0 <= q <= 1.0 else None


def negotiate_encoding(accept_encoding: str | None, offers: Sequence[str]) -> str | None:
    """The coding of ``offers`` to use for this ``Accept-Encoding``, or ``None``
    (identity). Highest client weight wins, then the order of ``offers``; a coding
    named with ``q=0`` is refused, ``*`` stands for every coding not named. No
    header means identity (a client that says nothing may not decode anything).
    Matching is case-insensitive; only the first 2 KiB of the header are read."""
    if not accept_encoding or not offers:
        return None
    named: dict[str, float] = {}
    star: float | None = None
    for item in accept_encoding[:_MAX_HEADER].split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        q = 1.0
        params = params.strip()
        if params:
            key, _, value = params.partition("=")
            weight = _weight(value.strip()) if key.strip().lower() == "q" else None
            if weight is None:
                continue  # a malformed weight: ignore the item
            q = weight
        if name == "*":
            star = q if star is None else max(star, q)
        else:
            named[name] = max(q, named.get(name, 0.0))
    best: str | None = None
    best_q = 0.0
    for coding in offers:
        q = named.get(coding, star if star is not None else 0.0)
        if q > best_q:
            best, best_q = coding, q
    return best
