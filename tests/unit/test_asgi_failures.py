"""A producer failing at every point of a response: the client gets exactly one
``RUN_ERROR`` where one is due (none after a terminal event), on both transports,
compressed or not, and nothing escapes the ASGI app.

In process (``Driver`` plays the server); tests/e2e/test_serving_failures.py runs
the same positions through uvicorn's sockets, tests/redis/test_response_failures.py
through ``RunStore.response``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire._compression import decompressor
from agui_wire.asgi import EncodedEvents, EventStreamResponse
from agui_wire.errors import EncodeError
from tests.unit.test_asgi import RUN, Driver

INTERNAL = {
    "type": "RUN_ERROR",
    "message": "the agent failed while producing events",
    "code": "INTERNAL_ERROR",
}
ENCODE = {
    "type": "RUN_ERROR",
    "message": "the server produced an event it could not encode",
    "code": "ENCODE_ERROR",
}
APP_ERROR = {"type": "RUN_ERROR", "message": "the agent gave up", "code": "AGENT"}
UNENCODABLE = {"messageId": "m", "delta": "no type"}  # refused by both encoders
# refused by both encoders: @ag-ui/core's schemas reject it (its delta is a number)
REJECTED = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}

# position -> (events before the failure, how it fails, the RUN_ERROR the client gets)
POSITIONS: dict[str, tuple[list[dict[str, Any]], str, dict[str, Any] | None]] = {
    "before the first event": ([], "raise", INTERNAL),
    "after RUN_STARTED": (RUN[:1], "raise", INTERNAL),
    "mid-run": (RUN[:3], "raise", INTERNAL),
    "while waiting for the next event": (RUN[:2], "wait, raise", INTERNAL),
    "an event that does not encode": (RUN[:2], "unencodable", ENCODE),
    "before the first event, unencodable": ([], "unencodable", ENCODE),
    "an event the reference client rejects": (RUN[:2], "rejected", ENCODE),
    "after RUN_FINISHED": (RUN, "raise", None),
    "after RUN_ERROR": ([RUN[0], APP_ERROR], "raise", None),
}


class Producer:
    """One failing producer, async or sync, counting how often its cleanup ran."""

    def __init__(self, position: str) -> None:
        self.before, self.how, self.error = POSITIONS[position]
        self.cleanups = 0

    async def agen(self) -> AsyncIterator[Any]:
        try:
            for event in self.before:
                yield event
            if self.how == "unencodable":
                yield UNENCODABLE
            if self.how == "rejected":
                yield REJECTED
            if self.how == "wait, raise":
                await asyncio.sleep(0.05)
            raise KeyError("secret detail")
        finally:
            self.cleanups += 1

    def gen(self) -> Iterator[Any]:
        try:
            yield from self.before
            if self.how == "unencodable":
                yield UNENCODABLE
            if self.how == "rejected":
                yield REJECTED
            if self.how == "wait, raise":
                time.sleep(0.05)
            raise KeyError("secret detail")
        finally:
            self.cleanups += 1


def body_events(d: Driver, accept: str, coding: str | None) -> list[dict[str, Any]]:
    if coding is None:
        assert "content-encoding" not in d.headers
        return decode(d.body, accept)
    assert d.headers["content-encoding"] == coding
    inflate = decompressor(coding)
    return decode(b"".join(inflate(b) for b in d.bodies), accept)


@pytest.mark.parametrize("coding", [None, "gzip"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
@pytest.mark.parametrize("kind", ["async", "sync", "sync inline"])
@pytest.mark.parametrize("position", list(POSITIONS))
def test_a_failure_at_any_point_reaches_the_client_once(
    position: str, kind: str, accept: str, coding: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    producer = Producer(position)
    events = producer.agen() if kind == "async" else producer.gen()
    headers = [] if coding is None else [(b"accept-encoding", coding.encode())]
    response = EventStreamResponse(
        events, accept=accept, compress=coding is not None, threaded=kind == "sync"
    )
    with caplog.at_level(logging.DEBUG):
        d = Driver(headers=headers).run(response)  # raises if anything escapes the app
    assert d.start["status"] == 200
    assert d.ended  # a clean end of body
    got = body_events(d, accept, coding)
    expected = [*producer.before] + ([] if producer.error is None else [producer.error])
    assert got == expected
    assert sum(e["type"] == "RUN_ERROR" for e in got) == (producer.error is not None) + (
        APP_ERROR in producer.before
    )
    assert b"secret" not in d.body
    assert producer.cleanups == 1
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in errors] == ["AG-UI event producer failed; ending the stream"]
    assert errors[0].exc_info is not None
    refused = producer.how in ("unencodable", "rejected")
    assert errors[0].exc_info[0] is (EncodeError if refused else KeyError)


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_a_producer_cancelled_by_someone_else_fails_like_any_other(accept: str, caplog) -> None:
    """``CancelledError`` out of the producer when the response was not cancelled
    (a task it awaited was cancelled by its owner) is the producer failing: the
    client gets a ``RUN_ERROR``, the body ends, the app returns normally."""
    cleanups = 0

    async def agen() -> AsyncIterator[Any]:
        nonlocal cleanups
        try:
            yield RUN[0]
            inner = asyncio.ensure_future(asyncio.sleep(10))
            asyncio.get_running_loop().call_later(0.02, inner.cancel)
            await inner
        finally:
            cleanups += 1

    with caplog.at_level(logging.ERROR):
        d = Driver(accept=accept).run(EventStreamResponse(agen()))
    assert d.ended
    assert d.events() == [RUN[0], INTERNAL]
    assert cleanups == 1
    assert len(caplog.records) == 1


def test_nothing_escapes_when_the_last_event_cannot_be_typed(caplog) -> None:
    """``on_error`` looks at the last event's type to skip the ``RUN_ERROR`` after a
    terminal one; a pre-encoded batch whose type cannot be read (a store batch that
    does not decode) must not make that check escape the app."""

    class Opaque(EncodedEvents):
        def data(self, binary: bool) -> bytes:
            return b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'

        @property
        def last_type(self) -> str | None:
            raise ValueError("undecodable")

    async def agen() -> AsyncIterator[Any]:
        yield Opaque()
        raise KeyError("later")

    with caplog.at_level(logging.ERROR):
        d = Driver().run(EventStreamResponse(agen()))
    assert d.ended
    assert d.events() == [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, INTERNAL]
