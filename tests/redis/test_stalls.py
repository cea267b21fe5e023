"""A stalled or black-holed Redis is detected in bounded time,
against the real redis-server: SIGSTOP (the kernel still accepts connections,
nothing answers) and a proxy that forwards nothing (a partition: no RST, no FIN).

* A stall shorter than the lease loses nothing: the producer, Python subscribers
  and HTTP readers (both transports) carry on, every event once, with no error
  and nothing for the user to redo.
* Redis silent longer than the lease: the producer and every reader get
  ``StoreUnavailable`` within ``lease + 2 s`` of the silence (an HTTP body ends
  without a terminal event, so the client resumes); once Redis answers again, the
  run is ended by its lease, ``RUN_ERROR`` ``LEASE_EXPIRED``, the same on every
  replica.
* A client configuration that cannot work is refused when the store is made,
  naming why; a short ``socket_timeout`` on one Redis does not fail a quiet run.

Times are printed for the record (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import StoreUnavailable
from agui_wire.redis import RunStore
from tests.redis.faults import Proxy, stopped
from tests.runstore.kit import FINISHED, STARTED, call, ticks
from tests.support.stores import Opened

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


async def paced(events: list[dict[str, Any]], delay: float, quiet_at: int = -1, quiet=0.0):
    for i, event in enumerate(events):
        await asyncio.sleep(quiet if i == quiet_at else delay)
        yield event


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[int, Any]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


async def http(store: RunStore, run_id: str, accept: str) -> tuple[int, list[dict[str, Any]]]:
    start, bodies = await call(store.response(run_id), headers=[("accept", accept)])
    return start["status"], decode(b"".join(bodies), accept)


async def test_a_stall_shorter_than_the_lease_loses_nothing(
    opened: Opened, fresh_redis, run_id
) -> None:
    """Redis stopped for 80% of the lease while the producer is quiet (the lease is
    renewed by heartbeats only, so it may lapse in Redis meanwhile)."""
    server = fresh_redis()
    lease = 1.5
    events = ticks(30)

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=lease))
    other = opened.store(RunStore(opened.redis(server.url), lease=lease))  # another replica
    task = await store.start(run_id, paced(events, 0.01, quiet_at=10, quiet=2.5))
    assert task is not None
    readers = [
        asyncio.ensure_future(collect(store, run_id)),
        asyncio.ensure_future(collect(other, run_id)),
        asyncio.ensure_future(http(store, run_id, SSE_MEDIA_TYPE)),
        asyncio.ensure_future(http(other, run_id, PROTO_MEDIA_TYPE)),
    ]
    await asyncio.sleep(0.6)  # into the quiet stretch
    with stopped(server, 0.8 * lease):
        await asyncio.sleep(0.8 * lease + 0.1)
    assert await task == len(events)
    for reader in readers[:2]:
        got = await reader
        assert [i for i, _ in got] == list(range(1, len(events) + 1))
        assert [e for _, e in got] == events
    for reader in readers[2:]:
        assert await reader == (200, events)


async def test_a_stall_shorter_than_the_lease_loses_nothing_with_the_defaults(
    opened: Opened, fresh_redis, run_id
) -> None:
    """The defaults (lease 30 s, reconnect 10 s) and Redis stopped for 12 s, longer than
    ``reconnect``, shorter than the lease, while events flow: the producer's lease is
    valid in Redis's terms all along, so it keeps retrying and the run carries on for
    the producer, subscribers on two replicas and HTTP readers on both transports."""
    server = fresh_redis()
    events = ticks(300)

    store = opened.store(RunStore(opened.redis(server.url)))
    other = opened.store(RunStore(opened.redis(server.url)))  # another replica
    task = await store.start(run_id, paced(events, 0.01))
    assert task is not None
    readers = [
        asyncio.ensure_future(collect(store, run_id)),
        asyncio.ensure_future(collect(other, run_id)),
        asyncio.ensure_future(http(store, run_id, SSE_MEDIA_TYPE)),
        asyncio.ensure_future(http(other, run_id, PROTO_MEDIA_TYPE)),
    ]
    await asyncio.sleep(0.5)  # mid-run
    began = time.monotonic()
    with stopped(server, 12.0):
        await asyncio.sleep(12.1)
    assert await task == len(events)
    print(f"\n12 s stall, defaults: the run ended {time.monotonic() - began:.1f} s after it")
    for reader in readers[:2]:
        got = await reader
        assert [i for i, _ in got] == list(range(1, len(events) + 1))
        assert [e for _, e in got] == events
    for reader in readers[2:]:
        assert await reader == (200, events)


@pytest.mark.parametrize("fault", ["SIGSTOP", "black hole"])
async def test_redis_silent_longer_than_the_lease(
    opened: Opened, fresh_redis, run_id, fault
) -> None:
    server = fresh_redis()
    lease = 1.0
    events = ticks(2000)

    with Proxy(server.port) as proxy:
        url = proxy.url if fault == "black hole" else server.url
        r = opened.redis(url)
        store = opened.store(RunStore(r, lease=lease))
        task = await store.start(run_id, paced(events, 0.01))
        assert task is not None
        task.remove_done_callback(store._task_done)
        readers = {
            "subscriber": asyncio.ensure_future(collect(store, run_id)),
            "SSE": asyncio.ensure_future(http(store, run_id, SSE_MEDIA_TYPE)),
            "binary": asyncio.ensure_future(http(store, run_id, PROTO_MEDIA_TYPE)),
        }
        await asyncio.sleep(0.5)
        silent = time.monotonic()
        took: dict[str, float] = {}

        async def timed(name: str, aw: Any) -> Any:
            try:
                return await asyncio.wait_for(aw, lease + 6)
            finally:
                took[name] = time.monotonic() - silent

        with stopped(server, 7.0) if fault == "SIGSTOP" else _nothing():
            if fault == "black hole":
                proxy.black_hole()
            with pytest.raises(StoreUnavailable):
                await timed("producer", task)
            with pytest.raises(StoreUnavailable):
                await timed("subscriber", readers["subscriber"])
            for name in ("SSE", "binary"):
                status, got = await timed(name, readers[name])
                assert status == 200
                assert 10 < len(got) < len(events)
                assert got == events[: len(got)]  # no terminal event: the client resumes
            print(
                f"\n{fault}: StoreUnavailable after "
                + ", ".join(f"{k} {v:.2f} s" for k, v in took.items())
                + f" (lease {lease:g} s)"
            )
            assert max(took.values()) <= lease + 2
        proxy.heal()
        # Redis answers again: the run is ended by its lease, alike on every replica.
        other = opened.store(RunStore(opened.redis(server.url), lease=lease))
        seen = await asyncio.gather(
            asyncio.wait_for(collect(store, run_id), 10),
            asyncio.wait_for(collect(other, run_id), 10),
        )
        for got in seen:
            assert got[-1][1]["type"] == "RUN_ERROR"
            assert got[-1][1]["code"] == "LEASE_EXPIRED"
            assert [e for _, e in got[:-1]] == events[: len(got) - 1]
        assert seen[0] == seen[1]


@pytest.mark.parametrize("fault", ["SIGSTOP", "black hole"])
async def test_a_first_claim_on_a_silent_redis_is_unavailable_in_bounded_time(
    opened: Opened, fresh_redis, run_id, fault
) -> None:
    """A store's first producer asks Redis whether it takes the store's scripts
    (``StoreUnsupported``): that question has the deadline every round trip has, so a
    silent Redis is ``StoreUnavailable`` soon after ``reconnect``, not a hang, with a
    client that has no ``socket_timeout`` of its own (redis-py before 8 by default)."""
    server = fresh_redis()

    with Proxy(server.port) as proxy:
        url = proxy.url if fault == "black hole" else server.url
        r = opened.redis(url, socket_timeout=None, socket_connect_timeout=None)
        store = opened.store(RunStore(r, lease=1, reconnect=2))
        began = time.monotonic()
        with stopped(server, 20.0) if fault == "SIGSTOP" else _nothing():
            if fault == "black hole":
                proxy.black_hole()
                await asyncio.sleep(0.1)  # (the proxy looks at the flag every 10 ms)
            with pytest.raises(StoreUnavailable, match="unreachable for 2 s"):
                await asyncio.wait_for(store.publish(run_id, [STARTED, FINISHED]), 15)
        print(f"\n{fault}: first claim StoreUnavailable after {time.monotonic() - began:.2f} s")
        proxy.heal()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


async def test_a_short_socket_timeout_does_not_fail_a_quiet_run(
    opened: Opened, redis_server, run_id
) -> None:
    """The store's blocking reads wait ``poll`` seconds (here 0.5): a client
    ``socket_timeout`` below that must not make a quiet, healthy run look dead."""

    r = opened.redis(redis_server.url, socket_timeout=0.2)
    store = opened.store(RunStore(r, lease=2, reconnect=1))
    events = ticks(3)
    task = await store.start(run_id, paced(events, 0.01, quiet_at=2, quiet=2.0))
    got = await asyncio.wait_for(collect(store, run_id), 10)
    assert [e for _, e in got] == events
    assert task is not None
    assert await task == len(events)


async def test_a_client_configuration_that_cannot_work_is_refused() -> None:
    # (clients that never connect: nothing to close)
    # a cluster client's reads time out after socket_timeout: below the store's
    # blocking read (poll), every quiet run would look like a dead Redis
    cluster = RedisCluster(host="127.0.0.1", port=1, socket_timeout=0.1)
    with pytest.raises(ValueError, match="socket_timeout"):
        RunStore(cluster, lease=2)
    # too few connections for the store's lanes: the pool would refuse the rest
    small = aioredis.Redis(max_connections=4)
    with pytest.raises(ValueError, match="max_connections"):
        RunStore(small)
    RunStore(aioredis.Redis(max_connections=64))  # enough
    RunStore(RedisCluster(host="127.0.0.1", port=1, socket_timeout=5), lease=2)
