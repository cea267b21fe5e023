"""Compact prefixes for late joiners, folded page by page and shared.

Strategy: a fold reads the run's stored events in pages bounded in bytes and in
events (``FOLD_PAGE``: Redis runs a page alone, the other runs' appends wait
behind it) from its backend (``Stored.pages``), one page at a time, and feeds
each page to a ``Compactor`` before reading the next, decoding it a step at a
time (``pacing.STEP`` of CPU, at most ``FEED_STEP`` events), so it holds the
folded state (messages, state, what is open) and a step of events, never the run
nor a page of decoded events; it takes at most a quarter of the event loop while
other runs are live (``pacing``: its time is its steps, not its waits for pages).
Compact joiners of one run that arrive while its fold runs await that fold
instead of starting their own; a finished fold is reused for ``reuse`` seconds
(its prefix stands for events 1..n; a joiner reads what followed from the store).

Contract: ``Folds.fold(run)`` returns a ``Fold``: the prefix (``None`` when the
run cannot be folded: chunks, a second ``RUN_STARTED``, nothing stored yet; the
joiner replays it whole), the last event it stands for, and whether the run had
ended. A run stored with ``maxlen`` has its producer's prefix of its first
events (``Stored.snapshot``): the fold starts from it, so the trimmed events are
folded in, not lost (trimmed past it meanwhile: it starts again from the
newer one). Store errors of the fold reach every joiner awaiting it;
``cancel`` (the store closes) stops the folds, their joiners get
``StoreUnavailable`` (not a cancellation of their own tasks).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Final, Generic, Protocol, TypeVar

from .._apply import Compactor
from ..errors import HistoryTrimmed, StoreUnavailable
from . import observe
from .batches import Batch, Prefix, RunRef
from .ids import CLOSED
from .pacing import Pace

#: Events a fold decodes and feeds between two turns of the event loop, at most: a
#: step is sized by time (``pacing.STEP``), this many text deltas (~3 us each with
#: the C decoder, ~30 us with the pure one) or fewer, so a long run's fold never
#: holds the loop for the others' deliveries, and its decoded events are freed
#: before the cyclic GC's young generation (700 objects) fills: none reach the old
#: generations, whose full collections pause every run on the loop.
FEED_STEP: Final = 64

#: Events per page a fold reads: a page is one script call that Redis runs alone
#: (~1 us an event), every other run's appends waiting behind it, so a fold's
#: pages are small (128 events: ~0.13 ms of Redis); a replay's are larger
#: (``read.PAGE_EVENTS``: fewer round trips for the events it sends on).
FOLD_PAGE: Final = 128

R = TypeVar("R", bound=RunRef)
R_contra = TypeVar("R_contra", bound=RunRef, contravariant=True)


class Stored(Protocol[R_contra]):
    """What a fold reads of a run, from its backend."""

    async def snapshot(self, run: R_contra) -> tuple[int, int, list[dict[str, Any]]] | None:
        """The producer's compact prefix of a run stored with ``maxlen``: the last
        event it stands for, the run's generation, its events; ``None``: none."""

    def pages(
        self,
        run: R_contra,
        cursor: int,
        generation: int | None,
        stop: int | None = None,
        *,
        most: int | None = None,
        ahead: bool = True,
    ) -> AsyncIterator[Batch]:
        """The stored events after ``cursor`` (up to ``stop``), in batches bounded
        in bytes and in events (``most``, else ``read.PAGE_EVENTS``), each
        following on from the last: events that are not stored raise
        ``HistoryTrimmed`` (trimmed by ``maxlen``) or ``RunLost``, never a gap.
        ``ahead``: a backend that reads from elsewhere (Redis) reads the next
        page while the caller uses this one; else when the caller asks for it."""


class Fold:
    __slots__ = ("ended", "last", "prefix")

    def __init__(self, prefix: Prefix | None, last: int, ended: bool) -> None:
        self.prefix = prefix
        self.last = last
        self.ended = ended


_NOTHING = Fold(None, 0, False)


class Folds(Generic[R]):
    """This process's folds, by run (see the module doc)."""

    def __init__(self, reuse: float, stored: Stored[R]) -> None:
        self.reuse = reuse
        self.stored = stored
        self.running: dict[str, asyncio.Future[Fold]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        # what a joiner gets once the store stopped its folds (``cancel``): the store
        # drained (its readers resume elsewhere) or closed
        self.ended: Callable[[R], BaseException] | None = None

    async def fold(self, keys: R) -> Fold:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # folds of another event loop cannot be awaited here
            self.loop, self.running = loop, {}
        if self.ended is not None:
            raise self.ended(keys)
        future = self.running.get(keys.stream)
        if future is None or (
            future.done() and (future.cancelled() or future.exception() is not None)
        ):
            future = self.running[keys.stream] = asyncio.ensure_future(self._fold(keys))
            future.add_done_callback(lambda f: self._finished(keys.stream, f))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if self.ended is not None and future.cancelled():  # by ``cancel`` (joiners
                raise self.ended(keys) from None  # are shielded)
            raise

    def _finished(self, key: str, future: asyncio.Future[Fold]) -> None:
        if future.cancelled() or future.exception() is not None:
            self._forget(key, future)
        else:
            asyncio.get_running_loop().call_later(self.reuse, self._forget, key, future)

    def _forget(self, key: str, future: asyncio.Future[Fold]) -> None:
        if self.running.get(key) is future:
            del self.running[key]

    async def _fold(self, keys: R) -> Fold:
        with observe.span(observe.FOLD, keys.run_id):
            return await self._folded(keys)

    async def _folded(self, keys: R) -> Fold:
        last = -1
        while True:
            snapshot = await self.stored.snapshot(keys)  # a run trimmed by maxlen
            try:
                return await self._fold_from(keys, snapshot)
            except HistoryTrimmed:  # trimmed past the snapshot while it was read: a
                if snapshot is None or snapshot[0] <= last:  # newer one reaches past
                    raise  # the trim (a live run's producer rewrites it); else none will
                last = snapshot[0]

    async def _fold_from(
        self, keys: R, snapshot: tuple[int, int, list[dict[str, Any]]] | None
    ) -> Fold:
        folder = Compactor()
        pace = Pace(FEED_STEP)
        ended = False
        cursor, generation = 0, None
        if snapshot is not None:
            cursor, generation, events = snapshot
            for event in events:
                folder.feed(event)
        # a page at a time: its reply is read while the fold waits for it, which
        # its pace counts as neither its time nor the others' (read ahead, it would
        # come in the fold's turns and pass for the others' work)
        pages = self.stored.pages(keys, cursor, generation, most=FOLD_PAGE, ahead=False)
        while (batch := await pace.wait(anext(pages, None))) is not None:
            generation = batch.generation  # (pages checks each entry's)
            start = 0
            while start < len(batch.payloads):
                events = batch.chunk(start, pace.size)
                for event in events:
                    folder.feed(event)
                start += len(events)
                await pace.turn(len(events))  # the other runs of this loop go first
            cursor = batch.last
            ended = batch.end is not None
            if not folder.foldable:
                return _NOTHING
        if folder.foldable and folder.run_started is not None and cursor:
            return Fold(Prefix(folder.prefix(), cursor, generation), cursor, ended)
        return _NOTHING

    def cancel(self, error: Callable[[R], BaseException] | None = None) -> None:
        """Stop every fold; their joiners, and later ones, get ``error(run)`` (by
        default ``StoreUnavailable``: the store closed)."""
        self.ended = error or _closed
        for future in self.running.values():
            future.cancel()


def _closed(keys: RunRef) -> BaseException:
    return StoreUnavailable(keys.run_id, CLOSED)
