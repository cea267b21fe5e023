"""``agui_wire.redis.RunStore`` (``_store``): what only the Redis store has beside
the contract every store keeps (tests/runstore, which runs on Redis 7, Valkey 8
and a cluster): a response that refuses a request, or answers ``HEAD``, costs
Redis nothing; a producer whose run another took stops at its next renewal; the
operator's ``stream_key``."""

from __future__ import annotations

import asyncio

import pytest

from agui_wire.errors import LeaseLost
from agui_wire.redis import RunStore
from examples.script import scripted_run
from tests.redis.harness import RedisServer
from tests.runstore.kit import call, collect
from tests.support.stores import Opened

# also on Valkey 8: the server's command statistics and leases
pytestmark = [pytest.mark.valkey, pytest.mark.anyio]

RUN = scripted_run("thread-1", "run-1")


async def test_a_strict_response_refuses_an_accept_before_it_asks_redis(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """Negotiated from the request (no ``request=`` given) before the run is looked
    up: an ``Accept`` it cannot answer is a 406 whether or not the run exists (and
    costs Redis nothing); a ``HEAD`` gets the headers without a look-up either."""
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r))
    await store.publish(run_id, RUN)

    async def lookups() -> int:
        stats = await r.info("commandstats")
        return int(stats.get("cmdstat_xrevrange", {}).get("calls", 0))

    before = await lookups()
    for name in ("nope", run_id):
        start, bodies = await call(
            store.response(name, strict=True), headers=[("accept", "application/json")]
        )
        assert start["status"] == 406
        assert b"text/event-stream" in b"".join(bodies)
    start, bodies = await call(store.response("nope"), method="HEAD")
    assert (start["status"], b"".join(bodies)) == (200, b"")
    assert await lookups() == before


async def test_a_producer_whose_run_another_took_stops_at_its_next_renewal(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """Another holds the run's lease (the producer stalled past it, the run was
    taken): the producer stops at its next renewal (``LeaseLost``) and writes
    nothing more; once that lease lapses too, a reader's check ends the run."""
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, lease=0.6))

    async def quiet():
        yield RUN[0]
        await asyncio.Event().wait()  # its next write is a renewal (every lease / 3)
        yield RUN[1]

    task = await store.start(run_id, quiet())
    assert task is not None
    while not await r.xlen(store.stream_key(run_id)):  # event 1 stored
        await asyncio.sleep(0.01)
    await r.set(store.stream_key(run_id) + ":lease", b"another", px=1500)
    with pytest.raises(LeaseLost):
        await task
    got = await collect(store, run_id)  # a quiet check ends the run, the lease gone
    assert [e["type"] for _, e in got] == ["RUN_STARTED", "RUN_ERROR"]
    assert got[-1][1]["code"] == "LEASE_EXPIRED"


async def test_stream_key_names_the_runs_stream(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    r = opened.redis(redis_server.url)
    store = opened.store(RunStore(r, prefix="ops:"))
    await store.publish(run_id, RUN, owner="alice")
    key = store.stream_key(run_id, owner="alice")
    assert key.startswith("ops:{")
    assert await r.xlen(key) == len(RUN) + 1  # the events and the end marker
