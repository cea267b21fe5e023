"""Every Redis failure is a typed agui_wire error, against the real
redis-server: out of memory under ``noeviction`` (``StoreFull``, the run ended as
failed: ``RUN_ERROR`` code ``STORE_FULL``), a live run evicted (``RunLost`` saying
so), garbage in a run's key (``StoreCorrupted`` naming the key and the entry:
the wrong type, a missing field, a payload that does not decode, a stray entry
that looks like an end), on the Python and the HTTP paths: never a redis-py
exception, ``KeyError``, ``WRONGTYPE`` or a 500.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import RunLost, StoreCorrupted, StoreError, StoreFull, StoreUnavailable
from agui_wire.redis import RunStore
from tests.runstore.kit import call
from tests.support.stores import Opened

# also on Valkey 8: the server's refusals (OOM, WRONGTYPE, READONLY), read by their text
pytestmark = pytest.mark.valkey

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}

pytestmark = pytest.mark.anyio


def tick(i: int, size: int = 0) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": "t", "value": "x" * size or i}


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[int, Any]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


async def http(store: RunStore, run_id: str, accept: str) -> tuple[int, list[dict[str, Any]]]:
    start, bodies = await call(store.response(run_id), headers=[("accept", accept)])
    body = b"".join(bodies)
    return start["status"], decode(body, accept) if start["status"] == 200 else [body]


async def generation(r: aioredis.Redis, key: str) -> int:
    """The run's generation, as its last entry id carries it (``n-<gen>``, the end
    ``n-<gen + 1>``)."""
    top = await r.xrevrange(key, count=1)
    seq = int(top[0][0].split(b"-")[1])
    return seq - seq % 2


async def test_out_of_memory_is_store_full_and_ends_the_run(
    opened: Opened, fresh_redis, run_id, caplog
) -> None:
    server = fresh_redis()
    caplog.set_level(logging.ERROR, logger="agui_wire.redis")

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=2))
    used = int((await r.info("memory"))["used_memory"])
    await r.config_set("maxmemory-policy", "noeviction")
    await r.config_set("maxmemory", used + 2_000_000)

    async def grows() -> Any:
        yield STARTED
        for i in range(10_000):  # 20 MB: far past maxmemory
            yield tick(i, 2000)

    with pytest.raises(StoreFull, match="full"):
        await store.publish(run_id, grows())
    got = [e for _, e in await collect(store, run_id)]
    assert got[0] == STARTED
    assert 100 < len(got) < 10_000
    assert got[-1]["type"] == "RUN_ERROR"
    assert got[-1]["code"] == "STORE_FULL"
    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        assert await http(store, run_id, accept) == (200, got)
    # a new run is refused while Redis is full, typed
    used = int((await r.info("memory"))["used_memory"])
    await r.config_set("maxmemory", used - 100_000)  # (full, whatever was freed since)
    with pytest.raises(StoreFull):
        await store.publish(f"{run_id}-2", [STARTED, FINISHED])
    assert not [r for r in caplog.records if r.name == "agui_wire.redis"]


async def test_a_live_run_evicted_is_run_lost_saying_so(
    opened: Opened, fresh_redis, run_id
) -> None:
    server = fresh_redis()

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=2))
    gate = asyncio.Event()

    async def waits() -> Any:
        yield STARTED
        yield tick(1)
        await gate.wait()
        yield tick(2)
        yield FINISHED

    task = await store.start(run_id, waits())
    assert task is not None
    task.remove_done_callback(store._task_done)
    reader = asyncio.ensure_future(collect(store, run_id))
    await asyncio.sleep(0.3)
    used = int((await r.info("memory"))["used_memory"])
    await r.config_set("maxmemory-policy", "allkeys-lru")
    await r.config_set("maxmemory", used + 1_000_000)
    filler = b"f" * 100_000
    for i in range(300):  # 30 MB of newer keys: the run's keys are evicted
        await r.set(f"filler:{i}", filler)
    assert not await r.exists(store.stream_key(run_id))
    gate.set()
    with pytest.raises(RunLost, match="evicted"):
        await task
    with pytest.raises(RunLost, match="evicted"):
        await asyncio.wait_for(reader, 10)


GARBAGE = ["wrong type", "missing field", "undecodable payload", "stray end", "unknown field"]


@pytest.mark.parametrize("garbage", GARBAGE)
async def test_garbage_in_a_runs_key_is_store_corrupted(
    opened: Opened, redis_server, run_id, garbage
) -> None:
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, lease=2))
    key = store.stream_key(run_id)
    gate = asyncio.Event()

    async def waits() -> Any:
        yield STARTED
        yield tick(1)
        yield tick(2)
        await gate.wait()
        yield FINISHED

    task = await store.start(run_id, waits())
    assert task is not None
    task.remove_done_callback(store._task_done)
    while await r.xlen(key) < 3:
        await asyncio.sleep(0.01)
    gen = await generation(r, key)
    entry = f"4-{gen}"
    if garbage == "wrong type":
        await r.delete(key)
        await r.set(key, "not a stream")
        entry = None
    elif garbage == "missing field":
        await r.xadd(key, {"x": "y"}, id=entry)
    elif garbage == "unknown field":
        payload = (await r.xrevrange(key, count=1))[0][1][b"p"]  # a good one
        await r.xadd(key, {"p": payload, "x": "y"}, id=entry)
    elif garbage == "undecodable payload":
        await r.xadd(key, {"p": b"\xff\xff\xff"}, id=entry)
    else:  # an entry that looks like an end, of no generation of this run
        entry = f"3-{gen + 3}"
        await r.xadd(key, {"end": "finished"}, id=entry)
    with pytest.raises(StoreCorrupted) as caught:
        await asyncio.wait_for(collect(store, run_id), 10)
    assert key in str(caught.value)
    assert caught.value.key == key
    assert caught.value.entry_id == entry
    if entry is not None:
        assert entry in str(caught.value)
    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        if garbage == "undecodable payload" and accept == PROTO_MEDIA_TYPE:
            continue  # binary frames are the stored bytes: the client's decoder names it
        status, got = await asyncio.wait_for(http(store, run_id, accept), 10)
        assert status == 200, got
        assert got[-1]["type"] == "RUN_ERROR"
        assert got[-1]["code"] == "STORE_CORRUPTED"
    gate.set()
    with pytest.raises(StoreError):  # the producer: typed too, never WRONGTYPE
        await asyncio.wait_for(task, 10)


async def test_a_redis_turned_replica_is_retried_like_a_lost_connection(
    opened: Opened, fresh_redis, run_id
) -> None:
    """-READONLY (a write to a master a failover demoted, Sentinel's or by hand) is
    retried for ``reconnect`` s like a lost connection: the producer carries on once
    the node takes writes again, and past the window it is ``StoreUnavailable``,
    never redis-py's ``ReadOnlyError``."""
    server, other = fresh_redis(), fresh_redis()

    r = opened.redis(server.url)
    await opened.store(RunStore(r)).publish(f"{run_id}-0", [STARTED, FINISHED])  # scripts loaded

    async def promote_after(seconds: float) -> None:
        await asyncio.sleep(seconds)
        await opened.redis(server.url).execute_command("REPLICAOF", "NO", "ONE")

    await r.execute_command("REPLICAOF", "127.0.0.1", other.port)
    promoted = asyncio.ensure_future(promote_after(1.0))
    await opened.store(RunStore(r, reconnect=10)).publish(run_id, [STARTED, tick(1), FINISHED])
    await promoted
    got = [e for _, e in await collect(opened.store(RunStore(r)), run_id)]
    assert got == [STARTED, tick(1), FINISHED]

    await r.execute_command("REPLICAOF", "127.0.0.1", other.port)
    store = opened.store(RunStore(r, reconnect=1))
    with pytest.raises(StoreUnavailable, match=r"refused the command for 1 s: .*read only replica"):
        await store.publish(f"{run_id}-2", [STARTED, FINISHED])
    await r.execute_command("REPLICAOF", "NO", "ONE")


class _Stubborn:
    """A producer whose ``aclose`` raises: closing it is logged, never raised."""

    def __aiter__(self) -> _Stubborn:
        return self

    async def __anext__(self) -> Any:
        raise StopAsyncIteration

    async def aclose(self) -> None:
        raise RuntimeError("will not close")


async def test_a_producer_that_fails_to_close_is_logged_as_the_store(
    opened: Opened, redis_server, run_id, caplog
) -> None:
    """The run has ended, so a second producer is closed unstarted; its failure to close
    is logged on the store's logger (agui_wire.redis), not on asgi's."""
    store = opened.store(RunStore(opened.redis(redis_server.url)))
    assert await store.publish(run_id, [STARTED, FINISHED]) == 2
    with caplog.at_level(logging.ERROR):
        assert await store.publish(run_id, _Stubborn()) == 2
    failed = [r for r in caplog.records if "closing the AG-UI event producer" in r.getMessage()]
    assert [r.name for r in failed] == ["agui_wire.redis"]
    assert failed[0].exc_info is not None
    assert str(failed[0].exc_info[1]) == "will not close"
