"""``maxlen``, on every backend: a run keeps about its ``maxlen`` newest events; a
reader asking for a trimmed one gets ``HistoryTrimmed`` (HTTP: a 200 whose body
is one ``RUN_ERROR``, code ``HISTORY_TRIMMED``), never a silent gap; a compact
joiner of a trimmed run gets a snapshot standing for the events it cannot
replay, then the rest, applying to the same messages and state as the whole run.
A reader too slow for a live run stored with ``maxlen`` (its catch-up from the
store, and the gap between it and a tail that moved ahead) gets every event it
reads once and in order, then ``HistoryTrimmed``, as a subscriber, a compact
joiner and an HTTP client on both transports.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire._apply import Compactor
from agui_wire.errors import HistoryTrimmed
from examples.script import scripted_run
from tests.runstore.kit import Kit, call, collect, sse_ids

pytestmark = pytest.mark.anyio

RUN = scripted_run("thread-1", "run-1")
ACCEPTS = [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE]


def ticks(n: int) -> list[dict[str, Any]]:
    return [RUN[0], *({"type": "CUSTOM", "name": "tick", "value": i} for i in range(n)), RUN[-1]]


DELTAS = 20_000  # of the slow readers' run: they fall ~10 maxlens behind
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


class Fast:
    """A run produced as fast as the store takes it, once ``gate`` opens, pausing
    after ``pause_at`` events until ``resume`` is set; ``produced`` counts the
    events taken."""

    def __init__(self, pause_at: int = -1) -> None:
        self.gate = asyncio.Event()
        self.resume = asyncio.Event()
        self.pause_at = pause_at
        self.produced = 0

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        await self.gate.wait()
        run = itertools.chain(
            HEAD,
            (delta(i) for i in range(DELTAS)),
            [
                {"type": "TEXT_MESSAGE_END", "messageId": "m"},
                {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
            ],
        )
        for event in run:
            self.produced += 1
            if self.produced % 100 == 0:
                await asyncio.sleep(0)
            if self.produced == self.pause_at:
                await self.resume.wait()
            yield event


def consecutive(indexes: list[int]) -> None:
    jumps = [(a, b) for a, b in itertools.pairwise(indexes) if b != a + 1]
    assert not jumps, f"a silent gap: {jumps[:3]} after {len(indexes)} events"


@pytest.mark.slow
@pytest.mark.parametrize("compact", [False, True], ids=["replay", "compact"])
async def test_a_slow_subscriber_gets_history_trimmed_never_a_gap(
    kit: Kit, run_id: str, compact: bool
) -> None:
    store = kit.store(maxlen=MAXLEN, backlog=8)
    run = Fast(pause_at=3 * MAXLEN if compact else -1)
    task = await store.start(run_id, run.events())
    assert task is not None
    if compact:  # a joiner of a live run trimmed already: a snapshot (the run paused
        run.gate.set()  # while it is folded, so it is live), then the tail
        while run.produced < 3 * MAXLEN:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.1)  # what was taken is stored
    else:  # a reader from the start: the run begins once it follows the tail
        asyncio.get_running_loop().call_later(0.3, run.gate.set)
    seen: list[int] = []
    ending: BaseException | None = None
    try:
        async for event_id, event in store.subscribe(run_id, compact=compact):
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                assert event_id == index_of(event)
            if not seen or event_id != seen[-1]:  # (a compact prefix shares its id)
                seen.append(int(event_id))
                consecutive(seen[-2:])
            run.resume.set()  # the joiner has its snapshot: the run goes on
            await asyncio.sleep(0.002)
    except HistoryTrimmed as exc:
        ending = exc
    assert isinstance(ending, HistoryTrimmed), "the reader kept up: no test"
    assert ending.after == seen[-1]
    assert ending.first > seen[-1] + 1
    await task


@pytest.mark.slow
@pytest.mark.parametrize("accept", ACCEPTS)
async def test_a_slow_http_client_gets_history_trimmed_never_a_gap(
    kit: Kit, run_id: str, accept: str
) -> None:
    store = kit.store(maxlen=MAXLEN, backlog=8)
    run = Fast()
    task = await store.start(run_id, run.events())
    assert task is not None
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.start":  # the run begins once the
            asyncio.get_running_loop().call_later(0.3, run.gate.set)  # response tails it
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
    # the run from its first event on, as far as the client kept up (how far depends
    # on how fast the producer outruns it), then the error: never a gap
    read = events[:-1]
    assert read, "nothing of the run before the error"
    assert read[: len(HEAD)] == HEAD[: len(read)]
    indexes = [index_of(e) for e in read if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert indexes == list(range(len(HEAD) + 1, len(HEAD) + 1 + len(indexes)))
    if accept == SSE_MEDIA_TYPE:  # the ids are the indexes
        assert [int(i.split("-")[0]) for i in sse_ids(body)] == list(range(1, len(read) + 1))
    await task


async def test_maxlen_trims_and_resuming_into_the_trim_is_an_error(kit: Kit, run_id: str) -> None:
    store = kit.store(maxlen=100, batch=50)
    events = ticks(2000)
    await store.publish(run_id, events)
    with pytest.raises(HistoryTrimmed) as info:
        await collect(store, run_id)
    assert info.value.after == 0
    kept_count = len(events) - info.value.first + 1
    assert 100 <= kept_count < 400  # about the 100 newest
    with pytest.raises(HistoryTrimmed):
        await collect(store, run_id, after=info.value.first - 2)
    kept = await collect(store, run_id, after=info.value.first - 1)
    assert [e for _, e in kept] == events[info.value.first - 1 :]
    tail = await collect(store, run_id, after=len(events) - 50)
    assert [e for _, e in tail] == events[-50:]


@pytest.mark.parametrize("accept", ACCEPTS)
async def test_a_trimmed_position_over_http_is_history_trimmed(
    kit: Kit, run_id: str, accept: str
) -> None:
    store = kit.store(maxlen=100, batch=50)
    await store.publish(run_id, ticks(2000))
    start, bodies = await call(store.response(run_id), headers=[("accept", accept)])
    assert start["status"] == 200
    got = decode(b"".join(bodies), accept)
    assert [(e["type"], e["code"]) for e in got] == [("RUN_ERROR", "HISTORY_TRIMMED")]
    assert "no longer stored" in got[0]["message"]


@pytest.mark.parametrize("accept", ACCEPTS)
async def test_maxlen_and_compact_work_together(kit: Kit, run_id: str, accept: str) -> None:
    """A long run trimmed to about 100 events: a compact joiner gets a snapshot and
    the events after it, applying to the same messages and state as the whole run."""
    events = _long_run(run_id)
    store = kit.store(maxlen=100, batch=50)
    assert await store.publish(run_id, events) == len(events)
    with pytest.raises(HistoryTrimmed):
        await collect(store, run_id)
    got = [e for _, e in await collect(store, run_id, compact=True)]
    assert len(got) < len(events)
    assert _applied(got) == _applied(events)
    start, bodies = await call(store.response(run_id, compact=True), headers=[("accept", accept)])
    assert start["status"] == 200
    assert decode(b"".join(bodies), accept) == got


async def test_a_trimmed_run_that_cannot_be_folded_is_history_trimmed_compact_too(
    kit: Kit, run_id: str
) -> None:
    """Chunks cannot be folded: no snapshot stands for the trimmed events."""
    chunks = [
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": f"w{i}"} for i in range(500)
    ]
    store = kit.store(maxlen=100, batch=50)
    await store.publish(run_id, [RUN[0], *chunks, RUN[-1]])
    with pytest.raises(HistoryTrimmed):
        await collect(store, run_id, compact=True)


def _long_run(run_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id}]
    events.append({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
    events += [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"w{i} "} for i in range(600)
    ]
    events.append({"type": "TEXT_MESSAGE_END", "messageId": "m1"})
    events.append({"type": "STATE_SNAPSHOT", "snapshot": {"n": 600}})
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": run_id})
    return events


def _applied(events: list[dict[str, Any]]) -> Any:
    """The messages and state a client ends with (the fold the store uses)."""
    folder = Compactor()
    for event in events:
        folder.feed(event)
    prefix = folder.prefix()
    return [e for e in prefix if e["type"] in ("MESSAGES_SNAPSHOT", "STATE_SNAPSHOT")]
