"""A realistic AG-UI agent run, for benchmarks, size comparisons and ``agui-wire cost``.

``realistic_run(n, seed)`` returns exactly ``n`` valid AG-UI 1.0 events (JSON
dicts as ``@ag-ui/core`` would parse them) shaped like a streaming LLM agent:
``RUN_STARTED``, a ``STATE_SNAPSHOT``, then turns of steps, reasoning, an
assistant message streamed a few words per ``TEXT_MESSAGE_CONTENT``, tool calls
with their arguments in ``TOOL_CALL_ARGS`` chunks and a ``TOOL_CALL_RESULT``,
``STATE_DELTA`` patches, and finally ``RUN_FINISHED`` with token usage.

Proportions follow what production streams look like: about 86% of the events
are ``TEXT_MESSAGE_CONTENT`` deltas, the rest is structure. The output depends
only on ``(n, seed)`` (``random.Random`` with an int seed is stable across
Python versions), so results computed from it are comparable run to run.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["TEXT_SHARE", "realistic_run"]

Event = dict[str, Any]

TEXT_SHARE: Final = 0.86  # fraction of TEXT_MESSAGE_CONTENT events
_T0: Final = 1_760_000_000_000  # first timestamp, ms since the epoch
_TURN_STRUCTURE: Final = 20  # non-content events one full turn uses, roughly

_TEXT: Final = (
    "the agent checks the latest quarterly numbers and compares them with last year "
    "revenue grew in every region except the north where a supplier delay pushed "
    "shipments into the next quarter so the forecast should account for that backlog "
    "I will look up the current figures summarise the differences and suggest what "
    "to change in the plan before the review on Thursday here is what I found"
)
_WORDS: Final = tuple(_TEXT.split())
_TIMESTAMPED: Final = frozenset(
    {
        "RUN_STARTED",
        "RUN_FINISHED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
        "REASONING_START",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    }
)
_PUNCT: Final = (",", ".", ":", ";", "?")
_TOOLS: Final = ("search_documents", "get_weather", "run_sql", "fetch_url", "create_ticket")


@dataclass(frozen=True, slots=True)
class _Text:
    """Where a text message's TEXT_MESSAGE_CONTENT events go; filled at the end."""

    message_id: str


class _Run:
    """Builds one run; ``others`` is the budget of non-content events."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.clock = _T0 + rng.randrange(86_400_000)
        self.thread_id = self.uid()
        self.run_id = self.uid()
        self.progress = 0

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def now(self) -> int:
        self.clock += self.rng.randrange(5, 120)
        return self.clock

    def words(self, lo: int, hi: int) -> str:
        text = " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(lo, hi)))
        if self.rng.random() < 0.15:
            text += self.rng.choice(_PUNCT)
        return " " + text

    def snapshot(self) -> Event:
        return {
            "type": "STATE_SNAPSHOT",
            "snapshot": {
                "status": "working",
                "progress": 0,
                "steps": [],
                "documents": [],
                "user": {"locale": "en-GB", "plan": "team"},
            },
        }

    def delta(self, step: str) -> Event:
        self.progress = min(100, self.progress + self.rng.randint(5, 25))
        return {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/progress", "value": self.progress},
                {"op": "add", "path": "/steps/-", "value": {"name": step, "done": True}},
            ],
        }

    def turn(self, budget: int, step: str) -> list[Event | _Text]:
        """One turn using exactly ``budget`` (>= 2) structural events."""
        rng = self.rng
        spend = budget - 2  # TEXT_MESSAGE_START / END are always there
        step_events = spend >= 2
        spend -= 2 if step_events else 0
        reasoning = 0  # REASONING_MESSAGE_CONTENT count; the block costs 4 more
        if spend >= 5 and rng.random() < 0.8:
            reasoning, spend = 1, spend - 5
        tool_args = 0  # TOOL_CALL_ARGS count; the block costs 3 more
        if spend >= 4:
            tool_args, spend = 1, spend - 4
        deltas = 0
        if spend >= 1:
            deltas, spend = 1, spend - 1
        # Whatever is left goes to the chunked parts, as a real stream would.
        while spend > 0:
            pick = rng.random()
            if tool_args and pick < 0.6:
                tool_args += 1
            elif reasoning and pick < 0.9:
                reasoning += 1
            else:
                deltas += 1
            spend -= 1

        out: list[Event | _Text] = []
        if step_events:
            out.append({"type": "STEP_STARTED", "stepName": step})
        if reasoning:
            rid = self.uid()
            out += [
                {"type": "REASONING_START", "messageId": rid},
                {"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"},
                *(
                    {
                        "type": "REASONING_MESSAGE_CONTENT",
                        "messageId": rid,
                        "delta": self.words(2, 6),
                    }
                    for _ in range(reasoning)
                ),
                {"type": "REASONING_MESSAGE_END", "messageId": rid},
                {"type": "REASONING_END", "messageId": rid},
            ]
        mid = self.uid()
        out += [
            {
                "type": "TEXT_MESSAGE_START",
                "messageId": mid,
                "role": "assistant",
            },
            _Text(mid),
            {"type": "TEXT_MESSAGE_END", "messageId": mid},
        ]
        if tool_args:
            out += self.tool_call(mid, tool_args)
        out += [self.delta(step) for _ in range(deltas)]
        if step_events:
            out.append({"type": "STEP_FINISHED", "stepName": step})
        return out

    def tool_call(self, parent: str, n_args: int) -> list[Event]:
        rng = self.rng
        name = rng.choice(_TOOLS)
        args = json.dumps({"query": self.words(3, 8).strip(), "limit": rng.randint(1, 20)})
        while len(args) < 2 * n_args:  # every chunk gets at least two characters
            args = json.dumps({"query": json.loads(args)["query"] + self.words(4, 8)})
        cuts = sorted(rng.sample(range(1, len(args)), n_args - 1)) if n_args > 1 else []
        pieces = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True)]
        tid = "call_" + self.uid().replace("-", "")[:24]
        item = {"id": rng.randint(1, 9999), "title": self.words(2, 5).strip()}
        result = {"ok": True, "items": [item]}
        return [
            {
                "type": "TOOL_CALL_START",
                "toolCallId": tid,
                "toolCallName": name,
                "parentMessageId": parent,
            },
            *({"type": "TOOL_CALL_ARGS", "toolCallId": tid, "delta": p} for p in pieces),
            {"type": "TOOL_CALL_END", "toolCallId": tid},
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": self.uid(),
                "toolCallId": tid,
                "content": json.dumps(result),
                "role": "tool",
            },
        ]


def realistic_run(n_events: int, seed: int = 0) -> list[Event]:
    """Exactly ``n_events`` (>= 2) events of one realistic run, deterministic in ``seed``."""
    if n_events < 2:
        raise ValueError("a run has at least RUN_STARTED and RUN_FINISHED")
    rng = random.Random(seed)
    run = _Run(rng)
    content = round(n_events * TEXT_SHARE) if n_events >= 5 else 0
    others = n_events - 2 - content  # besides RUN_STARTED / RUN_FINISHED
    if content and others < 2:  # content needs a TEXT_MESSAGE_START / END around it
        content, others = n_events - 4, 2

    body: list[Event | _Text] = []
    if others >= 1 and (others != 2 or not content):
        body.append(run.snapshot())
        others -= 1
    if content:
        turns = max(1, others // _TURN_STRUCTURE)
        for i in range(turns):
            budget = others // (turns - i)
            body += run.turn(budget, f"step_{i + 1}")
            others -= budget
    body += [run.delta("final") for _ in range(others)]

    # Spread the content over the text messages, at least one delta each.
    slots = [item for item in body if isinstance(item, _Text)]
    weights = [rng.uniform(0.5, 1.5) for _ in slots]
    counts = [1] * len(slots)
    for _ in range(content - len(slots)):
        counts[rng.choices(range(len(slots)), weights)[0]] += 1
    per_slot = dict(zip(slots, counts, strict=True))

    events: list[Event] = [
        {
            "type": "RUN_STARTED",
            "threadId": run.thread_id,
            "runId": run.run_id,
        }
    ]
    for item in body:
        if isinstance(item, dict):
            events.append(item)
            continue
        events += (
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": item.message_id, "delta": run.words(1, 3)}
            for _ in range(per_slot[item])
        )
    prompt_tokens = rng.randint(800, 4000)
    output_tokens = max(1, content * 2)
    events.append(
        {
            "type": "RUN_FINISHED",
            "threadId": run.thread_id,
            "runId": run.run_id,
            "outcome": {"type": "success"},
            "usage": [
                {
                    "provider": "openai",
                    "model": "gpt-4.1",
                    "inputTokens": prompt_tokens,
                    "outputTokens": output_tokens,
                    "totalTokens": prompt_tokens + output_tokens,
                }
            ],
        }
    )
    # Every event advances the clock; lifecycle events carry the time, streamed
    # deltas do not (as typical producers emit them).
    for event in events:
        clock = run.now()
        if event["type"] in _TIMESTAMPED:
            event["timestamp"] = clock
    assert len(events) == n_events, (len(events), n_events)
    return events
