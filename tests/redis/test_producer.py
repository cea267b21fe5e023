"""``agui_wire.redis._producer`` on a real redis-server: ``APPEND`` stores the events
after the stream's last once (an event re-sent is skipped when it is the one
stored, an entry this producer did not write is ``StoreCorrupted``), and a
script's reply that says the run is no longer the producer's is the error that
says why: ``RunLost`` (fewer events than acknowledged), ``RunReplaced``,
``StoreCorrupted``, ``LeaseLost`` (the run ended by its lease, or another holds it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire._codec.selected import encode_payload
from agui_wire.errors import LeaseLost, RunLost, RunReplaced, StoreCorrupted
from agui_wire.redis import RunStore
from agui_wire.redis._claim import claim
from agui_wire.redis._keys import END
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


async def test_a_replica_that_queues_longer_than_the_lease_keeps_its_leases(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """A replica too busy to keep up queues its commands longer than the lease (here
    40 round trips of 256 commands, each holding its lane 0.4 s with a BLPOP on a key
    nobody pushes to: Redis itself stays free): the producer's renewals go ahead of
    the queue, so its lease never lapses, and the run ends as produced."""
    r = opened.redis(redis_server.url)
    admin = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, lease=2))
    lease = store._settings.layout.keys(None, run_id).lease
    pipeliner = store._calls.lanes("")  # (one Redis: its node is "")
    flooded = asyncio.Event()

    async def events() -> Any:
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": run_id}
        await flooded.wait()
        for event in EVENTS:
            yield event
            await asyncio.sleep(0.5)
        yield {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}

    task = await store.start(run_id, events())
    while not await admin.exists(lease):
        await asyncio.sleep(0.01)
    queued = [
        asyncio.ensure_future(
            pipeliner.call("BLPOP", "nothing", "0.4") if n % 256 == 0 else pipeliner.call("PING")
        )
        for n in range(40 * 256)
    ]
    flooded.set()
    lapsed = 0
    while not task.done():
        lapsed += not await admin.exists(lease)
        await asyncio.sleep(0.05)
    await asyncio.gather(*queued)
    assert lapsed == 0
    assert await task == len(EVENTS) + 2
    stored = await r.xrange(store.stream_key(run_id))
    assert [fields.get(b"end") for _, fields in stored[-1:]] == [b"finished"]


async def test_a_run_that_starts_late_renews_the_lease_its_claim_took(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """The lease lives from the claim on: a producer whose run starts long after its
    claim (a busy replica's task, queued) renews it by the claim's time, not its own
    start's; its first event comes late (no append renews it meanwhile)."""
    r = opened.redis(redis_server.url)
    admin = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, lease=1.5))
    keys = store._settings.layout.keys(None, run_id)

    async def events() -> Any:
        await asyncio.sleep(1.0)
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": run_id}
        yield {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}

    producer = await claim(store._writing, keys, events(), replay=False)
    assert isinstance(producer, Producer)
    await asyncio.sleep(1.3)  # the run's task starts 1.3 s after its claim
    task = asyncio.ensure_future(producer.run())
    lapsed = 0
    while not task.done():
        if not await admin.exists(keys.lease):
            # FINISH stores the end and deletes the lease in one script; the task is
            # done a few loop turns later (it hands the end to its readers first)
            last = await admin.xrevrange(keys.stream, count=1)
            if last and END in last[0][1]:
                break
            lapsed += 1
        await asyncio.sleep(0.02)
    assert lapsed == 0
    assert await task == 2


async def test_a_run_renews_its_lease_from_a_task_started_when_the_first_renewal_is_due(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """Until ``lease / 3`` after the claim a producer's heartbeat is a timer, not a
    task (most runs end before; a task per run was a herd's cost); once due, the
    task renews the lease, and goes on renewing it."""
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, lease=1.2))
    gate = asyncio.Event()

    async def events() -> Any:
        yield EVENTS[0]
        await gate.wait()

    def beating() -> list[asyncio.Task[Any]]:
        return [t for t in asyncio.all_tasks() if "_heartbeat" in repr(t.get_coro())]

    task = await store.start(run_id, events())
    assert task is not None
    lease = store._settings.layout.keys(None, run_id).lease
    await asyncio.sleep(0.2)
    assert not beating()
    first = await r.pttl(lease)
    await asyncio.sleep(0.5)  # past lease / 3: renewed
    assert len(beating()) == 1
    assert await r.pttl(lease) > first - 250  # (not renewed: first - 500)
    await asyncio.sleep(1.5)  # longer than the lease: renewed again
    assert await r.exists(lease)
    gate.set()
    assert await task == 1
    assert not beating()
