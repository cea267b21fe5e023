"""What no reader can read is refused at the door, on every backend: an event above
the readers' limits (``schema``: a binary frame's payload, or an SSE event) is an
``EventTooLarge`` naming its index and size, nothing of it is stored, and the run
ends with ``RUN_ERROR`` after the events before it, which every reader still
reads, on both transports.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.errors import EncodeError, EventTooLarge
from agui_wire.schema import DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE
from tests.runstore.kit import Kit, RunStore

pytestmark = pytest.mark.anyio

HEAD = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"d{i}"} for i in range(4)),
]
TAIL = [
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def delta(text: str) -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": text}


# above the binary limit; above the SSE limit only (control characters are six
# bytes each as JSON, one in protobuf); a RUN_FINISHED too big (a terminal event
# refused is no end: the RUN_ERROR still follows)
TOO_BIG = {
    "frame": (delta("x" * (DEFAULT_MAX_FRAME_SIZE + 1)), DEFAULT_MAX_FRAME_SIZE),
    "sse": (delta("\x01" * (DEFAULT_MAX_EVENT_SIZE // 5)), DEFAULT_MAX_EVENT_SIZE),
    "terminal": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": "x" * 11_000_000},
        DEFAULT_MAX_FRAME_SIZE,
    ),
}


async def http_get(store: RunStore, run_id: str, accept: str) -> httpx.Response:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await store.response(run_id)(scope, receive, send)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return await client.get("/", headers={"accept": accept})


@pytest.mark.parametrize("case", sorted(TOO_BIG))
@pytest.mark.parametrize("how", ["publish", "start"])
async def test_an_event_no_reader_can_take_is_refused(
    kit: Kit, run_id: str, case: str, how: str
) -> None:
    big, limit = TOO_BIG[case]
    store = kit.store()
    after: list[dict[str, Any]] = []

    async def events() -> Any:  # async: a sync one would run ahead in a thread
        for event in HEAD:
            yield event
        yield big
        after.append(1)  # never asked for
        for event in TAIL:
            yield event

    if how == "publish":
        with pytest.raises(EventTooLarge) as caught:
            await store.publish(run_id, events())
    else:
        task = await store.start(run_id, events())
        assert task is not None
        task.remove_done_callback(store._task_done)
        with pytest.raises(EventTooLarge) as caught:
            await task
    error = caught.value
    assert isinstance(error, EncodeError)
    assert (error.index, error.limit) == (len(HEAD) + 1, limit)
    assert error.size > limit
    assert f"event {len(HEAD) + 1} is {error.size:,} bytes" in str(error)
    assert after == []
    # nothing of it stored: the events before it, a RUN_ERROR
    got = [e async for _, e in store.subscribe(run_id)]
    assert got[:-1] == HEAD
    assert got[-1]["type"] == "RUN_ERROR"
    assert got[-1]["code"] == "ENCODE_ERROR"
    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        response = await http_get(store, run_id, accept)
        assert response.status_code == 200
        assert decode(response.content, accept) == got


async def test_events_at_the_limit_are_stored_and_read(kit: Kit, run_id: str) -> None:
    """The biggest event every reader takes is stored and read on both transports
    (the refusal is not a lower limit of its own)."""
    text = "y" * (DEFAULT_MAX_FRAME_SIZE - 200)  # its SSE form is still within 10 MiB

    store = kit.store()
    events = [*HEAD, delta(text), *TAIL]
    assert await store.publish(run_id, events) == len(events)
    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        response = await http_get(store, run_id, accept)
        assert decode(response.content, accept) == events


async def test_a_refused_event_is_not_a_lost_connection(kit: Kit, run_id: str) -> None:
    """Live readers of the run see the events before the refused one and the
    RUN_ERROR, as they happen."""

    store = kit.store()
    gate = asyncio.Event()

    async def events() -> Any:
        for event in HEAD:
            yield event
        await gate.wait()
        yield TOO_BIG["frame"][0]

    task = await store.start(run_id, events())
    assert task is not None
    task.remove_done_callback(store._task_done)
    reader = store.subscribe(run_id)
    first = [await reader.__anext__() for _ in HEAD]
    gate.set()
    rest = [item async for item in reader]
    assert [e for _, e in first] == HEAD
    assert [(i, e["type"]) for i, e in rest] == [(len(HEAD) + 1, "RUN_ERROR")]
    with pytest.raises(EventTooLarge):
        await task
