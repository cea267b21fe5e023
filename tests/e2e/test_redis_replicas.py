"""Runs shared by two uvicorn replicas through a real redis-server
(tests/redis/app.py behind tests/redis/harness.py).

* fan-out: 48 concurrent subscribers, half on each replica, half SSE and half
  protobuf, all get the whole run in order (SSE ids 1..N);
* resume on the other replica, by ``Last-Event-ID`` (SSE) and ``?after=n``
  (binary): no gap, no duplicate;
* ``arun_agent``/``run_agent`` behind a round-robin balancer whose connections
  are cut mid-stream reconnect by themselves, to the other replica, and resume;
* SIGKILL of the producer's replica: subscribers on the other replica get
  ``RUN_ERROR`` (code ``LEASE_EXPIRED``) within lease + poll + a margin;
* the reference ``@ag-ui/client`` ``HttpAgent`` reads a run started on the
  other replica, and with ``compact=1`` (mid-run too) ends with the same
  messages and state as a client that read every event.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, EventDecoder, decode
from agui_wire.client import arun_agent, run_agent
from examples.script import FINAL_STATE, scripted_run
from tests.redis.app import token_run
from tests.redis.harness import Balancer, RedisServer, Replica

pytestmark = pytest.mark.slow

LEASE = 2.0
POLL = min(1.0, LEASE / 4)


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.redis = RedisServer(tmp).start()
        self.replicas = [self.replica(f"replica-{i}") for i in range(2)]
        self.balancer = Balancer([r.port for r in self.replicas]).start()

    def replica(self, name: str) -> Replica:
        return Replica(self.redis.url, self.tmp / f"{name}.log", AGUI_LEASE=str(LEASE)).start()

    def close(self) -> None:
        self.balancer.stop()
        for replica in self.replicas:
            replica.stop()
        self.redis.stop()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with tempfile.TemporaryDirectory() as tmp:
        c = Cluster(Path(tmp))
        try:
            yield c
        finally:
            c.close()
            for log in Path(tmp).glob("*.log"):
                text = log.read_text(errors="replace").strip()
                if text:
                    print(f"--- {log.name}\n{text}")


def new_run() -> str:
    return f"run-{uuid.uuid4()}"


def sse_ids(body: bytes) -> list[int]:
    """The event indexes of the SSE ids (``n-<the run's generation>``), which all
    carry the same generation."""
    found = re.findall(rb"^id: (\d+)-(\d+)$", body, re.MULTILINE)
    assert len({generation for _, generation in found}) <= 1
    return [int(n) for n, _ in found]


async def read_all(url: str, accept: str, **params: Any) -> bytes:
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("GET", url, headers={"accept": accept}, params=params) as response,
    ):
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"] == accept
        return await response.aread()


def test_fan_out_across_replicas_both_transports(cluster) -> None:
    run_id = new_run()
    n = 300
    expected = token_run("thread-1", run_id, n)
    a, b = cluster.replicas
    r = httpx.post(f"{a.url}/runs/{run_id}/start", params={"events": n, "delay": 0.005})
    assert r.status_code == 202

    async def main() -> list[tuple[str, bytes]]:
        jobs = []
        for replica in (a, b):
            for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
                for _ in range(12):
                    url = f"{replica.url}/runs/{run_id}/events"
                    jobs.append((accept, asyncio.ensure_future(read_all(url, accept))))
        return [(accept, await job) for accept, job in jobs]

    results = asyncio.run(main())
    assert len(results) == 48
    for accept, body in results:
        assert decode(body, accept) == expected
        if accept == SSE_MEDIA_TYPE:
            assert sse_ids(body) == list(range(1, len(expected) + 1))


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_resume_on_the_other_replica(cluster, accept) -> None:
    run_id = new_run()
    n = 200
    expected = token_run("thread-1", run_id, n)
    a, b = cluster.replicas
    httpx.post(f"{a.url}/runs/{run_id}/start", params={"events": n, "delay": 0.005})
    first: list[dict[str, Any]] = []
    with httpx.stream(
        "GET", f"{a.url}/runs/{run_id}/events", headers={"accept": accept}, timeout=30
    ) as response:
        decoder = EventDecoder(response.headers["content-type"])
        for chunk in response.iter_raw():
            first += decoder.feed(chunk)
            if len(first) >= 37:
                break
    k = len(first)
    if accept == SSE_MEDIA_TYPE:
        assert decoder.last_event_id is not None
        assert decoder.last_event_id.partition("-")[0] == str(k)  # n-<generation>
        headers = {"accept": accept, "last-event-id": decoder.last_event_id}
        params: dict[str, Any] = {}
    else:
        headers = {"accept": accept}
        params = {"after": k}  # binary frames have no id: the client counts
    with httpx.Client(timeout=30) as client:
        rest = client.get(f"{b.url}/runs/{run_id}/events", headers=headers, params=params)
    assert rest.headers["agui-after"].partition("-")[0] == str(k)
    assert first + decode(rest.content, accept) == expected


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_client_reconnects_through_a_balancer_and_resumes(cluster, accept) -> None:
    run_id = new_run()
    n = 400
    expected = token_run("thread-1", run_id, n)
    body = {
        "threadId": "thread-1",
        "runId": run_id,
        "messages": [],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    url = f"{cluster.balancer.url}/agent?events={n}&delay=0.004"
    before = cluster.balancer.connections

    async def main() -> list[dict[str, Any]]:
        got = []
        async with httpx.AsyncClient(timeout=30) as client:
            async for event in arun_agent(client, url, body, accept=accept, backoff=0.05):
                got.append(event)
                if len(got) in (50, 200):
                    cluster.balancer.cut()
        return got

    assert asyncio.run(main()) == expected
    assert cluster.balancer.connections - before >= 3  # two reconnects

    # The sync client does the same.
    run_id = new_run()
    body["runId"] = run_id
    expected = token_run("thread-1", run_id, n)
    got = []
    with httpx.Client(timeout=30) as client:
        for event in run_agent(client, url, body, accept=accept, backoff=0.05):
            got.append(event)
            if len(got) == 120:
                cluster.balancer.cut()
    assert got == expected


def test_sigkill_of_the_producers_replica(cluster) -> None:
    """The producer's replica dies mid-run: every subscriber elsewhere learns it
    within lease + poll + margin, by a RUN_ERROR stored for everyone."""
    run_id = new_run()
    doomed = cluster.replica("doomed")
    b = cluster.replicas[1]
    httpx.post(f"{doomed.url}/runs/{run_id}/start", params={"events": 2000, "delay": 0.01})
    killed_at: list[float] = []

    async def watch(accept: str) -> tuple[list[dict[str, Any]], float]:
        events: list[dict[str, Any]] = []
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream(
                "GET", f"{b.url}/runs/{run_id}/events", headers={"accept": accept}
            ) as response,
        ):
            decoder = EventDecoder(response.headers["content-type"])
            async for chunk in response.aiter_raw():
                for event in decoder.feed(chunk):
                    events.append(event)
                    if event["type"] == "RUN_ERROR":
                        return events, time.monotonic()
        raise AssertionError(f"the stream ended without RUN_ERROR after {len(events)} events")

    async def main() -> list[tuple[list[dict[str, Any]], float]]:
        watchers = [
            asyncio.ensure_future(watch(accept))
            for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE) * 3
        ]
        await asyncio.sleep(0.8)
        doomed.kill()
        killed_at.append(time.monotonic())
        return list(await asyncio.gather(*watchers))

    results = asyncio.run(main())
    delays = [at - killed_at[0] for _, at in results]
    span = f"{min(delays):.2f}..{max(delays):.2f} s"
    print(f"\nproducer SIGKILLed: RUN_ERROR after {span} (lease {LEASE} s)")
    for events, _ in results:
        assert events[-1]["code"] == "LEASE_EXPIRED"
        assert len(events) > 10
    assert max(delays) <= LEASE + POLL + 1.0
    # A late joiner replays the same end.
    late = decode(httpx.get(f"{b.url}/runs/{run_id}/events", timeout=30).content, SSE_MEDIA_TYPE)
    assert late[-1]["code"] == "LEASE_EXPIRED"
    assert late[: len(results[0][0])] == results[0][0]


# -- the reference client --------------------------------------------------------------


@pytest.mark.interop
@pytest.mark.parametrize("accept", [None, PROTO_MEDIA_TYPE])
def test_http_agent_reads_a_run_through_the_other_replica(cluster, ts_agent, accept) -> None:
    run_id = new_run()
    a, b = cluster.replicas
    assert httpx.post(f"{a.url}/runs/{run_id}/start", params={"delay": 0.02}).status_code == 202
    out = ts_agent.run(f"{b.url}/agent", accept=accept, run_id=run_id)
    assert out.error is None
    assert out.completed
    assert out.content_type == (accept or SSE_MEDIA_TYPE)
    assert out.events == scripted_run("thread-1", run_id)
    piped = ts_agent.run(f"{b.url}/agent", accept=accept, run_id=run_id, mode="pipeline")
    assert piped.error is None
    assert piped.extra["state"] == FINAL_STATE


@pytest.mark.interop
@pytest.mark.parametrize("accept", [None, PROTO_MEDIA_TYPE])
@pytest.mark.parametrize("join_after", [0.0, 0.25, 0.45])
def test_http_agent_applies_a_compact_run_like_the_whole_run(
    cluster, ts_agent, accept, join_after
) -> None:
    """Joined late with ``compact=1`` (after the end, or mid-run with text, tool
    calls and state open), the reference pipeline ends with the messages and
    state of a client that read every event (less the history it brought: the
    snapshot holds what the run's events establish)."""
    run_id = new_run()
    a, b = cluster.replicas
    httpx.post(f"{a.url}/runs/{run_id}/start", params={"delay": 0.02})
    if join_after:
        time.sleep(join_after)
    else:
        decode(httpx.get(f"{a.url}/runs/{run_id}/events", timeout=30).content, SSE_MEDIA_TYPE)
    compact = ts_agent.run(
        f"{b.url}/agent?compact=1", accept=accept, run_id=run_id, mode="pipeline"
    )
    whole = ts_agent.run(f"{b.url}/agent", accept=accept, run_id=run_id, mode="pipeline")
    assert compact.error is None, compact
    assert whole.error is None
    assert compact.warnings == []
    assert len(compact.events) < len(whole.events)
    assert compact.extra["state"] == whole.extra["state"] == FINAL_STATE
    run_messages = [m for m in whole.extra["messages"] if m["id"] != "user-1"]
    assert compact.extra["messages"] == run_messages


def test_two_users_never_share_a_run_across_replicas(cluster) -> None:
    """Owners over real sockets: Bob POSTing Alice's runId (on the other
    replica) starts a run of his own; anyone but Alice reading her run gets the 404
    of an unknown run, on both replicas and both transports; bad run ids are 400s."""
    run_id = new_run()
    a, b = (r.url for r in cluster.replicas)
    body = {"threadId": "thread-alice", "runId": run_id, "messages": []}

    def post(url: str, user: str | None, thread: str, accept: str) -> httpx.Response:
        headers = {"accept": accept, **({"x-agui-user": user} if user else {})}
        return httpx.post(
            f"{url}/agent", json={**body, "threadId": thread}, headers=headers, timeout=60
        )

    alice = post(a, "alice", "thread-alice", SSE_MEDIA_TYPE)
    bob = post(b, "bob", "thread-bob", PROTO_MEDIA_TYPE)
    assert decode(alice.content, SSE_MEDIA_TYPE) == scripted_run("thread-alice", run_id)
    assert decode(bob.content, PROTO_MEDIA_TYPE) == scripted_run("thread-bob", run_id)
    for url in (a, b):
        for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
            own = httpx.get(
                f"{url}/runs/{run_id}/events", headers={"accept": accept, "x-agui-user": "alice"}
            )
            assert decode(own.content, accept) == scripted_run("thread-alice", run_id)
            unknown = httpx.get(
                f"{url}/runs/never-{run_id}/events",
                headers={"accept": accept, "x-agui-user": "mallory"},
            )
            for user in ("mallory", None):
                headers = {"accept": accept, **({"x-agui-user": user} if user else {})}
                other = httpx.get(f"{url}/runs/{run_id}/events", headers=headers)
                assert other.status_code == unknown.status_code == 404
                assert other.text == unknown.text.replace(f"never-{run_id}", run_id)
    for bad in (123, None, "x" * 10_000, "\ud800"):
        refused = httpx.post(
            f"{a}/agent",
            content=json.dumps({**body, "runId": bad}),  # a lone surrogate as \ud800
            headers={
                "accept": SSE_MEDIA_TYPE,
                "content-type": "application/json",
                "x-agui-user": "alice",
            },
        )
        assert refused.status_code == 400, refused.text
        assert "256 UTF-8 bytes" in refused.text
    refused = httpx.get(f"{b}/runs/{'x' * 300}/events", headers={"x-agui-user": "alice"})
    assert refused.status_code == 400, refused.text
