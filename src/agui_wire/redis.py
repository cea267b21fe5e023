"""Runs that outlive their HTTP response: ``RunStore``, AG-UI event streams on Redis Streams.

Strategy: one Redis Stream per run holds every event once, as its protobuf
payload (the compact form: docs/scaling.md gives bytes per event against JSON),
under the explicit entry id ``n-0`` for the run's n-th event (1-based), so an
event's id *is* its index: resuming "after n" is ``XREAD``/``XRANGE`` from
``n-0``, the same on every replica and both transports. The run's end is one more
entry, ``N-1`` (after the last event ``N-0``), with field ``end``. Writes go
through small Lua scripts, each atomic in Redis, that own the rules:

* **Idempotent producer**: an append skips every event whose index is at or
  below the stream's last id, so a retried job that produces the same run again
  stores each event once (the first write wins), and a request retried after a
  lost reply cannot store an event twice. A run that has ended is not produced
  again: ``publish`` returns at once without iterating.
* **Lease**: a producer holds the run's lease key (``SET NX PX lease``) and
  renews it every ``lease / 3`` and on every append. Appends check the lease
  token, so a producer that lost it (stalled past the lease) cannot write.
* **Lease expiry**: a replica tailing a run that goes quiet checks the lease
  every ``poll`` seconds; once it is gone the check script ends the run with a
  ``RUN_ERROR`` (code ``LEASE_EXPIRED``) and the end marker, stored like any
  event, so every subscriber, everywhere, and every late joiner sees the same
  end, within ``lease + poll`` of the producer's last heartbeat.
* **Retention**: while running the stream and lease expire ``ttl`` after the
  last heartbeat (a producer that died unobserved leaves nothing behind); after
  the end, the stream lives ``ttl`` more seconds. ``maxlen`` bounds the stored
  events (``XADD MAXLEN ~``): subscribers asking for trimmed events get
  ``HistoryTrimmed``, never a silent gap.

Reading: per process and run, one *tail* task reads the stream (``XREAD BLOCK``)
and hands each batch, as one shared object, to every local subscriber. A batch
decodes its payloads at most once and builds its SSE bytes (with ``id: n``) and
its binary frames (the stored bytes, length-prefixed, not re-encoded) at most
once, whatever the number of subscribers; each response writes a batch in one
ASGI send (``asgi.EncodedEvents``). A subscriber first replays from Redis
(``XRANGE`` pages) up to the live position, then follows the tail; a subscriber
that falls behind by more than ``backlog`` batches is cut loose from the tail
and catches up from Redis again, so a slow client never holds memory.

Faults (docs/scaling.md has the subscriber's view): Redis calls that fail with a
connection error are retried with backoff for ``reconnect`` seconds, then raise
``StoreUnavailable``; the scripts are idempotent, so a retry never stores twice.
Events the store acknowledged that are gone (Redis restarted without
persistence) raise ``RunLost`` to the producer and to subscribers, who get a
``RUN_ERROR`` (code ``RUN_LOST``) in a response. Every error class is in
``agui_wire.errors``.

``import agui_wire`` does not import this module; it needs the ``redis``
package (``pip install agui-wire[redis]``) and a client made with
``decode_responses=False`` (payloads are bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import parse_qs

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ._apply import Compactor
from ._codec.framing import frame
from ._decoder import decode_proto
from ._encoder import EventEncoder, encode_sse
from ._negotiation import PROTO_MEDIA_TYPE
from ._streaming import EncodedEvents, Message, Receive, Scope, Send
from ._streaming import Source as _Source
from ._streaming import close_unstarted as _close_unstarted
from ._streaming import default_error_event as _default_error_event
from ._streaming import event_type as _event_type
from ._streaming import scope_header as _scope_header
from .asgi import EventStreamResponse
from .errors import (
    HistoryTrimmed,
    LeaseLost,
    RunInProgress,
    RunLost,
    RunNotFound,
    StoreError,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from ._streaming import HasHeaders as _HasHeaders

__all__ = [
    "AFTER_HEADER",
    "LEASE_EXPIRED",
    "RUN_LOST",
    "SNAPSHOT_HEADER",
    "RunStore",
    "resume_after",
]

logger = logging.getLogger("agui_wire.redis")

#: ``RUN_ERROR`` codes the store writes.
LEASE_EXPIRED: Final = "LEASE_EXPIRED"
RUN_LOST: Final = "RUN_LOST"
#: Response headers of ``RunStore.response``: the body continues the run after
#: event ``AFTER_HEADER``, once its first ``SNAPSHOT_HEADER`` events (a compact
#: prefix standing for events 1..after) are read. Clients count from them to
#: resume (binary frames carry no id); ``agui_wire.client`` reconnects by itself
#: only to responses that carry them.
AFTER_HEADER: Final = "agui-after"
SNAPSHOT_HEADER: Final = "agui-snapshot-events"

_TERMINAL: Final = frozenset({"RUN_FINISHED", "RUN_ERROR"})
_RETRYABLE: Final = (RedisConnectionError, RedisTimeoutError, OSError)
_FIRST_PAGE: Final = 32  # events in the first page of a replay
_PAYLOAD: Final = b"p"
_END: Final = b"end"

# -- the scripts -----------------------------------------------------------------------
# Each returns {code, last}: ``last`` is the run's last event index in Redis.
# Codes: 0 done, 1 the run has ended, 2 the lease is not ours (held by another /
# expired), 3 acknowledged events are missing (lost), 4 the run does not exist,
# 5 the caller has not read up to the last event yet.

_TOP: Final = """
local function top(key)
  local t = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
  if #t == 0 then return nil, nil end
  local ms, seq = string.match(t[1][1], '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
"""

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms.
_ACQUIRE: Final = (
    _TOP
    + """
local last, seq = top(KEYS[1])
if last and seq > 0 then return {1, last} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if last then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  return {0, last or 0}
end
return {2, last or 0}
"""
)

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms, maxlen (0: none),
# known (events this producer knows are stored), first index, payloads...
_APPEND: Final = (
    _TOP
    + """
local last, seq = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[5]) then return {3, last} end
if seq and seq > 0 then return {1, last} end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {2, last} end
local maxlen = tonumber(ARGV[4])
local n = tonumber(ARGV[6]) - 1
for i = 7, #ARGV do
  n = n + 1
  if n > last then
    if n ~= last + 1 then return {3, last} end
    if maxlen > 0 then
      redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, n .. '-0', 'p', ARGV[i])
    else
      redis.call('XADD', KEYS[1], n .. '-0', 'p', ARGV[i])
    end
    last = n
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {0, last}
"""
)

# KEYS: stream, lease. ARGV: token, ttl_ms, known, reason.
_FINISH: Final = (
    _TOP
    + """
local last, seq = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[3]) then return {3, last} end
if seq and seq > 0 then return {1, last} end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {2, last} end
redis.call('XADD', KEYS[1], last .. '-1', 'end', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return {0, last}
"""
)

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms, known.
_RENEW: Final = (
    _TOP
    + """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  local last = top(KEYS[1]) or 0
  if last < tonumber(ARGV[4]) then return {3, last} end
  return {2, last}
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {0, -1}
"""
)

# KEYS: stream, lease. ARGV: known (events the caller has read), ttl_ms,
# RUN_ERROR payload, '1' when event ``known`` is terminal.
_EXPIRE: Final = (
    _TOP
    + """
if redis.call('EXISTS', KEYS[2]) == 1 then return {0, -1} end
local known = tonumber(ARGV[1])
local last, seq = top(KEYS[1])
if last == nil then
  if known > 0 then return {3, 0} end
  last, seq = 0, 0
end
if last < known then return {3, last} end
if seq > 0 then return {1, last} end
if last > known then return {5, last} end
if ARGV[4] == '1' then
  redis.call('XADD', KEYS[1], last .. '-1', 'end', 'finished')
else
  redis.call('XADD', KEYS[1], (last + 1) .. '-0', 'p', ARGV[3])
  redis.call('XADD', KEYS[1], (last + 1) .. '-1', 'end', 'lease-expired')
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {2, last}
"""
)


# -- batches ---------------------------------------------------------------------------


class _Batch(EncodedEvents):
    """Consecutive events ``first..first+len-1`` of a run (and maybe its end),
    shared by every subscriber of a replica: decoded, framed and SSE-encoded at
    most once each."""

    __slots__ = ("_events", "_proto", "_sse", "end", "first", "payloads")

    def __init__(self, first: int, payloads: list[bytes], end: str | None) -> None:
        self.first = first
        self.payloads = payloads
        self.end = end  # the end marker follows the last event
        self._events: list[dict[str, Any]] | None = None
        self._proto: bytes | None = None
        self._sse: bytes | None = None

    @property
    def last(self) -> int:
        """The index of the last event (``first - 1`` for an end marker alone)."""
        return self.first + len(self.payloads) - 1

    def events(self) -> list[dict[str, Any]]:
        if self._events is None:
            # "raw": an event of a later protocol keeps its place (ids stay 1:1).
            events = decode_proto(self.data(True), unknown_events="raw")
            if len(events) != len(self.payloads):  # pragma: no cover - a decoder bug
                raise RuntimeError("a stored payload did not decode to one event")
            self._events = events
        return self._events

    def items(self) -> Iterable[tuple[int, dict[str, Any]]]:
        return enumerate(self.events(), self.first)

    def data(self, binary: bool) -> bytes:
        if binary:
            if self._proto is None:
                self._proto = b"".join(map(frame, self.payloads))
            return self._proto
        if self._sse is None:
            self._sse = b"".join(encode_sse(e, id=str(n)) for n, e in self.items())
        return self._sse

    @property
    def last_type(self) -> str | None:
        if not self.payloads:
            return None
        t = self.events()[-1].get("type")
        return t if isinstance(t, str) else None

    def after(self, cursor: int) -> _Batch:
        """This batch without the events up to ``cursor``."""
        if cursor < self.first:
            return self
        cut = cursor - self.first + 1
        part = _Batch(cursor + 1, self.payloads[cut:], self.end)
        if self._events is not None:
            part._events = self._events[cut:]
        return part


class _Prefix(EncodedEvents):
    """The compact prefix: events standing for the run's events 1..``last``. In SSE
    only the last carries an id (``last``): a reconnect inside it starts over."""

    __slots__ = ("events", "last")

    def __init__(self, events: list[dict[str, Any]], last: int) -> None:
        self.events = events
        self.last = last

    def data(self, binary: bool) -> bytes:
        if binary:
            return _PROTO.encode_many(self.events)
        head = b"".join(encode_sse(e) for e in self.events[:-1])
        return head + encode_sse(self.events[-1], id=str(self.last))

    @property
    def last_type(self) -> str | None:
        t = self.events[-1].get("type")
        return t if isinstance(t, str) else None


_PROTO: Final = EventEncoder(PROTO_MEDIA_TYPE)


def _parse_id(raw: bytes) -> tuple[int, int]:
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)


def _entries(run_id: str, cursor: int, entries: Any) -> tuple[_Batch, bool]:
    """Stream entries after ``cursor`` as one batch; checks they follow on."""
    payloads: list[bytes] = []
    end: str | None = None
    expected = cursor + 1
    for raw_id, fields in entries:
        n, seq = _parse_id(raw_id)
        if seq:
            end = bytes(fields.get(_END, b"")).decode("utf-8", "replace")
            break
        if n != expected:
            if not payloads and n > expected:
                raise HistoryTrimmed(run_id, cursor, n)
            raise RunLost(run_id, f"event {expected} is missing from the stream")
        payloads.append(bytes(fields[_PAYLOAD]))
        expected += 1
    return _Batch(cursor + 1, payloads, end), end is not None


# -- subscribers and tails -------------------------------------------------------------


class _Inbox:
    """What a tail hands one subscriber: shared batches, or the error that ended it."""

    __slots__ = ("batches", "error", "lagging", "limit", "wake")

    def __init__(self, limit: int) -> None:
        self.batches: deque[_Batch] = deque()
        self.error: BaseException | None = None
        self.lagging = False  # dropped batches: catch up from Redis
        self.limit = limit
        self.wake = asyncio.Event()

    def push(self, batch: _Batch) -> None:
        if len(self.batches) >= self.limit:
            self.batches.clear()
            self.lagging = True
        self.batches.append(batch)
        self.wake.set()

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.wake.set()


class _Tail:
    """One reader per run per process: ``XREAD BLOCK`` from the last position,
    each batch handed to every local inbox; checks the lease when the run is quiet."""

    def __init__(self, store: RunStore, run_id: str, position: int) -> None:
        self.store = store
        self.run_id = run_id
        self.position = position  # the last event read
        self.last_terminal = False
        self.inboxes: set[_Inbox] = set()
        self.task: asyncio.Task[None] | None = None

    def attach(self, inbox: _Inbox) -> None:
        self.inboxes.add(inbox)
        if self.task is None:
            self.task = asyncio.ensure_future(self._run())

    def detach(self, inbox: _Inbox) -> None:
        self.inboxes.discard(inbox)
        if not self.inboxes:
            self._close()

    def _close(self) -> None:
        if self.store._tails.get(self.run_id) is self:
            del self.store._tails[self.run_id]
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()

    async def _run(self) -> None:
        store = self.store
        key = store._key(self.run_id)
        try:
            while self.inboxes:
                reply = await store._retry(
                    self.run_id,
                    store.redis.xread,
                    {key: f"{self.position}-0"},
                    count=store.batch,
                    block=store._poll_ms,
                )
                entries = _stream_entries(reply)
                if not entries:
                    await self._quiet()
                    continue
                batch, ended = _entries(self.run_id, self.position, entries)
                if batch.payloads:
                    self.position = batch.last
                    self.last_terminal = batch.last_type in _TERMINAL
                for inbox in self.inboxes:
                    inbox.push(batch)
                if ended:
                    break
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not isinstance(exc, StoreError):
                logger.error("tail of run %r failed", self.run_id, exc_info=exc)
            for inbox in self.inboxes:
                inbox.fail(exc)
        finally:
            self._close()

    async def _quiet(self) -> None:
        """Nothing new for ``poll`` seconds: is the producer still alive?"""
        code, _last = await self.store._expire_check(self.run_id, self.position, self.last_terminal)
        if code == 3:
            raise RunLost(self.run_id, "the stream lost events it had stored (Redis restarted?)")


def _stream_entries(reply: Any) -> list[Any]:
    if not reply:
        return []
    if isinstance(reply, Mapping):  # RESP3
        streams = list(reply.values())
        return list(streams[0][0]) if streams and streams[0] else []
    return list(reply[0][1])


class _Subscription:
    """One subscriber's view of a run: ``open()`` checks the run exists (and folds
    the compact prefix), then ``batches()`` replays and tails it."""

    def __init__(self, store: RunStore, run_id: str, after: int | None, compact: bool) -> None:
        self.store = store
        self.run_id = run_id
        self.cursor = after or 0
        self.compact = compact and after is None
        self.prefix: _Prefix | None = None
        self.replay: list[_Batch] = []  # read while folding, not yet sent
        self.ended = False
        self.opened = False

    @property
    def snapshot_events(self) -> int:
        return 0 if self.prefix is None else len(self.prefix.events)

    async def open(self) -> None:
        store = self.store
        if not await store._retry(
            self.run_id, store.redis.exists, store._key(self.run_id), store._lease_key(self.run_id)
        ):
            raise RunNotFound(self.run_id, "no such run (never started, or expired)")
        if self.cursor:
            stored = await store._length(self.run_id)
            if self.cursor > stored:
                raise RunLost(
                    self.run_id,
                    f"resuming after event {self.cursor}, but the store holds {stored} "
                    "(Redis lost acknowledged events?)",
                )
        self.opened = True
        if not self.compact:
            return
        folder = Compactor()
        pages: list[_Batch] = []
        async for batch in self._pages(0):
            pages.append(batch)
            for event in batch.events():
                folder.feed(event)
        if folder.foldable and folder.run_started is not None and folder.count:
            self.prefix = _Prefix(folder.prefix(), folder.count)
            self.cursor = folder.count
            self.ended = bool(pages) and pages[-1].end is not None
        else:
            self.replay = pages  # nothing to fold: replay as stored
            self.ended = bool(pages) and pages[-1].end is not None

    async def _pages(self, cursor: int, stop: int | None = None) -> AsyncIterator[_Batch]:
        """Stored events after ``cursor`` (up to ``stop``), in pages of up to
        ``batch``: the first page small, so the first events go out at once."""
        store = self.store
        key = store._key(self.run_id)
        count = min(_FIRST_PAGE, store.batch)
        while True:
            entries = await store._retry(
                self.run_id,
                store.redis.xrange,
                key,
                min=f"({cursor}-0" if cursor else "-",
                max="+" if stop is None else f"{stop}-0",
                count=count,
            )
            if not entries:
                if cursor and stop is None and not await store.redis.exists(key):
                    raise RunLost(self.run_id, "the run's stream is gone (Redis restarted?)")
                return
            batch, ended = _entries(self.run_id, cursor, entries)
            cursor = batch.last
            yield batch
            if ended or len(entries) < count:
                return
            count = min(count * 4, store.batch)

    async def batches(self) -> AsyncIterator[EncodedEvents]:
        if not self.opened:
            await self.open()
        if self.prefix is not None:
            yield self.prefix
        for batch in self.replay:
            self.cursor = batch.last
            yield batch
        if self.ended:
            return
        async for batch in self._pages(self.cursor):
            self.cursor = batch.last
            yield batch
            if batch.end is not None:
                return
        store = self.store
        inbox = _Inbox(store.backlog)
        tail = store._tails.get(self.run_id)
        if tail is None:
            tail = store._tails[self.run_id] = _Tail(store, self.run_id, self.cursor)
        tail.attach(inbox)
        try:
            while True:
                await inbox.wake.wait()
                inbox.wake.clear()
                if inbox.lagging:
                    inbox.lagging = False
                    async for batch in self._pages(self.cursor):
                        self.cursor = batch.last
                        yield batch
                        if batch.end is not None:
                            return
                while inbox.batches:
                    batch = inbox.batches.popleft()
                    if batch.last <= self.cursor and batch.end is None:
                        continue
                    if batch.first > self.cursor + 1:  # joined after this tail's start
                        async for gap in self._pages(self.cursor, batch.first - 1):
                            self.cursor = gap.last
                            yield gap
                    batch = batch.after(self.cursor)
                    self.cursor = max(self.cursor, batch.last)
                    if batch.payloads:
                        yield batch
                    if batch.end is not None:
                        return
                if inbox.error is not None:
                    raise inbox.error
        finally:
            tail.detach(inbox)

    async def aclose(self) -> None:
        """Nothing to release before ``batches()`` starts (``EventStreamResponse``
        closes a producer it will not run)."""


# -- the store -------------------------------------------------------------------------


class RunStore:
    """AG-UI runs on Redis Streams (see the module doc).

    ``redis`` is a ``redis.asyncio.Redis`` made with ``decode_responses=False``.
    ``prefix`` starts every key (``{prefix}{run_id}`` in braces, a Redis Cluster
    hash tag, so a run's keys share a slot). ``ttl``: seconds a run is kept
    after its end (and after the last heartbeat of a producer that vanished).
    ``lease``: seconds without a heartbeat after which a run's producer counts as
    dead. ``maxlen``: keep about this many events per run (``None``: all).
    ``reconnect``: seconds of Redis connection errors tolerated per call before
    ``StoreUnavailable``. ``batch``: events per Redis read and per append.
    ``backlog``: batches a subscriber may fall behind the tail before it reads
    from Redis instead.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        prefix: str = "agui:",
        ttl: float = 3600.0,
        lease: float = 30.0,
        maxlen: int | None = None,
        reconnect: float = 10.0,
        batch: int = 512,
        backlog: int = 64,
    ) -> None:
        kwargs = getattr(getattr(redis, "connection_pool", None), "connection_kwargs", {})
        if kwargs.get("decode_responses"):
            raise ValueError("RunStore needs a Redis client with decode_responses=False")
        for name, value in (("ttl", ttl), ("lease", lease), ("reconnect", reconnect)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if maxlen is not None and (
            isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1
        ):
            raise ValueError(f"maxlen must be a positive int or None, not {maxlen!r}")
        for name, count in (("batch", batch), ("backlog", backlog)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"{name} must be a positive int, not {count!r}")
        self.redis = redis
        self.prefix = prefix
        self.ttl = float(ttl)
        self.lease = float(lease)
        self.maxlen = maxlen
        self.reconnect = float(reconnect)
        self.batch = batch
        self.backlog = backlog
        #: Seconds between lease checks of a quiet run (and the ``XREAD BLOCK`` time).
        self.poll = min(1.0, self.lease / 4)
        self._poll_ms = max(1, int(self.poll * 1000))
        self._lease_ms = max(1, int(self.lease * 1000))
        self._ttl_ms = max(1, int(self.ttl * 1000))
        self._running_ttl_ms = self._lease_ms + self._ttl_ms
        self._acquire = redis.register_script(_ACQUIRE)
        self._append = redis.register_script(_APPEND)
        self._finish = redis.register_script(_FINISH)
        self._renew = redis.register_script(_RENEW)
        self._expire = redis.register_script(_EXPIRE)
        self._tails: dict[str, _Tail] = {}
        self._tasks: set[asyncio.Task[int]] = set()
        self._expired_payload = _PROTO.encode(
            {
                "type": "RUN_ERROR",
                "message": (
                    f"the run's producer stopped: no heartbeat within its lease of {self.lease:g} s"
                ),
                "code": LEASE_EXPIRED,
            }
        )[4:]

    def _key(self, run_id: str) -> str:
        return f"{self.prefix}{{{run_id}}}"

    def _lease_key(self, run_id: str) -> str:
        return f"{self.prefix}{{{run_id}}}:lease"

    async def _retry(self, run_id: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, retried on connection errors for ``reconnect`` s."""
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        delay = 0.05
        while True:
            try:
                return await fn(*args, **kwargs)
            except _RETRYABLE as exc:
                now = loop.time()
                if deadline is None:
                    deadline = now + self.reconnect
                if now >= deadline:
                    raise StoreUnavailable(
                        run_id, f"Redis unreachable for {self.reconnect:g} s: {exc}"
                    ) from exc
                await asyncio.sleep(min(delay, deadline - now))
                delay = min(delay * 2, 1.0)

    async def _script(
        self, run_id: str, script: Any, keys: list[str], args: list[Any]
    ) -> tuple[int, int]:
        code, last = await self._retry(run_id, script, keys=keys, args=args)
        return int(code), int(last)

    async def _expire_check(self, run_id: str, known: int, terminal: bool) -> tuple[int, int]:
        return await self._script(
            run_id,
            self._expire,
            [self._key(run_id), self._lease_key(run_id)],
            [known, self._ttl_ms, self._expired_payload, "1" if terminal else "0"],
        )

    # -- producing -------------------------------------------------------------------

    async def publish(self, run_id: str, events: Iterable[Any] | AsyncIterable[Any]) -> int:
        """Store the run's events as they come; returns the number of events in the
        run once it has ended. Raises ``RunInProgress`` if a live producer holds the
        run; a run that has ended already is not produced again (``events`` is closed
        unstarted). If ``events`` raises, the run ends with a ``RUN_ERROR`` and the
        exception propagates."""
        producer = await self._claim(run_id, events)
        if producer is None:
            return await self._length(run_id)
        return await producer.run()

    async def start(
        self, run_id: str, events: Iterable[Any] | AsyncIterable[Any]
    ) -> asyncio.Task[int] | None:
        """``publish`` in a background task, detached from the caller (a request
        that ends, or a client that leaves, does not stop it). Returns once the run
        is claimed, so a ``subscribe``/``response`` right after finds it; returns
        ``None`` (and closes ``events``) if the run has ended already. Raises
        ``RunInProgress`` like ``publish``. A failure of the task is logged."""
        producer = await self._claim(run_id, events)
        if producer is None:
            return None
        task = asyncio.ensure_future(producer.run())
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[int]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background run failed", exc_info=task.exception())

    async def _claim(
        self, run_id: str, events: Iterable[Any] | AsyncIterable[Any]
    ) -> _Producer | None:
        token = secrets.token_hex(12)
        try:
            code, last = await self._script(
                run_id,
                self._acquire,
                [self._key(run_id), self._lease_key(run_id)],
                [token, self._lease_ms, self._running_ttl_ms],
            )
        except BaseException:
            await _close_unstarted(events)
            raise
        if code == 1:
            await _close_unstarted(events)
            return None
        if code == 2:
            await _close_unstarted(events)
            raise RunInProgress(run_id, "another producer holds the run's lease")
        return _Producer(self, run_id, token, last, events)

    async def _length(self, run_id: str) -> int:
        entries = await self._retry(
            run_id, self.redis.xrevrange, self._key(run_id), "+", "-", count=1
        )
        return _parse_id(entries[0][0])[0] if entries else 0

    async def aclose(self) -> None:
        """Stop this store's background runs (they end with ``RUN_ERROR``, code
        ``CANCELLED``) and its tails. Call it on shutdown."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for tail in list(self._tails.values()):
            if tail.task is not None:
                tail.task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    # -- reading ---------------------------------------------------------------------

    async def subscribe(
        self, run_id: str, after: int | None = None, *, compact: bool = False
    ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """``(event_id, event)`` for the run's events after ``after`` (all when
        ``None``), stored ones first, then live ones, until the run ends. With
        ``compact`` (and no ``after``) a snapshot stands for the events so far
        (``agui_wire._apply``); its events carry the id of the last event they
        stand for. Raises ``RunNotFound``, ``HistoryTrimmed``, ``RunLost``,
        ``StoreUnavailable``."""
        _check_after(after)
        subscription = _Subscription(self, run_id, after, compact)
        async for batch in subscription.batches():
            if isinstance(batch, _Prefix):
                for event in batch.events:
                    yield batch.last, event
            else:
                assert isinstance(batch, _Batch)
                for item in batch.items():
                    yield item

    def response(
        self,
        run_id: str,
        request: _HasHeaders | None = None,
        *,
        after: int | None = None,
        compact: bool = False,
        **options: Any,
    ) -> EventStreamResponse:
        """An ``EventStreamResponse`` streaming the run: transport negotiated from
        ``request`` (else the scope), resumed after ``after``, else after the
        request's ``Last-Event-ID`` or ``?after=n`` (read when the response runs).
        ``options`` go to ``EventStreamResponse`` (``keepalive``, ``strict``,
        ``headers``...). An unknown run is answered 404, a trimmed position 410,
        Redis unreachable 503 (with ``Retry-After``); see docs/scaling.md."""
        _check_after(after)
        return _RunResponse(self, run_id, request, after, compact, options)


def _check_after(after: int | None) -> None:
    if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
        raise ValueError(f"after must be an event index >= 0 or None, not {after!r}")


class _Producer:
    """One claimed run being published (the lease is ours)."""

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        token: str,
        stored: int,
        events: Iterable[Any] | AsyncIterable[Any],
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.token = token
        self.stored = stored  # events Redis acknowledged
        self.events = events
        self.lost: StoreError | None = None
        self.keys = [store._key(run_id), store._lease_key(run_id)]

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

    async def _append(self, first: int, payloads: list[bytes]) -> None:
        store = self.store
        code, last = await store._script(
            self.run_id,
            store._append,
            self.keys,
            [
                self.token,
                store._lease_ms,
                store._running_ttl_ms,
                store.maxlen or 0,
                self.stored,
                first,
                *payloads,
            ],
        )
        self._check(code, last)

    async def _finish(self, reason: str) -> None:
        store = self.store
        code, last = await store._script(
            self.run_id, store._finish, self.keys, [self.token, store._ttl_ms, self.stored, reason]
        )
        self._check(code, last)

    async def _heartbeat(self, main: asyncio.Task[Any]) -> None:
        store = self.store
        while True:
            await asyncio.sleep(store.lease / 3)
            try:
                code, last = await store._script(
                    self.run_id,
                    store._renew,
                    self.keys,
                    [self.token, store._lease_ms, store._running_ttl_ms, self.stored],
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
        heartbeat = asyncio.ensure_future(self._heartbeat(main))
        source = _Source(self.events, None, asyncio.get_running_loop())
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
                    last = event
                    if count > skip:
                        await writer.add(_PROTO.encode(event)[4:])
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
            if _event_type(last) not in _TERMINAL:
                if exc is None:
                    error = {
                        "type": "RUN_ERROR",
                        "message": "the run was cancelled on the server",
                        "code": "CANCELLED",
                    }
                else:
                    error = _default_error_event(exc)
                await self._append(self.stored + 1, [_PROTO.encode(error)[4:]])
            await self._finish(reason)
        except Exception as err:
            logger.error("could not end run %r after a failure", self.run_id, exc_info=err)


class _Writer:
    """The producer's appends: one in flight at a time; what is produced meanwhile
    goes in the next one, started as soon as the previous returns (a burst costs
    one round trip per batch, a paced run one per event, and nothing waits for a
    later event). ``add`` waits only when ``batch`` events are queued."""

    def __init__(self, producer: _Producer, first: int) -> None:
        self.producer = producer
        self.first = first  # the index of pending[0]
        self.pending: list[bytes] = []
        self.task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    async def add(self, payload: bytes) -> None:
        if self.error is not None:
            raise self.error
        self.pending.append(payload)
        if self.task is None:
            self._start()
        elif len(self.pending) >= self.producer.store.batch:
            await asyncio.wait({self.task})
            if self.error is not None:
                raise self.error

    def _start(self) -> None:
        payloads, self.pending = self.pending, []
        first = self.first
        self.first += len(payloads)
        self.task = asyncio.ensure_future(self.producer._append(first, payloads))
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


# -- HTTP ------------------------------------------------------------------------------


def resume_after(request: _HasHeaders | Scope) -> int | None:
    """Where a request resumes: its ``?after=n`` query parameter, else its
    ``Last-Event-ID`` header, as an event index; ``None`` when it has neither.
    A value that is not an index >= 0 raises ``ValueError``."""
    if isinstance(request, MutableMapping):
        query = bytes(request.get("query_string", b"")).decode("latin-1")
        header = _scope_header(request, b"last-event-id")
    else:
        url = getattr(request, "url", None)
        query = getattr(url, "query", "") or ""
        header = request.headers.get("last-event-id")
    values = parse_qs(query).get("after")
    raw = values[-1] if values else header
    if raw is None or raw.strip() == "":
        return None
    raw = raw.strip()
    if not raw.isdigit() or not raw.isascii():
        raise ValueError(f"not an event index: {raw[:40]!r}")
    return int(raw)


class _RunResponse(EventStreamResponse):
    """``RunStore.response``: opens the subscription before the headers go out,
    so an unknown run is a 404 and the resume position is in the headers."""

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        request: _HasHeaders | None,
        after: int | None,
        compact: bool,
        options: dict[str, Any],
    ) -> None:
        self._store = store
        self._run_id = run_id
        self._after = after
        self._compact = compact
        self._subscription: _Subscription | None = None
        options.setdefault("on_error", _store_error_event)
        super().__init__(self._stream(), request, **options)

    async def _stream(self) -> AsyncIterator[EncodedEvents]:
        assert self._subscription is not None
        async for batch in self._subscription.batches():
            yield batch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        acceptable = not self._negotiated or self._encoder is not None
        if scope.get("type") == "http" and scope.get("method") != "HEAD" and acceptable:
            refusal = await self._open(scope)
            if refusal is not None:
                await _close_unstarted(self._events)
                await _plain(send, *refusal)
                return
        await super().__call__(scope, receive, send)

    async def _open(self, scope: Scope) -> tuple[int, str, dict[str, str]] | None:
        after = self._after
        if after is None:
            try:
                after = resume_after(scope)
            except ValueError as exc:
                return 400, f"{exc}\n", {}
        subscription = _Subscription(self._store, self._run_id, after, self._compact)
        try:
            await subscription.open()
        except RunNotFound as exc:
            return 404, f"{exc}\n", {}
        except StoreUnavailable as exc:
            return 503, f"{exc}\n", {"retry-after": "1"}
        self._subscription = subscription
        self.raw_headers += [
            (AFTER_HEADER.encode(), str(subscription.cursor).encode()),
            (SNAPSHOT_HEADER.encode(), str(subscription.snapshot_events).encode()),
        ]
        return None


def _store_error_event(exc: Exception) -> dict[str, Any] | None:
    """``on_error`` of a run's response: the store's faults as the client sees them."""
    if isinstance(exc, StoreUnavailable):
        # Not the run's end: the body stops without a terminal event, so the
        # client sees an incomplete run and resumes (agui_wire.client does).
        return None
    if isinstance(exc, RunLost):
        return {"type": "RUN_ERROR", "message": "the run's events were lost", "code": RUN_LOST}
    if isinstance(exc, HistoryTrimmed):
        return {
            "type": "RUN_ERROR",
            "message": f"events after {exc.after} are no longer stored (oldest: {exc.first})",
            "code": "HISTORY_TRIMMED",
        }
    return _default_error_event(exc)


async def _plain(send: Send, status: int, text: str, headers: dict[str, str]) -> None:
    body = text.encode()
    raw = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *((k.encode(), v.encode()) for k, v in headers.items()),
    ]
    start: Message = {"type": "http.response.start", "status": status, "headers": raw}
    await send(start)
    await send({"type": "http.response.body", "body": body, "more_body": False})
