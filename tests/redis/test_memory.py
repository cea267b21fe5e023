"""Memory per request is bounded by bytes, not by the run, on a real uvicorn replica
and a real redis-server, the replica's RSS read from /proc (tests/redis/memory.py;
benchmarks/redis_memory.py prints the figures and the first-byte times). The
bounds are loose (four times the figures measured on the shared machine):
30 compact joiners of a 100,000-event run share one fold read page by page (were
each to hold the run while folding, the replica would pass 1 GiB), and one slow
reader of 150 x 1 MB events holds pages of bytes, not of events (a page of events
would be hundreds of MiB).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redis.harness import Replica
from tests.redis.memory import MiB, compact_joiners, slow_reader

# the replica's RSS is measured with whichever backend decodes: both passes (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.both_backends, pytest.mark.anyio]


@pytest.fixture
def replica(redis_server, tmp_path: Path):
    replica = Replica(redis_server.url, tmp_path / "replica.log").start()
    yield replica
    replica.stop()


async def test_compact_joiners_share_one_fold_read_page_by_page(replica, redis_server) -> None:
    result = await compact_joiners(replica, redis_server.url, events=100_000, joiners=30)
    print(f"\n30 compact joiners of 100,000 events: +{result['growth'] / MiB:.1f} MiB")
    assert result["growth"] <= 4 * 64 * MiB
    assert result["body"] < 2 * MiB  # a snapshot, not every token (about 4 MB of SSE)


async def test_a_slow_reader_of_big_events_holds_pages_not_the_run(replica, redis_server) -> None:
    result = await slow_reader(replica, redis_server.url, events=150, size=1_000_000)
    print(f"\none slow reader of 150 x 1 MB: +{result['growth'] / MiB:.1f} MiB")
    assert result["read"] > 150 * 1_000_000
    assert result["growth"] <= 4 * 32 * MiB
