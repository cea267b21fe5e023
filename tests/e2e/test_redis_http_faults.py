"""What an HTTP client of a run store is told, and what the operator's log holds,
when Redis goes away or a client sends an id the run never gave: a real uvicorn
replica of tests/redis/app.py and a real redis-server (tests/redis/harness.py),
killed and started again.

* Redis refusing connections: every route answers 503 with ``Retry-After``
  (``store_error_response`` for what ``start``/``publish`` raise, the response
  itself for readers), the bodies name no host, port, errno or exception text;
  open streams end without a terminal event (the client resumes). The log has
  the details once per outage (one ERROR line, no traceback, over every
  request), and says when Redis answers again; a second outage is logged again.
* Ids: a position past the end of a live or an ended run, a made-up generation,
  a 10 KB digit id: each a 400 saying what was sent and where the run is (or
  naming our limit), logging nothing above DEBUG, never a traceback.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_wire import SSE_MEDIA_TYPE, decode
from tests.redis.harness import RedisServer, Replica

pytestmark = pytest.mark.slow

# What a body must never carry: the address, the errno, redis-py's or Python's words.
LEAKS = re.compile(
    r"127\.0\.0\.1|localhost|errno|Error \d|\b111\b|refused|Connection|Traceback|redis",
    re.IGNORECASE,
)


class Setup:
    def __init__(self, tmp: Path) -> None:
        self.log = tmp / "replica.log"
        self.redis = RedisServer(tmp).start()
        self.replica = Replica(
            self.redis.url, self.log, AGUI_LEASE="2", AGUI_RECONNECT="0.5"
        ).start()

    @property
    def url(self) -> str:
        return self.replica.url

    def lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def close(self) -> None:
        self.replica.stop()
        self.redis.stop()


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    s = Setup(tmp_path)
    try:
        yield s
    finally:
        s.close()


def new_run() -> str:
    return f"run-{uuid.uuid4()}"


def body(run_id: str) -> dict[str, Any]:
    return {"threadId": "t", "runId": run_id, "messages": [], "tools": [], "context": []}


def loud(lines: list[str]) -> list[str]:
    """The log lines above INFO, and every traceback's first line."""
    return [
        line
        for line in lines
        if line.startswith(("WARNING", "ERROR", "CRITICAL")) or line.startswith("Traceback")
    ]


async def every_route(url: str, ended: str, rounds: int) -> list[httpx.Response]:
    """``rounds`` requests of each route that touches the store, all at once."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        requests = []
        for _ in range(rounds):
            fresh = new_run()
            requests += [
                client.post("/agent", json=body(fresh)),  # start + read
                client.post("/agent", json=body(ended), headers={"last-event-id": "3"}),
                client.get(f"/runs/{ended}/events"),
                client.get(f"/runs/{fresh}/events", params={"compact": "1"}),
                client.post(f"/runs/{fresh}/start"),
                client.post("/publish", params={"run": fresh}),
            ]
        return list(await asyncio.gather(*requests))


def test_redis_unreachable_is_a_503_on_every_route_and_one_log_line(setup: Setup) -> None:
    ended = new_run()
    assert httpx.post(f"{setup.url}/agent", json=body(ended), timeout=10).status_code == 200
    # two streams open on live runs when Redis goes away
    live = [new_run() for _ in range(2)]
    for run_id in live:
        started = httpx.post(f"{setup.url}/runs/{run_id}/start", params={"delay": "0.05"})
        assert started.status_code == 202

    async def read_live() -> list[list[dict[str, Any]]]:
        async with httpx.AsyncClient(base_url=setup.url, timeout=30) as client:

            async def one(run_id: str) -> list[dict[str, Any]]:
                got = await client.get(f"/runs/{run_id}/events")
                assert got.status_code == 200
                return decode(got.content, SSE_MEDIA_TYPE)

            return list(await asyncio.gather(*(one(r) for r in live)))

    async def outage() -> tuple[list[list[dict[str, Any]]], list[httpx.Response]]:
        streams = asyncio.ensure_future(read_live())
        await asyncio.sleep(0.5)  # reading, live
        await asyncio.to_thread(setup.redis.kill)
        answers = await every_route(setup.url, ended, rounds=5)
        return await streams, answers

    before = len(setup.lines())
    streams, answers = asyncio.run(outage())
    for events in streams:  # cut mid-run: no terminal event, so the client resumes
        assert events
        assert events[0]["type"] == "RUN_STARTED"
        assert events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR")
    assert len(answers) == 30
    for answer in answers:
        assert answer.status_code == 503, (answer.request.url, answer.text)
        assert answer.headers["retry-after"] == "1"
        assert answer.headers["content-type"].startswith("text/plain")
        assert not LEAKS.search(answer.text), answer.text
        assert str(setup.redis.port) not in answer.text
    time.sleep(0.2)
    logged = loud(setup.lines()[before:])
    # the details once: the address and the errno, in one ERROR line, no traceback
    assert len([line for line in logged if line.startswith("ERROR")]) == 1, logged
    (error,) = [line for line in logged if line.startswith("ERROR")]
    assert f"127.0.0.1:{setup.redis.port}" in error
    assert not [line for line in logged if line.startswith("Traceback")], logged

    # Redis back: the log says so once, requests work again
    setup.redis.start()
    fresh = new_run()
    assert httpx.post(f"{setup.url}/agent", json=body(fresh), timeout=10).status_code == 200
    back = loud(setup.lines()[before:])
    assert len([line for line in back if "answers again" in line]) == 1, back

    # a second outage is a second ERROR line
    setup.redis.kill()
    answers = asyncio.run(every_route(setup.url, ended, rounds=2))
    assert {a.status_code for a in answers} == {503}
    logged = loud(setup.lines()[before:])
    assert len([line for line in logged if line.startswith("ERROR")]) == 2, logged
    assert not [line for line in logged if line.startswith("Traceback")], logged


def test_ids_a_run_never_gave_are_400s_that_say_so_and_log_nothing(setup: Setup) -> None:
    ended, live = new_run(), new_run()
    got = httpx.post(f"{setup.url}/agent", json=body(ended), params={"events": "5"}, timeout=10)
    assert got.status_code == 200
    sse = [e for e in got.text.split("\n") if e.startswith("id: ")]
    last, _, generation = sse[-1][4:].partition("-")
    assert int(last) == 9
    started = httpx.post(
        f"{setup.url}/runs/{live}/start", params={"events": "100000", "delay": "0.05"}
    )
    assert started.status_code == 202
    with httpx.stream("GET", f"{setup.url}/runs/{live}/events", timeout=10) as reading:
        live_generation = reading.headers["agui-after"].partition("-")[2]  # "0-<generation>"
    assert live_generation.isdigit()
    before = len(setup.lines())

    def get(run_id: str, position: str) -> httpx.Response:
        return httpx.get(
            f"{setup.url}/runs/{run_id}/events", headers={"last-event-id": position}, timeout=10
        )

    for _ in range(20):  # as many as a busy minute brings, each logged at DEBUG at most
        # past the end of a live run: what was sent, where the run is
        answer = get(live, f"500-{live_generation}")
        assert answer.status_code == 400, answer.text
        assert "resuming after event 500, but the run is live with" in answer.text
        assert "events stored so far" in answer.text
        # past the end of an ended run
        answer = get(ended, f"50-{generation}")
        assert answer.status_code == 400
        assert "resuming after event 50, but the run ended after event 9" in answer.text
        # a made-up generation: not "replaced", what is known
        answer = get(ended, "2-42")
        assert answer.status_code == 400
        assert "names generation 42, which is not a generation of this run" in answer.text
        assert f"its events carry generation {generation}" in answer.text
        # 10 KB of digits: our limit, not Python's
        for position in ("9" * 10_000, f"1-{'2' * 10_000}"):
            answer = get(ended, position)
            assert answer.status_code == 400
            assert "digits" in answer.text
            assert "at most" in answer.text
            assert "sys.set_int_max_str_digits" not in answer.text
            assert len(answer.text) < 300
        # an id of the run itself still resumes
        answer = get(ended, f"7-{generation}")
        assert answer.status_code == 200
        assert [e["type"] for e in decode(answer.content, SSE_MEDIA_TYPE)] == [
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    time.sleep(0.2)
    assert loud(setup.lines()[before:]) == []
