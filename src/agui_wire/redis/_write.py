"""The producer side: claim a run (its lease), store its events as they come,
heartbeat, and end it (the end marker; a ``RUN_ERROR`` first after a failure).

Contract: ``claim`` takes the run's lease or says why not (``None``: the run has
ended already; ``RunInProgress``: a live producer holds it), closing the events
unstarted when it will not run them. ``Producer.run`` stores each event once
(the append script skips what Redis has, so a retried job or a lost reply never
stores twice), one append in flight at a time with what was produced meanwhile
batched into the next, and raises ``LeaseLost``/``RunLost`` when the run is no
longer its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
from collections.abc import AsyncIterable, Iterable
from typing import Any, Final, Literal

from .._encoder import encode_sse
from .._streaming import Source, close_unstarted, default_error_event, event_type
from ..errors import EventTooLarge, LeaseLost, RunInProgress, RunLost, StoreError
from ..schema import DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE
from ._backend import Backend
from ._batches import PROTO
from ._keys import TERMINAL, RunKeys

logger = logging.getLogger("agui_wire.redis")

# An SSE event is at most this many times its protobuf payload (field names,
# escapes): a payload below the limit / this ratio needs no SSE encode to check.
_SSE_RATIO: Final = 16
_ID_LINE: Final = 32  # room for the ``id: n`` line a reader's SSE block carries


def admit(event: Any, index: int) -> bytes:
    """The payload of the run's event ``index``, or ``EventTooLarge`` when a reader
    could not take it (as a binary frame, or as an SSE event)."""
    payload = PROTO.encode(event)[4:]
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


async def claim(
    backend: Backend, keys: RunKeys, events: Iterable[Any] | AsyncIterable[Any]
) -> Producer | None:
    """The run's lease for a new producer of ``events`` (see the module doc)."""
    token = secrets.token_hex(12)
    run_id = keys.run_id
    try:
        code, last = await backend.script(
            run_id, backend.acquire, keys.both, [token, backend.lease_ms, backend.running_ttl_ms]
        )
    except BaseException:
        await close_unstarted(events)
        raise
    if code == 1:
        await close_unstarted(events)
        return None
    if code == 2:
        await close_unstarted(events)
        raise RunInProgress(run_id, "another producer holds the run's lease")
    return Producer(backend, keys, token, last, events)


class Producer:
    """One claimed run being published (the lease is ours)."""

    def __init__(
        self,
        backend: Backend,
        keys: RunKeys,
        token: str,
        stored: int,
        events: Iterable[Any] | AsyncIterable[Any],
    ) -> None:
        self.backend = backend
        self.run_id = keys.run_id
        self.token = token
        self.stored = stored  # events Redis acknowledged
        self.events = events
        self.lost: StoreError | None = None
        self.keys = keys.both
        self.renewed = -math.inf  # loop time the lease was last renewed (sent)

    def _check(self, code: int, last: int) -> int:
        if code == 0:
            self.stored = last
            return last
        if code == 3:
            raise RunLost(
                self.run_id,
                f"Redis holds {last} events of the run, {self.stored} were acknowledged "
                "(Redis restarted without persistence?)",
            )
        raise LeaseLost(
            self.run_id,
            "the run was ended by its lease expiring" if code == 1 else "the lease is not ours",
        )

    async def append(self, first: int, payloads: list[bytes]) -> None:
        backend = self.backend
        self.renewed = asyncio.get_running_loop().time()  # Redis renews it no earlier
        code, last = await backend.script(
            self.run_id,
            backend.append,
            self.keys,
            [
                self.token,
                backend.lease_ms,
                backend.running_ttl_ms,
                backend.maxlen or 0,
                self.stored,
                first,
                *payloads,
            ],
        )
        self._check(code, last)

    async def _finish(self, reason: str) -> None:
        backend = self.backend
        code, last = await backend.script(
            self.run_id,
            backend.finish,
            self.keys,
            [self.token, backend.ttl_ms, self.stored, reason],
        )
        self._check(code, last)

    async def _heartbeat(self, main: asyncio.Task[Any]) -> None:
        """Renew the lease ``lease / 3`` after it was last renewed: an append renews
        it too, so a run that produces more often than that sends no renewals."""
        backend = self.backend
        loop = asyncio.get_running_loop()
        while True:
            wait = self.renewed + backend.lease / 3 - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            self.renewed = loop.time()
            try:
                code, last = await backend.script(
                    self.run_id,
                    backend.renew,
                    self.keys,
                    [self.token, backend.lease_ms, backend.running_ttl_ms, self.stored],
                )
                if code != 0:
                    self._check(code, last)
            except StoreError as exc:
                self.lost = exc
                main.cancel()
                return

    async def run(self) -> int:
        main = asyncio.current_task()
        assert main is not None
        self.renewed = asyncio.get_running_loop().time()  # by the claim
        heartbeat = asyncio.ensure_future(self._heartbeat(main))
        source = Source(self.events, None, asyncio.get_running_loop())
        skip = self.stored  # a retried run: these are stored already
        writer = _Writer(self, skip + 1)
        count = 0
        last: Any = None
        try:
            try:
                while True:
                    try:
                        event = await source.next()
                    except StopAsyncIteration:
                        break
                    count += 1
                    if count > skip:
                        await writer.add(admit(event, count))
                    last = event
                await writer.drain()
                await self._finish("finished")
                return count
            except asyncio.CancelledError:
                if self.lost is not None:
                    raise self.lost from None
                await self._end_with(writer, last, "cancelled", None)
                raise
            except StoreError:
                raise
            except Exception as exc:
                await self._end_with(writer, last, "failed", exc)
                raise
        finally:
            heartbeat.cancel()
            writer.cancel()
            await source.close()

    async def _end_with(
        self,
        writer: _Writer,
        last: Any,
        reason: Literal["cancelled", "failed"],
        exc: Exception | None,
    ) -> None:
        """End the run after a failure: what was produced, a RUN_ERROR, the end."""
        try:
            with contextlib.suppress(Exception):  # the RUN_ERROR follows what Redis has
                await writer.drain()
            if event_type(last) not in TERMINAL:
                if exc is None:
                    error = {
                        "type": "RUN_ERROR",
                        "message": "the run was cancelled on the server",
                        "code": "CANCELLED",
                    }
                else:
                    error = default_error_event(exc)
                await self.append(self.stored + 1, [PROTO.encode(error)[4:]])
            await self._finish(reason)
        except Exception as err:
            logger.error("could not end run %r after a failure", self.run_id, exc_info=err)


class _Writer:
    """The producer's appends: one in flight at a time; what is produced meanwhile
    goes in the next one, started as soon as the previous returns (a burst costs
    one round trip per batch, a paced run one per event, and nothing waits for a
    later event). An append carries at most ``batch`` events and ``page_bytes``
    (one event at least); ``add`` waits while that much is queued."""

    def __init__(self, producer: Producer, first: int) -> None:
        self.producer = producer
        self.first = first  # the index of pending[0]
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    async def add(self, payload: bytes) -> None:
        if self.error is not None:
            raise self.error
        self.pending.append(payload)
        self.pending_bytes += len(payload)
        if self.task is None:
            self._start()
        backend = self.producer.backend
        while self.task is not None and (
            len(self.pending) >= backend.batch or self.pending_bytes >= backend.page_bytes
        ):
            await asyncio.wait({self.task})
            if self.error is not None:
                raise self.error

    def _start(self) -> None:
        backend = self.producer.backend
        size = count = 0
        for payload in self.pending:  # one page: ``batch`` events, ``page_bytes``
            if count and (count >= backend.batch or size + len(payload) > backend.page_bytes):
                break
            size += len(payload)
            count += 1
        payloads, self.pending = self.pending[:count], self.pending[count:]
        self.pending_bytes -= size
        first = self.first
        self.first += len(payloads)
        self.task = asyncio.ensure_future(self.producer.append(first, payloads))
        self.task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.task = None
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self.error = error
        elif self.pending:
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
