"""A ~50 KB STATE_SNAPSHOT (lists of objects with strings, numbers, bools, nulls)."""

from __future__ import annotations

import contenders as C
import pytest
import workloads as W


@pytest.mark.parametrize("contender", C.encoders("snapshot"), ids=C.slug)
def test_encode_snapshot(benchmark, contender: C.Contender) -> None:
    C.run_benchmark(benchmark, "encode: 50 KB STATE_SNAPSHOT", contender, W.snapshot())


@pytest.mark.parametrize("contender", C.decoders("snapshot"), ids=C.slug)
def test_decode_snapshot(benchmark, contender: C.Contender) -> None:
    C.run_benchmark(benchmark, "decode: 50 KB STATE_SNAPSHOT", contender, W.snapshot())
