"""The producer's contract, on every backend: a run that has ended is not produced
again (``publish`` returns its count, its events closed unstarted); a live
producer excludes another (``RunInProgress``); a producer that raises ends its run
with ``RUN_ERROR`` (``INTERNAL_ERROR``, its exception kept from the readers), one
that is cancelled with ``CANCELLED``, one after its terminal event with nothing
more; ``aclose`` cancels the store's background runs; a run id that is not one is
a ``ValueError`` and its events are closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.errors import RunInProgress, StoreUnavailable
from examples.script import scripted_run
from tests.runstore.kit import Kit, collect, paced, read

pytestmark = pytest.mark.anyio

RUN = scripted_run("thread-1", "run-1")


@pytest.mark.cluster
async def test_a_run_that_has_ended_is_not_produced_again(kit: Kit, run_id: str) -> None:
    store = kit.store()
    assert await store.publish(run_id, RUN) == len(RUN)
    stored = await collect(store, run_id)
    advanced: list[Any] = []

    def again():
        for event in RUN:
            advanced.append(event)
            yield event

    for other in (store, kit.replica(store)):
        assert await other.publish(run_id, again()) == len(RUN)
        assert await other.start(run_id, again()) is None
        other_events = [{"type": "CUSTOM", "name": "x", "value": 1}]
        assert await other.publish(run_id, other_events) == len(RUN)
    assert advanced == []
    assert await collect(store, run_id) == stored


async def test_a_live_producer_excludes_another(kit: Kit, run_id: str) -> None:
    store = kit.store()
    task = await store.start(run_id, paced(RUN, 0.01))
    assert task is not None
    untouched = []

    def second():
        untouched.append(1)
        yield RUN[0]

    for other in (store, kit.replica(store)):
        with pytest.raises(RunInProgress):
            await other.publish(run_id, second())
        with pytest.raises(RunInProgress):
            await other.publish(run_id, second(), replay=True)  # a live run is not taken over
    assert untouched == []
    assert await task == len(RUN)
    assert [e for _, e in await collect(store, run_id)] == RUN


async def test_a_failing_producer_ends_the_run_with_run_error(kit: Kit, run_id: str) -> None:
    store = kit.store()

    async def fails():
        yield RUN[0]
        yield RUN[1]
        raise RuntimeError("model timeout")

    with pytest.raises(RuntimeError, match="model timeout"):
        await store.publish(run_id, fails())
    got = await collect(store, run_id)
    assert [e["type"] for _, e in got] == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"]
    assert got[-1][1]["code"] == "INTERNAL_ERROR"
    assert "model timeout" not in str(got[-1][1])
    assert await store.publish(run_id, RUN) == 3  # ended: not produced again


async def test_a_producer_failing_after_its_terminal_event_adds_nothing(
    kit: Kit, run_id: str
) -> None:
    store = kit.store()

    def fails():
        yield from RUN
        raise RuntimeError("cleanup failed")

    with pytest.raises(RuntimeError, match="cleanup failed"):
        await store.publish(run_id, fails())
    assert [e for _, e in await collect(store, run_id)] == RUN


async def test_a_cancelled_producer_ends_the_run_cancelled(kit: Kit, run_id: str) -> None:
    store = kit.store()
    gate = asyncio.Event()

    async def waits():
        yield RUN[0]
        await gate.wait()
        yield RUN[1]

    task = await store.start(run_id, waits())
    assert task is not None
    reader = asyncio.ensure_future(collect(store, run_id))
    await read(store, run_id, 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    got = await reader
    assert [e["type"] for _, e in got] == ["RUN_STARTED", "RUN_ERROR"]
    assert got[-1][1]["code"] == "CANCELLED"


async def test_aclose_cancels_the_background_runs_and_closes_the_store(
    kit: Kit, run_id: str
) -> None:
    """Its background runs are cancelled (each ends with ``RUN_ERROR``, code
    ``CANCELLED``), its readers end (``StoreUnavailable``: the store was closed; or
    the run's end), and every later call is ``StoreUnavailable``."""
    store = kit.store()
    gate = asyncio.Event()

    async def waits():
        yield RUN[0]
        await gate.wait()

    tasks = [await store.start(f"{run_id}-{n}", waits()) for n in range(3)]
    readers = []
    for n in range(3):
        await read(store, f"{run_id}-{n}", 1)
        readers.append(asyncio.ensure_future(collect(store, f"{run_id}-{n}")))
    await asyncio.sleep(0.05)  # the readers follow the runs
    await asyncio.wait_for(store.aclose(), 10)
    assert all(task is not None and task.cancelled() for task in tasks)
    for ended in await asyncio.gather(*readers, return_exceptions=True):
        if isinstance(ended, BaseException):
            assert isinstance(ended, StoreUnavailable), ended
            assert ended.reason == "the store was closed"
        else:
            assert ended[-1][1]["code"] == "CANCELLED"
    for late in (collect(store, f"{run_id}-0"), store.publish(f"{run_id}-9", RUN)):
        with pytest.raises(StoreUnavailable, match="the store was closed"):
            await late
    if kit.redis:  # the runs outlive the store (in memory they go with it)
        other = kit.store()
        for n in range(3):
            got = await collect(other, f"{run_id}-{n}")
            assert [(i, e["type"]) for i, e in got] == [(1, "RUN_STARTED"), (2, "RUN_ERROR")]
            assert got[-1][1]["code"] == "CANCELLED"


async def test_aclose_returns_when_a_run_outlives_its_cancellation(
    kit: Kit, run_id: str, caplog: Any
) -> None:
    """A run whose events' source swallows every cancellation (a model client that
    retries its close) does not hold the shutdown: ``aclose`` returns within twice
    the store's close grace, the task logged at ERROR with what it awaits."""
    store = kit.store()
    store._close_grace = grace = 0.5  # (the backend's: 4 s by default)
    stop, running = asyncio.Event(), asyncio.Event()

    async def stubborn():
        yield RUN[0]
        running.set()  # (no reader: a tail's lane is another test's)
        while not stop.is_set():
            try:
                await stop.wait()
            except asyncio.CancelledError:
                continue  # swallowed, every time

    task = await store.start(run_id, stubborn())
    assert task is not None
    await asyncio.wait_for(running.wait(), 10)
    closing = asyncio.ensure_future(store.aclose())
    try:
        done, _ = await asyncio.wait({closing}, timeout=2 * grace + 5)
        assert closing in done, "aclose waits for a run that outlives its cancellation"
        await closing
        assert not task.done()
        said = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert any(
            "did not end within 1 s of its cancellation" in m and "in stubborn" in m for m in said
        ), said
    finally:
        stop.set()  # the source gives up: the task ends (the store is closed)
        await asyncio.wait({task, closing}, timeout=10)
    assert task.done()


BAD_IDS = [123, None, b"run", "\ud800", "x" * 257, "é" * 129, "", 10**30]


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
async def test_run_ids_are_validated_everywhere(kit: Kit, bad: Any) -> None:
    store = kit.store()
    closed = []

    def events():
        try:
            yield RUN[0]
        finally:
            closed.append(True)

    for call in (
        lambda: store.publish(bad, [RUN[0]]),
        lambda: store.start(bad, [RUN[0]]),
        lambda: collect(store, bad),
    ):
        with pytest.raises(ValueError, match="1 to 256 UTF-8 bytes"):
            await call()
    generator = events()
    next(generator)  # started: closing it runs the finally
    with pytest.raises(ValueError, match="256 UTF-8 bytes"):
        await store.start(bad, generator)
    assert closed == [True]  # the producer is closed, not left open


async def test_valid_run_ids_at_the_limit(kit: Kit) -> None:
    store = kit.store()
    for run_id in ("x" * 256, "é" * 128, "a{b}c", "1", " "):
        assert await store.publish(run_id, RUN) == len(RUN)
        assert [e for _, e in await collect(store, run_id)] == RUN


# -- produce() over a stand-in Writer --------------------------------------------------


class Writer:
    """A ``produce.Writer`` that records what the producer does to its store."""

    def __init__(self, stored: int = 0) -> None:
        import logging

        self.run_id = "r"
        self.stored = stored
        self.lost: Any = None
        self.logger = logging.getLogger("tests.runstore")
        self.calls: list[Any] = []
        self.main: Any = None
        self.releasing = False
        self.finishing = False

    def start(self, main: Any) -> None:
        self.main = main
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")

    def ended(self) -> None:
        self.calls.append("ended")

    async def hand_over(self, appends: Any, terminal: int) -> Any:
        from agui_wire.errors import StoreDraining

        await appends.drain()
        self.calls.append(("hand_over", terminal))
        return StoreDraining(self.run_id, "let go")

    def produced(self, event: Any) -> None:
        self.calls.append(("produced", event["type"]))

    async def append(self, first: int, payloads: list[bytes]) -> None:
        self.calls.append(("append", first, len(payloads)))
        self.stored = first + len(payloads) - 1

    async def finish(self) -> None:
        self.calls.append("finish")

    async def fail(self, reason: str, error: bytes, terminal: int) -> None:
        from agui_wire import PROTO_MEDIA_TYPE, decode
        from agui_wire._codec.selected import frame

        (event,) = decode(frame(error), PROTO_MEDIA_TYPE)
        self.calls.append(("fail", reason, event["code"], terminal))


async def test_produce_skips_what_is_stored_and_ends_the_run() -> None:
    from agui_wire._runstore.produce import produce

    writer = Writer(stored=3)  # a run taken over: three events stored already
    assert await produce(writer, RUN[:5], batch=10, page_bytes=1 << 20) == 5
    assert writer.calls[0] == "start"
    assert [c for c in writer.calls if c[0] == "produced"] == [
        ("produced", e["type"]) for e in RUN[:5]
    ]
    appends = [c for c in writer.calls if c[0] == "append"]
    assert appends == [("append", 4, 1), ("append", 5, 1)]  # one in flight, the rest next
    assert writer.calls[-3:] == ["finish", "stop", "ended"]


async def test_a_failure_ends_the_run_after_what_was_stored() -> None:
    from agui_wire._runstore.produce import produce

    def fails():
        yield from RUN
        raise RuntimeError("after the end")

    writer = Writer()
    with pytest.raises(RuntimeError, match="after the end"):
        await produce(writer, fails(), batch=10, page_bytes=1 << 20)
    # the producer's terminal event is named: nothing is added after it
    assert ("fail", "failed", "INTERNAL_ERROR", len(RUN)) in writer.calls
    assert writer.calls[-2:] == ["stop", "ended"]


async def test_a_run_taken_from_its_producer_is_not_ended() -> None:
    from agui_wire._runstore.produce import produce
    from agui_wire.errors import LeaseLost

    gate = asyncio.Event()

    async def waits():
        yield RUN[0]
        await gate.wait()

    writer = Writer()
    task = asyncio.ensure_future(produce(writer, waits(), batch=10, page_bytes=1 << 20))
    await asyncio.sleep(0.01)
    writer.lost = LeaseLost("r", "the lease is not ours")
    task.cancel()
    with pytest.raises(LeaseLost):
        await task
    assert not [c for c in writer.calls if c[0] in ("fail", "finish")]


async def test_a_failing_end_is_logged_not_raised_over_the_cause(caplog: Any) -> None:
    from agui_wire._runstore.produce import produce

    class Refuses(Writer):
        async def fail(self, reason: str, error: bytes, terminal: int) -> None:
            raise ConnectionError("the store is gone")

    async def fails():
        yield RUN[0]
        raise ValueError("the model failed")

    with pytest.raises(ValueError, match="the model failed"):
        await produce(Refuses(), fails(), batch=10, page_bytes=1 << 20)
    assert "could not end run 'r' after a failure" in caplog.text


async def test_a_run_let_go_stores_what_it_took_then_hands_over() -> None:
    from agui_wire._runstore.produce import produce
    from agui_wire.errors import StoreDraining

    gate = asyncio.Event()

    async def waits():
        yield RUN[0]
        yield RUN[1]
        await gate.wait()

    writer = Writer()
    task = asyncio.ensure_future(produce(writer, waits(), batch=10, page_bytes=1 << 20))
    await asyncio.sleep(0.01)
    writer.releasing = True  # as the store's drain does, then cancels the task
    task.cancel()
    with pytest.raises(StoreDraining, match="let go"):
        await task
    assert ("hand_over", 0) in writer.calls
    assert writer.stored == 2  # what it took was stored first
    assert not [c for c in writer.calls if c[0] in ("fail", "finish")]
    # a producer that starts as the store drains lets its run go at once
    late = Writer()
    late.releasing = True
    with pytest.raises(StoreDraining):
        await produce(late, RUN, batch=10, page_bytes=1 << 20)
    assert late.stored == 0


def test_close_now_closes_a_sync_generator_only() -> None:
    from agui_wire._runstore.produce import close_now

    closed = []

    def events():
        try:
            yield 1
        finally:
            closed.append(1)

    generator = events()
    next(generator)
    close_now(generator)
    assert closed == [1]
    close_now([1, 2])  # nothing to close


@pytest.mark.parametrize("how", ["raises", "cancelled"])
async def test_a_producer_stopped_before_its_first_event_ends_with_run_error(
    kit: Kit, run_id: str, how: str
) -> None:
    store = kit.store()
    gate = asyncio.Event()

    async def stops():
        await gate.wait()
        raise RuntimeError("no model")
        yield RUN[0]

    task = await store.start(run_id, stops())
    assert task is not None
    task.remove_done_callback(store._task_done)
    reader = asyncio.ensure_future(collect(store, run_id))
    await asyncio.sleep(0.05)
    if how == "raises":
        gate.set()
    else:
        task.cancel()
    with pytest.raises((RuntimeError, asyncio.CancelledError)):
        await task
    got = await reader
    code = "INTERNAL_ERROR" if how == "raises" else "CANCELLED"
    assert [(i, e["type"], e["code"]) for i, e in got] == [(1, "RUN_ERROR", code)]


async def test_a_background_run_cancelled_before_it_ran_ends_cancelled(
    kit: Kit, run_id: str
) -> None:
    """A shutdown in the very step that started it: the task never ran, the run is
    still ended (``RUN_ERROR``, code ``CANCELLED``), its events closed unstarted."""
    store = kit.store()
    ran: list[int] = []

    async def never():
        ran.append(1)
        yield RUN[0]

    task = await store.start(run_id, never())
    assert task is not None
    task.cancel()  # before it ran
    got = await asyncio.wait_for(collect(store, run_id), 10)
    assert [(i, e["type"], e["code"]) for i, e in got] == [(1, "RUN_ERROR", "CANCELLED")]
    assert ran == []
