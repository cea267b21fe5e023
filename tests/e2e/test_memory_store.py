"""The memory store as the first step, over real sockets: one uvicorn process (in a
thread) serving docs/scaling.md's app shape with ``agui_wire.memory.RunStore``,
behind a TCP balancer (tests/redis/harness.py) that cuts every open connection
mid-stream. ``arun_agent`` and ``run_agent`` reconnect by themselves and resume
(``Last-Event-ID`` on SSE, ``?after=`` on binary): every event once, in order; an
observer joining late with ``compact=1`` gets a snapshot then the rest; the
reference ``@ag-ui/client`` ``HttpAgent`` reads a run on both transports."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.client import arun_agent, run_agent
from agui_wire.errors import RunInProgress
from agui_wire.memory import RunStore, resume_after
from tests.redis.app import paced, token_run
from tests.redis.harness import Balancer
from tests.support.live import uvicorn_thread

STORE = RunStore(lease=2)


async def agent(request: Request) -> Response:
    body = await request.json()
    run_id = body.get("runId")
    n = int(request.query_params.get("events", "100"))
    delay = float(request.query_params.get("delay", "0"))
    try:
        if resume_after(request) is None:  # not a reconnect
            with contextlib.suppress(RunInProgress):
                await STORE.start(run_id, paced(token_run("thread-1", run_id, n), delay))
    except ValueError as exc:
        return PlainTextResponse(f"{exc}\n", status_code=400)
    return STORE.response(run_id, request)


async def events(request: Request) -> Response:
    compact = request.query_params.get("compact") == "1"
    return STORE.response(request.path_params["run_id"], request, compact=compact)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    yield
    await STORE.aclose()


app = Starlette(
    routes=[
        Route("/agent", agent, methods=["POST"]),
        Route("/runs/{run_id}/events", events, methods=["GET"]),
    ],
    lifespan=lifespan,
)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Balancer]]:
    with uvicorn_thread(app, lifespan="on") as url:
        balancer = Balancer([int(url.rsplit(":", 1)[1])]).start()
        try:
            yield url, balancer
        finally:
            balancer.stop()


def run_input(run_id: str) -> dict[str, Any]:
    return {
        "threadId": "thread-1",
        "runId": run_id,
        "messages": [],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_clients_reconnect_and_resume_in_one_process(
    server: tuple[str, Balancer], accept: str
) -> None:
    _, balancer = server
    n = 400
    url = f"{balancer.url}/agent?events={n}&delay=0.004"
    run_id = f"run-{uuid.uuid4()}"
    before = balancer.connections

    async def main() -> list[dict[str, Any]]:
        got = []
        async with httpx.AsyncClient(timeout=30) as client:
            body = run_input(run_id)
            async for event in arun_agent(client, url, body, accept=accept, backoff=0.05):
                got.append(event)
                if len(got) in (50, 200):
                    balancer.cut()
        return got

    assert asyncio.run(main()) == token_run("thread-1", run_id, n)
    assert balancer.connections - before >= 3  # two reconnects, resumed

    run_id = f"run-{uuid.uuid4()}"
    got = []
    with httpx.Client(timeout=30) as client:
        for event in run_agent(client, url, run_input(run_id), accept=accept, backoff=0.05):
            got.append(event)
            if len(got) == 120:
                balancer.cut()
    assert got == token_run("thread-1", run_id, n)


def test_a_late_observer_gets_a_snapshot_then_the_rest(server: tuple[str, Balancer]) -> None:
    url, _ = server
    run_id = f"run-{uuid.uuid4()}"
    n = 300
    with httpx.Client(timeout=30) as client:
        with client.stream(
            "POST",
            f"{url}/agent?events={n}&delay=0.005",
            json=run_input(run_id),
            headers={"accept": SSE_MEDIA_TYPE},
        ) as producer:
            seen = 0
            for line in producer.iter_lines():
                seen += line.startswith("data:")
                if seen == 100:
                    break  # the client leaves; the run goes on
        observer = client.get(
            f"{url}/runs/{run_id}/events", params={"compact": 1}, headers={"accept": SSE_MEDIA_TYPE}
        )
    got = decode(observer.content, SSE_MEDIA_TYPE)
    whole = token_run("thread-1", run_id, n)
    assert got[0] == whole[0]
    assert got[1]["type"] == "MESSAGES_SNAPSHOT"
    assert len(got) < len(whole)  # a snapshot, not every token
    assert got[-1] == whole[-1]
    text = got[1]["messages"][0]["content"] + "".join(
        e["delta"] for e in got if e["type"] == "TEXT_MESSAGE_CONTENT"
    )
    assert text == "".join(e["delta"] for e in whole if e["type"] == "TEXT_MESSAGE_CONTENT")


@pytest.mark.interop
@pytest.mark.parametrize("accept", [None, PROTO_MEDIA_TYPE])
def test_the_reference_http_agent_reads_a_run(
    server: tuple[str, Balancer], ts_agent: Any, accept: str | None
) -> None:
    url, _ = server
    run_id = f"run-{uuid.uuid4()}"
    out = ts_agent.run(f"{url}/agent?events=50&delay=0.002", accept=accept, run_id=run_id)
    assert out.error is None
    assert out.completed
    assert out.content_type == (accept or SSE_MEDIA_TYPE)
    assert out.events == token_run("thread-1", run_id, 50)
