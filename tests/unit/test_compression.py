"""agui_wire._compression: streaming codings flushed per write, Accept-Encoding."""

from __future__ import annotations

import builtins
import importlib
import sys

import pytest

from agui_wire import _compression
from agui_wire._compression import (
    CODINGS,
    available,
    compressor,
    decompressor,
    negotiate_encoding,
)
from agui_wire.errors import CompressionUnavailable

CHUNKS = [b'data: {"type":"TEXT_MESSAGE_CONTENT","delta":"%d"}\n\n' % i for i in range(50)]


def test_the_test_extra_installs_every_coding() -> None:
    assert available() == CODINGS


@pytest.mark.parametrize("coding", CODINGS)
def test_each_write_decodes_on_its_own(coding) -> None:
    """A client decoding as bytes arrive sees every write whole, before the next."""
    comp = compressor(coding)
    inflate = decompressor(coding)
    for chunk in CHUNKS:
        assert inflate(comp.compress(chunk)) == chunk
    assert inflate(comp.finish()) == b""


@pytest.mark.parametrize("coding", CODINGS)
def test_a_stream_decodes_with_the_reference_library(coding) -> None:
    comp = compressor(coding)
    body = b"".join(comp.compress(c) for c in CHUNKS) + comp.finish()
    if coding == "gzip":
        import gzip

        assert gzip.decompress(body) == b"".join(CHUNKS)
    elif coding == "br":
        import brotli

        assert brotli.decompress(body) == b"".join(CHUNKS)
    else:
        import zstandard

        # whole frame, as a browser reads it; the window fits what browsers accept
        frame = zstandard.get_frame_parameters(body)
        assert frame.window_size <= 8 << 20
        assert zstandard.ZstdDecompressor().decompressobj().decompress(body) == b"".join(CHUNKS)


@pytest.mark.parametrize(
    ("header", "offers", "chosen"),
    [
        (None, CODINGS, None),
        ("", CODINGS, None),
        ("identity", CODINGS, None),
        ("gzip, deflate, br, zstd", CODINGS, CODINGS[0]),  # a browser: server order
        ("gzip, deflate, br, zstd", ("br", "gzip"), "br"),
        ("br;q=0.5, gzip;q=0.8", CODINGS, "gzip"),  # client weights first
        ("*", ("zstd",), "zstd"),
        ("*;q=0.1, gzip;q=0", ("gzip", "br"), "br"),  # q=0 refuses the coding named
        ("GZIP", CODINGS, "gzip"),  # case-insensitive
        ("gzip;q=abc, br", ("gzip", "br"), "br"),  # a malformed weight drops its item
        ("gzip;q=2", ("gzip",), None),  # out of range: dropped
        ("gzip", (), None),
    ],
)
def test_negotiate_encoding(header, offers, chosen) -> None:
    assert negotiate_encoding(header, offers) == chosen


def test_missing_library_is_a_clear_error(monkeypatch) -> None:
    real_import = builtins.__import__

    def no_brotli(name, *args, **kwargs):
        if name in ("brotli", "brotlicffi"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_brotli)
    monkeypatch.setattr(importlib, "import_module", lambda name: no_brotli(name))
    for name in ("brotli", "brotlicffi"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert "br" not in _compression.available()
    with pytest.raises(CompressionUnavailable, match=r"agui-wire\[brotli\]") as info:
        compressor("br")
    assert isinstance(info.value, ImportError)
    assert info.value.coding == "br"
    with pytest.raises(ValueError, match="unknown content coding"):
        compressor("deflate")
