"""Faults of one master of a real Redis Cluster (3 masters with a replica each,
tests/redis/harness.py) under live runs on every master.

* A master stalled (SIGSTOP) longer than the lease (and ``reconnect``), with no
  failover within the stall: the producers and readers of its runs get
  ``StoreUnavailable`` within ``lease + 2 s``; the runs on the other masters carry
  on, every event once, never held up by the stalled one.

Times are printed for the record (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from redis.asyncio.cluster import RedisCluster

from agui_wire.errors import StoreUnavailable
from agui_wire.redis import RunStore
from agui_wire.redis._keys import key_slot
from tests.redis.conftest import run
from tests.redis.faults import stopped
from tests.redis.harness import RedisClusterNodes

pytestmark = pytest.mark.slow

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def ticks(n: int) -> list[dict[str, Any]]:
    return [STARTED, *({"type": "CUSTOM", "name": "t", "value": i} for i in range(n)), FINISHED]


async def paced(events: list[dict[str, Any]], delay: float) -> Any:
    for event in events:
        await asyncio.sleep(delay)
        yield event


async def collect(store: RunStore, run_id: str) -> list[tuple[int, dict[str, Any]]]:
    return [item async for item in store.subscribe(run_id)]


@pytest.fixture
def slow_failover_cluster(tmp_path: Path) -> Iterator[RedisClusterNodes]:
    """A cluster whose nodes mark a silent master failed only after 30 s: a stall of
    a few seconds is a stall, not a failover."""
    cluster = RedisClusterNodes(tmp_path, node_timeout=30_000).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_stalled_master_fails_only_its_own_runs(slow_failover_cluster, run_id) -> None:
    cluster = slow_failover_cluster
    lease, stall = 1.5, 8.0  # a stall longer than the lease (its runs fail) and reconnect
    events = ticks(200)  # 20 ms apart: about 4 s, within the stall

    async def main() -> None:
        rc = RedisCluster.from_url(cluster.url)
        store = RunStore(rc, lease=lease, reconnect=3)
        ids = [f"{run_id}-{n}" for n in range(30)]
        master = {i: cluster.master_of(key_slot(store.stream_key(i))) for i in ids}
        assert len(set(master.values())) == 3, master
        victim = master[ids[0]]
        tasks = {}
        for i in ids:
            task = await store.start(i, paced(events, 0.02))
            assert task is not None
            task.remove_done_callback(store._task_done)
            tasks[i] = task
        readers = {i: asyncio.ensure_future(collect(store, i)) for i in ids}
        await asyncio.sleep(0.5)
        stalled = time.monotonic()
        took: dict[str, float] = {}

        async def timed(name: str, aw: Any) -> Any:
            try:
                return await aw
            finally:
                took[name] = time.monotonic() - stalled

        with stopped(SimpleNamespace(process=cluster.processes[victim]), stall):
            outcomes = await asyncio.gather(
                *(timed(f"producer {i}", tasks[i]) for i in ids),
                *(timed(f"reader {i}", readers[i]) for i in ids),
                return_exceptions=True,
            )
        produced, read = outcomes[: len(ids)], outcomes[len(ids) :]
        healthy = [i for i in ids if master[i] != victim]
        for label, runs in (("stalled", set(ids) - set(healthy)), ("healthy", healthy)):
            print(f"\n{label} master's runs:")
            for i, result, got in zip(ids, produced, read, strict=True):
                if i in runs:
                    print(
                        f"  producer {result!r:.60} after {took[f'producer {i}']:.2f} s, "
                        f"reader {type(got).__name__} after {took[f'reader {i}']:.2f} s"
                    )
        for i, result, got in zip(ids, produced, read, strict=True):
            if master[i] == victim:
                assert isinstance(result, StoreUnavailable), (i, result)
                assert isinstance(got, StoreUnavailable), (i, got)
                assert took[f"producer {i}"] <= lease + 2
                assert took[f"reader {i}"] <= lease + 2
            else:  # unaffected: done long before the stall ends, not held up by it
                assert result == len(events), (i, result)
                assert got == list(enumerate(events, 1)), (i, got)
                assert took[f"producer {i}"] < stall - 2
        failed = [v for k, v in took.items() if master[k.split()[1]] == victim]
        print(
            f"\nmaster stalled {stall:g} s (lease {lease:g} s): {len(ids) - len(healthy)} runs on "
            f"it failed after {min(failed):.2f}-{max(failed):.2f} s; {len(healthy)} runs on the "
            "other masters complete"
        )
        await store.aclose()
        await rc.aclose()

    run(main())
