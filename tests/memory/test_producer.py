"""``agui_wire.memory._producer``: a producer renews its lease every ``lease / 3``
while its events keep it waiting (the rules it applies are the contract suite's,
tests/runstore)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.memory import RunStore
from agui_wire.memory._runs import Key

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def ticks(n: int) -> list[dict[str, Any]]:
    return [STARTED, *({"type": "CUSTOM", "name": "t", "value": i} for i in range(n)), FINISHED]


async def test_a_producer_heartbeat_renews_its_lease_while_it_waits() -> None:
    store = RunStore(lease=0.3)
    gate = asyncio.Event()

    async def waits():
        yield STARTED
        await gate.wait()
        yield FINISHED

    task = await store.start("r", waits())
    run = store._runs.runs[Key(None, "r").stream]
    deadlines = []
    for _ in range(6):
        await asyncio.sleep(0.1)
        deadlines.append(run.lease_until)
    assert len(set(deadlines)) >= 3  # renewed every lease / 3
    assert run.held_by(asyncio.get_running_loop().time()) is not None
    gate.set()
    assert task is not None
    assert await task == 2
