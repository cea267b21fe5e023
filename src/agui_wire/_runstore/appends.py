"""What a producer stores, and when: each event admitted as a payload, the payloads
batched into appends.

Strategy: ``admit`` encodes an event once (its protobuf payload, as stored and as
framed for binary readers) and refuses one no reader could take. ``Appends``
keeps one append in flight at a time; what is produced meanwhile goes in the
next one, started as soon as the previous returns, so a burst costs one round
trip per batch, a paced run one per event, and nothing waits for a later event.
It knows nothing of Redis: an append is the ``send`` it is given. Telemetry
(``observe``) is looked at once an append: its stamp (``None``: nothing records)
goes with the append, for the store to keep on its last event (the readers'
delivery lag), and an append that was stored is counted with its size.

Contract: an append carries consecutive events (``first`` and its payloads), at
most ``batch`` of them and ``page_bytes`` of payload (one event at least);
while that much is queued (``full``) the producer awaits ``room()``; ``drain``
returns once everything added is stored. The first append that fails is raised
by every later ``add``, ``room`` and ``drain``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final

from .._codec.selected import encode_payload
from .._encoder import as_event_dict, encode_sse
from .._streaming import event_type
from ..errors import EventTooLarge
from ..schema import DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE
from . import observe

# An SSE event is at most this many times its protobuf payload (field names,
# escapes): a payload below the limit / this ratio needs no SSE encode to check.
_SSE_RATIO: Final = 16
_ID_LINE: Final = 48  # room for the ``id: n-g`` line a reader's SSE block carries


def admit(event: Any, index: int) -> bytes:
    """The payload of the run's event ``index``, or ``EventTooLarge`` when a reader
    could not take it (as a binary frame, or as an SSE event)."""
    payload = encode_payload(event if type(event) is dict else as_event_dict(event))
    size, limit = len(payload), DEFAULT_MAX_FRAME_SIZE
    if size <= limit and size * _SSE_RATIO + _ID_LINE > DEFAULT_MAX_EVENT_SIZE:
        size, limit = len(encode_sse(event)) + _ID_LINE, DEFAULT_MAX_EVENT_SIZE
    if size > limit:
        kind = event_type(event)
        raise EventTooLarge(
            f"event {index} is {size:,} bytes encoded, above the {limit:,} its readers "
            "accept; nothing of it was stored",
            event_type=kind if isinstance(kind, str) else None,
            index=index,
            size=size,
            limit=limit,
        )
    return payload


#: An append: the index of the first event, the payloads from it on, and its
#: stamp (ms since the epoch; ``None``: telemetry does not record); a coroutine,
#: or a future (an append with no task of its own: a ``Stored``), done once they
#: are stored.
Send = Callable[[int, list[bytes], int | None], Awaitable[None]]


class Stored(asyncio.Future[None]):
    """An append's future that tells its ``Appends`` as it settles, in the settling
    call (a future's callbacks wait for a turn of the event loop: one per event
    when the store keeps up), so the next append starts from the reply's own
    turn. ``appends`` is set by the ``Appends`` it was sent for; one settled
    before (in its send) is seen there (no ``__init__``: one per event). Its
    send keeps the append on it while it is in flight (``first``, ``payloads``,
    ``stamp``). No callback object per append: each one alive until its reply
    is an object more for the young GC to trace."""

    __slots__ = ("appends", "first", "payloads", "stamp")
    appends: Appends
    first: int
    payloads: list[bytes]
    stamp: int | None

    def set_result(self, result: None) -> None:
        asyncio.Future.set_result(self, result)  # (no ``super`` object: one per event)
        self._tell()

    def set_exception(self, exception: type | BaseException) -> None:
        asyncio.Future.set_exception(self, exception)
        self._tell()

    def cancel(self, msg: Any | None = None) -> bool:
        cancelled = super().cancel(msg)
        if cancelled:
            self._tell()
        return cancelled

    def _tell(self) -> None:
        appends = getattr(self, "appends", None)
        if appends is not None:
            del self.appends
            appends._done(self)


class Appends:
    """A producer's appends (see the module doc)."""

    def __init__(self, send: Send, first: int, batch: int, page_bytes: int) -> None:
        self.send = send
        self.batch = batch
        self.page_bytes = page_bytes
        self.first = first  # the index of pending[0]
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.task: asyncio.Future[None] | None = None
        self.sent = 0  # events in the append in flight
        self.stamp: int | None = None  # its stamp
        self.error: BaseException | None = None

    def add(self, payload: bytes) -> bool:
        """Queue ``payload`` (sent at once when no append is in flight); whether
        it is ``full`` now: then the caller awaits ``room()`` before the next (no
        coroutine per event)."""
        if self.error is not None:
            raise self.error
        self.pending.append(payload)
        self.pending_bytes += len(payload)
        if self.task is None:
            self._start()
            if self.task is None:
                return False
        return len(self.pending) >= self.batch or self.pending_bytes >= self.page_bytes

    @property
    def full(self) -> bool:
        return self.task is not None and (
            len(self.pending) >= self.batch or self.pending_bytes >= self.page_bytes
        )

    async def room(self) -> None:
        """Until fewer than ``batch`` events and ``page_bytes`` wait to be sent."""
        while self.full:
            assert self.task is not None
            await asyncio.wait({self.task})
            if self.error is not None:
                raise self.error

    def _start(self) -> None:
        payloads = self.pending
        if len(payloads) <= self.batch and self.pending_bytes <= self.page_bytes:
            self.pending, self.pending_bytes = [], 0  # (the usual case: it all goes)
        else:
            size = count = 0
            for payload in payloads:  # one page: ``batch`` events, ``page_bytes``
                if count and (count >= self.batch or size + len(payload) > self.page_bytes):
                    break
                size += len(payload)
                count += 1
            payloads, self.pending = payloads[:count], payloads[count:]
            self.pending_bytes -= size
        first = self.first
        self.first += len(payloads)
        self.sent, self.stamp = len(payloads), observe.stamp()
        sent = self.send(first, payloads, self.stamp)
        if isinstance(sent, Stored):
            self.task = sent
            if sent.done():  # settled in its send (a closed store)
                self._done(sent)
            else:
                sent.appends = self
        else:
            task = self.task = asyncio.ensure_future(sent)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[None]) -> None:
        self.task = None
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self.error = error
            return
        if self.stamp is not None:  # (None: telemetry did not record when it was sent)
            observe.appended(self.sent, self.stamp)
        if self.pending:
            self._start()

    async def drain(self) -> None:
        """Until everything added is stored (or an append failed: raised)."""
        while True:
            if self.error is not None:
                raise self.error
            if self.task is not None:
                await asyncio.wait({self.task})
            elif self.pending:
                self._start()
            else:
                return

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
