"""The run store's contract suite: every test takes ``kit``, one backend of
``RunStore`` (tests/runstore/kit.py), and runs once per backend:

* ``memory``: ``agui_wire.memory.RunStore``;
* ``redis``: ``agui_wire.redis.RunStore`` on a real redis-server 7 (one per session,
  tests/redis/harness.py, on a free loopback port);
* ``valkey``: the same on a real valkey-server 8.1 (tests/redis/pinned.py, ``make
  valkey``): the store's contract rests on the server's streams, scripts and
  blocking reads;
* ``cluster``: ``agui_wire.redis.RunStore`` on a real Redis Cluster (3 masters,
  a replica each), for the tests marked ``cluster`` only: resume, fan-out,
  compaction, ids, lease expiry, takeover and the idempotent producer, the
  behaviours a cluster could change (a run's keys in one slot, tails per shard,
  scripts per node); the rest reads and writes one run at a time through the
  same scripts a single Redis runs, and each cluster test costs a few seconds
  of CI.

Intended differences, which the tests here do not hold against either store
(each is tested where it lives):

* a store in memory is one process's: ``Kit.replica`` is the same store, where
  Redis's is another client and store on the same server (tests/e2e runs real
  replicas); a restart loses its runs;
* Redis's faults have no meaning in memory: unreachable or stalled (no
  ``StoreUnavailable``, no 503: tests/redis/test_faults.py, test_stalls.py), full
  (``STORE_FULL``), garbage in a key (``STORE_CORRUPTED``: test_store_errors.py),
  lost replies (test_lost_replies.py), a Redis too old (test_redis_version.py), a
  cluster's failover and a stalled master (test_cluster.py, test_cluster_faults.py),
  replicas' acknowledgements (test_replica_acks.py);
* ``maxlen`` keeps at least ``maxlen`` events on both, at most a quarter more in
  memory and up to a stream node more in Redis (``XADD MAXLEN ~``);
* a lease lapses when its producer's heartbeat stops: in memory only a producer
  stopped from outside the store does so (``kit.frozen``); in Redis also a replica
  killed or stalled.

Tests are coroutines run by anyio's pytest plugin (``@pytest.mark.anyio``; the
asyncio backend), one event loop per test; every store and client a test opens
is closed by ``kit``'s teardown, also when the test fails.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.redis import pinned
from tests.redis.conftest import redis_cluster as redis_cluster
from tests.redis.conftest import redis_server as redis_server
from tests.redis.conftest import server_binary as server_binary
from tests.redis.harness import RedisServer
from tests.runstore.kit import Kit

BACKENDS = ("memory", "redis", "valkey")


def pytest_generate_tests(metafunc: Any) -> None:
    if "kit" in metafunc.fixturenames:
        names = [*BACKENDS]
        if metafunc.definition.get_closest_marker("cluster") is not None:
            names.append("cluster")
        metafunc.parametrize("kit", names, indirect=True)


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[RedisServer]:
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp), binary=pinned.VALKEY_8.path()).start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def kit(request: Any, anyio_backend: str) -> AsyncIterator[Kit]:
    name = request.param
    servers = {"redis": "redis_server", "valkey": "valkey_server", "cluster": "redis_cluster"}
    server = request.getfixturevalue(servers[name]) if name in servers else None
    kit = Kit(name, server)
    try:
        yield kit
    finally:
        await kit.aclose()


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4()}"
