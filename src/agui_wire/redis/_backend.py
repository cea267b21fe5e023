"""The store's settings and its calls to Redis, shared by the read and write sides.

Contract: ``Backend`` checks the settings once (``ValueError`` naming the bad one,
also a client that cannot work: too few connections, a cluster client whose
``socket_timeout`` is below the blocking read) and makes every short Redis call
through its ``Pipeliner`` (a few connections, batched, each round trip with a
deadline), retried: a connection error, a timeout or a refusal that passes
(``RETRYABLE``: a master demoted to a replica, a cluster slot moving) is retried
with backoff for ``reconnect`` seconds, then is ``StoreUnavailable`` (the scripts
are idempotent, so a retry never stores twice). Before a producer's first claim,
``ready`` makes sure Redis takes the store's scripts (``StoreUnsupported``). A
watchdog fails live producers once Redis has not answered for ``silence =
min(reconnect, lease + 1 s)`` (it pings a quiet Redis every half second), so a
stalled or black-holed Redis is noticed within ``lease + 2 s``. Blocking reads are
the tails' own (``_tails``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, Protocol, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import (
    AskError,
    ClusterError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .._codec.backend import encode_payload
from .._decoder import decode_proto
from ..errors import (
    RunLost,
    StoreCorrupted,
    StoreError,
    StoreFull,
    StoreUnavailable,
    StoreUnsupported,
)
from . import _keys
from ._batches import Batch, entries, fields_of
from ._keys import Layout, RunKeys
from ._pipeline import Pipeliner, within

# What passes: a connection, a cluster without a master for a slot yet (failover),
# a write to a node that just became a replica.
RETRYABLE: Final = (
    RedisConnectionError,
    RedisTimeoutError,
    OSError,
    ClusterError,
    RedisClusterException,
    TryAgainError,
    ReadOnlyError,
    AskError,  # and MovedError: a slot moved (the lanes name their node themselves)
)
#: Connections the short commands of one store use (each a pipeline at a time).
COMMAND_LANES: Final = 4
#: The most lanes (blocking ``XREAD`` connections) the tails of one store open.
MAX_LANES: Final = 16
#: Seconds between the watchdog's looks, and without a reply before it pings Redis.
WATCH: Final = 0.25
PROBE_AFTER: Final = 0.5
#: A lane's read this much past its ``BLOCK`` time is a stall (lease checks wait).
STALL_SLACK: Final = 0.25
FIRST_PAGE: Final = 32  # events in the first page of a replay (then 4x each page)
PAGE_EVENTS: Final = 16384  # events in a replay page at most (``page_bytes`` bounds it first)
#: What a reader is told when a run's keys vanished under it.
LOST: Final = (
    "the run's stream is gone: its keys were evicted (maxmemory policy) or lost "
    "(Redis restarted without persistence, or a failover lost them)"
)

T = TypeVar("T")


class _Script:
    __slots__ = ("body", "sha")

    def __init__(self, body: str) -> None:
        self.body = body
        self.sha = hashlib.sha1(body.encode()).hexdigest()


class Watched(Protocol):
    """A live producer, as the watchdog sees it."""

    def unavailable(self, reason: str) -> None: ...


def _quiet(future: asyncio.Future[Any]) -> None:
    """A probe's outcome is its reply time (``heard``), not its error."""
    if not future.cancelled():
        future.exception()


class Backend:
    """One store's Redis client, settings and scripts (see ``RunStore`` for each)."""

    def __init__(
        self,
        redis: aioredis.Redis | RedisCluster,
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
    ) -> None:
        if isinstance(redis, RedisCluster):
            kwargs = redis.get_connection_kwargs()
        else:
            kwargs = getattr(getattr(redis, "connection_pool", None), "connection_kwargs", {})
        if kwargs.get("decode_responses"):
            raise ValueError("RunStore needs a Redis client with decode_responses=False")
        pool = getattr(redis, "connection_pool", None)
        needed = COMMAND_LANES + MAX_LANES + 1
        limit = getattr(pool, "max_connections", None) or kwargs.get("max_connections")
        if isinstance(limit, int) and limit < needed:
            raise ValueError(
                f"RunStore needs a client with max_connections >= {needed}, not {limit}: "
                f"{COMMAND_LANES} command lanes, up to {MAX_LANES} blocking reads and one "
                "to load scripts (the pool would refuse the rest)"
            )
        for name, value in (("ttl", ttl), ("lease", lease), ("reconnect", reconnect)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if maxlen is not None and (
            isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1
        ):
            raise ValueError(f"maxlen must be a positive int or None, not {maxlen!r}")
        for name, count in (("batch", batch), ("backlog", backlog), ("page_bytes", page_bytes)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"{name} must be a positive int, not {count!r}")
        self.redis = redis
        self.cluster = isinstance(redis, RedisCluster)
        self.layout = Layout(prefix, shards)
        self.ttl = float(ttl)
        self.lease = float(lease)
        self.maxlen = maxlen
        self.reconnect = float(reconnect)
        self.batch = batch
        self.backlog = backlog
        self.page_bytes = page_bytes
        # Seconds between lease checks of a quiet run (and the ``XREAD BLOCK`` time).
        self.poll = min(1.0, self.lease / 4)
        self.poll_ms = max(1, int(self.poll * 1000))
        # Deadlines of the store's own, whatever the client's socket_timeout: a
        # blocking read ``poll`` plus a margin, a command round trip; Redis silent
        # for ``silence`` s fails live producers and readers (StoreUnavailable).
        self.read_timeout = self.poll + max(1.0, self.poll)
        self.command_timeout = max(2.0, 2 * self.poll)
        self.silence = min(self.reconnect, self.lease + 1.0)
        socket_timeout = kwargs.get("socket_timeout")
        if self.cluster and socket_timeout is not None and socket_timeout < self.read_timeout:
            raise ValueError(
                f"a Redis Cluster client's socket_timeout ({socket_timeout:g} s) must be at "
                f"least the store's blocking read, {self.read_timeout:g} s (XREAD BLOCK "
                f"{self.poll:g} s, poll = min(1 s, lease / 4), plus a margin): below it "
                "every quiet run would look like a dead Redis"
            )
        self.lease_ms = max(1, int(self.lease * 1000))
        self.ttl_ms = max(1, int(self.ttl * 1000))
        self.running_ttl_ms = self.lease_ms + self.ttl_ms
        self.pipeliner = Pipeliner(redis, COMMAND_LANES, self.command_timeout)
        self._healed = -1.0
        self.supported = False  # Redis took the failure script (``ready``)
        self._probing = asyncio.Lock()
        self.checks_held = -math.inf  # lease checks wait until then (a stall just ended)
        self.producers: set[Watched] = set()
        self._watchdog: asyncio.Task[None] | None = None
        self.acquire = _Script(_keys.ACQUIRE)
        self.append = _Script(_keys.APPEND)
        self.finish = _Script(_keys.FINISH)
        self.renew = _Script(_keys.RENEW)
        self.expire = _Script(_keys.EXPIRE)
        self.fail = _Script(_keys.FAIL)
        self.page = _Script(_keys.PAGE)
        self.expired_payload = encode_payload(
            {
                "type": "RUN_ERROR",
                "message": (
                    f"the run's producer stopped: no heartbeat within its lease of {self.lease:g} s"
                ),
                "code": _keys.LEASE_EXPIRED,
            }
        )

    # -- the watchdog: live producers fail when Redis is silent ----------------------

    def watch(self, producer: Watched) -> None:
        """``producer.unavailable(error)`` once Redis has not answered this store for
        ``silence`` s (pinged when quiet), until ``unwatch``."""
        self.producers.add(producer)
        if self._watchdog is None or self._watchdog.done():
            self.pipeliner.heard = max(self.pipeliner.heard, asyncio.get_running_loop().time())
            self._watchdog = asyncio.ensure_future(self._watch())

    def unwatch(self, producer: Watched) -> None:
        self.producers.discard(producer)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        probe: asyncio.Future[Any] | None = None
        try:
            while self.producers:
                await asyncio.sleep(WATCH)
                quiet = loop.time() - self.pipeliner.heard
                if quiet >= self.silence:
                    error = (
                        f"Redis did not answer for {quiet:.1f} s (the limit: {self.silence:g} s)"
                    )
                    for producer in list(self.producers):
                        producer.unavailable(error)
                    self.producers.clear()
                elif quiet >= PROBE_AFTER and (probe is None or probe.done()):
                    probe = asyncio.ensure_future(self.pipeliner.call("PING"))
                    probe.add_done_callback(_quiet)
        finally:
            if probe is not None:
                probe.cancel()

    def keys(self, owner: str | None, run_id: str) -> RunKeys:
        """The run's keys; ``ValueError`` for a run id or owner that is not one."""
        return RunKeys(self.layout, _keys.check_owner(owner), _keys.check_run_id(run_id))

    async def retry(self, keys: RunKeys | str, fn: Callable[[], Awaitable[T]]) -> T:
        """``await fn()``, retried on connection errors for ``reconnect`` s; a
        refusal is the ``StoreError`` that says why (``refused``)."""
        run_id = keys.run_id if isinstance(keys, RunKeys) else keys
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        delay = 0.05
        while True:
            try:
                return await fn()
            except RETRYABLE as exc:  # first: READONLY, TRYAGAIN, ASK are ResponseErrors too
                now = loop.time()
                if deadline is None:
                    deadline = now + self.reconnect
                if now >= deadline:
                    what = (
                        "refused the command" if isinstance(exc, ResponseError) else "unreachable"
                    )
                    raise StoreUnavailable(
                        run_id, f"Redis {what} for {self.reconnect:g} s: {exc}"
                    ) from exc
                await asyncio.sleep(min(delay, deadline - now))
                delay = min(delay * 2, 1.0)
                await self.heal()
            except ResponseError as exc:
                raise await self.refused(keys, exc) from exc

    def node_of(self, key: bytes) -> dict[str, Any]:
        """``execute_command`` options sending a command straight to the master of
        ``key``'s slot (nothing on one Redis)."""
        if not self.cluster:
            return {}
        node = self.redis.get_node_from_key(key.decode())  # type: ignore[union-attr]
        return {"target_nodes": node}

    async def heal(self) -> None:
        """After a connection error on a cluster: read the slot map again (at most
        every half second), so a failover's new master is used once it is elected."""
        if not self.cluster:
            return
        loop = asyncio.get_running_loop()
        if loop.time() - self._healed < 0.5:
            return
        self._healed = loop.time()
        with contextlib.suppress(Exception):  # a node still down: the next error asks again
            await self.redis.nodes_manager.initialize()  # type: ignore[union-attr]

    async def refused(self, keys: RunKeys | str, exc: ResponseError) -> StoreError:
        """Redis refused a command of the run: the typed error that says why."""
        run_id = keys.run_id if isinstance(keys, RunKeys) else keys
        text = str(exc)
        if isinstance(exc, OutOfMemoryError) or text.startswith("OOM"):
            return StoreFull(run_id, f"Redis is full (maxmemory, policy noeviction): {text}")
        if text.startswith("WRONGTYPE") and isinstance(keys, RunKeys):
            expected = {keys.stream: b"stream", keys.lease: b"string"}
            for key, kind in expected.items():
                with contextlib.suppress(Exception):  # asked to name it; the refusal stands
                    found = await self.pipeliner.call("TYPE", key)
                    found = found.encode() if isinstance(found, str) else bytes(found)
                    if found not in (kind, b"none"):
                        what = f"the key is a {found.decode()}, not a {kind.decode()}"
                        return StoreCorrupted(run_id, key, None, what)
            return StoreCorrupted(run_id, keys.stream, None, text)
        return StoreError(run_id, f"Redis refused a command: {text}")

    async def call(self, keys: RunKeys | str, *args: Any) -> Any:
        """One command, pipelined and retried."""
        return await self.retry(keys, lambda: self.pipeliner.call(*args))

    async def ready(self, keys: RunKeys) -> None:
        """Before a store's first producer claims a run: Redis can run the scripts a
        producer may need. The failure script is the one that needs 7.0 (its flags),
        and it runs only when a producer fails: found out then, the failed run would
        end only by its lease, ``lease`` seconds later and as ``LEASE_EXPIRED``, not
        by its error. So it is loaded first; a Redis that refuses it is
        ``StoreUnsupported`` (asked again on the next claim: Redis may be upgraded)."""
        if self.supported:
            return
        async with self._probing:
            if self.supported:
                return

            async def load() -> None:
                try:
                    await within(self.redis.script_load(self.fail.body), self.command_timeout)
                except ResponseError as exc:
                    # Redis < 7 reads the flags line as Lua: "Error compiling script (new
                    # function): user_script:1: unexpected symbol near '#'". Any other
                    # refusal (NOPERM, OOM, READONLY) is what ``retry`` makes of it.
                    if "compiling script" not in str(exc):
                        raise
                    raise StoreUnsupported(
                        keys.run_id,
                        f"Redis refused the store's scripts (they need Redis 7.0 or later): {exc}",
                    ) from exc

            await self.retry(keys, load)
            self.supported = True

    async def run_script(
        self, keys: RunKeys, script: _Script, names: list[str], args: list[Any]
    ) -> list[Any]:
        def send() -> Awaitable[Any]:
            return self.pipeliner.call(
                "EVALSHA", script.sha, len(names), *names, *args, script=script.body
            )

        try:  # the usual case without the retry loop's frames (a call per event)
            return list(await send())
        except RETRYABLE:
            return list(await self.retry(keys, send))
        except ResponseError as exc:
            raise await self.refused(keys, exc) from exc

    async def script(
        self, keys: RunKeys, script: _Script, names: list[str], args: list[Any]
    ) -> list[Any]:
        """A script's reply: ``[code, last, ...]`` with the two first as ints."""
        reply = await self.run_script(keys, script, names, args)
        reply[0], reply[1] = int(reply[0]), int(reply[1])
        return reply

    async def top(self, keys: RunKeys) -> tuple[int, int, dict[bytes, Any]] | None:
        """The run's last entry: its index, its sequence (the generation, or the
        generation + 1 for the end) and fields; ``None`` when the stream has none.
        An end marker is checked against the event before it (``StoreCorrupted``
        for an end of no generation of the run)."""
        found = await self.call(keys, "XREVRANGE", keys.stream, "+", "-", "COUNT", 2)
        if not found:
            return None
        (n, seq), *before = [_keys.parse_id(raw_id) for raw_id, _ in found]
        if seq % 2 and (before[0] != (n, seq - 1) if before else n != 0):
            raise StoreCorrupted(
                keys.run_id,
                keys.stream,
                f"{n}-{seq}",
                "an end marker of no generation of this run (not after its last event)",
            )
        return n, seq, fields_of(found[0][1])

    async def snapshot(self, keys: RunKeys) -> tuple[int, int, list[dict[str, Any]]] | None:
        """The producer's compact prefix of a run stored with ``maxlen``: the last
        event it stands for, the run's generation, its events; ``None``: none."""
        data = await self.call(keys, "GET", keys.snapshot)
        if data is None:
            return None
        head, _, frames = bytes(data).partition(b"\n")
        try:
            n, seq = _keys.parse_id(head)
            events = decode_proto(frames, unknown_events="raw")
        except ValueError as exc:  # DecodeError too
            raise StoreCorrupted(
                keys.run_id, keys.snapshot, None, f"not a snapshot: {exc}"
            ) from None
        return n, seq, events

    async def lease_generation(self, keys: RunKeys) -> int | bool | None:
        """The generation its lease names (a run with no event yet; ``None``: a
        lease without one), or ``False``: no lease."""
        holder = await self.call(keys, "GET", keys.lease)
        if holder is None:
            return False
        head, colon, _ = bytes(holder).partition(b":")
        return int(head) if colon and head.isdigit() else None

    async def pages(
        self, keys: RunKeys, cursor: int, generation: int | None, stop: int | None = None
    ) -> AsyncIterator[Batch]:
        """Stored events after ``cursor`` (up to ``stop``) as batches of at most
        ``page_bytes`` of payload (an event bigger is a batch of its own) and
        ``PAGE_EVENTS`` events: the first page at most ``FIRST_PAGE`` events, so
        the first events go out at once."""
        count = FIRST_PAGE
        gen = generation or 0  # (known whenever the cursor is past 0)
        upto = "+" if stop is None else f"{stop}-{gen}"
        ahead = asyncio.ensure_future(
            self.read_page(keys, f"({cursor}-{gen}" if cursor else "-", upto, count)
        )
        try:
            while True:
                found, cut = await ahead
                if not found:
                    if cursor and stop is None and not await self.call(keys, "EXISTS", keys.stream):
                        raise RunLost(keys.run_id, LOST)
                    return
                batch, ended = entries(keys, cursor, generation, found)
                del found
                generation = batch.generation
                if ended or (batch.last - cursor < count and not cut):
                    yield batch
                    return
                cursor = batch.last
                count = min(count * 4, PAGE_EVENTS)
                # the next page is read while the caller uses this one (two pages held)
                ahead = asyncio.ensure_future(
                    self.read_page(keys, f"({cursor}-{generation}", upto, count)
                )
                yield batch
        finally:
            ahead.cancel()

    async def read_page(
        self, keys: RunKeys, after: str, upto: str, count: int
    ) -> tuple[list[Any], bool]:
        """Stored entries after ``after`` up to ``upto``, at most ``count`` of them and
        at most ``page_bytes`` of payload (one entry at least), and whether the
        byte budget cut them short."""
        found, cut = await self.run_script(
            keys, self.page, [keys.stream], [after, upto, count, self.page_bytes]
        )
        return list(found), bool(cut)
