"""The run store on a real Redis Cluster: 3 masters with a replica each, started
from Debian's ``redis-server`` on loopback ports and joined by ``redis-cli
--cluster create`` (tests/redis/harness.py), the client
``redis.asyncio.cluster.RedisCluster``. What only a cluster has: many live runs
spread over every master (resume, fan-out and compaction across them); tails that
read the runs of one shard (one hash tag, one slot) per ``XREAD``; a master killed
mid-run replaced by its replica, nothing lost silently (docs/scaling.md says what
each side sees). One run's contract on a cluster (ids, resume, fan-out,
compaction, leases, takeover, the idempotent producer) is tests/runstore's, whose
tests marked ``cluster`` run there too.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest

from agui_wire.errors import LeaseLost, RunLost, StoreError
from agui_wire.redis import RunStore
from agui_wire.redis._keys import key_slot
from examples.script import scripted_run
from tests.support.stores import Opened

RUN = scripted_run("thread-c", "run-c")

pytestmark = pytest.mark.anyio


async def paced(events: list[dict[str, Any]], delay: float) -> Any:
    for event in events:
        await asyncio.sleep(delay)
        yield event


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[int, dict[str, Any]]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


async def test_live_runs_fan_out_resume_and_compact_across_masters(
    opened: Opened, redis_cluster, run_id
) -> None:
    rc = opened.cluster(redis_cluster.url)
    store = opened.store(RunStore(rc, lease=2))
    ids = [f"{run_id}-{n}" for n in range(40)]
    for i in ids:
        assert await store.start(i, paced(RUN, 0.01)) is not None
    readers = [collect(store, i) for i in ids for _ in range(2)]  # fan-out: two each

    async def resume(i: str) -> list[tuple[int, dict[str, Any]]]:
        while await rc.xlen(store.stream_key(i)) < 5:  # as a client that read 5
            await asyncio.sleep(0.01)
        return await collect(store, i, after=5)

    resumed = [resume(i) for i in ids[:10]]
    results = await asyncio.gather(*readers, *resumed)
    for got in results[: len(readers)]:
        assert got == list(enumerate(RUN, 1))
    for got in results[len(readers) :]:
        assert got == list(enumerate(RUN, 1))[5:]
    # the runs are spread over every master
    masters = Counter(redis_cluster.master_of(key_slot(store.stream_key(i))) for i in ids)
    assert len(masters) == 3, masters
    compact = [e for _, e in await collect(store, ids[0], compact=True)]
    assert [e["type"] for e in compact[:2]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]


async def test_tails_read_one_shard_per_xread(opened: Opened, redis_cluster, run_id) -> None:
    """While 200 runs are live, every lane follows runs of one shard only (a
    cluster refuses an XREAD naming keys of two slots), and the replica's
    connections to all the nodes together stay few."""

    rc = opened.cluster(redis_cluster.url)
    store = opened.store(RunStore(rc, lease=5))
    # the readers' replica: runs produced elsewhere are followed in Redis
    reading = opened.store(RunStore(opened.cluster(redis_cluster.url), lease=5))
    ids = [f"{run_id}-{n}" for n in range(200)]
    gate = asyncio.Event()

    async def gated() -> Any:
        await gate.wait()
        async for event in paced(RUN, 0.02):
            yield event

    for i in ids:
        await store.start(i, gated())
    readers = asyncio.gather(*(collect(reading, i) for i in ids))
    tails = reading._reading.tails
    while len(tails.runs) < len(ids):  # every reader follows its run's tail
        await asyncio.sleep(0.01)
    lanes = [lane for group in tails.lanes.values() for lane in group]
    assert lanes
    for lane in lanes:
        assert {run.keys.shard for run in lane.runs.values()} <= {lane.group}
        assert len({key_slot(key) for key in [*lane.runs, lane.bell]}) == 1
    assert len(lanes) <= store.shards
    connections = 0
    for port in redis_cluster.masters():
        listing = redis_cluster.info(port, "CLIENT LIST")
        # not counted: this redis-cli, and the replicas' links to their masters
        connections += sum(
            1
            for line in listing.splitlines()
            if "cmd=" in line and "cmd=client|list" not in line and "flags=S" not in line
        )
    assert connections <= 32, connections
    gate.set()
    for got in await readers:
        assert got == list(enumerate(RUN, 1))


async def test_a_master_killed_mid_run_fails_over_and_loses_nothing_silently(
    opened: Opened, fresh_cluster
) -> None:
    """20 runs live on the shards of one master; that master is SIGKILLed; its
    replica takes over. Every reader gets either every event once, in order, or
    events 1..k once and then ``RunLost`` (acknowledged writes the replica had not
    received yet: asynchronous replication; or the producer's ``RUN_ERROR``
    ``RUN_LOST`` right after every event it sent), never a gap or a duplicate; every
    producer either finishes or raises ``RunLost``/``LeaseLost``."""
    cluster = fresh_cluster

    rc = opened.cluster(cluster.url)
    store = opened.store(RunStore(rc, lease=10, reconnect=20))
    layout = store._settings.layout
    victim = cluster.master_of(key_slot("{" + layout.tags[0] + "}"))
    ids = []
    n = 0
    while len(ids) < 20:  # runs whose shard lives on the victim
        candidate = f"fo-{n}"
        n += 1
        if cluster.master_of(key_slot(store.stream_key(candidate))) == victim:
            ids.append(candidate)
    long_run = RUN * 1  # 33 events, 50 ms apart: about 1.7 s
    tasks = [await store.start(i, paced(long_run, 0.05)) for i in ids]
    readers = [asyncio.ensure_future(collect(store, i)) for i in ids]
    await asyncio.sleep(0.6)
    killed = time.monotonic()
    cluster.kill(victim)
    outcomes = await asyncio.gather(*readers, return_exceptions=True)
    produced = await asyncio.gather(*tasks, return_exceptions=True)
    took = time.monotonic() - killed
    complete = lost = 0
    for got in outcomes:
        if isinstance(got, list) and got and got[-1][1].get("code") == "RUN_LOST":
            # it had read every event sent: the producer's RUN_ERROR follows them
            assert got[:-1] == list(enumerate(long_run, 1))[: len(got) - 1]
            lost += 1
        elif isinstance(got, list):
            assert got == list(enumerate(long_run, 1))
            complete += 1
        else:
            assert isinstance(got, RunLost), repr(got)
            lost += 1
    for result in produced:
        assert result == len(long_run) or isinstance(result, (RunLost, LeaseLost)), result
    # the readers that were cut off read no gap before the error
    for i in ids:
        with_error: list[int] = []
        try:
            async for event_id, _ in store.subscribe(i):
                with_error.append(event_id)
        except StoreError:
            pass
        assert with_error == list(range(1, len(with_error) + 1))
    print(
        f"\nmaster killed: {complete} of {len(ids)} runs complete, {lost} RunLost, "
        f"all settled {took:.1f} s after the kill"
    )
    assert cluster.masters()
    assert victim not in cluster.masters()
