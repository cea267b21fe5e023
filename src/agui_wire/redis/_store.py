"""``RunStore``: the public face of the run store, putting its sides together.

Contract: every method checks its arguments at once (``ValueError``); the write
side is ``_claim``/``_producer``, the read side ``_reading``/``_tails``, HTTP
``_runstore.http``, a replica's shutdown ``_drain``. The store owns its
background runs and tails and stops them in ``aclose``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import Any

import redis.asyncio as aioredis

from .._runstore import observe
from .._runstore.batches import Batch, Prefix
from .._runstore.http import RunResponse
from .._runstore.ids import EventId, check_owner, parse_position
from .._streaming import HasHeaders
from ..asgi import EventStreamResponse
from ..errors import StoreDraining, StoreError
from ._calls import Calls
from ._claim import claim
from ._drain import drain, on_signal
from ._keys import RunKeys
from ._producer import Producer, Writing
from ._reading import Reading
from ._settings import Settings

logger = logging.getLogger("agui_wire.redis")


class RunStore:
    """AG-UI runs on Redis Streams (see the package doc).

    ``redis`` is a ``redis.asyncio.Redis`` or ``redis.asyncio.RedisCluster`` made
    with ``decode_responses=False``. ``prefix`` starts every key (no braces).
    ``ttl``: seconds a run is kept after its end (and after the last heartbeat of
    a producer that vanished). ``lease``: seconds without a heartbeat after which
    a run's producer counts as dead. ``maxlen``: keep about this many events per
    run (``None``: all). ``reconnect``: seconds of Redis connection errors
    tolerated per call before ``StoreUnavailable``; live producers and readers
    give up sooner, once Redis has not answered for ``min(reconnect, lease + 1)``
    s (a stalled or black-holed Redis: the store's calls have deadlines of their
    own). The client must allow 21 connections; a Redis Cluster client's
    ``socket_timeout``, if set, must be at least the blocking read
    (``poll + max(1, poll)``): ``ValueError`` otherwise. ``batch``: events per run
    in a tail's read and per append. ``backlog``: batches a subscriber may fall behind the
    tail before it reads from Redis instead. ``page_bytes``: payload bytes per
    replay page, per append and per reader's backlog (twice that); an event
    bigger is a page of its own. ``shards``: the Redis Cluster hash tags runs are
    spread over (at least the number of masters; part of every key, so every
    replica must use the same, as with ``prefix``).

    Every call names a run by ``run_id`` and ``owner`` together: a string your
    app derives from its authentication (user, tenant, session), hashed into the
    keys, so two owners never share a run and a reader with the wrong owner gets
    exactly what an unknown run gets. ``owner=None`` is one shared namespace (for
    single-tenant apps). A run id is a string of 1 to 256 UTF-8 bytes
    (``ValueError`` otherwise; HTTP 400 from ``response``).
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
        page_bytes: int = 1024 * 1024,
        shards: int = 16,
    ) -> None:
        self._settings = settings = Settings(
            redis,
            prefix=prefix,
            ttl=ttl,
            lease=lease,
            maxlen=maxlen,
            reconnect=reconnect,
            batch=batch,
            backlog=backlog,
            page_bytes=page_bytes,
            shards=shards,
        )
        self.redis = redis
        self.prefix = prefix
        self.ttl = settings.ttl
        self.lease = settings.lease
        self.maxlen = maxlen
        self.reconnect = settings.reconnect
        self.batch = batch
        self.backlog = backlog
        self.page_bytes = page_bytes
        self.shards = shards
        #: Seconds between lease checks of quiet runs (and the ``XREAD BLOCK`` time).
        self.poll = settings.poll
        calls = Calls(redis, settings)
        self._reading = Reading(settings, calls)
        self._writing = Writing(settings, calls)
        self._calls = calls
        self._tasks: set[asyncio.Task[Any]] = set()  # background runs, ends of runs
        self._drain: asyncio.Task[None] | None = None
        self._restore_signal: Callable[[], None] | None = None

    def stream_key(self, run_id: str, *, owner: str | None = None) -> str:
        """The Redis key of the run's stream (for operators: ``redis-cli XRANGE``)."""
        return self._settings.layout.keys(owner, run_id).stream

    # -- producing -------------------------------------------------------------------

    async def publish(
        self,
        run_id: str,
        events: Iterable[Any] | AsyncIterable[Any],
        *,
        owner: str | None = None,
        replay: bool = False,
    ) -> int:
        """Store the run's events as they come; returns the number of events in the
        run once it has ended. Raises ``RunInProgress`` if a live producer holds the
        run; a run that has ended already is not produced again (``events`` is closed
        unstarted). If ``events`` raises, the run ends with a ``RUN_ERROR`` and the
        exception propagates.

        A run whose producer vanished without ending it (its lease expired) is
        continued only with ``replay=True``: the caller replays the same run
        deterministically (a retried job), so the events Redis holds are skipped and
        the rest appended. Otherwise the old run is ended (``RUN_ERROR``,
        ``LEASE_EXPIRED``) and ``RunAbandoned`` raised, now and on every retry: a
        reader never gets two producers' events as one run. A run handed over by a
        draining store is taken over at once with ``replay=True`` (without it:
        ``RunInProgress``, a taker being on its way). A draining store raises
        ``StoreDraining``, for a new run and for a run it handed over."""
        keys = self._keys(owner, run_id, events)
        try:
            producer = await self._claim(keys, events, replay)
            if isinstance(producer, int):
                return producer
            return await producer.run()
        except StoreError as exc:
            observe.fault(exc)
            raise

    async def start(
        self,
        run_id: str,
        events: Iterable[Any] | AsyncIterable[Any],
        *,
        owner: str | None = None,
        replay: bool = False,
    ) -> asyncio.Task[int] | None:
        """``publish`` in a background task, detached from the caller (a request
        that ends, or a client that leaves, does not stop it). Returns once the run
        is claimed, so a ``subscribe``/``response`` right after finds it; returns
        ``None`` (and closes ``events``) if the run has ended already. Raises
        ``RunInProgress``, ``RunAbandoned`` and ``StoreDraining`` like ``publish``
        (``replay`` too). A failure of the task is logged (a run handed over by a
        drain at INFO)."""
        keys = self._keys(owner, run_id, events)
        try:
            producer = await self._claim(keys, events, replay)
        except StoreError as exc:
            observe.fault(exc)
            raise
        if isinstance(producer, int):
            return None
        task = asyncio.ensure_future(producer.run())
        self._track(task)
        task.add_done_callback(functools.partial(self._unstarted, producer))
        return task

    async def _claim(
        self, keys: RunKeys, events: Iterable[Any] | AsyncIterable[Any], replay: bool
    ) -> Producer | int:
        with observe.span(observe.CLAIM, keys.run_id):
            return await claim(self._writing, keys, events, replay)

    def _keys(self, owner: str | None, run_id: str, events: object) -> RunKeys:
        try:
            return self._settings.layout.keys(owner, run_id)
        except ValueError:
            _close_now(events)
            raise

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        observe.fault(error)
        if isinstance(error, StoreDraining):  # handed over: not a failure
            logger.info("background run handed over: %s", error)
        elif error is not None:
            logger.error("background run failed", exc_info=error)

    # -- shutting down ---------------------------------------------------------------

    @property
    def draining(self) -> bool:
        """Whether the store drains (or drained): it takes no new run. A readiness
        probe answers 503 then."""
        return self._writing.draining

    async def drain(self, grace: float) -> None:
        """Hand this replica's runs over, for a shutdown that does not cut them (a
        rolling deploy; docs/scaling.md). At once, ``publish``/``start`` of a new
        run raise ``StoreDraining`` (a ``StoreUnavailable``: HTTP 503 with
        ``Retry-After``). Runs this store produces that end within ``grace``
        seconds end as usual; each other one is handed over: its producer stops
        taking events, stores those it took and releases the run's lease
        without ending it (``publish`` raises ``StoreDraining``; a ``start``
        task ends with it, logged at INFO), so a producer elsewhere that replays
        the run (``replay=True``: the retried job, a client's resumed request)
        takes it over at once, and readers everywhere see one run: no
        ``RUN_ERROR``, no gap, no duplicate. A handed-over run nobody takes ends
        by its lease (``LEASE_EXPIRED``) within ``lease + poll`` of its release.
        Then this store's readers end (``subscribe``: ``StoreDraining``; a
        response: its body ends without a terminal event), so resuming clients
        (``agui_wire.client``, ``EventSource``) continue on another replica;
        responses opened later are 503s. Returns within ``grace`` plus
        ``reconnect`` plus a round trip's deadline (Redis unreachable: a run not
        released ends by its lease); a second call waits for the first drain."""
        await asyncio.shield(self._draining(_grace(grace)))

    def _draining(self, grace: float) -> asyncio.Task[None]:
        if self._drain is None:
            self._drain = asyncio.ensure_future(drain(self._writing, self._reading, grace))
            self._drain.add_done_callback(_drained)
        return self._drain

    def drain_on_signal(self, grace: float, sig: int = signal.SIGTERM) -> None:
        """``drain(grace)`` when the process gets ``sig`` (default ``SIGTERM``, what
        Kubernetes and ``docker stop`` send). Call it in the startup of your app's
        lifespan under uvicorn: it runs the handler uvicorn installed right
        after starting the drain, so uvicorn stops accepting connections and
        waits for the open responses the drain ends (set uvicorn's
        ``--timeout-graceful-shutdown`` above what ``drain`` may take); the
        lifespan's shutdown then calls ``aclose()``, which waits for the drain.
        Without a handler installed before (no uvicorn), the signal's default
        action follows the drain. Must be called in the main thread, with the
        loop running."""
        seconds = _grace(grace)
        if self._restore_signal is not None:
            self._restore_signal()
        self._restore_signal = on_signal(sig, lambda: self._draining(seconds))

    def _unstarted(self, producer: Producer, task: asyncio.Task[Any]) -> None:
        if task.cancelled() and producer.main is None:  # cancelled before it ran
            self._track(asyncio.ensure_future(producer.end_unstarted()))

    async def aclose(self) -> None:
        """Stop this store, whatever Redis does. Its background runs are cancelled
        and end with ``RUN_ERROR`` (code ``CANCELLED``) if Redis takes it within two
        round trips' deadlines (what was produced, then the end: 4 s, ``2 * max(2,
        2 * poll)``); a run it could not end by then is ended by its lease, as when
        its replica dies. Its readers, and every later call, get
        ``StoreUnavailable`` ("the store was closed"; an HTTP body ends without a
        terminal event, so the client resumes on another replica). Returns within
        about that time, plus what the runs' event sources take to close. Call it
        on shutdown. A drain in progress is waited for first (its runs are handed
        over, not cancelled)."""
        if self._restore_signal is not None:
            self._restore_signal()
            self._restore_signal = None
        if self._drain is not None and not self._drain.done():
            await asyncio.wait({self._drain})
        for task in self._tasks:
            task.cancel()
        self._reading.cancel()
        loop = asyncio.get_running_loop()
        grace = 2 * self._settings.command_timeout
        deadline = loop.time() + grace
        while (tasks := self._running()) and loop.time() < deadline:  # (unstarted ends join)
            await asyncio.wait(tasks, timeout=deadline - loop.time())
        if tasks:
            logger.warning(
                "%d run(s) not ended within %g s of closing the store (Redis does not "
                "answer?): their leases end them",
                len(tasks),
                grace,
            )
            for task in tasks:
                task.cancel()
        self._calls.pipeliner.close()
        while tasks := self._running():
            await asyncio.wait(tasks)

    def _running(self) -> set[asyncio.Task[Any]]:
        return {task for task in self._tasks if not task.done()}

    # -- reading ---------------------------------------------------------------------

    async def subscribe(
        self,
        run_id: str,
        after: int | str | None = None,
        *,
        compact: bool = False,
        owner: str | None = None,
    ) -> AsyncIterator[tuple[EventId, dict[str, Any]]]:
        """``(event_id, event)`` for the run's events after ``after`` (all when
        ``None``), stored ones first, then live ones, until the run ends. An
        ``EventId`` is the event's index (an ``int``, 1-based) carrying the run's
        generation: its ``str()``, ``n-<generation>``, is the SSE id a client gets.
        ``after`` is one of these, its string, or a plain index (then the
        generation is not checked). With ``compact`` (and no ``after``) a snapshot
        stands for the events so far (``agui_wire._apply``); its events carry the id
        of the last event they stand for. Raises ``RunNotFound``,
        ``ResumePastEnd`` (``after`` past the end of a run that has ended; a
        ``ValueError``), ``RunReplaced`` (``after`` is of a run that was lost and
        produced again), ``HistoryTrimmed``, ``RunLost``, ``StoreCorrupted``,
        ``StoreUnavailable``."""
        position = _position(after)
        subscription = self._reading.subscription(owner, run_id, position, compact)
        async for batch in subscription.batches():
            if isinstance(batch, Prefix):
                for event in batch.events:
                    yield batch.last_id, event
            else:
                assert isinstance(batch, Batch)
                for item in batch.items():
                    yield item

    def response(
        self,
        run_id: str,
        request: HasHeaders | None = None,
        *,
        after: int | str | None = None,
        compact: bool = False,
        owner: str | None = None,
        **options: Any,
    ) -> EventStreamResponse:
        """An ``EventStreamResponse`` streaming the run: transport negotiated from
        ``request`` (else the scope), resumed after ``after``, else after the
        request's ``Last-Event-ID`` or ``?after=`` (read when the response runs): an
        id as the store gives them (``n-<generation>``) or a plain index ``n``.
        ``options`` go to ``EventStreamResponse`` (``keepalive``, ``strict``,
        ``headers``...). Statuses (docs/scaling.md has the whole table): an unknown
        run 404; a run id that is not one, a position that is not one, or a
        position past the end of a run that has ended 400 (nothing of the run is
        sent); Redis unreachable 503 (with ``Retry-After``). A position the store
        cannot continue from is a 200 whose body is one ``RUN_ERROR``: trimmed
        (``HISTORY_TRIMMED``), of a run that was lost and produced again
        (``RUN_REPLACED``), lost (``RUN_LOST``); a key holding what the store never
        wrote, ``STORE_CORRUPTED`` (also when met later in the body). ``owner`` not a
        string: ``ValueError``."""
        position = _position(after)
        check_owner(owner)  # a caller's mistake now; a run id that is not one is a 400
        return RunResponse(
            self._reading.subscription, owner, run_id, request, position, compact, options
        )


def _grace(grace: object) -> float:
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace >= 0:
        raise ValueError(f"grace must be a number of seconds >= 0, not {grace!r}")
    return float(grace)


def _drained(task: asyncio.Task[None]) -> None:
    """A drain started by a signal has nobody awaiting it: say how it failed."""
    if not task.cancelled() and task.exception() is not None:
        logger.error("the run store's drain failed", exc_info=task.exception())


def _position(after: int | str | None) -> EventId | None:
    if after is None:
        return None
    try:
        return parse_position(after)
    except ValueError as exc:
        raise ValueError(f"after must be an event id, an index >= 0 or None: {exc}") from None


def _close_now(events: object) -> None:
    """Close a sync generator that will not run (an async one is closed by the
    garbage collector's finaliser; it was never started)."""
    close = getattr(events, "close", None)
    if close is not None and not hasattr(events, "aclose"):
        close()
