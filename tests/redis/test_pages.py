"""``agui_wire.redis._pages`` on a real redis-server: a run's last entry (``top``,
an end marker checked against the event before it) and its stored events in
pages of 32, 128, 512... events bounded in payload bytes (``PAGE``: Redis holds
about a page for a reader), up to ``stop`` or the run's end; ``RunLost`` when the
stream vanished after the cursor."""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire.errors import RunLost, StoreCorrupted
from agui_wire.redis import RunStore
from agui_wire.redis._calls import Calls
from agui_wire.redis._pages import pages, top
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio


def ticks(n: int, size: int = 1) -> list[dict[str, Any]]:
    return [{"type": "CUSTOM", "name": "t", "value": "x" * size} for _ in range(n)]


async def stored(opened: Opened, server: RedisServer, run_id: str, events: Any, **options: Any):
    store = opened.store(RunStore(opened.redis(server.url), **options))
    await store.publish(run_id, events)
    settings = store._settings
    return Calls(store.redis, settings), settings, settings.layout.keys(None, run_id)


async def test_pages_grow_four_times_and_end_with_the_run(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    calls, settings, keys = await stored(opened, redis_server, run_id, ticks(3000))
    got = [b async for b in pages(calls, settings, keys, 0, None)]
    assert [len(b.payloads) for b in got] == [32, 128, 512, 1024, 1024, 280]  # PAGE_EVENTS
    assert [b.end for b in got] == [None] * 5 + ["finished"]
    assert got[0].generation is not None
    assert [b.first for b in got] == [1, 33, 161, 673, 1697, 2721]
    upto = [b async for b in pages(calls, settings, keys, 10, got[0].generation, stop=100)]
    assert (upto[0].first, upto[-1].last, upto[-1].end) == (11, 100, None)


async def test_a_page_is_bounded_in_bytes_a_big_event_alone(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    events = ticks(10, 1000) + ticks(1, 50_000) + ticks(10, 1000)
    calls, settings, keys = await stored(
        opened, redis_server, run_id, events, page_bytes=4000, batch=4
    )
    got = [b async for b in pages(calls, settings, keys, 0, None)]
    assert all(b.nbytes <= 4100 or len(b.payloads) == 1 for b in got)
    assert sum(len(b.payloads) for b in got) == len(events)
    assert any(len(b.payloads) == 1 and b.nbytes > 50_000 for b in got)


async def test_top_and_a_stream_gone_after_the_cursor(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    calls, settings, keys = await stored(opened, redis_server, run_id, ticks(5))
    n, seq, fields = await top(calls, keys)  # type: ignore[misc]
    assert (n, seq % 2, sorted(fields)) == (5, 1, [b"by", b"end"])
    r = opened.redis(redis_server.url)
    await r.delete(keys.stream)
    assert await top(calls, keys) is None
    with pytest.raises(RunLost, match="stream is gone"):
        [b async for b in pages(calls, settings, keys, 3, seq - 1)]
    assert [b async for b in pages(calls, settings, keys, 0, None)] == []  # from 0: nothing
    await r.xadd(keys.stream, {"end": "x"}, id="3-5")  # an end after no event of its run
    with pytest.raises(StoreCorrupted, match="not after its last event"):
        await top(calls, keys)
