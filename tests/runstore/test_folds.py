"""Compact joiners, on every backend: with ``compact=True`` (and no position) a
snapshot (``agui_wire._apply``) stands for the run's events so far, every event
of it carrying the id of the last event it stands for, then the run goes on
event by event; the joiners of one run share one fold.
"""

from __future__ import annotations

import asyncio

import pytest

from examples.script import FINAL_STATE, scripted_run
from tests.redis.app import token_run
from tests.runstore.kit import Kit, collect, read

pytestmark = pytest.mark.anyio

RUN = scripted_run("thread-1", "run-1")


@pytest.mark.cluster
async def test_compact_prefix_of_a_finished_run(kit: Kit, run_id: str) -> None:
    store = kit.store()
    await store.publish(run_id, RUN)
    got = await collect(store, run_id, compact=True)
    types = [e["type"] for _, e in got]
    assert types == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert {i for i, _ in got} == {len(RUN)}
    assert got[2][1]["snapshot"] == FINAL_STATE
    assert await collect(store, run_id, compact=True, after=5) == await collect(
        store, run_id, after=5
    )  # a position replays: no snapshot


async def test_a_late_joiner_of_a_long_run_gets_a_snapshot_not_every_token(
    kit: Kit, run_id: str
) -> None:
    events = token_run("thread-1", run_id, 50_000, size=4)
    events = events[:-2]  # still streaming: the message is open, the run too
    store = kit.store(batch=2000)
    gate = asyncio.Event()

    async def producer():
        for event in events:
            yield event
        await gate.wait()
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "!"}
        yield {"type": "TEXT_MESSAGE_END", "messageId": "m1"}
        yield {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": run_id}

    task = await store.start(run_id, producer())
    await read(store, run_id, len(events))  # every event stored
    joiner = store.subscribe(run_id, compact=True)
    prefix = [await joiner.__anext__() for _ in range(3)]
    gate.set()
    rest = [item async for item in joiner]
    types = [e["type"] for _, e in prefix]
    assert types == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "TEXT_MESSAGE_START"]
    assert {i for i, _ in prefix} == {len(events)}
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert prefix[1][1]["messages"] == [{"id": "m1", "role": "assistant", "content": text}]
    assert [e["type"] for _, e in rest] == [
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert [i for i, _ in rest] == [len(events) + 1, len(events) + 2, len(events) + 3]
    assert task is not None
    await task


async def test_joiners_of_one_run_share_one_fold(kit: Kit, run_id: str) -> None:
    store = kit.store()
    await store.publish(run_id, RUN)
    joiners = await asyncio.gather(*(collect(store, run_id, compact=True) for _ in range(10)))
    assert all(got == joiners[0] for got in joiners)
    folds = store._reading.folds
    assert len(folds.running) == 1  # one fold, reused for ``poll`` s


async def test_a_run_that_cannot_be_folded_is_replayed_whole(kit: Kit, run_id: str) -> None:
    chunks = [{"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": f"w{i}"} for i in range(9)]
    store = kit.store()
    events = [RUN[0], *chunks, RUN[-1]]
    await store.publish(run_id, events)
    assert [e for _, e in await collect(store, run_id, compact=True)] == events
