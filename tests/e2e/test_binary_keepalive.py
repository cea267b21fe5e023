"""The binary keep-alive (``EventStreamResponse(binary_keepalive=True)``) against
the real clients, over uvicorn's sockets: the reference ``HttpAgent`` (``@ag-ui/client``
1.0.0 under node, its full ``runAgent`` pipeline) completes the run with the same
messages, and ``agui_wire.client`` yields exactly the run's events.

The producer pauses before ``RUN_STARTED``, mid-run and after ``RUN_FINISHED``
(far longer than the keep-alive interval): keep-alives must appear in the
middle pause only (the reference refuses any event outside a run), and the
default (off) must leave a binary stream silent. tests/interop/test_keepalive.py
holds what the reference makes of each candidate heartbeat.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.asgi import KEEPALIVE_EVENT, EventStreamResponse
from agui_wire.client import run_agent
from tests.support.live import uvicorn_thread

PAUSE = 0.4
INTERVAL = 0.05


def script(thread_id: str, run_id: str) -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello"},
        # <- the agent thinks here (PAUSE)
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": ", world"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id},
    ]


async def agent(request: Request) -> EventStreamResponse:
    body = await request.json()
    events = script(body["threadId"], body["runId"])

    async def slow() -> AsyncIterator[dict[str, Any]]:
        await asyncio.sleep(PAUSE)  # before RUN_STARTED: no keep-alive may go out
        for i, event in enumerate(events):
            if i == 3:
                await asyncio.sleep(PAUSE)
            yield event
        await asyncio.sleep(PAUSE)  # after the run's end: none either

    on = request.query_params.get("keepalive") == "1"
    return EventStreamResponse(slow(), request, keepalive=INTERVAL, binary_keepalive=on)


app = Starlette(routes=[Route("/agent", agent, methods=["POST"])])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with uvicorn_thread(app) as url:
        yield url


def post(url: str, accept: str, keepalive: bool) -> list[dict[str, Any]]:
    response = httpx.post(
        f"{url}/agent?keepalive={int(keepalive)}",
        json={"threadId": "t", "runId": "r"},
        headers={"accept": accept},
        timeout=10,
    )
    assert response.headers["content-type"] == accept
    return decode(response.content, accept)


def test_keepalives_go_out_inside_the_run_only(server: str) -> None:
    events = post(server, PROTO_MEDIA_TYPE, keepalive=True)
    run = script("t", "r")
    beats = [i for i, e in enumerate(events) if e == KEEPALIVE_EVENT]
    # the mid-run pause: PAUSE / INTERVAL intervals, give or take the loop's timing
    assert len(beats) >= PAUSE / INTERVAL / 2
    assert beats == list(range(3, 3 + len(beats)))  # all of them in that pause
    assert [e for e in events if e != KEEPALIVE_EVENT] == run


def test_off_by_default_and_sse_keeps_its_comments(server: str) -> None:
    assert post(server, PROTO_MEDIA_TYPE, keepalive=False) == script("t", "r")
    response = httpx.post(
        f"{server}/agent?keepalive=1",
        json={"threadId": "t", "runId": "r"},
        headers={"accept": SSE_MEDIA_TYPE},
        timeout=10,
    )
    assert b"agui_wire.keepalive" not in response.content
    assert response.content.count(b": keep-alive\n\n") >= PAUSE / INTERVAL  # all three pauses
    assert decode(response.content, SSE_MEDIA_TYPE) == script("t", "r")


def test_agui_wire_client_drops_them(server: str) -> None:
    with httpx.Client(timeout=10) as client:
        got = list(
            run_agent(
                client,
                f"{server}/agent?keepalive=1",
                {"threadId": "t", "runId": "r"},
                accept=PROTO_MEDIA_TYPE,
            )
        )
    assert got == script("t", "r")


@pytest.mark.interop
def test_the_reference_http_agent_completes_the_run(server: str, ts_agent: Any) -> None:
    raw = ts_agent.run(f"{server}/agent?keepalive=1", accept=PROTO_MEDIA_TYPE, run_id="r")
    assert raw.error is None, raw.error
    assert raw.completed
    assert raw.content_type == PROTO_MEDIA_TYPE
    customs = [e for e in raw.events if e["type"] == "CUSTOM"]
    assert customs
    assert all(e["name"] == "agui_wire.keepalive" for e in customs)
    piped = ts_agent.run(
        f"{server}/agent?keepalive=1", accept=PROTO_MEDIA_TYPE, mode="pipeline", run_id="r"
    )
    assert piped.error is None, piped.error
    assert piped.completed
    assert piped.warnings == []
    assert piped.extra["newMessages"] == [
        {"id": "m1", "role": "assistant", "content": "Hello, world"}
    ]
