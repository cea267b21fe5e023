"""A whole realistic run: ``realistic_run(20004, seed=20004)``, encoded and decoded."""

from __future__ import annotations

import contenders as C
import pytest
import workloads as W


@pytest.mark.parametrize("contender", C.encoders("run"), ids=C.slug)
def test_encode_run(benchmark, contender: C.Contender) -> None:
    C.run_benchmark(benchmark, "encode: realistic run", contender, W.run())


@pytest.mark.parametrize("contender", C.decoders("run"), ids=C.slug)
def test_decode_run(benchmark, contender: C.Contender) -> None:
    C.run_benchmark(benchmark, "decode: realistic run", contender, W.run())
