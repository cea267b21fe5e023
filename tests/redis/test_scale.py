"""Many live runs on one replica, against a real redis-server: with
the client exactly as docs/scaling.md builds it (``redis.from_url``, redis-py's
default pool of 100), 1,000 concurrent runs with one local reader each all finish,
every reader gets every event with contiguous ids, and the replica never holds more
than 32 connections to Redis (``CLIENT LIST``, sampled while the runs are live).
Not a timed test: it checks counts, never durations (benchmarks/redis_scale.py
measures those at 100 / 1,000 / 10,000 runs). And runs that share a lane stay
apart: one run's key turned into garbage fails that run only.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire.errors import StoreError
from agui_wire.redis import RunStore
from tests.support.stores import Opened

RUNS = 1000
DELTAS = 8

pytestmark = pytest.mark.anyio


def events(run_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    ]
    out += [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"{i}"} for i in range(DELTAS)
    ]
    out += [
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id},
    ]
    return out


async def paced(items: list[dict[str, Any]], delay: float) -> Any:
    for item in items:
        await asyncio.sleep(delay)
        yield item


async def connections(admin: aioredis.Redis) -> int:
    """Clients of the Redis other than ``admin`` itself."""
    clients = await admin.client_list()
    return len(clients) - 1


async def test_a_thousand_live_runs_through_few_connections(opened: Opened, fresh_redis) -> None:
    server = fresh_redis()

    admin = opened.redis(server.url)
    await admin.config_set("maxclients", 200)
    client = opened.redis(server.url)  # as docs/scaling.md makes it
    store = opened.store(RunStore(client, lease=5))
    peak = 0
    live = True

    async def watch() -> None:
        nonlocal peak
        while live:
            peak = max(peak, await connections(admin))
            await asyncio.sleep(0.05)

    async def one(n: int) -> tuple[list[int], list[dict[str, Any]], int]:
        run_id = f"scale-{n}"
        task = await store.start(run_id, paced(events(run_id), 0.05))
        got = [item async for item in store.subscribe(run_id)]
        assert task is not None
        return [i for i, _ in got], [e for _, e in got], await task

    watcher = asyncio.ensure_future(watch())
    results = await asyncio.gather(*(one(n) for n in range(RUNS)))
    live = False
    await watcher
    for n, (ids, got, produced) in enumerate(results):
        expected = events(f"scale-{n}")
        assert produced == len(expected)
        assert ids == list(range(1, len(expected) + 1))
        assert got == expected
    assert 0 < peak <= 32, peak
    print(f"\n{RUNS} live runs: at most {peak} connections to Redis")


async def test_one_broken_run_does_not_stop_the_others_of_its_lane(
    opened: Opened, redis_server, run_id
) -> None:
    """Runs share a lane (one XREAD names them all): a run whose key is overwritten
    by something that is not a stream fails its own readers with a StoreError, and
    the other runs of the lane go on to their end."""

    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, lease=5))
    # the readers' replica: runs produced elsewhere are followed in Redis
    reading = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    gate = asyncio.Event()
    ids = [f"{run_id}-{n}" for n in range(20)]

    async def gated(items: list[dict[str, Any]]) -> Any:
        yield items[0]
        await gate.wait()
        async for item in paced(items[1:], 0.01):
            yield item

    for i in ids:
        await store.start(i, gated(events(i)))
    readers = [asyncio.ensure_future(collect(reading, i)) for i in ids]
    tails = reading._reading.tails
    while len(tails.runs) < len(ids):  # all in the lane
        await asyncio.sleep(0.01)
    broken = ids[7]
    await r.delete(store.stream_key(broken))
    await r.set(store.stream_key(broken), "not a stream")
    gate.set()
    results = await asyncio.gather(*readers, return_exceptions=True)
    for i, got in zip(ids, results, strict=True):
        if i == broken:
            assert isinstance(got, StoreError), got
            assert "string" in str(got)
        else:
            assert got == list(enumerate(events(i), 1))


async def collect(store: RunStore, run_id: str) -> list[tuple[int, dict[str, Any]]]:
    return [item async for item in store.subscribe(run_id)]
