"""The run store's telemetry (docs/telemetry.md) against a real redis-server, read
back from the SDK's in-memory metric reader and span exporter: values, not names.

* ``agui.store.runs.active``, ``readers`` and ``lanes`` count what is live, and
  go back to 0;
* appends and their sizes are what the producer stored: each append's last entry
  carries its stamp (``t``) in Redis, so the sizes are read back from the stream;
* the delivery lag is one record per batch a reader delivers while it follows
  the live run (none for a replay), between 0 and what the test measured from
  the event's production to its delivery;
* faults by error type: ``StoreUnavailable`` with Redis stopped (a producer and a
  reader), ``StoreCorrupted``; answers about a run (``RunNotFound``,
  ``RunInProgress``) are not faults;
* a drain with live runs: one drain, one hand-over per run handed over, a span;
* spans of the claim, the reader's open, the fold (the open's child), with the
  run id; the ``agui.run`` span of a response is not the parent of any of them;
* ``RunStore.response`` on both transports, compressed or not: the server's
  events and bytes equal the body; the store's refusals (404, 400, 503) counted;
* an entry's stamp is read; a stamp that is not one, and any other field, is
  ``StoreCorrupted``; a retried append over a stamped entry is its own;
* off (the API without an SDK): nothing recorded, no stamp written, and the
  store's telemetry calls are per append and per batch, never per event; without
  the API package, the store works and stamps nothing.

The tests of the stamp in Redis (the append script) run on Valkey 8 too.
"""

from __future__ import annotations

import asyncio
import collections
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from opentelemetry.trace import StatusCode

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, _telemetry
from agui_wire._runstore.batches import Batch, Prefix
from agui_wire.errors import (
    RunInProgress,
    RunNotFound,
    StoreCorrupted,
    StoreDraining,
    StoreUnavailable,
)
from agui_wire.redis import RunStore
from agui_wire.redis import _producer as producer_module
from tests.redis.app import paced, token_run
from tests.redis.conftest import run
from tests.support.telemetry import WITHOUT_API, Recorded, recording
from tests.unit.test_telemetry import _run_script, driver, received

Event = dict[str, Any]
UNAVAILABLE = "agui_wire.errors.StoreUnavailable"


@pytest.fixture
def rec() -> Iterator[Recorded]:
    with recording() as recorded:
        yield recorded


def store(server: Any, **options: Any) -> RunStore:
    options.setdefault("lease", 2.0)
    return RunStore(aioredis.from_url(server.url), **options)


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


# -- what is live ------------------------------------------------------------------------------


def test_runs_readers_and_lanes_count_what_is_live_and_go_back_to_zero(rec, redis_server, run_id):
    async def main() -> None:
        a, b = store(redis_server), store(redis_server)  # two replicas on one Redis
        go = asyncio.Event()
        events = token_run("t", run_id, 20)

        async def agent() -> AsyncIterator[Event]:
            yield events[0]
            await go.wait()
            for event in events[1:]:
                yield event

        task = await a.start(run_id, agent())
        assert task is not None
        got: list[list[Event]] = [[], [], []]

        async def read(s: RunStore, into: list[Event]) -> None:
            async for _, event in s.subscribe(run_id):
                into.append(event)

        readers = [
            asyncio.ensure_future(read(s, into)) for s, into in zip((a, b, b), got, strict=True)
        ]
        await until(lambda: all(into for into in got))  # all three follow the tail
        assert rec.total("agui.store.runs.active") == 1
        assert rec.total("agui.store.readers") == 3
        assert rec.total("agui.store.lanes") == 2  # one per replica (one Redis)
        go.set()
        await asyncio.gather(*readers)
        assert await task == len(events)
        assert got == [events] * 3
        assert rec.total("agui.store.runs.active") == 0
        assert rec.total("agui.store.readers") == 0
        await until(lambda: rec.total("agui.store.lanes") == 0)  # at the lanes' next wake
        assert rec.total("agui.store.faults") == 0
        await a.aclose()
        await b.aclose()

    run(main())


# -- appends and the delivery lag ----------------------------------------------------------


@pytest.mark.valkey
def test_appends_and_their_sizes_are_what_the_producer_stored(rec, redis_server, run_id):
    async def main() -> None:
        s = store(redis_server, batch=64)
        burst = token_run("t", f"{run_id}-burst", 1_000)  # appends of up to 64 events
        slow = token_run("t", f"{run_id}-paced", 30)  # an append per event
        assert await s.publish(f"{run_id}-burst", burst) == len(burst)
        assert await s.publish(f"{run_id}-paced", paced(slow, 0.003)) == len(slow)
        sizes: list[int] = []
        for rid, events in ((f"{run_id}-burst", burst), (f"{run_id}-paced", slow)):
            stamps = await stamps_in_redis(s, rid)
            ends = [n for n, _ in stamps]
            assert ends[-1] == len(events)  # every event is in a stamped append
            sizes += [end - before for before, end in zip([0, *ends], ends, strict=False)]
        assert max(sizes) == 64
        [point] = rec.histogram("agui.store.append.size")
        assert point.count == len(sizes) == rec.total("agui.store.appends")
        assert point.sum == len(burst) + len(slow)
        assert (point.min, point.max) == (min(sizes), max(sizes))
        bounds = list(point.explicit_bounds)
        expected = collections.Counter(
            next((i for i, bound in enumerate(bounds) if size <= bound), len(bounds))
            for size in sizes
        )
        assert list(point.bucket_counts) == [expected[i] for i in range(len(bounds) + 1)]
        await s.aclose()

    run(main())


def test_the_lag_is_recorded_once_per_live_batch_and_bounded_by_what_was_measured(
    rec, redis_server, run_id
):
    """Readers on two replicas of a paced run: one lag record per batch each
    delivered, each between 0 and (delivery - production of the batch's first
    event) as the test saw them; a late joiner's replay of the ended run records
    none."""

    async def main() -> None:
        a, b = store(redis_server), store(redis_server)
        events = token_run("t", run_id, 40)
        produced: dict[int, float] = {}  # index -> wall-clock time the agent yielded it
        go = asyncio.Event()

        async def agent() -> AsyncIterator[Event]:
            await go.wait()
            for n, event in enumerate(events, 1):
                await asyncio.sleep(0.004)
                produced[n] = time.time()
                yield event

        task = await a.start(run_id, agent())
        assert task is not None
        bounds: list[float] = []  # per delivered batch: delivery - production of its first

        async def read(s: RunStore) -> int:
            batches = 0
            async for batch in s._reading.subscription(None, run_id, None, False).batches():
                assert isinstance(batch, Batch)
                bounds.append(time.time() - produced[batch.first])
                batches += 1
            return batches

        readers = [asyncio.ensure_future(read(s)) for s in (a, b, b)]
        await until(lambda: rec.total("agui.store.readers") == 3)
        await asyncio.sleep(0.05)  # attached to the tails: nothing stored, nothing replayed
        go.set()
        delivered = sum(await asyncio.gather(*readers))
        await task
        [point] = rec.histogram("agui.store.delivery.lag")
        assert point.count == delivered == len(bounds)
        assert delivered >= 3 * 10  # paced: about a batch per event, fewer on a busy machine
        assert point.min >= 0
        # ms stamps: each record may read up to 1 ms more than the test's own bound
        assert point.sum <= sum(bounds) + delivered * 0.001
        assert point.max <= max(bounds) + 0.001
        # a late joiner replays the run: no lag
        replayed = [e async for _, e in b.subscribe(run_id)]
        assert replayed == events
        [after] = rec.histogram("agui.store.delivery.lag")
        assert after.count == point.count
        await a.aclose()
        await b.aclose()

    run(main())


# -- faults, drains, hand-overs ---------------------------------------------------------------


def test_faults_are_counted_by_type_and_answers_are_not(rec, fresh_redis, run_id):
    async def main() -> None:
        server = fresh_redis()
        s = store(server, reconnect=1.0, lease=1.0)
        with pytest.raises(RunNotFound):
            async for _ in s.subscribe(f"{run_id}-unknown"):
                pass
        go = asyncio.Event()

        async def waiting() -> AsyncIterator[Event]:
            yield token_run("t", run_id, 1)[0]
            await go.wait()

        task = await s.start(run_id, waiting())
        assert task is not None
        with pytest.raises(RunInProgress):
            await s.publish(run_id, [])
        assert rec.values("agui.store.faults") == {}
        # garbage in a run's key: the reader's StoreCorrupted
        await s.redis.set(s.stream_key(f"{run_id}-garbage"), b"not a stream")
        with pytest.raises(StoreCorrupted):
            async for _ in s.subscribe(f"{run_id}-garbage"):
                pass
        # Redis stopped: the live producer, a reader, a new run
        reader = asyncio.ensure_future(_drain_reader(s, run_id))
        await until(lambda: rec.total("agui.store.readers") == 1)
        server.stop()
        with pytest.raises(StoreUnavailable):
            await reader
        with pytest.raises(StoreUnavailable):
            await task
        with pytest.raises(StoreUnavailable):
            await s.publish(f"{run_id}-new", [])
        assert rec.by("agui.store.faults", "error.type") == {
            "agui_wire.errors.StoreCorrupted": 1,
            UNAVAILABLE: 3,
        }
        assert rec.total("agui.store.runs.active") == 0
        assert rec.total("agui.store.readers") == 0
        await s.aclose()

    run(main())


async def _drain_reader(s: RunStore, run_id: str) -> None:
    async for _ in s.subscribe(run_id):
        pass


def test_a_drain_with_live_runs_counts_one_drain_and_each_hand_over(rec, redis_server, run_id):
    async def main() -> None:
        a = store(redis_server)
        quick = token_run("t", f"{run_id}-quick", 3)

        async def forever(rid: str) -> AsyncIterator[Event]:
            yield {"type": "RUN_STARTED", "threadId": "t", "runId": rid}
            while True:
                await asyncio.sleep(0.01)
                yield {"type": "CUSTOM", "name": "tick", "value": 1}

        endless = [await a.start(f"{run_id}-{i}", forever(f"{run_id}-{i}")) for i in range(2)]
        done = await a.start(f"{run_id}-quick", paced(quick, 0.01))  # ends within the grace
        assert all(endless)
        assert done is not None
        await until(lambda: rec.total("agui.store.appends") >= 6)
        await a.drain(0.3)
        for task in endless:
            with pytest.raises(StoreDraining):
                await task
        assert await done == len(quick)
        assert rec.total("agui.store.drains") == 1
        assert rec.total("agui.store.handovers") == 2
        assert rec.total("agui.store.runs.active") == 0
        assert rec.values("agui.store.faults") == {}  # a hand-over is not a fault
        [drain] = rec.spans("agui.store.drain")
        assert drain.status.status_code is StatusCode.UNSET
        await a.aclose()

    run(main())


# -- spans -----------------------------------------------------------------------------------


def test_the_claim_the_open_and_the_fold_are_spans_with_the_run_id(rec, redis_server, run_id):
    async def main() -> None:
        s = store(redis_server)
        events = token_run("t", run_id, 5)
        await s.publish(run_id, events)
        assert [e async for _, e in s.subscribe(run_id, compact=True)][-1] == events[-1]
        with pytest.raises(RunNotFound):
            async for _ in s.subscribe(f"{run_id}-unknown"):
                pass
        await s.aclose()

    run(main())
    [claim] = rec.spans("agui.store.claim")
    opened = rec.spans("agui.store.open")
    [fold] = rec.spans("agui.store.fold")
    assert claim.attributes is not None
    assert claim.attributes["agui.run.id"] == run_id
    assert claim.status.status_code is StatusCode.UNSET
    [found] = [span for span in opened if "error.type" not in (span.attributes or {})]
    [unknown] = [span for span in opened if span is not found]
    assert found.attributes is not None
    assert found.attributes["agui.run.id"] == run_id
    assert fold.parent is not None
    assert fold.parent.span_id == found.context.span_id
    assert fold.attributes is not None
    assert fold.attributes["agui.run.id"] == run_id
    # an unknown run is an answer, not a failure of the open: named, status unset
    assert unknown.attributes is not None
    assert unknown.attributes["error.type"] == "agui_wire.errors.RunNotFound"
    assert unknown.status.status_code is StatusCode.UNSET
    assert not rec.spans()  # no response: no agui.run span


def test_a_cancelled_claim_is_named_but_not_an_error(rec, fresh_redis, run_id):
    """Redis stalled (SIGSTOP) and the caller gives up: the claim's span says it
    was cancelled, without an ERROR status (the store did not fail)."""

    async def main() -> None:
        server = fresh_redis()
        s = store(server)
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
        await s.aclose()

    run(main())
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


# -- RunStore.response ----------------------------------------------------------------------


@pytest.mark.parametrize("coding", [None, "gzip"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_responses_count_the_events_and_bytes_of_their_body(
    rec, redis_server, run_id, accept: str, coding: str | None
):
    transport = {SSE_MEDIA_TYPE: "sse", PROTO_MEDIA_TYPE: "protobuf"}[accept]
    events = token_run("t", run_id, 300)

    async def main() -> list[Any]:
        s = store(redis_server)
        go = asyncio.Event()

        async def agent() -> AsyncIterator[Event]:
            for event in events[:100]:
                yield event
            await go.wait()  # the responses replay these, then follow the tail
            async for event in paced(events[100:], 0.0005):
                yield event

        task = await s.start(run_id, agent())
        await until(lambda: rec.total("agui.store.appends") > 0)
        ds = [driver(accept, coding) for _ in range(2)]
        responses = [d(s.response(run_id, compress=coding is not None)) for d in ds]
        serving = asyncio.ensure_future(asyncio.gather(*responses))
        await until(lambda: rec.total("agui.store.readers") == 2)
        go.set()
        await serving
        assert task is not None
        assert await task == len(events)
        await s.aclose()
        return ds

    ds = run(main())
    for d in ds:
        assert received(d, coding) == events
    bodies = sum(len(d.body) for d in ds)
    match = {"agui.transport": transport}
    assert rec.total("agui.server.bytes", match) == bodies
    assert rec.total("agui.server.events", match) == 2 * len(events)
    assert rec.by("agui.server.events", "agui.event.type") == {
        k: 2 * v for k, v in collections.Counter(e["type"] for e in events).items()
    }
    for span in rec.spans():
        assert span.attributes is not None
        assert span.attributes["agui.stream.outcome"] == "finished"
        assert span.attributes["agui.stream.events"] == len(events)
    assert rec.total("agui.store.readers") == 0


def test_the_stores_refusals_are_counted_by_status(rec, fresh_redis, run_id):
    async def main() -> list[int]:
        server = fresh_redis()
        s = store(server, reconnect=0.5)
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
        await s.aclose()
        return statuses

    assert run(main()) == [404, 400, 400, 503]
    assert rec.by("agui.server.refusals", "http.response.status_code") == {404: 1, 400: 2, 503: 1}
    assert rec.by("agui.store.faults", "error.type") == {UNAVAILABLE: 1}


# -- the stamp in Redis ------------------------------------------------------------------------


@pytest.mark.valkey
def test_a_stamp_is_read_and_anything_else_is_corrupted(rec, redis_server, run_id):
    async def main() -> None:
        s = store(redis_server)
        events = token_run("t", run_id, 3)
        await s.publish(run_id, events)
        assert [e async for _, e in s.subscribe(run_id)] == events
        key = s.stream_key(run_id)
        entries = await s.redis.xrange(key)
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
                async for _ in s.subscribe(other):
                    pass
            assert ("stamp" in str(caught.value)) is (name != "other-field")
        await s.aclose()

    run(main())


@pytest.mark.valkey
def test_a_retried_append_over_its_stamped_entries_is_its_own(rec, redis_server, run_id):
    """A reply lost after Redis stored a stamped append: the retry (another stamp)
    finds its own events, nothing stored twice, not corrupted."""

    async def main() -> None:
        s = store(redis_server)
        events = token_run("t", run_id, 6)
        original = producer_module.Producer.append
        retried: list[int] = []

        async def twice(self: Any, first: int, payloads: list[bytes]) -> None:
            await original(self, first, payloads)
            if not retried:
                retried.append(first)
                self.stored = first - 1  # as if the reply was lost
                await asyncio.sleep(0.002)  # another stamp
                await original(self, first, payloads)

        producer_module.Producer.append = twice  # type: ignore[method-assign]
        try:
            assert await s.publish(run_id, events) == len(events)
        finally:
            producer_module.Producer.append = original  # type: ignore[method-assign]
        assert retried
        assert [e async for _, e in s.subscribe(run_id)] == events
        await s.aclose()

    run(main())


# -- off ----------------------------------------------------------------------------------


def test_off_nothing_is_recorded_nor_stamped_and_nothing_is_paid_per_event(redis_server, run_id):
    """The API without an SDK: no stamp in Redis, and the store's calls into its
    telemetry (``agui_wire._runstore.observe``, ``_telemetry``, opentelemetry)
    are a few per append and per batch delivered, never per event."""
    assert _telemetry.current() is None
    calls: collections.Counter[str] = collections.Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith(
                ("opentelemetry", "agui_wire._runstore.observe", "agui_wire._telemetry")
            ):
                calls[f"{module}.{frame.f_code.co_name}"] += 1

    async def main() -> tuple[int, int, list[Any]]:
        s = store(redis_server, batch=256)
        events = token_run("t", run_id, 5_000)
        appends = 0
        original = producer_module.Producer.append

        async def counted(self: Any, first: int, payloads: list[bytes]) -> None:
            nonlocal appends
            appends += 1
            await original(self, first, payloads)

        producer_module.Producer.append = counted  # type: ignore[method-assign]
        batches = 0

        async def read() -> None:
            nonlocal batches
            async for _ in s._reading.subscription(None, run_id, None, False).batches():
                batches += 1

        try:
            go = asyncio.Event()

            async def agent() -> AsyncIterator[Event]:
                await go.wait()
                for event in events:
                    yield event

            task = await s.start(run_id, agent())
            reader = asyncio.ensure_future(read())
            await asyncio.sleep(0.05)
            sys.setprofile(profile)
            try:
                go.set()
                await reader
                await task
            finally:
                sys.setprofile(None)
        finally:
            producer_module.Producer.append = original  # type: ignore[method-assign]
        entries = await s.redis.xrange(s.stream_key(run_id))
        await s.aclose()
        return appends, batches, entries

    appends, batches, entries = run(main())
    assert all(b"t" not in fields for _, fields in entries)
    assert len(entries) == 5_004 + 1  # the events and the end: nothing else
    assert appends + batches < 500  # so a call per event would show
    # per append: stamp() (a look) and appended() (none: nothing was stamped); per
    # batch: delivered() (none: no stamp); a few per run, reader, lane and span
    assert calls["agui_wire._telemetry.current"] <= appends + 10, calls
    assert sum(calls.values()) <= 3 * appends + batches + 20, calls
    assert not any(name.startswith("opentelemetry") for name in calls), calls


def test_without_the_api_package_the_store_works_and_stamps_nothing(redis_server, run_id):
    out = _run_script(
        WITHOUT_API,
        f"""
        import asyncio
        import redis.asyncio as aioredis
        from agui_wire.redis import RunStore
        from tests.redis.app import token_run

        async def main():
            s = RunStore(aioredis.from_url({redis_server.url!r}))
            events = token_run("t", {run_id!r}, 50)
            task = await s.start({run_id!r}, events)
            got = [e async for _, e in s.subscribe({run_id!r})]
            assert got == events and await task == len(events)
            entries = await s.redis.xrange(s.stream_key({run_id!r}))
            assert not any(b"t" in fields for _, fields in entries)
            await s.aclose()

        asyncio.run(main())
        print("opentelemetry" in sys.modules)
        """,
    )
    assert out.split() == ["False"]


def test_batches_and_prefixes_are_decoded_once_for_every_response():
    """Telemetry counts a batch's events by type from ``decoded()``: the store's
    batches and compact prefixes hand over the events they hold (decoded once,
    shared by every response), not a decode of their frames per response."""

    class Run:
        run_id = "r"
        stream = "k"

    from agui_wire._codec.backend import encode_payload

    events = token_run("t", "r", 3)
    batch = Batch(Run(), 0, 1, [encode_payload(e) for e in events], None)
    assert batch.decoded() is batch.decoded() is batch.events()
    assert batch.decoded() == events
    prefix = Prefix(events, 5, 0)
    assert prefix.decoded() is prefix.events
