"""Trimmed history is ``HistoryTrimmed`` on every path, never a gap, against the real
redis-server: a reader too slow for a run stored with ``maxlen`` (its catch-up
from Redis, and the gap between it and a tail that moved ahead) gets every event
it reads once and in order, then ``HistoryTrimmed`` (HTTP: a ``RUN_ERROR`` with
code ``HISTORY_TRIMMED``), as a Python subscriber, a compact joiner, and an HTTP
client on both transports; the pages a reader fills a gap with say why events
are missing (trimmed, or lost from the middle of the stream).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import HistoryTrimmed, RunLost
from agui_wire.redis import RunStore
from tests.redis.conftest import run

pytestmark = [pytest.mark.slow, pytest.mark.valkey]

N = 20_000  # deltas of the run: the slow reader falls ~10 maxlens behind
MAXLEN = 1000
HEAD = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
]


def delta(i: int) -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"{i} "}


def index_of(event: dict[str, Any]) -> int:
    """The run's index of a delta (its text says which it is)."""
    return int(event["delta"]) + len(HEAD) + 1


async def produce(gate: asyncio.Event) -> AsyncIterator[dict[str, Any]]:
    """As fast as the store takes them, once ``gate`` opens."""
    await gate.wait()
    for event in HEAD:
        yield event
    for i in range(N):
        if i % 100 == 0:
            await asyncio.sleep(0)
        yield delta(i)
    yield {"type": "TEXT_MESSAGE_END", "messageId": "m"}
    yield {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


async def last_index(r: aioredis.Redis, key: str) -> int:
    last = await r.xrevrange(key, count=1)
    return int(last[0][0].split(b"-")[0]) if last else 0


def consecutive(indexes: list[int]) -> None:
    jumps = [(a, b) for a, b in itertools.pairwise(indexes) if b != a + 1]
    assert not jumps, f"a silent gap: {jumps[:3]} after {len(indexes)} events"


@pytest.mark.parametrize("compact", [False, True], ids=["replay", "compact"])
def test_a_slow_subscriber_gets_history_trimmed_never_a_gap(redis_server, run_id, compact) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r, maxlen=MAXLEN, backlog=8)
        gate = asyncio.Event()
        task = await store.start(run_id, produce(gate))
        assert task is not None
        if compact:  # a joiner of a live run: a snapshot, then the tail
            gate.set()
            while await last_index(r, store.stream_key(run_id)) < 2 * MAXLEN:
                await asyncio.sleep(0.001)
        else:  # a reader from the start: the run begins once it follows the tail
            asyncio.get_running_loop().call_later(0.3, gate.set)
        seen: list[int] = []
        ending: BaseException | None = None
        subscription = store.subscribe(run_id, compact=compact)
        try:
            async for event_id, event in subscription:
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    assert event_id == index_of(event)
                if not seen or event_id != seen[-1]:  # (a compact prefix shares its id)
                    seen.append(int(event_id))
                    consecutive(seen[-2:])
                await asyncio.sleep(0.002)
        except HistoryTrimmed as exc:
            ending = exc
        assert isinstance(ending, HistoryTrimmed), "the reader kept up: no test"
        assert ending.after == seen[-1]
        assert ending.first > seen[-1] + 1
        await task
        await r.aclose()

    run(main())


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_a_slow_http_client_gets_history_trimmed_never_a_gap(redis_server, run_id, accept) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r, maxlen=MAXLEN, backlog=8)
        gate = asyncio.Event()
        task = await store.start(run_id, produce(gate))
        assert task is not None
        sent: list[dict[str, Any]] = []
        done = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.start":  # the run begins once the
                asyncio.get_running_loop().call_later(0.3, gate.set)  # response tails it
            if message["type"] == "http.response.body":
                # a slow client: the socket drains 2 ms per event
                await asyncio.sleep(0.002 * len(decode(message["body"], accept)))
                if not message.get("more_body"):
                    done.set()

        scope = {
            "type": "http",
            "method": "GET",
            "http_version": "1.1",
            "headers": [(b"accept", accept.encode())],
            "query_string": b"",
        }
        await store.response(run_id)(scope, receive, send)
        body = b"".join(m["body"] for m in sent if m["type"] == "http.response.body")
        events = decode(body, accept)
        assert events[-1]["type"] == "RUN_ERROR", events[-1]
        assert events[-1]["code"] == "HISTORY_TRIMMED"
        indexes = [index_of(e) for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
        assert events[: len(HEAD)] == HEAD
        assert indexes[0] == len(HEAD) + 1
        consecutive(indexes)
        if accept == SSE_MEDIA_TYPE:  # the ids are the indexes
            lines = body.split(b"\n")
            consecutive([int(x[4:].split(b"-")[0]) for x in lines if x[:4] == b"id: "])
        await task
        await r.aclose()

    run(main())


def test_a_gap_fill_says_why_events_are_missing(redis_server, run_id) -> None:
    """The pages a reader fills a gap with (up to the tail's first event) never end
    short of it: trimmed events are ``HistoryTrimmed``, events missing between
    stored ones (a failover lost them) ``RunLost``."""

    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r, maxlen=100, batch=50)
        events = [*HEAD, *(delta(i) for i in range(2000))]
        assert await store.publish(run_id, events) == len(events)
        reading = store._reading
        keys = store._settings.layout.keys(None, run_id)
        (oldest, _), *_ = [
            tuple(map(int, raw.split(b"-")))
            for raw, _ in await r.xrange(keys.stream, "-", "+", count=1)
        ]
        assert oldest > 100  # trimmed
        _, generation, _ = await reading.head(keys)

        async def fill(cursor: int, stop: int | None) -> list[int]:
            got = []
            async for batch in reading.pages(keys, cursor, generation, stop):
                got += range(batch.first, batch.last + 1)
            return got

        for stop in (oldest - 1, oldest + 10, None):
            with pytest.raises(HistoryTrimmed) as trimmed:
                await fill(3, stop)
            assert (trimmed.value.after, trimmed.value.first) == (3, oldest)
        assert await fill(oldest + 5, oldest + 9) == list(range(oldest + 6, oldest + 10))

        # events missing between stored ones: lost, not trimmed
        lost = [f"{n}-{generation}" for n in range(oldest + 20, oldest + 30)]
        assert await r.xdel(keys.stream, *lost) == len(lost)
        for cursor, stop in ((oldest + 19, oldest + 29), (oldest + 19, None), (oldest + 25, None)):
            with pytest.raises(RunLost):
                await fill(cursor, stop)
        with pytest.raises(RunLost):  # the events before the hole come first
            await fill(oldest + 10, oldest + 40)
        await r.aclose()

    run(main())
