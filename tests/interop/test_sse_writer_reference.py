"""encode_sse against the real @ag-ui/encoder 1.0.0: the same JSON for the same
event, including the reference's omitOptionalNulls on events sprinkled with None."""

from __future__ import annotations

import json
import random

import pytest

from agui_wire._codec.sse_writer import encode_sse
from tests.unit.test_sse_writer import CASES, _events, body

pytestmark = pytest.mark.interop


def reference(node_harness, events: list[dict]) -> list[bytes]:
    out = node_harness.encode_sse(events).split(b"\n\n")[:-1]
    assert len(out) == len(events)
    return [chunk + b"\n\n" for chunk in out]


def test_cases_match_reference(node_harness) -> None:
    ref = reference(node_harness, [e for e, _ in CASES])
    for (_, want), r in zip(CASES, ref, strict=True):
        assert body(r) == want


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_events_match_reference(node_harness, seed: int) -> None:
    events = _events(random.Random(seed), 3000)
    for e, r in zip(events, reference(node_harness, events), strict=True):
        assert body(encode_sse(e)) == json.loads(r[6:]), e
