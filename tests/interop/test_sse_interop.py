"""SSE and the client pipeline against the real @ag-ui/encoder and @ag-ui/client 1.0.0.

* whatever @ag-ui/encoder writes, we decode to the same events;
* whatever we write, @ag-ui/client's HttpAgent parses (SSE and binary, delivered
  in chunks of several sizes) to the same events;
* the negotiation table's "reference" column is what @ag-ui/encoder really picks.
"""

from __future__ import annotations

import pytest

import agui_wire
from agui_wire._sample import realistic_run
from tests.contract.test_negotiation_table import TABLE as DOC_TABLE
from tests.support.corpus import CASES, CORPUS, SSE_LOSSY
from tests.support.wire import json_equal
from tests.unit.test_negotiation import NONE, TABLE

pytestmark = pytest.mark.interop

SSE_SAFE = [e for name, e in CASES.items() if name not in SSE_LOSSY]


def test_we_decode_what_the_reference_encoder_writes(node_harness) -> None:
    body = node_harness.encode_sse(SSE_SAFE)
    assert agui_wire.decode(body) == SSE_SAFE
    assert agui_wire.decode(body, "text/event-stream") == SSE_SAFE
    # the reference's omitOptionalNulls and ours drop the same nulls
    lossy = [CASES[name] for name in SSE_LOSSY]
    assert agui_wire.decode(node_harness.encode_sse(lossy)) == agui_wire.decode(
        agui_wire.EventEncoder().encode_many(lossy)
    )


# The reference client re-scans its whole buffer per chunk (quadratic), so the
# byte-by-byte delivery runs on a slice of the corpus.
@pytest.mark.parametrize(("chunk_size", "count"), [(0, None), (1, 25), (7, None), (4096, None)])
def test_the_reference_client_parses_our_sse(
    node_harness, chunk_size: int, count: int | None
) -> None:
    events = SSE_SAFE[:count]
    body = agui_wire.EventEncoder("text/event-stream").encode_many(events)
    result = node_harness.parse_stream(body, "text/event-stream", chunk_size)
    assert result.error is None
    assert result.completed
    assert json_equal(result.events, events)


@pytest.mark.parametrize(("chunk_size", "count"), [(0, None), (1, 40), (5, None), (4096, None)])
def test_the_reference_client_parses_our_binary(
    node_harness, chunk_size: int, count: int | None
) -> None:
    events = (realistic_run(400, seed=9) + CORPUS)[:count]
    body = agui_wire.EventEncoder(agui_wire.PROTO_MEDIA_TYPE).encode_many(events)
    result = node_harness.parse_stream(body, agui_wire.PROTO_MEDIA_TYPE, chunk_size)
    assert result.error is None
    assert result.completed
    assert json_equal(result.events, agui_wire.decode_proto(body))


def test_sse_bytes_are_json_equal_to_the_reference(node_harness) -> None:
    theirs = node_harness.encode_sse(CORPUS).split(b"\n\n")[:-1]
    ours = agui_wire.EventEncoder().encode_many(CORPUS).split(b"\n\n")[:-1]
    assert len(theirs) == len(ours) == len(CORPUS)
    for a, b in zip(ours, theirs, strict=True):
        assert a.startswith(b"data: ")
        assert json_equal(agui_wire.decode(a + b"\n\n"), agui_wire.decode(b + b"\n\n"))


def test_negotiation_reference_column_is_the_reference(node_harness) -> None:
    """``wildcard_proto=True`` picks what ``@ag-ui/encoder`` 1.0.0 picks, except
    where the two Accept parsers differ (the rows with a reference column)."""
    headers = [accept for accept, *_ in TABLE]
    picked = node_harness.negotiate(headers)
    for (accept, _, option, reference), theirs in zip(TABLE, picked, strict=True):
        expected = reference if reference is not None else option
        if expected == NONE:
            expected = agui_wire.SSE_MEDIA_TYPE
        assert theirs == expected, accept


def test_the_serving_docs_reference_column_is_the_reference(node_harness) -> None:
    """docs/serving.md's negotiation table: the ``@ag-ui/encoder`` 1.0.0 column is
    what the pinned package picks, and ``wildcard_proto=True`` picks the same."""
    picked = node_harness.negotiate([row.accept for row in DOC_TABLE])
    for row, theirs in zip(DOC_TABLE, picked, strict=True):
        assert theirs == row.reference, row.accept
        option = agui_wire.SSE_MEDIA_TYPE if row.option == "406" else row.option
        assert option == theirs, row.accept
