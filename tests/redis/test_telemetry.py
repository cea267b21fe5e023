"""The run store's telemetry that is Redis's own (docs/telemetry.md), against a real
redis-server, read back from the SDK's in-memory metric reader and span exporter
(what every store records is tests/runstore/test_telemetry.py's):

* ``agui.store.lanes``: one blocking read per replica, back to 0 when its readers
  end; each replica's command and page lanes, per node on a cluster (its
  ``server.address`` and ``server.port``), back to 0 when it closes;
* each append's last entry carries its stamp (``t``) in Redis: the sizes read
  back from the stream are the appends recorded;
* faults by error type: ``StoreUnavailable`` with Redis stopped (a producer, a
  reader, a new run), ``StoreCorrupted``; ``HistoryTrimmed`` and ``RunLost`` where a
  reader meets events the stream no longer holds (trimmed, or lost from its middle
  as a failover loses them);
* a claim cancelled while Redis is stalled is named, not an ERROR;
* the store's refusals (404, 400, 503) counted by status;
* an entry's stamp is read; a stamp that is not one, and any other field, is
  ``StoreCorrupted``; a retried append over a stamped entry is its own;
* off (the API without an SDK): no stamp written; without the API package, the
  store works and stamps nothing.

The tests of the stamp in Redis (the append script) run on Valkey 8 too.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agui_wire import SSE_MEDIA_TYPE, _telemetry
from agui_wire._codec.selected import encode_payload
from agui_wire._runstore.batches import Batch, Prefix
from agui_wire.errors import RunLost, StoreCorrupted, StoreUnavailable
from agui_wire.redis import RunStore
from agui_wire.redis import _producer as producer_module
from agui_wire.redis._keys import key_slot
from agui_wire.redis._settings import COMMAND_LANES, PAGE_LANES
from tests.redis.app import paced, token_run
from tests.redis.harness import RedisServer
from tests.support.stores import Opened
from tests.support.telemetry import WITHOUT_API, Recorded, recording
from tests.unit.test_telemetry import _run_script, driver

pytestmark = pytest.mark.anyio

Event = dict[str, Any]
UNAVAILABLE = "agui_wire.errors.StoreUnavailable"


@pytest.fixture
def rec() -> Iterator[Recorded]:
    with recording() as recorded:
        yield recorded


def store(opened: Opened, server: RedisServer, **options: Any) -> RunStore:
    options.setdefault("lease", 2.0)
    return opened.store(RunStore(opened.redis(server.url), **options))


async def until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def stamps_in_redis(s: RunStore, run_id: str) -> list[tuple[int, int]]:
    """(index, stamp) of the run's entries that carry a stamp, from Redis itself."""
    entries = await s.redis.xrange(s.stream_key(run_id))
    return [
        (int(raw_id.split(b"-")[0]), int(fields[b"t"]))
        for raw_id, fields in entries
        if b"t" in fields
    ]


async def drained(s: RunStore, run_id: str) -> None:
    async for _ in s.subscribe(run_id):
        pass


# -- lanes -------------------------------------------------------------------------------------


async def test_lanes_count_the_blocking_reads_and_go_back_to_zero(
    opened: Opened, rec: Recorded, redis_server: RedisServer, run_id: str
) -> None:
    a, b = store(opened, redis_server), store(opened, redis_server)  # two replicas
    go = asyncio.Event()
    events = token_run("t", run_id, 20)

    async def agent() -> AsyncIterator[Event]:
        yield events[0]
        await go.wait()
        for event in events[1:]:
            yield event

    task = await a.start(run_id, agent())
    assert task is not None
    readers = [asyncio.ensure_future(drained(s, run_id)) for s in (a, b, b)]
    await until(lambda: rec.total("agui.store.readers") == 3)
    # one blocking read, B's (one Redis; A's reader follows the producer there)
    await until(lambda: rec.total("agui.store.lanes", {"agui.store.lane": "read"}) == 1)
    # each replica's command lanes, and page lanes where it read a page (B; A when
    # its reader came after the first append), opened at its first call of each kind
    lanes = rec.by("agui.store.lanes", "agui.store.lane")
    assert lanes in (
        {"read": 1, "command": 2 * COMMAND_LANES, "page": PAGE_LANES},
        {"read": 1, "command": 2 * COMMAND_LANES, "page": 2 * PAGE_LANES},
    )
    # one Redis: its lanes name no node (a cluster's do: test_lanes_are_counted_per_node)
    assert all(
        "server.address" not in dict(attributes) for attributes in rec.values("agui.store.lanes")
    )
    go.set()
    await asyncio.gather(*readers)
    assert await task == len(events)
    await until(lambda: rec.total("agui.store.lanes", {"agui.store.lane": "read"}) == 0)
    assert rec.total("agui.store.lanes") == lanes["command"] + lanes["page"]  # until closed
    await a.aclose()
    await b.aclose()
    assert rec.total("agui.store.lanes") == 0


async def test_lanes_are_counted_per_node(
    opened: Opened, rec: Recorded, redis_cluster: Any, run_id: str
) -> None:
    """On a cluster each master a store talks to has command and page lanes of its
    own: counted per node, named by OpenTelemetry's ``server.address`` and
    ``server.port``, and back to 0 when the store closes."""
    s = opened.store(RunStore(opened.cluster(redis_cluster.url), lease=2))
    ids = [f"{run_id}-{n}" for n in range(30)]  # spread over every master
    for i in ids:
        events = token_run("t", i, 3)
        assert await s.publish(i, events) == len(events)
        assert [e async for _, e in s.subscribe(i)] == events
    masters = {redis_cluster.master_of(key_slot(s.stream_key(i))) for i in ids}
    assert len(masters) == 3
    command: dict[tuple[str, int], int] = {}
    page: dict[tuple[str, int], int] = {}
    for attributes, value in rec.values("agui.store.lanes").items():
        found = dict(attributes)
        node = (found["server.address"], found["server.port"])
        {"command": command, "page": page}[found["agui.store.lane"]][node] = value
    assert {port for _, port in command} == masters
    assert set(command.values()) == {COMMAND_LANES}
    assert {port for _, port in page} == masters
    assert set(page.values()) == {PAGE_LANES}
    await s.aclose()
    assert rec.total("agui.store.lanes") == 0


# -- the stamp in Redis ------------------------------------------------------------------------


@pytest.mark.valkey
async def test_each_appends_last_entry_carries_its_stamp(
    opened: Opened, rec: Recorded, redis_server: RedisServer, run_id: str
) -> None:
    s = store(opened, redis_server, batch=64)
    burst = token_run("t", f"{run_id}-burst", 1_000)  # appends of up to 64 events
    slow = token_run("t", f"{run_id}-paced", 30)  # an append per event
    before = time.time_ns() // 1_000_000
    assert await s.publish(f"{run_id}-burst", burst) == len(burst)
    assert await s.publish(f"{run_id}-paced", paced(slow, 0.003)) == len(slow)
    after = time.time_ns() // 1_000_000
    sizes: list[int] = []
    for rid, events in ((f"{run_id}-burst", burst), (f"{run_id}-paced", slow)):
        stamps = await stamps_in_redis(s, rid)
        ends = [n for n, _ in stamps]
        assert ends[-1] == len(events)  # every event is in a stamped append
        assert all(before <= ms <= after for _, ms in stamps)
        assert [ms for _, ms in stamps] == sorted(ms for _, ms in stamps)
        sizes += [end - start for start, end in zip([0, *ends], ends, strict=False)]
    assert max(sizes) == 64
    [point] = rec.histogram("agui.store.append.size")
    assert point.count == len(sizes) == rec.total("agui.store.appends")
    assert (point.sum, point.min, point.max) == (sum(sizes), min(sizes), max(sizes))


@pytest.mark.valkey
async def test_a_stamp_is_read_and_anything_else_is_corrupted(
    opened: Opened, rec: Recorded, redis_server: RedisServer, run_id: str
) -> None:
    s = store(opened, redis_server)
    events = token_run("t", run_id, 3)
    await s.publish(run_id, events)
    assert [e async for _, e in s.subscribe(run_id)] == events
    entries = await s.redis.xrange(s.stream_key(run_id))
    gen = entries[0][0].split(b"-")[1].decode()
    bad = {
        "not-digits": {b"p": entries[0][1][b"p"], b"t": b"soon"},
        "too-long": {b"p": entries[0][1][b"p"], b"t": b"1" * 16},
        "other-field": {b"p": entries[0][1][b"p"], b"x": b"1"},
    }
    for name, fields in bad.items():
        other = f"{run_id}-{name}"
        await s.redis.xadd(s.stream_key(other), fields, id=f"1-{gen}")
        with pytest.raises(StoreCorrupted, match=f"1-{gen}") as caught:
            await drained(s, other)
        assert ("stamp" in str(caught.value)) is (name != "other-field")


@pytest.mark.valkey
async def test_a_retried_append_over_its_stamped_entries_is_its_own(
    opened: Opened,
    rec: Recorded,
    redis_server: RedisServer,
    run_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reply lost after Redis stored a stamped append: the retry (another stamp)
    finds its own events, nothing stored twice, not corrupted."""
    s = store(opened, redis_server)
    events = token_run("t", run_id, 6)
    original = producer_module.Producer.append
    retried: list[int] = []

    async def twice(self: Any, first: int, payloads: list[bytes], stamp: int | None) -> None:
        await original(self, first, payloads, stamp)
        if not retried:
            retried.append(first)
            self.stored = first - 1  # as if the reply was lost
            await asyncio.sleep(0.002)
            await original(self, first, payloads, time.time_ns() // 1_000_000)

    monkeypatch.setattr(producer_module.Producer, "append", twice)
    assert await s.publish(run_id, events) == len(events)
    assert retried
    assert [e async for _, e in s.subscribe(run_id)] == events


# -- faults ------------------------------------------------------------------------------------


async def test_faults_are_counted_by_type(
    opened: Opened,
    rec: Recorded,
    fresh_redis: Callable[..., RedisServer],
    run_id: str,
) -> None:
    server = fresh_redis()
    s = store(opened, server, reconnect=1.0, lease=1.0)
    go = asyncio.Event()

    async def waiting() -> AsyncIterator[Event]:
        yield token_run("t", run_id, 1)[0]
        await go.wait()

    task = await s.start(run_id, waiting())
    assert task is not None
    # garbage in a run's key: the reader's StoreCorrupted
    await s.redis.set(s.stream_key(f"{run_id}-garbage"), b"not a stream")
    with pytest.raises(StoreCorrupted):
        await drained(s, f"{run_id}-garbage")
    # Redis stopped: the live producer, a reader, a new run
    reader = asyncio.ensure_future(drained(s, run_id))
    await until(lambda: rec.total("agui.store.readers") == 1)
    server.stop()
    with pytest.raises(StoreUnavailable):
        await reader
    with pytest.raises(StoreUnavailable):
        await s.publish(f"{run_id}-new", [])
    with pytest.raises(StoreUnavailable):
        await task
    await asyncio.sleep(0)  # the store's own callback on its background run
    assert rec.by("agui.store.faults", "error.type") == {
        "agui_wire.errors.StoreCorrupted": 1,
        UNAVAILABLE: 3,  # the reader, the new run, the background run
    }
    assert rec.total("agui.store.runs.active") == 0
    assert rec.total("agui.store.readers") == 0


async def test_events_lost_from_the_stream_are_faults_of_each_reader(
    opened: Opened, rec: Recorded, redis_server: RedisServer, run_id: str
) -> None:
    """Events gone from the middle of a run's stream (as a failover loses them): each
    reader that reaches them gets ``RunLost``, counted once per reader, whether it
    replays or resumes; a resume past them reads on, no fault."""
    s = store(opened, redis_server, batch=50)
    events = token_run("t", run_id, 300)
    assert await s.publish(run_id, events) == len(events)
    entries = await s.redis.xrange(s.stream_key(run_id), count=1)
    generation = entries[0][0].split(b"-")[1].decode()
    lost = [f"{n}-{generation}" for n in range(100, 110)]
    assert await s.redis.xdel(s.stream_key(run_id), *lost) == len(lost)
    for after in (None, 50):
        with pytest.raises(RunLost):
            async for _ in s.subscribe(run_id, after=after):
                pass
    assert [e async for _, e in s.subscribe(run_id, after=200)] == events[200:]
    assert rec.by("agui.store.faults", "error.type") == {"agui_wire.errors.RunLost": 2}
    assert rec.total("agui.store.readers") == 0


async def test_a_cancelled_claim_is_named_but_not_an_error(
    opened: Opened,
    rec: Recorded,
    fresh_redis: Callable[..., RedisServer],
    run_id: str,
) -> None:
    """Redis stalled (SIGSTOP) and the caller gives up: the claim's span says it
    was cancelled, without an ERROR status (the store did not fail)."""
    server = fresh_redis()
    s = store(opened, server)
    await s.publish(f"{run_id}-warm", [])  # the scripts loaded, a connection open
    assert server.process is not None
    server.process.send_signal(signal.SIGSTOP)
    try:
        claiming = asyncio.ensure_future(s.publish(run_id, []))
        await asyncio.sleep(0.2)
        claiming.cancel()
        with pytest.raises(asyncio.CancelledError):
            await claiming
    finally:
        server.process.send_signal(signal.SIGCONT)
    cancelled = [
        span
        for span in rec.spans("agui.store.claim")
        if (span.attributes or {}).get("agui.run.id") == run_id
    ]
    assert len(cancelled) == 1
    [span] = cancelled
    assert span.attributes is not None
    assert span.attributes["error.type"] == "asyncio.exceptions.CancelledError"
    assert span.status.status_code is StatusCode.UNSET
    assert rec.values("agui.store.faults") == {}


async def test_the_stores_refusals_are_counted_by_status(
    opened: Opened,
    rec: Recorded,
    fresh_redis: Callable[..., RedisServer],
    run_id: str,
) -> None:
    server = fresh_redis()
    s = store(opened, server, reconnect=0.5)
    await s.publish(run_id, token_run("t", run_id, 3))
    statuses = []
    for response in (
        s.response(f"{run_id}-unknown"),  # 404
        s.response(run_id, after="99"),  # past the end: 400
        s.response(""),  # not a run id: 400
    ):
        d = driver(SSE_MEDIA_TYPE, None)
        await d(response)
        statuses.append(d.messages[0][1]["status"])
    server.stop()
    d = driver(SSE_MEDIA_TYPE, None)
    await d(s.response(run_id))
    statuses.append(d.messages[0][1]["status"])
    assert statuses == [404, 400, 400, 503]
    assert rec.by("agui.server.refusals", "http.response.status_code") == {404: 1, 400: 2, 503: 1}
    assert rec.by("agui.store.faults", "error.type") == {UNAVAILABLE: 1}


# -- off ----------------------------------------------------------------------------------


async def test_off_no_stamp_is_written(
    opened: Opened, redis_server: RedisServer, run_id: str
) -> None:
    """The API without an SDK: the stream holds the events and the end, nothing
    else (what the store's telemetry calls cost then, on every store:
    tests/runstore/test_telemetry.py)."""
    assert _telemetry.current() is None
    s = store(opened, redis_server, batch=64)
    events = token_run("t", run_id, 500)  # bursts of 64, then an append per event
    assert await s.publish(run_id, paced(events, 0.001, fast=450)) == len(events)
    entries = await s.redis.xrange(s.stream_key(run_id))
    assert all(b"t" not in fields for _, fields in entries)
    assert len(entries) == len(events) + 1  # the events and the end


def test_without_the_api_package_the_store_works_and_stamps_nothing(
    redis_server: RedisServer, run_id: str
) -> None:
    out = _run_script(
        WITHOUT_API,
        f"""
        import asyncio
        import redis.asyncio as aioredis
        from agui_wire.redis import RunStore
        from tests.redis.app import token_run

        async def main():
            client = aioredis.from_url({redis_server.url!r})
            s = RunStore(client)
            events = token_run("t", {run_id!r}, 50)
            task = await s.start({run_id!r}, events)
            got = [e async for _, e in s.subscribe({run_id!r})]
            assert got == events and await task == len(events)
            entries = await s.redis.xrange(s.stream_key({run_id!r}))
            assert not any(b"t" in fields for _, fields in entries)
            await s.aclose()
            await client.aclose()

        asyncio.run(main())
        print("opentelemetry" in sys.modules)
        """,
    )
    assert out.split() == ["False"]


def test_batches_and_prefixes_are_decoded_once_for_every_response() -> None:
    """Telemetry counts a batch's events by type from ``decoded()``: the store's
    batches and compact prefixes hand over the events they hold (decoded once,
    shared by every response), not a decode of their frames per response."""

    class Run:
        run_id = "r"
        stream = "k"

    events = token_run("t", "r", 3)
    batch = Batch(Run(), 0, 1, [encode_payload(e) for e in events], None)
    assert batch.decoded() is batch.decoded() is batch.events()
    assert batch.decoded() == events
    prefix = Prefix(events, 5, 0)
    assert prefix.decoded() is prefix.events
