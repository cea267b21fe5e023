"""What the readers of one store read from Redis: ``Reading``, the run-store core's
``Source`` (``_runstore.read``): a run's head (its last entry, else its lease),
its pages, its tail (``_tails``), and its folds, which start from the producer's
snapshot of a trimmed run (``_snapshots``).

Contract: ``head`` raises ``RunNotFound`` for a run with neither an entry nor a
lease (also a run of another owner: the same error, so existence never leaks);
``subscription`` is the ``Subscribe`` a response opens a run with; ``hand_over``
ends every reader (the store drains).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from .._runstore.batches import Batch
from .._runstore.folds import Folds
from .._runstore.ids import CLOSED, EventId, generation_of
from .._runstore.read import HANDED_OVER, Inbox, Subscription
from ..errors import RunNotFound, StoreDraining, StoreUnavailable
from . import _snapshots
from ._calls import Calls
from ._keys import RunKeys
from ._leases import lease_generation
from ._local import Follow, Local
from ._pages import pages, top
from ._settings import Settings
from ._tails import TailRun, Tails


class Reading:
    """What the readers of one store share: its settings, calls, tails and folds,
    and whether the store ended them (it drains)."""

    __slots__ = ("calls", "folds", "handed_over", "local", "settings", "tails")

    def __init__(self, settings: Settings, calls: Calls) -> None:
        self.settings = settings
        self.calls = calls
        self.tails = Tails(settings, calls)
        # runs produced here: their readers are fed by the producer, not the tail
        self.local = Local(self.tails.attach)
        # a finished fold is reused for ``poll`` s (a joiner reads what followed)
        self.folds: Folds[RunKeys] = Folds(settings.poll, self)
        self.handed_over = False

    def hand_over(self) -> None:
        """End every reader of this store (``StoreDraining``), so that each resumes
        from its position on another replica; readers opened later stop at once."""
        self.handed_over = True
        tails = self.tails
        for run in list(tails.runs.values()):
            tails.fail(run, _handed_over(run.keys))
        self.local.fail(_handed_over)
        self.folds.cancel(_handed_over)

    @property
    def backlog(self) -> int:
        return self.settings.backlog

    @property
    def page_bytes(self) -> int:
        return self.settings.page_bytes

    def subscription(
        self, owner: str | None, run_id: str, after: EventId | None, compact: bool
    ) -> Subscription[RunKeys]:
        """A reader of ``owner``'s run (``_runstore.http.Subscribe``)."""
        return Subscription(self, self.settings.layout.keys(owner, run_id), after, compact)

    async def head(
        self, keys: RunKeys, cursor: int = 0, generation: int | None = None
    ) -> tuple[int, int | None, bool]:
        here = self.local.here(keys, generation)
        if here is not None and cursor <= here.stored:
            # claimed here and live: its producer knows what Redis acknowledged (a
            # position past that, read elsewhere from a reply not read here yet, and
            # any other generation, are Redis's to judge)
            return here.stored, here.generation, False
        # finding a run waits ``reconnect`` for Redis (then HTTP 503); once found,
        # its reader waits as long as the run's producer would (``silence``)
        patience = self.settings.reconnect
        last = await top(self.calls, keys, patience)
        if last is None:
            lease = await lease_generation(self.calls, keys, patience)
            if lease is not False:
                return 0, lease or None, False
            # no lease: never started, or stored and ended since ``top`` looked (its
            # end deletes the lease); the stream says which
            last = await top(self.calls, keys, patience)
            if last is None:
                raise RunNotFound(keys.run_id, "no such run (never started, or expired)")
        stored, seq, _ = last
        return stored, generation_of(seq), seq % 2 == 1

    def pages(
        self,
        keys: RunKeys,
        cursor: int,
        generation: int | None,
        stop: int | None = None,
        *,
        most: int | None = None,
        ahead: bool = True,
    ) -> AsyncIterator[Batch]:
        here = self.local.here(keys, generation)
        if here is not None and stop is None and cursor >= here.stored:
            # produced here, the cursor at what its producer had acknowledged: what
            # Redis holds past it (a reply not read yet) comes with its next push
            return _nothing()
        return pages(
            self.calls, self.settings, keys, cursor, generation, stop, most=most, ahead=ahead
        )

    async def snapshot(self, keys: RunKeys) -> tuple[int, int, list[dict[str, Any]]] | None:
        return await _snapshots.read(self.calls, keys)

    def attach(
        self, keys: RunKeys, cursor: int, generation: int | None, inbox: Inbox
    ) -> TailRun | Follow:
        follow = self.local.follow(keys, cursor, generation, inbox)
        if follow is not None:
            return follow
        return self.tails.attach(keys, cursor, generation, inbox)

    def detach(self, tail: TailRun | Follow, inbox: Inbox) -> None:
        if isinstance(tail, Follow):
            self.local.unfollow(tail)
            if tail.tail is not None:  # the producer stopped: the reader moved to the tail
                self.tails.detach(tail.tail, inbox)
            return
        self.tails.detach(tail, inbox)

    def cancel(self) -> None:
        self.tails.cancel()
        self.local.fail(lambda keys: StoreUnavailable(keys.run_id, CLOSED), close=True)
        self.folds.cancel()


async def _nothing() -> AsyncIterator[Batch]:
    return
    yield  # (an async generator of nothing)


def _handed_over(keys: RunKeys) -> StoreDraining:
    """What ends a reader of the run once the store drained (``hand_over``)."""
    return StoreDraining(keys.run_id, HANDED_OVER)
