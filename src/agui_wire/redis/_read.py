"""One reader's view of a run: check it exists, take the compact prefix, replay the
stored events, then follow the live tail.

Contract: ``Subscription.open()`` raises ``RunNotFound`` for an unknown run (also a
run of another owner: the same error, so existence never leaks; before anything
is sent, so HTTP can answer 404), ``ResumePastEnd`` for a position past the end
of a run that has ended (HTTP 400), ``RunReplaced`` for a position of another
generation of the run and ``RunLost`` for one the live run does not hold;
``batches()`` then yields the prefix (if any) and batches with no gap and no
duplicate until the run's end. Replay and catch-up read pages bounded
in bytes; a reader more than ``backlog`` batches (or two pages of bytes) behind
the tail is cut loose and catches up from Redis, so it holds no more than that.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from .._runstore.batches import Batch, Prefix
from .._runstore.folds import Folds
from .._runstore.ids import EventId, generation_of
from .._streaming import EncodedEvents
from ..errors import ResumePastEnd, RunLost, RunNotFound, RunReplaced
from . import _snapshots
from ._calls import Calls
from ._keys import RunKeys
from ._leases import lease_generation
from ._pages import pages, top
from ._settings import Settings
from ._tails import Inbox, Tails


class Stored:
    """What a fold reads of a run in Redis: the producer's snapshot, then pages."""

    __slots__ = ("calls", "settings")

    def __init__(self, settings: Settings, calls: Calls) -> None:
        self.settings = settings
        self.calls = calls

    async def snapshot(self, keys: RunKeys) -> tuple[int, int, list[dict[str, Any]]] | None:
        return await _snapshots.read(self.calls, keys)

    def pages(self, keys: RunKeys, cursor: int, generation: int | None) -> AsyncIterator[Batch]:
        return pages(self.calls, self.settings, keys, cursor, generation)


class Reading:
    """What the readers of one store share: its settings, calls, tails and folds."""

    __slots__ = ("calls", "folds", "settings", "tails")

    def __init__(self, settings: Settings, calls: Calls) -> None:
        self.settings = settings
        self.calls = calls
        self.tails = Tails(settings, calls)
        # a finished fold is reused for ``poll`` s (a joiner reads what followed)
        self.folds = Folds(settings.poll, Stored(settings, calls))

    def subscription(
        self, owner: str | None, run_id: str, after: EventId | None, compact: bool
    ) -> Subscription:
        """A reader of ``owner``'s run (``_runstore.http.Subscribe``)."""
        return Subscription(self, self.settings.layout.keys(owner, run_id), after, compact)

    def cancel(self) -> None:
        self.tails.cancel()
        self.folds.cancel()


class Subscription:
    """One subscriber's view of a run: ``open()`` checks the run exists (and folds
    the compact prefix), then ``batches()`` replays and tails it."""

    def __init__(
        self, reading: Reading, keys: RunKeys, after: EventId | None, compact: bool
    ) -> None:
        self.reading = reading
        self.keys = keys
        self.run_id = keys.run_id
        self.cursor = int(after or 0)
        # the run's generation: the one the position names, then the one stored
        self.generation = None if after is None else after.generation
        self.compact = compact and after is None
        self.prefix: Prefix | None = None
        self.ended = False
        self.opened = False

    @property
    def snapshot_events(self) -> int:
        return 0 if self.prefix is None else len(self.prefix.events)

    @property
    def position(self) -> EventId:
        """Where the body starts (the ``agui-after`` header): after this event."""
        return EventId(self.cursor, self.generation)

    async def open(self) -> None:
        calls = self.reading.calls
        last = await top(calls, self.keys)
        if last is None:
            lease = await lease_generation(calls, self.keys)
            if lease is False:
                raise RunNotFound(self.run_id, "no such run (never started, or expired)")
            stored, generation, ended = 0, lease or None, False
        else:
            stored, seq, _ = last
            generation, ended = generation_of(seq), seq % 2 == 1
        if None not in (self.generation, generation) and generation != self.generation:
            raise RunReplaced(
                self.run_id,
                f"the position is of generation {self.generation} of the run, Redis "
                f"holds generation {generation}: the run was lost and produced again",
            )
        if self.cursor > stored:
            if ended:
                raise ResumePastEnd(self.run_id, self.cursor, stored)
            raise RunLost(
                self.run_id,
                f"resuming after event {self.cursor}, but the store holds {stored} of the "
                "live run (Redis lost acknowledged events?)",
            )
        self.generation = generation
        self.opened = True
        if self.compact:
            fold = await self.reading.folds.fold(self.keys)
            if fold.prefix is not None:
                self.prefix = fold.prefix
                self.cursor = fold.last
                self.ended = fold.ended
                self.generation = fold.prefix.generation

    async def batches(self) -> AsyncIterator[EncodedEvents]:
        if not self.opened:
            await self.open()
        if self.prefix is not None:
            yield self.prefix
        if self.ended:
            return
        async for batch in self._pages():
            yield batch
            if batch.end is not None:
                return
        settings = self.reading.settings
        inbox = Inbox(settings.backlog, 2 * settings.page_bytes)
        tails = self.reading.tails
        tail = tails.attach(self.keys, self.cursor, self.generation, inbox)
        try:
            while True:
                await inbox.wake.wait()
                inbox.wake.clear()
                if inbox.lagging:
                    inbox.lagging = False
                    async for batch in self._pages():
                        yield batch
                        if batch.end is not None:
                            return
                while inbox.batches:
                    batch = inbox.pop()
                    self._check(batch)
                    if batch.last <= self.cursor and batch.end is None:
                        continue
                    if batch.first > self.cursor + 1:  # joined after this tail's start
                        async for gap in self._pages(batch.first - 1):
                            yield gap
                    batch = batch.after(self.cursor)
                    self.cursor = max(self.cursor, batch.last)
                    self.generation = batch.generation or self.generation
                    if batch.payloads:
                        yield batch
                    if batch.end is not None:
                        return
                if inbox.error is not None:
                    raise inbox.error
        finally:
            tails.detach(tail, inbox)

    async def _pages(self, stop: int | None = None) -> AsyncIterator[Batch]:
        """Stored events after the cursor (up to ``stop``), of this run's generation."""
        reading = self.reading
        stored = pages(
            reading.calls, reading.settings, self.keys, self.cursor, self.generation, stop
        )
        async for batch in stored:
            self._check(batch)
            self.generation = batch.generation
            self.cursor = batch.last
            yield batch

    def _check(self, batch: Batch) -> None:
        if self.generation is not None and batch.generation not in (None, self.generation):
            raise RunReplaced(
                self.run_id,
                f"the stream holds generation {batch.generation} of the run now, not "
                f"{self.generation}: the run was lost and produced again",
            )

    async def aclose(self) -> None:
        """Nothing to release before ``batches()`` starts (``EventStreamResponse``
        closes a producer it will not run)."""
