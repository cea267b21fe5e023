"""Random schema-valid runs that touch every rule of a client's fold (``RunState``).

``fold_stream(seed, n)`` starts with ``RUN_STARTED`` (input echo with messages,
some owned by a subagent or with tool calls, and a state) and then picks among:
text and reasoning messages opened, grown and closed (sometimes over an id the
run already has, an activity's included), tool calls with and without a parent
(existing, missing, or not an assistant), their arguments and results, encrypted
values for messages and tool calls, activity snapshots (replacing or not) and
deltas (some that do not apply), ``MESSAGES_SNAPSHOT``s (with or without
activities and reasoning, with ``authoritativeActivityTypes``), state snapshots
and deltas (some that do not apply), all with and without ``metadata`` and
``subagentRunId``. Sequence rules are not kept: the fold does not check them.
tests/interop/test_run_state.py holds ``RunState`` to ``defaultApplyEvents`` on
these.
"""

from __future__ import annotations

import random
from typing import Any

Event = dict[str, Any]


def fold_stream(seed: int, n: int = 60) -> list[Event]:
    rng = random.Random(seed)
    ids = [f"m{i}" for i in range(6)] + ["a0", "a1", "c0", "c1"]
    calls = [f"c{i}" for i in range(4)]

    def maybe(event: Event) -> Event:
        if rng.random() < 0.3:
            event["metadata"] = {rng.choice("xyz"): rng.randrange(3)}
        if rng.random() < 0.2 and event["type"] not in ("MESSAGES_SNAPSHOT", "RUN_STARTED"):
            event["subagentRunId"] = rng.choice(["s1", "s2"])
        return event

    def message() -> Event:
        role = rng.choice(["user", "assistant", "assistant", "activity", "reasoning", "tool"])
        m: Event = {"id": rng.choice(ids), "role": role}
        if role == "activity":
            m.update(activityType=rng.choice(["plan", "search"]), content={"items": []})
        elif role == "tool":
            m.update(content="ok", toolCallId=rng.choice(calls))
        else:
            m["content"] = rng.choice(["", "hello", "more"])
        if role == "assistant" and rng.random() < 0.5:
            m["toolCalls"] = [
                {
                    "id": rng.choice(calls),
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                }
            ]
        if rng.random() < 0.2:
            m["subagentRunId"] = "s1"
        return m

    def messages() -> list[Event]:
        out: list[Event] = []
        for m in (message() for _ in range(rng.randrange(4))):
            if all(o["id"] != m["id"] for o in out):
                out.append(m)
        return out

    def patch(ok: bool, target: str) -> list[Event]:
        if not ok:
            return [{"op": "remove", "path": "/missing"}]
        return [{"op": "add", "path": f"/{target}/-", "value": rng.randrange(9)}]

    events: list[Event] = [
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [m for m in messages() if m["role"] != "activity"],
                "state": {"items": []},
            },
        }
    ]
    for _ in range(n):
        kind = rng.randrange(13)
        mid = rng.choice(ids)
        if kind == 0:
            e: Event = {"type": "TEXT_MESSAGE_START", "messageId": mid}
            if rng.random() < 0.7:
                e["role"] = rng.choice(["assistant", "user", "system", "developer"])
            if rng.random() < 0.3:
                e["name"] = "bot"
        elif kind == 1:
            e = {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": rng.choice("ab")}
        elif kind == 2:
            e = {
                "type": rng.choice(["TEXT_MESSAGE_END", "REASONING_MESSAGE_END"]),
                "messageId": mid,
            }
        elif kind == 3:
            e = rng.choice(
                [
                    {"type": "REASONING_MESSAGE_START", "messageId": mid, "role": "reasoning"},
                    {"type": "REASONING_MESSAGE_CONTENT", "messageId": mid, "delta": "hm"},
                ]
            )
        elif kind == 4:
            e = {"type": "TOOL_CALL_START", "toolCallId": rng.choice(calls), "toolCallName": "f"}
            if rng.random() < 0.6:
                e["parentMessageId"] = rng.choice([*ids, ""])
        elif kind == 5:
            e = {"type": "TOOL_CALL_ARGS", "toolCallId": rng.choice(calls), "delta": '{"a"'}
        elif kind == 6:
            e = rng.choice(
                [
                    {"type": "TOOL_CALL_END", "toolCallId": rng.choice(calls)},
                    {
                        "type": "TOOL_CALL_RESULT",
                        "messageId": f"r{rng.randrange(3)}",
                        "toolCallId": rng.choice(calls),
                        "content": "42",
                    },
                ]
            )
        elif kind == 7:
            e = {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": rng.choice(["message", "tool-call"]),
                "entityId": rng.choice([*ids, *calls]),
                "encryptedValue": "enc",
            }
        elif kind == 8:
            e = {
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": rng.choice(["a0", "a1", mid]),
                "activityType": "plan",
                "content": {"items": [1]},
            }
            if rng.random() < 0.5:
                e["replace"] = rng.random() < 0.5
        elif kind == 9:
            e = {
                "type": "ACTIVITY_DELTA",
                "messageId": rng.choice(["a0", "a1", mid]),
                "activityType": "plan",
                "patch": patch(rng.random() < 0.8, "items"),
            }
        elif kind == 10:
            e = {"type": "MESSAGES_SNAPSHOT", "messages": messages()}
            if rng.random() < 0.3:
                types = rng.choice([None, [], ["plan"], ["search"]])
                e["metadata"] = {"@ag-ui/client": {"authoritativeActivityTypes": types}}
                events.append(e)
                continue
        elif kind == 11:
            e = {"type": "STATE_SNAPSHOT", "snapshot": {"items": [rng.randrange(9)]}}
        else:
            e = {"type": "STATE_DELTA", "delta": patch(rng.random() < 0.8, "items")}
        events.append(maybe(e))
    return events
