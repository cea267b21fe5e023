"""``agui_wire.redis._calls`` on a real redis-server: a store's calls retried while
Redis is unreachable (then ``StoreUnavailable`` naming the window: ``lease + 1 s``
for a live run's calls, ``reconnect`` for those that find or claim one), its refusals
typed (out of memory ``StoreFull``, a key of the wrong type ``StoreCorrupted``
naming the key, anything else ``StoreError``), a rule script's reply with its code
and index as ints, and ``ready``'s probe passing once on Redis 7 (refusing 6.2:
tests/redis/test_redis_version.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from redis.exceptions import ResponseError

from agui_wire.errors import StoreCorrupted, StoreError, StoreFull, StoreUnavailable
from agui_wire.redis import RunStore
from agui_wire.redis._calls import Calls
from agui_wire.redis._producer import FAIL
from agui_wire.redis._scripts import Script
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio


def calls_of(opened: Opened, url: str, **options: Any) -> tuple[Calls, Any]:
    store = opened.store(RunStore(opened.redis(url), **options))
    return Calls(store.redis, store._settings), store._settings.layout.keys(None, "run")


async def test_a_refusal_is_typed(opened: Opened, redis_server: RedisServer) -> None:
    calls, keys = calls_of(opened, redis_server.url)
    full = await calls.refused(keys, ResponseError("OOM command not allowed when used memory"))
    assert isinstance(full, StoreFull)
    other = await calls.refused(keys, ResponseError("ERR unknown command"))
    assert type(other) is StoreError
    assert "Redis refused a command: ERR unknown command" in str(other)
    r = opened.redis(redis_server.url)
    await r.set(keys.stream, "a string, not a stream")
    with pytest.raises(StoreCorrupted) as info:
        await calls.call(keys, "XLEN", keys.stream)
    assert info.value.key == keys.stream
    assert "the key is a string, not a stream" in str(info.value)


async def test_an_unreachable_redis_is_retried_then_unavailable(
    opened: Opened, fresh_redis: Callable[..., RedisServer]
) -> None:
    server = fresh_redis()
    calls, keys = calls_of(opened, server.url, lease=0.5, reconnect=0.3)
    assert await calls.call(keys, "PING") == b"PONG"
    server.kill()
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(StoreUnavailable, match=r"Redis unreachable for 1\.5 s"):
        await calls.call(keys, "PING")  # a live run's: lease + 1 s
    assert 1.5 <= loop.time() - start < 6
    start = loop.time()
    with pytest.raises(StoreUnavailable, match=r"Redis unreachable for 0\.3 s"):
        await calls.call(keys, "PING", patience=0.3)  # finding a run: reconnect
    assert 0.3 <= loop.time() - start < 5
    restart = asyncio.ensure_future(asyncio.to_thread(server.start))
    calls2, _ = calls_of(opened, server.url, reconnect=10)
    assert await calls2.call(keys, "PING") == b"PONG"  # retried until Redis is back
    await restart


async def test_a_rule_scripts_reply_and_the_probe(
    opened: Opened, redis_server: RedisServer
) -> None:
    calls, keys = calls_of(opened, redis_server.url)
    script = Script("return {'0', '7', 'x'}")
    assert await calls.script(keys, script, [keys.stream], []) == [0, 7, b"x"]
    assert not calls.supported
    await calls.ready(keys, FAIL)
    assert calls.supported
    await calls.ready(keys, FAIL)  # once it has, at once
