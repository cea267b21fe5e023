"""``EventStreamResponse`` under a real uvicorn (in a thread, real sockets): a
producer failing at any point reaches the client as one ``RUN_ERROR``, and a
client that closes its socket mid-body ends the producer once, quietly.

* Failures: every position of tests/unit/test_asgi_failures.py, async and
  threaded producers, both transports, identity and gzip, read by httpx.
* Disconnects: a raw socket that reads part of the body, then closes (FIN) or
  resets (RST). The producer's ``finally`` must run exactly once, also when it
  awaits in its cleanup, and nothing may be logged above DEBUG by anyone
  (agui_wire, uvicorn, asyncio).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.asgi import EventStreamResponse
from tests.support.live import read_some_then_close, uvicorn_thread
from tests.unit.test_asgi import DELTA, RUN
from tests.unit.test_asgi_failures import APP_ERROR, POSITIONS, Producer

# -- the app -------------------------------------------------------------------------


class Streams:
    """What the app's producers did, by request id (the test reads it)."""

    def __init__(self) -> None:
        self.producers: dict[str, Producer] = {}
        self.endings: dict[str, list[str]] = {}  # how each endless producer ended, per run
        self.produced: dict[str, int] = {}


STREAMS = Streams()


async def fail(request: Request) -> EventStreamResponse:
    producer = STREAMS.producers[request.query_params["id"]] = Producer(
        request.path_params["position"]
    )
    kind = request.query_params["kind"]
    return EventStreamResponse(
        producer.agen() if kind == "async" else producer.gen(),
        request,
        compress=request.query_params.get("compress") == "1",
    )


async def endless(request: Request) -> EventStreamResponse:
    """An endless run: ``how`` says where the producer spends its time."""
    run = request.query_params["id"]
    how = request.query_params["how"]
    endings = STREAMS.endings[run] = []
    STREAMS.produced[run] = 0

    async def paced() -> AsyncIterator[Any]:
        try:
            yield RUN[0]
            while True:
                if how == "awaits":
                    await asyncio.sleep(0.005)
                elif STREAMS.produced[run] % 64 == 0:
                    await asyncio.sleep(0)  # a busy producer still yields to the loop now and then
                STREAMS.produced[run] += 1
                yield DELTA
        except BaseException as exc:
            endings.append(type(exc).__name__)
            raise
        finally:
            if how == "cleanup awaits":
                await asyncio.sleep(0.01)  # an async cleanup (closing a client, say)
                endings.append("cleanup done")
            endings.append("finally")

    def threaded() -> Iterator[Any]:
        try:
            yield RUN[0]
            while True:
                time.sleep(0.005)
                STREAMS.produced[run] += 1
                yield DELTA
        except BaseException as exc:
            endings.append(type(exc).__name__)
            raise
        finally:
            endings.append("finally")

    events = threaded() if how == "thread" else paced()
    return EventStreamResponse(
        events, request, compress=request.query_params.get("compress") == "1", keepalive=0.05
    )


app = Starlette(
    routes=[
        Route("/fail/{position}", fail, methods=["POST"]),
        Route("/endless", endless, methods=["POST"]),
    ]
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with uvicorn_thread(app) as url:
        yield url


def loud(records: list[logging.LogRecord]) -> list[tuple[str, str]]:
    """What was logged above DEBUG by agui_wire, and at WARNING or above by
    anyone (uvicorn's access lines and httpx's request lines are INFO)."""
    return [
        (r.name, r.getMessage())
        for r in records
        if r.levelno >= logging.WARNING
        or (r.name.startswith("agui_wire") and r.levelno > logging.DEBUG)
    ]


def wait_for(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.005)


# -- failures ----------------------------------------------------------------------------

_ids = iter(range(10**9))


@pytest.mark.parametrize("compress", [False, True], ids=["identity", "gzip"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
@pytest.mark.parametrize("kind", ["async", "sync"])
@pytest.mark.parametrize("position", list(POSITIONS))
def test_a_failure_reaches_the_client_through_uvicorn(
    server: str, position: str, kind: str, accept: str, compress: bool, caplog
) -> None:
    rid = str(next(_ids))
    params = {"id": rid, "kind": kind, "compress": "1" if compress else "0"}
    with caplog.at_level(logging.DEBUG):
        response = httpx.post(
            f"{server}/fail/{position}",
            params=params,
            headers={"accept": accept, "accept-encoding": "gzip"},
            timeout=10,
        )
        producer = STREAMS.producers[rid]
        wait_for(lambda: producer.cleanups > 0)
    assert response.status_code == 200
    assert response.headers["content-type"] == accept
    assert response.headers.get("content-encoding") == ("gzip" if compress else None)
    events = decode(response.content, accept)  # httpx inflated it
    expected = [*producer.before] + ([] if producer.error is None else [producer.error])
    assert events == expected
    assert sum(e["type"] == "RUN_ERROR" for e in events) == (producer.error is not None) + (
        APP_ERROR in producer.before
    )
    assert producer.cleanups == 1
    assert loud(caplog.records) == [
        ("agui_wire.asgi", "AG-UI event producer failed; ending the stream")
    ]


# -- disconnects ---------------------------------------------------------------------------


HOWS = ["awaits", "busy", "cleanup awaits", "thread"]


@pytest.mark.parametrize("compress", [False, True], ids=["identity", "gzip"])
@pytest.mark.parametrize("reset", [False, True], ids=["FIN", "RST"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
@pytest.mark.parametrize("how", HOWS)
def test_a_disconnect_mid_body_closes_the_producer_once_and_quietly(
    server: str, how: str, accept: str, reset: bool, compress: bool, caplog
) -> None:
    run = str(next(_ids))
    with caplog.at_level(logging.DEBUG):
        query = urlencode({"id": run, "how": how, "compress": int(compress)})
        head = read_some_then_close(
            server, f"POST /endless?{query}", accept=accept, reset=reset, compress=compress
        )
        endings = STREAMS.endings[run]
        wait_for(lambda: "finally" in endings)
        time.sleep(0.1)  # anything logged late, or a second close, would show now
    assert b" 200 " in head.split(b"\r\n", 1)[0]
    assert endings.count("finally") == 1, endings
    if how == "cleanup awaits":
        assert "cleanup done" in endings  # its awaits were not cancelled again
    ended = endings[0]
    assert ended in ("CancelledError", "GeneratorExit"), endings
    assert loud(caplog.records) == []
    produced = STREAMS.produced[run]
    time.sleep(0.05)
    assert STREAMS.produced[run] == produced  # stopped for good
