"""The live side of reading: one process follows every run it has readers of through
a few blocking connections, and hands each batch, as one shared object, to every
local reader's inbox.

Strategy: runs are grouped into *lanes*; a lane is one task and, while it waits,
one connection, parked in a single ``XREAD BLOCK`` over all its runs' streams (at
each run's last position) and a *bell* stream of its own. A run joining a lane
rings the bell (an ``XADD`` through the command pipeline), so the lane returns and
re-arms with the new key at once; a run leaving is dropped at the next re-arm.
In a Redis Cluster an ``XREAD`` may only name keys of one slot, so a lane holds
the runs of one shard (``_keys``: a shard is one hash tag); on one Redis any runs
share a lane. A lane takes at most ``LANE_KEYS`` runs while there are fewer than
``MAX_LANES`` lanes, so 10,000 live runs cost ten blocking connections (and the
command lanes of ``_pipeline``), never one per run.

Lease checks: a run is checked (the EXPIRE script) only when it has been quiet
for as long as its producer's lease could last: ``lease`` after its last event,
then whenever the lease's remaining time says it would lapse. One sweeper task
per process does this every ``poll`` seconds, through the command pipeline; so a
producer that died ends its run with ``RUN_ERROR`` (``LEASE_EXPIRED``) for every
reader within ``lease + poll`` of its last heartbeat, and a run that is flowing
costs no check at all.

Contract: ``Tails.attach(keys, position, inbox)`` makes the inbox receive every
batch after the run's tail position (the reader fills any gap from its own
position from Redis) until the run's end, or the error that stopped the run's
tail; ``detach`` when the reader leaves. A tail that finds its next events
trimmed jumps to the oldest stored one (each reader fills the gap from its own
position: ``HistoryTrimmed`` for a reader that needed them). An error of one run
(its stream lost or not a stream) fails that run's readers only; Redis
unreachable for ``reconnect`` seconds fails every run of the lane with
``StoreUnavailable``. ``cancel`` (the store closes) fails every reader with
``StoreUnavailable`` at once, also those attaching later, whatever the lanes'
tasks do (even cancelled before they ran).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
from collections.abc import Mapping
from typing import Any, Final

from redis.exceptions import ResponseError

from .._codec.selected import frame, pack_commands
from .._decoder import decode_proto
from .._runstore import observe
from .._runstore.ids import CLOSED, new_generation
from .._runstore.read import Inbox
from .._streaming import TERMINAL
from ..errors import (
    HistoryTrimmed,
    RunLost,
    RunReplaced,
    StoreCorrupted,
    StoreError,
    StoreUnavailable,
)
from ._calls import Calls, passes
from ._entries import entries
from ._keys import LOST, RunKeys
from ._leases import expire, terminal_at
from ._pipeline import send, within
from ._scripts import Reply
from ._settings import MAX_LANES, Settings

logger = logging.getLogger("agui_wire.redis")

#: Runs per lane (per ``XREAD``) before another lane is opened, and the most lanes.
LANE_KEYS: Final = 1024
_FIRST_COUNT: Final = 4  # entries per stream in a lane's first read (then sized by bytes)
# A lane waits _COALESCE s per run after each read (1,024 runs: 10 ms), and at least
# _COALESCE_MIN, before it re-arms, so that a read serves many events: the ``XREAD``
# names every run, so its cost grows with the lane, not with the events, and a
# lane that re-arms per event pays it per event (and a round trip).
_COALESCE_MIN: Final = 0.002
_COALESCE: Final = 1e-5
#: A lane's read this much past its ``BLOCK`` time is a stall (lease checks wait).
STALL_SLACK: Final = 0.25


class TailRun:
    """A run this process follows: its position and its local readers."""

    __slots__ = (
        "due",
        "generation",
        "inboxes",
        "key",
        "keys",
        "lane",
        "last_payload",
        "position",
        "short",
        "since",
    )

    def __init__(self, keys: RunKeys, position: int, generation: int | None) -> None:
        self.keys = keys
        self.key = keys.stream.encode()  # as the lane's XREAD names it
        self.position = position  # the last event read
        self.generation = generation  # the run's (None: learnt from its first entry)
        self.since = b"%d-%d" % (position, generation or 0)  # the lane reads after it
        self.last_payload: bytes | None = None  # of event ``position``, if read here
        self.inboxes: set[Inbox] = set()
        self.lane: _Lane | None = None
        self.due = 0.0  # when the lease is next checked (loop time)
        # since when Redis holds fewer events than read here (a failover), its lease live
        self.short: float | None = None

    def terminal(self) -> bool:
        """Is event ``position`` a terminal one (decoded only when asked)?"""
        if self.last_payload is None:
            return False
        event = decode_proto(frame(self.last_payload), unknown_events="raw")[0]
        return event.get("type") in TERMINAL


class Tails:
    """This process's lanes and the runs they follow (see the module doc)."""

    def __init__(self, settings: Settings, calls: Calls) -> None:
        self.settings = settings
        self.calls = calls
        # by node: lease checks of its runs only look until then (a stall just ended)
        self.held: dict[str, float] = {}
        self.runs: dict[str, TailRun] = {}  # by stream key
        self.lanes: dict[int | None, list[_Lane]] = {}  # by shard (cluster) / None
        self.sweeper: asyncio.Task[None] | None = None
        self.checks: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def attach(self, keys: RunKeys, position: int, generation: int | None, inbox: Inbox) -> TailRun:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # a store used from a new event loop: start afresh
            self.loop = loop
            self.runs, self.lanes, self.sweeper, self.checks = {}, {}, None, set()
        if self.closed:
            inbox.fail(_closed(keys.run_id))
            return TailRun(keys, position, generation)  # followed by no lane
        run = self.runs.get(keys.stream)
        if run is None:
            run = self.runs[keys.stream] = TailRun(keys, position, generation)
            run.due = asyncio.get_running_loop().time() + self.settings.poll
            self._place(run)
        run.inboxes.add(inbox)
        if self.sweeper is None:
            self.sweeper = asyncio.ensure_future(self._sweep())
        return run

    def detach(self, run: TailRun, inbox: Inbox) -> None:
        run.inboxes.discard(inbox)
        if not run.inboxes:
            self.drop(run)

    def drop(self, run: TailRun) -> None:
        if self.runs.get(run.keys.stream) is run:
            del self.runs[run.keys.stream]
        lane = run.lane
        if lane is not None and lane.runs.get(run.key) is run:
            del lane.runs[run.key]

    def fail(self, run: TailRun, error: BaseException) -> None:
        for inbox in run.inboxes:
            inbox.fail(error)
        self.drop(run)

    def _place(self, run: TailRun) -> None:
        group = run.keys.shard if self.settings.cluster else None
        lanes = self.lanes.setdefault(group, [])
        lane = min(lanes, key=lambda lane: len(lane.runs), default=None)
        total = sum(map(len, self.lanes.values()))
        if lane is None or (len(lane.runs) >= LANE_KEYS and total < MAX_LANES):
            lane = _Lane(self, group)
            lanes.append(lane)
        lane.add(run)

    def cancel(self) -> None:
        self.closed = True
        lanes = [lane for lanes in self.lanes.values() for lane in lanes]
        for lane in lanes:  # told now, not when the lane's read lets go (it may not:
            lane._close()  # redis-py's read, cancelled, can wait for a stalled Redis)
        for task in [self.sweeper, *(lane.task for lane in lanes), *self.checks]:
            if task is not None:
                task.cancel()

    # -- lease checks ------------------------------------------------------------------

    async def _sweep(self) -> None:
        poll = self.settings.poll
        loop = asyncio.get_running_loop()
        try:
            while self.runs:
                await asyncio.sleep(poll)
                now = loop.time()
                for run in [run for run in self.runs.values() if run.due <= now]:
                    run.due = math.inf  # being checked
                    task = asyncio.ensure_future(self._check(run))
                    self.checks.add(task)
                    task.add_done_callback(self.checks.discard)
        finally:
            self.sweeper = None

    def _stalled(self, node: str, now: float) -> bool:
        """Is a read of a lane on ``node`` overdue (the node not answering)? A run's
        lease may lapse in Redis meanwhile while its producer's renewal waits in a
        socket."""
        limit = self.settings.poll + STALL_SLACK
        return any(
            lane.node == node and lane.reading is not None and now - lane.reading > limit
            for lanes in self.lanes.values()
            for lane in lanes
        )

    def hold(self, node: str, until: float) -> None:
        """Lease checks of the runs on ``node`` only look until ``until``: it stalled."""
        self.held[node] = max(self.held.get(node, -math.inf), until)

    async def _check(self, run: TailRun) -> None:
        settings = self.settings
        keys = run.keys
        generation = run.generation
        if generation is None:
            generation = new_generation(keys.run_id)
        now = asyncio.get_running_loop().time()
        # Redis stalled just now: look only, ending the run would race the
        # producer's renewal (it may be waiting in a socket)
        node = run.lane.node if run.lane is not None else ""
        look = now < self.held.get(node, -math.inf) or self._stalled(node, now)
        try:
            if run.last_payload is not None or not run.position:
                terminal = run.terminal()
            else:  # replayed by its readers, not read by this tail
                terminal = await terminal_at(self.calls, keys, run.position)
            reply = await expire(
                self.calls,
                settings,
                keys,
                run.position,
                terminal=terminal,
                generation=generation,
                look=look,
            )
        except StoreError as exc:
            self.fail(run, exc)
            return
        except Exception as exc:
            logger.error("lease check of run %r failed", keys.run_id, exc_info=exc)
            self.fail(run, exc)
            return
        now = asyncio.get_running_loop().time()
        code = int(reply[0])
        short, run.short = run.short, None
        if code == Reply.LOST:
            held = int(reply[1])
            if int(reply[2]) != -2:  # its producer lives: it stores again what Redis
                # did not acknowledge (the same events), or ends the run RUN_LOST, by
                # its next append or renewal; else the run is lost for good
                run.short = now if short is None else short
                if now - run.short < settings.lease / 3 + 2 * settings.poll:
                    run.due = now + settings.poll
                    return
            self.fail(
                run,
                RunLost(
                    keys.run_id,
                    LOST
                    if not held
                    else f"Redis holds {held} events of the run, {run.position} were read: "
                    "a failover lost events it had acknowledged",
                ),
            )
        elif code == Reply.REPLACED:
            self.fail(
                run,
                RunReplaced(
                    keys.run_id,
                    "the stream holds another generation of the run now (entry "
                    f"{bytes(reply[2]).decode()}): the run was lost and produced again",
                ),
            )
        elif code == Reply.DONE:  # the lease lives: look again when it would lapse
            lapse = int(reply[2]) / 1000 if len(reply) > 2 else settings.poll
            run.due = now + min(max(lapse, settings.poll), settings.lease)
        else:  # ended, or ended by this check, or events to read: the lane reads them
            run.due = now + settings.poll


class _Lane:
    """One blocking ``XREAD`` over many runs' streams (see the module doc)."""

    def __init__(self, tails: Tails, group: int | None) -> None:
        self.tails = tails
        self.group = group
        self.runs: dict[bytes, TailRun] = {}  # by stream key
        layout = tails.settings.layout
        tag = layout.tags[group if group is not None else 0]
        self.bell = f"{layout.prefix}{{{tag}}}bell:{secrets.token_hex(8)}".encode()
        self.bell_id = b"0-0"
        self.rung = False  # since the last read returned
        self.count = min(_FIRST_COUNT, tails.settings.batch)
        self.task: asyncio.Task[None] | None = None
        self.ringing: set[asyncio.Task[None]] = set()
        self.connection: Any = None  # held while the lane lives (one Redis)
        self.heard = 0.0  # loop time Redis last answered the lane
        self.node = ""  # the node its last read went to
        self.reading: float | None = None  # loop time the pending read was sent
        self.counted: observe.Live | None = None  # telemetry: agui.store.lanes

    def add(self, run: TailRun) -> None:
        self.runs[run.key] = run
        run.lane = self
        if self.task is None:
            self.task = asyncio.ensure_future(self._loop())
            self.task.add_done_callback(self._ended)
            self.counted = observe.lanes_opened(observe.READ)
        elif not self.rung:
            self.rung = True
            ring = asyncio.ensure_future(self._ring())
            self.ringing.add(ring)
            ring.add_done_callback(self.ringing.discard)

    async def _ring(self) -> None:
        calls = self.tails.calls
        bell = self.bell
        with contextlib.suppress(Exception):  # the lane re-arms after ``poll`` anyway
            call = calls.lanes(calls.node(bell)).call
            await asyncio.gather(
                call("XADD", bell, "MAXLEN", "1", "*", "r", "1"),
                call("PEXPIRE", bell, 60_000),
            )

    async def _loop(self) -> None:
        tails = self.tails
        settings, calls = tails.settings, tails.calls
        loop = asyncio.get_running_loop()
        self.heard = loop.time()  # Redis last answered this lane
        delay = 0.05
        try:
            while self.runs:
                runs = self.runs.values()
                self.rung = False
                # the read's deadline: the blocking time and a margin, and no later
                # than Redis silent for ``silence`` s (then the runs fail)
                deadline = min(settings.read_timeout, self.heard + settings.silence - loop.time())
                self.reading = start = loop.time()
                try:
                    self.node = calls.node(self.bell)
                    reply = await self._read(
                        max(0.05, deadline),
                        b"XREAD",
                        b"COUNT",
                        self.count,
                        b"BLOCK",
                        settings.poll_ms,
                        b"STREAMS",
                        *self.runs,
                        self.bell,
                        *[run.since for run in runs],
                        self.bell_id,
                    )
                except Exception as exc:
                    if not passes(exc):
                        if not isinstance(exc, ResponseError):
                            raise
                        self.reading = None
                        await self._blame(exc)
                        continue
                    now = loop.time()
                    self.reading = None
                    tails.hold(self.node, now + settings.lease)  # the producer renews first
                    if now - self.heard >= settings.silence:
                        where = f"Redis ({self.node})" if self.node else "Redis"
                        error = StoreUnavailable(
                            "*", f"{where} did not answer for {now - self.heard:.1f} s: {exc}"
                        )
                        calls.outage.unavailable(error)
                        for run in list(self.runs.values()):
                            self.tails.fail(run, _for_run(error, run))
                        break
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 1.0)
                    await calls.heal(self.node)
                    for run in self.runs.values():  # back: did Redis keep the runs?
                        run.due = min(run.due, now)
                    continue
                now = self.heard = loop.time()
                calls.hear(self.node, now)
                if calls.outage.since is not None:
                    calls.outage.answered()
                self.reading = None
                if now - start > settings.poll + STALL_SLACK:  # Redis stalled, now back:
                    tails.hold(self.node, now + settings.lease)  # the producer renews first
                delay = 0.05
                self._dispatch(reply, now)
                # a re-arm costs O(runs): let a few more arrive
                await asyncio.sleep(max(_COALESCE_MIN, len(self.runs) * _COALESCE))
        except asyncio.CancelledError:  # the store closes: readers may resume elsewhere
            self._close()
            raise
        except BaseException as exc:
            logger.error("a tail of the run store failed", exc_info=exc)
            for run in list(self.runs.values()):
                self.tails.fail(run, exc)
        finally:  # no runs left (no await since the loop's test): the lane is gone
            self._leave()
            if self.connection is not None:
                connection, self.connection = self.connection, None
                await calls.redis.connection_pool.release(connection)

    def _close(self) -> None:
        for run in list(self.runs.values()):
            self.tails.fail(run, _closed(run.keys.run_id))

    def _leave(self) -> None:
        lanes = self.tails.lanes.get(self.group, [])
        if self in lanes:
            lanes.remove(self)
        self.task = None
        observe.ended(self.counted)

    def _ended(self, task: asyncio.Task[None]) -> None:
        # A lane cancelled before it ran (the store closed in the step that made it)
        # never ran ``_loop``: its readers are told here, and it leaves.
        if self.task is task:
            self._close()
            self._leave()

    async def _read(self, timeout: float, *args: Any) -> Any:
        """The lane's ``XREAD``, within ``timeout`` s (else redis-py's
        ``TimeoutError``, the connection dropped). On one Redis, on a connection
        the lane keeps, the command packed in one C call (a lane names a thousand
        keys per read; redis-py would encode each in Python); in a cluster through
        the client, straight to the master of the lane's slot (else redis-py asks a
        node for the keys of every read, on a connection of its own)."""
        return await within(self._xread(*args), timeout, "to a blocking read")

    async def _xread(self, *args: Any) -> Any:
        calls = self.tails.calls
        if calls.cluster:
            # to the node itself: a slot that moved is an error the lane retries
            # (redis-py would follow it, but cannot route a bytes command name);
            # bytes command name: no reply callback (the same raw shape as below)
            node = calls.redis.get_node_from_key(self.bell.decode())
            return _pairs(await node.execute_command(*args))
        data = pack_commands((args,))
        pool = calls.redis.connection_pool
        if self.connection is None:
            self.connection = await pool.get_connection()
        connection = self.connection
        try:
            await send(connection, data)
            # as Redis sent it (RESP2 or 3); the deadline is ours, not socket_timeout
            reply = await connection.read_response(timeout=math.inf)
        except ResponseError:
            raise
        except BaseException:
            self.connection = None
            await connection.disconnect()
            await pool.release(connection)
            raise
        return _pairs(reply)

    def _dispatch(self, reply: list[tuple[bytes, list[Any]]], now: float) -> None:
        tails = self.tails
        settings = tails.settings
        biggest = 0
        for key, found in reply:
            if key == self.bell:
                if found:
                    self.bell_id = found[-1][0]
                continue
            run = self.runs.get(key)
            if run is None or not found:
                continue  # left meanwhile
            try:
                try:
                    batch, ended = entries(run.keys, run.position, run.generation, found)
                except HistoryTrimmed as exc:  # the tail jumps; each reader fills the gap
                    # from its own position from Redis (a reader ahead skips it; one
                    # behind gets HistoryTrimmed or RunLost from the pages: which)
                    batch, ended = entries(run.keys, exc.first - 1, run.generation, found)
            except StoreError as exc:
                tails.fail(run, exc)
                continue
            run.generation = batch.generation
            if batch.payloads:
                run.position = batch.last
                run.since = b"%d-%d" % (batch.last, batch.generation or 0)
                run.last_payload = batch.payloads[-1]
                biggest = max(biggest, max(map(len, batch.payloads)))
            run.due = now + settings.lease
            for inbox in run.inboxes:
                inbox.push(batch)
            if ended:
                tails.drop(run)
        if biggest:  # about a page of the biggest event seen per stream, next time
            self.count = max(1, min(settings.batch, settings.page_bytes // biggest))
        else:
            self.count = min(settings.batch, self.count * 2)

    async def _blame(self, exc: ResponseError) -> None:
        """The ``XREAD`` was refused: fail the runs whose key is not a stream (or
        every run, when none is to blame)."""
        calls = self.tails.calls
        runs = list(self.runs.values())
        types = await asyncio.gather(
            *(calls.call(run.keys, "TYPE", run.keys.stream) for run in runs),
            return_exceptions=True,
        )
        blamed = False
        for run, kind in zip(runs, types, strict=True):
            kind = kind.decode() if isinstance(kind, bytes) else kind
            if isinstance(kind, BaseException) or kind not in ("stream", "none"):
                blamed = True
                self.tails.fail(
                    run,
                    StoreCorrupted(
                        run.keys.run_id, run.keys.stream, None, f"the key is a {kind}, not a stream"
                    ),
                )
        if not blamed:
            for run in runs:
                self.tails.fail(run, StoreError(run.keys.run_id, f"Redis refused a read: {exc}"))


def _pairs(reply: Any) -> list[tuple[bytes, list[Any]]]:
    """``(key, entries)`` of an ``XREAD`` reply as Redis sent it (RESP2 or 3)."""
    if not reply:
        return []
    return list(reply.items()) if isinstance(reply, Mapping) else [(k, v) for k, v in reply]


def _closed(run_id: str) -> StoreUnavailable:
    return StoreUnavailable(run_id, CLOSED)


def _for_run(error: StoreUnavailable, run: TailRun) -> StoreUnavailable:
    return StoreUnavailable(run.keys.run_id, error.reason)
