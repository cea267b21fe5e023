"""What the readers of one in-process store read: ``Reading``, the run-store core's
``Source`` (``_runstore.read``) over the runs in memory, and the lease checks of
the runs they follow.

Strategy: a reader replays the run's stored payloads in pages (slices, sized as
Redis's: ``FIRST_PAGE`` events, four times more each page up to ``PAGE_EVENTS``
or the caller's ``most``, at most ``page_bytes`` of payload; the loop is given
back between pages, so a long replay or fold never holds it), then attaches its
``Inbox`` to the run, which hands it every later append as one shared ``Batch``.
While any run is followed, one task looks every ``poll`` seconds and ends each
followed run whose lease lapsed (``Run.expire``: ``RUN_ERROR``, code
``LEASE_EXPIRED``), so its readers learn of a producer that vanished within
``lease + poll``, as with Redis.

Contract: ``head`` raises ``RunNotFound`` for a run the store does not hold (also
a run of another owner); ``hand_over`` ends every reader (the store drains);
``pages`` raises ``HistoryTrimmed`` for a position
``maxlen`` trimmed, ``RunReplaced`` for a position of another generation of the
run, ``RunLost`` when the run was forgotten after the position.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from .._runstore.batches import Batch
from .._runstore.folds import Folds
from .._runstore.ids import EventId
from .._runstore.options import Options
from .._runstore.read import FIRST_PAGE, HANDED_OVER, PAGE_EVENTS, Inbox, Subscription
from ..errors import HistoryTrimmed, RunLost, RunNotFound, RunReplaced, StoreDraining
from ._runs import GONE, Key, Run, Runs


class Reading:
    """What the readers of one store share: its runs, its folds, the lease checks."""

    def __init__(self, options: Options, runs: Runs) -> None:
        self.options = options
        self.runs = runs
        # a finished fold is reused for ``poll`` s (a joiner reads what followed)
        self.folds: Folds[Key] = Folds(options.poll, self)
        self.followed: dict[str, Run] = {}  # runs with attached readers, by key
        self.sweeper: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.handed_over = False  # the store drained: readers stop

    def hand_over(self) -> None:
        """End every reader (``StoreDraining``); readers opened later stop at once."""
        self.handed_over = True
        for run in self.runs.runs.values():
            for inbox in run.inboxes:
                inbox.fail(StoreDraining(run.key.run_id, HANDED_OVER))
        self.folds.cancel(lambda keys: StoreDraining(keys.run_id, HANDED_OVER))

    @property
    def backlog(self) -> int:
        return self.options.backlog

    @property
    def page_bytes(self) -> int:
        return self.options.page_bytes

    def subscription(
        self, owner: str | None, run_id: str, after: EventId | None, compact: bool
    ) -> Subscription[Key]:
        """A reader of ``owner``'s run (``_runstore.http.Subscribe``)."""
        return Subscription(self, Key(owner, run_id), after, compact)

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    async def head(
        self, key: Key, cursor: int = 0, generation: int | None = None
    ) -> tuple[int, int | None, bool]:  # (every run is here)
        run = self.runs.get(key, self._now())
        if run is None:
            raise RunNotFound(key.run_id, "no such run (never started, or expired)")
        return run.last, run.generation, run.end is not None

    async def snapshot(self, key: Key) -> tuple[int, int, list[dict[str, Any]]] | None:
        run = self.runs.get(key, self._now())
        return None if run is None else run.snapshot()

    async def pages(
        self,
        key: Key,
        cursor: int,
        generation: int | None,
        stop: int | None = None,
        *,
        most: int | None = None,
        ahead: bool = True,  # (a page here is a slice: nothing to read ahead)
    ) -> AsyncIterator[Batch]:
        most = PAGE_EVENTS if most is None else most
        budget, count = self.options.page_bytes, min(FIRST_PAGE, most)
        while True:
            run = self.runs.get(key, self._now())
            if run is None:
                if cursor and stop is None:
                    raise RunLost(key.run_id, GONE)
                return
            if generation is not None and run.generation != generation:
                raise RunReplaced(
                    key.run_id,
                    f"the store holds another run under this id now (generation "
                    f"{run.generation}, not {generation}): it was forgotten and produced again",
                )
            last = run.last if stop is None else min(stop, run.last)
            if cursor >= last:
                if stop is None and run.end is not None and cursor == run.last:
                    yield Batch(key, run.generation, cursor + 1, [], run.end)
                return
            if cursor + 1 < run.first:
                raise HistoryTrimmed(key.run_id, cursor, run.first)
            start = cursor + 1 - run.first
            payloads: list[bytes] = []
            size = 0
            for payload in run.payloads[start : start + min(last - cursor, count)]:
                if payloads and size + len(payload) > budget:
                    break
                payloads.append(payload)
                size += len(payload)
            cursor += len(payloads)
            end = run.end if stop is None and cursor == run.last else None
            generation = run.generation
            yield Batch(key, generation, cursor - len(payloads) + 1, payloads, end)
            if end is not None:
                return
            count = min(count * 4, most)
            await asyncio.sleep(0)  # a long replay or fold gives the loop back

    def attach(self, key: Key, cursor: int, generation: int | None, inbox: Inbox) -> Run | None:
        # A reader attaches once its pages caught up with the run, with no await
        # since: every later change reaches its inbox.
        run = self.runs.get(key, self._now())
        if run is None:
            inbox.fail(RunLost(key.run_id, GONE))
            return None
        run.inboxes.add(inbox)
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # a store used from a new event loop: start afresh
            self.loop, self.followed, self.sweeper = loop, {}, None
        self.followed[key.stream] = run
        if self.sweeper is None:
            self.sweeper = asyncio.ensure_future(self._sweep())
        return run

    def detach(self, run: Run | None, inbox: Inbox) -> None:
        if run is None:
            return
        run.inboxes.discard(inbox)
        if not run.inboxes and self.followed.get(run.key.stream) is run:
            del self.followed[run.key.stream]

    async def _sweep(self) -> None:
        options = self.options
        try:
            while self.followed:
                await asyncio.sleep(options.poll)
                now = self._now()
                self.runs.purge(now)
                for run in list(self.followed.values()):
                    run.expire(now, options)
        finally:
            self.sweeper = None

    def cancel(self) -> None:
        if self.sweeper is not None:
            self.sweeper.cancel()
        self.folds.cancel()
