"""A live stream that arrives one event per chunk: ``EventDecoder.feed``
per frame / SSE block over the realistic run, beside the payload decode alone.
``decode_cost.py`` prints the same columns side by side with their ratios."""

from __future__ import annotations

from typing import Any

import decode_cost as D
import pytest
import workloads as W

COLUMNS = [
    pytest.param(transport, column, id=f"{transport}-{column}")
    for transport, columns in (("protobuf", D.proto_columns), ("SSE", D.sse_columns))
    for column in columns(W.run(W.QUICK_RUN_EVENTS))
]


@pytest.mark.parametrize(("transport", "column"), COLUMNS)
def test_one_event_per_chunk(benchmark: Any, transport: str, column: str) -> None:
    w = W.run()
    columns = D.proto_columns(w) if transport == "protobuf" else D.sse_columns(w)
    benchmark.group = f"live decode, one event per chunk: {transport}"
    benchmark.extra_info.update(events=w.count)
    assert D.count(columns[column]) == w.count
    benchmark(D.run, columns[column])
