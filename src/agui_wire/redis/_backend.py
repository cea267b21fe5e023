"""The store's settings and its calls to Redis, shared by the read and write sides.

Contract: ``Backend`` checks the settings once (``ValueError`` naming the bad one),
registers the scripts, and makes every Redis call through ``retry``: a connection
error is retried with backoff for ``reconnect`` seconds, then is
``StoreUnavailable`` (the scripts are idempotent, so a retry never stores twice).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..errors import StoreUnavailable
from . import _keys
from ._batches import PROTO

_RETRYABLE: Final = (RedisConnectionError, RedisTimeoutError, OSError)


class Backend:
    """One store's Redis client, settings and scripts (see ``RunStore`` for each)."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        prefix: str,
        ttl: float,
        lease: float,
        maxlen: int | None,
        reconnect: float,
        batch: int,
        backlog: int,
    ) -> None:
        kwargs = getattr(getattr(redis, "connection_pool", None), "connection_kwargs", {})
        if kwargs.get("decode_responses"):
            raise ValueError("RunStore needs a Redis client with decode_responses=False")
        for name, value in (("ttl", ttl), ("lease", lease), ("reconnect", reconnect)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if maxlen is not None and (
            isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1
        ):
            raise ValueError(f"maxlen must be a positive int or None, not {maxlen!r}")
        for name, count in (("batch", batch), ("backlog", backlog)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"{name} must be a positive int, not {count!r}")
        self.redis = redis
        self.prefix = prefix
        self.ttl = float(ttl)
        self.lease = float(lease)
        self.maxlen = maxlen
        self.reconnect = float(reconnect)
        self.batch = batch
        self.backlog = backlog
        # Seconds between lease checks of a quiet run (and the ``XREAD BLOCK`` time).
        self.poll = min(1.0, self.lease / 4)
        self.poll_ms = max(1, int(self.poll * 1000))
        self.lease_ms = max(1, int(self.lease * 1000))
        self.ttl_ms = max(1, int(self.ttl * 1000))
        self.running_ttl_ms = self.lease_ms + self.ttl_ms
        self.acquire = redis.register_script(_keys.ACQUIRE)
        self.append = redis.register_script(_keys.APPEND)
        self.finish = redis.register_script(_keys.FINISH)
        self.renew = redis.register_script(_keys.RENEW)
        self.expire = redis.register_script(_keys.EXPIRE)
        self.expired_payload = PROTO.encode(
            {
                "type": "RUN_ERROR",
                "message": (
                    f"the run's producer stopped: no heartbeat within its lease of {self.lease:g} s"
                ),
                "code": _keys.LEASE_EXPIRED,
            }
        )[4:]

    def key(self, run_id: str) -> str:
        return _keys.stream_key(self.prefix, run_id)

    def keys(self, run_id: str) -> list[str]:
        """The run's stream and lease keys, as the scripts take them."""
        return [_keys.stream_key(self.prefix, run_id), _keys.lease_key(self.prefix, run_id)]

    async def retry(self, run_id: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, retried on connection errors for ``reconnect`` s."""
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        delay = 0.05
        while True:
            try:
                return await fn(*args, **kwargs)
            except _RETRYABLE as exc:
                now = loop.time()
                if deadline is None:
                    deadline = now + self.reconnect
                if now >= deadline:
                    raise StoreUnavailable(
                        run_id, f"Redis unreachable for {self.reconnect:g} s: {exc}"
                    ) from exc
                await asyncio.sleep(min(delay, deadline - now))
                delay = min(delay * 2, 1.0)

    async def script(
        self, run_id: str, script: Any, keys: list[str], args: list[Any]
    ) -> tuple[int, int]:
        code, last = await self.retry(run_id, script, keys=keys, args=args)
        return int(code), int(last)

    async def expire_check(self, run_id: str, known: int, terminal: bool) -> tuple[int, int]:
        return await self.script(
            run_id,
            self.expire,
            self.keys(run_id),
            [known, self.ttl_ms, self.expired_payload, "1" if terminal else "0"],
        )

    async def length(self, run_id: str) -> int:
        """The index of the run's last stored event (0: none)."""
        found = await self.retry(run_id, self.redis.xrevrange, self.key(run_id), "+", "-", count=1)
        return _keys.parse_id(found[0][0])[0] if found else 0
