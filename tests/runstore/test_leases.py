"""Leases, on every backend: a producer holds its run's lease and renews it (a
slow producer keeps its run); once it vanishes without ending the run (its
replica frozen or killed), the run ends with ``RUN_ERROR`` (code
``LEASE_EXPIRED``) for every reader within ``lease + poll``, or with its end
alone after a terminal event; the vanished producer's next write is
``LeaseLost``. Another producer continues such a run only when it replays it
deterministically (``replay=True``: the events stored keep their first write,
the rest are appended); without it the run is ended and the claim refused with
``RunAbandoned``, now and on every retry.
"""

from __future__ import annotations

import asyncio

import pytest

from agui_wire.errors import LeaseLost, RunAbandoned
from tests.runstore.kit import Kit, collect, frozen, read, stop_heartbeat

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
RUN_A = [STARTED, *({"type": "CUSTOM", "name": "a", "value": i} for i in range(5)), FINISHED]
RUN_B = [STARTED, *({"type": "CUSTOM", "name": "b", "value": i} for i in range(30)), FINISHED]


async def _cancelled(task: asyncio.Task[object]) -> None:
    task.cancel()
    with pytest.raises((LeaseLost, asyncio.CancelledError)):
        await task


@pytest.mark.cluster
async def test_a_vanished_producer_ends_its_run_lease_expired(kit: Kit, run_id: str) -> None:
    store = kit.store(lease=0.6)
    task = await frozen(store, run_id, RUN_A[:3])
    got = await asyncio.wait_for(collect(kit.replica(store, lease=0.6), run_id), 10)
    assert [e for _, e in got[:3]] == RUN_A[:3]
    assert [(i, e["type"]) for i, e in got[3:]] == [(4, "RUN_ERROR")]
    assert got[-1][1]["code"] == "LEASE_EXPIRED"
    assert "0.6 s" in got[-1][1]["message"]
    assert await collect(store, run_id) == got  # the same end for every reader
    await _cancelled(task)


async def test_a_vanished_producers_next_write_is_lease_lost(kit: Kit, run_id: str) -> None:
    store = kit.store(lease=0.6)
    gate = asyncio.Event()

    async def resumes():
        yield RUN_A[0]
        await gate.wait()
        yield RUN_A[1]

    task = await store.start(run_id, resumes())
    assert task is not None
    task.remove_done_callback(store._task_done)
    await read(store, run_id, 1)
    stop_heartbeat(run_id)
    got = await asyncio.wait_for(collect(store, run_id), 10)  # ended by its lease
    assert got[-1][1]["code"] == "LEASE_EXPIRED"
    gate.set()  # the producer wakes and writes
    with pytest.raises(LeaseLost):
        await task
    assert await collect(store, run_id) == got  # nothing of it after the end


async def test_a_vanished_producer_after_its_terminal_event_ends_it_finished(
    kit: Kit, run_id: str
) -> None:
    store = kit.store(lease=0.6)
    task = await frozen(store, run_id, RUN_A)  # every event, the end not written
    got = await asyncio.wait_for(collect(store, run_id), 10)
    assert [e for _, e in got] == RUN_A  # no RUN_ERROR after RUN_FINISHED
    assert await store.publish(run_id, RUN_B) == len(RUN_A)  # it has ended
    await _cancelled(task)


async def test_a_slow_producer_keeps_its_run(kit: Kit, run_id: str) -> None:
    """Its heartbeat renews the lease while it waits (minutes for a model)."""
    store = kit.store(lease=0.4)

    async def slow():
        yield RUN_A[0]
        await asyncio.sleep(1.2)  # three leases without an event
        for event in RUN_A[1:]:
            yield event

    task = await store.start(run_id, slow())
    got = await collect(kit.replica(store, lease=0.4), run_id)
    assert [e for _, e in got] == RUN_A
    assert task is not None
    assert await task == len(RUN_A)


@pytest.mark.cluster
async def test_a_takeover_without_replay_ends_the_old_run(kit: Kit, run_id: str) -> None:
    first = kit.store(lease=0.5)
    task = await frozen(first, run_id, RUN_A[:4])
    await asyncio.sleep(0.8)  # the lease lapses; nobody reads the run
    second = kit.replica(first, lease=0.5)
    with pytest.raises(RunAbandoned, match="replay=True"):
        await second.publish(run_id, RUN_B)
    got = [e for _, e in await collect(second, run_id)]
    assert got[:4] == RUN_A[:4]  # A's events, then A's end: nothing of B
    assert [e["type"] for e in got[4:]] == ["RUN_ERROR"]
    assert got[4]["code"] == "LEASE_EXPIRED"
    with pytest.raises(RunAbandoned):  # a retry is refused the same way
        await second.publish(run_id, RUN_B)
    with pytest.raises(RunAbandoned):
        await second.start(run_id, RUN_B, replay=True)  # too late: the run has ended
    await _cancelled(task)
    assert [e for _, e in await collect(second, run_id)] == got


@pytest.mark.cluster
async def test_a_takeover_with_replay_continues_the_run(kit: Kit, run_id: str) -> None:
    """The job-retry case: the producer replays the same run deterministically;
    the events stored keep their first write, the rest are stored once."""
    first = kit.store(lease=0.5)
    task = await frozen(first, run_id, RUN_A[:4])
    await asyncio.sleep(0.8)
    second = kit.replica(first, lease=0.5)
    retried = [dict(e, rerun=True) if i < 4 else e for i, e in enumerate(RUN_A)]
    reader = asyncio.ensure_future(collect(second, run_id))
    assert await second.publish(run_id, retried, replay=True) == len(RUN_A)
    assert [e for _, e in await reader] == RUN_A  # a reader across the takeover: no gap
    assert [e for _, e in await collect(second, run_id)] == RUN_A
    await _cancelled(task)
