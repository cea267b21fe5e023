"""A background job's share of the event loop (a fold's: ``folds``), so it never
slows the runs the loop serves.

Strategy: the job works in steps of items (a fold's: events decoded and fed),
takes ``pace.size`` items a step and calls ``await pace.turn(items)`` after each,
and awaits what it waits for (its next page) through ``pace.wait``. A step is
sized by time, not by count: each turn sizes the next step from what this one's
items cost, so it takes about ``STEP`` of CPU (at most ``most`` items, at least
one) whatever an item costs (a fold's event: ~3 us with the C decoder, ~30 us
with the pure one). A turn gives the loop back (``sleep(0)``: what is ready runs
first) and times what the others took meanwhile: a turn's time past ``EMPTY``
(the loop's own cost). The job's time is its steps alone: the time between its
turns less what it waited for. A wait is neither's: the others run in it, but so
does the job's own reading (its page's reply parsed), and a job alone on the
loop must not take that for others' work. Times are this thread's CPU time, so
a machine that holds the process back (other processes on its cores) lengthens
nobody's share. Work is counted in slices of ``SLICE`` seconds: when a slice is
used up and the others took at least ``LIVE`` of it, other runs are live and
the job sleeps until it has had at most ``SHARE`` of the loop over the slice and
the sleep; when they took less, the loop is the job's alone (no run waits for
it, a compact joiner's first byte does) and it goes on at once. That judgement
needs steps of a fixed time: the others get a turn a step, so a step ten times
as long shows a tenth of their share, and a busy loop would look idle.

Contract: ``pause(busy, others)`` is the rule (the seconds to sleep after a slice)
and ``size(items, took, most)`` the step's; ``Pace.turn()`` applies them. While
the loop has other work a job paced so takes at most ``SHARE`` of the loop's time
(less when it waits: the others' work in its waits is not counted); its steps
(``STEP``, or one item where one costs more) stay the bound on how long any
callback waits for it, and its sleeps leave the cores to the others' work and to
the Redis they share (a fold's pages are read no faster than it feeds them).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Final, TypeVar

T = TypeVar("T")

#: The share of the loop a job takes while other runs are live: a fold is not
#: latency-critical (its joiners wait for all of it), the runs beside it are.
SHARE: Final = 0.25
#: CPU seconds of work between two looks at the others' share (and a sleep): long
#: enough that a sleep is a few milliseconds (the loop's timers are that fine),
#: short enough that the process never holds a core for long.
SLICE: Final = 0.002
#: CPU seconds a step aims at: ten steps a slice, so the others' turns between
#: them show in it whatever one item costs.
STEP: Final = SLICE / 10
#: The others' share of a slice from which they count as live.
LIVE: Final = 0.05
#: CPU seconds a turn takes with nothing else to run (the loop's own cost: 2-4 us
#: on CPython 3.11), not counted as the others' time.
EMPTY: Final = 0.00002


def pause(busy: float, others: float) -> float:
    """Seconds to sleep after a slice in which the job worked ``busy`` s and the
    others ``others`` s: enough that the job had ``SHARE`` of the loop, or 0 when
    the others took less than ``LIVE`` of the slice (the loop is the job's)."""
    if others < LIVE * (busy + others):
        return 0.0
    return max(0.0, busy * (1 - SHARE) / SHARE - others)


def size(items: int, took: float, most: int) -> int:
    """Items for the next step after one of ``items`` items took ``took`` s: as
    many as take ``STEP`` at that cost, at most ``most``, at least one."""
    if took <= 0:
        return most
    return max(1, min(most, int(items * STEP / took)))


class Pace:
    """One job's pacing (see the module doc)."""

    __slots__ = ("busy", "mark", "most", "others", "size", "step")

    def __init__(self, most: int = 1) -> None:
        self.most = most  # items a step takes at most
        self.size = 1  # items the next step takes (the first: its cost unknown)
        self.mark = time.thread_time()  # the job works from here
        self.step = 0.0  # the job's CPU time in this step
        self.busy = 0.0  # the job's CPU time in this slice (its steps)
        self.others = 0.0  # the others' time in this slice's turns

    async def turn(self, items: int = 1) -> None:
        """Give the loop back after a step of ``items`` items; size the next step;
        sleep after a slice if others are live."""
        before = time.thread_time()
        self.busy += before - self.mark
        self.size = size(items, self.step + before - self.mark, self.most)
        self.step = 0.0
        await asyncio.sleep(0)
        after = time.thread_time()
        self.others += max(0.0, after - before - EMPTY)
        if self.busy >= SLICE:
            sleep = pause(self.busy, self.others)
            self.busy = self.others = 0.0
            if sleep:
                await asyncio.sleep(sleep)
                after = time.thread_time()
        self.mark = after

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """``await awaitable`` (what the job waits for: its next page), its time
        counted as neither the job's nor the others'."""
        worked = time.thread_time() - self.mark
        self.busy += worked
        self.step += worked
        try:
            return await awaitable
        finally:
            self.mark = time.thread_time()
