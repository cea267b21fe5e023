"""``agui_wire.redis._snapshots`` on a real redis-server: with ``maxlen`` the producer
keeps the compact prefix of its first events in the run's snapshot key, written
every ``maxlen // 2`` stored events as ``k-<generation>`` and binary frames, so it
always reaches past what ``XADD MAXLEN ~`` trimmed; a run that cannot be folded
writes none; a key that is not a snapshot is ``StoreCorrupted``."""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._apply import Compactor
from agui_wire.errors import StoreCorrupted
from agui_wire.redis import RunStore
from agui_wire.redis._calls import Calls
from agui_wire.redis._snapshots import read
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
TEXT = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}


def tokens(n: int) -> list[dict[str, Any]]:
    return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"{i} "} for i in range(n)]


async def test_the_snapshot_reaches_past_what_was_trimmed(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, maxlen=100, batch=10))
    events = [START, TEXT, *tokens(1000)]
    await store.publish(run_id, events)
    keys = store._settings.layout.keys(None, run_id)
    snapshot = await read(Calls(r, store._settings), keys)
    assert snapshot is not None
    k, seq, prefix = snapshot
    oldest = int((await r.xrange(keys.stream, count=1))[0][0].split(b"-")[0])
    assert oldest - 1 <= k <= len(events)  # it stands for every trimmed event
    folder = Compactor()
    for event in events[:k]:
        folder.feed(event)
    assert prefix == folder.prefix()
    assert seq % 2 == 0


async def test_no_snapshot_without_maxlen_or_of_what_cannot_be_folded(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r = opened.redis(redis_server.url)
    plain = opened.store(RunStore(r))
    await plain.publish(run_id, [START, TEXT, *tokens(300)])
    calls = Calls(r, plain._settings)
    assert await read(calls, plain._settings.layout.keys(None, run_id)) is None
    trimmed = opened.store(RunStore(r, maxlen=20, batch=5))
    chunks = [{"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}] * 300
    await trimmed.publish(f"{run_id}-chunks", [START, *chunks])
    keys = trimmed._settings.layout.keys(None, f"{run_id}-chunks")
    assert await read(Calls(r, trimmed._settings), keys) is None


async def test_a_key_that_is_not_a_snapshot_is_corrupted(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, maxlen=10))
    keys = store._settings.layout.keys(None, run_id)
    await r.set(keys.snapshot, b"not a snapshot")
    with pytest.raises(StoreCorrupted, match="not a snapshot"):
        await read(Calls(r, store._settings), keys)
