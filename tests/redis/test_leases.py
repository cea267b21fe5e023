"""``agui_wire.redis._leases`` on a real redis-server: ``EXPIRE`` ends a run whose
lease is gone, once, for a caller that has read up to its last event (else
``BEHIND``), after a terminal event with the end marker alone, and only looks
while Redis just stalled; it says when the run was lost or replaced;
``terminal_at`` and ``lease_generation`` read what a reader needs to ask it.
(Leases as every reader sees them, on both stores: tests/runstore/test_leases.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._codec.selected import encode_payload
from agui_wire._runstore.ids import new_generation
from agui_wire.redis import RunStore
from agui_wire.redis._calls import Calls
from agui_wire.redis._leases import expire, lease_generation, terminal_at
from agui_wire.redis._scripts import Reply
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
TICK = {"type": "CUSTOM", "name": "t", "value": 1}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


async def abandoned(opened: Opened, server: RedisServer, run_id: str, events: list[Any]):
    """A run whose producer stored ``events`` and vanished: its entries as the store
    writes them (``n-<generation>``, field ``p``), no lease, no end."""
    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=5))
    keys = store._settings.layout.keys(None, run_id)
    generation = new_generation(run_id)
    for n, event in enumerate(events, 1):
        await r.xadd(keys.stream, {"p": encode_payload(event)}, id=f"{n}-{generation}")
    return r, Calls(r, store._settings), store._settings, keys, generation


async def check(calls: Calls, settings: Any, keys: Any, known: int, **kw: Any) -> list[Any]:
    options = {"terminal": False, "generation": "", "look": False, **kw}
    return await expire(calls, settings, keys, known, **options)


async def test_a_lapsed_lease_ends_the_run_once_for_a_reader_who_read_it_all(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r, calls, settings, keys, generation = await abandoned(
        opened, redis_server, run_id, [STARTED, TICK]
    )
    assert int((await check(calls, settings, keys, 1))[0]) == Reply.BEHIND  # read it first
    assert int((await check(calls, settings, keys, 2, look=True))[0]) == Reply.DONE  # looks
    assert int((await check(calls, settings, keys, 2))[0]) == Reply.EXPIRED
    assert int((await check(calls, settings, keys, 2))[0]) == Reply.ENDED  # once
    entries = await r.xrange(keys.stream)
    assert [e[0] for e in entries[-2:]] == [
        b"3-%d" % generation,
        b"3-%d" % (generation + 1),
    ]  # the RUN_ERROR, then the end
    assert entries[-1][1] == {b"end": b"lease-expired"}
    assert 0 < await r.pttl(keys.stream) <= settings.ttl_ms


async def test_after_a_terminal_event_the_end_marker_alone(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r, calls, settings, keys, generation = await abandoned(
        opened, redis_server, run_id, [STARTED, FINISHED]
    )
    assert await terminal_at(calls, keys, 2)
    assert not await terminal_at(calls, keys, 1)  # not the last event
    assert int((await check(calls, settings, keys, 2, terminal=True))[0]) == Reply.EXPIRED
    last = (await r.xrevrange(keys.stream, count=1))[0]
    assert last == (b"2-%d" % (generation + 1), {b"end": b"finished"})
    assert not await terminal_at(calls, keys, 2)  # the end marker is the last entry now


async def test_a_live_lease_is_left_and_its_time_said(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r, calls, settings, keys, generation = await abandoned(opened, redis_server, run_id, [STARTED])
    await r.set(keys.lease, f"{generation}:token", px=5000)
    reply = await check(calls, settings, keys, 1)
    assert int(reply[0]) == Reply.DONE
    assert 0 < int(reply[2]) <= 5000  # checked again when it would lapse
    assert await lease_generation(calls, keys) == generation
    await r.set(keys.lease, b"released")
    assert await lease_generation(calls, keys) is None  # a lease without a generation
    await r.delete(keys.lease)
    assert await lease_generation(calls, keys) is False  # no lease


async def test_a_run_lost_or_replaced_is_said(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r, calls, settings, keys, generation = await abandoned(
        opened, redis_server, run_id, [STARTED, TICK]
    )
    reply = await check(calls, settings, keys, 2, generation=str(generation + 2))
    assert int(reply[0]) == Reply.REPLACED
    assert int((await check(calls, settings, keys, 5))[0]) == Reply.LOST  # fewer than read
    await r.delete(keys.stream)
    assert int((await check(calls, settings, keys, 2))[0]) == Reply.LOST
