"""agui_wire._apply.Compactor: what a joiner's prefix holds, and what it leaves out.

tests/interop/test_compact.py holds every cut of two rich runs to the reference client
(node: ``defaultApplyEvents`` and ``verifyEvents``); here: the module doc's contract
item by item, and the fold (``_runstate.RunState``) giving a joiner who reads the
prefix and the tail what a reader of every event has, on generated runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._apply import Compactor
from agui_wire._runstate import UNKNOWN, RunState
from agui_wire._sample import realistic_run

pytestmark = pytest.mark.once  # no codec: the same on both backends

Event = dict[str, Any]
STARTED: Event = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED: Event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def prefix(events: list[Event]) -> list[Event]:
    folder = Compactor()
    for event in events:
        folder.feed(event)
    assert folder.count == len(events)
    return folder.prefix()


def applied(events: list[Event]) -> tuple[list[Any], Any]:
    run = RunState()
    for event in events:
        assert run.apply(event) is None, event
    return run.messages, run.state


@pytest.mark.parametrize("seed", range(4))
def test_a_joiner_at_any_cut_builds_what_a_reader_of_every_event_does(seed: int) -> None:
    events = realistic_run(60, seed=seed)
    whole = applied(events)
    for k in range(1, len(events) + 1):
        assert applied(prefix(events[:k]) + events[k:]) == whole, k


def test_the_prefix_is_the_start_the_snapshots_what_is_open_and_the_end() -> None:
    events = [
        {**STARTED, "input": {"threadId": "t", "runId": "r", "messages": [], "state": {"n": 0}}},
        {"type": "STEP_STARTED", "stepName": "done"},
        {"type": "STEP_FINISHED", "stepName": "done"},
        {"type": "STEP_STARTED", "stepName": "open"},
        {"type": "CUSTOM", "name": "progress", "value": 1},
        {"type": "RAW", "event": {"x": 1}},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "metadata": {"a": 1}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hel"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 1}]},
        FINISHED,
    ]
    got = prefix(events)
    assert [e["type"] for e in got] == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "STEP_STARTED",  # the open step; the closed one, CUSTOM and RAW are left out
        "TEXT_MESSAGE_START",
        "RUN_FINISHED",
    ]
    assert got[0] is events[0]  # the run's start as it was
    assert got[1]["messages"] == [
        {"id": "m", "role": "assistant", "content": "hel", "metadata": {"a": 1}}
    ]
    assert got[2] == {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}}
    assert got[3] == {"type": "STEP_STARTED", "stepName": "open"}
    assert got[4] == {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
    assert got[5] == FINISHED


def test_deltas_to_a_state_the_events_never_showed_are_kept_as_deltas() -> None:
    delta = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/n", "value": 1}]}
    folder = Compactor()
    for event in (STARTED, delta, delta):
        folder.feed(event)
    assert folder.run.state is UNKNOWN
    assert folder.prefix() == [STARTED, delta, delta]
    folder.feed({"type": "STATE_SNAPSHOT", "snapshot": {"n": 5}})
    folder.feed(delta)
    assert folder.prefix() == [STARTED, {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}}]


def test_the_snapshots_are_copies_the_tail_does_not_change() -> None:
    folder = Compactor()
    for event in (STARTED, {"type": "STATE_SNAPSHOT", "snapshot": {"list": [1]}}):
        folder.feed(event)
    first = folder.prefix()
    first[1]["snapshot"]["list"].append(2)
    assert folder.prefix()[1]["snapshot"] == {"list": [1]}


@pytest.mark.parametrize(
    "events",
    [
        [STARTED, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}],
        [STARTED, {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "delta": "{}"}],
        [STARTED, FINISHED, STARTED],
        [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}],  # no start
    ],
    ids=["text chunk", "tool call chunk", "a second run", "no RUN_STARTED"],
)
def test_what_cannot_be_folded_is_refused(events: list[Event]) -> None:
    folder = Compactor()
    for event in events:
        folder.feed(event)
    assert folder.count == len(events)
    with pytest.raises(ValueError, match="cannot be folded"):
        folder.prefix()
