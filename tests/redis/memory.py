"""Memory per request of a replica, measured on a real uvicorn
replica of tests/redis/app.py: the two scenarios benchmarks/redis_memory.py prints
and tests/redis/test_memory.py holds (loosely) to their bounds.

* ``compact_joiners``: a run of ``events`` small events is stored (by this process,
  not the replica); then ``joiners`` concurrent ``compact=1`` GETs of it hit the
  replica. Measured: the replica's peak RSS growth (``VmHWM`` after, minus ``VmRSS``
  before, the peak reset through ``/proc/PID/clear_refs``) and each joiner's time
  to its first byte.
* ``slow_reader``: one reader of the replica reads slowly (a small read every few
  ms) while this process publishes ``events`` events of ``size`` bytes each as
  fast as it can. Measured: the replica's peak RSS growth.

The replica runs in its own process, so its RSS is its own. This process's client
and store are closed when a scenario ends, whatever happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aioredis

from agui_wire import SSE_MEDIA_TYPE
from agui_wire.redis import RunStore
from tests.redis.app import token_run
from tests.redis.harness import Replica

MiB = 1024 * 1024


@contextlib.asynccontextmanager
async def _store(redis_url: str) -> AsyncIterator[tuple[aioredis.Redis, RunStore]]:
    client = aioredis.from_url(redis_url)
    store = RunStore(client, ttl=600)
    try:
        yield client, store
    finally:
        await store.aclose()
        await client.aclose()


def rss(pid: int, field: str = "VmRSS") -> int:
    """Bytes of ``field`` (``VmRSS``, ``VmHWM``) of process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak(pid: int) -> None:
    """Make ``VmHWM`` start again from the current RSS (Linux >= 4.0)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def _warm(replica: Replica, store: RunStore) -> None:
    """One small compact read and one plain read: code paths loaded, pools open."""
    await store.publish("warm-up", token_run("t", "warm-up", 50))
    async with httpx.AsyncClient(base_url=replica.url, timeout=60) as client:
        for query in ("?compact=1", ""):
            r = await client.get(f"/runs/warm-up/events{query}", headers={"accept": SSE_MEDIA_TYPE})
            assert r.status_code == 200, r.text


async def compact_joiners(
    replica: Replica, redis_url: str, *, events: int = 100_000, joiners: int = 30
) -> dict[str, Any]:
    async with _store(redis_url) as (client, store):
        run_id = f"long-{time.monotonic_ns()}"
        await store.publish(run_id, token_run("t", run_id, events))
        stored = await client.memory_usage(store.stream_key(run_id))
        await _warm(replica, store)
        await asyncio.sleep(0.5)
        base = rss(replica.pid)
        reset_peak(replica.pid)
        firsts: list[float] = []
        bodies: list[int] = []

        async def join(http: httpx.AsyncClient) -> None:
            start = time.perf_counter()
            headers = {"accept": SSE_MEDIA_TYPE}
            async with http.stream("GET", f"/runs/{run_id}/events?compact=1", headers=headers) as r:
                assert r.status_code == 200, await r.aread()
                size = 0
                async for chunk in r.aiter_raw():
                    if not size:
                        firsts.append(time.perf_counter() - start)
                    size += len(chunk)
                bodies.append(size)

        limits = httpx.Limits(max_connections=joiners)
        async with httpx.AsyncClient(base_url=replica.url, timeout=120, limits=limits) as http:
            await asyncio.gather(*(join(http) for _ in range(joiners)))
        growth = rss(replica.pid, "VmHWM") - base
        return {
            "events": events,
            "stored": stored,
            "joiners": joiners,
            "growth": growth,
            "first_byte_max": max(firsts),
            "first_byte_p50": sorted(firsts)[len(firsts) // 2],
            "body": max(bodies),
        }


async def slow_reader(
    replica: Replica, redis_url: str, *, events: int = 300, size: int = 1_000_000
) -> dict[str, Any]:
    async with _store(redis_url) as (_, store):
        run_id = f"big-{time.monotonic_ns()}"
        await _warm(replica, store)
        gate = asyncio.Event()

        async def big_events() -> Any:
            await gate.wait()
            yield {"type": "RUN_STARTED", "threadId": "t", "runId": run_id}
            yield {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
            for i in range(events):
                text = f"{i:08d}" + "z" * (size - 8)
                yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": text}
            yield {"type": "TEXT_MESSAGE_END", "messageId": "m"}
            yield {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}

        producer = await store.start(run_id, big_events())
        assert producer is not None
        await asyncio.sleep(0.5)
        base = rss(replica.pid)
        reset_peak(replica.pid)
        read = 0
        started = time.perf_counter()
        async with httpx.AsyncClient(base_url=replica.url, timeout=300) as http:
            headers = {"accept": SSE_MEDIA_TYPE}
            async with http.stream("GET", f"/runs/{run_id}/events", headers=headers) as r:
                assert r.status_code == 200
                gate.set()
                async for chunk in r.aiter_raw(65536):
                    read += len(chunk)
                    await asyncio.sleep(0.002)  # slow: ~30 MB/s at most
        await producer
        growth = rss(replica.pid, "VmHWM") - base
        return {
            "events": events,
            "size": size,
            "growth": growth,
            "read": read,
            "seconds": time.perf_counter() - started,
        }
