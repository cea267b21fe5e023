"""A rolling deploy hands runs over: SIGTERM to a uvicorn replica of
tests/redis/app.py (which drains on it: ``RunStore.drain_on_signal``) in the
middle of a run, with a real redis-server and a second replica.

* a client (``arun_agent``) reading on the drained replica through a balancer
  resumes on the other one, whose resumed request takes the run over
  (``replay=True``); readers on the other replica see every event once, in
  order, and no ``RUN_ERROR``;
* with no reader on the drained replica, a retried job (``replay=True``) on the
  other replica takes the released run over at once;
* a released run nobody takes ends by its lease (``LEASE_EXPIRED``), not
  before;
* what the reference ``@ag-ui/client`` ``HttpAgent`` (which cannot resume)
  sees when its replica drains;
* a real Chromium's ``EventSource`` reconnects to the other replica with
  ``Last-Event-ID`` and reads the rest, once a retried job took the run over.

``pytest -s`` prints the measured handover times.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, EventDecoder
from agui_wire.client import arun_agent
from agui_wire.redis import RunStore
from tests.redis.app import token_run
from tests.redis.harness import Balancer, RedisServer, Replica
from tests.support.chromium import Chromium

pytestmark = pytest.mark.slow

LEASE = 2.0
POLL = min(1.0, LEASE / 4)
GRACE = 0.3  # the drain's grace: shorter than the runs, so they are handed over
TERMINATION = 1.5  # as Kubernetes' terminationGracePeriodSeconds: then SIGKILL
N = 300  # text deltas per run
DELAY = 0.01  # seconds between events (a run takes ~3 s)


class Deployment:
    """A redis-server and a replica that stays; ``replica()`` starts another (the
    one each test drains)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.redis = RedisServer(tmp).start()
        self.stays = self.replica("stays")
        self.started: list[Replica] = []

    def replica(self, name: str) -> Replica:
        replica = Replica(
            self.redis.url,
            self.tmp / f"{name}.log",
            AGUI_LEASE=str(LEASE),
            AGUI_DRAIN_GRACE=str(GRACE),
        ).start()
        if name != "stays":
            self.started.append(replica)
        return replica

    def close(self) -> None:
        for replica in [*self.started, self.stays]:
            replica.stop()
        self.redis.stop()


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    with tempfile.TemporaryDirectory() as tmp:
        d = Deployment(Path(tmp))
        try:
            yield d
        finally:
            d.close()
            for log in Path(tmp).glob("*.log"):
                text = log.read_text(errors="replace").strip()
                if text:
                    print(f"--- {log.name}\n{text}")


def new_run() -> str:
    return f"run-{uuid.uuid4()}"


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


Timed = list[tuple[dict[str, Any], float]]


async def read(url: str, accept: str) -> tuple[Timed, bytes]:
    """The run as a reader gets it: each event with the time it arrived, and the
    body (for its SSE ids)."""
    got: Timed = []
    body = bytearray()
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("GET", url, headers={"accept": accept}) as response,
    ):
        assert response.status_code == 200, await response.aread()
        decoder = EventDecoder(response.headers["content-type"])
        async for chunk in response.aiter_raw():
            body += chunk
            got += [(event, time.monotonic()) for event in decoder.feed(chunk)]
    return got, bytes(body)


def sse_ids(body: bytes) -> list[int]:
    found = re.findall(rb"^id: (\d+)-(\d+)$", body, re.MULTILINE)
    assert len({generation for _, generation in found}) <= 1  # one generation: one run
    return [int(n) for n, _ in found]


def check_once_in_order(expected: list[dict[str, Any]], readers: list[tuple[str, Any]]) -> None:
    for accept, (got, body) in readers:
        events = [event for event, _ in got]
        assert [e["type"] for e in events].count("RUN_ERROR") == 0, events[-3:]
        assert events == expected
        if accept == SSE_MEDIA_TYPE:
            assert sse_ids(body) == list(range(1, len(expected) + 1))


def largest_gap(got: Timed) -> float:
    times = [at for _, at in got]
    return max(b - a for a, b in itertools.pairwise(times))


def in_redis(deployment: Deployment, run_id: str) -> tuple[int, bytes | None]:
    """The run's entries in Redis and its lease's value, as an operator sees them."""
    key = RunStore(redis.asyncio.Redis.from_url(deployment.redis.url)).stream_key(run_id)
    client = redis.Redis.from_url(deployment.redis.url)
    try:
        lease = client.get(f"{key}:lease")
        return int(client.xlen(key)), lease if isinstance(lease, bytes) else None
    finally:
        client.close()


def released(deployment: Deployment, run_id: str) -> float:
    """When the run's lease says released (looked at every 10 ms)."""
    deadline = time.monotonic() + GRACE + 10
    while not (in_redis(deployment, run_id)[1] or b"").endswith(b":released"):
        assert time.monotonic() < deadline, "the run was not released"
        time.sleep(0.01)
    return time.monotonic()


def started(deployment: Deployment, run_id: str) -> None:
    """Until the run has events stored."""
    deadline = time.monotonic() + 10
    while in_redis(deployment, run_id)[0] == 0:
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.02)


class Termination:
    """What the kubelet does to a pod: SIGTERM, then SIGKILL if the process is
    still there ``TERMINATION`` seconds later. ``sent``: when SIGTERM went,
    ``exited``: when the process was gone, ``code``: its return code."""

    def __init__(self, replica: Replica) -> None:
        process = replica.process
        assert process is not None
        self.sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        self.exited = 0.0
        self.code: int | None = None
        self.done = threading.Event()

        def stop() -> None:
            try:
                self.code = process.wait(TERMINATION)
            except subprocess.TimeoutExpired:
                process.kill()
                self.code = process.wait()
            self.exited = time.monotonic()
            self.done.set()

        threading.Thread(target=stop, daemon=True).start()

    def wait(self) -> float:
        """Seconds from SIGTERM to the exit, once the process has drained (not
        been killed)."""
        assert self.done.wait(TERMINATION + 10)
        assert self.code == -signal.SIGTERM, f"exited {self.code} (killed: -9)"
        return self.exited - self.sent


def test_sigterm_hands_the_run_over_and_the_client_resumes_on_the_other_replica(
    deployment: Deployment,
) -> None:
    """The client reads on A (the balancer sends it there); SIGTERM to A after 80
    events. A drains: the run is handed over, A's response ends, the client
    resumes on B, whose resumed request replays the run and takes it over.
    Everyone sees one run; A exits within its grace and a second."""
    a, b = deployment.replica("drained-1"), deployment.stays
    run_id = new_run()
    expected = token_run("thread-1", run_id, N)
    balancer = Balancer([a.port]).start()
    url = f"{balancer.url}/agent?events={N}&delay={DELAY}"
    stopping: list[Termination] = []

    async def client() -> Timed:
        got: Timed = []
        async with httpx.AsyncClient(timeout=60) as http:
            async for event in arun_agent(http, url, run_input(run_id), backoff=0.05):
                got.append((event, time.monotonic()))
                if len(got) == 80:
                    balancer.backends = [b.port]  # A leaves the endpoints
                    stopping.append(Termination(a))
        return got

    async def main() -> tuple[Timed, list[tuple[str, Any]]]:
        mine = asyncio.ensure_future(client())
        events = f"{b.url}/runs/{run_id}/events"
        await asyncio.to_thread(started, deployment, run_id)
        accepts = [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE] * 2
        readers = [asyncio.ensure_future(read(events, accept)) for accept in accepts]
        got = await mine
        return got, list(zip(accepts, await asyncio.gather(*readers), strict=True))

    try:
        got, readers = asyncio.run(main())
    finally:
        balancer.stop()
    check_once_in_order(expected, readers)
    assert [event for event, _ in got] == expected  # the client: once, in order
    took = stopping[0].wait()
    gaps = [largest_gap(got) for _, (got, _body) in readers]
    print(
        f"\nSIGTERM -> handed over, resumed and taken over: the largest gap between "
        f"two events on the other replica {min(gaps):.2f}..{max(gaps):.2f} s (grace "
        f"{GRACE} s, events every {DELAY} s); the client's {largest_gap(got):.2f} s; "
        f"A exited {took:.2f} s after SIGTERM"
    )
    assert max(gaps) < GRACE + 2.0  # a handover, not a lease (2 s) lapsing


def test_sigterm_with_readers_elsewhere_a_replaying_job_takes_over_at_once(
    deployment: Deployment,
) -> None:
    """The run's producer is A's, its readers on B. SIGTERM to A: A exits once the
    run is handed over (its lease says released); a retried job on B
    (``replay=True``) takes it over at once and the readers see one run."""
    a, b = deployment.replica("drained-2"), deployment.stays
    run_id = new_run()
    expected = token_run("thread-1", run_id, N)
    r = httpx.post(f"{a.url}/runs/{run_id}/start", params={"events": N, "delay": DELAY})
    assert r.status_code == 202
    marks: dict[str, float] = {}

    async def main() -> list[tuple[str, Any]]:
        events = f"{b.url}/runs/{run_id}/events"
        accepts = [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE] * 2
        readers = [asyncio.ensure_future(read(events, accept)) for accept in accepts]
        await asyncio.sleep(0.8)
        marks["took"] = await asyncio.to_thread(Termination(a).wait)
        stored, lease = in_redis(deployment, run_id)
        assert (lease or b"").endswith(b":released"), lease
        async with httpx.AsyncClient(timeout=10) as http:  # the job, retried elsewhere
            marks["retried"] = time.monotonic()
            r = await http.post(
                f"{b.url}/runs/{run_id}/start",
                params={"events": N, "delay": DELAY, "replay": 1, "fast": stored},
            )
            assert r.status_code == 202, r.text
            marks["claimed"] = time.monotonic()
        return list(zip(accepts, await asyncio.gather(*readers), strict=True))

    readers = asyncio.run(main())
    check_once_in_order(expected, readers)
    gaps = [largest_gap(got) for _, (got, _body) in readers]
    print(
        f"\nSIGTERM -> A exited after {marks['took']:.2f} s (grace "
        f"{GRACE} s); the retried job claimed the released run in "
        f"{1000 * (marks['claimed'] - marks['retried']):.1f} ms; the largest gap on the "
        f"other replica {max(gaps):.2f} s (it includes the wait for A to exit)"
    )


def test_a_released_run_nobody_takes_ends_by_its_lease(deployment: Deployment) -> None:
    """No taker: the readers elsewhere wait for one for the lease, then get
    ``LEASE_EXPIRED`` (as for a producer that died), within lease + poll."""
    a, b = deployment.replica("drained-3"), deployment.stays
    run_id = new_run()
    httpx.post(f"{a.url}/runs/{run_id}/start", params={"events": N, "delay": DELAY})
    marks: dict[str, float] = {}

    async def main() -> list[Timed]:
        events = f"{b.url}/runs/{run_id}/events"
        readers = [
            asyncio.ensure_future(read(events, accept))
            for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE)
        ]
        await asyncio.sleep(0.8)
        stopping = Termination(a)
        marks["released"] = await asyncio.to_thread(released, deployment, run_id)
        await asyncio.to_thread(stopping.wait)
        return [got for got, _ in await asyncio.gather(*readers)]

    results = asyncio.run(main())
    ends = [got[-1][1] - marks["released"] for got in results]
    for got in results:
        events = [event for event, _ in got]
        assert events[-1]["type"] == "RUN_ERROR"
        assert events[-1]["code"] == "LEASE_EXPIRED"
        assert [e["type"] for e in events].count("RUN_ERROR") == 1
        assert 50 < len(events) < N
    print(
        f"\nreleased, nobody took it: LEASE_EXPIRED {min(ends):.2f}..{max(ends):.2f} s "
        f"after its release (lease {LEASE} s, poll {POLL} s)"
    )
    assert min(ends) > LEASE - 0.5
    assert max(ends) < LEASE + POLL + 1.0


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["raw", "pipeline"])
def test_what_http_agent_sees_when_its_replica_drains(
    deployment: Deployment, ts_agent: Any, mode: str
) -> None:
    """The reference HttpAgent reads one response and cannot resume: when its
    replica drains, its stream ends without a terminal event (docs/scaling.md
    says what it does with that); the run itself goes on for readers that can."""
    a = deployment.replica(f"drained-4-{mode}")
    run_id = new_run()
    out: list[Any] = []

    def agent() -> None:
        url = f"{a.url}/agent?events={N}&delay={DELAY}"
        out.append(ts_agent.run(url, run_id=run_id, mode=mode))

    thread = threading.Thread(target=agent)
    thread.start()
    started(deployment, run_id)
    time.sleep(0.5)
    stopping = Termination(a)
    thread.join(30)
    stopping.wait()
    seen = out[0]
    types = [event["type"] for event in seen.events]
    print(
        f"\nHttpAgent ({mode}) on a draining replica: {len(types)} events, last "
        f"{types[-1]}, completed={seen.completed}, error={seen.error}, "
        f"warnings={seen.warnings}"
    )
    assert 10 < len(types) < N
    assert "RUN_ERROR" not in types
    assert "RUN_FINISHED" not in types


def test_event_source_in_a_browser_continues_on_the_other_replica(
    deployment: Deployment, tmp_path: Path
) -> None:
    """A real Chromium's ``EventSource`` reads the run on A (through the balancer);
    SIGTERM to A ends its stream; a retried job on B takes the run over, and the
    browser reconnects (to B) with ``Last-Event-ID`` and gets the rest: every event
    once, in order."""
    a, b = deployment.replica("drained-5"), deployment.stays
    run_id = new_run()
    n = 700  # longer than the browser's reconnection delay (3 s in Chromium)
    expected = token_run("thread-1", run_id, n)
    balancer = Balancer([a.port]).start()
    try:
        r = httpx.post(f"{a.url}/runs/{run_id}/start", params={"events": n, "delay": DELAY})
        assert r.status_code == 202
        with Chromium(tmp_path) as browser:
            blank = tmp_path / "blank.html"
            blank.write_text("<!doctype html>")
            browser.open_page(blank)
            browser.events.clear()  # (its load event: the next one is the page's)
            browser.send("Page.navigate", url=f"{balancer.url}/page/{run_id}")
            browser.wait_for("Page.loadEventFired")
            deadline = time.monotonic() + 10
            while browser.evaluate("window.got.length") < 80:
                assert time.monotonic() < deadline, browser.errors()
                time.sleep(0.02)
            balancer.backends = [b.port]
            Termination(a).wait()
            stored, lease = in_redis(deployment, run_id)
            assert (lease or b"").endswith(b":released"), lease
            r = httpx.post(  # the job, retried elsewhere
                f"{b.url}/runs/{run_id}/start",
                params={"events": n, "delay": DELAY, "replay": 1, "fast": stored},
            )
            assert r.status_code == 202, r.text
            deadline = time.monotonic() + 30
            while browser.evaluate("window.got.length") < len(expected):
                assert time.monotonic() < deadline, browser.evaluate("window.got.length")
                time.sleep(0.05)
            got = browser.evaluate("window.got")
            ids = browser.evaluate("window.ids")
            opens = browser.evaluate("window.opens")
            at = browser.evaluate("window.at")
    finally:
        balancer.stop()
    gap = max(later - before for before, later in itertools.pairwise(at))
    print(f"\nEventSource: the stream ended, it reconnected and read on after {gap:.2f} s")
    assert got == expected
    assert [int(i.partition("-")[0]) for i in ids] == list(range(1, len(expected) + 1))
    assert opens == 2  # one reconnect, to the other replica
