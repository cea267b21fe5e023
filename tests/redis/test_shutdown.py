"""Shutdown always finishes: ``RunStore.aclose()`` returns within a bound, and
every task of the store ends once cancelled (what ``asyncio.run`` and a server
shutting down do to the tasks left), with readers, tails, folds and producers in
every state, against the real redis-server, answering or SIGSTOPped.

The states: a producer waiting on its source, one mid-append (a burst), one
claimed whose task has not run yet; readers blocked in the tails' ``XREAD``, in
the middle of a replay (between pages, a page read in flight), opening (their
first command queued), compact joiners mid-fold, an HTTP response streaming.
After ``aclose`` every reader has ended (``StoreUnavailable``: the store was
closed, or the run's end) and, when Redis answers, every produced run is ended
with ``RUN_ERROR`` ``CANCELLED`` for every reader.

Times are printed for the record (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agui_wire import PROTO_MEDIA_TYPE, decode
from agui_wire.errors import RunNotFound, StoreUnavailable
from agui_wire.redis import RunStore
from tests.redis.faults import stopped
from tests.runstore.kit import call
from tests.support.stores import Opened, awaiting, left_tasks

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
#: Seconds ``aclose`` may take, and its readers to end after it, whatever Redis
#: does: ``RunStore.aclose`` gives the runs' ends two round trips' deadlines (4 s).
ACLOSE_BOUND = 7.0


def tick(i: int, size: int = 0) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": "t", "value": "x" * size if size else i}


async def waiting(gate: asyncio.Event, ticks: int = 1) -> AsyncIterator[dict[str, Any]]:
    """A producer waiting on its source (a model call that does not answer)."""
    yield STARTED
    for i in range(ticks):
        yield tick(i)
    await gate.wait()
    yield FINISHED


async def burst() -> AsyncIterator[dict[str, Any]]:
    """A producer always mid-append: events as fast as they are stored."""
    yield STARTED
    i = 0
    while True:
        i += 1
        yield tick(i, 2000)
        if i % 64 == 0:
            await asyncio.sleep(0)


async def read_all(store: RunStore, run_id: str, **kwargs: Any) -> list[Any]:
    return [event async for _, event in store.subscribe(run_id, **kwargs)]


async def first_events(store: RunStore, run_id: str, n: int) -> None:
    got = 0
    async for _ in store.subscribe(run_id):
        got += 1
        if got == n:
            return


async def slow_read(store: RunStore, run_id: str) -> list[Any]:
    """A replay read slowly: the reader sits between pages, the next one in flight."""
    got = []
    async for _, event in store.subscribe(run_id):
        got.append(event)
        if len(got) % 100 == 0:
            await asyncio.sleep(0.01)
    return got


async def ended(store: RunStore, run_id: str) -> dict[str, Any]:
    """The run's last event, as a new reader gets it."""
    events = await asyncio.wait_for(read_all(store, run_id), 10)
    return events[-1]


async def outcome(task: asyncio.Future[Any]) -> str:
    try:
        result = await task
    except StoreUnavailable as exc:
        return f"StoreUnavailable: {exc.reason}"
    except asyncio.CancelledError:
        return "cancelled"
    if isinstance(result, tuple):  # an HTTP response
        start, bodies = result
        events = decode(b"".join(bodies), PROTO_MEDIA_TYPE)
        if events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):  # the client resumes
            return f"HTTP {start['status']}, {len(events)} events and no end (to resume)"
        return f"HTTP {start['status']}, {len(events)} events, the last {events[-1]['type']}"
    if isinstance(result, list):
        return f"{len(result)} events, the last {result[-1]['type'] if result else None}"
    return repr(result)


async def all_end(tasks: dict[str, asyncio.Future[Any]], bound: float) -> dict[str, str]:
    """Each task's outcome and when it ended, all within ``bound`` s (else the test
    fails naming what the survivors await)."""
    t0 = time.monotonic()
    took: dict[str, float] = {}
    for name, task in tasks.items():
        task.add_done_callback(lambda _, name=name: took.setdefault(name, time.monotonic() - t0))
    _, pending = await asyncio.wait(tasks.values(), timeout=bound)
    if pending:
        names = [name for name, task in tasks.items() if task in pending]
        stacks = "\n".join(awaiting(task) for task in pending)  # type: ignore[arg-type]
        for task in pending:
            task.cancel()
        pytest.fail(f"still running {bound:g} s after aclose: {names}\n{stacks}", pytrace=False)
    return {name: f"{await outcome(t)} (+{took.get(name, 0):.2f} s)" for name, t in tasks.items()}


async def test_every_task_ends_when_cancelled_at_once(opened: Opened, redis_server, run_id) -> None:
    """``asyncio.run``'s shutdown: every task cancelled in one go, here just after a
    reader's first command was queued (its command lane created, not yet running)
    while the producer waits on its source. The producer's cancellation stores its
    ``RUN_ERROR`` through the command lanes: it must not wait for the lane that was
    cancelled before it ran."""

    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r))
    gate = asyncio.Event()
    producer = await store.start(run_id, waiting(gate))
    assert producer is not None
    await first_events(store, run_id, 2)  # stored: the producer waits on its source
    reader = asyncio.ensure_future(read_all(store, run_id))
    await asyncio.sleep(0)  # the reader's first command is queued
    others = left_tasks()  # (not the test runner's)
    for task in others:
        task.cancel()
    _, pending = await asyncio.wait(others, timeout=10)
    assert not pending, "\n".join(awaiting(t) for t in pending)  # type: ignore[arg-type]
    assert reader.cancelled()
    assert producer.cancelled()
    last = await ended(opened.store(RunStore(r)), run_id)
    assert (last["type"], last["code"]) == ("RUN_ERROR", "CANCELLED")


async def test_a_reader_attaching_at_the_close_ends(opened: Opened, redis_server, run_id) -> None:
    """``aclose`` in the very step a reader attached to the tails (its lane created,
    not yet running): the reader ends (``StoreUnavailable``), it does not wait for
    a lane that never ran, and a later reader of the store is not placed on it."""

    r = opened.redis(redis_server.url)
    producing = opened.store(RunStore(r))
    gate = asyncio.Event()
    assert await producing.start(run_id, waiting(gate, ticks=0)) is not None
    await first_events(producing, run_id, 1)
    store = opened.store(RunStore(r))  # a replica of its own: no lane yet
    reader = store.subscribe(run_id)
    assert (await reader.__anext__())[1] == STARTED  # the stored part, one page
    attaching = asyncio.ensure_future(reader.__anext__())
    await asyncio.sleep(0)  # it attached (a lane for the run) and waits for events
    await store.aclose()  # in this step (``wait_for`` would run it in a task of its own)
    with pytest.raises(StoreUnavailable, match="the store was closed"):
        await asyncio.wait_for(attaching, ACLOSE_BOUND)
    await reader.aclose()


@pytest.mark.parametrize("redis_state", ["answering", "stalled"])
async def test_aclose_returns_within_a_bound_in_every_state(
    opened: Opened, fresh_redis, redis_state
) -> None:
    server = fresh_redis()
    stalled = redis_state == "stalled"

    with anyio.fail_after(120):
        r = opened.redis(server.url)
        store = opened.store(RunStore(r, lease=2))
        # a finished run of 20,000 events, for replays and folds
        long_events = [STARTED, *(tick(i) for i in range(20_000)), FINISHED]
        assert await store.publish("long", long_events) == len(long_events)
        gate = asyncio.Event()
        tasks: dict[str, asyncio.Future[Any]] = {}
        for name, run_id, events in [
            ("producer waiting", "quiet", waiting(gate)),
            ("producer mid-append", "burst", burst()),
        ]:
            task = await store.start(run_id, events)
            assert task is not None
            tasks[name] = task
        for i in range(2):  # blocked in the tails' XREAD
            tasks[f"tail {i}"] = asyncio.ensure_future(read_all(store, "quiet"))
        tasks["tail over HTTP"] = asyncio.ensure_future(
            call(store.response("quiet"), headers=[("accept", PROTO_MEDIA_TYPE)])
        )
        tasks["tail of the burst"] = asyncio.ensure_future(read_all(store, "burst"))
        tasks["slow replay"] = asyncio.ensure_future(slow_read(store, "long"))
        await asyncio.sleep(0.5)  # attached, replaying, appending
        for i in range(2):
            tasks[f"fold {i}"] = asyncio.ensure_future(read_all(store, "long", compact=True))
        await asyncio.sleep(0.01)  # folding
        # at the very moment of the close: a producer claimed whose task has not run,
        # a reader whose task has not run; Redis stalled in the same step
        claimed = await store.start("claimed", waiting(gate))
        assert claimed is not None
        tasks["producer claimed"] = claimed
        tasks["opening"] = asyncio.ensure_future(read_all(store, "quiet"))
        with contextlib.ExitStack() as stack:
            if stalled:
                stack.enter_context(stopped(server, 60))
            t0 = time.monotonic()
            await store.aclose()  # in this step (``wait_for`` would give the tasks a step)
            closed = time.monotonic() - t0
            outcomes = await all_end(tasks, ACLOSE_BOUND)
            print(f"\nRedis {redis_state}: aclose {closed:.2f} s, then all ended:")
            for name, said in outcomes.items():
                print(f"  {name}: {said}")
        assert closed < ACLOSE_BOUND
        for name, said in outcomes.items():
            if name.startswith("producer"):
                assert said.startswith("cancelled"), name
            elif name == "tail over HTTP":  # StoreUnavailable, as a client sees it
                assert said.startswith("HTTP 200, 2 events and no end"), said
            elif stalled:  # (a loaded machine may stall Redis before SIGSTOP does)
                assert "StoreUnavailable" in said or "events, the last RUN_" in said, name
            else:  # told the store closed, or the run's end (a replay that finished)
                assert "the store was closed" in said or "events, the last RUN_" in said, name
        # every produced run ended for every reader: by the producer's RUN_ERROR, or,
        # Redis stalled at the close, by its lease (unless Redis ran the RUN_ERROR sent
        # before the store gave up, once it was resumed: a lost reply)
        for run_id in ("quiet", "burst", "claimed"):
            try:
                last = await ended(opened.store(RunStore(r, lease=2)), run_id)
            except RunNotFound:  # nothing of it ever stored, its lease gone: no run
                assert stalled
                assert run_id == "claimed"
                continue
            assert last["type"] == "RUN_ERROR", run_id
            assert last["code"] in (("LEASE_EXPIRED", "CANCELLED") if stalled else ("CANCELLED",))
        with pytest.raises(StoreUnavailable, match="the store was closed"):
            await store.publish("after", [STARTED])
