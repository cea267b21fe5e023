"""encode_sse against the real @ag-ui/encoder 1.0.0 and @ag-ui/core's schemas.

For events sprinkled with None (the reference's ``omitOptionalNulls`` decides what
is left out): we write what the reference writes (the same JSON) whenever we write
at all, and we refuse exactly the events whose reference output the reference
client's own schemas (``EventSchemas``) reject.
"""

from __future__ import annotations

import json
import random

import pytest

from agui_wire import EncodeError
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
def test_sprinkled_events_match_reference(node_harness, seed: int) -> None:
    events = _events(random.Random(seed), 2000)
    written = [json.loads(r[6:]) for r in reference(node_harness, events)]
    verdicts = node_harness.validate(written)
    refused = 0
    for e, w, verdict in zip(events, written, verdicts, strict=True):
        try:
            ours = body(encode_sse(e))
        except EncodeError:
            ours = None
        if ours is None:
            refused += 1
            assert not verdict.ok, f"refused what @ag-ui/core accepts: {e}"
            continue
        assert verdict.ok, f"wrote what @ag-ui/core rejects: {verdict.issues}\n{e}"
        assert ours == w, e
    assert 0 < refused < len(events) // 2
