"""``agui_wire.redis._local`` on a real redis-server: a reader on the replica that
produces its run is fed by the producer, each append once Redis acknowledged it,
with no read from Redis; it reads what a reader on another replica reads from
the stream, event for event, id for id; one that joins mid-run reads the gap
from the stream first; whatever ends the producer other than the run's end
(a failure, a lost lease, the store closing) reaches it as it reaches every
other reader; the store draining ends it with ``StoreDraining``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.errors import StoreDraining, StoreUnavailable
from agui_wire.redis import RunStore
from tests.redis.harness import RedisServer
from tests.runstore.kit import FINISHED, STARTED, collect, paced, ticks
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio


async def test_a_reader_here_is_fed_by_the_producer_and_reads_what_others_read(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    here = opened.store(RunStore(opened.redis(redis_server.url)))
    elsewhere = opened.store(RunStore(opened.redis(redis_server.url)))
    admin = opened.redis(redis_server.url)
    gate = asyncio.Event()

    async def events() -> Any:
        yield STARTED
        await gate.wait()  # both readers attached
        async for event in paced(ticks(40)[1:], 0.002):
            yield event

    task = await here.start(run_id, events())
    readers = [asyncio.ensure_future(collect(s, run_id)) for s in (here, elsewhere)]
    stream = here._settings.layout.keys(None, run_id).stream

    def attached() -> bool:  # (each reader's open waits for a round trip first)
        followers = here._reading.local.runs.get(stream)
        local = (followers is not None and bool(followers.follows)) or here._reading.tails.runs
        return bool(local and elsewhere._reading.tails.runs)

    for _ in range(400):
        if attached():
            break
        await asyncio.sleep(0.005)
    followers = here._reading.local.runs[stream]
    assert len(followers.follows) == 1  # the local reader follows the producer
    assert not here._reading.tails.runs  # and reads no tail
    gate.set()
    local, remote = await asyncio.gather(*readers)
    assert await task == 42
    assert [(str(i), e) for i, e in local] == [(str(i), e) for i, e in remote]
    assert [e for _, e in local] == ticks(40)
    assert not here._reading.local.runs  # the run ended: nothing left to follow
    stats = await admin.info("commandstats")
    assert "cmdstat_xread" in stats  # the reader elsewhere read the stream, ...
    assert not here._reading.tails.runs  # ... the one here never did


async def test_a_reader_joining_mid_run_reads_the_gap_then_follows(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    store = opened.store(RunStore(opened.redis(redis_server.url)))
    gate = asyncio.Event()

    async def events() -> Any:
        for event in ticks(30)[:21]:
            yield event
        await gate.wait()
        for event in ticks(30)[21:]:
            yield event

    task = await store.start(run_id, events())
    keys = store._settings.layout.keys(None, run_id)
    while getattr(store._reading.local.runs.get(keys.stream), "stored", 0) < 21:
        await asyncio.sleep(0.005)
    reader = asyncio.ensure_future(collect(store, run_id, after=5))
    while not store._reading.local.runs[keys.stream].follows:
        await asyncio.sleep(0.005)
    gate.set()
    got = await reader
    await task
    assert [int(i) for i, _ in got] == list(range(6, 33))
    assert [e for _, e in got] == ticks(30)[5:]


async def test_a_producer_that_fails_hands_its_readers_the_runs_error_from_the_stream(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    store = opened.store(RunStore(opened.redis(redis_server.url)))
    gate = asyncio.Event()

    async def events() -> Any:
        yield STARTED
        await gate.wait()
        yield {"type": "CUSTOM", "name": "t", "value": 1}
        raise RuntimeError("the agent broke")

    task = await store.start(run_id, events())
    reader = asyncio.ensure_future(collect(store, run_id))
    while not store._reading.local.runs.get(store._settings.layout.keys(None, run_id).stream):
        await asyncio.sleep(0.005)
    gate.set()
    with pytest.raises(RuntimeError, match="agent broke"):
        await task
    got = [e for _, e in await reader]
    assert [e["type"] for e in got] == ["RUN_STARTED", "CUSTOM", "RUN_ERROR"]
    elsewhere = opened.store(RunStore(opened.redis(redis_server.url)))
    assert got == [e for _, e in await collect(elsewhere, run_id)]  # as the stream holds it


async def test_drain_and_close_end_the_local_readers(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    for ending, error in ((lambda s: s.drain(0.1), StoreDraining), (None, StoreUnavailable)):
        store = RunStore(opened.redis(redis_server.url))
        run = f"{run_id}-{error.__name__}"

        async def forever() -> Any:
            yield STARTED
            await asyncio.Event().wait()
            yield FINISHED  # (never)

        await store.start(run, forever())
        reader = asyncio.ensure_future(collect(store, run))
        while (
            not store._reading.local.runs
            or not next(iter(store._reading.local.runs.values())).follows
        ):
            await asyncio.sleep(0.005)
        if ending is not None:
            await ending(store)
        await asyncio.wait_for(store.aclose(), 10)
        with pytest.raises(error):
            await asyncio.wait_for(reader, 10)


async def test_a_resume_past_what_the_producer_has_heard_of_is_not_past_the_end(
    opened: Opened, redis_server: RedisServer, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis holds event 5 before its producer reads the reply that says so: a client
    that read event 5 elsewhere and resumes here reads on from 6, not
    ``ResumePastEnd`` (the run's head is Redis's, not the producer's)."""
    from agui_wire.redis._producer import Producer

    store = opened.store(RunStore(opened.redis(redis_server.url)))
    admin = opened.redis(redis_server.url)
    held: list[Any] = []
    pending: list[asyncio.Future[None]] = []
    release = asyncio.Event()
    real = Producer.replied

    def late(self: Producer, reply: Any) -> None:
        if self.appending is not None and self.appending.first == 5 and not release.is_set():
            held.append(reply)  # Redis stored event 5; its reply is read later

            async def later() -> None:
                await release.wait()
                real(self, held[0])

            pending.append(asyncio.ensure_future(later()))
            return
        real(self, reply)

    monkeypatch.setattr(Producer, "replied", late)
    task = await store.start(run_id, paced(ticks(8), 0.01))
    while await admin.xlen(store.stream_key(run_id)) < 5 or not held:
        await asyncio.sleep(0.005)
    reader = asyncio.ensure_future(collect(store, run_id, after=5))
    await asyncio.sleep(0.05)
    release.set()
    got = await reader
    await task
    assert [int(i) for i, _ in got] == list(range(6, 11))


async def test_a_reader_of_a_run_claimed_here_opens_with_no_read_from_redis(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """The request that starts a run streams it back: its reader opens on what the
    run's producer knows (claimed, live, what Redis acknowledged), not on a read of
    the stream's head and the lease, two round trips per reader at a herd's start."""
    store = opened.store(RunStore(opened.redis(redis_server.url)))
    admin = opened.redis(redis_server.url)
    gate = asyncio.Event()

    async def events() -> Any:
        await gate.wait()
        async for event in paced(ticks(3), 0.002):
            yield event

    task = await store.start(run_id, events())
    await admin.config_resetstat()
    reader = asyncio.ensure_future(collect(store, run_id))  # before the task ran
    stream = store.stream_key(run_id)
    for _ in range(400):
        followers = store._reading.local.runs.get(stream)
        if followers is not None and followers.follows:
            break
        await asyncio.sleep(0.005)
    stats = await admin.info("commandstats")
    assert {"cmdstat_xrevrange", "cmdstat_xrange", "cmdstat_get"}.isdisjoint(stats)
    gate.set()
    got = await reader
    assert await task == 5
    assert [e for _, e in got] == ticks(3)
    assert [str(i) for i, _ in got] == [str(i) for i, _ in await collect(store, run_id)]


async def test_a_reader_here_of_a_start_cancelled_before_it_ran_reads_its_end(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """A reader that opened on the producer's claim (before its task ran) is told the
    run's end when the task is cancelled before it runs (a shutdown in that step):
    from the stream, as a reader elsewhere is."""
    store = opened.store(RunStore(opened.redis(redis_server.url)))
    task = await store.start(run_id, paced(ticks(3), 0.002))
    assert task is not None
    reader = asyncio.ensure_future(collect(store, run_id))
    task.cancel()  # before its first step
    got = await asyncio.wait_for(reader, 10)
    assert task.cancelled()
    assert [(e["type"], e.get("code")) for _, e in got] == [("RUN_ERROR", "CANCELLED")]
