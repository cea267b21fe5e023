"""The hot event: every TEXT_MESSAGE_CONTENT of the realistic run, one call per event.

Times are per call over all of them (~17,000); divide by ``extra_info["events"]``
for ns/event (compare.py prints it directly).
"""

from __future__ import annotations

import contenders as C
import pytest
import workloads as W


@pytest.mark.parametrize("contender", C.encoders("hot"), ids=C.slug)
def test_encode_hot(benchmark, contender: C.Contender) -> None:
    C.run_benchmark(benchmark, "encode: hot TEXT_MESSAGE_CONTENT", contender, W.hot())


@pytest.mark.parametrize("contender", C.decoders("hot"), ids=C.slug)
def test_decode_hot(benchmark, contender: C.Contender) -> None:
    C.run_benchmark(benchmark, "decode: hot TEXT_MESSAGE_CONTENT", contender, W.hot())
