"""``agui_wire.redis._claim`` on a real redis-server: ``ACQUIRE`` takes the lease of
a run nobody holds (its generation drawn for a new run), refuses a held one
(``RunInProgress``), returns the count of an ended one, and ends an abandoned one
(events, no lease) unless the caller replays it (``replay=True``); ``events`` is
closed whenever no producer runs them."""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._codec.selected import encode_payload
from agui_wire.errors import RunAbandoned, RunInProgress
from agui_wire.redis import RunStore
from agui_wire.redis._claim import claim
from agui_wire.redis._producer import Producer
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
TICK = {"type": "CUSTOM", "name": "t", "value": 1}


class Events:
    """A producer's events that says whether it was closed, and never runs."""

    def __init__(self) -> None:
        self.closed = False

    def __aiter__(self) -> Any:
        raise AssertionError("not to be run")

    async def aclose(self) -> None:
        self.closed = True


def setup(opened: Opened, url: str, run_id: str) -> tuple[Any, Any, Any]:
    r = opened.redis(url)
    store = opened.store(RunStore(r, lease=5))
    return r, store, store._settings.layout.keys(None, run_id)


async def test_a_new_run_is_claimed_with_a_generation(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r, store, keys = setup(opened, redis_server.url, run_id)
    producer = await claim(store._writing, keys, [STARTED], replay=False)
    assert isinstance(producer, Producer)
    assert producer.stored == 0
    generation, _, token = (await r.get(keys.lease)).partition(b":")
    assert int(generation) % 2 == 0
    assert producer.token == f"{generation.decode()}:{token.decode()}"
    assert 0 < await r.pttl(keys.lease) <= 5000
    events = Events()
    with pytest.raises(RunInProgress, match="another producer holds the run's lease"):
        await claim(store._writing, keys, events, replay=True)
    assert events.closed


async def test_an_ended_run_is_its_count(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    _, store, keys = setup(opened, redis_server.url, run_id)
    await store.publish(run_id, [STARTED, TICK])
    events = Events()
    assert await claim(store._writing, keys, events, replay=False) == 2
    assert events.closed


async def test_an_abandoned_run_is_ended_unless_replayed(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r, store, _ = setup(opened, redis_server.url, run_id)
    for name in ("replayed", "refused"):
        one = store._settings.layout.keys(None, f"{run_id}-{name}")
        producer = await claim(store._writing, one, [STARTED], replay=False)
        assert isinstance(producer, Producer)
        await producer.append(1, [encode_payload(STARTED)], None)  # stored, then it vanishes
        await r.delete(producer.run_keys.lease)
    replayed = store._settings.layout.keys(None, f"{run_id}-replayed")
    again = await claim(store._writing, replayed, [STARTED], replay=True)
    assert isinstance(again, Producer)
    assert again.stored == 1  # it continues after what is stored
    refused = store._settings.layout.keys(None, f"{run_id}-refused")
    events = Events()
    with pytest.raises(RunAbandoned, match="replay=True"):
        await claim(store._writing, refused, events, replay=False)
    assert events.closed
    entries = await r.xrange(refused.stream)
    assert entries[-1][1] == {b"end": b"lease-expired"}  # ended, as a reader would
    with pytest.raises(RunAbandoned):  # and on every retry, replay or not
        await claim(store._writing, refused, Events(), replay=True)
