"""``agui_wire.memory``'s store beyond the contract suite (tests/runstore runs that
on both stores): one store used from one event loop after another, a long fold
that leaves the loop to other runs, and memory bounded by ``ttl``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.memory import RunStore

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def ticks(n: int) -> list[dict[str, Any]]:
    return [STARTED, *({"type": "CUSTOM", "name": "t", "value": i} for i in range(n)), FINISHED]


def test_a_store_used_from_one_event_loop_after_another() -> None:
    store = RunStore(lease=2)

    async def produce() -> int:
        return await store.publish("r1", ticks(5))

    async def read(run_id: str) -> list[Any]:
        return [e async for _, e in store.subscribe(run_id)]

    assert asyncio.run(produce()) == 7
    assert asyncio.run(read("r1")) == ticks(5)

    async def live() -> list[Any]:
        task = await store.start("r2", ticks(3))
        assert task is not None
        return await read("r2")

    assert asyncio.run(live()) == ticks(3)
    assert asyncio.run(read("r2")) == ticks(3)


async def test_a_long_fold_leaves_the_loop_to_other_runs() -> None:
    store = RunStore(batch=4096)
    tokens = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"} for _ in range(100_000)
    ]
    start = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
    await store.publish("long", [STARTED, start, *tokens])
    ticks_seen = 0

    async def ticker() -> None:
        nonlocal ticks_seen
        while True:
            ticks_seen += 1
            await asyncio.sleep(0)

    other = asyncio.ensure_future(ticker())
    joiner = store.subscribe("long", compact=True)
    prefix = [await joiner.__anext__() for _ in range(3)]
    other.cancel()
    await joiner.aclose()
    assert prefix[1][1]["messages"][0]["content"] == "x" * 100_000
    assert ticks_seen > 10  # the fold read page by page, giving the loop back


async def test_a_finished_store_holds_nothing_once_ttl_passed() -> None:
    store = RunStore(ttl=0.2)
    for n in range(2000):
        await store.publish(f"r{n}", ticks(2))
    assert store._runs.runs
    await asyncio.sleep(0.25)
    await store.publish("last", ticks(2))  # any call purges what is due
    assert len(store._runs.runs) == 1
    await store.aclose()
