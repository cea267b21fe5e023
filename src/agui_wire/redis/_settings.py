"""A store's settings: its options checked once, and the timings derived from them.

Contract: ``Settings`` raises ``ValueError`` naming the bad option (those every
backend takes are checked by ``_runstore.options``, which derives ``poll``, here
the ``XREAD BLOCK`` time too; or a client that cannot work: responses decoded to
``str``, too few connections, a cluster client whose ``socket_timeout`` is below
the blocking read) and otherwise holds plain values, read by every other module
and changed by none. The Redis timings are derived here alone: the store's own
deadlines (a blocking read, a command round trip) whatever the client's
``socket_timeout``, and ``silence`` (``lease + 1 s``: a live run's producer and
readers carry on while its lease may still be valid in Redis, so a Redis node
silent that long, or a call of theirs refused that long, fails them;
``reconnect`` bounds only the calls that find or claim a run).
"""

from __future__ import annotations

from typing import Any, Final

from redis.asyncio.cluster import RedisCluster

from .._runstore.options import Options, check_seconds
from ._keys import Layout

#: Connections the short commands of one store use (each a pipeline at a time).
COMMAND_LANES: Final = 4
#: Connections the page reads of one store use (replays, catch-ups, folds): lanes
#: of their own, so a short command never waits behind a page, in a pipeline or for
#: a lane.
PAGE_LANES: Final = 2
#: The most lanes (blocking ``XREAD`` connections) the tails of one store open.
MAX_LANES: Final = 16
#: Connections a store may hold at once: the lanes of every kind, and one to load scripts.
CONNECTIONS: Final = COMMAND_LANES + PAGE_LANES + MAX_LANES + 1


class Settings:
    """One store's checked options and derived timings (see ``RunStore`` for each)."""

    __slots__ = (
        "backlog",
        "batch",
        "cluster",
        "command_timeout",
        "layout",
        "lease",
        "lease_ms",
        "maxlen",
        "page_bytes",
        "poll",
        "poll_ms",
        "read_timeout",
        "reconnect",
        "replica_acks",
        "running_ttl_ms",
        "silence",
        "ttl",
        "ttl_ms",
    )

    def __init__(
        self,
        redis: Any,
        *,
        prefix: str,
        ttl: float,
        lease: float,
        maxlen: int | None,
        reconnect: float,
        batch: int,
        backlog: int,
        page_bytes: int,
        shards: int,
        replica_acks: int = 0,
    ) -> None:
        self.cluster = isinstance(redis, RedisCluster)
        kwargs = _client_kwargs(redis, self.cluster)
        options = Options(
            ttl=ttl, lease=lease, maxlen=maxlen, batch=batch, backlog=backlog, page_bytes=page_bytes
        )
        self.reconnect = check_seconds("reconnect", reconnect)
        if isinstance(replica_acks, bool) or not isinstance(replica_acks, int) or replica_acks < 0:
            raise ValueError(f"replica_acks must be an int >= 0, not {replica_acks!r}")
        self.replica_acks = replica_acks
        self.layout = Layout(prefix, shards)
        self.ttl = options.ttl
        self.lease = options.lease
        self.maxlen = options.maxlen
        self.batch = options.batch
        self.backlog = options.backlog
        self.page_bytes = options.page_bytes
        # Seconds between lease checks of a quiet run (and the ``XREAD BLOCK`` time).
        self.poll = options.poll
        self.poll_ms = max(1, int(self.poll * 1000))
        # Deadlines of the store's own: a blocking read ``poll`` plus a margin, a
        # command round trip; Redis silent for ``silence`` s fails live producers
        # and readers (StoreUnavailable): a lease outlives a shorter stall.
        self.read_timeout = self.poll + max(1.0, self.poll)
        self.command_timeout = max(2.0, 2 * self.poll)
        self.silence = self.lease + 1.0
        self.lease_ms = max(1, int(self.lease * 1000))
        self.ttl_ms = max(1, int(self.ttl * 1000))
        self.running_ttl_ms = self.lease_ms + self.ttl_ms  # a live run's keys
        socket_timeout = kwargs.get("socket_timeout")
        if self.cluster and socket_timeout is not None and socket_timeout < self.read_timeout:
            raise ValueError(
                f"a Redis Cluster client's socket_timeout ({socket_timeout:g} s) must be at "
                f"least the store's blocking read, {self.read_timeout:g} s (XREAD BLOCK "
                f"{self.poll:g} s, poll = min(1 s, lease / 4), plus a margin): below it "
                "every quiet run would look like a dead Redis"
            )


def _client_kwargs(redis: Any, cluster: bool) -> dict[str, Any]:
    """The client's connection options, once it is one the store can work with."""
    if cluster:
        kwargs = redis.get_connection_kwargs()
    else:
        kwargs = getattr(getattr(redis, "connection_pool", None), "connection_kwargs", {})
    if kwargs.get("decode_responses"):
        raise ValueError("RunStore needs a Redis client with decode_responses=False")
    pool = getattr(redis, "connection_pool", None)
    limit = getattr(pool, "max_connections", None) or kwargs.get("max_connections")
    if isinstance(limit, int) and limit < CONNECTIONS:
        raise ValueError(
            f"RunStore needs a client with max_connections >= {CONNECTIONS}, not {limit}: "
            f"{COMMAND_LANES} command lanes, {PAGE_LANES} page lanes, up to {MAX_LANES} "
            "blocking reads and one to load scripts (the pool would refuse the rest)"
        )
    return dict(kwargs)
