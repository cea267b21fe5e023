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


# -- the appends themselves (no store) ----------------------------------------------


class Sends:
    """An ``Appends`` send that records each append and waits for ``release``."""

    def __init__(self) -> None:
        self.appends: list[tuple[int, list[bytes]]] = []
        self.release = asyncio.Event()
        self.release.set()
        self.fail: Exception | None = None

    async def __call__(self, first: int, payloads: list[bytes], stamp: int | None) -> None:
        self.appends.append((first, payloads))
        await self.release.wait()
        if self.fail is not None:
            raise self.fail


async def test_one_append_in_flight_and_the_rest_batched() -> None:
    from agui_wire._runstore.appends import Appends

    sends = Sends()
    sends.release.clear()
    appends = Appends(sends, 1, batch=100, page_bytes=1 << 20)
    for n in range(50):
        await _add(appends, b"p%d" % n)  # the first goes at once; the rest wait their turn
    await asyncio.sleep(0)
    assert sends.appends == [(1, [b"p0"])]
    sends.release.set()
    await appends.drain()
    assert sends.appends == [(1, [b"p0"]), (2, [b"p%d" % n for n in range(1, 50)])]


async def test_an_append_is_at_most_batch_events_and_page_bytes() -> None:
    from agui_wire._runstore.appends import Appends

    sends = Sends()
    sends.release.clear()
    appends = Appends(sends, 11, batch=3, page_bytes=10)
    adding = asyncio.ensure_future(_add_all(appends, [b"aaaa"] * 5 + [b"x" * 30, b"b"]))
    await asyncio.sleep(0)
    sends.release.set()
    await adding
    await appends.drain()
    firsts = [(first, [len(p) for p in payloads]) for first, payloads in sends.appends]
    # 10 bytes of payload per append (one event at least: a bigger one alone), 3 events
    assert firsts == [(11, [4]), (12, [4, 4]), (14, [4, 4]), (16, [30]), (17, [1])]


async def _add_all(appends: Any, payloads: list[bytes]) -> None:
    for payload in payloads:
        await _add(appends, payload)


async def test_add_waits_while_a_batch_is_queued() -> None:
    from agui_wire._runstore.appends import Appends

    sends = Sends()
    sends.release.clear()
    appends = Appends(sends, 1, batch=2, page_bytes=1 << 20)
    await _add(appends, b"1")  # in flight
    await _add(appends, b"2")  # queued
    third = asyncio.ensure_future(_add(appends, b"3"))  # a batch queued: it waits
    await asyncio.sleep(0.01)
    assert not third.done()
    sends.release.set()
    await third
    await appends.drain()
    assert [first for first, _ in sends.appends] == [1, 2]


async def test_the_first_failure_is_raised_by_every_later_add_and_drain() -> None:
    from agui_wire._runstore.appends import Appends

    sends = Sends()
    sends.fail = RuntimeError("the store refused")
    appends = Appends(sends, 1, batch=2, page_bytes=1 << 20)
    await _add(appends, b"1")
    with pytest.raises(RuntimeError, match="refused"):
        await appends.drain()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="refused"):
            await _add(appends, b"2")
    assert len(sends.appends) == 1  # nothing sent after the failure


async def test_a_stored_future_starts_the_next_append_as_it_settles() -> None:
    """A send that returns a ``Stored`` (a future its sender settles: no task) has the
    next append sent in the settling call, with no turn of the event loop between
    (a future's callbacks would wait for one: one per event when the store keeps
    up); a failure settled so is raised by the next ``add``, and a cancelled
    append leaves nothing in flight."""
    from agui_wire._runstore.appends import Appends, Stored

    loop = asyncio.get_running_loop()
    flying: list[tuple[int, list[bytes], Stored]] = []

    def send(first: int, payloads: list[bytes], stamp: int | None) -> Stored:
        flying.append((first, payloads, Stored(loop=loop)))
        return flying[-1][2]

    appends = Appends(send, 1, batch=10, page_bytes=1 << 20)
    await _add(appends, b"a")
    await _add(appends, b"b")  # waits for the one in flight
    assert [(f, p) for f, p, _ in flying] == [(1, [b"a"])]
    flying[0][2].set_result(None)
    assert [(f, p) for f, p, _ in flying] == [(1, [b"a"]), (2, [b"b"])]  # no await between
    flying[1][2].set_exception(RuntimeError("the store refused"))
    with pytest.raises(RuntimeError, match="refused"):
        await _add(appends, b"c")
    appends = Appends(send, 1, batch=10, page_bytes=1 << 20)
    await _add(appends, b"d")
    appends.cancel()
    assert flying[-1][2].cancelled()
    assert appends.task is None


async def test_an_append_settled_in_its_send_is_seen() -> None:
    """A send may settle its ``Stored`` before it returns (a closed store fails the
    call at once): the next append goes, or the failure is raised, all the same;
    the producer never waits on an append nobody will settle again."""
    from agui_wire._runstore.appends import Appends, Stored

    loop = asyncio.get_running_loop()
    sent: list[int] = []
    error: list[BaseException] = []

    def send(first: int, payloads: list[bytes], stamp: int | None) -> Stored:
        sent.append(first)
        done = Stored(loop=loop)
        if error:
            done.set_exception(error[0])
        else:
            done.set_result(None)
        return done

    appends = Appends(send, 1, batch=10, page_bytes=1 << 20)
    for payload in (b"a", b"b", b"c"):
        await _add(appends, payload)
    assert sent == [1, 2, 3]
    assert appends.task is None
    await asyncio.wait_for(appends.drain(), 1)
    error.append(RuntimeError("the store was closed"))
    appends.add(b"d")
    with pytest.raises(RuntimeError, match="closed"):
        await asyncio.wait_for(appends.drain(), 1)


def test_admit_encodes_once_and_says_what_is_too_large() -> None:
    from agui_wire._codec.selected import encode_payload
    from agui_wire._runstore.appends import admit

    event = HEAD[0]
    assert admit(event, 1) == encode_payload(event)
    big, limit = TOO_BIG["sse"]
    with pytest.raises(EventTooLarge) as info:
        admit(big, 9)
    assert (info.value.index, info.value.limit, info.value.event_type) == (
        9,
        limit,
        "TEXT_MESSAGE_CONTENT",
    )


async def _add(appends: Any, payload: bytes) -> None:
    """What a producer does per event."""
    appends.add(payload)
    if appends.full:
        await appends.room()
