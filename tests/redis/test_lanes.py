"""A long run's replay or fold never makes the replica's other runs wait, against a
real redis-server. Structural, not timed (benchmarks/redis_fold_isolation.py
measures the latency): page reads go on lanes of their own, so no append (nor
any other short command) shares a pipeline with a page or waits for a lane a
page holds, and page lanes send a page as soon as it is asked for; a page takes
Redis a bounded time (``PAGE_EVENTS`` events at most, a fold's ``FOLD_PAGE``:
tests/runstore/test_folds.py); a fold gives the event loop back after a step
of at most ``FEED_STEP`` events and, alone on the loop, never sleeps
(tests/runstore/test_pacing.py holds the rule, and a fold's share of a busy
loop; test_folds.py that a fold holds a step of decoded events, never a page).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from agui_wire._runstore import folds, pacing
from agui_wire._runstore.read import PAGE_EVENTS
from agui_wire.redis import RunStore
from agui_wire.redis._pages import PAGE
from agui_wire.redis._pipeline import Pipeliner
from agui_wire.redis._producer import APPEND, RENEW
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

LONG = 20_000


def token_run(run_id: str, n: int) -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        *[{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "abcdefgh"}] * n,
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id},
    ]


async def paced(events: list[dict[str, Any]]) -> Any:
    for event in events:
        await asyncio.sleep(0.001)
        yield event


assert APPEND.many is not None
# (appends queued together go as one call of APPEND's many-calls script)
NAMES = {PAGE.sha: "PAGE", APPEND.sha: "APPEND", APPEND.many.sha: "APPEND", RENEW.sha: "RENEW"}


def name(args: Sequence[Any]) -> str:
    command = str(args[0]).upper()
    return NAMES.get(str(args[1]), "EVALSHA") if command == "EVALSHA" else command


async def test_an_append_never_waits_behind_a_page_read(
    opened: Opened, redis_server: Any, run_id: str, monkeypatch: Any
) -> None:
    """Compact joiners fold a long run (pages back to back) while producers append:
    every pipeline the store sends is recorded with the lanes that sent it."""
    sent: list[tuple[int, list[str]]] = []  # (the lanes, what one pipeline carried)
    real = Pipeliner._send

    async def spy(self: Pipeliner, calls: list[Any], held: Any) -> None:
        sent.append((id(self), [name(call.command()) for call in calls]))
        await real(self, calls, held)

    monkeypatch.setattr(Pipeliner, "_send", spy)
    store = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    long_id = f"{run_id}-long"
    await store.publish(long_id, token_run(long_id, LONG))
    sent.clear()

    async def join() -> None:
        async with contextlib.aclosing(store.subscribe(long_id, compact=True)) as joined:
            async for _ in joined:
                pass

    async def produce(n: int) -> int:
        return await store.publish(f"{run_id}-{n}", paced(token_run(f"{run_id}-{n}", 150)))

    # each joiner folds on its own: a finished fold is reused for ``poll`` s only
    joiners = [asyncio.ensure_future(join())]
    produced = await asyncio.gather(*(produce(n) for n in range(8)))
    await asyncio.gather(*joiners)
    assert produced == [154] * 8
    with_pages = [(lanes, names) for lanes, names in sent if "PAGE" in names]
    with_appends = [(lanes, names) for lanes, names in sent if "APPEND" in names]
    assert with_pages
    assert with_appends
    # what an append waited behind in its own pipeline: never a page
    behind = Counter(n for _, names in with_appends for n in names if n == "PAGE")
    assert behind == Counter()
    # nor for a lane: the lanes that read pages never carried an append, nor any
    # other short command
    page_lanes = {lanes for lanes, _ in with_pages}
    assert page_lanes.isdisjoint(lanes for lanes, _ in with_appends)
    assert {n for lanes, names in sent if lanes in page_lanes for n in names} == {"PAGE"}
    # and each page took Redis a bounded time: at most PAGE_EVENTS events
    assert sum(names.count("PAGE") for _, names in with_pages) >= LONG // PAGE_EVENTS


async def test_a_fold_gives_the_event_loop_back(
    opened: Opened, redis_server: Any, run_id: str, monkeypatch: Any
) -> None:
    """Events fed to the fold between two turns of the event loop: at most FEED_STEP."""
    fed = [0]
    most = [0]
    real = folds.Compactor.feed

    def feed(self: Any, event: Any) -> None:
        fed[0] += 1
        most[0] = max(most[0], fed[0])
        real(self, event)

    monkeypatch.setattr(folds.Compactor, "feed", feed)

    async def turns(stop: asyncio.Event) -> int:
        count = 0
        while not stop.is_set():
            fed[0] = 0
            count += 1
            await asyncio.sleep(0)
        return count

    store = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    await store.publish(run_id, token_run(run_id, LONG))
    stop = asyncio.Event()
    counting = asyncio.ensure_future(turns(stop))
    got = [event async for _, event in store.subscribe(run_id, compact=True)]
    stop.set()
    await counting
    assert [e["type"] for e in got] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert got[1]["messages"][0]["content"] == "abcdefgh" * LONG
    assert 0 < most[0] <= folds.FEED_STEP


@pytest.mark.parametrize("events", [1, PAGE_EVENTS + 5])
async def test_a_page_holds_at_most_page_events(
    opened: Opened, redis_server: Any, run_id: str, events: int
) -> None:
    """Whatever the byte budget allows, a page is PAGE_EVENTS events at most, and
    the pages follow on. Redis runs nothing else while it builds a page, ~1 us
    per event (more as a page grows: Lua's tables): 1,024 events keep it near a
    millisecond."""
    assert PAGE_EVENTS <= 1024
    store = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    await store.publish(run_id, token_run(run_id, 4 * PAGE_EVENTS + events))
    reading = store._reading
    keys = store._settings.layout.keys(None, run_id)
    sizes, cursor = [], 0
    async for batch in reading.pages(keys, 0, None):
        assert batch.first == cursor + 1
        cursor = batch.last
        sizes.append(len(batch.payloads))
    assert cursor == 4 * PAGE_EVENTS + events + 4
    assert max(sizes) == PAGE_EVENTS


async def test_a_fold_alone_on_the_loop_goes_at_full_speed(
    opened: Opened, redis_server: Any, run_id: str, monkeypatch: Any
) -> None:
    """With nothing else on the loop, a fold does not sleep: its own reading (the
    replies of its pages, parsed as they come) is not taken for others' work."""
    slices: list[float] = []
    real = pacing.pause

    def pause(busy: float, others: float) -> float:
        slices.append(real(busy, others))
        return slices[-1]

    monkeypatch.setattr(pacing, "pause", pause)
    store = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    await store.publish(run_id, token_run(run_id, 4 * LONG))
    got = [event async for _, event in store.subscribe(run_id, compact=True)]
    assert got[1]["messages"][0]["content"] == "abcdefgh" * 4 * LONG
    assert len(slices) >= 20  # (the fold's work: this many slices)
    # An empty turn's CPU time is noisy on a contended core (40-80 us against
    # EMPTY's 20), so now and then a slice looks busy (0-15 of ~100 seen beside a
    # CI run); its own reading taken for others' work makes every slice sleep.
    assert len([s for s in slices if s]) <= len(slices) / 4


async def test_page_lanes_send_a_page_as_soon_as_it_is_asked_for(
    opened: Opened, redis_server: Any, run_id: str, monkeypatch: Any
) -> None:
    """A replay or a fold asks for a page once it has the one before: the page
    lanes send it at once, where the command lanes wait up to ``LINGER`` after
    their last round trip for more commands to send with it (a page is worth a
    round trip of its own, and a fold of small pages would wait more than it reads)."""
    lingered: list[tuple[bool, float]] = []  # (page lanes, the wait)
    real_sleep = asyncio.sleep

    async def spy(delay: float, result: Any = None) -> Any:
        task = asyncio.current_task()
        coro = None if task is None else task.get_coro()
        if coro is not None and coro.__qualname__ == "Pipeliner._lane" and delay > 0:
            lanes = coro.cr_frame.f_locals["self"]
            lingered.append((lanes in store._calls._page_lanes.values(), delay))
        return await real_sleep(delay, result)

    store = opened.store(RunStore(opened.redis(redis_server.url), lease=5))
    await store.publish(run_id, token_run(run_id, LONG))
    monkeypatch.setattr(asyncio, "sleep", spy)
    got = [event async for _, event in store.subscribe(run_id)]  # a replay
    assert len(got) == LONG + 4
    got = [event async for _, event in store.subscribe(run_id, compact=True)]  # a fold
    assert got[1]["messages"][0]["content"] == "abcdefgh" * LONG
    assert [delay for pages, delay in lingered if pages] == []
