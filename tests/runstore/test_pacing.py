"""``agui_wire._runstore.pacing``: a background job (a fold) takes at most ``SHARE`` of
the event loop while the loop has other work, and all of it when it has none; it
gives the loop back after every step either way."""

from __future__ import annotations

import asyncio
import time

import pytest

from agui_wire._runstore import pacing
from agui_wire._runstore.pacing import LIVE, SHARE, SLICE, Pace, pause


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

    def work(seconds: float) -> None:
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            pass

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
