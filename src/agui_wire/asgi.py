"""Serving AG-UI event streams from ASGI apps: ``EventStreamResponse``.

Strategy: one pure-ASGI callable per response, run on asyncio. Negotiation goes
through ``EventEncoder`` (from the ``request``/``accept`` given, else from the
scope when called). Headers go out at once; then a *sender* task pulls from the
producer the events it has ready, encodes them and awaits one ``send``, and only
then pulls more, so the producer runs exactly as fast as the client reads (no
queue, no buffering: see "Backpressure"). Beside it, a *watcher* task awaits
``http.disconnect`` on ``receive`` and, with ``keepalive``, a *pinger* writes a
keep-alive when nothing was written for that long (never while an event write is
in flight). With Starlette installed the class subclasses
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
* Negotiation: ``EventEncoder``'s (the AG-UI 1.0 binding's rule: protobuf when
  ``Accept`` names it with q > 0; ``*/*`` alone keeps SSE unless
  ``wildcard_proto=True``; see ``_negotiation``). With
  ``strict=True`` an ``Accept`` that allows neither is answered ``406`` with a
  plain-text body naming the two types, and the producer is closed unstarted.
  ``HEAD`` gets the headers, no body, and the producer closed unstarted.
* Streaming: events the producer has ready go out together in one
  ``http.response.body`` message (up to ~32 KiB), and an event is sent as soon
  as the producer yields it when no other is ready: no timer, no added delay
  (the sender stops collecting where the producer suspends). Sync iterables
  that are not collections (generators) are advanced in the default thread pool
  (running ahead by up to 256 events) so a blocking producer cannot stall the
  event loop (``threaded=False`` advances them inline); collections and async
  iterables are iterated inline.
* Disconnect: detected either way it can surface: ``http.disconnect`` from
  ``receive`` (uvicorn reports it so and makes ``send`` a silent no-op), or
  ``send`` raising ``OSError`` (servers on ASGI spec 2.4). The producer is then
  stopped: an async generator gets ``CancelledError`` at the ``await`` it is
  suspended in, or ``aclose()`` at its ``yield``; a sync generator is
  ``close()``d once its step in progress (if any) returns. Once: its cleanup
  runs exactly once, and what that cleanup awaits is awaited for it (not
  cancelled again). The response then returns normally and logs nothing above
  DEBUG (a gone client is not a server error); background tasks still run. The
  sender yields to the loop every 16 events, so even a producer that never
  suspends notices a disconnect.
* Compression: ``compress=True`` (or a sequence of codings) negotiates gzip,
  zstd or Brotli from ``Accept-Encoding`` (``agui_wire._compression``), one
  streaming compressor per response flushed after every send, so each send
  decodes on arrival; ``vary: accept, accept-encoding``. Off by default.
* Pre-encoded batches: an item of ``events`` that is an ``EncodedEvents``
  (events encoded once for many responses, as ``agui_wire.redis`` does for
  fan-out) is written as its ``data(binary)`` bytes in one send, unchanged
  (its SSE ids are its own; ``event_id`` does not apply to it).
* Subclasses that open what their events come from before the headers go out:
  ``streams(scope)`` says whether answering ``scope`` streams the events (so a
  ``HEAD`` or a 406 opens nothing), ``refuse(send, status, text)`` answers a
  plain-text status instead, the producer closed unstarted.
* Keep-alive: SSE, ``: keep-alive\\n\\n`` after ``keepalive`` seconds without
  a write (default 15; ``None`` turns it off). The binary transport has no
  comment frame (a zero-length frame is an empty ``Event``: ``@ag-ui/client``
  1.0.0 fails the run on it), so by default a binary stream stays silent while
  the producer is idle. ``binary_keepalive=True`` (off by default) sends the
  ``CUSTOM`` event ``KEEPALIVE_EVENT`` instead (35 bytes), only inside a run:
  after an event and not after a terminal one (the reference's ``verifyEvents``
  refuses any event before ``RUN_STARTED`` or after the run's end). Subscribers
  of the reference client see it as a custom event; ``agui_wire.client`` drops it.
* Ids: ``event_id`` (SSE only; binary frames have no id field) is a callable
  ``event -> str | None`` or an int: ids counting up from it. Clients reconnect
  with ``Last-Event-ID``; ``last_event_id(request)`` reads it for the app,
  which decides where to resume.
* Producer errors (the iterable raising at any point, before its first event
  included, or an event that does not encode; also ``CancelledError`` out of
  the producer when nobody cancelled the response: a task it awaited was
  cancelled by its owner): with ``on_error="event"`` (default) the exception is
  logged (logger ``agui_wire.asgi``) and the stream ends with a ``RUN_ERROR``
  event (code ``ENCODE_ERROR`` or ``INTERNAL_ERROR``; the message does not leak
  exception text) followed by a clean end of body, so every client learns the
  run failed and why in general terms; none is added after a
  ``RUN_FINISHED``/``RUN_ERROR``. A callable ``on_error(exc) -> event | None``
  chooses the event itself (None: just end). ``on_error="raise"`` re-raises:
  the server then aborts the response (uvicorn closes the connection mid-body)
  and clients see a truncated stream; otherwise no producer failure escapes.
* Backpressure: ``send`` returns only once the server accepted the bytes; uvicorn
  awaits its transport's drain when the write buffer is above its high-water
  mark (64 KiB), so for a slow reader the kernel socket buffers fill, then the
  transport buffer, then ``send`` blocks and the producer is not advanced.
  Server memory per stream is bounded by that buffer plus one batch (and up to
  256 events a threaded sync producer made ahead).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import types
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Mapping,
    MutableMapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Final, Literal

from ._compression import CODINGS, available, compressor, negotiate_encoding
from ._encoder import EventEncoder, encode_sse
from ._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ._observe import Observation, observe, refused
from ._streaming import (
    KEEPALIVE_EVENT,
    TERMINAL,
    EncodedEvents,
    EventSource,
    HasHeaders,
    Message,
    Receive,
    Scope,
    Send,
    Source,
    close_unstarted,
    default_error_event,
    event_type,
    scope_header,
)
from .errors import NotAcceptable
from .schema import DEFAULT_MAX_DEPTH

if TYPE_CHECKING:
    from starlette.responses import Response as _Base
else:
    try:
        from starlette.responses import Response as _Base
    except ImportError:  # plain ASGI without Starlette
        _Base = object

__all__ = [
    "KEEPALIVE_COMMENT",
    "KEEPALIVE_EVENT",
    "EncodedEvents",
    "EventStreamResponse",
    "last_event_id",
    "sequential_ids",
]

logger = logging.getLogger("agui_wire.asgi")

EventIdFn = Callable[[Any], "str | None"]
ErrorHandler = Callable[[Exception], Any]

KEEPALIVE_COMMENT: Final = b": keep-alive\n\n"
_FORBIDDEN_HEADERS: Final = frozenset({"content-type", "content-length", "transfer-encoding"})
# One send carries up to about this many bytes (the batch that reaches it ends
# there): uvicorn pauses a writer above 64 KiB buffered, and a batch this size
# costs ~0.1 ms to encode, so the first event in it waits no longer than that.
_BATCH_BYTES: Final = 32 * 1024


_FULL: Final = object()  # yielded by _collect: a batch is full


@types.coroutine
def _flush() -> Generator[Any, Any, None]:
    yield _FULL


@types.coroutine
def _wait(waiting: Any) -> Generator[Any, Any, None]:
    """Hand the task what the producer's ``await`` yielded (a future, or None for
    a bare yield); what is thrown in (cancellation) is raised to the sender."""
    yield waiting


def last_event_id(source: HasHeaders | Scope) -> str | None:
    """The request's ``Last-Event-ID`` header (a Starlette request or an ASGI
    scope), or ``None`` when it has none. The app decides what it means."""
    if isinstance(source, MutableMapping):
        return scope_header(source, b"last-event-id")
    return source.headers.get("last-event-id")


def sequential_ids(start: int = 1) -> EventIdFn:
    """An ``event_id`` callable numbering events ``start``, ``start + 1``, ..."""
    counter = itertools.count(start)
    return lambda _event: str(next(counter))


class EventStreamResponse(_Base):
    """A streaming response of AG-UI events (see the module doc for the contract).

    ``events`` is an iterable or async iterable of events (dicts shaped as
    ``@ag-ui/core`` JSON, or the official SDK's pydantic events). ``request``
    (anything with ``.headers``, e.g. a Starlette ``Request``) or ``accept``
    negotiate at once, so ``content_type`` is known after construction;
    without either the scope's ``Accept`` is used when the response runs.
    ``compress``: ``True`` compresses with the best coding the client accepts
    among those installed (``agui_wire._compression.CODINGS`` order), a
    sequence of codings offers those in that order, ``False`` (default) sends
    the body as it is.
    """

    def __init__(
        self,
        events: EventSource,
        request: HasHeaders | None = None,
        *,
        accept: str | None = None,
        strict: bool = False,
        wildcard_proto: bool = False,
        keepalive: float | None = 15.0,
        binary_keepalive: bool = False,
        event_id: EventIdFn | int | None = None,
        on_error: Literal["event", "raise"] | ErrorHandler = "event",
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        background: Callable[[], Awaitable[None]] | None = None,
        threaded: bool | None = None,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = DEFAULT_MAX_DEPTH,
        compress: bool | Sequence[str] = False,
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
        self.binary_keepalive = binary_keepalive
        self._event_id = sequential_ids(event_id) if isinstance(event_id, int) else event_id
        self._on_error = on_error
        self._threaded = threaded
        self._options: dict[str, Any] = {
            "wildcard_proto": wildcard_proto,
            "lossy_numbers": lossy_numbers,
            "extra_keys": extra_keys,
            "max_depth": max_depth,
        }
        self._codings = _codings(compress)
        self.status_code = status_code
        self.background = background  # type: ignore[assignment]  # any async callable
        self._used = False
        raw: list[tuple[bytes, bytes]] = [
            (b"cache-control", b"no-cache, no-transform"),
            (b"x-accel-buffering", b"no"),
            (b"vary", b"accept, accept-encoding" if self._codings else b"accept"),
        ]
        for name, value in (headers or {}).items():
            key = name.lower()
            if key in _FORBIDDEN_HEADERS or (self._codings and key == "content-encoding"):
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

    # -- for a subclass that prepares before the headers go out ----------------------

    def streams(self, scope: Scope) -> bool:
        """Whether answering ``scope`` streams the events: an HTTP request other than
        ``HEAD`` whose ``Accept`` negotiated a transport (negotiated from the scope
        now when the response was given neither ``request`` nor ``accept``). A
        subclass that opens what its events come from before the headers go out
        asks this first: a ``HEAD`` or a 406 needs nothing opened."""
        if scope.get("type") != "http" or scope.get("method") == "HEAD":
            return False
        if not self._negotiated:
            self._negotiate(scope_header(scope, b"accept"))
        return self._encoder is not None

    async def refuse(
        self, send: Send, status: int, text: str, headers: Mapping[str, str] | None = None
    ) -> None:
        """Answer ``status`` with ``text`` as a plain-text body instead of the events,
        which are closed unstarted: for a subclass that finds, before the headers go
        out, that it cannot stream (a 404 for a run it does not know, say). The
        response is then spent; ``background`` does not run."""
        self._used = True
        refused(status)
        await close_unstarted(self._events, logger)
        body = text.encode()
        raw = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode("latin-1")),
            *(
                (k.lower().encode("latin-1"), v.encode("latin-1"))
                for k, v in (headers or {}).items()
            ),
        ]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    # -- ASGI ------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            raise RuntimeError("EventStreamResponse answers HTTP requests only")
        if self._used:
            raise RuntimeError("an EventStreamResponse can be sent only once")
        self._used = True
        if not self._negotiated:
            self._negotiate(scope_header(scope, b"accept"))
        encoder = self._encoder
        coding = None
        if self._codings:
            coding = negotiate_encoding(scope_header(scope, b"accept-encoding"), self._codings)
        streaming = False
        observation = None  # telemetry: None unless it records (agui_wire._observe)
        try:
            try:
                if encoder is None:
                    refused(406)
                    await self._send_not_acceptable(send)
                elif scope.get("method") == "HEAD":
                    await send(self._start(scope, encoder.content_type, coding))
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                else:
                    observation = observe(scope, encoder.is_binary, coding)
                    await send(self._start(scope, encoder.content_type, coding))
                    streaming = True
            except OSError:  # the client left before the headers went out
                pass
            if streaming:
                assert encoder is not None
                await _Stream(self, encoder, send, coding, observation).run(receive)
            else:
                await close_unstarted(self._events, logger)
        finally:
            if observation is not None:  # the stream ended it, unless it never started
                observation.end(not streaming, True)
        if self.background is not None:
            await self.background()

    def _start(self, scope: Scope, content_type: str, coding: str | None) -> Message:
        headers = [(b"content-type", content_type.encode("latin-1")), *self.raw_headers]
        if coding is not None:
            headers.append((b"content-encoding", coding.encode("latin-1")))
        if scope.get("http_version") == "1.1" and not any(k == b"connection" for k, _ in headers):
            connection = scope_header(scope, b"connection") or ""
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


def _codings(compress: bool | Sequence[str]) -> tuple[str, ...]:
    """The content codings a response offers (``compress=``), checked now."""
    if compress is False:
        return ()
    if compress is True:
        return available()
    if isinstance(compress, str):
        raise TypeError("compress takes True, False or a sequence of codings, not a str")
    codings = tuple(compress)
    for coding in codings:
        if coding not in CODINGS:
            raise ValueError(f"unknown content coding {coding!r}; known: {', '.join(CODINGS)}")
        if coding not in available():
            compressor(coding)  # raises CompressionUnavailable, naming the package
    return codings


class _Stream:
    """The state of one response being streamed (sender, watcher, pinger)."""

    def __init__(
        self,
        response: EventStreamResponse,
        encoder: EventEncoder,
        send: Send,
        coding: str | None,
        observation: Observation | None = None,
    ) -> None:
        self.response = response
        self.observation = observation
        self.send = send
        self.loop = asyncio.get_running_loop()
        self.time = self.loop.time
        self.binary = encoder.is_binary
        self.keepalive = response.keepalive
        self.ping = KEEPALIVE_COMMENT
        if self.binary:
            if response.binary_keepalive:
                self.ping = encoder.encode(KEEPALIVE_EVENT)
            else:
                self.keepalive = None  # silent: nothing to encode per response
        self.compressor = None if coding is None else compressor(coding)
        self.last_write = self.time()
        self.writing = False  # a body message is being sent
        self.pinging: asyncio.Future[None] | None = None  # a keep-alive is being sent
        self.finished = False  # the final body message went out (or will not)
        self.disconnected = False
        self.cancelled = False  # we cancelled the sender (a disconnect, or the server cancelled us)
        self.closing = False  # the sender is closing the producer
        self.last: Any = None  # the last event encoded (no RUN_ERROR after a terminal one)
        self.sender: asyncio.Task[None] | None = None
        id_fn = response._event_id
        if id_fn is not None and not self.binary:
            self.encode: Callable[[Any], bytes] = lambda e: encode_sse(e, id=id_fn(e))
        else:
            self.encode = encoder.encode
        if observation is not None:
            self.encode = observation.counting(self.encode)

    async def run(self, receive: Receive) -> None:
        self.last_write = self.time()
        observation = self.observation
        # the producer runs in the run's span (its own spans are children of it)
        token = None if observation is None else observation.activate()
        sender = self.sender = asyncio.ensure_future(self._produce())
        if observation is not None:
            observation.deactivate(token)
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
                self.cancelled = True
                sender.cancel()
                await asyncio.wait({sender})
            await asyncio.wait(helpers)
            for task in helpers:
                if not task.cancelled() and task.exception() is not None:
                    logger.error("AG-UI stream helper failed", exc_info=task.exception())
            if observation is not None:
                observation.end(self.disconnected, self.cancelled, self.last)
        if not sender.cancelled():
            sender.result()  # on_error="raise", or a bug: let the server see it

    # -- writing -------------------------------------------------------------------

    async def _write(self, body: bytes, more: bool = True) -> None:
        """One body message. The sender and the pinger never send at once (a
        flag each, no lock: the common path pays two attribute stores), and
        nothing goes after the final message."""
        if self.pinging is not None:
            await asyncio.wait({self.pinging})
        if not more:
            self.finished = True
        comp = self.compressor
        if comp is not None:
            body = comp.compress(body) if body else b""
            if not more:
                body += comp.finish()
        self.writing = True
        try:
            await self.send({"type": "http.response.body", "body": body, "more_body": more})
        finally:
            self.writing = False
        self.last_write = self.time()
        if self.observation is not None:
            self.observation.sent(len(body))

    def _gone(self) -> None:
        self.disconnected = True
        sender = self.sender
        if sender is not None and sender is not asyncio.current_task() and not self.closing:
            self.cancelled = True
            sender.cancel()  # not while it closes the producer: that would cut its cleanup

    # -- the three tasks -------------------------------------------------------------

    async def _produce(self) -> None:
        """The sender: drives ``_collect`` by hand (see ``_collect``) and writes
        what it gathered each time it stops."""
        source = Source(self.response._events, self.response._threaded, self.loop, logger)
        parts: list[bytes] = []
        collect = self._collect(source, parts)
        write = self._write
        thrown: BaseException | None = None
        waiting: Any = _FULL  # what collect waits on: _FULL (not in the producer) or a future
        delivered = False  # the producer got a cancellation and went on (into its cleanup?)
        try:
            while True:
                ended = False
                error: Exception | None = None
                try:
                    if thrown is None:
                        waiting = collect.send(None)
                        delivered = False
                    else:
                        waiting, thrown = collect.throw(thrown), None
                        delivered = True
                except StopAsyncIteration:
                    ended = True
                except Exception as exc:
                    error = exc
                except asyncio.CancelledError as exc:
                    if self.cancelled:
                        raise  # ours, passed through the producer: its cleanup ran
                    # The producer's own (a task or future it awaited was cancelled
                    # by someone else): a failure like any other, not our end.
                    error = RuntimeError("the event producer raised CancelledError")
                    error.__cause__ = exc
                if ended or error is not None:
                    waiting = _FULL  # collect is finished
                if self.disconnected:  # the client is gone: nobody to tell
                    if error is not None:  # not our cancellation: the producer's bug
                        logger.error(
                            "the AG-UI event producer failed while stopped", exc_info=error
                        )
                    return
                if error is not None:
                    if self.observation is not None:
                        self.observation.failed(error)
                    if self.response._on_error == "raise":
                        if parts:  # what came before the failure, then the server aborts
                            try:
                                await write(b"".join(parts))
                            except OSError:
                                self._gone()
                                return
                        raise error
                    parts += self._failed(error, self.last)
                    ended = True
                try:
                    if ended:  # the last batch and the end of the body: one message
                        await write(b"".join(parts), False)
                        return
                    if parts:
                        body = parts[0] if len(parts) == 1 else b"".join(parts)
                        parts.clear()
                        await write(body)
                except OSError:
                    self._gone()
                    return
                if waiting is _FULL:
                    # A batch reached the bound: the producer may never suspend, so
                    # let the watcher (disconnects) and the other streams run.
                    await asyncio.sleep(0)
                    continue
                try:
                    await _wait(waiting)  # what the producer awaits, as its task would
                except BaseException as exc:  # (a cancellation): the producer gets it there
                    thrown = exc
        finally:
            self.closing = True
            await _unwind(collect, waiting, parts, delivered)
            await source.close()

    async def _collect(self, source: Source, parts: list[bytes]) -> None:
        """Encode the producer's events into ``parts``, and stop (``await _flush()``)
        once they reach ``_BATCH_BYTES``. The sender steps this coroutine by hand:
        it runs until the producer suspends (its ``await`` yields a future: no
        event is ready) or the batch is full, and the sender writes ``parts``
        then. So events already available go out in one send, and an event is
        never held waiting for the next; no timer, and per event no more than a
        plain ``async for`` (no exception per event, unlike stepping
        ``__anext__`` by hand). ``StopAsyncIteration`` ends it."""
        encode = self.encode
        binary = self.binary
        observation = self.observation
        limit = _BATCH_BYTES
        size = 0
        async for event in source.events:
            if type(event) is not dict and isinstance(event, EncodedEvents):
                data = event.data(binary)
                if observation is not None:
                    observation.batch(event)
            else:
                data = encode(event)
            if not parts:  # the sender took the batch
                size = 0
            parts.append(data)
            self.last = event
            size += len(data)
            if size >= limit:
                await _flush()
        raise StopAsyncIteration

    def _failed(self, exc: Exception, last: Any) -> list[bytes]:
        """What to write after the producer failed: the ``on_error`` event, or nothing."""
        policy = self.response._on_error
        logger.error("AG-UI event producer failed; ending the stream", exc_info=exc)
        try:
            terminal = event_type(last) in TERMINAL
        except Exception:  # a batch whose type cannot be read: say the run failed anyway
            terminal = False
        if terminal:
            return []  # the run is over already: another RUN_ERROR would break the sequence
        try:
            event = default_error_event(exc) if not callable(policy) else policy(exc)
            return [] if event is None else [self.encode(event)]
        except Exception as err:
            logger.error("the on_error handler failed", exc_info=err)
            return []

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                if not self.finished:
                    self._gone()
                return

    def _may_ping(self) -> bool:
        """SSE comments go anywhere; the binary keep-alive (an event) only inside
        a run: after an event, and not after a terminal one."""
        if not self.binary:
            return True
        try:
            return self.last is not None and event_type(self.last) not in TERMINAL
        except Exception:  # a batch whose type cannot be read: stay silent
            return False

    async def _ping(self, interval: float) -> None:
        comp = self.compressor
        try:
            while True:
                wait = self.last_write + interval - self.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                if self.finished:
                    return
                if self.writing or not self._may_ping():
                    # an event write in flight (backpressure) is traffic; outside
                    # a run a binary client takes no event: wait another interval
                    self.last_write = self.time()
                    continue
                body = self.ping if comp is None else comp.compress(self.ping)
                done = self.pinging = self.loop.create_future()
                try:
                    await self.send({"type": "http.response.body", "body": body, "more_body": True})
                finally:
                    self.pinging = None
                    done.set_result(None)
                self.last_write = self.time()
                if self.observation is not None:
                    self.observation.pinged(len(body))
        except OSError:
            self._gone()


async def _unwind(
    collect: Coroutine[Any, Any, None], waiting: Any, parts: list[bytes], delivered: bool
) -> None:
    """Stop ``_collect`` (the sender is ending). Finished already (the producer
    ended, failed, or let our cancellation through, so its cleanup ran): nothing
    to do. Suspended at a full batch: closed (the producer is at its ``yield``).
    Suspended inside the producer's ``await``: what a task cancelled there gets,
    the future cancelled and ``CancelledError`` thrown in, once (not again when
    ``delivered``: it has it and awaits in its cleanup); what its cleanup awaits
    is awaited for it and the results handed back, as a task would. A producer
    that swallows the cancellation and produces another event is cancelled
    again (its events go nowhere: ``parts`` is dropped)."""
    if inspect.getcoroutinestate(collect) == inspect.CORO_CLOSED:
        return
    if waiting is _FULL:
        collect.close()
        return
    thrown: BaseException | None = None if delivered and not parts else asyncio.CancelledError()
    try:
        while True:
            parts.clear()
            if thrown is None:
                try:
                    await _wait(waiting)  # what its cleanup awaits
                except BaseException as exc:  # handed to the producer, as a task would
                    thrown = exc
            if thrown is not None and isinstance(waiting, asyncio.Future):
                waiting.cancel()
            try:
                if thrown is None:
                    waiting = collect.send(None)
                else:
                    waiting, thrown = collect.throw(thrown), None
            except (StopIteration, StopAsyncIteration, asyncio.CancelledError):
                return
            if waiting is _FULL:
                return  # at its yield: closed below
            if parts:  # it went on producing
                thrown = asyncio.CancelledError()
    except Exception as exc:
        logger.error("the AG-UI event producer failed while cancelled", exc_info=exc)
    finally:
        collect.close()
