"""What a run store test opens, closed when the test ends, passed or failed: Redis
clients and ``RunStore``s; then the tasks the test left behind are cancelled and
must end within ``SHUTDOWN`` seconds, as a server's shutdown needs them to.

A task that survives its cancellation fails the test, naming what it awaits, and
is taken off the event loop's tasks, so that the loop still closes (anyio's
runner, as ``asyncio.run``, would wait for it for ever: a shutdown that never
finishes, in production).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

#: Seconds the tasks a test left have to end once cancelled: above the store's own
#: bound for ending a cancelled producer's run (``RunStore.aclose``).
SHUTDOWN: Final = 30.0


class Opened:
    """The clients and stores of one test (``opened`` fixtures), closed by ``aclose``."""

    def __init__(self) -> None:
        self.stores: list[Any] = []
        self.clients: list[Any] = []

    def redis(self, url: str, **options: Any) -> aioredis.Redis:
        client = aioredis.from_url(url, **options)
        self.clients.append(client)
        return client

    def cluster(self, url: str, **options: Any) -> RedisCluster:
        client = RedisCluster.from_url(url, **options)
        self.clients.append(client)
        return client

    def store(self, store: Any) -> Any:
        self.stores.append(store)
        return store

    async def aclose(self) -> None:
        try:
            for store in self.stores:
                await store.aclose()
        finally:
            for client in self.clients:
                await client.aclose()
            survivors = await end_tasks(SHUTDOWN)
            if survivors:
                pytest.fail(
                    f"{len(survivors)} task(s) did not end within {SHUTDOWN:g} s of being "
                    "cancelled:\n" + "\n".join(survivors),
                    pytrace=False,
                )


async def end_tasks(bound: float) -> list[str]:
    """Cancel every task of the loop but the caller's and wait until they end, at most
    ``bound`` seconds; what each survivor awaits (it is taken off the loop)."""
    tasks = left_tasks()
    for task in tasks:
        task.cancel()
    if not tasks:
        return []
    _, pending = await asyncio.wait(tasks, timeout=bound)
    survivors = [awaiting(task) for task in pending]
    for task in pending:
        asyncio.tasks._unregister_task(task)  # type: ignore[attr-defined]
    return survivors


def left_tasks() -> set[asyncio.Task[Any]]:
    """The tasks of the loop but the caller's and the test runner's (anyio's, which
    awaits the test and its fixtures): those a test made."""
    current = asyncio.current_task()
    return {task for task in asyncio.all_tasks() if task is not current and not _runner(task)}


def _runner(task: asyncio.Task[Any]) -> bool:
    frame = getattr(task.get_coro(), "cr_frame", None)
    return frame is not None and str(frame.f_globals.get("__name__", "")).startswith("anyio.")


def awaiting(task: asyncio.Task[Any]) -> str:
    """The task and its chain of awaits, innermost last (``print_stack`` shows the
    outer coroutine only)."""
    lines = [repr(task)]
    step: Any = task.get_coro()
    while step is not None:
        frame = getattr(step, "cr_frame", None) or getattr(step, "ag_frame", None)
        if frame is None:
            lines.append(f"  awaits {step!r}")
            break
        lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        step = getattr(step, "cr_await", None) or getattr(step, "ag_await", None)
    return "\n".join(lines)
