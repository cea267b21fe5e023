"""The run store's contract suite: every test takes ``kit``, one backend of
``RunStore`` (tests/runstore/kit.py), and runs once per backend:

* ``memory``: ``agui_wire.memory.RunStore``;
* ``redis``: ``agui_wire.redis.RunStore`` on a real redis-server (one per session,
  tests/redis/harness.py, on a free loopback port);
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
  cluster's failover (test_cluster.py);
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

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.redis.conftest import redis_cluster as redis_cluster
from tests.redis.conftest import redis_server as redis_server
from tests.runstore.kit import Kit

BACKENDS = ("memory", "redis")


def pytest_generate_tests(metafunc: Any) -> None:
    if "kit" in metafunc.fixturenames:
        names = [*BACKENDS]
        if metafunc.definition.get_closest_marker("cluster") is not None:
            names.append("cluster")
        metafunc.parametrize("kit", names, indirect=True)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def kit(request: Any, anyio_backend: str) -> AsyncIterator[Kit]:
    name = request.param
    server = None
    if name == "redis":
        server = request.getfixturevalue("redis_server")
    elif name == "cluster":
        server = request.getfixturevalue("redis_cluster")
    kit = Kit(name, server)
    try:
        yield kit
    finally:
        await kit.aclose()


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4()}"
