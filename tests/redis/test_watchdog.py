"""``agui_wire.redis._watchdog``: live producers fail once Redis has been silent for
``silence`` seconds (pinged after ``PROBE_AFTER`` seconds of quiet, a reply counts
as heard), each told once; the watch ends when nobody is watched. Against a
stand-in for the command lanes (the real ones: tests/redis/test_stalls.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_wire.redis._watchdog import PROBE_AFTER, WATCH, Watchdog

pytestmark = pytest.mark.anyio


class Lanes:
    """Command lanes whose ``PING`` answers (stamping ``heard``) or never does."""

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


class Producer:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def unavailable(self, reason: str) -> None:
        self.reasons.append(reason)


async def test_a_silent_redis_fails_every_watched_producer_once() -> None:
    lanes = Lanes(answers=False)
    watchdog = Watchdog(lanes, silence=0.6)  # type: ignore[arg-type]
    producers = [Producer(), Producer()]
    for p in producers:
        watchdog.watch(p)
    await asyncio.sleep(0.6 + 2 * WATCH + 0.1)
    for p in producers:
        assert len(p.reasons) == 1
        assert "Redis did not answer for" in p.reasons[0]
        assert "(the limit: 0.6 s)" in p.reasons[0]
    assert lanes.pings == 1  # probed once, the probe never answered
    assert watchdog.producers == set()
    await asyncio.sleep(2 * WATCH)
    assert watchdog._task is not None
    assert watchdog._task.done()


async def test_a_quiet_redis_that_answers_its_probe_fails_nobody() -> None:
    lanes = Lanes(answers=True)
    watchdog = Watchdog(lanes, silence=0.6)  # type: ignore[arg-type]
    producer = Producer()
    watchdog.watch(producer)
    await asyncio.sleep(PROBE_AFTER + 1.0)
    assert producer.reasons == []
    assert lanes.pings >= 1
    watchdog.unwatch(producer)
    await asyncio.sleep(2 * WATCH)
    assert watchdog._task is not None
    assert watchdog._task.done()
