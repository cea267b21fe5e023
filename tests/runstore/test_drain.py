"""``RunStore.drain``, on every store: a shutdown that does not cut runs. A draining
store takes no new run (``StoreDraining``, a ``StoreUnavailable``; HTTP 503 with
``Retry-After``); runs that end within the grace end as usual and the drain
returns then; a run still live after it is let go: Redis releases its lease for a
replaying producer elsewhere (tests/redis/test_drain.py follows the takeover), a
store in memory has no other replica and ends it with ``RUN_ERROR`` (code
``CANCELLED``); either way its producer raises ``StoreDraining`` (a ``start`` task
ends with it, logged at INFO, not as a failure) and the store's readers end;
``drain_on_signal`` drains on the signal, then runs the handler installed before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from typing import Any

import pytest

from agui_wire.errors import StoreDraining, StoreUnavailable
from tests.redis.app import token_run
from tests.runstore.kit import Kit, call, collect, paced, read

pytestmark = pytest.mark.anyio


async def test_a_draining_store_takes_no_new_run(kit: Kit, run_id: str) -> None:
    store = kit.store()
    await store.publish(f"{run_id}-done", token_run("t", run_id, 3))
    ran: list[str] = []

    async def agent() -> Any:
        ran.append("started")
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": run_id}

    took = time.monotonic()
    await store.drain(5)  # nothing live: at once
    assert time.monotonic() - took < 1
    assert store.draining
    for replay in (False, True):
        for call_it in (store.publish, store.start):
            with pytest.raises(StoreDraining, match="draining") as caught:
                await call_it(run_id, agent(), replay=replay)
            assert isinstance(caught.value, StoreUnavailable)  # what retries handle
    assert ran == []  # closed unstarted
    start, bodies = await call(store.response(f"{run_id}-done"))
    assert start["status"] == 503  # its readers went: retry elsewhere
    assert dict(start["headers"])[b"retry-after"] == b"1"
    assert b"draining" in b"".join(bodies)
    with pytest.raises(StoreDraining):
        await collect(store, f"{run_id}-done")
    await store.drain(5)  # again: the same drain
    with pytest.raises(ValueError, match="grace"):
        await kit.store().drain(-1)


async def test_runs_that_end_within_the_grace_end_as_usual(kit: Kit, run_id: str) -> None:
    store = kit.store()
    expected = token_run("t", run_id, 30)
    task = await store.start(run_id, paced(expected, 0.01))
    assert task is not None
    reader = asyncio.ensure_future(collect(kit.replica(store), run_id))
    await read(store, run_id, 2)
    took = time.monotonic()
    await store.drain(10)
    assert time.monotonic() - took < 3  # when the run ended, not after the grace
    assert task.result() == len(expected)
    got = await asyncio.wait_for(reader, 5)
    assert [e for _, e in got] == expected


@pytest.mark.parametrize("how", ["start", "publish"])
async def test_a_run_live_after_the_grace_is_let_go(
    kit: Kit, run_id: str, how: str, caplog: Any
) -> None:
    caplog.set_level(logging.INFO)
    store = kit.store(lease=2)
    expected = token_run("t", run_id, 500)
    producing: Any
    if how == "start":
        producing = await store.start(run_id, paced(expected, 0.01))
    else:
        producing = asyncio.ensure_future(store.publish(run_id, paced(expected, 0.01)))
    await asyncio.sleep(0.05)  # claimed
    await read(store, run_id, 20)
    here = asyncio.ensure_future(collect(store, run_id))
    await asyncio.sleep(0.05)  # following the run
    took = time.monotonic()
    await store.drain(0.1)
    assert time.monotonic() - took < 0.1 + 2
    with pytest.raises(StoreDraining):
        await producing
    if kit.redis:
        with pytest.raises(StoreDraining):  # its reader: ended, to resume elsewhere
            await here
        # the run is not ended: released for a producer elsewhere (replay=True)
        other = kit.store(lease=2)
        assert (await other.publish(run_id, paced(expected, 0), replay=True)) == len(expected)
        assert [e for _, e in await collect(other, run_id)] == expected
    else:  # one process: nobody to hand it to, the run ends as a cancelled one
        got = await here
        assert got[-1][1]["type"] == "RUN_ERROR"
        assert got[-1][1]["code"] == "CANCELLED"
        assert [e for _, e in got[:-1]] == expected[: len(got) - 1]
    if how == "start":
        let_go = [r for r in caplog.records if "handed over" in r.getMessage()]
        assert let_go
        assert {r.levelno for r in let_go} == {logging.INFO}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_drain_then_aclose_return_within_a_bound(kit: Kit, run_id: str) -> None:
    store = kit.store(lease=2)
    gate = asyncio.Event()

    async def waits() -> Any:
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": run_id}
        await gate.wait()

    for n in range(5):
        await store.start(f"{run_id}-{n}", waits())
    readers = [asyncio.ensure_future(collect(store, f"{run_id}-{n}")) for n in range(5)]
    await read(store, f"{run_id}-4", 1)
    took = time.monotonic()
    await asyncio.wait_for(store.drain(0.2), 10)
    await asyncio.wait_for(store.aclose(), 10)
    assert time.monotonic() - took < 10
    ended = await asyncio.wait_for(asyncio.gather(*readers, return_exceptions=True), 5)
    for reader in ended:  # drained, closed, or the run's end
        assert isinstance(reader, (StoreUnavailable, list)), reader


async def test_drain_on_signal_drains_then_runs_the_handler_before(kit: Kit) -> None:
    store = kit.store()
    seen: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(signum))
    try:
        store.drain_on_signal(0, signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGUSR1)
        for _ in range(200):
            if store.draining and seen:
                break
            await asyncio.sleep(0.01)
        assert store.draining
        assert seen == [signal.SIGUSR1]  # the handler installed before ran too
        await store.aclose()  # puts the handler before back
        assert signal.getsignal(signal.SIGUSR1) is not None
        os.kill(os.getpid(), signal.SIGUSR1)
        await asyncio.sleep(0.05)
        assert seen == [signal.SIGUSR1, signal.SIGUSR1]
    finally:
        signal.signal(signal.SIGUSR1, previous)


async def test_a_compact_joiner_waiting_for_its_fold_stops_when_the_store_drains(
    kit: Kit, run_id: str
) -> None:
    """A joiner awaiting a fold is a reader like the others: the drain ends it with
    ``StoreDraining`` (it resumes elsewhere) at once, and the fold stops; it does not
    wait for the fold and then learn the store closed."""
    store = kit.store()
    await store.publish(run_id, token_run("t", run_id, 2_000))
    folds = store._reading.folds
    stored, paged = folds.stored, asyncio.Event()

    class Slow:  # the fold's pages: the first, then none until the test is over
        def __getattr__(self, name: str) -> Any:
            return getattr(stored, name)

        async def pages(self, *args: Any, **kwargs: Any) -> Any:
            async for page in stored.pages(*args, **kwargs):
                yield page
                paged.set()
                await asyncio.Event().wait()

    folds.stored = Slow()
    joiner = asyncio.ensure_future(collect(store, run_id, compact=True))
    await asyncio.wait_for(paged.wait(), 5)
    took = time.monotonic()
    await store.drain(0)
    with pytest.raises(StoreDraining):
        await asyncio.wait_for(joiner, 5)
    assert time.monotonic() - took < 1
    assert all(future.done() for future in folds.running.values())
