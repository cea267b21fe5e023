"""The producer of a claimed run: store its events as they come, heartbeat, and end
it (the end marker; a ``RUN_ERROR`` first after a failure).

Strategy: the run's rules are four scripts, each atomic in Redis and idempotent,
so a retry after a lost reply changes nothing: ``APPEND`` stores the events after
the stream's last (an event at or below it is skipped when it is the one
stored: a retried job or a lost reply never stores twice, and the first write
wins), ``RENEW`` the heartbeat, ``FINISH`` the end marker, ``FAIL`` a
``RUN_ERROR`` and the end marker (it runs even when Redis is out of memory). Each
checks the lease token (a producer that lost its lease cannot write) and that
the events this producer knows are stored are still there.

A draining store hands a run over instead (``release``): the producer stops
taking events, stores what it took, and releases the lease without ending the
run (``_leases.RELEASE``), so a replaying producer elsewhere continues it.

Contract: ``Producer.run`` stores each event once (``_runstore.appends``), renews the
lease every ``lease / 3`` (an append does not: it takes back a lapsed lease
nobody else holds, as every write does, but renewing it is the heartbeat's alone,
a command fewer for Redis per append), ends
the run, and returns the number of its events. It raises ``LeaseLost``,
``RunLost``, ``RunReplaced`` or ``StoreCorrupted`` once the run is no longer its
own, ``StoreUnavailable`` when Redis is silent too long (the run is then ended
by its lease), ``StoreDraining`` once it handed the run over, and what the
events raised (the run ended with a ``RUN_ERROR``). ``Writing.live`` holds the
producers running; each one's ``finished`` is done once its ``run`` is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import sys
from collections.abc import AsyncIterable, Awaitable, Iterable
from typing import Any, Final, Literal

from .._codec.selected import encode_payload
from .._runstore import observe
from .._runstore.appends import Appends, Stored, admit
from .._runstore.drain import Producers
from .._runstore.ends import failure_event
from .._runstore.ids import RUN_LOST
from .._streaming import TERMINAL, Source, close_unstarted, event_type
from ..errors import (
    LeaseLost,
    RunLost,
    RunReplaced,
    StoreCorrupted,
    StoreDraining,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from ._calls import Calls
from ._keys import RunKeys
from ._leases import release
from ._local import Followers, Local
from ._scripts import PRELUDE, Reply, Script
from ._settings import Settings
from ._snapshots import Snapshots
from ._watchdog import Watchdog

logger = logging.getLogger("agui_wire.redis")

# KEYS: stream, lease (, snapshot). ARGV: token, lease_ms, running_ttl_ms, maxlen
# (0: none), known (events this producer knows are stored), first index,
# generation, stamp ('': none), payloads... An event at or below the stream's last
# is skipped when it is the one stored (a retry after a lost reply), else the
# stored one is corrupt. The last event, when stored now, carries the stamp (``t``).
APPEND: Final = Script(
    PRELUDE
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
local known, gen = tonumber(ARGV[5]), ARGV[7]
if last < known then return {LOST, last} end
if seq then
  if gen_of(seq) ~= gen then return {REPLACED, last, id} end
  if seq % 2 == 1 then return {ENDED, last} end
end
if not ours(KEYS[2], ARGV[1], ARGV[2]) then return {HELD, last} end
local maxlen = tonumber(ARGV[4])
local n = tonumber(ARGV[6]) - 1
local stamp = ARGV[8]
for i = 9, #ARGV do
  n = n + 1
  if n > last then
    if n ~= last + 1 then return {LOST, last} end
    local id = n .. '-' .. gen
    if i == #ARGV and stamp ~= '' then
      if maxlen > 0 then
        redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, id, 'p', ARGV[i], 't', stamp)
      else
        redis.call('XADD', KEYS[1], id, 'p', ARGV[i], 't', stamp)
      end
    elseif maxlen > 0 then
      redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, id, 'p', ARGV[i])
    else
      redis.call('XADD', KEYS[1], id, 'p', ARGV[i])
    end
    last = n
  elseif n > known then
    local e = redis.call('XRANGE', KEYS[1], n .. '-' .. gen, n .. '-' .. gen)
    local f = #e == 1 and e[1][2]
    if f and not (f[1] == 'p' and f[2] == ARGV[i] and (#f == 2 or (#f == 4 and f[3] == 't'))) then
      return {CORRUPTED, last, e[1][1]}
    end
  end
end
if seq == nil then  -- the stream's first entries: it lives as long as a live run's keys
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
end
return {DONE, last}
""",
    many=True,
)

# KEYS: stream, lease (, snapshot). ARGV: token, lease_ms, running_ttl_ms, known,
# generation. Replies {DONE, -1} when the lease is renewed.
RENEW: Final = Script(
    PRELUDE
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[4]) then return {LOST, last} end  -- (a failover lost them)
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  if seq then
    if gen_of(seq) ~= ARGV[5] then return {REPLACED, last, id} end
    if seq % 2 == 1 then return {ENDED, last} end
  end
  if not ours(KEYS[2], ARGV[1], ARGV[2]) then return {HELD, last} end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
return {DONE, -1}
"""
)

# KEYS: stream, lease (, snapshot). ARGV: token, ttl_ms, known, reason, generation,
# its end's sequence (generation + 1).
FINISH: Final = Script(
    PRELUDE
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[3]) then return {LOST, last} end
if seq then
  if gen_of(seq) ~= ARGV[5] then return {REPLACED, last, id} end
  if seq % 2 == 1 then
    if ended_by(fields) == ARGV[1] then return {DONE, last} end  -- by us: a retry
    return {ENDED, last}
  end
end
if last > tonumber(ARGV[3]) then return {CORRUPTED, last, id} end  -- not written by us
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {HELD, last} end
redis.call('XADD', KEYS[1], last .. '-' .. ARGV[6], 'end', ARGV[4], 'by', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
redis.call('DEL', KEYS[2])
return {DONE, last}
"""
)

# KEYS: stream, lease (, snapshot). ARGV: token, ttl_ms, known, reason, generation,
# its end's sequence, RUN_ERROR payload, the index of the producer's terminal
# event (0: none). Ends the run after a failure: the RUN_ERROR after what Redis
# holds (not after a terminal event; alone when it holds none), then the end. Runs
# when Redis is out of memory (a few hundred bytes past ``maxmemory``), so a run
# that filled Redis still ends. Its flags line needs Redis 7.0 (``Calls.ready`` probes it).
FAIL: Final = Script(
    "#!lua flags=allow-oom\n"
    + PRELUDE
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[3]) then return {LOST, last} end
if seq then
  if gen_of(seq) ~= ARGV[5] then return {REPLACED, last, id} end
  if seq % 2 == 1 then
    if ended_by(fields) == ARGV[1] then return {DONE, last} end
    return {ENDED, last}
  end
end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {HELD, last} end
if last == 0 or tonumber(ARGV[8]) ~= last then
  last = last + 1
  redis.call('XADD', KEYS[1], last .. '-' .. ARGV[5], 'p', ARGV[7])
end
redis.call('XADD', KEYS[1], last .. '-' .. ARGV[6], 'end', ARGV[4], 'by', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
redis.call('DEL', KEYS[2])
return {DONE, last}
"""
)


# KEYS: stream, lease (, snapshot). ARGV: token, ttl_ms, sent (the last event this
# producer sent: no reader can have read past it), RUN_ERROR payload, generation,
# its end's sequence. Ends a run that lost acknowledged events (a failover's new
# master lacks the last ones): the RUN_ERROR goes after ``sent``, past every
# event any reader may have read from the old master, so a reader that read up
# to ``sent`` gets it next and every other one meets the gap (``RunLost``), never
# other events under the ids it read. A stream that is gone is left alone.
LOSE: Final = Script(
    PRELUDE
    + """
local last, seq, fields, id = top(KEYS[1])
if not last then return {LOST, 0} end
if gen_of(seq) ~= ARGV[5] then return {REPLACED, last, id} end
if seq % 2 == 1 then
  if ended_by(fields) == ARGV[1] then return {DONE, last} end
  return {ENDED, last}
end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {HELD, last} end
local n = math.max(last, tonumber(ARGV[3])) + 1
redis.call('XADD', KEYS[1], n .. '-' .. ARGV[5], 'p', ARGV[4])
redis.call('XADD', KEYS[1], n .. '-' .. ARGV[6], 'end', 'lost', 'by', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
redis.call('DEL', KEYS[2])
return {DONE, n}
"""
)


def _chain(task: asyncio.Future[None], done: asyncio.Future[None]) -> None:
    """``done`` settles as ``task`` does; ``task`` is cancelled with ``done``."""

    def settle(task: asyncio.Future[None]) -> None:
        if done.done():
            return
        if task.cancelled():
            done.cancel()
        elif task.exception() is not None:
            done.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            done.set_result(None)

    task.add_done_callback(settle)
    done.add_done_callback(lambda _: task.cancel())


#: The RUN_ERROR a run that lost acknowledged events ends with.
LOST_EVENT: Final = {
    "type": "RUN_ERROR",
    "message": "the run's events were lost (a Redis failover lost events it had acknowledged)",
    "code": RUN_LOST,
}


class Writing(Producers):
    """What the producers of one store share: its settings, calls and watchdog, and
    (``_runstore.drain.Producers``) the producers running and the store's drain:
    ``draining`` (no new claim), ``handed_over`` (a producer that starts now
    releases its run at once)."""

    __slots__ = ("calls", "local", "settings", "watchdog")

    def __init__(self, settings: Settings, calls: Calls, local: Local) -> None:
        super().__init__()
        self.settings = settings
        self.calls = calls
        self.watchdog = Watchdog(calls, settings.silence)
        self.local = local  # this process's readers of the runs produced here


class Heartbeat:
    """A running producer's renewals of its lease (``Producer._heartbeat``, a task)
    from the first one due on, ``lease / 3`` after the claim: until then a timer,
    not a task (a task, its coroutine and its sleep per run cost a herd of runs
    starting at once 10-25% of its CPU, and most runs at token speed end before
    their first renewal). Once it ends (or is cancelled) the producer's local readers
    follow the stream: a producer that no longer keeps its lease feeds none, the
    stream's lease checks end the run if it lapses."""

    __slots__ = ("main", "producer", "task", "timer")

    def __init__(self, producer: Producer, main: asyncio.Task[Any]) -> None:
        self.producer = producer
        self.main = main
        self.task: asyncio.Task[None] | None = None
        due = producer.renewed + producer.settings.lease / 3
        self.timer: asyncio.Handle | None = asyncio.get_running_loop().call_at(due, self._start)

    def _start(self) -> None:
        self.timer = None
        self.task = asyncio.ensure_future(self.producer._heartbeat(self.main))
        self.task.add_done_callback(self._ended)

    def _ended(self, _: object = None) -> None:
        self.producer.followers.end()

    def cancel(self) -> None:
        if self.timer is not None:  # (ends as a cancelled task would: a turn later)
            self.timer.cancel()
            self.timer = None
            asyncio.get_running_loop().call_soon(self._ended)
        elif self.task is not None:
            self.task.cancel()


class Producer:
    """One claimed run being published (the lease is ours)."""

    def __init__(
        self,
        writing: Writing,
        keys: RunKeys,
        token: str,
        stored: int,
        generation: int,
        events: Iterable[Any] | AsyncIterable[Any],
    ) -> None:
        self.writing = writing
        self.settings = settings = writing.settings
        self.calls = writing.calls
        self.run_keys = keys
        self.run_id = keys.run_id
        self.token = token
        self.stored = stored  # events Redis acknowledged
        self.sent = stored  # the last event sent to Redis (acknowledged or not)
        self.generation = str(generation)
        self.done = str(generation + 1)  # the sequence of the run's end marker
        self.events = events
        self.lost: StoreError | None = None
        self.main: asyncio.Task[Any] | None = None  # the task running ``run``
        # with maxlen: the trimmed events' compact prefix, kept in Redis
        self.snapshots = (
            None
            if settings.maxlen is None
            else Snapshots(
                self.calls, keys, self.generation, settings.maxlen, settings.running_ttl_ms
            )
        )
        self.keys = keys.all if settings.maxlen else keys.both
        self.renewed = -math.inf  # loop time the lease was last renewed (sent)
        self.releasing = False  # handing the run over (``release``)
        self.finishing = False  # every event taken: only the end is left to store
        self.finished: asyncio.Future[None] | None = None  # done once ``run`` is
        self.ending = False  # ``run`` is ending the run after an error (not to be cancelled)
        # this process's readers of the run, fed each acknowledged append: named from
        # the claim on, so a reader that opens before the task runs (``start`` then
        # ``subscribe``) finds the run's head here, with no round trip
        self.followers: Followers = writing.local.started(keys, generation, stored)
        self.heartbeat: Heartbeat | None = None  # the lease's renewals, once ``run`` runs
        # the append in flight through ``append`` (it carries first, payloads, stamp)
        self.appending: Stored | None = None

    def _check(self, reply: list[Any]) -> int:
        code, last = int(reply[0]), int(reply[1])
        if code == Reply.DONE:
            self.stored = max(self.stored, last)
            return last
        if code == Reply.LOST:
            raise RunLost(
                self.run_id,
                f"Redis holds {last} events of the run, {self.stored} were acknowledged: "
                "its keys were evicted (maxmemory policy) or lost (Redis restarted "
                "without persistence, or a failover lost them)",
            )
        if code == Reply.REPLACED:
            raise RunReplaced(
                self.run_id,
                "the stream holds another generation of the run (entry "
                f"{bytes(reply[2]).decode()}): this one was lost and the run produced again",
            )
        if code == Reply.CORRUPTED:
            raise StoreCorrupted(
                self.run_id,
                self.run_keys.stream,
                bytes(reply[2]).decode(),
                "an entry this producer did not write",
            )
        raise LeaseLost(
            self.run_id,
            "the run was ended by its lease expiring"
            if code == Reply.ENDED
            else "the lease is not ours",
        )

    def append(self, first: int, payloads: list[bytes], stamp: int | None) -> Awaitable[None]:
        """Store ``payloads`` as the events from ``first`` on (``Appends``' send, one
        in flight at a time): a future done once Redis acknowledged them, its error
        what the run became. Sent through the lanes with no task or coroutine of its
        own, and as few objects as it takes (an append per event when the store
        keeps up); an error of the round trip goes to ``_append``, which sends it
        again, retried, and says what a refusal means."""
        if self.snapshots is not None:  # (its snapshot is written after the append)
            return self._append(first, payloads, stamp)
        done = self.appending = Stored(loop=asyncio.get_running_loop())
        done.first, done.payloads, done.stamp = first, payloads, stamp
        last = first + len(payloads) - 1
        if last > self.sent:
            self.sent = last
        self.calls.submit(
            self.run_keys,
            APPEND,
            self.keys,
            self._append_args(first, payloads, stamp),
            done,
            self,
            True,
        )
        return done

    def replied(self, reply: Any) -> None:
        """The reply to the append in flight (its future not done yet; ``Calls.submit``)."""
        done = self.appending
        assert done is not None
        self.appending = None
        if isinstance(reply, BaseException):
            _chain(asyncio.ensure_future(self._append(done.first, done.payloads, done.stamp)), done)
            return
        try:
            self._check(reply)
        except StoreError as exc:
            done.set_exception(exc)
            return
        if self.calls.outage.since is not None:
            self.calls.outage.answered()
        self.followers.push(done.first, done.payloads, done.stamp)
        done.set_result(None)

    def _append_args(self, first: int, payloads: list[bytes], stamp: int | None) -> list[Any]:
        settings = self.settings
        return [
            self.token,
            settings.lease_ms,
            settings.running_ttl_ms,
            settings.maxlen or 0,
            self.stored,
            first,
            self.generation,
            "" if stamp is None else stamp,
            *payloads,
        ]

    async def _append(self, first: int, payloads: list[bytes], stamp: int | None) -> None:
        self.sent = max(self.sent, first + len(payloads) - 1)
        args = self._append_args(first, payloads, stamp)
        reply = await self.calls.script(self.run_keys, APPEND, self.keys, args, durable=True)
        self._check(reply)
        self.followers.push(first, payloads, stamp)
        if self.snapshots is not None:
            await self.snapshots.stored(self.stored)

    async def _finish(self, reason: str) -> None:
        reply = await self.calls.script(
            self.run_keys,
            FINISH,
            self.keys,
            [self.token, self.settings.ttl_ms, self.stored, reason, self.generation, self.done],
            durable=True,
        )
        self._check(reply)
        self.followers.end(reason)  # (stored: readers here need not read it back)

    async def _heartbeat(self, main: asyncio.Task[Any]) -> None:
        """Renew the lease ``lease / 3`` after it was last renewed (appends do not
        renew it: a renewal every ``lease / 3`` costs Redis less than a renewal in
        every append, at any pace of events). A renewal goes ahead of the commands
        the store has queued: a replica too busy to keep up queues its appends
        longer than the lease, and its runs live."""
        settings = self.settings
        loop = asyncio.get_running_loop()
        while True:
            wait = self.renewed + settings.lease / 3 - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            self.renewed = loop.time()
            try:
                reply = await self.calls.script(
                    self.run_keys,
                    RENEW,
                    self.keys,
                    [
                        self.token,
                        settings.lease_ms,
                        settings.running_ttl_ms,
                        self.stored,
                        self.generation,
                    ],
                    first=True,
                )
                if reply[0] != Reply.DONE:
                    self._check(reply)
            except StoreError as exc:
                if not self.ending:  # (else ``run`` is ending the run already: it
                    self.lost = exc  # would be cancelled in the middle of that)
                    main.cancel()
                return

    def release(self) -> None:
        """Hand the run over (the store drains): ``run`` stops taking events, stores
        those it took, releases the lease (the run not ended) and raises
        ``StoreDraining``. A producer that took its last event just ends the run."""
        if self.releasing or self.finishing:
            return
        self.releasing = True
        if self.main is not None:
            self.main.cancel()

    async def _release(self, appends: Appends, heartbeat: Heartbeat) -> StoreDraining:
        """What was taken stored, then the lease released (``_leases.RELEASE``);
        the error ``run`` raises (a run no longer ours: why, from ``_check``)."""
        heartbeat.cancel()  # no renewal after the release (one in flight finds it HELD)
        # the release's calls have deadlines of their own: the watchdog's cancellation
        # would cut it short and hide its outcome
        self.writing.watchdog.unwatch(self, self.run_keys)
        with contextlib.suppress(Exception):  # what Redis acknowledged is what is stored
            await appends.drain()
        reply = await release(
            self.calls,
            self.settings,
            self.run_keys,
            self.keys,
            self.token,
            self.stored,
            self.generation,
        )
        self._check(reply)
        observe.handed_over()
        return StoreDraining(
            self.run_id,
            f"the store is draining: the run was handed over after event {self.stored} "
            "(its lease released, the run not ended) for a producer elsewhere to "
            "continue with replay=True",
        )

    def unavailable(self, reason: str) -> None:
        """Redis has been silent too long (the store's watchdog): stop, raising
        ``StoreUnavailable`` (the run is not ended: its lease will be)."""
        if self.lost is None and self.main is not None and not self.ending:
            self.lost = error = StoreUnavailable(self.run_id, reason)
            self.calls.outage.unavailable(error)
            self.main.cancel()

    async def run(self) -> int:
        main = self.main = asyncio.current_task()
        assert main is not None
        loop = asyncio.get_running_loop()
        finished = self.finished = loop.create_future()
        self.writing.live.add(self)
        followers = self.followers
        self.releasing = self.releasing or self.writing.handed_over  # claimed as it drained
        # the claim took the lease (``_claim`` says when it was sent: no later than
        # Redis set it); a run whose task started late renews at once
        self.renewed = min(self.renewed, loop.time())
        watchdog = self.writing.watchdog
        watchdog.watch(self, self.run_keys)
        heartbeat = self.heartbeat = Heartbeat(self, main)
        source = Source(self.events, None, asyncio.get_running_loop(), logger)
        skip = self.stored  # a retried run: these are stored already
        appends = Appends(self.append, skip + 1, self.settings.batch, self.settings.page_bytes)
        count = 0
        terminal = 0  # the index of the producer's terminal event, once produced
        try:
            try:
                if self.releasing:
                    raise await self._release(appends, heartbeat)
                while True:
                    try:
                        event = await source.next()
                    except StopAsyncIteration:
                        break
                    count += 1
                    if self.snapshots is not None:
                        self.snapshots.produced(event)
                    if count > skip and appends.add(admit(event, count)):
                        await appends.room()
                    if event_type(event) in TERMINAL:
                        terminal = count
                self.finishing = True
                await appends.drain()
                await self._finish("finished")
                return count
            except asyncio.CancelledError:
                self.ending = True
                if self.lost is not None:
                    await self._lose(self.lost)
                    raise self.lost from None
                if self.releasing:
                    raise await self._release(appends, heartbeat) from None
                await self._end_with(appends, terminal, "cancelled", None)
                raise
            except StoreFull as exc:  # the run ends failed, said so, if Redis lets it
                self.ending = True
                await self._end_with(appends, terminal, "failed", exc)
                raise
            except StoreError as exc:
                self.ending = True
                await self._lose(exc)
                raise
            except Exception as exc:
                self.ending = True
                await self._end_with(appends, terminal, "failed", exc)
                raise
        finally:
            # its end (or what ended it) is in Redis: its readers read on from there;
            # Redis silent past the lease: they learn it now, as the producer did
            failed = sys.exc_info()[1]
            followers.end(unavailable=failed if isinstance(failed, StoreUnavailable) else None)
            self.finishing = True  # nothing left to hand over
            watchdog.unwatch(self, self.run_keys)
            heartbeat.cancel()
            appends.cancel()
            try:
                await source.close()
            finally:
                self.writing.live.discard(self)
                finished.set_result(None)

    async def end_unstarted(self) -> None:
        """The run's task was cancelled before it ran (a shutdown in the step that
        started it): the run ends as ``run`` ends a cancelled one, the events are
        closed unstarted."""
        settings = self.settings
        appends = Appends(self.append, self.stored + 1, settings.batch, settings.page_bytes)
        try:
            await self._end_with(appends, 0, "cancelled", None)
        finally:
            self.followers.end()  # readers that opened meanwhile read its end from the stream
            await close_unstarted(self.events, logger)

    async def _lose(self, exc: BaseException) -> None:
        """Redis lost events it had acknowledged (``RunLost``, not a run produced
        again): end the run with a ``RUN_ERROR`` (code ``RUN_LOST``) past every
        event sent (``LOSE``), so its readers learn it now, not when the lease lapses."""
        if not isinstance(exc, RunLost) or isinstance(exc, RunReplaced):
            return
        try:
            await self.calls.script(
                self.run_keys,
                LOSE,
                self.keys,
                [
                    self.token,
                    self.settings.ttl_ms,
                    self.sent,
                    encode_payload(LOST_EVENT),
                    self.generation,
                    self.done,
                ],
                durable=True,
            )
        except Exception as err:  # its lease ends it for everyone then
            logger.error("could not end run %r after it was lost", self.run_id, exc_info=err)

    async def _end_with(
        self,
        appends: Appends,
        terminal: int,
        reason: Literal["cancelled", "failed"],
        exc: Exception | None,
    ) -> None:
        """End the run after a failure: what was produced, a RUN_ERROR (unless the
        last event stored is the producer's terminal one), the end (one script,
        which runs even when Redis is out of memory)."""
        try:
            with contextlib.suppress(Exception):  # the RUN_ERROR follows what Redis has
                await appends.drain()
            error = failure_event(exc)
            reply = await self.calls.script(
                self.run_keys,
                FAIL,
                self.keys,
                [
                    self.token,
                    self.settings.ttl_ms,
                    self.stored,
                    reason,
                    self.generation,
                    self.done,
                    encode_payload(error),
                    terminal,
                ],
                durable=True,
            )
            self._check(reply)
        except Exception as err:
            logger.error("could not end run %r after a failure", self.run_id, exc_info=err)
