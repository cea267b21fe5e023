"""``RunStore(replica_acks=N)``: an append counts as stored only once N replicas hold
it (``WAIT`` after each round trip of appends), against a real master and a real
replica (``REPLICAOF``) on loopback ports. When ``publish`` returns, the replica
holds every event and the end; with the replica stopped, the producer waits (it
retries, nothing is acknowledged) and carries on once the replica is back within
the lease; with no replica at all it gives up with ``StoreUnavailable`` once its
lease may have lapsed. The failover itself: tests/redis/test_cluster_faults.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire.errors import StoreUnavailable
from agui_wire.redis import RunStore
from tests.redis.faults import stopped
from tests.runstore.kit import paced, ticks
from tests.support.stores import Opened

pytestmark = [pytest.mark.slow, pytest.mark.valkey, pytest.mark.anyio]


async def replica_of(opened: Opened, master: Any, replica: Any) -> aioredis.Redis:
    r = opened.redis(replica.url)
    await r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    while (await r.info("replication")).get("master_link_status") != "up":
        await asyncio.sleep(0.05)
    return r


async def test_replica_acks_is_checked() -> None:
    for bad in (-1, True, 1.0, "1"):
        with pytest.raises(ValueError, match="replica_acks"):
            RunStore(aioredis.Redis(), replica_acks=bad)  # type: ignore[arg-type]


async def test_what_publish_acknowledged_the_replica_holds(
    opened: Opened, fresh_redis, run_id
) -> None:
    master, replica = fresh_redis(), fresh_redis()
    events = ticks(300)

    r = opened.redis(master.url)
    copy = await replica_of(opened, master, replica)
    store = opened.store(RunStore(r, replica_acks=1, batch=16))
    key = store.stream_key(run_id)
    assert await store.publish(run_id, events) == len(events)
    # read at once from the replica: WAIT made the master's reply wait for it
    assert await copy.xlen(key) == len(events) + 1
    got = [item async for item in store.subscribe(run_id)]
    assert [e for _, e in got] == events


async def test_with_the_replica_stopped_appends_wait_then_carry_on(
    opened: Opened, fresh_redis, run_id
) -> None:
    master, replica = fresh_redis(), fresh_redis()
    events = ticks(100)

    r = opened.redis(master.url)
    copy = await replica_of(opened, master, replica)
    store = opened.store(RunStore(r, replica_acks=1, lease=5))
    task = await store.start(run_id, paced(events, 0.01))
    assert task is not None
    await asyncio.sleep(0.3)
    began = time.monotonic()
    with stopped(replica, 2.0):
        await asyncio.sleep(2.0)
        assert not task.done()  # nothing acknowledged while no replica answers
    assert await task == len(events)
    print(f"\nreplica stopped 2 s: the run ended {time.monotonic() - began:.1f} s after")
    assert await copy.xlen(store.stream_key(run_id)) == len(events) + 1


async def test_without_a_replica_the_producer_gives_up_when_its_lease_may_have_lapsed(
    opened: Opened, fresh_redis, run_id
) -> None:
    master = fresh_redis()
    lease = 1.0

    r = opened.redis(master.url)
    store = opened.store(RunStore(r, replica_acks=1, lease=lease))
    began = time.monotonic()
    with pytest.raises(StoreUnavailable, match="NOREPLICAS"):
        await store.publish(run_id, ticks(3))
    took = time.monotonic() - began
    print(f"\nno replica: StoreUnavailable after {took:.1f} s (lease {lease:g} s)")
    # retried for lease + 1 s after the first refusal, each try waiting for WAIT's
    # own deadline (half a round trip's: 1 s)
    assert lease + 1 <= took <= lease + 6
