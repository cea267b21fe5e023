"""A paced AG-UI agent for ``agui-wire record`` and ``inspect --timeline`` tests.

``POST /agent`` answers a run whose events are spaced by known pauses (``PLAN``:
the pause before each event, in seconds), negotiated by ``EventStreamResponse``
(SSE or protobuf), echoing the request's threadId/runId and the user's message,
so a test can check both the request that was sent and the times measured;
``?gzip=1`` sends it gzip-compressed.
``/fail`` answers 500; ``/page`` answers HTML; ``/cut`` sends two SSE events and
then breaks the connection mid-body; ``/slow`` streams a text delta every 50 ms
for a minute (to interrupt).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agui_wire.asgi import EventStreamResponse

TOOL_SECONDS = 0.30  # how long the tool "runs": the pause before TOOL_CALL_RESULT
DELTA_SECONDS = 0.03
WORDS = ["It ", "is ", "21 ", "°C ", "in ", "Zürich."]


def plan(thread: str, run: str, message: str) -> list[tuple[float, dict[str, Any]]]:
    """(pause before it, event) for one run."""
    events: list[tuple[float, dict[str, Any]]] = [
        (0.0, {"type": "RUN_STARTED", "threadId": thread, "runId": run}),
        (0.05, {"type": "REASONING_START", "messageId": "r-1"}),
        (0.0, {"type": "REASONING_MESSAGE_START", "messageId": "r-1", "role": "reasoning"}),
        (0.02, {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r-1", "delta": message}),
        (0.02, {"type": "REASONING_MESSAGE_END", "messageId": "r-1"}),
        (0.0, {"type": "REASONING_END", "messageId": "r-1"}),
        (
            0.05,
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "call-1",
                "toolCallName": "get_weather",
                "parentMessageId": "m-1",
            },
        ),
        (0.02, {"type": "TOOL_CALL_ARGS", "toolCallId": "call-1", "delta": '{"city": '}),
        (0.02, {"type": "TOOL_CALL_ARGS", "toolCallId": "call-1", "delta": '"Zürich"}'}),
        (0.0, {"type": "TOOL_CALL_END", "toolCallId": "call-1"}),
        (
            TOOL_SECONDS,
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "tr-1",
                "toolCallId": "call-1",
                "content": '{"celsius": 21}',
                "role": "tool",
            },
        ),
        (0.0, {"type": "STATE_SNAPSHOT", "snapshot": {"city": "Zürich", "celsius": 21}}),
        (0.02, {"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant"}),
    ]
    for word in WORDS:
        events.append(
            (DELTA_SECONDS, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": word})
        )
    events += [
        (0.0, {"type": "TEXT_MESSAGE_END", "messageId": "m-1"}),
        (0.0, {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/done", "value": True}]}),
        (0.01, {"type": "RUN_FINISHED", "threadId": thread, "runId": run}),
    ]
    return events


async def agent(request: Request) -> Response:
    body = await request.json()
    messages = body.get("messages") or []
    said = messages[-1]["content"] if messages else "(no message)"

    async def events() -> AsyncIterator[dict[str, Any]]:
        for pause, event in plan(body["threadId"], body["runId"], said):
            if pause:
                await asyncio.sleep(pause)
            yield event

    # ?gzip=1: compressed (Content-Encoding: gzip), flushed after every event
    compress = ["gzip"] if request.query_params.get("gzip") == "1" else False
    return EventStreamResponse(events(), request, keepalive=None, compress=compress)


async def fail(request: Request) -> Response:
    return JSONResponse({"detail": "the agent is down"}, status_code=500)


async def page(request: Request) -> Response:
    return HTMLResponse("<html><body>not an agent</body></html>")


async def cut(request: Request) -> Response:
    async def body() -> AsyncIterator[bytes]:
        yield b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
        await asyncio.sleep(0.05)
        yield b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
        await asyncio.sleep(0.05)
        raise RuntimeError("the server broke mid-stream")

    return StreamingResponse(body(), media_type="text/event-stream")


async def slow(request: Request) -> Response:
    async def events() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
        for n in range(1200):
            await asyncio.sleep(0.05)
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"{n} "}

    return EventStreamResponse(events(), request, keepalive=None)


app = Starlette(
    routes=[
        Route("/agent", agent, methods=["POST"]),
        Route("/fail", fail, methods=["POST"]),
        Route("/page", page, methods=["POST"]),
        Route("/cut", cut, methods=["POST"]),
        Route("/slow", slow, methods=["POST"]),
    ]
)
