"""Decoding a captured stream: a capture file read through ``agui_wire.decode``
(format sniffed, 64 KiB reads) and a live stream fed to ``EventDecoder`` in
16 KiB network-sized chunks, for both transports."""

from __future__ import annotations

from pathlib import Path

import pytest
import workloads as W

import agui_wire

NETWORK_CHUNK = 1 << 14


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("captures")
    run = W.run()
    paths = {"protobuf": root / "run.bin", "SSE": root / "run.sse"}
    paths["protobuf"].write_bytes(run.proto)
    paths["SSE"].write_bytes(run.sse)
    return paths


def _decode_file(path: Path) -> list[dict]:
    with path.open("rb") as fh:
        return agui_wire.decode(fh)


def _feed(content_type: str, chunks: list[bytes]) -> list[dict]:
    decoder = agui_wire.EventDecoder(content_type)
    out: list[dict] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    out += decoder.close()
    return out


@pytest.mark.parametrize("transport", ["protobuf", "SSE"])
def test_decode_capture_file(benchmark, captures: dict[str, Path], transport: str) -> None:
    benchmark.group = "decode: capture file (agui_wire.decode, sniffed)"
    benchmark.extra_info.update(events=W.run().count, bytes=captures[transport].stat().st_size)
    assert benchmark(_decode_file, captures[transport]) == W.run().events


@pytest.mark.parametrize("transport", ["protobuf", "SSE"])
def test_decode_live_stream(benchmark, transport: str) -> None:
    run = W.run()
    data, content_type = (
        (run.proto, agui_wire.PROTO_MEDIA_TYPE)
        if transport == "protobuf"
        else (run.sse, agui_wire.SSE_MEDIA_TYPE)
    )
    chunks = list(W.chunked(data, NETWORK_CHUNK))
    benchmark.group = "decode: live stream (EventDecoder.feed, 16 KiB chunks)"
    benchmark.extra_info.update(events=run.count, bytes=len(data))
    assert benchmark(_feed, content_type, chunks) == run.events
