"""``agui_wire.redis._tails`` on a real redis-server: the runs a process follows share
a few lanes (one blocking ``XREAD`` each: 300 live runs, one lane on one Redis),
a run joining a lane is read at once (the lane's bell), a run that ended is
followed no more. (Lanes per shard on a cluster: tests/redis/test_cluster.py;
lease checks: tests/runstore/test_leases.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.redis import RunStore
from agui_wire.redis._tails import LANE_KEYS
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


async def test_live_runs_share_a_lane_and_leave_it(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    store = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    # the readers' replica: runs produced elsewhere are followed in Redis
    reading = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    gate = asyncio.Event()

    async def gated() -> Any:
        yield STARTED
        await gate.wait()
        yield FINISHED

    ids = [f"{run_id}-{n}" for n in range(300)]
    for i in ids:
        await store.start(i, gated())
    readers = [asyncio.ensure_future(_collect(reading, i)) for i in ids]
    tails = reading._reading.tails
    while len(tails.runs) < len(ids):
        await asyncio.sleep(0.01)
    lanes = [lane for group in tails.lanes.values() for lane in group]
    assert len(lanes) == 1  # one XREAD for all of them (up to LANE_KEYS runs)
    assert len(ids) < LANE_KEYS
    assert len(lanes[0].runs) == len(ids)
    late = f"{run_id}-late"
    await store.start(late, gated())
    readers.append(asyncio.ensure_future(_collect(reading, late)))
    while late not in {run.keys.run_id for run in tails.runs.values()}:
        await asyncio.sleep(0.01)
    gate.set()
    for got in await asyncio.gather(*readers):
        assert [e["type"] for _, e in got] == ["RUN_STARTED", "RUN_FINISHED"]
    assert tails.runs == {}  # ended: nobody follows them


async def _collect(store: RunStore, run_id: str) -> list[Any]:
    return [item async for item in store.subscribe(run_id)]
