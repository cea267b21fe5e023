"""``maxlen``, on every backend: a run keeps about its ``maxlen`` newest events; a
reader asking for a trimmed one gets ``HistoryTrimmed`` (HTTP: a 200 whose body
is one ``RUN_ERROR``, code ``HISTORY_TRIMMED``), never a silent gap; a compact
joiner of a trimmed run gets a snapshot standing for the events it cannot
replay, then the rest, applying to the same messages and state as the whole run.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire._apply import Compactor
from agui_wire.errors import HistoryTrimmed
from examples.script import scripted_run
from tests.runstore.kit import Kit, call, collect

pytestmark = pytest.mark.anyio

RUN = scripted_run("thread-1", "run-1")
ACCEPTS = [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE]


def ticks(n: int) -> list[dict[str, Any]]:
    return [RUN[0], *({"type": "CUSTOM", "name": "tick", "value": i} for i in range(n)), RUN[-1]]


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
