"""``RunStore`` in memory: the run store's public face (``_runstore.store``) over
the runs of this process.

Contract: the same methods, errors and ``RUN_ERROR`` codes as
``agui_wire.redis.RunStore`` (tests/runstore runs one suite on both); the store
owns its background runs and its lease checks and stops them in ``aclose``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Iterable
from typing import Any, Final

from .._runstore.drain import drain
from .._runstore.options import Options
from .._runstore.store import Store
from ._producer import Producer, claim
from ._reading import Reading
from ._runs import Key, Runs

logger = logging.getLogger("agui_wire.memory")

#: Seconds a drain waits for the runs it ends once the grace is over (each ends as
#: a cancelled one, at once; what their events' sources take to close).
HANDOVER: Final = 5.0
GONE: Final = "ended (RUN_ERROR, CANCELLED: one process has no replica to hand them over to)"


class RunStore(Store[Key]):
    """AG-UI runs in this process's memory (see the package doc): the run store for
    one process, and for tests.

    ``ttl``: seconds a run is kept after its end (and after the last heartbeat of
    a producer that vanished). ``lease``: seconds without a heartbeat after which
    a run's producer counts as vanished. ``maxlen``: keep about this many events
    per run (``None``: all; a run keeps up to a quarter more before it is
    trimmed). ``batch``: events per append. ``backlog``: batches a subscriber
    may fall behind the run before it reads pages instead. ``page_bytes``:
    payload bytes per replay page, per append and per reader's backlog (twice
    that); an event bigger is a page of its own.

    Every call names a run by ``run_id`` and ``owner`` together, as with Redis:
    two owners never share a run, and a reader with the wrong owner gets exactly
    what an unknown run gets. A run id is a string of 1 to 256 UTF-8 bytes
    (``ValueError`` otherwise; HTTP 400 from ``response``).

    The store is used from one event loop at a time (one after another is fine:
    its runs are plain data); it is not thread-safe, as asyncio is not.
    """

    _reading: Reading

    def __init__(
        self,
        *,
        ttl: float = 3600.0,
        lease: float = 30.0,
        maxlen: int | None = None,
        batch: int = 512,
        backlog: int = 64,
        page_bytes: int = 1024 * 1024,
    ) -> None:
        super().__init__()
        options = Options(
            ttl=ttl, lease=lease, maxlen=maxlen, batch=batch, backlog=backlog, page_bytes=page_bytes
        )
        self.ttl = options.ttl
        self.lease = options.lease
        self.maxlen = maxlen
        self.batch = batch
        self.backlog = backlog
        self.page_bytes = page_bytes
        #: Seconds between lease checks of the runs readers follow.
        self.poll = options.poll
        self._runs = Runs(options)
        self._reading = Reading(options, self._runs)
        self._logger = logger

    def _locate(self, owner: str | None, run_id: str) -> Key:
        return Key(owner, run_id)

    async def _claim(
        self, run: Key, events: Iterable[Any] | AsyncIterable[Any], replay: bool
    ) -> Producer | int:
        return await claim(self._runs, self._producers, run, events, replay)

    async def _drain_runs(self, grace: float) -> None:
        await drain(self._producers, self._reading, grace, HANDOVER, logger, GONE)

    def _stop(self) -> None:
        self._runs.close()
        self._reading.cancel()
