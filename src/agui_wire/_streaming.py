"""The streaming machinery ``asgi`` and the run store (``agui_wire.redis``) share.

Strategy: what both the ASGI response and the run store's producer/response
need, and nothing that writes HTTP: the ASGI type aliases, reading a header
from a scope, the producer as one async iterator (``Source``: async iterables
as they are, sync ones inline or in a worker thread) and how it is closed,
the event a failed producer ends its stream with, ``EncodedEvents``
(pre-encoded batches, public through ``agui_wire.asgi``), the binary
keep-alive event (which ``agui_wire.client`` drops), and the names of the
headers a resumable response carries (which ``agui_wire.client`` reads).

Contract: private to the package; ``agui_wire.asgi`` re-exports only
``EncodedEvents`` and ``KEEPALIVE_EVENT``. Failures while closing a producer
are logged on the logger of the stream's owner, which it passes in
(``agui_wire.asgi`` for ``EventStreamResponse``, ``agui_wire.redis`` for the run
store's producer), never raised: this module serves both and logs as neither.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import threading
from collections import deque
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
    Sequence,
)
from typing import Any, Final, Protocol

from ._decoder import decode_proto
from .errors import EncodeError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
EventSource = Iterable[Any] | AsyncIterable[Any]

TERMINAL: Final = frozenset({"RUN_FINISHED", "RUN_ERROR"})
#: The event a binary stream's keep-alive is (``EventStreamResponse(binary_keepalive=True)``):
#: a ``CUSTOM`` event of this reserved name, which ``agui_wire.client`` drops.
KEEPALIVE_NAME: Final = "agui_wire.keepalive"
KEEPALIVE_EVENT: Final[Mapping[str, Any]] = {"type": "CUSTOM", "name": KEEPALIVE_NAME, "value": {}}


#: The headers of a resumable response (``agui_wire.redis``'s ``RunStore.response``):
#: the body continues the run after event ``AFTER_HEADER``, once its first
#: ``SNAPSHOT_HEADER`` events (a compact prefix) are read; ``agui_wire.client``
#: counts from them to reconnect (binary frames carry no id).
AFTER_HEADER: Final = "agui-after"
SNAPSHOT_HEADER: Final = "agui-snapshot-events"


def is_keepalive(event: Mapping[str, Any]) -> bool:
    """Whether a decoded event is the binary keep-alive (not an event of the run)."""
    return event.get("name") == KEEPALIVE_NAME and event.get("type") == "CUSTOM"


_AHEAD: Final = 256  # events a threaded sync producer may run ahead of the socket
_END: Final = object()  # end of a sync producer


class HasHeaders(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


def scope_header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


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

    def decoded(self) -> Sequence[Mapping[str, Any]]:
        """The events, decoded: what telemetry counts (asked only while it records).
        By default decoded from the binary frames; a subclass holding them decoded
        returns those."""
        return decode_proto(self.data(True), unknown_events="raw")


def event_type(event: Any) -> Any:
    if type(event) is dict:  # (most events: no ABC checks, a producer's per-event cost)
        return event.get("type")
    if isinstance(event, EncodedEvents):
        return event.last_type
    if isinstance(event, Mapping):
        return event.get("type")
    return getattr(event, "type", None)


def default_error_event(exc: Exception) -> dict[str, Any]:
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


async def close_unstarted(events: EventSource, logger: logging.Logger) -> None:
    """Close a producer that will never be iterated (a generator holds resources);
    a failure to is logged on ``logger``."""
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


class _Raised:
    """An exception a threaded producer raised, queued after its events."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Source:
    """The producer as one async iterator, ``events`` (``next()`` awaits its next
    event; ``StopAsyncIteration`` at the end), and ``close()`` to stop it.

    An async iterable is used as it is. A sync one is wrapped: a collection (or
    ``threaded=False``) is iterated inline; otherwise the producer runs ahead in
    a worker thread by up to ``_AHEAD`` events into a queue that the wrapper
    drains, waiting only when it is empty (so events the thread made while the
    last batch was written go out together).
    """

    def __init__(
        self,
        events: EventSource,
        threaded: bool | None,
        loop: asyncio.AbstractEventLoop,
        logger: logging.Logger,
    ) -> None:
        self.loop = loop
        self.logger = logger  # the owner's: where a failure to close is logged
        self.done = False  # sync producers: exhausted or failed (nothing to close)
        self.aiter: AsyncIterator[Any] | None = None  # the producer's own
        self.iter: Iterator[Any] | None = None
        # threaded sync producers
        self.lock: threading.Lock | None = None  # one step at a time; close() after it
        self.queue: deque[Any] = deque()
        self.job: asyncio.Future[None] | None = None  # the worker thread's run
        self.waiter: asyncio.Future[None] | None = None
        self.stop = False
        self.events: AsyncIterator[Any]
        if isinstance(events, AsyncIterable):
            self.events = self.aiter = aiter(events)
        else:
            self.iter = iter(events)
            if threaded is None:
                threaded = not isinstance(events, Collection)
            if threaded:
                self.lock = threading.Lock()
                self.events = self._threaded()
            else:
                self.events = self._inline()
        self.next: Callable[[], Awaitable[Any]] = self.events.__anext__

    async def _inline(self) -> AsyncIterator[Any]:
        assert self.iter is not None
        try:
            for event in self.iter:
                yield event
        finally:
            self.done = not self.stop  # exhausted or raised (a generator that raised is done)

    # -- sync iterables, in a worker thread ----------------------------------------------

    async def _threaded(self) -> AsyncIterator[Any]:
        queue = self.queue
        while True:
            if len(queue) < _AHEAD // 2:
                self._start()
            if not queue:
                waiter = self.waiter = self.loop.create_future()
                try:
                    if not queue:  # (an event queued before the waiter was set)
                        await waiter
                finally:
                    self.waiter = None
                continue
            event = queue.popleft()
            if event is _END:
                return
            if type(event) is _Raised:
                raise event.exc
            yield event

    def _run(self) -> None:
        """The worker thread: steps the producer while the queue has room."""
        assert self.iter is not None
        assert self.lock is not None
        queue = self.queue
        with self.lock:
            while not self.stop and len(queue) < _AHEAD:
                try:
                    event: Any = next(self.iter, _END)
                except BaseException as exc:
                    event = _Raised(exc)
                queue.append(event)
                if self.waiter is not None:  # set before the loop looked at the queue
                    self.loop.call_soon_threadsafe(self._wake)
                if event is _END or type(event) is _Raised:
                    self.done = True
                    return

    def _wake(self, _job: object = None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _start(self) -> None:
        job = self.job
        if (job is None or job.done()) and not self.done and not self.stop:
            job = self.job = self.loop.run_in_executor(None, self._run)
            job.add_done_callback(self._wake)  # it stopped: the queue is full or ended

    def _close_sync(self) -> None:
        assert self.lock is not None
        with self.lock:  # after a step still running in a worker thread
            close = getattr(self.iter, "close", None)
            if close is not None:
                close()

    # -- closing -------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop the producer: ``aclose()`` an async generator, ``close()`` a sync one."""
        self.stop = True
        try:
            if self.aiter is None:
                await self.events.aclose()  # type: ignore[attr-defined]  # our wrapper
                aclose = None
            else:
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
            self.logger.error("closing the AG-UI event producer failed", exc_info=exc)
