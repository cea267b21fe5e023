"""Fixtures of the run store's tests: a real ``redis-server`` (tests/redis/harness.py)
on a free loopback port, one per session for the tests that only need a Redis,
fresh ones for the tests that kill or restart it; ``run`` runs a coroutine."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

# The interop suite's node_harness fixture (the pinned npm peers), as
# tests/e2e/conftest.py binds it.
from tests.interop.conftest import node_harness as node_harness
from tests.redis.harness import RedisClusterNodes, RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
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
def fresh_redis(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """``fresh_redis(persistent=False)``: a Redis of the test's own."""
    started: list[RedisServer] = []

    def start(*, persistent: bool = False) -> RedisServer:
        directory = tmp_path / f"redis-{len(started)}"
        directory.mkdir()
        server = RedisServer(directory, persistent=persistent).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4()}"


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)
