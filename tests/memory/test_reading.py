"""``agui_wire.memory._reading``: pages sized as Redis's and bounded in bytes, the
errors of a trimmed, replaced or forgotten run, and the lease checks, which run
only while a run is followed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.errors import HistoryTrimmed, RunLost, RunReplaced
from agui_wire.memory import RunStore
from agui_wire.memory._runs import Key

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def ticks(n: int) -> list[dict[str, Any]]:
    return [STARTED, *({"type": "CUSTOM", "name": "t", "value": i} for i in range(n)), FINISHED]


async def pages(store: RunStore, run_id: str, cursor: int = 0, generation: Any = None) -> list[Any]:
    reading = store._reading
    return [b async for b in reading.pages(Key(None, run_id), cursor, generation)]


async def test_pages_grow_four_times_and_are_bounded_in_bytes() -> None:
    store = RunStore(page_bytes=12_000)
    events = ticks(3000)
    await store.publish("r", events)
    got = await pages(store, "r")
    assert [len(b.payloads) for b in got][:3] == [32, 128, 512]
    assert len(got) > 4
    assert all(b.nbytes <= 12_000 for b in got)  # ... then page_bytes bounds them
    assert sum(len(b.payloads) for b in got) == len(events)
    assert [b.end for b in got][-1] == "finished"
    assert all(b.end is None for b in got[:-1])
    # a page past the last event: the end alone
    (end,) = await pages(store, "r", cursor=len(events))
    assert (end.payloads, end.end) == ([], "finished")


async def test_pages_of_a_trimmed_replaced_or_forgotten_run() -> None:
    store = RunStore(maxlen=10, ttl=0.2)
    await store.publish("r", ticks(50))
    with pytest.raises(HistoryTrimmed):
        await pages(store, "r", cursor=3)
    generation = (await pages(store, "r", cursor=45))[0].generation
    with pytest.raises(RunReplaced):
        await pages(store, "r", cursor=45, generation=generation + 2)
    await asyncio.sleep(0.3)
    with pytest.raises(RunLost, match="forgotten"):
        await pages(store, "r", cursor=45, generation=generation)
    assert await pages(store, "r") == []  # from 0: nothing, not an error


async def test_the_lease_checks_run_only_while_runs_are_followed() -> None:
    store = RunStore(lease=0.4)
    await store.publish("r", ticks(3))
    assert store._reading.sweeper is None
    gate = asyncio.Event()

    async def waits():
        yield STARTED
        await gate.wait()

    await store.start("live", waits())
    reader = store.subscribe("live")
    await reader.__anext__()
    assert store._reading.sweeper is not None
    gate.set()
    assert [e["type"] async for _, e in reader] == []  # (its end: the events ran out)
    await asyncio.sleep(0.25)  # a poll
    assert store._reading.sweeper is None
