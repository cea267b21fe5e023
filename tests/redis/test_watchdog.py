"""``agui_wire.redis._watchdog``: the live producers of a node fail once that node has
been silent for ``silence`` seconds (pinged after ``PROBE_AFTER`` seconds of
quiet, a reply counts as heard), each told once, and only those of its shards:
the producers of a node that answers carry on; the watch ends when nobody is
watched. Against stand-in command lanes (the real ones, a stalled Redis and a
stalled cluster master: tests/redis/test_stalls.py, test_cluster_faults.py)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agui_wire.redis._watchdog import PROBE_AFTER, WATCH, Watchdog

pytestmark = pytest.mark.anyio


class Lanes:
    """A node's command lanes whose ``PING`` answers (stamping ``heard``) or never
    does."""

    def __init__(self, answers: bool) -> None:
        self.answers = answers
        self.heard = -1.0
        self.pings = 0

    async def call(self, *args: Any) -> Any:
        self.pings += 1
        if not self.answers:
            await asyncio.Event().wait()
        self.heard = asyncio.get_running_loop().time()
        return b"PONG"


class Calls:
    """The store's calls as the watchdog sees them: shard ``n`` lives on node
    ``node-<n>``, each node with lanes of its own."""

    def __init__(self, **nodes: Lanes) -> None:
        self.nodes = nodes

    def shard_node(self, shard: int) -> str:
        return f"node-{shard}"

    def lanes(self, node: str) -> Lanes:
        return self.nodes[node]

    def heard(self, node: str) -> float:
        return self.nodes[node].heard


class Keys:
    def __init__(self, shard: int) -> None:
        self.shard = shard


class Producer:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def unavailable(self, reason: str) -> None:
        self.reasons.append(reason)


async def test_a_silent_redis_fails_every_watched_producer_once() -> None:
    lanes = Lanes(answers=False)
    watchdog = Watchdog(Calls(**{"node-0": lanes}), silence=0.6)  # type: ignore[arg-type]
    producers = [Producer(), Producer()]
    for p in producers:
        watchdog.watch(p, Keys(0))  # type: ignore[arg-type]
    await asyncio.sleep(0.6 + 2 * WATCH + 0.1)
    for p in producers:
        assert len(p.reasons) == 1
        assert "(node-0) did not answer for" in p.reasons[0]
        assert "(the limit: 0.6 s)" in p.reasons[0]
    assert lanes.pings == 1  # probed once, the probe never answered
    assert watchdog.producers == {}
    await asyncio.sleep(2 * WATCH)
    assert watchdog._task is not None
    assert watchdog._task.done()


async def test_a_quiet_redis_that_answers_its_probe_fails_nobody() -> None:
    lanes = Lanes(answers=True)
    watchdog = Watchdog(Calls(**{"node-0": lanes}), silence=0.6)  # type: ignore[arg-type]
    producer = Producer()
    watchdog.watch(producer, Keys(0))  # type: ignore[arg-type]
    await asyncio.sleep(PROBE_AFTER + 1.0)
    assert producer.reasons == []
    assert lanes.pings >= 1
    watchdog.unwatch(producer, Keys(0))  # type: ignore[arg-type]
    await asyncio.sleep(2 * WATCH)
    assert watchdog._task is not None
    assert watchdog._task.done()


async def test_a_silent_node_fails_only_the_producers_of_its_shards() -> None:
    silent, answering = Lanes(answers=False), Lanes(answers=True)
    calls = Calls(**{"node-0": silent, "node-1": answering})
    watchdog = Watchdog(calls, silence=0.6)  # type: ignore[arg-type]
    stalled, healthy = Producer(), Producer()
    watchdog.watch(stalled, Keys(0))  # type: ignore[arg-type]
    watchdog.watch(healthy, Keys(1))  # type: ignore[arg-type]
    await asyncio.sleep(0.6 + PROBE_AFTER + 2 * WATCH)
    assert len(stalled.reasons) == 1
    assert "(node-0)" in stalled.reasons[0]
    assert healthy.reasons == []
    assert set(watchdog.producers) == {1}  # the healthy node's still watched
    watchdog.unwatch(healthy, Keys(1))  # type: ignore[arg-type]
    await asyncio.sleep(2 * WATCH)
    assert watchdog._task is not None
    assert watchdog._task.done()


async def test_a_replica_that_stalled_does_not_blame_a_node_that_answers() -> None:
    """The loop blocked past the limit (a starved process, a long callback): the first
    look after it pings the node rather than failing its producers."""
    lanes = Lanes(answers=True)
    watchdog = Watchdog(Calls(**{"node-0": lanes}), silence=0.6)  # type: ignore[arg-type]
    producer = Producer()
    watchdog.watch(producer, Keys(0))  # type: ignore[arg-type]
    await asyncio.sleep(WATCH + 0.05)  # the first look has seen the node
    time.sleep(0.9)  # this replica's loop, blocked
    await asyncio.sleep(PROBE_AFTER + 3 * WATCH)
    assert producer.reasons == []
    assert lanes.pings >= 1
    watchdog.unwatch(producer, Keys(0))  # type: ignore[arg-type]


async def test_a_silent_node_fails_its_producers_though_every_look_comes_late() -> None:
    """A replica that keeps stalling still notices a node that never answers."""
    lanes = Lanes(answers=False)
    watchdog = Watchdog(Calls(**{"node-0": lanes}), silence=0.6)  # type: ignore[arg-type]
    producer = Producer()
    watchdog.watch(producer, Keys(0))  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not producer.reasons and loop.time() < deadline:
        await asyncio.sleep(0.05)
        time.sleep(WATCH + 0.1)  # every look a look late
    assert len(producer.reasons) == 1
    assert "(node-0) did not answer for" in producer.reasons[0]
    assert lanes.pings == 1
