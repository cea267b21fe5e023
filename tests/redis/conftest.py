"""Fixtures of the run store's tests: a real ``redis-server`` (tests/redis/harness.py)
on a free loopback port, one per session for the tests that only need a Redis,
fresh ones for the tests that kill or restart it. Tests are coroutines run by
anyio's pytest plugin (asyncio); ``opened`` holds the clients and stores a test
opens and closes them when it ends, passed or failed, then ends the tasks it left,
which must end within ``SHUTDOWN`` seconds (tests/support/stores.py).

Servers: Debian's redis-server 7.0, and for the tests marked ``valkey`` (whole
modules: those whose outcome depends on the server's commands, scripts, replies
and refusals) Valkey 8.1 as well, each test once on each (``[redis-7]``,
``[valkey-8]``): ``redis_server`` and ``fresh_redis()`` are then the one of the
test's parameter. ``fresh_redis(binary=...)`` starts another binary
(tests/redis/pinned.py).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Final

import pytest

# The interop suite's node_harness fixture (the pinned npm peers), as
# tests/e2e/conftest.py binds it.
from tests.interop.conftest import node_harness as node_harness
from tests.redis import pinned
from tests.redis.harness import RedisClusterNodes, RedisServer
from tests.support.stores import Opened

#: The servers a test marked ``valkey`` runs on (``None``: Debian's redis-server).
SERVERS: Final = {"redis-7": None, "valkey-8": pinned.VALKEY_8}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marked = metafunc.definition.get_closest_marker("valkey") is not None
    if marked and "server_binary" in metafunc.fixturenames:
        metafunc.parametrize("server_binary", list(SERVERS), indirect=True, scope="session")


@pytest.fixture(scope="session")
def server_binary(request: pytest.FixtureRequest) -> str | None:
    """The test's server binary: Debian's redis-server (``None``), or the one of its
    ``valkey`` parameter."""
    server = SERVERS[getattr(request, "param", "redis-7")]
    return None if server is None else server.path()


@pytest.fixture(scope="session")
def redis_server(server_binary: str | None) -> Iterator[RedisServer]:
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp), binary=server_binary).start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterNodes]:
    """3 masters and a replica each, for the tests that only need a cluster."""
    with tempfile.TemporaryDirectory() as tmp:
        cluster = RedisClusterNodes(Path(tmp)).start()
        try:
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[RedisClusterNodes]:
    """A cluster of the test's own (the failover test kills a master)."""
    cluster = RedisClusterNodes(tmp_path).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def fresh_redis(tmp_path: Path, server_binary: str | None) -> Iterator[Callable[..., RedisServer]]:
    """``fresh_redis(persistent=False, binary=None)``: a Redis of the test's own, of
    ``binary`` (else the test's server)."""
    started: list[RedisServer] = []

    def start(*, persistent: bool = False, binary: str | None = None) -> RedisServer:
        directory = tmp_path / f"redis-{len(started)}"
        directory.mkdir()
        server = RedisServer(directory, persistent=persistent, binary=binary or server_binary)
        started.append(server)  # (stopped even if it fails to start)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4()}"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def opened(anyio_backend: str) -> AsyncIterator[Opened]:
    """The test's clients and stores (``opened.redis(url)``, ``opened.store(...)``),
    closed when it ends; then the tasks it left must end (tests/support/stores.py)."""
    opened = Opened()
    try:
        yield opened
    finally:
        await opened.aclose()
