"""``agui_wire._runstate.RunState`` against ``defaultApplyEvents`` of ``@ag-ui/client``.

The same events, folded by RunState and by the reference client (harness.cjs
``apply``: a client starting with no messages and the ``RUN_STARTED`` input's
state), give the same messages and state: on random runs that touch every rule
of the fold (tests/support/fold_streams.py), realistic runs, and the clean
validation cases. Patches the reference warns about are the ones ``apply``
returns a ``PatchError`` for.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._runstate import RunState
from agui_wire.validate import validate_event
from tests.support.corpus import realistic_run
from tests.support.fold_streams import fold_stream
from tests.support.validation_cases import STREAMS

pytestmark = pytest.mark.interop


def fold(events: list[dict[str, Any]]) -> tuple[RunState, dict[str, int]]:
    """The fold, and how many deltas of each kind did not apply."""
    run = RunState()
    failed = {"state": 0, "activity": 0}
    for event in events:
        if run.apply(event) is not None:
            failed["state" if event["type"] == "STATE_DELTA" else "activity"] += 1
    return run, failed


def warned(warnings: list[str]) -> dict[str, int]:
    return {
        "state": sum(w.startswith("Failed to apply state patch") for w in warnings),
        "activity": sum(w.startswith("Failed to apply activity patch") for w in warnings),
    }


def test_fold_streams_are_schema_valid() -> None:
    for seed in range(40):
        for event in fold_stream(seed):
            assert [p for p in validate_event(event) if p.severity == "error"] == [], event


def test_run_state_is_the_reference_fold(node_harness) -> None:
    runs = [fold_stream(seed) for seed in range(300)]
    runs += [realistic_run(n, seed) for n, seed in ((2, 0), (60, 1), (400, 2))]
    runs += [
        events
        for events, rule, _ in STREAMS.values()
        if rule is None
        and events
        and all(
            not e["type"].endswith("_CHUNK")  # the client expands them first
            and not [p for p in validate_event(e) if p.severity == "error"]
            for e in events
        )
    ]
    results = node_harness.apply(runs)
    failures = 0
    for i, (events, reference) in enumerate(zip(runs, results, strict=True)):
        run, failed = fold(events)
        assert run.messages == reference["messages"], i
        expected = warned(reference["warnings"])
        assert failed["activity"] == expected["activity"], (i, reference["warnings"])
        # The reference client starts from {} when the stream does not say its
        # state; RunState leaves such a state unknown and its deltas unapplied.
        if "state" in (events[0].get("input") or {}):
            assert run.state == reference["state"], i
            assert failed["state"] == expected["state"], (i, reference["warnings"])
        failures += sum(failed.values())
    assert failures > 50  # the patches that do not apply were exercised
