"""``RunStore`` on Redis: the run store's public methods (``_runstore.store``) over
the Redis sides: the write side ``_claim``/``_producer``, the read side
``_reading``/``_tails``, the drain's hand-over (``_leases.RELEASE``).

Contract: every method checks its arguments at once (``ValueError``). The store
owns its background runs and tails and stops them in ``aclose``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Iterable
from typing import Any, Final

import redis.asyncio as aioredis

from .._runstore.drain import drain
from .._runstore.store import Store
from ._calls import Calls
from ._claim import claim
from ._keys import RunKeys
from ._producer import Producer, Writing
from ._reading import Reading
from ._settings import Settings

logger = logging.getLogger("agui_wire.redis")

#: What a drain did with a run still live after its grace (its log says so).
HANDED_OVER: Final = "handed over"


class RunStore(Store[RunKeys]):
    """AG-UI runs on Redis Streams (see the package doc).

    ``redis`` is a ``redis.asyncio.Redis`` or ``redis.asyncio.RedisCluster`` made
    with ``decode_responses=False``. ``prefix`` starts every key (no braces).
    ``ttl``: seconds a run is kept after its end (and after the last heartbeat of
    a producer that vanished). ``lease``: seconds without a heartbeat after which
    a run's producer counts as dead. ``maxlen``: keep about this many events per
    run (``None``: all). ``reconnect``: seconds a call that claims or finds a run
    (``publish``/``start``; ``subscribe``/``response`` opening it: HTTP 503 after
    it) retries Redis before ``StoreUnavailable``. A live run's producer and
    readers keep retrying as long as its lease may still be valid in Redis,
    whatever ``reconnect`` says: they give up once the Redis node of the run has
    not answered for ``lease + 1`` s (a stall, a partition, Redis down: the store's
    calls have deadlines of their own), or has refused their call that long (a
    failover in progress), so a stall shorter than the lease loses nothing and a
    stalled master of a cluster fails its own runs only. The client must allow 23
    connections; a Redis Cluster client's ``socket_timeout``, if set, must be at
    least the blocking read (``poll + max(1, poll)``): ``ValueError`` otherwise.
    ``batch``: events per run in a tail's read and per append. ``backlog``: batches
    a subscriber may fall behind the tail before it reads from Redis instead.
    ``page_bytes``: payload bytes per replay page, per append and per reader's
    backlog (twice that); an event bigger is a page of its own. ``shards``: the
    Redis Cluster hash tags runs are spread over (at least the number of masters;
    part of every key, so every replica must use the same, as with ``prefix``).
    ``replica_acks``: Redis replicas that must hold each append (and the run's end)
    before the producer counts it stored (``WAIT`` after each round trip of writes;
    0: the master's reply, replication asynchronous): with 1, an event a producer
    stored survives a failover to that replica; without a replica, appends wait
    (retried for ``lease + 1`` s). A master failover that lost stored events ends
    the run with ``RUN_ERROR`` (code ``RUN_LOST``) for its readers.

    Every call names a run by ``run_id`` and ``owner`` together: a string your
    app derives from its authentication (user, tenant, session), hashed into the
    keys, so two owners never share a run and a reader with the wrong owner gets
    exactly what an unknown run gets. ``owner=None`` is one shared namespace (for
    single-tenant apps). A run id is a string of 1 to 256 UTF-8 bytes
    (``ValueError`` otherwise; HTTP 400 from ``response``).

    What Redis adds to the methods every store has (``_runstore.store``): a run
    whose producer vanished is taken over with ``replay=True``, and one handed over
    by a draining store at once (without it: ``RunInProgress``, a taker being on
    its way). ``drain`` hands a run still live after the grace over: its producer
    stores what it took and releases the lease without ending the run, so a
    producer elsewhere that replays the run (``replay=True``: the retried job, a
    client's resumed request) takes it at once and readers everywhere see one run;
    one nobody takes ends by its lease (``LEASE_EXPIRED``) within ``lease + poll``
    of its release. ``drain`` returns within ``grace`` plus ``reconnect`` plus a
    round trip's deadline. ``aclose`` gives its cancelled runs two round trips'
    deadlines (4 s, ``2 * max(2, 2 * poll)``) to store their ``RUN_ERROR``; a run
    it could not end by then is ended by its lease, as when its replica dies.
    """

    _reading: Reading

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
        replica_acks: int = 0,
    ) -> None:
        super().__init__()
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
            replica_acks=replica_acks,
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
        self.replica_acks = replica_acks
        #: Seconds between lease checks of quiet runs (and the ``XREAD BLOCK`` time).
        self.poll = settings.poll
        calls = Calls(redis, settings)
        self._calls = calls
        self._reading = Reading(settings, calls)
        self._writing = self._producers = Writing(settings, calls, self._reading.local)
        self._logger = logger
        # the cancelled runs' ends: what was produced, then the end (two round trips)
        self._close_grace = 2 * settings.command_timeout

    def stream_key(self, run_id: str, *, owner: str | None = None) -> str:
        """The Redis key of the run's stream (for operators: ``redis-cli XRANGE``)."""
        return self._settings.layout.keys(owner, run_id).stream

    def _locate(self, owner: str | None, run_id: str) -> RunKeys:
        return self._settings.layout.keys(owner, run_id)

    async def _claim(
        self, run: RunKeys, events: Iterable[Any] | AsyncIterable[Any], replay: bool
    ) -> Producer | int:
        return await claim(self._writing, run, events, replay)

    async def _drain_runs(self, grace: float) -> None:
        # a run let go: stored what it took and released (one retried call's window
        # and a round trip's deadline; Redis unreachable that long, its lease ends it)
        limit = self._settings.reconnect + self._settings.command_timeout
        await drain(self._writing, self._reading, grace, limit, logger, HANDED_OVER)

    def _stop(self) -> None:
        self._reading.cancel()

    def _closed(self) -> None:
        self._calls.close()
