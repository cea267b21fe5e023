"""One reader's view of a run, of any backend: check it exists, take the compact
prefix, replay the stored events, then follow the live tail.

Contract: ``Subscription.open()`` raises ``RunNotFound`` for an unknown run (also a
run of another owner: the same error, so existence never leaks; before anything
is sent, so HTTP can answer 404), ``ResumePastEnd`` for a position past the
run's last stored event, live or ended, and ``UnknownGeneration`` for a position
of a generation the run never had (both ``ValueError``s: HTTP 400),
``RunReplaced`` for a position of a generation of the run lost and produced
again; ``batches()`` then yields the prefix (if any) and batches with no gap and
no duplicate until the run's end: events the store no longer holds are
``HistoryTrimmed`` (``maxlen``) or ``RunLost``, on every path (replay, a
catch-up, the gap between a reader and a tail ahead of it), never skipped.
Replay and catch-up read pages bounded in bytes; a reader more than ``backlog``
batches (or two pages of bytes) behind the tail is cut loose and catches up from
the store, so it holds no more than that. A backend gives its readers a
``Source``: a run's head, its stored pages, its live tail (batches pushed to an
``Inbox``), and its folds. Once the backend's store drains
(``Source.handed_over``) every reader stops with ``StoreDraining``: a tailing
one when the backend fails its inbox, a replaying one after its page, a new one
when it opens; its position is where it resumes on another replica.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Final, Generic, Protocol, TypeVar

from .._streaming import EncodedEvents
from ..errors import (
    ResumePastEnd,
    RunLost,
    RunReplaced,
    StoreDraining,
    StoreError,
    UnknownGeneration,
)
from . import observe
from .batches import Batch, Prefix, RunRef
from .folds import Folds, Stored
from .ids import EventId, of_run

R = TypeVar("R", bound=RunRef)

#: Events in the first page of a replay (the first events go out at once), then
#: four times more each page, up to ``PAGE_EVENTS`` (``page_bytes`` bounds a page
#: first): what every backend's ``Source.pages`` reads.
FIRST_PAGE: Final = 32
PAGE_EVENTS: Final = 1024
#: Why a reader of a draining store stopped (``StoreDraining``).
HANDED_OVER: Final = (
    "the store is draining (its process is shutting down): the reader was ended, to "
    "resume from its position on another replica"
)


class Inbox:
    """What the tail hands one reader: shared batches, or the error that ended it.
    A reader more than ``limit`` batches or ``byte_limit`` bytes behind is cut
    loose (``lagging``): it reads pages from the store until it has caught up."""

    __slots__ = ("batches", "byte_limit", "error", "lagging", "limit", "nbytes", "waiter")

    def __init__(self, limit: int, byte_limit: int) -> None:
        self.batches: deque[Batch] = deque()
        self.nbytes = 0
        self.error: BaseException | None = None
        self.lagging = False  # dropped batches: catch up from the store
        self.limit = limit
        self.byte_limit = byte_limit
        # the reader waiting for a push (a bare future: an ``asyncio.Event`` costs a
        # list, a lookup of its loop and a ``try`` per wait, and a reader waits per event)
        self.waiter: asyncio.Future[None] | None = None

    @property
    def ready(self) -> bool:
        """Whether the reader has something to take: batches, or the error."""
        return bool(self.batches) or self.error is not None

    def waiting(self) -> asyncio.Future[None] | None:
        """A future done at the next push (or failure); ``None`` when ``ready``
        already (no coroutine to await: a reader waits once per event)."""
        if self.ready:
            return None
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        return waiter

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def push(self, batch: Batch) -> None:
        if self.batches and (
            len(self.batches) >= self.limit or self.nbytes + batch.nbytes > self.byte_limit
        ):
            self.batches.clear()
            self.nbytes = 0
            self.lagging = True
        self.batches.append(batch)
        self.nbytes += batch.nbytes
        self._wake()

    def pop(self) -> Batch:
        batch = self.batches.popleft()
        self.nbytes -= batch.nbytes
        return batch

    def fail(self, error: BaseException) -> None:
        self.error = error
        self._wake()


class Source(Stored[R], Protocol[R]):
    """What a backend gives the readers of its runs."""

    folds: Folds[R]

    @property
    def handed_over(self) -> bool:
        """Whether the store ended its readers (it drains): a reader stops then."""

    @property
    def backlog(self) -> int:
        """Batches a reader may fall behind the tail before it reads pages instead."""

    @property
    def page_bytes(self) -> int:
        """Payload bytes per page (a reader's backlog holds two pages at most)."""

    async def head(
        self, run: R, cursor: int = 0, generation: int | None = None
    ) -> tuple[int, int | None, bool]:
        """The run's last stored event, its generation (``None``: not known yet) and
        whether it has ended; ``RunNotFound`` for a run the store does not hold.
        ``cursor`` and ``generation`` are the reader's: a backend may answer from
        what it knows in this process when that covers them."""

    def attach(self, run: R, cursor: int, generation: int | None, inbox: Inbox) -> Any:
        """Push every batch after the run's tail position to ``inbox`` (the reader
        fills a gap from its own position with pages) until the run's end or an
        error; returns the tail, to ``detach``."""

    def detach(self, tail: Any, inbox: Inbox) -> None:
        """The reader of ``inbox`` left."""


class Subscription(Generic[R]):
    """One subscriber's view of a run: ``open()`` checks the run exists (and folds
    the compact prefix), then ``batches()`` replays and tails it."""

    def __init__(self, source: Source[R], keys: R, after: EventId | None, compact: bool) -> None:
        self.source = source
        self.keys = keys
        self.run_id = keys.run_id
        self.cursor = int(after or 0)
        # the run's generation: the one the position names, then the one stored
        self.generation = None if after is None else after.generation
        self.compact = compact and after is None
        self.prefix: Prefix | None = None
        self.ended = False
        self.opened = False
        self.faulted: StoreError | None = None

    @property
    def snapshot_events(self) -> int:
        return 0 if self.prefix is None else len(self.prefix.events)

    @property
    def position(self) -> EventId:
        """Where the body starts (the ``agui-after`` header): after this event."""
        return EventId(self.cursor, self.generation)

    def _stop_if_handed_over(self) -> None:
        if self.source.handed_over:
            raise StoreDraining(self.run_id, HANDED_OVER)

    async def open(self) -> None:
        try:
            with observe.span(observe.OPEN, self.run_id):
                await self._open()
        except StoreError as exc:
            self._fault(exc)
            raise

    def _fault(self, exc: StoreError) -> None:
        """Telemetry: the error that ends this reader, counted once."""
        if exc is not self.faulted:
            self.faulted = exc
            observe.fault(exc)

    async def _open(self) -> None:
        self._stop_if_handed_over()
        asked = self.generation
        stored, generation, ended = await self.source.head(self.keys, self.cursor, asked)
        if asked is not None and generation is not None and asked != generation:
            if not of_run(self.run_id, asked):  # made up, or another run's id
                position = str(EventId(self.cursor, asked))
                raise UnknownGeneration(self.run_id, position, asked, generation)
            raise RunReplaced(
                self.run_id,
                f"the position is of generation {asked} of the run, the store holds "
                f"generation {generation}: the run was lost and produced again",
            )
        if self.cursor > stored:
            raise ResumePastEnd(self.run_id, self.cursor, stored, live=not ended)
        self.generation = generation
        self.opened = True
        if self.compact:
            fold = await self.source.folds.fold(self.keys)
            if fold.prefix is not None:
                self.prefix = fold.prefix
                self.cursor = fold.last
                self.ended = fold.ended
                self.generation = fold.prefix.generation

    async def batches(self) -> AsyncIterator[EncodedEvents]:
        # (one generator, not a wrapper around another: a layer per batch costs)
        reader = observe.reader_opened()  # telemetry: agui.store.readers
        try:
            if not self.opened:
                await self.open()
            self._stop_if_handed_over()
            if self.prefix is not None:
                yield self.prefix
            if self.ended:
                return
            async for batch in self._pages():
                yield batch
                if batch.end is not None:
                    return
            self._stop_if_handed_over()  # (no await until attached: a hand-over fails the inbox)
            source = self.source
            inbox = Inbox(source.backlog, 2 * source.page_bytes)
            tail = source.attach(self.keys, self.cursor, self.generation, inbox)
            try:
                while True:
                    waiter = inbox.waiting()
                    if waiter is not None:
                        await waiter
                    if inbox.lagging:
                        inbox.lagging = False
                        async for batch in self._pages():
                            if batch.stamps:  # (none: nothing to record, nothing to look at)
                                observe.delivered(batch.first, batch.stamps)
                            yield batch
                            if batch.end is not None:
                                return
                    while inbox.batches:
                        batch = inbox.pop()
                        if batch.generation != self.generation:
                            self._check(batch)
                        last = batch.last
                        if last <= self.cursor and batch.end is None:
                            continue
                        if batch.first > self.cursor + 1:  # the tail is ahead: fill the gap
                            async for gap in self._pages(batch.first - 1):
                                if gap.stamps:
                                    observe.delivered(gap.first, gap.stamps)
                                yield gap
                            if batch.first > self.cursor + 1:  # (a source's pages say why)
                                raise RunLost(
                                    self.run_id,
                                    f"the store holds no events {self.cursor + 1}.."
                                    f"{batch.first - 1} of the run",
                                )
                        if batch.first <= self.cursor:
                            batch = batch.after(self.cursor)
                        if last > self.cursor:
                            self.cursor = last
                        self.generation = batch.generation or self.generation
                        if batch.payloads:
                            if batch.stamps:
                                observe.delivered(batch.first, batch.stamps)
                            yield batch
                        if batch.end is not None:
                            return
                    if inbox.error is not None:
                        raise inbox.error
            finally:
                source.detach(tail, inbox)
        except StoreError as exc:
            self._fault(exc)
            raise
        finally:
            observe.ended(reader)

    async def _pages(self, stop: int | None = None) -> AsyncIterator[Batch]:
        """Stored events after the cursor (up to ``stop``), of this run's generation;
        the source raises ``HistoryTrimmed`` or ``RunLost`` rather than skip any."""
        stored = self.source.pages(self.keys, self.cursor, self.generation, stop)
        async for batch in stored:
            self._check(batch)
            self.generation = batch.generation
            self.cursor = batch.last
            yield batch
            self._stop_if_handed_over()

    def _check(self, batch: Batch) -> None:
        if self.generation is not None and batch.generation not in (None, self.generation):
            raise RunReplaced(
                self.run_id,
                f"the store holds generation {batch.generation} of the run now, not "
                f"{self.generation}: the run was lost and produced again",
            )

    async def aclose(self) -> None:
        """Nothing to release before ``batches()`` starts (``EventStreamResponse``
        closes a producer it will not run)."""
