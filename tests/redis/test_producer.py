"""``agui_wire.redis._producer`` on a real redis-server: ``APPEND`` stores the events
after the stream's last once (an event re-sent is skipped when it is the one
stored, an entry this producer did not write is ``StoreCorrupted``), and a
script's reply that says the run is no longer the producer's is the error that
says why: ``RunLost`` (fewer events than acknowledged), ``RunReplaced``,
``StoreCorrupted``, ``LeaseLost`` (the run ended by its lease, or another holds it)."""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._codec.selected import encode_payload
from agui_wire.errors import LeaseLost, RunLost, RunReplaced, StoreCorrupted
from agui_wire.redis import RunStore
from agui_wire.redis._claim import claim
from agui_wire.redis._producer import Producer
from agui_wire.redis._scripts import Reply
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

EVENTS = [{"type": "CUSTOM", "name": "t", "value": i} for i in range(4)]
PAYLOADS = [encode_payload(e) for e in EVENTS]


async def claimed(opened: Opened, url: str, run_id: str) -> tuple[Any, Producer]:
    r = opened.redis(url)
    store = opened.store(RunStore(r, lease=5))
    keys = store._settings.layout.keys(None, run_id)
    producer = await claim(store._writing, keys, [], replay=False)
    assert isinstance(producer, Producer)
    return r, producer


async def test_an_append_stores_each_event_once(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r, producer = await claimed(opened, redis_server.url, run_id)
    await producer.append(1, PAYLOADS[:2], None)
    await producer.append(1, PAYLOADS[:3], None)  # a retry after a lost reply, and one more
    assert producer.stored == 3
    stored = await r.xrange(producer.run_keys.stream)
    assert [fields[b"p"] for _, fields in stored] == PAYLOADS[:3]
    producer.stored = 1  # as if only event 1 were acknowledged: event 2 is checked
    with pytest.raises(StoreCorrupted, match="an entry this producer did not write"):
        await producer.append(2, [PAYLOADS[3]], None)  # another payload at a stored index


@pytest.mark.parametrize(
    ("reply", "error", "says"),
    [
        ([Reply.LOST, 2], RunLost, "Redis holds 2 events of the run, 5 were acknowledged"),
        (
            [Reply.REPLACED, 6, b"7-44"],
            RunReplaced,
            r"another generation of the run \(entry 7-44\)",
        ),
        ([Reply.CORRUPTED, 6, b"9-1"], StoreCorrupted, "an entry this producer did not write"),
        ([Reply.ENDED, 6], LeaseLost, "the run was ended by its lease expiring"),
        ([Reply.HELD, 6], LeaseLost, "the lease is not ours"),
    ],
)
async def test_a_reply_that_the_run_is_not_its_own_is_the_error_saying_why(
    opened: Opened, redis_server: RedisServer, run_id: str, reply: Any, error: Any, says: str
) -> None:
    _, producer = await claimed(opened, redis_server.url, run_id)
    producer.stored = 5
    with pytest.raises(error, match=says):
        producer._check(reply)
    assert producer._check([Reply.DONE, 7]) == 7
    assert producer.stored == 7
