"""Redis itself failing under a live run: restarted with persistence (nothing is
lost, producer and subscribers carry on), restarted without it (the loss is
reported as ``RunLost``, never skipped), unreachable (``StoreUnavailable`` once
the run's lease may have lapsed, ``lease + 1 s``, whatever ``reconnect`` says;
never a hang). Times are printed for the
record (``pytest -s``)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agui_wire.errors import RunLost, StoreUnavailable
from agui_wire.redis import RunStore
from tests.support.stores import Opened

# also on Valkey 8: the server's persistence and eviction
pytestmark = [pytest.mark.slow, pytest.mark.valkey, pytest.mark.anyio]


def token_events(n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    events += [{"type": "CUSTOM", "name": "tick", "value": i} for i in range(n)]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return events


async def paced(events, delay):
    for event in events:
        await asyncio.sleep(delay)
        yield event


def restart_in_thread(server: Any, after: float, down: float) -> threading.Thread:
    def go() -> None:
        time.sleep(after)
        server.restart(down=down)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


async def test_restart_with_persistence_loses_nothing(opened: Opened, fresh_redis, run_id) -> None:
    server = fresh_redis(persistent=True)
    events = token_events(150)

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=5, reconnect=10))
    task = await store.start(run_id, paced(events, 0.01))
    readers = [asyncio.ensure_future(collect(store, run_id)) for _ in range(3)]
    thread = restart_in_thread(server, after=0.5, down=1.0)
    assert await task == len(events)
    for reader in readers:
        got = await reader
        assert [i for i, _ in got] == list(range(1, len(events) + 1))
        assert [e for _, e in got] == events
    await asyncio.to_thread(thread.join)

    start = time.monotonic()
    print(
        f"\nrestart with AOF: run of {len(events)} events done in {time.monotonic() - start:.2f} s"
    )


async def test_restart_without_persistence_is_reported(opened: Opened, fresh_redis, run_id) -> None:
    server = fresh_redis(persistent=False)
    events = token_events(150)

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=5, reconnect=10))
    task = await store.start(run_id, paced(events, 0.01))
    task.remove_done_callback(store._task_done)
    reader = asyncio.ensure_future(collect(store, run_id))
    thread = restart_in_thread(server, after=0.5, down=0.5)
    with pytest.raises(RunLost):
        await task
    with pytest.raises(RunLost):
        await reader
    await asyncio.to_thread(thread.join)


async def test_unreachable_redis_raises_store_unavailable(
    opened: Opened, fresh_redis, run_id
) -> None:
    server = fresh_redis()
    events = token_events(1000)

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=2, reconnect=1.0))
    task = await store.start(run_id, paced(events, 0.01))
    task.remove_done_callback(store._task_done)
    reader = asyncio.ensure_future(collect(store, run_id))
    await asyncio.sleep(0.3)
    stopped = time.monotonic()
    await asyncio.to_thread(server.kill)
    with pytest.raises(StoreUnavailable):
        await reader
    reader_after = time.monotonic() - stopped
    with pytest.raises(StoreUnavailable):
        await task
    producer_after = time.monotonic() - stopped
    print(
        f"\nRedis gone: subscriber raised StoreUnavailable after {reader_after:.2f} s, "
        f"producer after {producer_after:.2f} s (lease 2 s, reconnect 1 s)"
    )
    # Bounded: lease + 1 s plus redis-py's own connect timeouts, never a hang.
    assert reader_after < 10
    assert producer_after < 10
    with pytest.raises(StoreUnavailable):
        await collect(store, run_id)


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[int, Any]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


async def test_http_view_of_an_unreachable_redis(opened: Opened, fresh_redis, run_id) -> None:
    """Before the headers: 503 with Retry-After. Mid-stream: the body ends without a
    terminal event (an incomplete run the client resumes), not a made-up RUN_ERROR."""
    from agui_wire import SSE_MEDIA_TYPE, decode
    from tests.runstore.kit import call

    server = fresh_redis()
    events = token_events(1000)

    r = opened.redis(server.url)
    store = opened.store(RunStore(r, lease=2, reconnect=0.5))
    task = await store.start(run_id, paced(events, 0.01))
    task.remove_done_callback(store._task_done)
    reading = asyncio.ensure_future(call(store.response(run_id)))
    await asyncio.sleep(0.5)
    await asyncio.to_thread(server.kill)
    start, bodies = await reading
    assert start["status"] == 200
    got = decode(b"".join(bodies), SSE_MEDIA_TYPE)
    assert 10 < len(got) < len(events)
    assert got == events[: len(got)]  # what it has is right; no terminal event added
    start, bodies = await call(store.response(run_id))
    assert start["status"] == 503
    assert (b"retry-after", b"1") in start["headers"]
    with pytest.raises(StoreUnavailable):
        await task
