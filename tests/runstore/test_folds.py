"""Compact joiners, on every backend: with ``compact=True`` (and no position) a
snapshot (``agui_wire._apply``) stands for the run's events so far, every event
of it carrying the id of the last event it stands for, then the run goes on
event by event; the joiners of one run share one fold.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

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


class Tracked(dict):  # type: ignore[type-arg]
    """A decoded event whose death is seen (a dict takes no weak reference)."""


async def test_a_fold_holds_a_step_of_decoded_events_not_a_page(
    kit: Kit, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold's decoded events are freed as it feeds them, a step (``FEED_STEP``) at
    a time: never a page of them alive at once, where the cyclic GC's young
    generation fills and carries them into the old ones (each fold then set off a
    full collection of the replica's heap, a pause for every run on the loop)."""
    from agui_wire._runstore import batches, folds

    alive = [0]
    most = [0]
    real_decode = batches.decode_proto
    real_feed = folds.Compactor.feed

    def gone() -> None:
        alive[0] -= 1

    def decode(data: bytes, **kwargs: Any) -> list[dict[str, Any]]:
        events = [Tracked(e) for e in real_decode(data, **kwargs)]
        for event in events:
            alive[0] += 1
            weakref.finalize(event, gone)
        return events

    def feed(self: Any, event: dict[str, Any]) -> None:
        most[0] = max(most[0], alive[0])
        real_feed(self, event)

    events = token_run("thread-1", run_id, 5_000, size=4)
    store = kit.store()
    await store.publish(run_id, events)
    monkeypatch.setattr(batches, "decode_proto", decode)
    monkeypatch.setattr(folds.Compactor, "feed", feed)
    got = await collect(store, run_id, compact=True)
    assert [e["type"] for _, e in got] == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert got[1][1]["messages"] == [{"id": "m1", "role": "assistant", "content": text}]
    # the step being fed, the next one decoding, and what the fold keeps (the
    # run's start, the open message's start)
    assert 0 < most[0] <= 2 * folds.FEED_STEP + 2


async def test_a_fold_reads_pages_of_at_most_fold_page_events(
    kit: Kit, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold's pages are ``FOLD_PAGE`` events at most, a replay's up to
    ``PAGE_EVENTS``: each page is one script call Redis runs alone (~1 us an
    event), the other runs' appends waiting behind it, and a fold sends none of
    its events on."""
    from agui_wire._runstore.folds import FOLD_PAGE
    from agui_wire._runstore.read import PAGE_EVENTS

    events = token_run("thread-1", run_id, 4 * PAGE_EVENTS, size=4)
    store = kit.store()
    await store.publish(run_id, events)
    reading = store._reading
    real = type(reading).pages
    sizes: dict[bool, list[int]] = {True: [], False: []}  # by whether a fold read them

    async def pages(self: Any, *args: Any, **kwargs: Any) -> Any:
        folding = asyncio.current_task() in self.folds.running.values()
        async for batch in real(self, *args, **kwargs):
            sizes[folding].append(len(batch.payloads))
            yield batch

    monkeypatch.setattr(type(reading), "pages", pages)
    assert len(await collect(store, run_id)) == len(events)
    assert max(sizes[False]) == PAGE_EVENTS
    got = await collect(store, run_id, compact=True)
    assert [e["type"] for _, e in got] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert sum(sizes[True]) == len(events)
    assert max(sizes[True]) == FOLD_PAGE < PAGE_EVENTS


# -- Folds over a stand-in store ------------------------------------------------------


class Stored:
    """A ``folds.Stored`` over a list of events, counting its reads."""

    def __init__(self, events: list[dict], snapshot: tuple | None = None) -> None:
        from agui_wire._codec.selected import encode_payload

        self.payloads = [encode_payload(e) for e in events]
        self.snap = snapshot
        self.reads = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail: Exception | None = None

    async def snapshot(self, run):
        return self.snap

    async def pages(self, run, cursor, generation, stop=None, most=None, ahead=True):
        from agui_wire._runstore.batches import Batch

        self.reads += 1
        await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        for first in range(cursor, len(self.payloads), 10):
            yield Batch(run, 2, first + 1, self.payloads[first : first + 10], None)


class Ref:
    run_id = "r"
    stream = "s"


async def test_concurrent_joiners_await_one_fold_and_it_is_reused() -> None:
    from agui_wire._runstore.folds import Folds

    stored = Stored(RUN)
    stored.gate.clear()
    folds = Folds(0.05, stored)
    joiners = [asyncio.ensure_future(folds.fold(Ref())) for _ in range(5)]
    await asyncio.sleep(0.01)
    stored.gate.set()
    results = await asyncio.gather(*joiners)
    assert stored.reads == 1
    assert all(r is results[0] for r in results)
    fold = results[0]
    assert (fold.last, fold.ended) == (len(RUN), False)
    assert fold.prefix is not None
    assert [e["type"] for e in fold.prefix.events][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert await folds.fold(Ref()) is fold  # reused for ``reuse`` s
    await asyncio.sleep(0.1)
    await folds.fold(Ref())
    assert stored.reads == 2  # then folded again (a joiner reads what followed)


async def test_a_fold_that_failed_reaches_its_joiners_and_is_not_kept() -> None:
    from agui_wire._runstore.folds import Folds

    stored = Stored(RUN)
    stored.fail = RuntimeError("the store failed")
    folds = Folds(10, stored)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="failed"):
            await folds.fold(Ref())
    assert stored.reads == 2
    stored.fail = None
    assert (await folds.fold(Ref())).prefix is not None


async def test_a_fold_starts_from_the_snapshot_of_the_trimmed_events() -> None:
    from agui_wire._apply import Compactor
    from agui_wire._runstore.folds import Folds

    head = Compactor()
    for event in RUN[:10]:
        head.feed(event)
    stored = Stored(RUN, snapshot=(10, 2, head.prefix()))
    stored.payloads[:10] = [b"\xff"] * 10  # (never read: the snapshot stands for them)
    fold = await Folds(1, stored).fold(Ref())
    whole = await Folds(1, Stored(RUN)).fold(Ref())
    assert fold.prefix is not None
    assert whole.prefix is not None
    assert fold.prefix.events == whole.prefix.events
    assert fold.last == len(RUN)


async def test_a_cancelled_joiner_does_not_cancel_the_fold() -> None:
    from agui_wire._runstore.folds import Folds

    stored = Stored(RUN)
    stored.gate.clear()
    folds = Folds(1, stored)
    first = asyncio.ensure_future(folds.fold(Ref()))
    second = asyncio.ensure_future(folds.fold(Ref()))
    await asyncio.sleep(0.01)
    first.cancel()
    stored.gate.set()
    assert (await second).prefix is not None
    folds.cancel()
