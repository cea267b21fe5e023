"""A producer's claim on a run, and the producer's side of the store: the rules of
``agui_wire.redis``'s scripts (``ACQUIRE``, ``APPEND``, ``RENEW``, ``FINISH``,
``FAIL``) on a ``Run`` in memory.

Strategy: ``claim`` takes the lease of a run that has not ended and whose lease
nobody holds, creating the run (its generation drawn) when the store holds
none. A run with events and no lease lost its producer: it is continued only by
a caller that replays it deterministically (``replay=True``); otherwise the
claim ends it as a reader's lease check would (``RUN_ERROR``,
``LEASE_EXPIRED``) and says so, now and on every retry. The ``Producer`` renews
its lease every ``lease / 3`` (an append renews it too) and checks, on every
write, that the run is still the one it claimed and that the lease is its own.

Contract: ``claim`` returns the ``Producer`` holding the run's lease, or the
number of events of a run that has ended already; it raises ``RunInProgress``
and ``RunAbandoned``; ``events`` is closed unstarted whenever no producer will
run them. ``Producer.run`` is ``_runstore.produce.produce``; a write that finds
the run no longer its own raises ``LeaseLost`` (its lease lapsed and the run
was ended, or another producer holds it), ``RunReplaced`` (the run was forgotten
and produced again) or ``RunLost`` (forgotten).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterable, Iterable
from typing import Any, Final

from .._codec.selected import encode_payload
from .._runstore.appends import Appends
from .._runstore.drain import DRAINING, Producers
from .._runstore.ends import CANCELLED, FINISHED, LEASE_LAPSED, failure_event
from .._runstore.ids import new_generation
from .._runstore.options import Options
from .._runstore.produce import produce
from .._streaming import close_unstarted
from ..errors import (
    LeaseLost,
    RunAbandoned,
    RunInProgress,
    RunLost,
    RunReplaced,
    StoreDraining,
    StoreError,
)
from ._runs import GONE, Key, Run, Runs

logger = logging.getLogger("agui_wire.memory")

ABANDONED: Final = (
    "its producer vanished without ending it (the lease expired): the run was ended "
    "with RUN_ERROR (LEASE_EXPIRED) and is not produced again; a producer that "
    "replays the run deterministically passes replay=True to continue it"
)


async def claim(
    runs: Runs,
    producers: Producers,
    key: Key,
    events: Iterable[Any] | AsyncIterable[Any],
    replay: bool,
) -> Producer | int:
    """The run's lease for a new producer of ``events`` (see the module doc), or the
    number of events of a run that has ended already."""
    if producers.draining:
        await close_unstarted(events, logger)
        raise StoreDraining(key.run_id, DRAINING)
    now = asyncio.get_running_loop().time()
    options = runs.options
    run = runs.get(key, now)
    if run is not None and run.end is not None:
        await close_unstarted(events, logger)
        if run.end == LEASE_LAPSED:
            raise RunAbandoned(key.run_id, ABANDONED)
        return run.last
    if run is not None and run.held_by(now) is not None:
        await close_unstarted(events, logger)
        raise RunInProgress(key.run_id, "another producer holds the run's lease")
    if run is not None and run.last and not replay:
        await close_unstarted(events, logger)
        run.expire(now, options)  # ended for its producer, as a reader would
        raise RunAbandoned(key.run_id, ABANDONED)
    if run is None:
        run = runs.create(key, new_generation(key.run_id), now)
    token = f"{run.generation}:{secrets.token_hex(12)}"
    run.takes(token, now, options)
    return Producer(runs, producers, run, token, events)


class Producer:
    """One claimed run being produced (the lease is ours): a ``produce.Writer``."""

    def __init__(
        self,
        runs: Runs,
        producers: Producers,
        run: Run,
        token: str,
        events: Iterable[Any] | AsyncIterable[Any],
    ) -> None:
        self.runs = runs
        self.producers = producers
        self.options: Options = runs.options
        self.record = run
        self.run_id = run.key.run_id
        self.token = token
        self.stored = run.last  # events the store holds
        self.events = events
        self.lost: StoreError | None = None
        self.logger = logger
        self.main: asyncio.Task[Any] | None = None
        self.heartbeat: asyncio.Task[None] | None = None
        self.releasing = False  # the store drains: the run is let go
        self.finishing = False  # every event taken: only the end is left
        self.finished: asyncio.Future[None] | None = None  # done once ``run`` is

    async def run(self) -> int:
        options = self.options
        return await produce(self, self.events, options.batch, options.page_bytes)

    async def end_unstarted(self) -> None:
        """The run's task was cancelled before it ran: the run ends as a cancelled
        one (``RUN_ERROR``, code ``CANCELLED``), its events closed unstarted."""
        try:
            await self.fail(CANCELLED, encode_payload(failure_event(None)), 0)
        except StoreError as exc:
            logger.error("could not end run %r after a failure", self.run_id, exc_info=exc)
        finally:
            await close_unstarted(self.events, logger)

    def _ours(self) -> Run:
        """The run, if it is still the one this producer claimed and its lease ours
        (a lapsed lease is taken again); else the error that says why not."""
        run, now = self.record, asyncio.get_running_loop().time()
        current = self.runs.current(run.key, now)
        if current is None:
            raise RunLost(self.run_id, GONE)
        if current is not run:
            raise RunReplaced(
                self.run_id,
                f"the store holds another run under this id (generation {current.generation}, "
                f"not {run.generation}): this one was forgotten and the run produced again",
            )
        if run.end is not None:
            if run.ended_by == self.token:
                return run
            raise LeaseLost(self.run_id, "the run was ended by its lease expiring")
        if not run.takes(self.token, now, self.options):
            raise LeaseLost(self.run_id, "the lease is not ours")
        return run

    def start(self, main: asyncio.Task[Any]) -> None:
        self.main = main
        self.finished = asyncio.get_running_loop().create_future()
        self.producers.live.add(self)
        self.releasing = self.releasing or self.producers.handed_over  # claimed as it drained
        self.heartbeat = asyncio.ensure_future(self._heartbeat())

    def stop(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.cancel()

    def ended(self) -> None:
        self.producers.live.discard(self)
        if self.finished is not None:
            self.finished.set_result(None)

    def release(self) -> None:
        """The store drains: ``run`` stops taking events and ends the run (one
        process has nobody to hand it over to). One that took every event ends it
        as usual."""
        if self.releasing or self.finishing:
            return
        self.releasing = True
        if self.main is not None:
            self.main.cancel()

    async def hand_over(self, appends: Appends, terminal: int) -> StoreError:
        """What was taken stored, then the run ended with ``RUN_ERROR`` (code
        ``CANCELLED``), as a cancelled producer ends it: in one process there is no
        replica to hand it over to. The error ``run`` raises: ``StoreDraining``."""
        with contextlib.suppress(Exception):  # what the store took is what is stored
            await appends.drain()
        await self.fail(CANCELLED, encode_payload(failure_event(None)), terminal)
        return StoreDraining(
            self.run_id,
            f"the store is draining: the run was ended (RUN_ERROR, CANCELLED) after event "
            f"{self.stored}, a store in memory having no other replica to hand it over to",
        )

    async def _heartbeat(self) -> None:
        """Renew the lease ``lease / 3`` after it was last renewed: an append renews
        it too, so a run that produces more often than that renews nothing here."""
        loop = asyncio.get_running_loop()
        run, period = self.record, self.options.lease / 3
        while run.end is None:
            wait = run.lease_until - self.options.lease + period - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            try:
                self._ours()
            except StoreError as exc:
                self.lost = exc
                if self.main is not None:
                    self.main.cancel()
                return

    def produced(self, event: Any) -> None:
        pass

    async def append(self, first: int, payloads: list[bytes]) -> None:
        run = self._ours()
        if run.end is not None:  # (ended by this producer: nothing follows its end)
            raise LeaseLost(self.run_id, "the run has ended")
        run.append(first, payloads, self.options)
        self.stored = run.last

    async def finish(self) -> None:
        run = self._ours()
        if run.end is None:
            run.close(FINISHED, self.token, asyncio.get_running_loop().time(), self.options)

    async def fail(self, reason: str, error: bytes, terminal: int) -> None:
        run = self._ours()
        if run.end is None:
            now = asyncio.get_running_loop().time()
            # no RUN_ERROR after the producer's terminal event (0: it produced none)
            after_terminal = terminal != 0 and terminal == run.last
            run.close(reason, self.token, now, self.options, None if after_terminal else error)
