"""``agui_wire.redis._settings``: a store's timings derived from its options (the
blocking read, a round trip's deadline, the silence that fails live runs), and the
clients it refuses at once (responses decoded to ``str``, too few connections, a
cluster client whose reads time out before the store's blocking read)."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from agui_wire.redis._settings import CONNECTIONS, Settings

pytestmark = pytest.mark.anyio

OPTIONS: dict[str, Any] = {
    "prefix": "agui:",
    "ttl": 3600.0,
    "lease": 30.0,
    "maxlen": None,
    "reconnect": 10.0,
    "batch": 512,
    "backlog": 64,
    "page_bytes": 1 << 20,
    "shards": 16,
}


def test_the_timings_a_lease_of_30_s_gives() -> None:
    s = Settings(aioredis.Redis(), **OPTIONS)
    assert (s.poll, s.poll_ms, s.read_timeout, s.command_timeout) == (1.0, 1000, 2.0, 2.0)
    assert s.silence == 31.0  # lease + 1, whatever reconnect says
    assert (s.lease_ms, s.ttl_ms, s.running_ttl_ms) == (30_000, 3_600_000, 3_630_000)
    assert s.cluster is False
    assert len(s.layout.tags) == 16


def test_a_short_lease_checks_often_and_fails_live_runs_sooner() -> None:
    s = Settings(aioredis.Redis(), **{**OPTIONS, "lease": 0.4, "reconnect": 30})
    assert (s.poll, s.poll_ms) == (0.1, 100)
    assert s.read_timeout == pytest.approx(1.1)  # poll + max(1, poll)
    assert s.silence == pytest.approx(1.4)  # lease + 1


@pytest.mark.parametrize(
    ("client", "says"),
    [
        (lambda: aioredis.Redis(decode_responses=True), "decode_responses=False"),
        (lambda: aioredis.Redis(max_connections=CONNECTIONS - 1), "max_connections >="),
    ],
)
def test_a_client_that_cannot_work_is_refused(client: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Settings(client(), **OPTIONS)
    Settings(aioredis.Redis(max_connections=CONNECTIONS), **OPTIONS)  # just enough


async def test_a_cluster_client_must_read_as_long_as_the_store_blocks() -> None:
    # (clients that never connect: nothing to close)
    with pytest.raises(ValueError, match=r"socket_timeout \(0.5 s\) must be at least .* 2 s"):
        Settings(RedisCluster(host="127.0.0.1", port=1, socket_timeout=0.5), **OPTIONS)
    assert Settings(RedisCluster(host="127.0.0.1", port=1, socket_timeout=2), **OPTIONS).cluster


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"reconnect": 0}, "reconnect must be a positive, finite number of seconds"),
        ({"prefix": "a{b"}, "prefix must be a string without braces"),
        ({"shards": 0}, "shards must be an int from 1 to 16384"),
    ],
)
def test_the_redis_options_are_checked(bad: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Settings(aioredis.Redis(), **{**OPTIONS, **bad})
