"""The scripted agent run the example server streams, importable for tests.

``scripted_run(thread_id, run_id)`` is one complete AG-UI 1.0 run touching
every part of a real agent's stream: a state snapshot and JSON-patch deltas,
steps, a reasoning span, assistant text (non-ASCII included), a tool call whose
arguments arrive in chunks, its result, and ``RUN_FINISHED`` with a result. The
events are written in the form the binary transport gives back
(``agui_wire.normalize(e) == e``), so SSE and protobuf clients receive exactly
these dicts.

``bulk_run(thread_id, run_id, n, size)`` lazily yields a long run (``n`` text
deltas of ``size`` characters, each starting with its index), for load and
backpressure tests: the server never holds it in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

__all__ = ["FINAL_STATE", "bulk_run", "scripted_run"]

Event = dict[str, Any]

_T0: Final = 1_760_000_000_000

#: The state after the run's snapshot and deltas.
FINAL_STATE: Final[dict[str, Any]] = {
    "status": "done",
    "progress": 100,
    "steps": [{"name": "plan", "done": True}, {"name": "lookup", "done": True}],
    "forecast": {"city": "Zürich", "temperature": 21.5, "sky": "clear"},
}


def scripted_run(thread_id: str = "thread-1", run_id: str = "run-1") -> list[Event]:
    """The 33 events of one complete run (a new list each call)."""
    args = ['{"city": ', '"Zürich", ', '"unit": "C"}']
    result = '{"temperature": 21.5, "sky": "clear"}'
    return [
        {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id, "timestamp": _T0},
        {
            "type": "STATE_SNAPSHOT",
            "snapshot": {"status": "planning", "progress": 0, "steps": [], "forecast": None},
        },
        {"type": "STEP_STARTED", "stepName": "plan"},
        {"type": "REASONING_START", "messageId": "reasoning-1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "reasoning-1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "reasoning-1", "delta": "The user"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "reasoning-1", "delta": " wants"},
        {
            "type": "REASONING_MESSAGE_CONTENT",
            "messageId": "reasoning-1",
            "delta": " today's weather: call get_weather.",
        },
        {"type": "REASONING_MESSAGE_END", "messageId": "reasoning-1"},
        {"type": "REASONING_END", "messageId": "reasoning-1"},
        {"type": "STEP_FINISHED", "stepName": "plan"},
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/status", "value": "working"},
                {"op": "replace", "path": "/progress", "value": 30},
                {"op": "add", "path": "/steps/-", "value": {"name": "plan", "done": True}},
            ],
        },
        {"type": "STEP_STARTED", "stepName": "lookup"},
        {"type": "TEXT_MESSAGE_START", "messageId": "msg-1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-1", "delta": "Let me check"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-1", "delta": " the weather"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-1", "delta": " in Zürich ☀️…"},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg-1"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "call-1",
            "toolCallName": "get_weather",
            "parentMessageId": "msg-1",
            "timestamp": _T0 + 1200,
        },
        *({"type": "TOOL_CALL_ARGS", "toolCallId": "call-1", "delta": a} for a in args),
        {"type": "TOOL_CALL_END", "toolCallId": "call-1"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "tool-1",
            "toolCallId": "call-1",
            "content": result,
            "role": "tool",
            "timestamp": _T0 + 1850,
        },
        {
            "type": "STATE_DELTA",
            "delta": [
                {
                    "op": "replace",
                    "path": "/forecast",
                    "value": {"city": "Zürich", "temperature": 21.5, "sky": "clear"},
                },
                {"op": "replace", "path": "/progress", "value": 80},
            ],
        },
        {"type": "STEP_FINISHED", "stepName": "lookup"},
        {"type": "TEXT_MESSAGE_START", "messageId": "msg-2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-2", "delta": "It is 21.5 °C"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-2", "delta": " and clear"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-2", "delta": " in Zürich."},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg-2"},
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/status", "value": "done"},
                {"op": "replace", "path": "/progress", "value": 100},
                {"op": "add", "path": "/steps/-", "value": {"name": "lookup", "done": True}},
            ],
        },
        {
            "type": "RUN_FINISHED",
            "threadId": thread_id,
            "runId": run_id,
            "result": {"answer": "21.5 °C and clear"},
            "outcome": {"type": "success"},
            "timestamp": _T0 + 2400,
        },
    ]


def bulk_run(thread_id: str, run_id: str, n: int, size: int) -> Iterator[Event]:
    """A run of ``n`` text deltas of ``size`` (>= 8) characters, generated lazily."""
    if size < 8:
        raise ValueError("size must be at least 8 (the delta starts with its index)")
    filler = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[: size - 8]
    yield {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}
    yield {"type": "TEXT_MESSAGE_START", "messageId": "bulk", "role": "assistant"}
    for i in range(n):
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "bulk", "delta": f"{i:08d}{filler}"}
    yield {"type": "TEXT_MESSAGE_END", "messageId": "bulk"}
    yield {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}
