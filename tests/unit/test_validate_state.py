"""agui_wire._runstate.RunState (the client's fold) and validate._state.StateChecker.

What the fold makes of events is held to the reference client in
tests/interop/test_run_state.py; here: its own contract (the index agrees with a
scan of the list at every step, failed patches change nothing and say which
operation failed, inputs are copied, the state's origin) and the validator's
state findings through ``validate_stream``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agui_wire._runstate import UNKNOWN, RunState
from agui_wire.errors import PatchError
from agui_wire.validate import validate_stream
from tests.support.fold_streams import fold_stream

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def first_by_scan(run: RunState, message_id: Any) -> Any:
    return next((m for m in run.messages if m.get("id") == message_id), None)


def holder_by_scan(run: RunState, call_id: Any) -> Any:
    for m in run.messages:
        for call in m.get("toolCalls") or ():
            if call.get("id") == call_id:
                return m, call
    return None


@pytest.mark.parametrize("seed", range(60))
def test_index_agrees_with_a_scan_after_every_event(seed: int) -> None:
    run = RunState()
    for event in fold_stream(seed, 80):
        run.apply(event)
        for mid in ("m0", "m1", "m5", "a0", "a1", "c0", "c1", "r0", "nope"):
            assert run.find(mid) is first_by_scan(run, mid), (mid, event)
        for cid in ("c0", "c1", "c2", "c3", "nope"):
            found, scanned = run.tool_call(cid), holder_by_scan(run, cid)
            assert (found is None) == (scanned is None), (cid, event)
            if found is not None:
                assert found[0] is scanned[0], (cid, event)
                assert found[1] is scanned[1], (cid, event)


def test_text_tool_calls_and_results_land_as_in_the_client() -> None:
    run = RunState()
    for event in [
        {**RS, "input": {"threadId": "t", "runId": "r", "messages": [], "state": {}}},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel", "metadata": {"a": 1}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo", "metadata": {"b": 2}},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "f",
            "parentMessageId": "m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"x":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "1}"},
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "g"},  # no parent
        {"type": "TEXT_MESSAGE_START", "messageId": "m2"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t2", "toolCallId": "c1", "content": "2"},
    ]:
        assert run.apply(event) is None
    assert [(m["id"], m["role"]) for m in run.messages] == [
        ("m1", "assistant"),
        ("t1", "tool"),  # results follow their call's message, in order
        ("t2", "tool"),
        ("c2", "assistant"),  # a call without a parent gets a message of its own id
        ("m2", "assistant"),
    ]
    m1 = run.messages[0]
    assert m1["content"] == "Hello"
    assert m1["metadata"] == {"a": 1, "b": 2}
    assert m1["toolCalls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
    ]


def test_failed_patches_change_nothing_and_name_the_operation() -> None:
    run = RunState()
    run.apply({"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}})
    ops = [{"op": "replace", "path": "/n", "value": 2}, {"op": "remove", "path": "/gone"}]
    error = run.apply({"type": "STATE_DELTA", "delta": ops})
    assert isinstance(error, PatchError)
    assert (error.index, error.op) == (1, ops[1])
    assert run.state == {"n": 1}  # atomic: the first operation is not kept either
    run.apply({"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {}})
    error = run.apply(
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a",
            "activityType": "p",
            "patch": [{"op": "test", "path": "", "value": {"x": 1}}],
        }
    )
    assert isinstance(error, PatchError)
    assert error.index == 0
    assert run.find("a")["content"] == {}


def test_state_origin() -> None:
    run = RunState()
    assert run.state is UNKNOWN
    delta = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": 1}]}
    assert run.apply(delta) is None  # nothing to patch: ignored, not failed
    assert run.state is UNKNOWN
    run.apply({**RS, "input": {"threadId": "t", "runId": "r", "messages": [], "state": {"a": 0}}})
    assert run.state == {"a": 0}  # the state the client sent
    run.apply(delta)
    run.apply({**RS, "input": {"threadId": "t", "runId": "r", "messages": [], "state": {}}})
    assert run.state == {"a": 0, "x": 1}  # a known state is not reset by an input echo
    run.apply({"type": "STATE_SNAPSHOT", "snapshot": None})
    assert run.state is None


def test_inputs_are_copied() -> None:
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": {"deep": {"n": 1}}}
    messages = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "u", "role": "user", "content": "x"}],
    }
    before = copy.deepcopy([snapshot, messages])
    run = RunState()
    run.apply(snapshot)
    run.apply(messages)
    run.apply({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/deep/n", "value": 2}]})
    run.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "u", "delta": "y"})
    assert [snapshot, messages] == before
    assert run.state == {"deep": {"n": 2}}
    assert run.find("u")["content"] == "xy"


def test_messages_snapshot_drops_stale_activities_unless_authoritative_types_keep_them() -> None:
    def after(snapshot: dict[str, Any]) -> list[str]:
        run = RunState()
        for kind in ("plan", "search"):
            run.apply(
                {
                    "type": "ACTIVITY_SNAPSHOT",
                    "messageId": kind,
                    "activityType": kind,
                    "content": {},
                }
            )
        run.apply(snapshot)
        return [m["id"] for m in run.messages]

    user = {"id": "u", "role": "user", "content": "x"}
    activity = {"id": "new", "role": "activity", "activityType": "plan", "content": {}}
    plain = {"type": "MESSAGES_SNAPSHOT", "messages": [user]}
    assert after(plain) == ["plan", "search", "u"]  # no activity in it: kept
    assert after({**plain, "messages": [user, activity]}) == ["u", "new"]
    meta = {"@ag-ui/client": {"authoritativeActivityTypes": ["plan"]}}
    assert after({**plain, "metadata": meta}) == ["search", "u"]
    meta = {"@ag-ui/client": {"authoritativeActivityTypes": None}}
    assert after({**plain, "metadata": meta}) == ["u"]


# -- the validator's state layer -------------------------------------------------------------


def findings(events: list[dict[str, Any]]) -> list[tuple[str, int | None, str]]:
    return [
        (p.rule, p.index, p.path)
        for p in validate_stream(events)
        if p.rule.startswith(("state.", "activity."))
    ]


def test_state_findings() -> None:
    bad = {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/x"}]}
    good = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": 1}]}
    assert findings([RS, bad, bad, RF]) == [("state.unknown", 1, "/delta")]  # once
    snap = {"type": "STATE_SNAPSHOT", "snapshot": {}}
    # the delta applies to the state built so far: the second remove finds /x
    assert findings([RS, snap, bad, good, bad, bad, RF]) == [
        ("state.patch", 2, "/delta/0"),
        ("state.patch", 5, "/delta/0"),
    ]


def test_activity_findings() -> None:
    snap = {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {}}

    def delta(mid: str, path: str) -> dict[str, Any]:
        return {
            "type": "ACTIVITY_DELTA",
            "messageId": mid,
            "activityType": "p",
            "patch": [{"op": "replace", "path": path, "value": 1}],
        }

    assert findings([RS, delta("b", "/x"), delta("b", "/x"), delta("c", "/x"), RF]) == [
        ("activity.unknown", 1, "/messageId"),
        ("activity.unknown", 3, "/messageId"),
    ]
    assert findings([RS, snap, delta("a", "/x"), RF]) == [("activity.patch", 2, "/patch/0")]


def test_events_the_schema_refuses_are_not_applied() -> None:
    # The client parses every event before applying it; one that fails ends its run.
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": {"x": 1}}
    refused = {**snapshot, "snapshot": {}, "timestamp": "yesterday"}
    remove_x = {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/x"}]}
    problems = validate_stream([RS, snapshot, refused, remove_x, RF])
    assert [p.rule for p in problems] == ["schema.type"]  # /x is still there
    problems = validate_stream([RS, snapshot, refused, remove_x, RF], schema=False)
    assert problems == []


def test_deltas_show_whenever_anything_reads() -> None:
    # Consecutive deltas are joined lazily: every reader sees them all.
    run = RunState()
    run.apply({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
    run.apply({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"})
    for part in ("a", "b"):
        run.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": part})
        run.apply({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": part})
    found = run.tool_call("c")
    assert found is not None
    assert found[1]["function"]["arguments"] == "ab"
    run.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "c"})
    assert run.messages[0]["content"] == "abc"
    run.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"})
    assert run.find("m") == {"id": "m", "role": "assistant", "content": "abcd"}
