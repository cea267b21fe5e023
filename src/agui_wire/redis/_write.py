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
from collections import deque
from collections.abc import AsyncIterable, Iterable
from typing import Any, Final, Literal

from .._apply import Compactor
from .._codec.backend import encode_payload, frame
from .._decoder import decode_proto
from .._encoder import as_event_dict, encode_sse
from .._streaming import TERMINAL, Source, close_unstarted, default_error_event, event_type
from ..errors import (
    EventTooLarge,
    LeaseLost,
    RunAbandoned,
    RunInProgress,
    RunLost,
    RunReplaced,
    StoreCorrupted,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from ..schema import DEFAULT_MAX_EVENT_SIZE, DEFAULT_MAX_FRAME_SIZE
from ._backend import Backend
from ._batches import PROTO
from ._keys import PAYLOAD, STORE_FULL, RunKeys, new_generation

logger = logging.getLogger("agui_wire.redis")

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


async def claim(
    backend: Backend,
    keys: RunKeys,
    events: Iterable[Any] | AsyncIterable[Any],
    replay: bool,
) -> Producer | int:
    """The run's lease for a new producer of ``events`` (see the module doc), or the
    number of events of a run that has ended already."""
    proposed = new_generation()
    token = f"{proposed}:{secrets.token_hex(12)}"
    try:
        await backend.ready(keys)
        reply = await backend.script(
            keys,
            backend.acquire,
            keys.both,
            [token, backend.lease_ms, backend.running_ttl_ms, proposed, "1" if replay else "0"],
        )
        code, last = int(reply[0]), int(reply[1])
        if code == 8:  # its producer vanished: end the run for it, as a reader would
            await _abandon(backend, keys, last)
    except BaseException:
        await close_unstarted(events)
        raise
    if code != 0:
        await close_unstarted(events)
    if code == 1:
        if bytes(reply[2]) == b"lease-expired":
            raise RunAbandoned(keys.run_id, ABANDONED)
        return last
    if code == 2:
        raise RunInProgress(keys.run_id, "another producer holds the run's lease")
    if code == 8:
        raise RunAbandoned(keys.run_id, ABANDONED)
    return Producer(backend, keys, token, last, int(reply[2]), events)


ABANDONED: Final = (
    "its producer vanished without ending it (the lease expired): the run was ended "
    "with RUN_ERROR (LEASE_EXPIRED) and is not produced again; a producer that "
    "replays the run deterministically passes replay=True to continue it"
)


async def _abandon(backend: Backend, keys: RunKeys, last: int) -> None:
    """End a run whose producer vanished (no lease) with RUN_ERROR, as a reader's
    lease check does (the EXPIRE script: a live lease meanwhile leaves it)."""
    top = await backend.top(keys)
    if top is None:
        return
    n, seq, fields = top
    terminal = False
    if n == last and seq % 2 == 0 and PAYLOAD in fields:
        with contextlib.suppress(Exception):  # undecodable: the readers name it
            event = decode_proto(frame(bytes(fields[PAYLOAD])), unknown_events="raw")[0]
            terminal = event.get("type") in TERMINAL
    await backend.script(
        keys,
        backend.expire,
        keys.both,
        [n, backend.ttl_ms, backend.expired_payload, "1" if terminal else "0", "", 0],
    )


class Producer:
    """One claimed run being published (the lease is ours)."""

    def __init__(
        self,
        backend: Backend,
        keys: RunKeys,
        token: str,
        stored: int,
        generation: int,
        events: Iterable[Any] | AsyncIterable[Any],
    ) -> None:
        self.backend = backend
        self.run_keys = keys
        self.run_id = keys.run_id
        self.token = token
        self.stored = stored  # events Redis acknowledged
        self.generation = str(generation)
        self.done = str(generation + 1)  # the sequence of the run's end marker
        self.events = events
        self.lost: StoreError | None = None
        self.main: asyncio.Task[Any] | None = None  # the task running ``run``
        # with maxlen: the trimmed events' compact prefix, kept in Redis (``_Snapshots``)
        self.snapshots = _Snapshots(self) if backend.maxlen else None
        self.keys = keys.all if backend.maxlen else keys.both
        self.renewed = -math.inf  # loop time the lease was last renewed (sent)

    def _check(self, reply: list[Any]) -> int:
        code, last = int(reply[0]), int(reply[1])
        if code == 0:
            self.stored = max(self.stored, last)
            return last
        if code == 3:
            raise RunLost(
                self.run_id,
                f"Redis holds {last} events of the run, {self.stored} were acknowledged: "
                "its keys were evicted (maxmemory policy) or lost (Redis restarted "
                "without persistence, or a failover lost them)",
            )
        if code == 6:
            raise RunReplaced(
                self.run_id,
                "the stream holds another generation of the run (entry "
                f"{bytes(reply[2]).decode()}): this one was lost and the run produced again",
            )
        if code == 7:
            raise StoreCorrupted(
                self.run_id,
                self.run_keys.stream,
                bytes(reply[2]).decode(),
                "an entry this producer did not write",
            )
        raise LeaseLost(
            self.run_id,
            "the run was ended by its lease expiring" if code == 1 else "the lease is not ours",
        )

    async def append(self, first: int, payloads: list[bytes]) -> None:
        backend = self.backend
        self.renewed = asyncio.get_running_loop().time()  # Redis renews it no earlier
        reply = await backend.script(
            self.run_keys,
            backend.append,
            self.keys,
            [
                self.token,
                backend.lease_ms,
                backend.running_ttl_ms,
                backend.maxlen or 0,
                self.stored,
                first,
                self.generation,
                *payloads,
            ],
        )
        self._check(reply)
        if self.snapshots is not None:
            await self.snapshots.stored(self.stored)

    async def _finish(self, reason: str) -> None:
        backend = self.backend
        reply = await backend.script(
            self.run_keys,
            backend.finish,
            self.keys,
            [self.token, backend.ttl_ms, self.stored, reason, self.generation, self.done],
        )
        self._check(reply)

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
                reply = await backend.script(
                    self.run_keys,
                    backend.renew,
                    self.keys,
                    [
                        self.token,
                        backend.lease_ms,
                        backend.running_ttl_ms,
                        self.stored,
                        self.generation,
                    ],
                )
                if reply[0] != 0:
                    self._check(reply)
            except StoreError as exc:
                self.lost = exc
                main.cancel()
                return

    def unavailable(self, reason: str) -> None:
        """Redis has been silent too long (the store's watchdog): stop, raising
        ``StoreUnavailable`` (the run is not ended: its lease will be)."""
        if self.lost is None and self.main is not None:
            self.lost = StoreUnavailable(self.run_id, reason)
            self.main.cancel()

    async def run(self) -> int:
        main = self.main = asyncio.current_task()
        assert main is not None
        self.renewed = asyncio.get_running_loop().time()  # by the claim
        self.backend.watch(self)
        heartbeat = asyncio.ensure_future(self._heartbeat(main))
        source = Source(self.events, None, asyncio.get_running_loop())
        skip = self.stored  # a retried run: these are stored already
        writer = _Writer(self, skip + 1)
        count = 0
        terminal = 0  # the index of the producer's terminal event, once produced
        try:
            try:
                while True:
                    try:
                        event = await source.next()
                    except StopAsyncIteration:
                        break
                    count += 1
                    if self.snapshots is not None:
                        self.snapshots.produced(event)
                    if count > skip:
                        await writer.add(admit(event, count))
                    if event_type(event) in TERMINAL:
                        terminal = count
                await writer.drain()
                await self._finish("finished")
                return count
            except asyncio.CancelledError:
                if self.lost is not None:
                    raise self.lost from None
                await self._end_with(writer, terminal, "cancelled", None)
                raise
            except StoreFull as exc:  # the run ends failed, said so, if Redis lets it
                await self._end_with(writer, terminal, "failed", exc)
                raise
            except StoreError:
                raise
            except Exception as exc:
                await self._end_with(writer, terminal, "failed", exc)
                raise
        finally:
            self.backend.unwatch(self)
            heartbeat.cancel()
            writer.cancel()
            await source.close()

    async def _end_with(
        self,
        writer: _Writer,
        terminal: int,
        reason: Literal["cancelled", "failed"],
        exc: Exception | None,
    ) -> None:
        """End the run after a failure: what was produced, a RUN_ERROR (unless the
        last event stored is the producer's terminal one), the end (one script,
        which runs even when Redis is out of memory)."""
        try:
            with contextlib.suppress(Exception):  # the RUN_ERROR follows what Redis has
                await writer.drain()
            if exc is None:
                error = {
                    "type": "RUN_ERROR",
                    "message": "the run was cancelled on the server",
                    "code": "CANCELLED",
                }
            elif isinstance(exc, StoreFull):
                error = {
                    "type": "RUN_ERROR",
                    "message": "the run store is full (Redis maxmemory)",
                    "code": STORE_FULL,
                }
            else:
                error = default_error_event(exc)
            backend = self.backend
            reply = await backend.script(
                self.run_keys,
                backend.fail,
                self.keys,
                [
                    self.token,
                    backend.ttl_ms,
                    self.stored,
                    reason,
                    self.generation,
                    self.done,
                    encode_payload(error),
                    terminal,
                ],
            )
            self._check(reply)
        except Exception as err:
            logger.error("could not end run %r after a failure", self.run_id, exc_info=err)


class _Snapshots:
    """A producer's compact prefix of its run, kept beside the stream when ``maxlen``
    trims it: compact joiners start from it when the events it stands for are gone.

    Strategy: every event produced is folded (``Compactor``) once Redis has it;
    after every ``maxlen // 2`` stored events the prefix (events 1..k) is written to
    the run's snapshot key, so it always reaches past what ``XADD MAXLEN ~`` trimmed
    (the stream keeps at least the ``maxlen`` newest). A run the fold cannot
    compact (chunks, a second ``RUN_STARTED``) writes none: its trimmed compact
    joiners get ``HISTORY_TRIMMED``."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.folder = Compactor()
        self.waiting: deque[Any] = deque()  # produced, not yet stored
        self.folded = 0  # events fed to the folder
        self.written = 0  # the last snapshot's k
        assert producer.backend.maxlen is not None
        self.every = max(1, producer.backend.maxlen // 2)

    def produced(self, event: Any) -> None:
        self.waiting.append(event)

    async def stored(self, last: int) -> None:
        folder = self.folder
        while self.folded < last and self.waiting:
            folder.feed(self.waiting.popleft())
            self.folded += 1
        if not folder.foldable or self.folded - self.written < self.every:
            return
        producer = self.producer
        backend = producer.backend
        head = b"%d-%s\n" % (self.folded, producer.generation.encode())
        data = head + PROTO.encode_many(folder.prefix())
        keys = producer.run_keys
        await backend.call(keys, "SET", keys.snapshot, data, "PX", backend.running_ttl_ms)
        self.written = self.folded


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
