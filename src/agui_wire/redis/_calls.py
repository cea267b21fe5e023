"""A store's short calls to Redis: pipelined per node, retried, their refusals typed.

Strategy: every short command and script call goes through the command lanes
(``Pipeliner``: a few connections, batched, each round trip with a deadline) of
the Redis node that serves its run: one set per node, so a stalled master of a
cluster holds up the calls of its own runs only, and ``heard(node)`` says when
that node last answered (the watchdog and the tails read it). The scripts that
read a page of a run (``Script.pages``) go through page lanes of their own (per
node too), so a short command (an append, a lease renewal) never waits behind a
page: not in one pipeline, not for a lane; page lanes send a page as soon as it
is asked for (no ``LINGER``: a page is worth its round trip). What passes (``RETRYABLE``: a
connection error, a timeout, a master demoted to a replica, a cluster slot
moving, a master without the replicas it needs) is retried with backoff, then is
``StoreUnavailable``: for ``patience`` seconds, by default the store's
``silence`` (``lease + 1 s``: a live run's producer and readers carry on through
anything shorter than its lease), ``reconnect`` for a call that finds or claims
a run; an outage is logged once (``_outage``). The scripts are idempotent, so a
retry never stores twice. On a cluster a connection error reads the slot map
again (``heal``, with a deadline), so a failover's new master is used once it is
elected. Blocking reads are the tails' own (``_tails``). Telemetry counts each
node's lanes of both kinds (``agui.store.lanes``) from their first call to ``close``.

Contract: ``call``/``script`` return the reply or raise a ``StoreError`` naming
the run: ``StoreUnavailable`` (retries ran out), ``StoreFull`` (out of memory),
``StoreCorrupted`` (a run key of the wrong type), ``StoreError`` (any other
refusal); ``StoreUnsupported`` from ``ready`` (Redis cannot run a script that
needs 7.0).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

from redis.exceptions import (
    AskError,
    ClusterError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .._runstore import observe
from .._runstore.ids import CLOSED
from ..errors import StoreCorrupted, StoreError, StoreFull, StoreUnavailable, StoreUnsupported
from ._keys import RunKeys
from ._outage import Outage
from ._pipeline import Pipeliner, Then, within
from ._scripts import Script
from ._settings import COMMAND_LANES, PAGE_LANES, Settings

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
    NoScriptError,  # a script loaded, then gone: the node restarted or was replaced
)

#: Refusals that pass too: a master with fewer replicas than it needs to take writes
#: (``min-replicas-to-write``), or than the store waits for (``replica_acks``); a
#: blocking read let go because its master became a replica; a replica that lost
#: its master (``replica-serve-stale-data no``).
PASSING: Final = ("NOREPLICAS", "UNBLOCKED", "MASTERDOWN")

T = TypeVar("T")


def passes(exc: BaseException) -> bool:
    """Is ``exc`` a fault that may pass (retried), not a refusal that stands?"""
    return isinstance(exc, RETRYABLE) or (
        isinstance(exc, ResponseError) and str(exc).startswith(PASSING)
    )


class Calls:
    """One store's client, its command and page lanes (per node) and its retry policy."""

    def __init__(self, redis: Any, settings: Settings) -> None:
        self.redis = redis
        self.cluster = settings.cluster
        self.layout = settings.layout
        self.reconnect = settings.reconnect
        self.patience = settings.silence  # a live run's calls
        self.acks = settings.replica_acks
        self.timeout = settings.command_timeout
        self._lanes: dict[str, Pipeliner] = {}  # by node name ("" on one Redis)
        self._page_lanes: dict[str, Pipeliner] = {}
        self._one: Pipeliner | None = None  # the command lanes, on one Redis
        self._counted: list[observe.Live | None] = []  # telemetry: agui.store.lanes
        self.outage = Outage()
        self.closed = False
        self._healed = -1.0
        self.supported = False  # Redis took the script ``ready`` probes
        self._probing = asyncio.Lock()

    def node(self, key: str | bytes) -> str:
        """The name of the node serving ``key`` now (``""`` on one Redis); a cluster
        slot without a master yet raises a ``RETRYABLE`` error."""
        if not self.cluster:
            return ""
        name: str = self.redis.get_node_from_key(
            key.decode() if isinstance(key, bytes) else key
        ).name
        return name

    def shard_node(self, shard: int) -> str:
        """The name of the node serving the runs of ``shard`` now."""
        return self.node("{" + self.layout.tags[shard] + "}")

    def lanes(self, node: str) -> Pipeliner:
        """The command lanes of ``node``."""
        lanes = self._lanes.get(node)
        if lanes is None:
            lanes = self._lanes[node] = Pipeliner(
                self.redis, COMMAND_LANES, self.timeout, node=node or None, acks=self.acks
            )
            if self.closed:
                lanes.close()
            else:
                self._counted.append(observe.lanes_opened(observe.COMMAND, node, COMMAND_LANES))
            if not self.cluster:
                self._one = lanes
        return lanes

    def page_lanes(self, node: str) -> Pipeliner:
        """The page lanes of ``node`` (``Script.pages``: replays, catch-ups, folds)."""
        lanes = self._page_lanes.get(node)
        if lanes is None:
            lanes = self._page_lanes[node] = Pipeliner(
                self.redis, PAGE_LANES, self.timeout, node=node or None, linger=0.0
            )
            if self.closed:
                lanes.close()
            else:
                self._counted.append(observe.lanes_opened(observe.PAGE, node, PAGE_LANES))
        return lanes

    def close(self) -> None:
        """The store closes: every node's lanes of both kinds fail what they hold and
        refuse more."""
        self.closed = True
        for lanes in [*self._lanes.values(), *self._page_lanes.values()]:
            lanes.close()
        counted, self._counted = self._counted, []
        for live in counted:
            observe.ended(live)

    def heard(self, node: str) -> float:
        """Loop time ``node`` last answered the store (a round trip of either kind of
        lanes, or a tail's read)."""
        heard = [
            lanes.heard for lanes in (self._lanes.get(node), self._page_lanes.get(node)) if lanes
        ]
        return max(heard, default=-math.inf)

    def hear(self, node: str, when: float) -> None:
        lanes = self.lanes(node)
        lanes.heard = max(lanes.heard, when)

    def send(self, keys: RunKeys, *args: Any) -> Awaitable[Any]:
        """One command of the run through its node's command lanes, once (not retried)."""
        return self.lanes(self.node(keys.stream)).call(*args)

    async def retry(
        self, keys: RunKeys, fn: Callable[[], Awaitable[T]], patience: float | None = None
    ) -> T:
        """``await fn()``, retried on connection errors for ``patience`` s (default:
        a live run's, ``silence``); a refusal is the ``StoreError`` that says why
        (``refused``)."""
        loop = asyncio.get_running_loop()
        patience = self.patience if patience is None else patience
        deadline: float | None = None
        failed = ""
        delay = 0.05
        while True:
            try:
                reply = await fn()
            except Exception as exc:
                if not passes(exc):
                    if isinstance(exc, ResponseError):
                        raise await self.refused(keys, exc) from exc
                    raise
                if self.closed:
                    raise StoreUnavailable(keys.run_id, CLOSED) from None
                now = loop.time()
                if deadline is None:
                    deadline = now + patience
                if now >= deadline:
                    what = (
                        "refused the command" if isinstance(exc, ResponseError) else "unreachable"
                    )
                    error = StoreUnavailable(keys.run_id, f"Redis {what} for {patience:g} s: {exc}")
                    self.outage.unavailable(error)
                    raise error from exc
                await asyncio.sleep(min(delay, deadline - now))
                delay = min(delay * 2, 1.0)
                with contextlib.suppress(Exception):  # (no master for the slot: any)
                    failed = self.node(keys.stream)
                await self.heal(failed)
            else:
                if self.outage.since is not None:
                    self.outage.answered()
                return reply

    def node_of(self, key: bytes) -> dict[str, Any]:
        """``execute_command`` options sending a command straight to the master of
        ``key``'s slot (nothing on one Redis)."""
        if not self.cluster:
            return {}
        return {"target_nodes": self.redis.get_node_from_key(key.decode())}

    async def heal(self, failed: str = "") -> None:
        """After a connection error on a cluster (with node ``failed``): read the slot
        map again (at most every half second), so a failover's new master is used
        once it is elected. The map is asked of the other nodes first (a stalled
        node would hold the refresh, and every call waiting for it), within a
        round trip's deadline."""
        if not self.cluster:
            return
        loop = asyncio.get_running_loop()
        if loop.time() - self._healed < 0.5:
            return
        self._healed = loop.time()
        with contextlib.suppress(Exception):  # a node still down: the next error asks again
            await within(
                self.redis.nodes_manager.initialize(last_failed_node_name=failed or None),
                self.timeout,
            )

    async def refused(self, keys: RunKeys, exc: ResponseError) -> StoreError:
        """Redis refused a command of the run: the typed error that says why."""
        run_id = keys.run_id
        text = str(exc)
        if isinstance(exc, OutOfMemoryError) or text.startswith("OOM"):
            return StoreFull(run_id, f"Redis is full (maxmemory, policy noeviction): {text}")
        if text.startswith("WRONGTYPE"):
            expected = {keys.stream: b"stream", keys.lease: b"string"}
            for key, kind in expected.items():
                with contextlib.suppress(Exception):  # asked to name it; the refusal stands
                    found = await self.send(keys, "TYPE", key)
                    found = found.encode() if isinstance(found, str) else bytes(found)
                    if found not in (kind, b"none"):
                        what = f"the key is a {found.decode()}, not a {kind.decode()}"
                        return StoreCorrupted(run_id, key, None, what)
            return StoreCorrupted(run_id, keys.stream, None, text)
        return StoreError(run_id, f"Redis refused a command: {text}")

    async def call(self, keys: RunKeys, *args: Any, patience: float | None = None) -> Any:
        """One command of the run, pipelined and retried."""
        return await self.retry(keys, lambda: self.send(keys, *args), patience)

    async def run_script(
        self,
        keys: RunKeys,
        script: Script,
        names: list[str],
        args: list[Any],
        patience: float | None = None,
        durable: bool = False,
        first: bool = False,
    ) -> list[Any]:
        """A script's reply as Redis sent it, pipelined (on the page lanes for a
        ``Script.pages``; ``first``: ahead of what is queued) and retried
        (``durable``: a write acknowledged once ``replica_acks`` replicas have it)."""

        def send() -> Awaitable[Any]:
            node = self.node(keys.stream)
            lanes = self.page_lanes(node) if script.pages else self.lanes(node)
            return lanes.script(script, names, args, durable=durable, first=first)

        try:  # the usual case without the retry loop's frames (a call per event)
            reply = list(await send())
        except Exception as exc:
            if passes(exc):
                return list(await self.retry(keys, send, patience))
            if isinstance(exc, ResponseError):
                raise await self.refused(keys, exc) from exc
            raise
        if self.outage.since is not None:
            self.outage.answered()
        return reply

    def submit(
        self,
        keys: RunKeys,
        script: Script,
        names: list[str],
        args: list[Any],
        future: asyncio.Future[Any],
        then: Then,
        durable: bool = False,
    ) -> None:
        """A script sent once through the run's node's lanes, its reply (or error)
        handed to ``then.replied`` as it is read (``Pipeliner.submit``): no task, no
        coroutine. The caller retries an error (``run_script``); a reply counts
        as Redis answering."""
        lanes = self._one
        if lanes is None:
            try:
                lanes = self.lanes(self.node(keys.stream))
            except Exception as exc:  # (a cluster with no master for the slot)
                then.replied(exc)
                return
        lanes.submit(args, future, then, script, names, durable)

    async def script(
        self,
        keys: RunKeys,
        script: Script,
        names: list[str],
        args: list[Any],
        patience: float | None = None,
        durable: bool = False,
        first: bool = False,
    ) -> list[Any]:
        """A rule script's reply: ``[code, last, ...]`` with the two first as ints."""
        reply = await self.run_script(keys, script, names, args, patience, durable, first)
        reply[0], reply[1] = int(reply[0]), int(reply[1])
        return reply

    async def ready(self, keys: RunKeys, script: Script) -> None:
        """Redis can run ``script``, the one that needs the most of it (7.0: a flags
        line); else ``StoreUnsupported``, asked again on the next call (Redis may be
        upgraded meanwhile). Once it has, every later call returns at once."""
        if self.supported:
            return
        async with self._probing:
            if self.supported:
                return

            async def load() -> None:
                try:  # on the run's node (a cluster client would ask every master)
                    await within(
                        self.redis.execute_command(
                            "SCRIPT LOAD", script.body, **self.node_of(keys.stream.encode())
                        ),
                        self.timeout,
                    )
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

            await self.retry(keys, load, self.reconnect)
            self.supported = True
