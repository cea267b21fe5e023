"""The framer alone: ``FrameReader.feed`` over a 100 MB protobuf stream in 1 MiB
chunks (frames straddle the cuts). MB/s = ``extra_info["bytes"]`` / time."""

from __future__ import annotations

from typing import Any

import pytest
import workloads as W

from agui_wire._codec import framing, selected

READERS = [
    pytest.param(selected.FrameReader, id=f"backend-{selected.IMPLEMENTATIONS['FrameReader']}")
]
if selected.IMPLEMENTATIONS["FrameReader"] == "cython":
    READERS.append(pytest.param(framing.FrameReader, id="pure-python-twin"))


@pytest.mark.parametrize("reader", READERS)
def test_framer_100mb(benchmark, reader: Any) -> None:
    chunks, frames, total = W.framer_stream()
    benchmark.group = "framer: 100 MB in 1 MiB chunks"
    benchmark.extra_info.update(bytes=total, frames=frames)
    assert benchmark(W.frame_all, reader, chunks) == frames
