"""A store's short calls to Redis: pipelined, retried, their refusals typed.

Strategy: every short command and script call goes through the store's
``Pipeliner`` (a few connections, batched, each round trip with a deadline).
What passes (``RETRYABLE``: a connection error, a timeout, a master demoted to a
replica, a cluster slot moving) is retried with backoff for ``reconnect``
seconds, then is ``StoreUnavailable``; the scripts are idempotent, so a retry
never stores twice. On a cluster a connection error reads the slot map again
(``heal``), so a failover's new master is used once it is elected. Blocking reads
are the tails' own (``_tails``).

Contract: ``call``/``script`` return the reply or raise a ``StoreError`` naming
the run: ``StoreUnavailable`` (retries ran out), ``StoreFull`` (out of memory),
``StoreCorrupted`` (a run key of the wrong type), ``StoreError`` (any other
refusal); ``StoreUnsupported`` from ``ready`` (Redis cannot run a script that
needs 7.0).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

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

from .._runstore.ids import CLOSED
from ..errors import StoreCorrupted, StoreError, StoreFull, StoreUnavailable, StoreUnsupported
from ._keys import RunKeys
from ._pipeline import Pipeliner, within
from ._scripts import Script
from ._settings import COMMAND_LANES, Settings

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

T = TypeVar("T")


class Calls:
    """One store's client, its command lanes and its retry policy."""

    def __init__(self, redis: Any, settings: Settings) -> None:
        self.redis = redis
        self.cluster = settings.cluster
        self.reconnect = settings.reconnect
        self.timeout = settings.command_timeout
        self.pipeliner = Pipeliner(redis, COMMAND_LANES, settings.command_timeout)
        self._healed = -1.0
        self.supported = False  # Redis took the script ``ready`` probes
        self._probing = asyncio.Lock()

    async def retry(self, keys: RunKeys, fn: Callable[[], Awaitable[T]]) -> T:
        """``await fn()``, retried on connection errors for ``reconnect`` s; a
        refusal is the ``StoreError`` that says why (``refused``)."""
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        delay = 0.05
        while True:
            try:
                return await fn()
            except RETRYABLE as exc:  # first: READONLY, TRYAGAIN, ASK are ResponseErrors too
                if self.pipeliner.closed is not None:
                    raise StoreUnavailable(keys.run_id, CLOSED) from None
                now = loop.time()
                if deadline is None:
                    deadline = now + self.reconnect
                if now >= deadline:
                    what = (
                        "refused the command" if isinstance(exc, ResponseError) else "unreachable"
                    )
                    raise StoreUnavailable(
                        keys.run_id, f"Redis {what} for {self.reconnect:g} s: {exc}"
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
        return {"target_nodes": self.redis.get_node_from_key(key.decode())}

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
            await self.redis.nodes_manager.initialize()

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
                    found = await self.pipeliner.call("TYPE", key)
                    found = found.encode() if isinstance(found, str) else bytes(found)
                    if found not in (kind, b"none"):
                        what = f"the key is a {found.decode()}, not a {kind.decode()}"
                        return StoreCorrupted(run_id, key, None, what)
            return StoreCorrupted(run_id, keys.stream, None, text)
        return StoreError(run_id, f"Redis refused a command: {text}")

    async def call(self, keys: RunKeys, *args: Any) -> Any:
        """One command of the run, pipelined and retried."""
        return await self.retry(keys, lambda: self.pipeliner.call(*args))

    async def run_script(
        self,
        keys: RunKeys,
        script: Script,
        names: list[str],
        args: list[Any],
        first: bool = False,
    ) -> list[Any]:
        """A script's reply as Redis sent it, pipelined (``first``: ahead of what is
        queued) and retried."""

        def send() -> Awaitable[Any]:
            return self.pipeliner.call(
                "EVALSHA", script.sha, len(names), *names, *args, script=script.body, first=first
            )

        try:  # the usual case without the retry loop's frames (a call per event)
            return list(await send())
        except RETRYABLE:
            return list(await self.retry(keys, send))
        except ResponseError as exc:
            raise await self.refused(keys, exc) from exc

    async def script(
        self,
        keys: RunKeys,
        script: Script,
        names: list[str],
        args: list[Any],
        first: bool = False,
    ) -> list[Any]:
        """A rule script's reply: ``[code, last, ...]`` with the two first as ints."""
        reply = await self.run_script(keys, script, names, args, first)
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
                try:
                    await within(self.redis.script_load(script.body), self.timeout)
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
