"""Serving AG-UI event streams from ASGI apps: ``EventStreamResponse``.

Strategy: one pure-ASGI callable per response, run on asyncio. Negotiation goes
through ``EventEncoder`` (from the ``request``/``accept`` given, else from the
scope when called). Headers go out at once; then a *sender* task pulls one event
from the producer, encodes it and awaits ``send``, and only then pulls the next,
so the producer runs exactly as fast as the client reads (no queue, no
buffering: see "Backpressure"). Beside it, a *watcher* task awaits
``http.disconnect`` on ``receive`` and, for SSE with ``keepalive``, a *pinger*
writes ``: keep-alive`` comments when nothing was written for that long. Sends
are serialised by a lock. With Starlette installed the class subclasses
``starlette.responses.Response``, so FastAPI and Starlette endpoints return it
as is; without Starlette it is a plain ASGI app (``import agui_wire`` never
imports Starlette).

Contract:

* Headers: ``content-type`` is exactly the negotiated type (the reference client
  compares the binary type with ``===``); ``cache-control: no-cache,
  no-transform``; ``x-accel-buffering: no``; ``vary: accept``; ``connection:
  keep-alive`` only on HTTP/1.1 when the request did not ask to close (the header
  is invalid in HTTP/2 and 3, and an HTTP/1.0 body without length is delimited by
  closing). Never ``content-length``. ``headers=`` add to or override these,
  except ``content-type``, ``content-length`` and ``transfer-encoding``.
* Negotiation: SSE unless the client prefers protobuf (``negotiation``). With
  ``strict=True`` an ``Accept`` that allows neither is answered ``406`` with a
  plain-text body naming the two types, and the producer is closed unstarted.
  ``HEAD`` gets the headers, no body, and the producer closed unstarted.
* Streaming: one ``http.response.body`` message per event, sent as soon as the
  producer yields it. Sync iterables that are not collections (generators) are
  advanced in the default thread pool so a blocking producer cannot stall the
  event loop (``threaded=False`` advances them inline); collections and async
  iterables are iterated inline.
* Disconnect: detected either way it can surface: ``http.disconnect`` from
  ``receive`` (uvicorn reports it so and makes ``send`` a silent no-op), or
  ``send`` raising ``OSError`` (servers on ASGI spec 2.4). The producer is then
  stopped: an async generator gets ``CancelledError`` at the ``await`` it is
  suspended in, or ``aclose()`` at its ``yield``; a sync generator is
  ``close()``d once its step in progress (if any) returns. The response then
  returns normally (a gone client is not a server error); background tasks
  still run. The sender yields to the loop every 16 events, so even a producer
  that never suspends notices a disconnect.
* Pre-encoded batches: an item of ``events`` that is an ``EncodedEvents``
  (events encoded once for many responses, as ``agui_wire.redis`` does for
  fan-out) is written as its ``data(binary)`` bytes in one send, unchanged
  (its SSE ids are its own; ``event_id`` does not apply to it).
* Keep-alive: SSE only, ``: keep-alive\\n\\n`` after ``keepalive`` seconds
  without a write (default 15; ``None`` turns it off). The binary transport has
  no comment frame (every frame must decode to an event, and a zero-length frame
  is an empty ``Event`` the reference rejects), so a binary stream stays silent
  while the producer is idle: binary clients need a read timeout above the
  producer's longest pause, or the app sends its own events (e.g. ``CUSTOM``).
* Ids: ``event_id`` (SSE only; binary frames have no id field) is a callable
  ``event -> str | None`` or an int: ids counting up from it. Clients reconnect
  with ``Last-Event-ID``; ``last_event_id(request)`` reads it for the app,
  which decides where to resume.
* Producer errors (the iterable raising, or an event that does not encode):
  with ``on_error="event"`` (default) the exception is logged (logger
  ``agui_wire.asgi``) and the stream ends with a ``RUN_ERROR`` event (code
  ``ENCODE_ERROR`` or ``INTERNAL_ERROR``; the message does not leak exception
  text) followed by a clean end of body, so every client learns the run failed
  and why in general terms; none is added after a ``RUN_FINISHED``/``RUN_ERROR``.
  A callable ``on_error(exc) -> event | None`` chooses the event itself (None:
  just end). ``on_error="raise"`` re-raises: the server then aborts the response
  (uvicorn closes the connection mid-body) and clients see a truncated stream.
* Backpressure: ``send`` returns only once the server accepted the bytes; uvicorn
  awaits its transport's drain when the write buffer is above its high-water
  mark (64 KiB), so for a slow reader the kernel socket buffers fill, then the
  transport buffer, then ``send`` blocks and the producer is not advanced.
  Server memory per stream is bounded by that buffer plus one event.
"""

from __future__ import annotations

import abc
import asyncio
import itertools
import logging
import threading
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from ._codec.proto_writer import DEFAULT_MAX_DEPTH
from ._encoder import EventEncoder, encode_sse
from ._negotiation import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from .errors import EncodeError, NotAcceptable

if TYPE_CHECKING:
    from starlette.responses import Response as _Base
else:
    try:
        from starlette.responses import Response as _Base
    except ImportError:  # plain ASGI without Starlette
        _Base = object

__all__ = [
    "KEEPALIVE_COMMENT",
    "EncodedEvents",
    "EventStreamResponse",
    "last_event_id",
    "sequential_ids",
]

logger = logging.getLogger("agui_wire.asgi")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
EventSource = Iterable[Any] | AsyncIterable[Any]
EventIdFn = Callable[[Any], "str | None"]
ErrorHandler = Callable[[Exception], Any]

KEEPALIVE_COMMENT: Final = b": keep-alive\n\n"
_FORBIDDEN_HEADERS: Final = frozenset({"content-type", "content-length", "transfer-encoding"})
_TERMINAL: Final = ("RUN_FINISHED", "RUN_ERROR")
_YIELD_EVERY: Final = 16  # events between forced trips to the event loop
_END: Final = object()  # end of a sync producer


class _HasHeaders(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


def _scope_header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def last_event_id(source: _HasHeaders | Scope) -> str | None:
    """The request's ``Last-Event-ID`` header (a Starlette request or an ASGI
    scope), or ``None`` when it has none. The app decides what it means."""
    if isinstance(source, MutableMapping):
        return _scope_header(source, b"last-event-id")
    return source.headers.get("last-event-id")


def sequential_ids(start: int = 1) -> EventIdFn:
    """An ``event_id`` callable numbering events ``start``, ``start + 1``, ..."""
    counter = itertools.count(start)
    return lambda _event: str(next(counter))


class EncodedEvents(abc.ABC):
    """One or more events already encoded for both transports: what a producer
    yields to write the same bytes to many responses without encoding them per
    response. Written in one send, as they are."""

    __slots__ = ()

    @abc.abstractmethod
    def data(self, binary: bool) -> bytes:
        """The bytes for the negotiated transport: binary frames, or SSE events."""

    @property
    @abc.abstractmethod
    def last_type(self) -> str | None:
        """The type of the last event (``on_error`` adds no event after a terminal one)."""


def _event_type(event: Any) -> Any:
    if isinstance(event, EncodedEvents):
        return event.last_type
    if isinstance(event, Mapping):
        return event.get("type")
    return getattr(event, "type", None)


def _default_error_event(exc: Exception) -> dict[str, Any]:
    if isinstance(exc, EncodeError):
        return {
            "type": "RUN_ERROR",
            "message": "the server produced an event it could not encode",
            "code": "ENCODE_ERROR",
        }
    return {
        "type": "RUN_ERROR",
        "message": "the agent failed while producing events",
        "code": "INTERNAL_ERROR",
    }


class EventStreamResponse(_Base):
    """A streaming response of AG-UI events (see the module doc for the contract).

    ``events`` is an iterable or async iterable of events (dicts shaped as
    ``@ag-ui/core`` JSON, or the official SDK's pydantic events). ``request``
    (anything with ``.headers``, e.g. a Starlette ``Request``) or ``accept``
    negotiate at once, so ``content_type`` is known after construction;
    without either the scope's ``Accept`` is used when the response runs.
    """

    def __init__(
        self,
        events: EventSource,
        request: _HasHeaders | None = None,
        *,
        accept: str | None = None,
        strict: bool = False,
        keepalive: float | None = 15.0,
        event_id: EventIdFn | int | None = None,
        on_error: Literal["event", "raise"] | ErrorHandler = "event",
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        background: Callable[[], Awaitable[None]] | None = None,
        threaded: bool | None = None,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        if keepalive is not None and not keepalive > 0:
            raise ValueError(f"keepalive must be a positive number of seconds, not {keepalive!r}")
        if isinstance(event_id, bool) or not (
            event_id is None or isinstance(event_id, int) or callable(event_id)
        ):
            raise TypeError(f"event_id must be a callable or an int, not {event_id!r}")
        if not (on_error in ("event", "raise") or callable(on_error)):
            raise ValueError(f"on_error must be 'event', 'raise' or a callable, not {on_error!r}")
        self._events = events
        self._strict = strict
        self.keepalive = keepalive
        self._event_id = sequential_ids(event_id) if isinstance(event_id, int) else event_id
        self._on_error = on_error
        self._threaded = threaded
        self._options: dict[str, Any] = {
            "lossy_numbers": lossy_numbers,
            "extra_keys": extra_keys,
            "max_depth": max_depth,
        }
        self.status_code = status_code
        self.background = background  # type: ignore[assignment]  # any async callable
        self._used = False
        raw: list[tuple[bytes, bytes]] = [
            (b"cache-control", b"no-cache, no-transform"),
            (b"x-accel-buffering", b"no"),
            (b"vary", b"accept"),
        ]
        for name, value in (headers or {}).items():
            key = name.lower()
            if key in _FORBIDDEN_HEADERS:
                raise ValueError(f"{name} is set by EventStreamResponse, not by headers=")
            raw = [h for h in raw if h[0] != key.encode("latin-1")]
            raw.append((key.encode("latin-1"), value.encode("latin-1")))
        self.raw_headers = raw
        self._encoder: EventEncoder | None = None
        self._negotiated = False
        self.media_type: str | None = None
        #: The accept value negotiated from (for the 406 body).
        self.accept: str | None = None
        if accept is not None or request is not None:
            if accept is None and request is not None:
                accept = request.headers.get("accept")
            self._negotiate(accept)

    # -- negotiation -----------------------------------------------------------------

    def _negotiate(self, accept: str | None) -> None:
        self._negotiated = True
        self.accept = accept
        try:
            self._encoder = EventEncoder(accept, strict=self._strict, **self._options)
        except NotAcceptable:
            self._encoder = None
        self.media_type = None if self._encoder is None else self._encoder.content_type

    @property
    def content_type(self) -> str | None:
        """The negotiated content type; ``None`` before negotiation or if not acceptable."""
        return None if self._encoder is None else self._encoder.content_type

    # -- ASGI ------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            raise RuntimeError("EventStreamResponse answers HTTP requests only")
        if self._used:
            raise RuntimeError("an EventStreamResponse can be sent only once")
        self._used = True
        if not self._negotiated:
            self._negotiate(_scope_header(scope, b"accept"))
        encoder = self._encoder
        streaming = False
        try:
            if encoder is None:
                await self._send_not_acceptable(send)
            elif scope.get("method") == "HEAD":
                await send(self._start(scope, encoder.content_type))
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await send(self._start(scope, encoder.content_type))
                streaming = True
        except OSError:  # the client left before the headers went out
            pass
        if streaming:
            assert encoder is not None
            await _Stream(self, encoder, send).run(receive)
        else:
            await _close_unstarted(self._events)
        if self.background is not None:
            await self.background()

    def _start(self, scope: Scope, content_type: str) -> Message:
        headers = [(b"content-type", content_type.encode("latin-1")), *self.raw_headers]
        if scope.get("http_version") == "1.1" and not any(k == b"connection" for k, _ in headers):
            connection = _scope_header(scope, b"connection") or ""
            if "close" not in connection.lower():
                headers.append((b"connection", b"keep-alive"))
        return {"type": "http.response.start", "status": self.status_code, "headers": headers}

    async def _send_not_acceptable(self, send: Send) -> None:
        accept = (self.accept or "")[:200]
        body = (
            "406 Not Acceptable\n\n"
            "This endpoint streams AG-UI events as text/event-stream (SSE) or as\n"
            f"{PROTO_MEDIA_TYPE} (binary protobuf frames).\n"
            f"The request's Accept header allows neither: {accept!r}\n"
            f"Send 'Accept: {SSE_MEDIA_TYPE}' or 'Accept: {PROTO_MEDIA_TYPE}'.\n"
        ).encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode("latin-1")),
            (b"vary", b"accept"),
            (b"x-content-type-options", b"nosniff"),
        ]
        await send({"type": "http.response.start", "status": 406, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    def __repr__(self) -> str:
        return f"EventStreamResponse(content_type={self.content_type!r})"


async def _close_unstarted(events: EventSource) -> None:
    """Close a producer that will never be iterated (a generator holds resources)."""
    try:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
            return
        close = getattr(events, "close", None)
        if close is not None and isinstance(events, Iterator):
            close()
    except Exception as exc:
        logger.error("closing the AG-UI event producer failed", exc_info=exc)


class _Stream:
    """The state of one response being streamed (sender, watcher, pinger)."""

    def __init__(self, response: EventStreamResponse, encoder: EventEncoder, send: Send) -> None:
        self.response = response
        self.send = send
        self.loop = asyncio.get_running_loop()
        self.sse = not encoder.is_binary
        self.keepalive = response.keepalive if self.sse else None
        self.lock = asyncio.Lock() if self.keepalive is not None else None
        self.last_write = self.loop.time()
        self.finished = False  # the final body message went out (or will not)
        self.disconnected = False
        self.closing = False  # the sender is closing the producer
        self.sender: asyncio.Task[None] | None = None
        id_fn = response._event_id
        if id_fn is not None and self.sse:
            self.encode: Callable[[Any], bytes] = lambda e: encode_sse(e, id=id_fn(e))
        else:
            self.encode = encoder.encode

    async def run(self, receive: Receive) -> None:
        self.last_write = self.loop.time()
        sender = self.sender = asyncio.ensure_future(self._produce())
        helpers = [asyncio.ensure_future(self._watch(receive))]
        if self.keepalive is not None:
            helpers.append(asyncio.ensure_future(self._ping(self.keepalive)))
        try:
            # wait() rather than await: our own cancellation must not skip the
            # producer's cleanup, which the finally below waits for.
            await asyncio.wait({sender})
        finally:
            for task in helpers:
                task.cancel()
            if not sender.done():
                sender.cancel()
                await asyncio.wait({sender})
            await asyncio.wait(helpers)
            for task in helpers:
                if not task.cancelled() and task.exception() is not None:
                    logger.error("AG-UI stream helper failed", exc_info=task.exception())
        if not sender.cancelled():
            sender.result()  # on_error="raise", or a bug: let the server see it

    # -- writing -------------------------------------------------------------------

    async def _write(self, body: bytes) -> None:
        message = {"type": "http.response.body", "body": body, "more_body": True}
        if self.lock is None:
            await self.send(message)
        else:
            async with self.lock:
                await self.send(message)
        self.last_write = self.loop.time()

    async def _finish(self) -> None:
        if self.lock is None:
            self.finished = True
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        async with self.lock:  # after any keep-alive in flight
            self.finished = True
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    def _gone(self) -> None:
        self.disconnected = True
        sender = self.sender
        if sender is not None and sender is not asyncio.current_task() and not self.closing:
            sender.cancel()  # not while it closes the producer: that would cut its cleanup

    # -- the three tasks -------------------------------------------------------------

    async def _produce(self) -> None:
        source = _Source(self.response._events, self.response._threaded, self.loop)
        next_event = source.next
        encode = self.encode
        binary = not self.sse
        send = self.send
        lock = self.lock
        time = self.loop.time
        last: Any = None
        count = 0
        try:
            while True:
                try:
                    event = await next_event()
                    data = event.data(binary) if isinstance(event, EncodedEvents) else encode(event)
                except StopAsyncIteration:
                    break
                except Exception as exc:
                    await self._failed(exc, last)
                    break
                if self.disconnected:  # a producer that swallowed our cancellation
                    return
                message = {"type": "http.response.body", "body": data, "more_body": True}
                try:
                    if lock is None:
                        await send(message)
                    else:
                        async with lock:
                            await send(message)
                        self.last_write = time()
                except OSError:
                    self._gone()
                    return
                last = event
                count += 1
                if count % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # let the watcher see a disconnect
            try:
                await self._finish()
            except OSError:
                self._gone()
        finally:
            self.closing = True
            await source.close()

    async def _failed(self, exc: Exception, last: Any) -> None:
        policy = self.response._on_error
        if policy == "raise":
            raise exc
        logger.error("AG-UI event producer failed; ending the stream", exc_info=exc)
        if _event_type(last) in _TERMINAL:
            return  # the run is over already: another RUN_ERROR would break the sequence
        try:
            event = _default_error_event(exc) if policy == "event" else policy(exc)
            if event is None:
                return
            data = self.encode(event)
        except Exception as err:
            logger.error("the on_error handler failed", exc_info=err)
            return
        try:
            await self._write(data)
        except OSError:
            self._gone()

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                if not self.finished:
                    self._gone()
                return

    async def _ping(self, interval: float) -> None:
        assert self.lock is not None
        try:
            while True:
                wait = self.last_write + interval - self.loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                async with self.lock:
                    if self.finished:
                        return
                    await self.send(
                        {"type": "http.response.body", "body": KEEPALIVE_COMMENT, "more_body": True}
                    )
                self.last_write = self.loop.time()
        except OSError:
            self._gone()


class _Source:
    """The producer behind one ``next()`` awaitable; ``StopAsyncIteration`` at the end."""

    def __init__(
        self, events: EventSource, threaded: bool | None, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.loop = loop
        self.done = False  # sync producers: exhausted or failed (nothing to close)
        self.aiter: AsyncIterator[Any] | None = None
        self.iter: Iterator[Any] | None = None
        self.lock: threading.Lock | None = None
        self.next: Callable[[], Awaitable[Any]]
        if isinstance(events, AsyncIterable):
            self.aiter = aiter(events)
            self.next = self.aiter.__anext__  # no wrapper on the common path
        else:
            self.iter = iter(events)
            if threaded is None:
                threaded = not isinstance(events, Collection)
            if threaded:
                self.lock = threading.Lock()
            self.next = self._next_sync

    async def _next_sync(self) -> Any:
        try:
            if self.lock is not None:
                event = await self.loop.run_in_executor(None, self._step)
            else:
                assert self.iter is not None
                event = next(self.iter, _END)
        except Exception:
            self.done = True  # a generator that raised is finished
            raise
        # (CancelledError: a step may still be running in its thread; close()
        # waits for it, then closes the generator.)
        if event is _END:
            self.done = True
            raise StopAsyncIteration
        return event

    def _step(self) -> Any:
        assert self.lock is not None
        assert self.iter is not None
        with self.lock:
            return next(self.iter, _END)

    def _close_sync(self) -> None:
        assert self.lock is not None
        with self.lock:  # after a step still running in a worker thread
            close = getattr(self.iter, "close", None)
            if close is not None:
                close()

    async def close(self) -> None:
        """Stop the producer: ``aclose()`` an async generator, ``close()`` a sync one."""
        try:
            if self.aiter is not None:
                aclose = getattr(self.aiter, "aclose", None)
                if aclose is not None:
                    await aclose()
            elif not self.done:
                if self.lock is not None:
                    await self.loop.run_in_executor(None, self._close_sync)
                else:
                    close = getattr(self.iter, "close", None)
                    if close is not None:
                        close()
        except Exception as exc:
            logger.error("closing the AG-UI event producer failed", exc_info=exc)
