"""One reader's view of a run: check it exists, fold the compact prefix, replay the
stored events, then follow the live tail.

Contract: ``Subscription.open()`` raises ``RunNotFound`` for an unknown run (before
anything is sent, so HTTP can answer 404) and ``RunLost`` for a resume position the
store does not hold; ``batches()`` then yields the prefix (if any) and batches with
no gap and no duplicate until the run's end. A reader more than ``backlog`` batches
behind the tail is cut loose and catches up from Redis, so it holds no memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from .._apply import Compactor
from .._streaming import EncodedEvents
from ..errors import RunLost, RunNotFound
from ._backend import Backend
from ._batches import Batch, Prefix, entries
from ._tails import Inbox, Tails

_FIRST_PAGE = 32  # events in the first page of a replay


class Subscription:
    """One subscriber's view of a run: ``open()`` checks the run exists (and folds
    the compact prefix), then ``batches()`` replays and tails it."""

    def __init__(
        self, backend: Backend, tails: Tails, run_id: str, after: int | None, compact: bool
    ) -> None:
        self.backend = backend
        self.tails = tails
        self.run_id = run_id
        self.cursor = after or 0
        self.compact = compact and after is None
        self.prefix: Prefix | None = None
        self.replay: list[Batch] = []  # read while folding, not yet sent
        self.ended = False
        self.opened = False

    @property
    def snapshot_events(self) -> int:
        return 0 if self.prefix is None else len(self.prefix.events)

    async def open(self) -> None:
        backend = self.backend
        if not await backend.retry(self.run_id, backend.redis.exists, *backend.keys(self.run_id)):
            raise RunNotFound(self.run_id, "no such run (never started, or expired)")
        if self.cursor:
            stored = await backend.length(self.run_id)
            if self.cursor > stored:
                raise RunLost(
                    self.run_id,
                    f"resuming after event {self.cursor}, but the store holds {stored} "
                    "(Redis lost acknowledged events?)",
                )
        self.opened = True
        if not self.compact:
            return
        folder = Compactor()
        pages: list[Batch] = []
        async for batch in self._pages(0):
            pages.append(batch)
            for event in batch.events():
                folder.feed(event)
        if folder.foldable and folder.run_started is not None and folder.count:
            self.prefix = Prefix(folder.prefix(), folder.count)
            self.cursor = folder.count
            self.ended = bool(pages) and pages[-1].end is not None
        else:
            self.replay = pages  # nothing to fold: replay as stored
            self.ended = bool(pages) and pages[-1].end is not None

    async def _pages(self, cursor: int, stop: int | None = None) -> AsyncIterator[Batch]:
        """Stored events after ``cursor`` (up to ``stop``), in pages of up to
        ``batch``: the first page small, so the first events go out at once."""
        backend = self.backend
        key = backend.key(self.run_id)
        count = min(_FIRST_PAGE, backend.batch)
        while True:
            found = await backend.retry(
                self.run_id,
                backend.redis.xrange,
                key,
                min=f"({cursor}-0" if cursor else "-",
                max="+" if stop is None else f"{stop}-0",
                count=count,
            )
            if not found:
                if cursor and stop is None and not await backend.redis.exists(key):
                    raise RunLost(self.run_id, "the run's stream is gone (Redis restarted?)")
                return
            batch, ended = entries(self.run_id, cursor, found)
            cursor = batch.last
            yield batch
            if ended or len(found) < count:
                return
            count = min(count * 4, backend.batch)

    async def batches(self) -> AsyncIterator[EncodedEvents]:
        if not self.opened:
            await self.open()
        if self.prefix is not None:
            yield self.prefix
        for batch in self.replay:
            self.cursor = batch.last
            yield batch
        if self.ended:
            return
        async for batch in self._pages(self.cursor):
            self.cursor = batch.last
            yield batch
            if batch.end is not None:
                return
        inbox = Inbox(self.backend.backlog)
        tail = self.tails.attach(self.run_id, self.cursor, inbox)
        try:
            while True:
                await inbox.wake.wait()
                inbox.wake.clear()
                if inbox.lagging:
                    inbox.lagging = False
                    async for batch in self._pages(self.cursor):
                        self.cursor = batch.last
                        yield batch
                        if batch.end is not None:
                            return
                while inbox.batches:
                    batch = inbox.batches.popleft()
                    if batch.last <= self.cursor and batch.end is None:
                        continue
                    if batch.first > self.cursor + 1:  # joined after this tail's start
                        async for gap in self._pages(self.cursor, batch.first - 1):
                            self.cursor = gap.last
                            yield gap
                    batch = batch.after(self.cursor)
                    self.cursor = max(self.cursor, batch.last)
                    if batch.payloads:
                        yield batch
                    if batch.end is not None:
                        return
                if inbox.error is not None:
                    raise inbox.error
        finally:
            tail.detach(inbox)

    async def aclose(self) -> None:
        """Nothing to release before ``batches()`` starts (``EventStreamResponse``
        closes a producer it will not run)."""
