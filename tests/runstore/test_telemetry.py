"""The run store's telemetry on every backend (docs/telemetry.md), read back from the
SDK's in-memory metric reader and span exporter: values, not names.

* ``agui.store.runs.active`` and ``readers`` count what is live, and go back to 0;
* appends and their sizes are the appends the backend's producer stored, one
  record each;
* the delivery lag is one record per batch a reader delivers while it follows
  the live run (none for a replay), between 0 and what the test measured from
  the batch's first event's production to its delivery;
* answers about a run (``RunNotFound``, ``RunInProgress``, ``ResumePastEnd``) are
  not faults; a trimmed history (``HistoryTrimmed``) is one, once per reader that
  meets it (a subscriber, a response);
* a drain with live runs: one drain, a span with no error, no fault (Redis hands
  each run left over: one hand-over each; in memory there is nobody to hand it
  to: none);
* spans of the claim, the reader's open, the fold (the open's child), with the
  run id; an unknown run's open is named, not an error;
* ``RunStore.response`` on both transports, compressed or not: the server's
  events and bytes equal the bodies;
* off (the API without an SDK): no stamp, and the store's telemetry calls are per
  append and per batch, never per event; without the API package, the store in
  memory works (Redis's: tests/redis/test_telemetry.py).

What only Redis has (lanes, the stamp in a stream, its faults, a stalled server,
the store's 503, telemetry off) is tests/redis/test_telemetry.py's.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, _telemetry
from agui_wire._runstore.batches import Batch
from agui_wire.errors import (
    HistoryTrimmed,
    ResumePastEnd,
    RunInProgress,
    RunNotFound,
    StoreDraining,
)
from agui_wire.memory import _producer as memory_producer
from agui_wire.redis import _producer as redis_producer
from tests.redis.app import paced, token_run
from tests.runstore.kit import Kit, RunStore
from tests.support.telemetry import WITHOUT_API, Recorded, recording
from tests.unit.test_telemetry import _run_script, driver, received

pytestmark = pytest.mark.anyio

Event = dict[str, Any]


@pytest.fixture
def rec() -> Iterator[Recorded]:
    with recording() as recorded:
        yield recorded


async def until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def drained(store: RunStore, run_id: str) -> None:
    async for _ in store.subscribe(run_id):
        pass


# -- what is live ------------------------------------------------------------------------------


async def test_runs_and_readers_count_what_is_live_and_go_back_to_zero(
    kit: Kit, rec: Recorded, run_id: str
) -> None:
    a = kit.store(lease=2)
    b = kit.replica(a, lease=2)
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

    readers = [asyncio.ensure_future(read(s, into)) for s, into in zip((a, b, b), got, strict=True)]
    await until(lambda: all(into for into in got))  # all three follow the tail
    assert rec.total("agui.store.runs.active") == 1
    assert rec.total("agui.store.readers") == 3
    go.set()
    await asyncio.gather(*readers)
    assert await task == len(events)
    assert got == [events] * 3
    assert rec.total("agui.store.runs.active") == 0
    assert rec.total("agui.store.readers") == 0
    assert rec.total("agui.store.faults") == 0


# -- appends and the delivery lag ----------------------------------------------------------


async def test_appends_and_their_sizes_are_what_the_producer_stored(
    kit: Kit, rec: Recorded, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    producer = (redis_producer if kit.redis else memory_producer).Producer
    original = producer.append
    sizes: list[int] = []

    async def append(self: Any, first: int, payloads: list[bytes], stamp: int | None) -> None:
        await original(self, first, payloads, stamp)
        sizes.append(len(payloads))  # stored

    monkeypatch.setattr(producer, "append", append)
    s = kit.store(batch=64)
    burst = token_run("t", f"{run_id}-burst", 1_000)  # appends of up to 64 events
    slow = token_run("t", f"{run_id}-paced", 30)  # about an append per event
    assert await s.publish(f"{run_id}-burst", burst) == len(burst)
    assert await s.publish(f"{run_id}-paced", paced(slow, 0.003)) == len(slow)
    assert sum(sizes) == len(burst) + len(slow)
    assert max(sizes) <= 64
    [point] = rec.histogram("agui.store.append.size")
    assert point.count == len(sizes) == rec.total("agui.store.appends")
    assert point.sum == len(burst) + len(slow)
    assert (point.min, point.max) == (min(sizes), max(sizes))
    bounds = list(point.explicit_bounds)
    expected = collections.Counter(
        next((i for i, bound in enumerate(bounds) if size <= bound), len(bounds)) for size in sizes
    )
    assert list(point.bucket_counts) == [expected[i] for i in range(len(bounds) + 1)]


async def test_the_lag_is_recorded_once_per_live_batch_and_bounded_by_what_was_measured(
    kit: Kit, rec: Recorded, run_id: str
) -> None:
    """Readers (on two replicas, for Redis) of a paced run: one lag record per batch
    each delivered, each between 0 and (delivery - production of the batch's first
    event) as the test saw them; a late joiner's replay of the ended run records
    none."""
    a = kit.store(lease=2)
    b = kit.replica(a, lease=2)
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
    replayed = [e async for _, e in b.subscribe(run_id)]  # a late joiner: no lag
    assert replayed == events
    [after] = rec.histogram("agui.store.delivery.lag")
    assert after.count == point.count


# -- faults and drains ------------------------------------------------------------------------


async def test_answers_about_a_run_are_not_faults(kit: Kit, rec: Recorded, run_id: str) -> None:
    s = kit.store(lease=2)
    with pytest.raises(RunNotFound):
        await drained(s, f"{run_id}-unknown")
    go = asyncio.Event()

    async def waiting() -> AsyncIterator[Event]:
        yield token_run("t", run_id, 1)[0]
        await go.wait()

    task = await s.start(run_id, waiting())
    assert task is not None
    with pytest.raises(RunInProgress):
        await s.publish(run_id, [])
    go.set()
    assert await task == 1
    with pytest.raises(ResumePastEnd):
        async for _ in s.subscribe(run_id, after=5):
            pass
    assert rec.values("agui.store.faults") == {}
    assert rec.total("agui.store.runs.active") == 0
    assert rec.total("agui.store.readers") == 0


async def test_a_trimmed_history_is_a_fault_of_each_reader_that_meets_it(
    kit: Kit, rec: Recorded, run_id: str
) -> None:
    """``maxlen`` trimmed the events a reader asks for: ``HistoryTrimmed`` for a
    subscriber, a ``RUN_ERROR`` ``HISTORY_TRIMMED`` body for a response, each
    counted once; a reader of what is kept meets no fault."""
    s = kit.store(maxlen=100, batch=50)
    events = token_run("t", run_id, 2000)
    assert await s.publish(run_id, events) == len(events)
    with pytest.raises(HistoryTrimmed) as trimmed:
        await drained(s, run_id)
    d = driver(SSE_MEDIA_TYPE, None)
    await d(s.response(run_id))
    assert [(e["type"], e.get("code")) for e in received(d, None)] == [
        ("RUN_ERROR", "HISTORY_TRIMMED")
    ]
    kept = [e async for _, e in s.subscribe(run_id, after=trimmed.value.first - 1)]
    assert kept == events[trimmed.value.first - 1 :]
    assert rec.by("agui.store.faults", "error.type") == {"agui_wire.errors.HistoryTrimmed": 2}
    assert rec.total("agui.store.readers") == 0


async def test_a_drain_with_live_runs_counts_one_drain_and_no_fault(
    kit: Kit, rec: Recorded, run_id: str
) -> None:
    a = kit.store(lease=2)
    quick = token_run("t", f"{run_id}-quick", 3)

    async def forever(rid: str) -> AsyncIterator[Event]:
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": rid}
        while True:
            await asyncio.sleep(0.01)
            yield {"type": "CUSTOM", "name": "tick", "value": 1}

    endless = [await a.start(f"{run_id}-{i}", forever(f"{run_id}-{i}")) for i in range(2)]
    done = await a.start(f"{run_id}-quick", paced(quick, 0.01))  # ends within the grace
    await until(lambda: rec.total("agui.store.appends") >= 6)
    await a.drain(0.3)
    for task in endless:
        assert task is not None
        with pytest.raises(StoreDraining):
            await task
    assert done is not None
    assert await done == len(quick)
    assert rec.total("agui.store.drains") == 1
    # Redis releases each run left for a replica to take over; one process cannot
    assert rec.total("agui.store.handovers") == (2 if kit.redis else 0)
    assert rec.total("agui.store.runs.active") == 0
    assert rec.values("agui.store.faults") == {}  # a run let go by a drain is no fault
    [drain] = rec.spans("agui.store.drain")
    assert drain.status.status_code is StatusCode.UNSET


# -- spans -----------------------------------------------------------------------------------


async def test_the_claim_the_open_and_the_fold_are_spans_with_the_run_id(
    kit: Kit, rec: Recorded, run_id: str
) -> None:
    s = kit.store()
    events = token_run("t", run_id, 5)
    await s.publish(run_id, events)
    assert [e async for _, e in s.subscribe(run_id, compact=True)][-1] == events[-1]
    with pytest.raises(RunNotFound):
        await drained(s, f"{run_id}-unknown")
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


# -- RunStore.response ----------------------------------------------------------------------


@pytest.mark.parametrize("coding", [None, "gzip"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
async def test_responses_count_the_events_and_bytes_of_their_body(
    kit: Kit, rec: Recorded, run_id: str, accept: str, coding: str | None
) -> None:
    transport = {SSE_MEDIA_TYPE: "sse", PROTO_MEDIA_TYPE: "protobuf"}[accept]
    events = token_run("t", run_id, 300)
    s = kit.store()
    go = asyncio.Event()

    async def agent() -> AsyncIterator[Event]:
        for event in events[:100]:
            yield event
        await go.wait()  # the responses replay these, then follow the tail
        async for event in paced(events[100:], 0.0005):
            yield event

    task = await s.start(run_id, agent())
    assert task is not None
    await until(lambda: rec.total("agui.store.appends") > 0)
    ds = [driver(accept, coding) for _ in range(2)]
    serving = asyncio.gather(*(d(s.response(run_id, compress=coding is not None)) for d in ds))
    await until(lambda: rec.total("agui.store.readers") == 2)
    go.set()
    await serving
    assert await task == len(events)
    for d in ds:
        assert received(d, coding) == events
    bodies = sum(len(d.body) for d in ds)
    match = {"agui.transport": transport}
    assert rec.total("agui.server.bytes", match) == bodies
    assert rec.total("agui.server.events", match) == 2 * len(events)
    assert rec.by("agui.server.events", "agui.event.type") == {
        k: 2 * v for k, v in collections.Counter(e["type"] for e in events).items()
    }
    spans = rec.spans()
    assert len(spans) == 2
    for span in spans:
        assert span.attributes is not None
        assert span.attributes["agui.stream.outcome"] == "finished"
        assert span.attributes["agui.stream.events"] == len(events)
    assert rec.total("agui.store.readers") == 0


# -- off -------------------------------------------------------------------------------------


async def test_off_the_store_looks_at_telemetry_per_append_and_batch_never_per_event(
    kit: Kit, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API without an SDK: the store's calls into its telemetry
    (``agui_wire._runstore.observe``, ``_telemetry``, opentelemetry) are a few per
    append and per batch delivered, never per event, and reach no OpenTelemetry
    code."""
    assert _telemetry.current() is None
    calls: collections.Counter[str] = collections.Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith(
                ("opentelemetry", "agui_wire._runstore.observe", "agui_wire._telemetry")
            ):
                calls[f"{module}.{frame.f_code.co_name}"] += 1

    producer = (redis_producer if kit.redis else memory_producer).Producer
    original = producer.append
    appends = 0

    async def counted(self: Any, first: int, payloads: list[bytes], stamp: int | None) -> None:
        nonlocal appends
        appends += 1
        assert stamp is None  # nothing records: nothing to stamp
        await original(self, first, payloads, stamp)

    monkeypatch.setattr(producer, "append", counted)
    s = kit.store(batch=256)
    events = token_run("t", run_id, 5_000)
    batches = 0

    async def read() -> None:
        nonlocal batches
        async for _ in s._reading.subscription(None, run_id, None, False).batches():
            batches += 1

    go = asyncio.Event()

    async def agent() -> AsyncIterator[Event]:
        await go.wait()
        for event in events:
            yield event

    task = await s.start(run_id, agent())
    assert task is not None
    reader = asyncio.ensure_future(read())
    await asyncio.sleep(0.05)
    sys.setprofile(profile)
    try:
        go.set()
        await reader
        await task
    finally:
        sys.setprofile(None)
    assert appends + batches < 500  # so a call per event would show
    # per append: stamp() (a look) and appended() (none: nothing was stamped); per
    # batch: delivered() (none: no stamp); a few per run, reader, lane and span
    assert calls["agui_wire._telemetry.current"] <= appends + 10, calls
    assert sum(calls.values()) <= 3 * appends + batches + 20, calls
    assert not any(name.startswith("opentelemetry") for name in calls), calls


def test_without_the_api_package_the_store_in_memory_works() -> None:
    out = _run_script(
        WITHOUT_API,
        """
        import asyncio
        from agui_wire.memory import RunStore
        from tests.redis.app import token_run

        async def main():
            s = RunStore()
            events = token_run("t", "run-1", 50)
            task = await s.start("run-1", events)
            got = [e async for _, e in s.subscribe("run-1")]
            assert got == events and await task == len(events)
            await s.aclose()

        asyncio.run(main())
        print("opentelemetry" in sys.modules)
        """,
    )
    assert out.split() == ["False"]
