"""``RunStore.drain``: a replica's shutdown hands its runs over instead of cutting
them, with a real redis-server and two stores on it (two replicas in one
process: they share nothing but Redis).

* a draining store takes no new run (``StoreDraining``, a ``StoreUnavailable``)
  and its responses opened after the handover are 503s with ``Retry-After``;
* a run still live is handed over: its lease released, not ended; readers
  elsewhere wait for a taker (no ``RUN_ERROR``), a replaying producer elsewhere
  takes it at once, and every reader sees one run (a reader of the drained
  store resumes elsewhere from where it was ended); without ``replay=True`` the
  run is in progress (a taker is on its way);
* a run handed over that nobody takes ends by its lease (``LEASE_EXPIRED``);
* a run handed over before its first event is continued in its generation;
* ``drain`` and then ``aclose`` return within a bound with producers, readers,
  tails, folds and responses in every state, Redis answering or stopped;
* ``drain_on_signal`` drains on the signal, then runs the handler installed
  before it (uvicorn's), or the default action when there was none.

The tests of the release and the takeover (scripts) run on Valkey 8 too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agui_wire.errors import (
    RunAbandoned,
    RunInProgress,
    StoreDraining,
    StoreUnavailable,
)
from agui_wire.redis import RunStore
from tests.redis.app import token_run
from tests.redis.harness import ROOT
from tests.runstore.kit import call
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

Event = dict[str, Any]


def store(opened: Opened, server: Any, **options: Any) -> RunStore:
    options.setdefault("lease", 2.0)
    return opened.store(RunStore(opened.redis(server.url), **options))


async def paced(events: list[Event], delay: float, fast: int = 0) -> AsyncIterator[Event]:
    for i, event in enumerate(events):
        if delay and i >= fast:
            await asyncio.sleep(delay)
        yield event


class Reader:
    """A subscriber collecting ``(id, event, arrival time)`` and how it ended."""

    def __init__(self, s: RunStore, run_id: str, **options: Any) -> None:
        self.got: list[tuple[Any, Event, float]] = []
        self.task = asyncio.ensure_future(self._read(s, run_id, options))

    async def _read(self, s: RunStore, run_id: str, options: dict[str, Any]) -> None:
        async for event_id, event in s.subscribe(run_id, **options):
            self.got.append((event_id, event, time.monotonic()))

    @property
    def events(self) -> list[Event]:
        return [event for _, event, _ in self.got]

    @property
    def ids(self) -> list[int]:
        return [int(event_id) for event_id, _, _ in self.got]


async def until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_draining_store_takes_no_new_run(opened: Opened, redis_server, run_id) -> None:
    a, b = store(opened, redis_server), store(opened, redis_server)
    await b.publish(f"{run_id}-done", token_run("t", run_id, 3))
    ran: list[str] = []

    async def agent() -> AsyncIterator[Event]:
        ran.append("started")
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": run_id}

    took = time.monotonic()
    await a.drain(5)  # nothing live: returns at once
    assert time.monotonic() - took < 1
    assert a.draining
    assert not b.draining
    for call_it in (a.publish, a.start):
        with pytest.raises(StoreDraining, match="draining") as caught:
            await call_it(run_id, agent())
        assert isinstance(caught.value, StoreUnavailable)  # what retries handle
    for replay in (False, True):
        with pytest.raises(StoreDraining):
            await a.publish(run_id, agent(), replay=replay)
    assert ran == []  # closed unstarted
    assert not await a.redis.exists(a.stream_key(run_id), a.stream_key(run_id) + ":lease")
    # the readers were handed over: a response opened now is a 503 to retry elsewhere
    start, bodies = await call(a.response(f"{run_id}-done"))
    assert start["status"] == 503
    assert dict(start["headers"])[b"retry-after"] == b"1"
    assert b"draining" in b"".join(bodies)
    # the other replica serves it
    start, _ = await call(b.response(f"{run_id}-done"))
    assert start["status"] == 200
    with pytest.raises(ValueError, match="grace"):
        await b.drain(-1)
    await a.aclose()
    await b.aclose()


@pytest.mark.valkey  # the release and the takeover are scripts
@pytest.mark.parametrize("how", ["start", "publish"])
async def test_a_run_handed_over_is_taken_over_at_once_and_read_as_one_run(
    opened: Opened, redis_server, run_id, how, caplog
) -> None:
    """A (draining) hands the run over after its grace; B's readers wait for a
    taker with no RUN_ERROR; B's replaying producer takes it at once; A's own
    reader is ended and resumes on B from its position: every reader sees the
    run once, in order."""
    caplog.set_level(logging.INFO, "agui_wire.redis")

    a, b = store(opened, redis_server), store(opened, redis_server)
    expected = token_run("t", run_id, 200)
    if how == "start":
        producing = await a.start(run_id, paced(expected, 0.01))
    else:
        producing = asyncio.ensure_future(a.publish(run_id, paced(expected, 0.01)))
    assert producing is not None
    await asyncio.sleep(0.05)
    elsewhere = [Reader(b, run_id) for _ in range(2)]
    here = Reader(a, run_id)
    await until(lambda: len(elsewhere[0].got) >= 40)
    drained = time.monotonic()
    await a.drain(0.1)
    drained = time.monotonic() - drained
    assert drained < 0.1 + 1.0
    with pytest.raises(StoreDraining, match="handed over after event"):
        await producing
    with pytest.raises(StoreDraining):  # A's reader: ended, to resume elsewhere
        await here.task
    stored = int(await b.redis.xlen(b.stream_key(run_id)))
    lease = await b.redis.get(b.stream_key(run_id) + ":lease")
    assert lease.endswith(b":released")
    # not produced again by a producer that cannot replay: a taker is on its way
    with pytest.raises(RunInProgress, match="replay=True"):
        await b.publish(run_id, paced(expected, 0))
    await asyncio.sleep(b.lease * 0.75)  # readers elsewhere wait; no RUN_ERROR
    assert all(not r.task.done() for r in elsewhere)
    assert all(r.events == expected[:stored] for r in elsewhere)
    claimed = time.monotonic()
    taker = asyncio.ensure_future(
        b.publish(run_id, paced(expected, 0.01, fast=stored), replay=True)
    )
    await until(lambda: len(elsewhere[0].got) > stored)
    resumed = time.monotonic() - claimed
    print(f"\n{how}: drain {drained:.3f} s; the taker's first event {resumed:.3f} s")
    assert resumed < 0.5  # at once: no lease to lapse
    resume = Reader(b, run_id, after=str(here.got[-1][0]))
    assert await asyncio.wait_for(taker, 10) == len(expected)
    for reader in [*elsewhere, resume]:
        await asyncio.wait_for(reader.task, 10)
    for reader in elsewhere:
        assert reader.events == expected
        assert reader.ids == list(range(1, len(expected) + 1))
        assert len({event_id.generation for event_id, _, _ in reader.got}) == 1
    assert here.events + resume.events == expected
    await a.aclose()
    await b.aclose()

    if how == "start":
        handed = [r for r in caplog.records if "handed over" in r.getMessage()]
        assert handed
        assert {r.levelno for r in handed} == {logging.INFO}
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.valkey  # the release and the takeover are scripts
async def test_a_handed_over_run_nobody_takes_ends_by_its_lease(
    opened: Opened, redis_server, run_id
) -> None:
    lease = 1.0
    a, b = store(opened, redis_server, lease=lease), store(opened, redis_server, lease=lease)
    expected = token_run("t", run_id, 500)
    task = await a.start(run_id, paced(expected, 0.01))
    assert task is not None
    reader = Reader(b, run_id)
    await until(lambda: len(reader.got) >= 20)
    await a.drain(0)
    released = time.monotonic()
    await asyncio.wait_for(reader.task, lease + 3)
    ended = reader.got[-1][2] - released
    print(f"\nreleased, nobody took it: LEASE_EXPIRED after {ended:.2f} s (lease {lease} s)")
    assert reader.events[-1]["code"] == "LEASE_EXPIRED"
    assert [e["type"] for e in reader.events].count("RUN_ERROR") == 1
    assert lease - 0.2 < ended < lease + b.poll + 0.5  # waited for a taker, then ended
    with pytest.raises(RunAbandoned, match="nobody took it over"):
        await b.publish(run_id, paced(expected, 0), replay=True)
    await a.aclose()
    await b.aclose()


@pytest.mark.valkey  # the release and the takeover are scripts
async def test_a_run_handed_over_before_its_first_event_keeps_its_generation(
    opened: Opened, redis_server, run_id
) -> None:
    """Nothing stored yet: a reader elsewhere knows the run's generation from its
    lease; the taker continues in that generation (never RunReplaced)."""

    a, b = store(opened, redis_server), store(opened, redis_server)
    expected = token_run("t", run_id, 5)
    thinking = asyncio.Event()

    async def slow() -> AsyncIterator[Event]:
        await thinking.wait()  # a model's first token that does not come in time
        for event in expected:
            yield event

    task = await a.start(run_id, slow())
    assert task is not None
    reader = Reader(b, run_id)
    await asyncio.sleep(0.2)
    before = await b.redis.get(b.stream_key(run_id) + ":lease")
    await a.drain(0)
    with pytest.raises(StoreDraining, match="after event 0"):
        await task
    released = await b.redis.get(b.stream_key(run_id) + ":lease")
    assert released == before.partition(b":")[0] + b":released"
    assert await b.publish(run_id, paced(expected, 0), replay=True) == len(expected)
    await asyncio.wait_for(reader.task, 5)
    assert reader.events == expected
    assert {event_id.generation for event_id, _, _ in reader.got} == {
        int(before.partition(b":")[0])
    }
    await a.aclose()
    await b.aclose()


async def every_state(a: RunStore, b: RunStore, run_id: str) -> dict[str, Any]:
    """A store with producers, readers, tails, folds and a response in every state
    (``b`` stored the long runs they read)."""
    never = asyncio.Event()

    async def idle() -> AsyncIterator[Event]:
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": "idle"}
        await never.wait()
        yield {"type": "RUN_FINISHED", "threadId": "t", "runId": "idle"}

    def burst() -> Any:  # a sync producer (a worker thread), as fast as it goes, forever
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": "burst"}
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}
        while True:
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x" * 64}

    long_run = token_run("t", f"{run_id}-long", 20_000, size=64)
    await b.publish(f"{run_id}-long", long_run)
    states: dict[str, Any] = {
        "idle": await a.start(f"{run_id}-idle", idle()),
        "burst": await a.start(f"{run_id}-burst", burst()),
        "publish": asyncio.ensure_future(
            a.publish(f"{run_id}-paced", paced(token_run("t", "p", 1000), 0.005))
        ),
        "short": await a.start(f"{run_id}-short", paced(token_run("t", "s", 3), 0.01)),
        "elsewhere": await b.start(f"{run_id}-b", paced(token_run("t", "b", 1000), 0.005)),
    }
    await asyncio.sleep(0.1)
    slow: list[Any] = []

    async def slow_reader() -> None:  # replays page by page, slower than it reads
        async for item in a.subscribe(f"{run_id}-long"):
            slow.append(item)
            await asyncio.sleep(0.001)

    states["tail"] = Reader(a, f"{run_id}-idle").task
    states["tail-elsewhere"] = Reader(a, f"{run_id}-b").task
    states["replay"] = asyncio.ensure_future(slow_reader())
    states["fold"] = Reader(a, f"{run_id}-long", compact=True).task
    states["response"] = asyncio.ensure_future(call(a.response(f"{run_id}-paced")))
    await asyncio.sleep(0.2)
    return states


@pytest.mark.parametrize("redis_state", ["answering", "stopped"])
async def test_drain_and_aclose_return_within_a_bound_in_every_state(
    opened: Opened, fresh_redis, run_id, redis_state
) -> None:
    server = fresh_redis()
    grace, reconnect = 0.3, 1.0

    a = store(opened, server, reconnect=reconnect, lease=2.0)
    b = store(opened, server, reconnect=reconnect, lease=2.0)
    states = await every_state(a, b, run_id)
    if redis_state == "stopped":
        os.kill(server.process.pid, signal.SIGSTOP)
    try:
        took = time.monotonic()
        await asyncio.wait_for(a.drain(grace), 30)
        drained = time.monotonic() - took
        took = time.monotonic()
        await asyncio.wait_for(a.aclose(), 30)
        closed = time.monotonic() - took
    finally:
        if redis_state == "stopped":
            os.kill(server.process.pid, signal.SIGCONT)
    print(f"\nRedis {redis_state}: drain {drained:.2f} s, then aclose {closed:.2f} s")
    settings = a._settings
    assert drained < grace + settings.reconnect + settings.command_timeout + 1.0
    assert closed < 1.0
    ours = {k: v for k, v in states.items() if k != "elsewhere"}
    await asyncio.wait(ours.values(), timeout=5)
    outcomes = {}
    for name, task in ours.items():
        assert task.done(), name
        error = None if task.cancelled() else task.exception()
        outcomes[name] = type(error).__name__ if error else "done"
    if redis_state == "answering":
        assert outcomes == {
            "idle": "StoreDraining",
            "burst": "StoreDraining",
            "publish": "StoreDraining",
            "short": "done",
            "tail": "StoreDraining",
            "tail-elsewhere": "StoreDraining",
            "replay": "StoreDraining",
            "fold": outcomes["fold"],  # done folding, or ended while it replays
            "response": "done",
        }
        assert outcomes["fold"] in ("StoreDraining", "done")
    else:  # every one ended: handed over, or StoreUnavailable
        assert set(outcomes.values()) <= {"StoreDraining", "StoreUnavailable", "done"}
    if redis_state == "answering":
        assert await asyncio.wait_for(states["elsewhere"], 20) == 1004  # B unaffected
    await b.aclose()


SCRIPT = """
import asyncio, signal, os, sys
import redis.asyncio as aioredis
from agui_wire.redis import RunStore

async def main():
    store = RunStore(aioredis.from_url(sys.argv[1]), lease=2)
    async def forever():
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
        await asyncio.Event().wait()
    await store.start(sys.argv[2], forever())
    store.drain_on_signal(0.2, signal.SIGUSR1)
    await asyncio.sleep(0.2)
    os.kill(os.getpid(), signal.SIGUSR1)
    await asyncio.sleep(10)
    print("not ended by the signal")

asyncio.run(main())
"""


async def test_drain_on_signal_without_a_handler_before_ends_as_the_signal_does(
    opened: Opened, redis_server, run_id
) -> None:
    """No server's handler (the default action): the process drains, then ends
    as the signal ends it."""
    took = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, redis_server.url, run_id],
        cwd=ROOT,
        capture_output=True,
        timeout=30,
        check=False,
    )
    took = time.monotonic() - took
    assert done.returncode == -signal.SIGUSR1, done.stderr.decode()
    assert b"not ended" not in done.stdout

    async def lease() -> bytes:
        b = store(opened, redis_server)
        try:
            return bytes(await b.redis.get(b.stream_key(run_id) + ":lease"))
        finally:
            await b.aclose()

    assert (await lease()).endswith(b":released")
    assert took < 10
