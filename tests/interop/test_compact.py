"""``agui_wire._apply``: compact prefixes (``Compactor``, the run store's
compaction) held to the reference client.

For every cut k of a run touching every kind of entity (input echo, text,
reasoning, tool calls with and without parent, encrypted values, results,
activities, state snapshots and deltas, subagents, steps, metadata, a mid-run
MESSAGES_SNAPSHOT), the stream ``prefix(events[:k]) + events[k:]`` is:

* what ``@ag-ui/client``'s own ``defaultApplyEvents`` turns into the same
  messages and state as the whole run (node, tests/interop/harness.cjs apply);
* a well-formed sequence for the client's ``verifyEvents`` rules
  (``StreamValidator``, their port; the reference itself at a few cuts).
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._apply import Compactor
from agui_wire.validate import StreamValidator
from examples.script import scripted_run

# The fold is Python whatever the codec backend: make test's Cython pass runs it once.
pytestmark = pytest.mark.once

Event = dict[str, Any]


def rich_run() -> list[Event]:
    user = {"id": "user-1", "role": "user", "content": "hi"}
    return [
        {
            "type": "RUN_STARTED",
            "threadId": "thread-1",
            "runId": "run-1",
            "input": {
                "threadId": "thread-1",
                "runId": "run-1",
                "messages": [user],
                "tools": [],
                "context": [],
                "state": {"a": 0},
                "forwardedProps": {},
            },
        },
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/a", "value": 1}]},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": "researcher"},
        {"type": "STEP_STARTED", "stepName": "plan"},
        {
            "type": "TEXT_MESSAGE_START",
            "messageId": "m1",
            "role": "assistant",
            "metadata": {"x": 1},
        },
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo", "metadata": {"y": 2}},
        {"type": "REASONING_START", "messageId": "r1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "think"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "search",
            "parentMessageId": "m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"x"}'},
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "tool-call",
            "entityId": "c1",
            "encryptedValue": "enc",
        },
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": " more"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
        {"type": "REASONING_END", "messageId": "r1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "found"},
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a1",
            "activityType": "progress",
            "content": {"pct": 0},
        },
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a1",
            "activityType": "progress",
            "patch": [{"op": "replace", "path": "/pct", "value": 50}],
        },
        {"type": "STATE_SNAPSHOT", "snapshot": {"status": "working", "list": []}},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/list/-", "value": 1}]},
        {"type": "CUSTOM", "name": "note", "value": {"k": 1}},
        {
            "type": "TEXT_MESSAGE_START",
            "messageId": "m2",
            "role": "assistant",
            "subagentRunId": "sub-1",
        },
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m2",
            "delta": "sub says",
            "subagentRunId": "sub-1",
        },
        {"type": "TEXT_MESSAGE_END", "messageId": "m2", "subagentRunId": "sub-1"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "sub-1"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [user, {"id": "m0", "role": "assistant", "content": "earlier"}],
        },
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "calc"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c2", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {"type": "STEP_FINISHED", "stepName": "plan"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "done"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m3"},
        {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1"},
    ]


RUNS = {"rich": rich_run(), "scripted": scripted_run()}


def compacted(events: list[Event], k: int) -> list[Event]:
    folder = Compactor()
    for event in events[:k]:
        folder.feed(event)
    assert folder.foldable
    return folder.prefix() + events[k:]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_cut_is_a_valid_sequence(name) -> None:
    events = RUNS[name]
    for k in range(1, len(events) + 1):
        stream = compacted(events, k)
        validator = StreamValidator(schema=True, sequence=True, state=False)
        for event in stream:
            validator.feed(event)
        validator.close()
        errors = [str(p) for p in validator.problems if p.severity == "error"]
        assert errors == [], (k, errors)
        # One start and at most one joined continuation per open entity.
        types = [e["type"] for e in stream[: len(stream) - (len(events) - k)]]
        assert types.count("TEXT_MESSAGE_CONTENT") <= types.count("TEXT_MESSAGE_START")
        assert types.count("TOOL_CALL_ARGS") <= types.count("TOOL_CALL_START")


@pytest.mark.interop
@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_reference_applies_every_cut_like_the_whole_run(node_harness, name) -> None:
    events = RUNS[name]
    streams = [events] + [compacted(events, k) for k in range(1, len(events) + 1)]
    results = node_harness.apply(streams)
    whole = results[0]
    assert whole["warnings"] == []
    assert whole["messages"]  # the run did build something
    for k, result in enumerate(results[1:], 1):
        assert result["warnings"] == [], k
        assert result["messages"] == whole["messages"], k
        assert result["state"] == whole["state"], k


@pytest.mark.interop
def test_the_reference_verifier_accepts_cuts(node_harness) -> None:
    events = RUNS["rich"]
    for k in (1, 6, 12, 20, len(events)):
        verdict = node_harness.verify(compacted(events, k))
        assert verdict.error is None, (k, verdict.error)
        assert verdict.completed


def test_chunks_and_second_runs_are_not_folded() -> None:
    folder = Compactor()
    folder.feed(RUNS["scripted"][0])
    folder.feed({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"})
    assert not folder.foldable
    with pytest.raises(ValueError, match="cannot be folded"):
        folder.prefix()
    folder = Compactor()
    folder.feed(RUNS["scripted"][0])
    folder.feed(RUNS["scripted"][0])
    assert not folder.foldable
