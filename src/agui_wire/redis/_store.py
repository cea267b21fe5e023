"""``RunStore``: the public face of the run store, putting its sides together.

Contract: every method checks its arguments at once (``ValueError``); the write
side is ``_write``, the read side ``_read``/``_tails``, HTTP ``_http``. The store
owns its background runs and tails and stops them in ``aclose``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any

import redis.asyncio as aioredis

from .._streaming import HasHeaders
from ..asgi import EventStreamResponse
from ._backend import Backend
from ._batches import Batch, Prefix
from ._http import RunResponse
from ._read import Subscription
from ._tails import Tails
from ._write import claim

logger = logging.getLogger("agui_wire.redis")


class RunStore:
    """AG-UI runs on Redis Streams (see the package doc).

    ``redis`` is a ``redis.asyncio.Redis`` made with ``decode_responses=False``.
    ``prefix`` starts every key (``{prefix}{run_id}`` in braces, a Redis Cluster
    hash tag, so a run's keys share a slot). ``ttl``: seconds a run is kept
    after its end (and after the last heartbeat of a producer that vanished).
    ``lease``: seconds without a heartbeat after which a run's producer counts as
    dead. ``maxlen``: keep about this many events per run (``None``: all).
    ``reconnect``: seconds of Redis connection errors tolerated per call before
    ``StoreUnavailable``. ``batch``: events per Redis read and per append.
    ``backlog``: batches a subscriber may fall behind the tail before it reads
    from Redis instead.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        prefix: str = "agui:",
        ttl: float = 3600.0,
        lease: float = 30.0,
        maxlen: int | None = None,
        reconnect: float = 10.0,
        batch: int = 512,
        backlog: int = 64,
    ) -> None:
        self._backend = backend = Backend(
            redis,
            prefix=prefix,
            ttl=ttl,
            lease=lease,
            maxlen=maxlen,
            reconnect=reconnect,
            batch=batch,
            backlog=backlog,
        )
        self.redis = redis
        self.prefix = prefix
        self.ttl = backend.ttl
        self.lease = backend.lease
        self.maxlen = maxlen
        self.reconnect = backend.reconnect
        self.batch = batch
        self.backlog = backlog
        #: Seconds between lease checks of a quiet run (and the ``XREAD BLOCK`` time).
        self.poll = backend.poll
        self._tails = Tails(backend)
        self._tasks: set[asyncio.Task[int]] = set()

    # -- producing -------------------------------------------------------------------

    async def publish(self, run_id: str, events: Iterable[Any] | AsyncIterable[Any]) -> int:
        """Store the run's events as they come; returns the number of events in the
        run once it has ended. Raises ``RunInProgress`` if a live producer holds the
        run; a run that has ended already is not produced again (``events`` is closed
        unstarted). If ``events`` raises, the run ends with a ``RUN_ERROR`` and the
        exception propagates."""
        producer = await claim(self._backend, run_id, events)
        if producer is None:
            return await self._backend.length(run_id)
        return await producer.run()

    async def start(
        self, run_id: str, events: Iterable[Any] | AsyncIterable[Any]
    ) -> asyncio.Task[int] | None:
        """``publish`` in a background task, detached from the caller (a request
        that ends, or a client that leaves, does not stop it). Returns once the run
        is claimed, so a ``subscribe``/``response`` right after finds it; returns
        ``None`` (and closes ``events``) if the run has ended already. Raises
        ``RunInProgress`` like ``publish``. A failure of the task is logged."""
        producer = await claim(self._backend, run_id, events)
        if producer is None:
            return None
        task = asyncio.ensure_future(producer.run())
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[int]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background run failed", exc_info=task.exception())

    async def aclose(self) -> None:
        """Stop this store's background runs (they end with ``RUN_ERROR``, code
        ``CANCELLED``) and its tails. Call it on shutdown."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        self._tails.cancel()
        if tasks:
            await asyncio.wait(tasks)

    # -- reading ---------------------------------------------------------------------

    async def subscribe(
        self, run_id: str, after: int | None = None, *, compact: bool = False
    ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """``(event_id, event)`` for the run's events after ``after`` (all when
        ``None``), stored ones first, then live ones, until the run ends. With
        ``compact`` (and no ``after``) a snapshot stands for the events so far
        (``agui_wire._apply``); its events carry the id of the last event they
        stand for. Raises ``RunNotFound``, ``HistoryTrimmed``, ``RunLost``,
        ``StoreUnavailable``."""
        _check_after(after)
        subscription = Subscription(self._backend, self._tails, run_id, after, compact)
        async for batch in subscription.batches():
            if isinstance(batch, Prefix):
                for event in batch.events:
                    yield batch.last, event
            else:
                assert isinstance(batch, Batch)
                for item in batch.items():
                    yield item

    def response(
        self,
        run_id: str,
        request: HasHeaders | None = None,
        *,
        after: int | None = None,
        compact: bool = False,
        **options: Any,
    ) -> EventStreamResponse:
        """An ``EventStreamResponse`` streaming the run: transport negotiated from
        ``request`` (else the scope), resumed after ``after``, else after the
        request's ``Last-Event-ID`` or ``?after=n`` (read when the response runs).
        ``options`` go to ``EventStreamResponse`` (``keepalive``, ``strict``,
        ``headers``...). An unknown run is answered 404, a trimmed position 410,
        Redis unreachable 503 (with ``Retry-After``); see docs/scaling.md."""
        _check_after(after)
        return RunResponse(self._backend, self._tails, run_id, request, after, compact, options)


def _check_after(after: int | None) -> None:
    if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
        raise ValueError(f"after must be an event index >= 0 or None, not {after!r}")
