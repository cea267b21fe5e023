"""Faults of one master of a real Redis Cluster (3 masters with a replica each,
tests/redis/harness.py) under live runs on every master.

* A master stalled (SIGSTOP) longer than the lease (and ``reconnect``), with no
  failover within the stall: the producers and readers of its runs get
  ``StoreUnavailable`` within ``lease + 2 s``; the runs on the other masters carry
  on, every event once, never held up by the stalled one.
* A master SIGKILLed mid-run, its replica promoted, after the replica fell behind
  (SIGSTOPped and its link cut for half a second, so the master acknowledged
  appends the replica never got: the loss asynchronous replication allows, made
  certain): with
  ``replica_acks=1`` no acknowledged event is lost, every run completes for its
  producer and its readers, trial after trial; without it the runs that lost
  events are ``RunLost`` to their producers and to readers on another replica
  within seconds of the kill (the lease is 30 s), each reader's events a prefix of
  the run, never a gap or another event under an id it read.

Times are printed for the record (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agui_wire.errors import RunLost, StoreUnavailable
from agui_wire.redis import RunStore
from agui_wire.redis._keys import key_slot
from tests.redis.faults import stopped
from tests.redis.harness import RedisClusterNodes
from tests.runstore.kit import paced, ticks
from tests.support.stores import Opened

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


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


async def test_a_stalled_master_fails_only_its_own_runs(
    opened: Opened, slow_failover_cluster, run_id
) -> None:
    cluster = slow_failover_cluster
    lease, stall = 1.5, 8.0  # a stall longer than the lease (its runs fail) and reconnect
    events = ticks(200)  # 20 ms apart: about 4 s, within the stall

    store = opened.store(RunStore(opened.cluster(cluster.url), lease=lease, reconnect=3))
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


@pytest.fixture(scope="module")
def failover_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterNodes]:
    """A cluster whose replicas take over 1 s after their master went silent; the
    trials take turns on it (a killed master comes back as a replica)."""
    cluster = RedisClusterNodes(tmp_path_factory.mktemp("failover")).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def replica_of(cluster: RedisClusterNodes, master: int) -> int:
    lines = [line.split() for line in cluster.info(master, "CLUSTER NODES").splitlines()]
    ids = {int(f[1].split("@")[0].rsplit(":", 1)[1]): f[0] for f in lines if f}
    return next(
        int(f[1].split("@")[0].rsplit(":", 1)[1])
        for f in lines
        if f and "slave" in f[2] and f[3] == ids[master] and "fail" not in f[2]
    )


def role(cluster: RedisClusterNodes, port: int) -> str:
    for line in cluster.info(port, "INFO replication").splitlines():
        if line.startswith("role:"):
            return line.split(":", 1)[1].strip()
    return ""


def revive(cluster: RedisClusterNodes, port: int) -> None:
    """Start a killed node again as it was started: it rejoins as a replica of the
    master that took its slots, and syncs from it."""
    process = cluster.processes[port]
    cluster.processes[port] = subprocess.Popen(
        process.args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )


async def failover_trial(
    opened: Opened, cluster: RedisClusterNodes, acks: int, trial: int
) -> tuple[list[Any], list[Any], dict[str, float]]:
    """Runs on one master, a reader of each on another replica; the master's
    replica frozen and cut off for 0.5 s, the master SIGKILLed, the replica thawed and elected,
    the old master revived as its replica. Returns what each producer returned,
    what each reader read (its events, then the exception that ended it), and
    when (seconds after the kill)."""
    events = ticks(400)  # 5 ms apart: about 2 s
    # the defaults (lease 30 s), and replica_acks when asked for
    store = opened.store(
        RunStore(opened.cluster(cluster.url), **({"replica_acks": acks} if acks else {}))
    )
    readers_store = opened.store(RunStore(opened.cluster(cluster.url)))
    layout = store._settings.layout
    victim = cluster.master_of(key_slot("{" + layout.tags[0] + "}"))
    replica = replica_of(cluster, victim)
    ids: list[str] = []
    n = 0
    while len(ids) < 8:  # runs whose shard lives on the victim
        candidate = f"fo-{acks}-{trial}-{n}"
        n += 1
        if cluster.master_of(key_slot(store.stream_key(candidate))) == victim:
            ids.append(candidate)
    tasks = []
    for i in ids:
        task = await store.start(i, paced(events, 0.005))
        assert task is not None
        task.remove_done_callback(store._task_done)
        tasks.append(task)
    killed = 0.0
    took: dict[str, float] = {}

    async def read(i: str) -> list[Any]:
        got: list[Any] = []
        try:
            async for item in readers_store.subscribe(i):
                got.append(item)
        except Exception as exc:
            got.append(exc)
        took[f"reader {ids.index(i)}"] = time.monotonic() - killed
        return got

    readers = [asyncio.ensure_future(read(i)) for i in ids]
    await asyncio.sleep(0.5)
    frozen = cluster.processes[replica]
    frozen.send_signal(signal.SIGSTOP)  # (it cannot reconnect and catch up)
    try:
        # cut the replication link: what the kernel buffered for the frozen replica
        # reaches it on thaw, what the master acknowledges from now on never does
        await asyncio.to_thread(cluster.info, victim, "CLIENT KILL TYPE replica")
        await asyncio.sleep(0.5)  # the master acknowledges appends the replica lacks
        killed = time.monotonic()
        cluster.kill(victim)
    finally:
        frozen.send_signal(signal.SIGCONT)
    while role(cluster, replica) != "master":  # elected
        await asyncio.sleep(0.05)
    elected = time.monotonic() - killed
    revive(cluster, victim)  # a replica again: WAIT has one to count
    produced = await asyncio.gather(*tasks, return_exceptions=True)
    read_ = await asyncio.wait_for(asyncio.gather(*readers), 40)
    await asyncio.to_thread(cluster.wait_ok)
    took["elected"] = elected
    await store.aclose()  # (before the next trial; ``opened`` closes the clients)
    await readers_store.aclose()
    return produced, read_, took


async def test_with_replica_acks_a_killed_master_loses_no_acknowledged_event(
    opened: Opened, failover_cluster
) -> None:
    events = ticks(400)
    outcomes = []
    for trial in range(3):
        produced, read, took = await failover_trial(opened, failover_cluster, 1, trial)
        for result in produced:
            assert result == len(events), result  # every event stored, none lost
        for got in read:
            assert got == list(enumerate(events, 1)), got[-1:]
        outcomes.append(f"{len(produced)} runs complete (elected after {took['elected']:.1f} s)")
    print("\nreplica_acks=1, master SIGKILLed behind a frozen replica: " + "; ".join(outcomes))


async def test_without_replica_acks_lost_runs_are_run_lost_within_seconds(
    opened: Opened, failover_cluster
) -> None:
    events = ticks(400)
    lost_runs = 0
    learnt: list[float] = []
    for trial in range(2):
        produced, read, took = await failover_trial(opened, failover_cluster, 0, trial)
        for i, (result, got) in enumerate(zip(produced, read, strict=True)):
            items = [item for item in got if not isinstance(item, BaseException)]
            assert items == list(enumerate(events, 1))[: len(items)]  # a prefix: no gap
            if result == len(events):
                assert items == list(enumerate(events, 1))
                continue
            assert isinstance(result, RunLost), result
            lost_runs += 1
            # the reader learnt it: RunLost, or (it had read every event sent) the
            # RUN_ERROR the producer ended the run with
            ending = got[-1]
            if not isinstance(ending, RunLost):
                assert ending[1]["type"] == "RUN_ERROR"
                assert ending[1]["code"] == "RUN_LOST"
            learnt.append(took[f"reader {i}"])
    assert lost_runs, "no run lost an acknowledged event: the trial proves nothing"
    print(
        f"\nreplica_acks=0: {lost_runs} runs lost acknowledged events; their readers "
        f"learnt it {min(learnt):.1f}-{max(learnt):.1f} s after the kill (lease 30 s)"
    )
    assert max(learnt) < 10
