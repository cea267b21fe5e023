"""The app the replica tests and benchmarks run under uvicorn: one replica of a
deployment sharing runs through Redis (``AGUI_REDIS_URL``).

* ``POST /agent``: a ``RunAgentInput``; starts the run in the background (unless
  a producer already holds it) and streams it with ``RunStore.response``. A
  resumed request (``Last-Event-ID`` or ``?after=``) starts it with
  ``replay=True`` (the runs here are deterministic), so it takes over a run
  whose replica drained, replaying the events the client has without delay.
  Query: ``events`` (text deltas, default: the scripted run), ``delay``
  (seconds before each event), ``compact``.
* ``POST /runs/{run_id}/start``: the same run started without streaming it (202);
  ``replay=1`` takes over a run handed over (a retried job), ``fast=K``
  replays its first K events without delay.
* ``GET /runs/{run_id}/events``: the run as an observer reads it (``compact``).
* ``GET /page/{run_id}``: a page whose ``EventSource`` reads that route, for the
  browser tests: ``window.got`` (the events), ``window.ids`` (their
  ``lastEventId``), ``window.at`` (when each came, in seconds), ``window.opens``
  (connections opened); it closes the source after a terminal event.
* ``POST /publish?run=R``: a benchmark run whose deltas are their publish time
  (``time.time()``), so subscribers measure latency.

``AGUI_LEASE`` (seconds, default 2), ``AGUI_TTL`` and ``AGUI_RECONNECT`` (default
10) configure the store. On SIGTERM the replica drains
(``RunStore.drain_on_signal``, grace ``AGUI_DRAIN_GRACE`` seconds, default 1). The
owner of a request's runs is its ``x-agui-user`` header (none: the shared
namespace), standing for the app's authentication; a run id that is not one is a
400; the store's errors are answered by ``store_error_response`` (Redis
unreachable, or the replica draining: 503 with ``Retry-After`` on every route).
Log lines carry their level and logger (the outage tests count them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from agui_wire.errors import RunAbandoned, RunInProgress, StoreError
from agui_wire.redis import RunStore, resume_after, store_error_response
from examples.script import scripted_run

Event = dict[str, Any]

logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")

_store: RunStore | None = None


def store() -> RunStore:
    global _store
    if _store is None:
        client = aioredis.from_url(os.environ["AGUI_REDIS_URL"])
        _store = RunStore(
            client,
            lease=float(os.environ.get("AGUI_LEASE", "2")),
            ttl=float(os.environ.get("AGUI_TTL", "600")),
            reconnect=float(os.environ.get("AGUI_RECONNECT", "10")),
        )
    return _store


def token_run(thread_id: str, run_id: str, n: int, size: int = 8) -> list[Event]:
    """RUN_STARTED, one text message of ``n`` deltas, RUN_FINISHED."""
    events: list[Event] = [{"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}]
    events.append({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
    events += [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"{i:07d}".ljust(size, ".")}
        for i in range(n)
    ]
    events.append({"type": "TEXT_MESSAGE_END", "messageId": "m1"})
    events.append({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id})
    return events


async def paced(events: list[Event], delay: float, fast: int = 0) -> AsyncIterator[Event]:
    """The events, ``delay`` s before each but the first ``fast`` (a replay)."""
    for i, event in enumerate(events):
        if delay and i >= fast:
            await asyncio.sleep(delay)
        yield event


def _events(request: Request, body: dict[str, Any], run_id: str) -> list[Event]:
    thread_id = body.get("threadId", "thread-1")
    count = request.query_params.get("events")
    if count is None:
        return scripted_run(thread_id, run_id)
    return token_run(thread_id, run_id, int(count), int(request.query_params.get("size", "8")))


def _owner(request: Request) -> str | None:
    return request.headers.get("x-agui-user")


async def _start(
    request: Request, body: dict[str, Any], run_id: str, replay: bool, fast: int
) -> None:
    delay = float(request.query_params.get("delay", "0"))
    events = paced(_events(request, body, run_id), delay, fast)
    with contextlib.suppress(RunInProgress, RunAbandoned):  # running elsewhere, or ended: read it
        await store().start(run_id, events, owner=_owner(request), replay=replay)


async def agent(request: Request) -> Response:
    body = await request.json()
    run_id = body.get("runId")
    try:
        after = resume_after(request)
        await _start(request, body, run_id, after is not None, int(after or 0))
    except ValueError as exc:  # a runId (or Last-Event-ID) that is not one
        return PlainTextResponse(f"{exc}\n", status_code=400)
    compact = request.query_params.get("compact") == "1"
    return store().response(run_id, request, compact=compact, owner=_owner(request))


async def start(request: Request) -> Response:
    run_id = request.path_params["run_id"]
    replay = request.query_params.get("replay") == "1"
    fast = int(request.query_params.get("fast", "0"))
    await _start(request, {"threadId": "thread-1"}, run_id, replay, fast)
    return JSONResponse({"runId": run_id}, status_code=202)


async def events(request: Request) -> Response:
    compact = request.query_params.get("compact") == "1"
    run_id = request.path_params["run_id"]
    return store().response(run_id, request, compact=compact, owner=_owner(request))


async def publish(request: Request) -> Response:
    """A benchmark run, started in the background (202 once claimed): after
    ``hold`` seconds (subscribers connect meanwhile), ``events`` deltas, each
    carrying its publish time (``time.time()``), ``delay`` seconds apart."""
    run_id = request.query_params["run"]
    n = int(request.query_params.get("events", "1000"))
    delay = float(request.query_params.get("delay", "0"))
    hold = float(request.query_params.get("hold", "0"))

    async def stamped() -> AsyncIterator[Event]:
        await asyncio.sleep(hold)
        yield {"type": "RUN_STARTED", "threadId": "bench", "runId": run_id}
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}
        for _ in range(n):
            if delay:
                await asyncio.sleep(delay)
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"{time.time():.6f}"}
        yield {"type": "TEXT_MESSAGE_END", "messageId": "m1"}
        yield {"type": "RUN_FINISHED", "threadId": "bench", "runId": run_id}

    await store().start(run_id, stamped())
    return JSONResponse({"runId": run_id}, status_code=202)


PAGE = """<!doctype html><meta charset="utf-8"><title>run</title><script>
window.got = []; window.ids = []; window.at = []; window.opens = 0;
const source = new EventSource("/runs/" + encodeURIComponent(__RUN_ID__) + "/events");
source.onopen = () => { window.opens += 1; };
source.onmessage = (message) => {
  const event = JSON.parse(message.data);
  window.got.push(event);
  window.ids.push(message.lastEventId);
  window.at.push(performance.now() / 1000);
  if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") source.close();
};
</script>"""


async def page(request: Request) -> Response:
    run_id = json.dumps(request.path_params["run_id"]).replace("<", "\\u003c")
    return HTMLResponse(PAGE.replace("__RUN_ID__", run_id))


async def healthz(request: Request) -> Response:
    """Readiness: 503 once the replica drains."""
    if store().draining:
        return PlainTextResponse("draining\n", status_code=503)
    return PlainTextResponse("ok")


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    store().drain_on_signal(float(os.environ.get("AGUI_DRAIN_GRACE", "1")))
    yield
    await store().aclose()


app = Starlette(
    lifespan=lifespan,
    routes=[
        Route("/agent", agent, methods=["POST"]),
        Route("/publish", publish, methods=["POST"]),
        Route("/runs/{run_id}/start", start, methods=["POST"]),
        Route("/runs/{run_id}/events", events, methods=["GET"]),
        Route("/page/{run_id}", page, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
    ],
    exception_handlers={StoreError: store_error_response},
)
