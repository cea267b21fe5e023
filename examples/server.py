"""An AG-UI agent server on FastAPI, streaming through ``agui_wire.asgi``.

Run it with ``uvicorn examples.server:app`` or ``python examples/server.py
--port 8000`` (from the repository root), then ``python examples/client.py
http://127.0.0.1:8000/agent`` or any AG-UI client (``@ag-ui/client``'s
``HttpAgent``). Endpoints:

* ``POST /agent`` — body: a ``RunAgentInput`` (JSON). Streams
  ``examples.script.scripted_run`` for its ``threadId``/``runId`` as SSE or
  protobuf, as the ``Accept`` header asks (406 if it allows neither). Query:
  ``delay`` (seconds between events; default ``$AGUI_EXAMPLE_DELAY`` or 0.05),
  ``fail_after`` (raise after that many events, to see the ``RUN_ERROR`` the
  client gets), ``keepalive`` (SSE keep-alive interval, default 15 s). Events
  carry SSE ids 1, 2, ...; a request with ``Last-Event-ID: n`` resumes after
  event ``n``.
* ``POST /bulk?events=N&size=S`` — a long run (``examples.script.bulk_run``)
  produced as fast as the client takes it: watch ``/runs/{runId}`` while a slow
  client reads to see backpressure at work.
* ``GET /runs/{run_id}`` — what the producer of that run did: ``status``
  (``running``, ``finished``, ``cancelled`` when the client went away and the
  generator was closed, ``failed``) and ``produced`` (events yielded so far).
* ``GET /healthz``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from agui_wire.asgi import EventStreamResponse, last_event_id

if not __package__:  # run as a script: python examples/server.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from examples.script import bulk_run, scripted_run

DEFAULT_DELAY = float(os.environ.get("AGUI_EXAMPLE_DELAY", "0.05"))
MAX_RUNS = 10_000  # run records kept for /runs

app = FastAPI(title="agui_wire example agent")


class Runs:
    """What each run's producer did, for ``GET /runs/{run_id}`` (bounded)."""

    def __init__(self, limit: int = MAX_RUNS) -> None:
        self.limit = limit
        self.records: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def start(self, run_id: str) -> dict[str, Any]:
        record: dict[str, Any] = {"status": "running", "produced": 0}
        self.records[run_id] = record
        self.records.move_to_end(run_id)
        while len(self.records) > self.limit:
            self.records.popitem(last=False)
        return record


RUNS = Runs()


async def produce(
    run_id: str, events: Iterable[dict[str, Any]], delay: float, fail_after: int | None
) -> AsyncIterator[dict[str, Any]]:
    """The agent: yields the events, recording what happens to it in ``RUNS``."""
    record = RUNS.start(run_id)
    try:
        for i, event in enumerate(events):
            if fail_after is not None and i >= fail_after:
                raise RuntimeError(f"scripted failure after {fail_after} events")
            if delay > 0:
                await asyncio.sleep(delay)
            record["produced"] += 1
            yield event
    except (GeneratorExit, asyncio.CancelledError):
        record["status"] = "cancelled"  # the client went away; the stream closed us
        raise
    except Exception:
        record["status"] = "failed"
        raise
    record["status"] = "finished"


async def run_input(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise HTTPException(400, "the body must be a RunAgentInput in JSON") from None
    if not isinstance(body, dict) or not all(
        isinstance(body.get(k), str) and body[k] for k in ("threadId", "runId")
    ):
        raise HTTPException(422, "a RunAgentInput needs string threadId and runId")
    return body


@app.post("/agent")
async def agent(
    request: Request,
    delay: float | None = None,
    fail_after: int | None = None,
    keepalive: float = 15.0,
) -> EventStreamResponse:
    body = await run_input(request)
    events = scripted_run(body["threadId"], body["runId"])
    start = 0
    resume = last_event_id(request)
    if resume is not None:
        if not resume.isdigit() or int(resume) > len(events):
            raise HTTPException(400, f"Last-Event-ID {resume!r} is not an event of this run")
        start = int(resume)
    producer = produce(
        body["runId"], events[start:], DEFAULT_DELAY if delay is None else delay, fail_after
    )
    return EventStreamResponse(
        producer, request, strict=True, event_id=start + 1, keepalive=keepalive
    )


@app.post("/bulk")
async def bulk(request: Request, events: int = 1000, size: int = 100) -> EventStreamResponse:
    body = await run_input(request)
    if not 0 <= events <= 10_000_000 or not 8 <= size <= 1 << 20:
        raise HTTPException(422, "events must be in 0..10**7 and size in 8..2**20")
    run = bulk_run(body["threadId"], body["runId"], events, size)
    return EventStreamResponse(produce(body["runId"], run, 0.0, None), request)


@app.get("/runs/{run_id}")
async def run_status(run_id: str) -> JSONResponse:
    record = RUNS.records.get(run_id)
    if record is None:
        raise HTTPException(404, f"no run {run_id!r}")
    return JSONResponse(record)


@app.get("/healthz")
async def healthz() -> dict[str, bool]:
    return {"ok": True}


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
