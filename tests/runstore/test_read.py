"""A run read back, on every backend: ids are 1-based indexes carrying the run's
generation; every subscriber gets the whole run, stored events first, then live
ones; a resume after any n has no gap and no duplicate, while the run is live
too; a subscriber that falls behind catches up from the store; an unknown run is
``RunNotFound``; the SDK's pydantic events are stored as the JSON they dump to.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.errors import RunNotFound
from examples.script import scripted_run
from tests.runstore.kit import Kit, collect, paced, read

pytestmark = pytest.mark.anyio

RUN = scripted_run("thread-1", "run-1")


@pytest.mark.cluster
async def test_ids_are_indexes_and_every_subscriber_gets_the_run(kit: Kit, run_id: str) -> None:
    store = kit.store(lease=2)
    task = await store.start(run_id, paced(RUN, 0.005))
    assert task is not None
    readers = [asyncio.ensure_future(collect(store, run_id)) for _ in range(3)]
    assert await task == len(RUN)
    for reader in readers:
        got = await reader
        assert [i for i, _ in got] == list(range(1, len(RUN) + 1))
        assert [e for _, e in got] == RUN
    generation = got[0][0].generation
    assert generation % 2 == 0
    assert [str(i) for i, _ in got] == [f"{n}-{generation}" for n in range(1, len(RUN) + 1)]
    assert await collect(store, run_id) == got  # a late joiner replays the whole run
    assert await collect(kit.replica(store), run_id) == got  # and so does another replica


@pytest.mark.cluster
@pytest.mark.parametrize("after", [0, 1, 2, 10, 32, 33])
async def test_resume_after_n_has_no_gap_and_no_duplicate(
    kit: Kit, run_id: str, after: int
) -> None:
    store = kit.store()
    await store.publish(run_id, RUN)
    got = await collect(store, run_id, after=after)
    assert got == [(i, RUN[i - 1]) for i in range(after + 1, len(RUN) + 1)]
    ids = [i for i, _ in await collect(store, run_id)]
    if after:  # the id as a client holds it: the generation is checked
        assert await collect(store, run_id, after=str(ids[after - 1])) == got


@pytest.mark.cluster
async def test_resume_while_live(kit: Kit, run_id: str) -> None:
    """Subscribers joining at every point of a live run, after what a client that
    watched it had seen then, each get exactly the rest."""
    store = kit.store(batch=4)
    task = await store.start(run_id, paced(RUN, 0.01))
    assert task is not None
    seen: list[int] = []

    async def watch() -> None:
        async for i, _ in store.subscribe(run_id):
            seen.append(i)

    watcher = asyncio.ensure_future(watch())
    readers = []
    while not task.done():
        after = len(seen)
        readers.append((after, asyncio.ensure_future(collect(store, run_id, after=after))))
        await asyncio.sleep(0.007)
    await watcher
    assert len(readers) > 10
    for after, reader in readers:
        got = await reader
        assert [i for i, _ in got] == list(range(after + 1, len(RUN) + 1))
        assert [e for _, e in got] == RUN[after:]


async def test_unknown_run(kit: Kit) -> None:
    with pytest.raises(RunNotFound):
        await collect(kit.store(), "no-such-run")


async def test_a_slow_subscriber_catches_up_from_the_store(kit: Kit, run_id: str) -> None:
    store = kit.store(batch=2, backlog=2)
    events = [RUN[0]] + [{"type": "CUSTOM", "name": "t", "value": i} for i in range(300)]
    events.append(RUN[-1])
    gate = asyncio.Event()

    async def producer():
        yield events[0]
        await gate.wait()
        for event in events[1:]:
            await asyncio.sleep(0)
            yield event

    await store.start(run_id, producer())
    slow = store.subscribe(run_id)
    first = await slow.__anext__()  # attached to the tail, then not reading
    fast = asyncio.ensure_future(collect(store, run_id))
    gate.set()
    assert [e for _, e in await fast] == events
    rest = [item async for item in slow]
    assert [first, *rest] == list(enumerate(events, 1))


async def test_events_are_stored_while_the_producer_waits(kit: Kit, run_id: str) -> None:
    """Events produced while an append is in flight go out as soon as it returns,
    not with the producer's next event (which may be minutes away)."""
    store = kit.store()
    gate = asyncio.Event()

    async def producer():
        for event in RUN[:20]:
            yield event  # a burst: most arrive while an append is in flight
        await gate.wait()
        for event in RUN[20:]:
            yield event

    task = await store.start(run_id, producer())
    assert task is not None
    got = await read(store, run_id, 20)
    gate.set()
    assert [e for _, e in got] == RUN[:20]
    assert await task == len(RUN)


async def test_sdk_events_are_stored_as_the_json_they_dump_to(kit: Kit, run_id: str) -> None:
    """A producer of the official SDK's pydantic events: each is stored as the
    event dict the SDK's own encoder writes (camelCase, no unset fields)."""
    from ag_ui.core import RunFinishedEvent, RunStartedEvent, TextMessageContentEvent

    sdk = [
        RunStartedEvent(thread_id="t", run_id="r"),
        TextMessageContentEvent(message_id="m", delta="hi"),
        RunFinishedEvent(thread_id="t", run_id="r"),
    ]
    store = kit.store()
    assert await store.publish(run_id, sdk) == 3
    got = [event for _, event in await collect(store, run_id)]
    assert got == [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in sdk]


async def test_a_sync_producer_runs_beside_the_loop(kit: Kit, run_id: str) -> None:
    """A sync generator runs in a worker thread: readers are served while it blocks."""
    import time

    store = kit.store()

    def blocking():
        for event in RUN:
            time.sleep(0.002)  # a blocking call, as a sync SDK makes
            yield event

    task = await store.start(run_id, blocking())
    got = await collect(store, run_id)
    assert task is not None
    assert await task == len(RUN)
    assert [e for _, e in got] == RUN


# -- the reader's inbox ---------------------------------------------------------------


def _batch(n: int, size: int = 1) -> Any:
    from agui_wire._runstore.batches import Batch

    class Ref:
        run_id = "r"
        stream = "s"

    return Batch(Ref(), 2, n, [b"x" * size], None)


async def test_an_inbox_holds_a_backlog_then_cuts_the_reader_loose() -> None:
    from agui_wire._runstore.read import Inbox

    inbox = Inbox(limit=3, byte_limit=100)
    for n in range(1, 4):
        inbox.push(_batch(n))
    assert inbox.ready
    assert [inbox.pop().first for _ in range(2)] == [1, 2]
    assert inbox.nbytes == 1
    inbox.push(_batch(4))
    inbox.push(_batch(5))
    assert not inbox.lagging
    inbox.push(_batch(6))  # a fourth: it reads pages instead
    assert inbox.lagging
    assert [b.first for b in inbox.batches] == [6]
    inbox.push(_batch(7, size=150))  # above the bytes too
    assert [b.first for b in inbox.batches] == [7]
    inbox.fail(RuntimeError("gone"))
    assert isinstance(inbox.error, RuntimeError)
