"""A lost reply is safe for every script of the run store: the
command reaches Redis and runs, the reply never comes back (tests/redis/faults.py's
proxy aborts the client's connection), the store retries, and the run is the
same as without the fault: every event once, the producer's own claim and its
own end recognised as its own, never ``RunInProgress``, ``LeaseLost``, a
``LEASE_EXPIRED`` or a second copy.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire.redis import RunStore, _claim, _leases, _pages, _producer
from tests.redis.faults import Proxy
from tests.runstore.kit import stop_heartbeat
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

# also on Valkey 8: the scripts run again after a lost reply
pytestmark = pytest.mark.valkey

EVENTS: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    *({"type": "CUSTOM", "name": "tick", "value": i} for i in range(20)),
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


async def paced(events: list[dict[str, Any]], delay: float) -> Any:
    for i, event in enumerate(events):
        await asyncio.sleep(0.45 if i == 10 else delay)  # a quiet stretch: a heartbeat
        yield event


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[int, Any]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


# Every script of the store, by the name of the rule it holds.
SCRIPTS = {
    "acquire": _claim.ACQUIRE,
    "append": _producer.APPEND,
    "renew": _producer.RENEW,
    "finish": _producer.FINISH,
    "fail": _producer.FAIL,
    "expire": _leases.EXPIRE,
    "page": _pages.PAGE,
}


def _sha(script: str) -> str:
    return SCRIPTS[script].sha


async def loaded(r: aioredis.Redis) -> None:
    """Every script of the store loaded in Redis, so the dropped chunk is the one
    that runs it (not a first try answered NOSCRIPT)."""
    for script in SCRIPTS.values():
        await r.script_load(script.body)


# The producer's scripts: the claim, an append, a heartbeat, the end.
@pytest.mark.parametrize("script", ["acquire", "append", "renew", "finish"])
async def test_a_lost_reply_to_a_producer_script_changes_nothing(
    opened: Opened, redis_server, run_id, script, caplog
) -> None:
    with Proxy(redis_server.port) as proxy:
        r = opened.redis(proxy.url)
        direct = opened.redis(redis_server.url)
        store = opened.store(RunStore(r, lease=0.6))  # a heartbeat every 0.2 s
        reader = opened.store(RunStore(direct, lease=0.6))
        await loaded(opened.redis(redis_server.url))
        proxy.drop_reply(_sha(script))
        count = await store.publish(run_id, paced(EVENTS, 0.02))
        assert proxy.dropped == 1, "the fault was injected"
        assert count == len(EVENTS)
        got = await collect(reader, run_id)
        assert [e for _, e in got] == EVENTS
        assert [i for i, _ in got] == list(range(1, len(EVENTS) + 1))
        # a retry of the whole job afterwards: the run has ended, nothing more
        assert await store.publish(run_id, EVENTS) == len(EVENTS)
        assert [e for _, e in await collect(reader, run_id)] == EVENTS
    assert [r.message for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_lost_reply_to_the_failure_end_changes_nothing(
    opened: Opened, redis_server, run_id, caplog
) -> None:
    """A producer that fails ends its run with RUN_ERROR: that end's reply lost, the
    retry still ends it once, and ``publish`` raises the producer's own error."""

    class Boom(Exception):
        pass

    async def failing() -> Any:
        yield EVENTS[0]
        yield EVENTS[1]
        raise Boom

    with Proxy(redis_server.port) as proxy:
        r = opened.redis(proxy.url)
        store = opened.store(RunStore(r, lease=2))
        await loaded(opened.redis(redis_server.url))
        proxy.drop_reply(_sha("fail"))  # the script that ends a failed run
        with pytest.raises(Boom):
            await store.publish(run_id, failing())
        assert proxy.dropped == 1
        direct = opened.redis(redis_server.url)
        got = [e for _, e in await collect(opened.store(RunStore(direct)), run_id)]
        assert got[:2] == EVENTS[:2]
        assert [e["type"] for e in got[2:]] == ["RUN_ERROR"]
        assert got[2]["code"] == "INTERNAL_ERROR"
    assert [r.message for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_lost_reply_to_the_lease_check_ends_the_run_once(
    opened: Opened, redis_server, run_id
) -> None:
    """A reader's lease check (the script that ends a dead producer's run) lost its
    reply: the retry finds the run ended and the reader reads that end, once."""

    with Proxy(redis_server.port) as proxy:
        direct = opened.redis(redis_server.url)
        producer = opened.store(RunStore(direct, lease=0.5))
        r = opened.redis(proxy.url)
        reader = opened.store(RunStore(r, lease=0.5))

        async def dies() -> Any:
            yield EVENTS[0]
            yield EVENTS[1]
            await asyncio.sleep(3600)  # stalls: cancelled below, lease not renewed

        task = await producer.start(run_id, dies())
        assert task is not None
        await asyncio.sleep(0.2)
        producer._tasks.clear()
        task.remove_done_callback(producer._task_done)
        # The producer "dies": its heartbeat stops without ending the run.
        stop_heartbeat(run_id)
        await loaded(opened.redis(redis_server.url))
        proxy.drop_reply(_sha("expire"))
        got = await asyncio.wait_for(collect(reader, run_id), 10)
        assert proxy.dropped == 1
        types = [e["type"] for _, e in got]
        assert types == ["RUN_STARTED", "CUSTOM", "RUN_ERROR"]
        assert got[-1][1]["code"] == "LEASE_EXPIRED"
        task.cancel()
