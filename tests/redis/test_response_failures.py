"""``RunStore.response`` under a real uvicorn (in a thread) and a real redis-server:
faults in the first batch, or met while opening, reach the client as the
``RUN_ERROR`` docs/scaling.md lists (never an empty 200, nothing escaping the
app), on both transports, compressed or not; a client closing its socket
mid-body detaches its reader once and logs nothing. The app's store and client
are closed by its lifespan's shutdown, on the server's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import DecodeError
from agui_wire.redis import AFTER_HEADER, RunStore
from agui_wire.redis import _reading as reading_module
from tests.e2e.test_serving_failures import loud, wait_for
from tests.support.live import read_some_then_close, uvicorn_thread
from tests.support.stores import Opened

DELTA = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}
STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
TRIMMED_RUN = [STARTED, *[DELTA] * 2000, FINISHED]


class Replica:
    """The app's store, made on the server's loop (a Redis client is per loop)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.store: RunStore | None = None

    def get(self) -> RunStore:
        if self.store is None:
            self.store = RunStore(aioredis.from_url(self.url), maxlen=100, batch=50)
        return self.store

    async def aclose(self) -> None:
        if self.store is not None:
            await self.store.aclose()
            await self.store.redis.aclose()


REPLICA: Replica | None = None
STOP: set[str] = set()  # live runs to finish


async def events(request: Request) -> Response:
    assert REPLICA is not None
    compress = request.query_params.get("compress") == "1"
    return REPLICA.get().response(request.path_params["run_id"], request, compress=compress)


async def live(request: Request) -> Response:
    """Starts an endless paced run in the background (202)."""
    assert REPLICA is not None
    run_id = request.path_params["run_id"]

    async def endless() -> AsyncIterator[Any]:
        yield STARTED
        while run_id not in STOP:
            await asyncio.sleep(0.005)
            yield DELTA
        yield FINISHED

    await REPLICA.get().start(run_id, endless())
    return JSONResponse({"runId": run_id}, status_code=202)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    yield
    if REPLICA is not None:
        await REPLICA.aclose()


app = Starlette(
    routes=[
        Route("/runs/{run_id}", events, methods=["GET"]),
        Route("/runs/{run_id}/start", live, methods=["POST"]),
    ],
    lifespan=lifespan,
)


@pytest.fixture(scope="module")
def server(redis_server: Any) -> Iterator[str]:
    global REPLICA
    REPLICA = Replica(redis_server.url)
    try:
        with uvicorn_thread(app, lifespan="on") as url:
            yield url
    finally:
        REPLICA = None


@pytest.fixture
def r(opened: Opened, redis_server: Any) -> aioredis.Redis:
    return opened.redis(redis_server.url)


async def _entry_id(r: aioredis.Redis, run_id: str, n: int) -> bytes:
    found = await r.xrange(stream_key(run_id), count=n)
    return bytes(found[n - 1][0])


async def _end_id(r: aioredis.Redis, run_id: str) -> bytes:
    top = await r.xrevrange(stream_key(run_id), count=1)
    return bytes(top[0][0])


async def redis_call(r: aioredis.Redis, *commands: tuple[Any, ...]) -> None:
    for command in commands:
        await r.execute_command(*command)


def stream_key(run_id: str) -> str:
    return RunStore(aioredis.Redis()).stream_key(run_id)  # (no connection is made)


async def publish(opened: Opened, r: aioredis.Redis, run_id: str, events: list[Any]) -> None:
    await opened.store(RunStore(r, maxlen=100, batch=50)).publish(run_id, events)


TRIMMED = {"code": "HISTORY_TRIMMED"}
LOST = {"code": "RUN_LOST", "message": "the run's events were lost", "type": "RUN_ERROR"}


def _levels(records: list[logging.LogRecord]) -> list[tuple[int, str]]:
    return [
        (r.levelno, r.getMessage())
        for r in records
        if r.name.startswith("agui_wire") and r.levelno > logging.DEBUG
    ]


async def get(
    server: str, run_id: str, accept: str, compress: bool, **params: Any
) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.get(
            f"{server}/runs/{run_id}",
            params={"compress": int(compress), **params},
            headers={"accept": accept, "accept-encoding": "gzip"},
        )


@pytest.mark.parametrize("compress", [False, True], ids=["identity", "gzip"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
@pytest.mark.parametrize("fault", ["trimmed", "trimmed, resumed", "lost, a gap in what is stored"])
@pytest.mark.anyio
async def test_a_fault_before_the_first_event_is_the_documented_run_error(
    server: str,
    opened: Opened,
    r: aioredis.Redis,
    run_id: str,
    fault: str,
    accept: str,
    compress: bool,
    caplog: Any,
) -> None:
    """A 200 whose body is the RUN_ERROR alone; an expected fault of the store,
    logged on one line (events lost: a WARNING; trimmed: the client's, DEBUG),
    never with a traceback."""
    params: dict[str, Any] = {}
    if fault.startswith("trimmed"):
        await publish(opened, r, run_id, TRIMMED_RUN)  # maxlen=100: the start is gone
        if fault == "trimmed, resumed":
            params["after"] = 5
        expected = TRIMMED
    else:  # Redis lost event 2 of the run: never a silent gap
        await publish(opened, r, run_id, [STARTED, DELTA, FINISHED])
        await redis_call(r, ("XDEL", stream_key(run_id), await _entry_id(r, run_id, 2)))
        expected = LOST
    with caplog.at_level(logging.DEBUG):
        response = await get(server, run_id, accept, compress, **params)
    assert response.status_code == 200
    assert response.headers["content-type"] == accept
    assert response.headers.get("content-encoding") == ("gzip" if compress else None)
    after, _, generation = response.headers[AFTER_HEADER].partition("-")
    assert after == str(params.get("after", 0))
    assert generation.isdigit()
    got = decode(response.content, accept)
    assert len(got) == 1
    assert got[0]["type"] == "RUN_ERROR"
    assert expected.items() <= got[0].items()
    levels = [level for level, _ in _levels(caplog.records)]
    assert levels == ([logging.WARNING] if expected is LOST else [])
    assert not any(record.exc_info for record in caplog.records)


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
@pytest.mark.parametrize("fault", ["resumed past what is stored", "stream gone"])
@pytest.mark.anyio
async def test_a_position_past_what_a_live_run_stored_is_a_400(
    server: str,
    opened: Opened,
    r: aioredis.Redis,
    run_id: str,
    fault: str,
    accept: str,
    caplog: Any,
) -> None:
    """The position is not one the run gave (or the store lost events it had
    acknowledged): a 400 saying what was asked and where the run is, as for an
    ended run, logged at DEBUG."""
    await publish(opened, r, run_id, [STARTED, DELTA, FINISHED])
    if fault == "stream gone":  # Redis lost the run's events; a reader resumes after 50
        await redis_call(
            r, ("DEL", stream_key(run_id)), ("SET", stream_key(run_id) + ":lease", "x")
        )
        stored = 0
    else:  # a live run whose stream holds fewer events than the position
        await redis_call(r, ("SET", stream_key(run_id) + ":lease", "x"))
        await redis_call(r, ("XDEL", stream_key(run_id), await _end_id(r, run_id)))
        stored = 3
    with caplog.at_level(logging.DEBUG):
        response = await get(server, run_id, accept, False, after=50)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/plain")
    assert (
        f"resuming after event 50, but the run is live with {stored} events stored so far"
        in response.text
    )
    assert loud(caplog.records) == []


@pytest.mark.parametrize("compress", [False, True], ids=["identity", "gzip"])
@pytest.mark.anyio
async def test_a_stored_event_that_does_not_decode(
    server: str, r: aioredis.Redis, run_id: str, compress: bool, caplog: Any
) -> None:
    """SSE decodes the stored payloads: the first batch failing is a
    ``STORE_CORRUPTED`` event naming the key and the entry. Binary frames are the
    stored bytes, never re-encoded: the client's decoder names the bad frame."""
    key = stream_key(run_id)
    await redis_call(
        r, ("XADD", key, "1-0", "p", b"\xff\xff\xff"), ("XADD", key, "1-1", "end", "finished")
    )
    with caplog.at_level(logging.DEBUG):
        response = await get(server, run_id, SSE_MEDIA_TYPE, compress)
    assert response.status_code == 200
    (got,) = decode(response.content, SSE_MEDIA_TYPE)
    assert got["type"] == "RUN_ERROR"
    assert got["code"] == "STORE_CORRUPTED"
    assert f"{key}, entry 1-0" in got["message"]
    assert [level for level, _ in _levels(caplog.records)] == [logging.ERROR]  # one line
    assert not any(record.exc_info for record in caplog.records)  # typed: no traceback
    response = await get(server, run_id, PROTO_MEDIA_TYPE, compress)
    assert response.status_code == 200
    assert response.content == b"\x00\x00\x00\x03\xff\xff\xff"
    with pytest.raises(DecodeError):
        decode(response.content, PROTO_MEDIA_TYPE)


@pytest.mark.parametrize("reset", [False, True], ids=["FIN", "RST"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_a_disconnect_mid_body_detaches_the_reader_once_and_quietly(
    server: str, run_id: str, accept: str, reset: bool, caplog, monkeypatch
) -> None:
    detached: list[str] = []
    original = reading_module.Reading.detach

    def detach(self: Any, tail: Any, inbox: Any) -> None:
        # a tail's run, or the producer this replica's reader follows (redis/_local)
        keys = tail.keys if hasattr(tail, "keys") else tail.followers.keys
        detached.append(keys.stream)
        original(self, tail, inbox)

    monkeypatch.setattr(reading_module.Reading, "detach", detach)
    assert httpx.post(f"{server}/runs/{run_id}/start", timeout=10).status_code == 202
    with caplog.at_level(logging.DEBUG):
        # past the replay, into live events
        read_some_then_close(server, f"GET /runs/{run_id}", accept=accept, reset=reset, want=2000)
        wait_for(lambda: stream_key(run_id) in detached)
        time.sleep(0.1)
    STOP.add(run_id)
    assert detached == [stream_key(run_id)]  # the reader's finally ran once
    assert REPLICA is not None
    assert REPLICA.store is not None
    reading = REPLICA.store._reading
    assert stream_key(run_id) not in reading.tails.runs  # followed no more
    followers = reading.local.runs.get(stream_key(run_id))
    assert followers is None or not followers.follows
    assert loud(caplog.records) == []
