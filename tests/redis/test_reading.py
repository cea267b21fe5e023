"""``agui_wire.redis._reading`` on a real redis-server: what a reader reads of a run
from Redis: its head (an unknown run ``RunNotFound``, a run claimed before its
first event by its lease's generation, an ended one by its end marker), and a
subscription of a run id that is not one is a ``ValueError`` at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.errors import RunNotFound
from agui_wire.redis import RunStore
from agui_wire.redis._claim import claim
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


async def test_the_head_of_a_run(opened: Opened, redis_server: RedisServer, run_id: str) -> None:
    store = opened.store(RunStore(opened.redis(redis_server.url)))
    reading, layout = store._reading, store._settings.layout
    with pytest.raises(RunNotFound, match="no such run"):
        await reading.head(layout.keys(None, run_id))
    claimed = layout.keys(None, f"{run_id}-claimed")
    producer = await claim(store._writing, claimed, [], replay=False)
    assert not isinstance(producer, int)
    generation = int(producer.generation)
    # read elsewhere (here, the producer knows it): no event yet, its lease's generation
    elsewhere = opened.store(RunStore(opened.redis(redis_server.url)))._reading
    assert await elsewhere.head(claimed) == (0, generation, False)
    assert await reading.head(claimed) == (0, generation, False)
    await store.publish(f"{run_id}-ended", [STARTED])
    stored, gen, ended = await reading.head(layout.keys(None, f"{run_id}-ended"))
    assert (stored, gen % 2, ended) == (1, 0, True)
    with pytest.raises(ValueError, match="256 UTF-8 bytes"):
        reading.subscription(None, "", None, False)
    assert reading.backlog == store.backlog
    assert reading.page_bytes == store.page_bytes


async def test_a_run_that_ends_while_its_head_is_read_is_found(
    opened: Opened, redis_server: RedisServer, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head reads the stream, then the lease: a run whose every event is stored
    and which ends between the two (its end deletes the lease) is the run, ended,
    not ``RunNotFound`` (read on another replica: this one knows its own run)."""
    from agui_wire.redis import _reading

    store = opened.store(RunStore(opened.redis(redis_server.url)))
    elsewhere = opened.store(RunStore(opened.redis(redis_server.url)))
    keys = store._settings.layout.keys(None, run_id)
    gate = asyncio.Event()

    async def events() -> Any:
        await gate.wait()  # (no event stored before ``top`` looked)
        yield STARTED

    task = await store.start(run_id, events())  # claimed: no event stored yet
    looked = _reading.lease_generation

    async def after_the_run_ended(*args: object, **kwargs: object) -> object:
        gate.set()
        await task  # stored and ended after ``top`` found no event
        return await looked(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_reading, "lease_generation", after_the_run_ended)
    stored, _, ended = await elsewhere._reading.head(keys)
    assert (stored, ended) == (1, True)
    got = [event async for _, event in elsewhere.subscribe(run_id)]
    assert got == [STARTED]
