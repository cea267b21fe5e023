"""Broken events and streams for agui_wire.validate, each with the rule it breaks.

``BROKEN_EVENTS``: name -> (event, rule): one event the 1.0 zod schemas reject
(``rule`` is the first error's rule in ``validate_event``), plus ``VALID_ODDITIES``,
events that look wrong but that zod accepts (they must come out without errors).

``STREAMS``: name -> (events, rule, index): a sequence whose first problem
beyond the schema is ``rule`` at event ``index`` (``None``: the end of the stream);
``rule`` ``None`` means the stream is clean. Rules in
``agui_wire.validate.REFERENCE_SEQUENCE_RULES`` are enforced by the client's
``verifyEvents`` too, which must stop at the same index; the others
(``run.unterminated``, ``stream.empty``, ``state.patch``, ``activity.patch``) are
agui_wire's own, and ``verifyEvents`` lets those streams through.

tests/interop/test_cli_validate.py checks all of it against the reference.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]

RS: Event = {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}
RF: Event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}
RE: Event = {"type": "RUN_ERROR", "message": "boom"}


def tms(mid: str = "m1", **kw: Any) -> Event:
    return {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant", **kw}


def tmc(mid: str = "m1", delta: str = "hi", **kw: Any) -> Event:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta, **kw}


def tme(mid: str = "m1", **kw: Any) -> Event:
    return {"type": "TEXT_MESSAGE_END", "messageId": mid, **kw}


def tcs(tid: str = "c1", **kw: Any) -> Event:
    return {"type": "TOOL_CALL_START", "toolCallId": tid, "toolCallName": "f", **kw}


def tca(tid: str = "c1", **kw: Any) -> Event:
    return {"type": "TOOL_CALL_ARGS", "toolCallId": tid, "delta": "{}", **kw}


def tce(tid: str = "c1", **kw: Any) -> Event:
    return {"type": "TOOL_CALL_END", "toolCallId": tid, **kw}


def step(kind: str, name: str = "plan", **kw: Any) -> Event:
    return {"type": f"STEP_{kind}", "stepName": name, **kw}


def reasoning(kind: str, mid: str = "r1", **kw: Any) -> Event:
    event: Event = {"type": f"REASONING_{kind}", "messageId": mid, **kw}
    if kind == "MESSAGE_START":
        event.setdefault("role", "reasoning")
    if kind == "MESSAGE_CONTENT":
        event.setdefault("delta", "hmm")
    return event


def sub(kind: str, sid: str = "s1", **kw: Any) -> Event:
    event: Event = {"type": f"SUBAGENT_{kind}", "subagentRunId": sid, **kw}
    if kind == "STARTED":
        event.setdefault("name", "researcher")
    if kind == "ERROR":
        event.setdefault("message", "failed")
    return event


def snap(value: Any) -> Event:
    return {"type": "STATE_SNAPSHOT", "snapshot": value}


def delta(*ops: Event) -> Event:
    return {"type": "STATE_DELTA", "delta": list(ops)}


def act_snap(content: Event, mid: str = "a1", **kw: Any) -> Event:
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": mid,
        "activityType": "plan",
        "content": content,
        **kw,
    }


def act_delta(*ops: Event, mid: str = "a1") -> Event:
    return {"type": "ACTIVITY_DELTA", "messageId": mid, "activityType": "plan", "patch": list(ops)}


def finished(outcome: Any) -> Event:
    return {**RF, "outcome": outcome}


BROKEN_EVENTS: dict[str, tuple[Any, str]] = {
    "missing required delta": (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"},
        "schema.required",
    ),
    "messageId a number": ({"type": "TEXT_MESSAGE_END", "messageId": 5}, "schema.type"),
    "optional name null": (tms(name=None), "schema.type"),
    "subagentRunId null": (tmc(subagentRunId=None), "schema.type"),
    "rawEvent null": (tme(rawEvent=None), "schema.null"),
    "metadata an array": (tme(metadata=[1]), "schema.type"),
    "metadata null": (tme(metadata=None), "schema.type"),
    "timestamp fractional": (tme(timestamp=1.5), "schema.type"),
    "timestamp beyond 2^53": (tme(timestamp=2**53), "schema.range"),
    "timestamp a boolean": (tme(timestamp=True), "schema.type"),
    "timestamp a string": (tme(timestamp="1700000000000"), "schema.type"),
    "text role tool": (tms(role="tool"), "schema.enum"),
    "unknown message role": (
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "1", "role": "bot", "content": "x"}]},
        "schema.enum",
    ),
    "user content a number": (
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "1", "role": "user", "content": 7}]},
        "schema.type",
    ),
    "assistant toolCall type": (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {
                    "id": "1",
                    "role": "assistant",
                    "toolCalls": [
                        {"id": "c", "type": "tool", "function": {"name": "f", "arguments": ""}}
                    ],
                }
            ],
        },
        "schema.literal",
    ),
    "activity message content a string": (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "1", "role": "activity", "activityType": "a", "content": "x"}],
        },
        "schema.type",
    ),
    "result part without text": (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "c",
            "content": [{"type": "text"}],
        },
        "schema.required",
    ),
    "result part of unknown type": (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "c",
            "content": [{"type": "binary", "data": "x"}],
        },
        "schema.enum",
    ),
    "data source without mimeType": (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "c",
            "content": [{"type": "image", "source": {"type": "data", "value": "x"}}],
        },
        "schema.required",
    ),
    "result role assistant": (
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "c",
            "content": "",
            "role": "x",
        },
        "schema.literal",
    ),
    "result without content": (
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c"},
        "schema.required",
    ),
    "patch path without slash": (delta({"op": "add", "path": "a/b", "value": 1}), "schema.pointer"),
    "patch path with ~2": (delta({"op": "remove", "path": "/a~2"}), "schema.pointer"),
    "patch from not a pointer": (
        delta({"op": "move", "from": "x", "path": "/a"}),
        "schema.pointer",
    ),
    "patch op uppercase": (delta({"op": "ADD", "path": "/a", "value": 1}), "schema.enum"),
    "patch add without value": (delta({"op": "add", "path": "/a"}), "schema.required"),
    "patch copy without from": (delta({"op": "copy", "path": "/a"}), "schema.required"),
    "delta not an array": ({"type": "STATE_DELTA", "delta": {}}, "schema.type"),
    "snapshot missing": ({"type": "STATE_SNAPSHOT"}, "schema.required"),
    "interrupt outcome without interrupts": (
        finished({"type": "interrupt", "interrupts": []}),
        "schema.min",
    ),
    "outcome type failed": (finished({"type": "failed"}), "schema.enum"),
    "pending ids not strings": (
        finished({"type": "success", "pendingToolCallIds": [1]}),
        "schema.type",
    ),
    "interrupt responseSchema a string": (
        finished(
            {"type": "interrupt", "interrupts": [{"id": "i", "reason": "r", "responseSchema": "x"}]}
        ),
        "schema.type",
    ),
    "negative token count": ({**RF, "usage": [{"inputTokens": -1}]}, "schema.range"),
    "fractional token count": ({**RE, "usage": [{"outputTokens": 1.5}]}, "schema.type"),
    "input without messages": ({**RS, "input": {"threadId": "t", "runId": "r"}}, "schema.required"),
    "resume status done": (
        {
            **RS,
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "resume": [{"interruptId": "i", "status": "done"}],
            },
        },
        "schema.enum",
    ),
    "tool parameters null": (
        {
            **RS,
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "tools": [{"name": "f", "description": "d", "parameters": None}],
            },
        },
        "schema.null",
    ),
    "activity content an array": (act_snap([]), "schema.type"),  # type: ignore[arg-type]
    "activity replace a string": (act_snap({}, replace="yes"), "schema.type"),
    "reasoning role assistant": (reasoning("MESSAGE_START", role="assistant"), "schema.literal"),
    "encrypted subtype thought": (
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "thought",
            "entityId": "e",
            "encryptedValue": "x",
        },
        "schema.enum",
    ),
    "subagent without id": ({"type": "SUBAGENT_STARTED", "name": "n"}, "schema.required"),
    "suspended ids not strings": (
        sub("FINISHED", outcome={"type": "suspended", "interruptIds": [1]}),
        "schema.type",
    ),
    "subagent result null": (sub("FINISHED", result=None), "schema.null"),
    "raw without event": ({"type": "RAW", "source": "x"}, "schema.required"),
    "custom without name": ({"type": "CUSTOM", "value": 1}, "schema.required"),
    "unknown type": ({"type": "TEXT_MESSAGE_DELTA", "messageId": "m"}, "schema.enum"),
    "no type": ({"messageId": "m"}, "schema.enum"),
    "lowercase type": ({"type": "run_started", "threadId": "t", "runId": "r"}, "schema.enum"),
    "not an object": ([1, 2], "schema.type"),
}

# zod accepts these: no errors (notes allowed).
VALID_ODDITIES: dict[str, Event] = {
    "extra keys everywhere": {
        **tmc(),
        "extra": 1,
        "metadata": {"anything": None},
    },
    "integral float timestamp": tme(timestamp=1.0),
    "custom value null": {"type": "CUSTOM", "name": "n", "value": None},
    "raw event null": {"type": "RAW", "event": None},
    "snapshot null": snap(None),
    "input state null": {
        **RS,
        "input": {"threadId": "t", "runId": "r", "messages": [], "state": None},
    },
    "remove with a leftover value": delta({"op": "remove", "path": "/a", "value": 1}),
    "root pointer": delta({"op": "replace", "path": "", "value": {}}),
    "escaped pointer": delta({"op": "add", "path": "/a~1b/~0c/-", "value": 1}),
    "part metadata of any kind": {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "c",
        "content": [{"type": "text", "text": "t", "metadata": [1]}],
    },
    "empty strings": tmc("", ""),
    "negative timestamp": tme(timestamp=-(2**53 - 1)),
}


STREAMS: dict[str, tuple[list[Any], str | None, int | None]] = {
    # -- clean ------------------------------------------------------------------------
    "minimal run": ([RS, RF], None, None),
    "run with everything paired": (
        [
            RS,
            step("STARTED"),
            reasoning("START"),
            reasoning("MESSAGE_START"),
            reasoning("MESSAGE_CONTENT"),
            reasoning("MESSAGE_END"),
            reasoning("END"),
            tms(),
            tmc(),
            tme(),
            tcs(parentMessageId="m1"),
            tca(),
            tce(),
            step("FINISHED"),
            RF,
        ],
        None,
        None,
    ),
    "sequential runs": ([RS, RF, {**RS, "runId": "r2"}, {**RF, "runId": "r2"}], None, None),
    "new run after an error": ([RS, RE, RS, RF], None, None),
    "run error first": ([RE], None, None),
    "run error after finished": ([RS, RF, RE], None, None),
    "interleaved messages": (
        [RS, tms("a"), tms("b"), tmc("a"), tmc("b"), tme("b"), tme("a"), RF],
        None,
        None,
    ),
    "same id for span and message": (
        [
            RS,
            reasoning("START"),
            reasoning("MESSAGE_START"),
            reasoning("MESSAGE_END"),
            reasoning("END"),
            RF,
        ],
        None,
        None,
    ),
    "subagent nesting": (
        [
            RS,
            sub("STARTED"),
            sub("STARTED", "s2", parentSubagentRunId="s1"),
            tms(subagentRunId="s2"),
            tmc(subagentRunId="s2"),
            tme(),
            sub("FINISHED", "s2"),
            sub("ERROR"),
            RF,
        ],
        None,
        None,
    ),
    "same step name in parent and subagent": (
        [
            RS,
            step("STARTED", "tools"),
            sub("STARTED"),
            step("STARTED", "tools", subagentRunId="s1"),
            step("FINISHED", "tools", subagentRunId="s1"),
            sub("FINISHED"),
            step("FINISHED", "tools"),
            RF,
        ],
        None,
        None,
    ),
    "patches that apply": (
        [
            RS,
            snap({"a": {"b": [1, 2]}, "n": 0}),
            delta(
                {"op": "add", "path": "/a/b/-", "value": 3},
                {"op": "test", "path": "/a/b/2", "value": 3},
                {"op": "replace", "path": "/n", "value": 1},
                {"op": "move", "from": "/n", "path": "/m"},
                {"op": "copy", "from": "/a", "path": "/c"},
                {"op": "remove", "path": "/a/b/0"},
            ),
            delta({"op": "test", "path": "/c/b", "value": [1, 2, 3]}),
            act_snap({"items": []}),
            act_delta({"op": "add", "path": "/items/0", "value": "x"}),
            RF,
        ],
        None,
        None,
    ),
    "delta before any snapshot is only a note": (
        [RS, delta({"op": "replace", "path": "/x", "value": 1}), RF],
        None,
        None,
    ),
    "state from the run input": (
        [
            {**RS, "input": {"threadId": "t", "runId": "r1", "messages": [], "state": {"k": 1}}},
            delta({"op": "replace", "path": "/k", "value": 2}),
            RF,
        ],
        None,
        None,
    ),
    "chunks pass the sequence check": (
        [RS, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}, RF],
        None,
        None,
    ),
    # -- run lifecycle ----------------------------------------------------------------
    "first event not RUN_STARTED": ([tms(), tme(), RF], "run.first", 0),
    "event after RUN_FINISHED": ([RS, RF, tms()], "run.after-finished", 2),
    "event after RUN_ERROR": ([RS, RE, tms()], "run.after-error", 2),
    "RUN_ERROR twice": ([RS, RE, RE], "run.after-error", 2),
    "RUN_FINISHED twice": ([RS, RF, RF], "run.after-finished", 2),
    "RUN_STARTED while active": ([RS, RS, RF], "run.already-active", 1),
    # -- text messages ------------------------------------------------------------------
    "content without start": ([RS, tmc(), RF], "text.not-started", 1),
    "end with another id": ([RS, tms(), tme("m2"), RF], "text.not-started", 2),
    "duplicate start": ([RS, tms(), tms(), tme(), RF], "text.duplicate", 2),
    "content after end": ([RS, tms(), tme(), tmc(), RF], "text.not-started", 3),
    "finished with a message open": ([RS, tms(), tmc(), RF], "run.finished-open", 3),
    # -- tool calls ---------------------------------------------------------------------
    "args without start": ([RS, tca(), RF], "tool.not-started", 1),
    "duplicate tool start": ([RS, tcs(), tcs(), RF], "tool.duplicate", 2),
    "end of another call": ([RS, tcs(), tce("c2"), RF], "tool.not-started", 2),
    "finished with a call open": ([RS, tcs(), tca(), RF], "run.finished-open", 3),
    # -- steps ------------------------------------------------------------------------------
    "step finished not started": ([RS, step("FINISHED"), RF], "step.not-started", 1),
    "step started twice": ([RS, step("STARTED"), step("STARTED"), RF], "step.duplicate", 2),
    "finished with a step open": ([RS, step("STARTED"), RF], "run.finished-open", 2),
    "step finished by the wrong owner": (
        [
            RS,
            sub("STARTED"),
            step("STARTED", "tools"),
            step("FINISHED", "tools", subagentRunId="s1"),
        ],
        "step.owner",
        3,
    ),
    # -- reasoning ----------------------------------------------------------------------------
    "reasoning content without start": (
        [RS, reasoning("MESSAGE_CONTENT"), RF],
        "reasoning.not-started",
        1,
    ),
    "reasoning end without start": ([RS, reasoning("END"), RF], "reasoning.not-started", 1),
    "reasoning span opened twice": (
        [RS, reasoning("START"), reasoning("START"), RF],
        "reasoning.duplicate",
        2,
    ),
    "finished inside reasoning": ([RS, reasoning("START"), RF], "run.finished-open", 2),
    # -- subagents ----------------------------------------------------------------------------
    "subagent finished not started": ([RS, sub("FINISHED"), RF], "subagent.not-active", 1),
    "subagent started twice": ([RS, sub("STARTED"), sub("STARTED"), RF], "subagent.duplicate", 2),
    "subagent id reused": (
        [RS, sub("STARTED"), sub("FINISHED"), sub("STARTED"), RF],
        "subagent.reused",
        3,
    ),
    "subagent parent unknown": (
        [RS, sub("STARTED", parentSubagentRunId="nope"), RF],
        "subagent.parent",
        1,
    ),
    "finished with a subagent active": ([RS, sub("STARTED"), RF], "run.finished-open", 2),
    "subagent outcome of a run": (
        [RS, sub("STARTED"), sub("FINISHED", outcome={"type": "interrupt"}), RF],
        "subagent.outcome",
        2,
    ),
    "subagent description null": ([RS, sub("STARTED", description=None), RF], "subagent.null", 1),
    "subagent without id": (
        [RS, {"type": "SUBAGENT_STARTED", "name": "researcher"}, RF],
        "subagent.required",
        1,
    ),
    "subagent without name": (
        [RS, {"type": "SUBAGENT_STARTED", "subagentRunId": "s1"}, RF],
        "subagent.required",
        1,
    ),
    # -- attribution ----------------------------------------------------------------------------
    "subagentRunId null": ([RS, tms(subagentRunId=None), tme(), RF], "attr.null", 1),
    "content tagged by another subagent": (
        [RS, tms(subagentRunId="s1"), tmc(subagentRunId="s2"), tme(), RF],
        "attr.owner",
        2,
    ),
    "parent message tagged by a subagent": (
        [RS, tms(), tmc(subagentRunId="s1"), tme(), RF],
        "attr.owner",
        2,
    ),
    "tool call tagged against its parent message": (
        [RS, tms(), tme(), tcs(parentMessageId="m1", subagentRunId="s1"), tce(), RF],
        "tool.parent-owner",
        3,
    ),
    "reopen of a snapshot message under another owner": (
        [
            RS,
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {"id": "m1", "role": "assistant", "content": "x", "subagentRunId": "s1"}
                ],
            },
            tms(subagentRunId="s2"),
        ],
        "attr.owner",
        2,
    ),
    "snapshot message with null owner": (
        [
            RS,
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [{"id": "m1", "role": "user", "content": "x", "subagentRunId": None}],
            },
            RF,
        ],
        "attr.null",
        1,
    ),
    # -- agui_wire's own ---------------------------------------------------------------------------
    "empty stream": ([], "stream.empty", None),
    "stream cut inside a run": ([RS, tms(), tmc()], "run.unterminated", None),
    "delta that does not apply": (
        [RS, snap({"a": 1}), delta({"op": "replace", "path": "/b", "value": 2}), RF],
        "state.patch",
        2,
    ),
    "failing test op": (
        [RS, snap({"a": 1}), delta({"op": "test", "path": "/a", "value": 2}), RF],
        "state.patch",
        2,
    ),
    "array index out of bounds": (
        [RS, snap({"l": []}), delta({"op": "add", "path": "/l/1", "value": 0}), RF],
        "state.patch",
        2,
    ),
    "delta after a failed delta sees the old state": (
        [
            RS,
            snap({"a": 1}),
            delta({"op": "add", "path": "/b", "value": 1}, {"op": "remove", "path": "/zz"}),
            delta({"op": "test", "path": "/b", "value": 1}),
            RF,
        ],
        "state.patch",
        2,
    ),
    "activity patch that does not apply": (
        [RS, act_snap({"n": 1}), act_delta({"op": "remove", "path": "/m"}), RF],
        "activity.patch",
        2,
    ),
}
