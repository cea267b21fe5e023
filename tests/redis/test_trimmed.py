"""The pages a reader fills a gap with say why events are missing, against the real
redis-server: trimmed by ``XADD MAXLEN ~`` (``HistoryTrimmed``), or gone from
the middle of the stream, as a failover loses them (``RunLost``); never a page
that ends short of where the reader asked for. A slow reader of a trimmed run on
every path, on every store: tests/runstore/test_trim.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire.errors import HistoryTrimmed, RunLost
from agui_wire.redis import RunStore
from tests.support.stores import Opened

pytestmark = [pytest.mark.valkey, pytest.mark.anyio]


def delta(i: int) -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"{i} "}


HEAD = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
]


async def test_a_gap_fill_says_why_events_are_missing(opened: Opened, redis_server, run_id) -> None:
    """The pages a reader fills a gap with (up to the tail's first event) never end
    short of it: trimmed events are ``HistoryTrimmed``, events missing between
    stored ones (a failover lost them) ``RunLost``."""
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, maxlen=100, batch=50))
    events = [*HEAD, *(delta(i) for i in range(2000))]
    assert await store.publish(run_id, events) == len(events)
    reading = store._reading
    keys = store._settings.layout.keys(None, run_id)
    (oldest, _), *_ = [
        tuple(map(int, raw.split(b"-")))
        for raw, _ in await r.xrange(keys.stream, "-", "+", count=1)
    ]
    assert oldest > 100  # trimmed
    _, generation, _ = await reading.head(keys)

    async def fill(cursor: int, stop: int | None) -> list[int]:
        got = []
        async for batch in reading.pages(keys, cursor, generation, stop):
            got += range(batch.first, batch.last + 1)
        return got

    for stop in (oldest - 1, oldest + 10, None):
        with pytest.raises(HistoryTrimmed) as trimmed:
            await fill(3, stop)
        assert (trimmed.value.after, trimmed.value.first) == (3, oldest)
    assert await fill(oldest + 5, oldest + 9) == list(range(oldest + 6, oldest + 10))

    # events missing between stored ones: lost, not trimmed
    lost = [f"{n}-{generation}" for n in range(oldest + 20, oldest + 30)]
    assert await r.xdel(keys.stream, *lost) == len(lost)
    for cursor, stop in ((oldest + 19, oldest + 29), (oldest + 19, None), (oldest + 25, None)):
        with pytest.raises(RunLost):
            await fill(cursor, stop)
    with pytest.raises(RunLost):  # the events before the hole come first
        await fill(oldest + 10, oldest + 40)
