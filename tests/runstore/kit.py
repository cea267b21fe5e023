"""One backend of the run store for the contract suite (tests/runstore/conftest.py),
and the helpers its tests share.

``Kit.store(**options)`` makes a ``RunStore`` of the backend (``memory``, or
``agui_wire.redis`` on a real redis-server or Redis Cluster, each store on a
client of its own); ``Kit.replica(store)`` is the store another replica of the
app would use for the same runs (Redis: another client and store on the same
server; in memory, where there is one process, the same store); ``Kit.aclose``
closes every store and client made, then ends the tasks the test left, which
must end when cancelled (the fixture's teardown; tests/support/stores.py). ``frozen`` makes a
producer that stores some events and then stops without ending its run, as a
replica frozen or killed mid-run: its heartbeat stops, its lease lapses.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

from agui_wire import memory
from agui_wire import redis as redis_store
from tests.support.stores import Opened

RunStore = memory.RunStore | redis_store.RunStore


class Kit:
    """One backend: makes its stores, closes them (see the module doc)."""

    def __init__(self, name: str, server: Any) -> None:
        self.name = name
        self.server = server
        self.opened = Opened()

    @property
    def redis(self) -> bool:
        return self.name != "memory"

    def store(self, **options: Any) -> RunStore:
        """A store of this backend with ``options`` (those both backends take)."""
        if self.name == "memory":
            return self.opened.store(memory.RunStore(**options))
        return self.opened.store(redis_store.RunStore(self.client(), **options))

    def client(self) -> Any:
        """A Redis client of the kit's server (closed at teardown)."""
        assert self.redis, "the memory store has no client"
        if self.name == "cluster":
            return self.opened.cluster(self.server.url)
        return self.opened.redis(self.server.url)

    def replica(self, store: RunStore, **options: Any) -> RunStore:
        """The store another replica of the app has for ``store``'s runs."""
        if self.name == "memory":
            return store
        return self.store(**options)

    async def aclose(self) -> None:
        """Close every store and client, then end the tasks left (tests/support/stores.py)."""
        await self.opened.aclose()


STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def ticks(n: int) -> list[dict[str, Any]]:
    """A run of ``n`` CUSTOM events between its start and its end."""
    return [STARTED, *({"type": "CUSTOM", "name": "t", "value": i} for i in range(n)), FINISHED]


async def paced(events: Iterable[dict[str, Any]], delay: float = 0.0) -> AsyncIterator[Any]:
    for event in events:
        await asyncio.sleep(delay)
        yield event


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[Any, Any]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


async def read(store: RunStore, run_id: str, count: int, **kwargs: Any) -> list[tuple[Any, Any]]:
    """The run's first ``count`` events (after ``after``), once stored."""
    got: list[tuple[Any, Any]] = []
    if count == 0:
        return got
    reader = store.subscribe(run_id, **kwargs)
    try:
        async for item in reader:
            got.append(item)
            if len(got) == count:
                break
    finally:
        await reader.aclose()
    return got


async def frozen(
    store: RunStore, run_id: str, events: list[dict[str, Any]], **kwargs: Any
) -> asyncio.Task[Any]:
    """A producer that stores ``events``, then freezes without ending the run (its
    replica stopped): its generator never yields again and its heartbeat is
    stopped, so its lease lapses ``lease`` seconds after its last renewal. The
    task is the caller's to cancel (it raises ``LeaseLost`` once another producer
    or a reader ended the run)."""

    async def freezes() -> AsyncIterator[Any]:
        for event in events:
            yield event
        await asyncio.sleep(3600)

    task = await store.start(run_id, freezes(), **kwargs)
    assert task is not None
    task.remove_done_callback(store._task_done)
    await read(store, run_id, len(events), owner=kwargs.get("owner"))
    stop_heartbeat(run_id)
    return task


def stop_heartbeat(run_id: str) -> None:
    """Stop the heartbeat of ``run_id``'s producer (``Producer.heartbeat`` on both
    backends: a task, or on Redis a timer until its first renewal is due), as if
    its replica froze."""
    for task in asyncio.all_tasks():
        coro: Any = task.get_coro()
        while coro is not None:  # (down the awaits: ``_produced``, ``publish``, ``run``)
            frame = getattr(coro, "cr_frame", None)
            names = {} if frame is None else frame.f_locals
            for producer in (names.get("self"), names.get("producer")):
                heartbeat = getattr(producer, "heartbeat", None)
                if getattr(producer, "run_id", None) == run_id and heartbeat is not None:
                    heartbeat.cancel()
            coro = getattr(coro, "cr_await", None)


async def call(
    app: Any, *, headers: Iterable[tuple[str, str]] = (), query: bytes = b"", method: str = "GET"
) -> tuple[dict[str, Any], list[bytes]]:
    """``app`` called as an ASGI server would with one request: its start message
    and the bodies it sent."""
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    scope = {
        "type": "http",
        "method": method,
        "http_version": "1.1",
        "headers": [(k.encode(), v.encode()) for k, v in headers],
        "query_string": query,
    }
    await app(scope, receive, send)
    start = sent[0]
    bodies = [m["body"] for m in sent[1:] if m["type"] == "http.response.body"]
    return start, bodies


def sse_ids(body: bytes) -> list[str]:
    return [line[4:] for line in body.decode().splitlines() if line.startswith("id: ")]
