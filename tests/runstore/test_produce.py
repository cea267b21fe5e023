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

from agui_wire.errors import RunInProgress
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


async def test_aclose_cancels_the_background_runs(kit: Kit, run_id: str) -> None:
    store = kit.store()
    gate = asyncio.Event()

    async def waits():
        yield RUN[0]
        await gate.wait()

    tasks = [await store.start(f"{run_id}-{n}", waits()) for n in range(3)]
    for n in range(3):
        await read(store, f"{run_id}-{n}", 1)
    await asyncio.wait_for(store.aclose(), 10)
    assert all(task is not None and task.cancelled() for task in tasks)
    reader = kit.replica(kit.store()) if kit.redis else store
    for n in range(3):
        got = await collect(reader, f"{run_id}-{n}")
        assert [(i, e["type"]) for i, e in got] == [(1, "RUN_STARTED"), (2, "RUN_ERROR")]
        assert got[-1][1]["code"] == "CANCELLED"


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
