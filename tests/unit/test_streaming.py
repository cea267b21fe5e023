"""``agui_wire._streaming``: what the ASGI response and the run store share. The
producer as one async iterator (``Source``: async iterables as they are, a
collection inline, a sync generator in a worker thread running at most
``_AHEAD`` events ahead, its exception raised in its place, closed after a step
still running), closing a producer never started, the error event of a failed
producer (never its exception's text), the type of any event, headers of a scope."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest

from agui_wire._streaming import (
    _AHEAD,
    KEEPALIVE_EVENT,
    EncodedEvents,
    Source,
    close_unstarted,
    default_error_event,
    event_type,
    is_keepalive,
    scope_header,
)
from agui_wire.errors import EncodeError

#: The logger of the stream's owner (asgi's, a store's): failures to close are logged on it.
LOG = logging.getLogger("agui_wire.tests")

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def drain(source: Source) -> list[Any]:
    got = []
    while True:
        try:
            got.append(await source.next())
        except StopAsyncIteration:
            return got


async def test_an_async_iterable_is_used_as_it_is() -> None:
    async def events():
        yield 1
        yield 2

    generator = events()
    source = Source(generator, None, asyncio.get_running_loop(), LOG)
    assert source.aiter is generator
    assert source.lock is None
    assert await drain(source) == [1, 2]


async def test_a_collection_runs_inline_and_a_generator_in_a_thread() -> None:
    loop = asyncio.get_running_loop()
    inline = Source([1, 2, 3], None, loop, LOG)
    assert inline.lock is None
    assert await drain(inline) == [1, 2, 3]
    assert inline.done
    threads = []

    def events():
        for n in range(5):
            threads.append(threading.current_thread())
            yield n

    threaded = Source(events(), None, loop, LOG)
    assert await drain(threaded) == list(range(5))
    assert threading.main_thread() not in threads
    assert Source(events(), False, loop, LOG).lock is None  # threaded=False: inline


async def test_a_threaded_producer_runs_at_most_ahead_events_ahead() -> None:
    made = []

    def events():
        for n in range(10 * _AHEAD):
            made.append(n)
            yield n

    source = Source(events(), None, asyncio.get_running_loop(), LOG)
    assert await source.next() == 0
    await asyncio.sleep(0.2)  # the thread fills the queue, then stops
    assert _AHEAD <= len(made) <= _AHEAD + 2
    rest = await drain(source)
    assert rest == list(range(1, 10 * _AHEAD))


async def test_a_threaded_producers_exception_is_raised_in_its_place() -> None:
    def fails():
        yield 1
        raise RuntimeError("the model failed")

    source = Source(fails(), None, asyncio.get_running_loop(), LOG)
    assert await source.next() == 1
    with pytest.raises(RuntimeError, match="the model failed"):
        await source.next()
    assert source.done
    await source.close()  # nothing to close: it is done


async def test_close_waits_for_a_step_running_in_the_thread() -> None:
    closed = []
    stepping = threading.Event()

    def slow():
        try:
            yield 1
            stepping.set()
            time.sleep(0.2)  # a step in progress when the source is closed
            yield 2
        finally:
            closed.append(True)

    source = Source(slow(), None, asyncio.get_running_loop(), LOG)
    assert await source.next() == 1
    await asyncio.to_thread(stepping.wait, 5)
    await source.close()
    assert closed == [True]


async def test_close_of_an_async_generator_and_of_a_collection() -> None:
    closed = []

    async def events():
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    source = Source(events(), None, asyncio.get_running_loop(), LOG)
    assert await source.next() == 1
    await source.close()
    assert closed == [True]
    await Source([1], None, asyncio.get_running_loop(), LOG).close()


async def test_close_unstarted_closes_generators_and_logs_a_failure(caplog: Any) -> None:
    closed = []

    async def agen():
        closed.append("never runs")
        yield 1

    def gen():
        try:
            yield 1
        finally:
            closed.append("sync")

    started = gen()
    next(started)
    await close_unstarted(agen(), LOG)
    await close_unstarted(started, LOG)
    await close_unstarted([1, 2], LOG)
    assert closed == ["sync"]

    class Broken:
        def __iter__(self):
            return self

        def __next__(self):
            return 1

        def close(self):
            raise OSError("cannot close")

    await close_unstarted(Broken(), LOG)
    assert "closing the AG-UI event producer failed" in caplog.text
    assert {r.name for r in caplog.records} == {"agui_wire.tests"}


def test_the_event_of_a_failed_producer_never_says_its_exception() -> None:
    assert default_error_event(EncodeError("bad"))["code"] == "ENCODE_ERROR"
    internal = default_error_event(RuntimeError("password=hunter2"))
    assert internal == {
        "type": "RUN_ERROR",
        "message": "the agent failed while producing events",
        "code": "INTERNAL_ERROR",
    }


def test_the_type_of_any_event() -> None:
    class Encoded(EncodedEvents):
        def data(self, binary: bool) -> bytes:
            return b""

        @property
        def last_type(self) -> str | None:
            return "RUN_FINISHED"

    class Model:
        type = "TEXT_MESSAGE_START"

    assert event_type({"type": "RUN_STARTED"}) == "RUN_STARTED"
    assert event_type(Model()) == "TEXT_MESSAGE_START"
    assert event_type(Encoded()) == "RUN_FINISHED"
    assert event_type(object()) is None


def test_encoded_events_decode_their_frames_by_default() -> None:
    from agui_wire import encode_proto

    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]

    class Encoded(EncodedEvents):
        def data(self, binary: bool) -> bytes:
            return b"".join(encode_proto(e) for e in events)

        @property
        def last_type(self) -> str | None:
            return "RUN_STARTED"

    assert Encoded().decoded() == events


def test_headers_and_keepalives() -> None:
    scope = {"headers": [(b"Last-Event-ID", b"7"), (b"accept", b"\xe9")]}
    assert scope_header(scope, b"last-event-id") == "7"
    assert scope_header(scope, b"accept") == "é"  # latin-1, as HTTP has it
    assert scope_header({}, b"accept") is None
    assert is_keepalive(KEEPALIVE_EVENT)
    assert not is_keepalive({"type": "CUSTOM", "name": "other"})
