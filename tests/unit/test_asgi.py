"""agui_wire.asgi.EventStreamResponse at the ASGI level, and through Starlette,
FastAPI, Starlette's TestClient and httpx's ASGITransport.

The raw-ASGI ``Driver`` controls what the server side would: when
``http.disconnect`` arrives, whether ``send`` fails, and when each message was
sent, so headers, streaming, keep-alive timing, ids, disconnects and producer
errors are tested precisely. (TestClient and ASGITransport buffer the whole
body, so they cannot show streaming or disconnects; the e2e suite does that
over real sockets.)
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Any

import pytest
from fastapi import BackgroundTasks, FastAPI, Request

import agui_wire
from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire.asgi import (
    _BATCH_BYTES,
    KEEPALIVE_COMMENT,
    EncodedEvents,
    EventStreamResponse,
    last_event_id,
    sequential_ids,
)

RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "héllo"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


DELTA = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}


class Driver:
    """Calls an ASGI app as a server would, recording what it sends.

    ``disconnect_after``: seconds after which ``receive`` reports
    ``http.disconnect`` (None: only once the response is complete).
    ``fail_send_after``: body messages after which ``send`` raises OSError.
    """

    def __init__(
        self,
        *,
        accept: str | None = None,
        method: str = "POST",
        http_version: str = "1.1",
        headers: list[tuple[bytes, bytes]] | None = None,
        disconnect_after: float | None = None,
        fail_send_after: int | None = None,
    ) -> None:
        raw = list(headers or [])
        if accept is not None:
            raw.append((b"accept", accept.encode()))
        self.scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": http_version,
            "method": method,
            "path": "/agent",
            "headers": raw,
        }
        self.disconnect_after = disconnect_after
        self.fail_send_after = fail_send_after
        self.messages: list[tuple[float, dict[str, Any]]] = []
        self.complete = asyncio.Event()
        self.body_read = False
        self.t0 = 0.0

    async def receive(self) -> dict[str, Any]:
        if not self.body_read:
            self.body_read = True
            return {"type": "http.request", "body": b"{}", "more_body": False}
        if self.disconnect_after is None:
            await self.complete.wait()
        else:
            await asyncio.sleep(max(0.0, self.t0 + self.disconnect_after - time.monotonic()))
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        bodies = sum(1 for _, m in self.messages if m["type"] == "http.response.body")
        if self.fail_send_after is not None and bodies >= self.fail_send_after:
            raise OSError("connection reset by peer")
        self.messages.append((time.monotonic() - self.t0, message))
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete.set()

    async def __call__(self, app: Any) -> None:
        self.t0 = time.monotonic()
        await app(self.scope, self.receive, self.send)

    def run(self, app: Any) -> Driver:
        asyncio.run(self(app))
        return self

    # -- what was sent ----------------------------------------------------------------

    @property
    def start(self) -> dict[str, Any]:
        assert self.messages[0][1]["type"] == "http.response.start"
        return self.messages[0][1]

    @property
    def headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in self.start["headers"]:
            assert k.decode() not in out, f"duplicate header {k!r}"
            out[k.decode()] = v.decode()
        return out

    @property
    def bodies(self) -> list[bytes]:
        return [m["body"] for _, m in self.messages if m["type"] == "http.response.body"]

    @property
    def body(self) -> bytes:
        return b"".join(self.bodies)

    @property
    def ended(self) -> bool:
        """The response was completed (final ``more_body: False``)."""
        last = self.messages[-1][1]
        return last["type"] == "http.response.body" and not last.get("more_body", False)

    def events(self) -> list[dict[str, Any]]:
        return decode(self.body, self.headers["content-type"])


def agen_closed(gen: Any) -> bool:
    """An async generator that can run no more (``inspect.getasyncgenstate`` is 3.12+)."""
    return gen.ag_frame is None


class Probe:
    """A producer recording how it ended."""

    def __init__(self) -> None:
        self.produced = 0
        self.ended: str | None = None  # "finished", "GeneratorExit", "CancelledError"
        self.thread: str | None = None

    async def agen(self, events: list[dict[str, Any]], delay: float = 0.0) -> AsyncIterator[Any]:
        try:
            for event in events:
                if delay:
                    await asyncio.sleep(delay)
                self.produced += 1
                yield event
            self.ended = "finished"
        except BaseException as exc:
            self.ended = type(exc).__name__
            raise

    def gen(self, events: list[dict[str, Any]], delay: float = 0.0) -> Iterator[Any]:
        self.thread = threading.current_thread().name
        try:
            for event in events:
                if delay:
                    time.sleep(delay)
                self.produced += 1
                yield event
            self.ended = "finished"
        except BaseException as exc:
            self.ended = type(exc).__name__
            raise

    async def forever(self, delay: float = 0.0) -> AsyncIterator[Any]:
        try:
            yield RUN[0]
            while True:
                if delay:
                    await asyncio.sleep(delay)
                self.produced += 1
                yield DELTA
        except BaseException as exc:
            self.ended = type(exc).__name__
            raise


# -- headers and negotiation ----------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        (None, SSE_MEDIA_TYPE),
        ("*/*", SSE_MEDIA_TYPE),
        (SSE_MEDIA_TYPE, SSE_MEDIA_TYPE),
        (PROTO_MEDIA_TYPE, PROTO_MEDIA_TYPE),
        (f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE};q=0.9", PROTO_MEDIA_TYPE),
        ("application/json", SSE_MEDIA_TYPE),  # not strict: SSE fallback
    ],
)
def test_headers_and_negotiation(accept, content_type) -> None:
    d = Driver(accept=accept).run(EventStreamResponse(RUN))
    assert d.start["status"] == 200
    assert d.headers == {
        "content-type": content_type,
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
        "vary": "accept",
        "connection": "keep-alive",
    }
    assert d.events() == RUN
    assert d.ended


@pytest.mark.parametrize("version", ["1.0", "2", "3"])
def test_no_connection_header_outside_http11(version) -> None:
    d = Driver(http_version=version).run(EventStreamResponse(RUN))
    assert "connection" not in d.headers
    assert d.events() == RUN


def test_no_keep_alive_when_the_client_asked_to_close() -> None:
    d = Driver(headers=[(b"connection", b"close")]).run(EventStreamResponse(RUN))
    assert "connection" not in d.headers


def test_negotiates_from_request_or_accept_at_construction() -> None:
    class Request:
        headers = {"accept": PROTO_MEDIA_TYPE}  # noqa: RUF012

    r = EventStreamResponse(RUN, Request())
    assert r.content_type == PROTO_MEDIA_TYPE
    assert r.media_type == PROTO_MEDIA_TYPE
    assert EventStreamResponse(RUN, accept=SSE_MEDIA_TYPE).content_type == SSE_MEDIA_TYPE
    lazy = EventStreamResponse(RUN)
    assert lazy.content_type is None
    d = Driver(accept=PROTO_MEDIA_TYPE).run(lazy)  # negotiated from the scope
    assert lazy.content_type == PROTO_MEDIA_TYPE
    assert d.events() == RUN
    # The constructor's answer wins over the scope.
    d = Driver(accept=PROTO_MEDIA_TYPE).run(EventStreamResponse(RUN, accept=SSE_MEDIA_TYPE))
    assert d.headers["content-type"] == SSE_MEDIA_TYPE


def test_custom_headers_and_status() -> None:
    response = EventStreamResponse(
        RUN, status_code=201, headers={"X-Run": "r", "Cache-Control": "no-store"}
    )
    d = Driver().run(response)
    assert d.start["status"] == 201
    assert d.headers["x-run"] == "r"
    assert d.headers["cache-control"] == "no-store"
    for name in ("Content-Type", "content-length", "Transfer-Encoding"):
        with pytest.raises(ValueError, match="set by EventStreamResponse"):
            EventStreamResponse(RUN, headers={name: "x"})


def test_strict_answers_406_and_closes_the_producer() -> None:
    probe = Probe()
    gen = probe.agen(RUN)
    d = Driver(accept="application/json").run(EventStreamResponse(gen, strict=True))
    assert d.start["status"] == 406
    assert d.headers["content-type"] == "text/plain; charset=utf-8"
    assert int(d.headers["content-length"]) == len(d.body)
    assert d.headers["vary"] == "accept"
    text = d.body.decode()
    assert SSE_MEDIA_TYPE in text
    assert PROTO_MEDIA_TYPE in text
    assert "'application/json'" in text
    assert agen_closed(gen)
    assert probe.produced == 0


def test_strict_accepts_what_negotiates() -> None:
    d = Driver(accept=f"{PROTO_MEDIA_TYPE};q=0.5").run(EventStreamResponse(RUN, strict=True))
    assert d.headers["content-type"] == PROTO_MEDIA_TYPE


def test_head_sends_headers_only() -> None:
    probe = Probe()
    gen = probe.gen(RUN)
    d = Driver(method="HEAD").run(EventStreamResponse(gen))
    assert d.headers["content-type"] == SSE_MEDIA_TYPE
    assert d.body == b""
    assert inspect.getgeneratorstate(gen) == inspect.GEN_CLOSED
    assert probe.produced == 0


def test_rejects_websocket_and_reuse() -> None:
    response = EventStreamResponse(RUN)
    d = Driver()
    d.scope["type"] = "websocket"
    with pytest.raises(RuntimeError, match="HTTP"):
        d.run(response)
    response = EventStreamResponse(RUN)
    Driver().run(response)
    with pytest.raises(RuntimeError, match="once"):
        Driver().run(response)


# -- the seam for a subclass that prepares before the headers ------------------------


@pytest.mark.parametrize(
    ("method", "accept", "strict", "expected"),
    [
        ("GET", None, False, True),
        ("GET", PROTO_MEDIA_TYPE, True, True),
        ("GET", "application/json", False, True),  # SSE fallback
        ("GET", "application/json", True, False),  # a 406
        ("HEAD", None, False, False),  # headers only
    ],
)
def test_streams_says_whether_the_events_will_be_streamed(method, accept, strict, expected) -> None:
    response = EventStreamResponse(RUN, strict=strict)
    scope = Driver(method=method, accept=accept).scope
    assert response.streams(scope) is expected
    if method != "HEAD":  # negotiated from the scope, as calling it would
        assert (response.content_type is not None) is expected
    scope["type"] = "websocket"
    assert response.streams(scope) is False


def test_refuse_answers_plain_text_and_closes_the_producer_unstarted() -> None:
    probe = Probe()
    gen = probe.agen(RUN)

    class Missing(EventStreamResponse):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            assert self.streams(scope)
            await self.refuse(send, 404, "no such run\n", {"Retry-After": "1"})

    response = Missing(gen)
    d = Driver().run(response)
    assert d.start["status"] == 404
    assert d.headers == {
        "content-type": "text/plain; charset=utf-8",
        "content-length": str(len(b"no such run\n")),
        "retry-after": "1",
    }
    assert d.body == b"no such run\n"
    assert d.ended
    assert agen_closed(gen)
    assert probe.produced == 0
    with pytest.raises(RuntimeError, match="once"):  # spent
        Driver().run(partial(EventStreamResponse.__call__, response))


def test_argument_validation() -> None:
    with pytest.raises(ValueError, match="keepalive"):
        EventStreamResponse(RUN, keepalive=0)
    with pytest.raises(TypeError, match="event_id"):
        EventStreamResponse(RUN, event_id=True)
    with pytest.raises(TypeError, match="event_id"):
        EventStreamResponse(RUN, event_id="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_error"):
        EventStreamResponse(RUN, on_error="ignore")  # type: ignore[arg-type]


# -- streaming ------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
@pytest.mark.parametrize("kind", ["list", "generator", "async generator", "pydantic"])
def test_ready_events_share_one_message(accept, kind) -> None:
    probe = Probe()
    if kind == "list":
        source: Any = list(RUN)
    elif kind == "generator":
        source = probe.gen(RUN)
    elif kind == "async generator":
        source = probe.agen(RUN)
    else:
        from ag_ui.core import (
            RunFinishedEvent,
            RunStartedEvent,
            TextMessageContentEvent,
            TextMessageEndEvent,
            TextMessageStartEvent,
        )

        source = [
            RunStartedEvent(thread_id="t", run_id="r"),
            TextMessageStartEvent(message_id="m", role="assistant"),
            TextMessageContentEvent(message_id="m", delta="héllo"),
            TextMessageEndEvent(message_id="m"),
            RunFinishedEvent(thread_id="t", run_id="r"),
        ]
    d = Driver(accept=accept).run(EventStreamResponse(source))
    assert d.events() == RUN
    assert d.ended
    if kind != "generator":  # (a worker thread hands events over as it makes them)
        # Nothing made the producer wait: every event and the end of the body
        # go out in one message.
        assert len(d.bodies) == 1


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_an_event_is_not_held_for_the_next(accept) -> None:
    """A producer that suspends between events (the model streams tokens): each
    event is sent as soon as it is ready, alone."""

    async def paced() -> AsyncIterator[Any]:
        for event in RUN:
            yield event
            await asyncio.sleep(0)

    d = Driver(accept=accept).run(EventStreamResponse(paced()))
    assert [decode(b, accept) for b in d.bodies] == [[e] for e in RUN] + [[]]


def test_batches_are_bounded_and_ordered() -> None:
    from agui_wire import asgi

    delta = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x" * 1000}
    events = [RUN[0], RUN[1], *[delta] * 200, RUN[3], RUN[4]]
    d = Driver(accept=PROTO_MEDIA_TYPE).run(EventStreamResponse(events))
    assert d.events() == events
    sizes = [len(b) for b in d.bodies]
    assert len(sizes) > 1
    assert max(sizes) < asgi._BATCH_BYTES + 1100  # the batch that reaches the bound ends there


def test_sync_generators_run_in_a_worker_thread_unless_told_not_to() -> None:
    probe = Probe()
    Driver().run(EventStreamResponse(probe.gen(RUN)))
    assert probe.thread != threading.current_thread().name
    probe = Probe()
    Driver().run(EventStreamResponse(probe.gen(RUN), threaded=False))
    assert probe.thread == threading.current_thread().name


def test_each_event_is_sent_when_produced() -> None:
    produced: list[float] = []

    async def timed() -> AsyncIterator[Any]:
        for event in RUN:
            await asyncio.sleep(0.05)
            produced.append(time.monotonic())
            yield event

    d = Driver()
    d.run(EventStreamResponse(timed(), keepalive=None))
    sent = [d.t0 + t for t, m in d.messages if m["type"] == "http.response.body" and m["body"]]
    assert len(sent) == len(produced) == len(RUN)
    # Each event is sent right after it is produced, not with the next or at the end.
    for i, (p, t) in enumerate(zip(produced, sent, strict=True)):
        assert 0 <= t - p < 0.03, (i, t - p)
        if i + 1 < len(produced):
            assert t < produced[i + 1]


class Stored(EncodedEvents):
    """Events encoded once, as a fan-out store hands them to many responses."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self.calls: list[bool] = []

    def data(self, binary: bool) -> bytes:
        self.calls.append(binary)
        if binary:
            return b"".join(agui_wire.encode_proto(e) for e in self.events)
        return b"".join(agui_wire.encode_sse(e, id=f"s{i}") for i, e in enumerate(self.events))

    @property
    def last_type(self) -> str | None:
        return self.events[-1]["type"]


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_encoded_events_are_written_as_they_are(accept) -> None:
    stored = Stored(RUN[1:4])
    d = Driver(accept=accept).run(EventStreamResponse([RUN[0], stored, RUN[4]], event_id=1))
    assert d.events() == RUN
    assert stored.calls == [accept == PROTO_MEDIA_TYPE]
    assert stored.data(accept == PROTO_MEDIA_TYPE) in d.body
    if accept == SSE_MEDIA_TYPE:  # its own ids; event_id numbers the other events
        assert ids(d.body) == ["1", "s0", "s1", "s2", "2"]


def test_no_run_error_after_encoded_events_that_end_the_run() -> None:
    def gen() -> Iterator[Any]:
        yield Stored(RUN)
        raise RuntimeError("after the end")

    d = Driver().run(EventStreamResponse(gen()))
    assert d.events() == RUN


def test_background_runs_after_the_stream() -> None:
    done: list[int] = []

    async def task() -> None:
        done.append(len(d.messages))

    d = Driver()
    d.run(EventStreamResponse(RUN, background=task))
    assert done == [len(d.messages)]


# -- ids ------------------------------------------------------------------------------


def ids(body: bytes) -> list[str]:
    return [line[4:].decode() for line in body.split(b"\n") if line.startswith(b"id: ")]


def test_counter_ids() -> None:
    d = Driver().run(EventStreamResponse(RUN, event_id=7))
    assert ids(d.body) == ["7", "8", "9", "10", "11"]
    assert d.events() == RUN


def test_callable_ids() -> None:
    d = Driver().run(
        EventStreamResponse(RUN, event_id=lambda e: e.get("messageId") or e.get("runId"))
    )
    assert ids(d.body) == ["r", "m", "m", "m", "r"]
    d = Driver().run(EventStreamResponse(RUN, event_id=sequential_ids()))
    assert ids(d.body) == ["1", "2", "3", "4", "5"]


def test_binary_has_no_ids() -> None:
    calls = []
    d = Driver(accept=PROTO_MEDIA_TYPE).run(EventStreamResponse(RUN, event_id=calls.append))
    assert d.events() == RUN
    assert calls == []


def test_last_event_id() -> None:
    assert last_event_id({"type": "http", "headers": [(b"last-event-id", b"42")]}) == "42"
    assert last_event_id({"type": "http", "headers": [(b"Last-Event-ID", b"x y")]}) == "x y"
    assert last_event_id({"type": "http", "headers": []}) is None

    class Request:
        headers = {"last-event-id": "9"}  # noqa: RUF012

    assert last_event_id(Request()) == "9"


# -- keep-alive ------------------------------------------------------------------------


def test_keepalive_comments_while_the_producer_is_idle() -> None:
    events = RUN[:2]
    d = Driver().run(EventStreamResponse(Probe().agen(events, delay=0.35), keepalive=0.1))
    sent = [(t, m["body"]) for t, m in d.messages[1:]]
    pings = [t for t, body in sent if body == KEEPALIVE_COMMENT]
    writes = [t for t, body in sent if body and body != KEEPALIVE_COMMENT]
    assert len(writes) == 2
    # ~3 pings in each 0.35 s gap (0.1, 0.2, 0.3 after the last write); never
    # sooner than the interval after a write; none after the end of the body.
    assert 4 <= len(pings) <= 6
    assert d.ended
    last = 0.0
    for t, body in sent:
        if body == KEEPALIVE_COMMENT:
            assert t - last >= 0.1 - 0.002, (t, last)
            assert t - last < 0.1 + 0.08, (t, last)
        last = t
    assert decode(d.body, SSE_MEDIA_TYPE) == events


def test_no_keepalive_while_events_flow() -> None:
    d = Driver().run(EventStreamResponse(Probe().agen(RUN * 4, delay=0.02), keepalive=0.1))
    assert KEEPALIVE_COMMENT not in d.bodies


@pytest.mark.parametrize(
    ("accept", "keepalive"), [(PROTO_MEDIA_TYPE, 0.05), (SSE_MEDIA_TYPE, None)]
)
def test_no_keepalive_for_binary_or_when_off(accept, keepalive) -> None:
    d = Driver(accept=accept).run(
        EventStreamResponse(Probe().agen(RUN[:2], delay=0.2), keepalive=keepalive)
    )
    assert len(d.bodies) == 2  # two events, the end with the second
    assert d.events() == RUN[:2]


# -- disconnects -------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_http_disconnect_while_the_producer_awaits(accept) -> None:
    probe = Probe()
    gen = probe.forever(delay=0.05)
    d = Driver(accept=accept, disconnect_after=0.3)
    t0 = time.monotonic()
    d.run(EventStreamResponse(gen, keepalive=0.02))
    assert time.monotonic() - t0 < 0.5
    assert probe.ended == "CancelledError"  # at the await it was suspended in
    assert agen_closed(gen)
    assert 1 <= probe.produced <= 7
    assert not d.ended  # nothing more is sent to a gone client


def test_http_disconnect_while_send_blocks() -> None:
    """A client that stops reading, then leaves: the producer is at its yield."""
    probe = Probe()
    gen = probe.forever()
    d = Driver(disconnect_after=0.1)
    release = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        d.messages.append((0.0, message))
        if len(d.messages) > 3:
            await release.wait()  # the transport's buffer is full: backpressure

    async def main() -> None:
        d.t0 = time.monotonic()
        await EventStreamResponse(gen)(d.scope, d.receive, send)

    asyncio.run(main())
    assert probe.ended == "GeneratorExit"  # aclose() at its yield
    # Two batches were sent; the third one's send blocked, and nothing was
    # produced after it.
    assert len(d.bodies) == 3
    assert probe.produced == len(decode(d.body, SSE_MEDIA_TYPE)) - 1  # (RUN_STARTED)


def test_send_failing_stops_the_producer() -> None:
    probe = Probe()
    gen = probe.forever()
    d = Driver(fail_send_after=5)
    d.run(EventStreamResponse(gen))  # returns normally: a gone client is no server error
    assert probe.ended == "GeneratorExit"
    assert len(d.bodies) == 5
    # The batch whose send failed, and no more.
    sent = len(decode(d.body, SSE_MEDIA_TYPE)) - 1
    assert 0 < probe.produced - sent <= BATCH_EVENTS


BATCH_EVENTS = _BATCH_BYTES // len(agui_wire.encode_sse(DELTA)) + 1  # forever()'s in a batch


def test_disconnect_stops_a_producer_that_never_suspends() -> None:
    """A server whose send does not suspend (uvicorn after a disconnect) and a
    producer that never awaits: the stream still yields to notice the disconnect."""
    probe = Probe()
    gen = probe.forever(delay=0.0)
    d = Driver(disconnect_after=0.0)
    d.run(EventStreamResponse(gen))
    assert probe.ended in ("CancelledError", "GeneratorExit")
    assert probe.produced <= 2 * BATCH_EVENTS  # it yields to the loop after each batch


def test_disconnect_closes_a_sync_generator_after_its_step() -> None:
    probe = Probe()
    events = [RUN[0]] + [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}] * 50
    gen = probe.gen(events, delay=0.05)
    Driver(disconnect_after=0.2).run(EventStreamResponse(gen))
    assert probe.ended == "GeneratorExit"
    assert inspect.getgeneratorstate(gen) == inspect.GEN_CLOSED
    assert probe.produced < 10


def test_server_cancelling_the_response_closes_the_producer() -> None:
    probe = Probe()
    gen = probe.forever(delay=0.05)

    async def main() -> None:
        d = Driver()
        task = asyncio.ensure_future(d(EventStreamResponse(gen)))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert probe.ended == "CancelledError"
    assert agen_closed(gen)


def test_client_gone_before_the_headers() -> None:
    probe = Probe()
    gen = probe.agen(RUN)
    d = Driver(fail_send_after=-1)  # every send fails

    async def send(message: dict[str, Any]) -> None:
        raise OSError("gone")

    async def main() -> None:
        await EventStreamResponse(gen)(d.scope, d.receive, send)

    asyncio.run(main())
    assert agen_closed(gen)
    assert probe.produced == 0


# -- producer errors ---------------------------------------------------------------------


async def failing(n: int, exc: Exception) -> AsyncIterator[Any]:
    for event in RUN[:n]:
        yield event
    raise exc


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_producer_error_becomes_run_error(accept, caplog) -> None:
    with caplog.at_level(logging.ERROR, logger="agui_wire.asgi"):
        d = Driver(accept=accept).run(EventStreamResponse(failing(3, KeyError("secret"))))
    assert d.events() == [
        *RUN[:3],
        {
            "type": "RUN_ERROR",
            "message": "the agent failed while producing events",
            "code": "INTERNAL_ERROR",
        },
    ]
    assert "secret" not in d.body.decode("utf-8", "replace")  # no exception text leaks
    assert d.ended  # a clean end of body, after the RUN_ERROR
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records)


def test_unencodable_event_becomes_run_error() -> None:
    events = [RUN[0], {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}]
    d = Driver(accept=PROTO_MEDIA_TYPE).run(EventStreamResponse(events))
    assert d.events()[-1]["code"] == "ENCODE_ERROR"
    assert len(d.events()) == 2
    d = Driver().run(EventStreamResponse([RUN[0], {"no": "type"}]))
    assert d.events()[-1]["code"] == "ENCODE_ERROR"


def test_no_run_error_after_the_run_ended() -> None:
    d = Driver().run(EventStreamResponse(failing(5, RuntimeError("late"))))
    assert d.events() == RUN
    assert d.ended


def test_on_error_callable() -> None:
    def handler(exc: Exception) -> dict[str, Any] | None:
        if isinstance(exc, ValueError):
            return {"type": "RUN_ERROR", "message": str(exc), "code": "BAD_INPUT"}
        return None

    d = Driver().run(EventStreamResponse(failing(1, ValueError("bad city")), on_error=handler))
    assert d.events() == [RUN[0], {"type": "RUN_ERROR", "message": "bad city", "code": "BAD_INPUT"}]
    d = Driver().run(EventStreamResponse(failing(1, KeyError("k")), on_error=handler))
    assert d.events() == [RUN[0]]
    assert d.ended

    def broken(exc: Exception) -> Any:
        raise RuntimeError("handler bug")

    d = Driver().run(EventStreamResponse(failing(1, KeyError("k")), on_error=broken))
    assert d.events() == [RUN[0]]
    assert d.ended


def test_on_error_raise_propagates() -> None:
    d = Driver()
    with pytest.raises(KeyError, match="k"):
        d.run(EventStreamResponse(failing(2, KeyError("k")), on_error="raise"))
    assert len(d.events()) == 2
    assert not d.ended  # the server aborts the response: clients see a cut stream


def test_oserror_from_the_producer_is_not_a_disconnect() -> None:
    d = Driver()
    with pytest.raises(ConnectionRefusedError):
        d.run(EventStreamResponse(failing(1, ConnectionRefusedError()), on_error="raise"))
    d = Driver().run(EventStreamResponse(failing(1, ConnectionRefusedError())))
    assert d.events()[-1]["type"] == "RUN_ERROR"


def test_sync_producer_error() -> None:
    def gen() -> Iterator[Any]:
        yield RUN[0]
        raise RuntimeError("boom")

    d = Driver().run(EventStreamResponse(gen()))
    assert [e["type"] for e in d.events()] == ["RUN_STARTED", "RUN_ERROR"]


# -- frameworks -----------------------------------------------------------------------


def make_app() -> Any:
    app = FastAPI()

    @app.post("/agent")
    async def agent(request: Request) -> EventStreamResponse:
        await request.json()
        return EventStreamResponse(
            Probe().agen(RUN), request, strict=True, event_id=1, headers={"x-agent": "a"}
        )

    @app.post("/lazy")
    async def lazy() -> EventStreamResponse:
        return EventStreamResponse(RUN)

    return app


def test_fastapi_with_starlette_testclient() -> None:
    from starlette.responses import Response

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Starlette 1.x: "install httpx2 instead"
        from starlette.testclient import TestClient

        client = TestClient(make_app())
    assert issubclass(EventStreamResponse, Response)
    for accept, content_type in [(None, SSE_MEDIA_TYPE), (PROTO_MEDIA_TYPE, PROTO_MEDIA_TYPE)]:
        headers = {} if accept is None else {"accept": accept}
        for path in ("/agent", "/lazy"):
            r = client.post(path, json={}, headers=headers)
            assert r.status_code == 200
            assert r.headers["content-type"] == content_type
            assert r.headers["cache-control"] == "no-cache, no-transform"
            assert "content-length" not in r.headers
            assert decode(r.content, r.headers["content-type"]) == RUN
    r = client.post("/agent", json={}, headers={"accept": "text/html"})
    assert r.status_code == 406
    assert PROTO_MEDIA_TYPE in r.text


def test_fastapi_with_httpx_asgi_transport() -> None:
    import httpx

    async def main() -> None:
        transport = httpx.ASGITransport(app=make_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            r = await client.post("/agent", json={}, headers={"accept": PROTO_MEDIA_TYPE})
            assert r.headers["content-type"] == PROTO_MEDIA_TYPE
            assert r.headers["x-agent"] == "a"
            assert decode(r.content, PROTO_MEDIA_TYPE) == RUN
            r = await client.post("/agent", json={})
            assert ids(r.content) == ["1", "2", "3", "4", "5"]
            r = await client.post("/agent", json={}, headers={"accept": "image/png"})
            assert r.status_code == 406

    asyncio.run(main())


def test_fastapi_background_tasks_and_header_changes() -> None:
    import httpx

    app = FastAPI()
    done: list[str] = []

    @app.post("/agent")
    async def agent(request: Request, tasks: BackgroundTasks) -> EventStreamResponse:
        tasks.add_task(done.append, "cleanup")
        response = EventStreamResponse(RUN, request)
        response.headers["x-trace"] = "abc"
        response.set_cookie("session", "s1")
        return response

    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            r = await client.post("/agent")
            assert r.headers["x-trace"] == "abc"
            assert r.cookies["session"] == "s1"
            assert r.headers["content-type"] == SSE_MEDIA_TYPE
            assert decode(r.content, SSE_MEDIA_TYPE) == RUN

    asyncio.run(main())
    assert done == ["cleanup"]


def test_plain_starlette_route() -> None:
    import httpx
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def endpoint(request: Any) -> EventStreamResponse:
        return EventStreamResponse(RUN, request)

    async def main() -> None:
        app = Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            r = await client.post("/agent", headers={"accept": PROTO_MEDIA_TYPE})
            assert decode(r.content, r.headers["content-type"]) == RUN

    asyncio.run(main())


# -- optional dependency -------------------------------------------------------------------


def test_import_without_starlette_or_httpx() -> None:
    """``import agui_wire`` (and the asgi/client modules) need neither; the
    response then is a plain ASGI app."""
    code = """
import sys
sys.modules["starlette"] = None
sys.modules["httpx"] = None
import asyncio
import agui_wire, agui_wire.asgi, agui_wire.client
assert "starlette.responses" not in sys.modules
assert agui_wire.asgi.EventStreamResponse.__mro__[1] is object
sent = []
async def receive():
    await asyncio.sleep(10)
async def send(message):
    sent.append(message)
scope = {"type": "http", "http_version": "1.1", "method": "GET", "headers": []}
events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
asyncio.run(agui_wire.asgi.EventStreamResponse(events)(scope, receive, send))
assert sent[1]["body"] == b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\\n\\n', sent
print("ok")
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert agui_wire.__name__ == "agui_wire"


# -- compression ---------------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_compress_negotiated_from_accept_encoding(coding, accept) -> None:
    from agui_wire._compression import decompressor

    async def paced() -> AsyncIterator[Any]:
        for event in RUN:
            yield event
            await asyncio.sleep(0)

    d = Driver(
        accept=accept, headers=[(b"accept-encoding", f"{coding};q=1, identity;q=0.5".encode())]
    )
    d.run(EventStreamResponse(paced(), compress=True))
    assert d.headers["content-encoding"] == coding
    assert d.headers["vary"] == "accept, accept-encoding"
    # One compressor per response, flushed per send: each send decodes on its own.
    inflate = decompressor(coding)
    plain = [inflate(b) for b in d.bodies]
    assert [decode(b, accept) for b in plain] == [[e] for e in RUN] + [[]]


def test_compress_falls_back_to_identity_and_checks_its_argument() -> None:
    d = Driver(headers=[(b"accept-encoding", b"deflate")]).run(
        EventStreamResponse(RUN, compress=True)
    )
    assert "content-encoding" not in d.headers
    assert d.headers["vary"] == "accept, accept-encoding"
    assert d.events() == RUN
    d = Driver(headers=[(b"accept-encoding", b"gzip")]).run(EventStreamResponse(RUN))
    assert "content-encoding" not in d.headers  # off unless asked for
    with pytest.raises(ValueError, match="unknown content coding"):
        EventStreamResponse(RUN, compress=["deflate"])
    with pytest.raises(TypeError, match="sequence of codings"):
        EventStreamResponse(RUN, compress="gzip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="set by EventStreamResponse"):
        EventStreamResponse(RUN, compress=True, headers={"content-encoding": "br"})


def test_compressed_keepalives_and_head() -> None:
    import zlib

    events = RUN[:2]
    gz = [(b"accept-encoding", b"gzip")]
    d = Driver(headers=gz).run(
        EventStreamResponse(Probe().agen(events, delay=0.25), keepalive=0.1, compress=["gzip"])
    )
    inflate = zlib.decompressobj(31).decompress
    plain = [inflate(b) for b in d.bodies]
    assert KEEPALIVE_COMMENT in plain
    assert decode(b"".join(plain), SSE_MEDIA_TYPE) == events
    d = Driver(method="HEAD", headers=gz).run(EventStreamResponse(RUN, compress=True))
    assert d.headers["content-encoding"] == "gzip"
    assert d.body == b""
