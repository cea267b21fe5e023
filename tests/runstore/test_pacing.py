"""``agui_wire._runstore.pacing``: a background job (a fold) takes at most ``SHARE`` of
the event loop while the loop has other work, and all of it when it has none; it
gives the loop back after every step either way. Its time is its steps': what it
waits for (its next page) is neither its time nor the others'."""

from __future__ import annotations

import asyncio
import time
import types
from typing import Any

import pytest

from agui_wire import memory
from agui_wire._runstore import pacing
from agui_wire._runstore.pacing import LIVE, SHARE, SLICE, STEP, Pace, pause, size
from tests.redis.app import token_run


def test_a_job_alone_goes_on() -> None:
    assert pause(SLICE, 0.0) == 0.0
    assert pause(SLICE, LIVE * SLICE * 0.9) == 0.0  # an empty turn's cost is not a run


def test_beside_live_runs_a_job_takes_its_share() -> None:
    for others in (LIVE * SLICE * 2, SLICE / 10, SLICE):
        sleep = pause(SLICE, others)
        assert sleep > 0
        assert SLICE / (SLICE + others + sleep) == pytest.approx(SHARE)


def test_others_that_took_more_than_their_share_need_no_sleep() -> None:
    assert pause(SLICE, SLICE * (1 - SHARE) / SHARE * 2) == 0.0


@pytest.mark.anyio
async def test_a_pace_sleeps_only_while_others_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job of steps of ~0.1 ms: alone it does not sleep; beside a task that works
    as long as the job on every turn, it sleeps what the rule asks, so it has about
    ``SHARE`` of the loop's time."""
    slept: list[float] = []
    real = pause

    def spy(busy: float, others: float) -> float:
        sleep = real(busy, others)
        slept.append(sleep)
        return sleep

    monkeypatch.setattr(pacing, "pause", spy)

    async def job(steps: int) -> None:
        pace = Pace()
        for _ in range(steps):
            work(0.0001)
            await pace.turn()

    stop = asyncio.Event()

    async def other() -> None:
        while not stop.is_set():
            work(0.0001)
            await asyncio.sleep(0)

    await job(200)
    alone = list(slept)
    slept.clear()
    beside = asyncio.ensure_future(other())
    started = time.perf_counter()
    await job(200)
    took = time.perf_counter() - started
    stop.set()
    await beside
    paced = 200 * 0.0001 * (1 - SHARE) / SHARE  # what the rule sleeps beside busy others
    assert alone  # a slice is looked at alone too, and (but for a turn the machine
    assert sum(alone) < paced / 2  # preempted, which looks like others' work) left
    assert sum(slept) > 0
    # the job's 20 ms of work and the other's as much took at least three times the
    # job's (taking turns alone they take twice): the job's share, a third at most
    assert took >= 3 * 200 * 0.0001


class Meter:
    """The CPU time (this thread's) of one coroutine's own steps, as its task runs
    it: what it waits for, and what runs meanwhile, is not counted."""

    def __init__(self) -> None:
        self.cpu = 0.0

    @types.coroutine
    def run(self, coro: Any) -> Any:
        value, error = None, None
        while True:
            start = time.thread_time()
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                self.cpu += time.thread_time() - start
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # (a cancellation: to the coroutine)
                value, error = None, exc


def work(seconds: float) -> None:
    """``seconds`` of this thread's CPU time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


@pytest.mark.anyio
async def test_what_a_job_waits_for_is_not_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job of 100 steps of 0.1 ms, each followed by a wait for something another
    task hands it after 0.3 ms of its own work (as a reply another task reads):
    the slices count the job's 10 ms of steps, not the 40 ms that passed between its
    turns, and so it sleeps for its own work only."""
    busy: list[float] = []
    real = pause

    def spy(slice_busy: float, others: float) -> float:
        busy.append(slice_busy)
        return real(slice_busy, others)

    monkeypatch.setattr(pacing, "pause", spy)
    loop = asyncio.get_running_loop()

    async def reply() -> None:
        await asyncio.sleep(0)
        work(0.0003)

    pace = Pace()
    for _ in range(100):
        work(0.0001)
        await pace.turn()
        await pace.wait(loop.create_task(reply()))
    assert 0.008 <= sum(busy) <= 0.015  # 10 ms of steps in the slices looked at


async def fold_beside_a_busy_loop(
    monkeypatch: pytest.MonkeyPatch, events: int, cost: float = 0.0
) -> tuple[float, list[float]]:
    """A compact joiner of a run of ``events`` text deltas (the store in memory:
    the fold's waits are turns of the loop, nothing to read), each costing the fold
    ``cost`` s more than it does, beside a task that would take the loop whenever it
    can (0.05 ms of work a turn): the fold's own CPU time over the time it took, and
    the CPU time the busy task waited between two of its turns, each time."""
    from agui_wire._runstore import folds

    meter = Meter()
    real = folds.Folds._fold
    real_feed = folds.Compactor.feed

    async def _fold(self: Any, keys: Any) -> Any:
        return await meter.run(real(self, keys))

    def feed(self: Any, event: Any) -> None:
        work(cost)
        real_feed(self, event)

    store = memory.RunStore()
    await store.publish("long", token_run("t", "long", events, size=4))
    monkeypatch.setattr(folds.Folds, "_fold", _fold)
    if cost:
        monkeypatch.setattr(folds.Compactor, "feed", feed)
    stop = asyncio.Event()
    waited: list[float] = []

    async def busy() -> None:
        while not stop.is_set():
            work(0.00005)
            before = time.thread_time()
            await asyncio.sleep(0)
            waited.append(time.thread_time() - before)

    other = asyncio.ensure_future(busy())
    started = time.perf_counter()
    got = [event async for _, event in store.subscribe("long", compact=True)]
    took = time.perf_counter() - started
    stop.set()
    await other
    await store.aclose()
    assert [e["type"] for e in got] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    return meter.cpu / took, waited


@pytest.mark.anyio
async def test_a_fold_beside_a_busy_loop_takes_its_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compact joiner of a long run beside a busy loop: the fold's own steps take
    about ``SHARE`` of the time it takes, where taking turns would give it nearly
    half."""
    share, _ = await fold_beside_a_busy_loop(monkeypatch, 50_000)
    assert share <= 1.4 * SHARE


@pytest.mark.anyio
async def test_a_fold_of_costly_events_steps_by_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events that cost a fold ten times what a text delta costs with the C decoder
    (~30 us: the pure decoder's, or larger events): its steps are sized by time,
    ``STEP``, not by count (``FEED_STEP`` of them would hold the loop ~2 ms a turn,
    and the busy loop's one turn a step would look like an idle loop's), so the
    busy task waits about a step between its turns and the fold takes its share."""
    share, waited = await fold_beside_a_busy_loop(monkeypatch, 10_000, cost=0.00003)
    waited.sort()
    assert waited[int(len(waited) * 0.9)] <= 2 * STEP
    assert share <= 1.4 * SHARE


def test_a_step_is_sized_by_time() -> None:
    assert size(64, STEP / 2, 64) == 64  # cheap items: the most a step takes
    assert size(64, STEP * 10, 64) == 6  # ten times the cost: a tenth as many
    assert size(1, STEP * 3, 64) == 1  # an item that costs more than a step: one
    assert size(1, 0.0, 64) == 64  # (too fast to time)
