"""``agui_wire._runstore.store``: ``RunStore``'s public methods, shared by every
backend: ``start`` returns once the run is claimed and logs a failure of its
task; ``after=`` is checked at once; ``response`` checks the owner at once and
the run id when it runs (a 400)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire._runstore.store import check_after
from tests.runstore.kit import Kit, call, collect

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


async def test_start_returns_once_the_run_is_claimed(kit: Kit, run_id: str) -> None:
    store = kit.store()
    gate = asyncio.Event()

    async def waits():
        await gate.wait()
        yield STARTED

    task = await store.start(run_id, waits())
    assert task is not None
    # claimed: a reader finds it before its first event
    reader = asyncio.ensure_future(collect(store, run_id))
    start, _ = await call(store.response(run_id, request=None), method="HEAD")
    assert start["status"] == 200
    gate.set()
    assert await task == 1
    assert [e for _, e in await reader] == [STARTED]


async def test_a_failed_background_run_is_logged(kit: Kit, run_id: str, caplog: Any) -> None:
    store = kit.store()

    async def fails():
        yield STARTED
        raise RuntimeError("model timeout")

    task = await store.start(run_id, fails())
    assert task is not None
    with pytest.raises(RuntimeError):
        await task
    await asyncio.sleep(0)  # (the done callback)
    records = [r for r in caplog.records if r.getMessage() == "background run failed"]
    assert len(records) == 1
    assert records[0].name == f"agui_wire.{'redis' if kit.redis else 'memory'}"


@pytest.mark.parametrize("after", ["x", -1, 1.5, "3-1"])
async def test_after_is_checked_at_once(kit: Kit, after: Any) -> None:
    store = kit.store()
    with pytest.raises(ValueError, match="after must be an event id, an index >= 0 or None"):
        store.response("r", after=after)
    with pytest.raises(ValueError, match="after must be"):
        await collect(store, "r", after=after)


def test_check_after() -> None:
    assert check_after(None) is None
    assert str(check_after("4-2")) == "4-2"
    assert check_after(4) == 4
