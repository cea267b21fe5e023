"""Auto-pipelining: every short Redis command of one store goes through a fixed,
small number of connections per Redis node, however many runs are live.

Strategy: callers queue a command and await its reply; ``lanes`` worker tasks
each take what is queued (up to ``MAX_BATCH`` commands) and send it as one
non-transactional pipeline, one round trip for all of them. So a thousand
producers appending at once cost a few pipelines, not a thousand connections
(redis-py's pool refuses the 101st), and nobody waits for a connection that a
reader holds: blocking reads (``_tails``) never come through here. A quiet store
sends each command at once (an idle lane takes it; a lane with nothing to send
waits ``IDLE`` s for more, keeping its task and connection, then lets them
go); a busy one batches by itself, with no timer. A round trip runs in its
lane's task alone (the write and the deadline included). A ``Pipeliner`` serves
one node (``_calls`` keeps one per node of a cluster, so a stalled master holds
up only its own commands): everything it sends goes to that node alone, never
redirected (a slot that moved is an error its caller retries on the slot's new
node).

Contract: ``call`` returns the command's reply as redis-py parses it, or raises
its error; an error of the pipeline as a whole (the connection) is raised to
every command in it, and the caller retries (the store's scripts are
idempotent). A round trip has ``timeout`` seconds (whatever the client's
``socket_timeout``; on one Redis, ``timeout`` seconds without a reply: a long
pipeline read by a lagging replica is not a silent Redis): past it the connection
is dropped and every command gets redis-py's ``TimeoutError``, so a stalled or
black-holed Redis never holds a lane for good. ``heard`` is when its node last
answered (the store's watchdog reads it). ``EVALSHA`` of a script Redis does not
hold (a restart, a failover to a replica that never saw ``SCRIPT LOAD``) loads it
and sends the command again.
Commands of a caller cancelled before they were sent are dropped. After
``close`` every command queued, in flight or called later fails at once with
``CLOSED`` (a connection error: the store's retries stop on it).
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError, NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .._codec.selected import pack_commands
from .._runstore.ids import CLOSED
from ._scripts import Script

MAX_BATCH: Final = 256  # commands per pipeline
#: Seconds a lane with nothing to send waits for the next command before it ends
#: and gives its connection back: a store that keeps up sends a round trip every
#: event or two, and a lane per round trip (a task, a connection taken from the
#: pool and checked, given back) cost about as much as the round trip itself.
IDLE: Final = 1.0
#: Seconds between two round trips of a node's lanes while it is busy (not full
#: pipelines): a round trip costs the replica about 100 µs of CPU (a lane's
#: wakeup, a write, a read, turns of the loop), so at token speed an append per
#: round trip costs several times the event; 2 ms gathers ~50 at 25,000 events/s
#: (1 ms: 36, and 7-12% more CPU per event), for 1.3 ms more at the median. The
#: command lanes' (``linger``); page lanes send at once (a page is worth its round
#: trip, and a reader asks for the next page only once it has this one).
LINGER: Final = 0.002

T = TypeVar("T")


class _Watch:
    """Ends ``deadline`` (now) once ``progress`` has not moved for ``seconds``.
    An object, not a closure that schedules itself: that closure holds itself in
    a cell, a reference cycle per round trip that only the cyclic GC frees (the
    young collections it sets off pause every run on the loop); the cancelled
    timer lets go of its callback, so nothing here outlives the round trip."""

    __slots__ = ("deadline", "loop", "progress", "seconds", "seen", "timer")

    def __init__(self, deadline: Any, progress: Callable[[], int], seconds: float) -> None:
        self.deadline = deadline
        self.loop = asyncio.get_running_loop()
        self.progress = progress
        self.seconds = seconds
        self.seen = progress()
        self.timer = self.loop.call_later(seconds, self.look)

    def look(self) -> None:
        if self.progress() == self.seen:
            self.deadline.reschedule(self.loop.time())  # silent for ``seconds``
        else:
            self.seen = self.progress()
            self.timer = self.loop.call_later(self.seconds, self.look)

    def cancel(self) -> None:
        self.timer.cancel()


async def within(
    aw: Awaitable[T],
    seconds: float,
    what: str = "from Redis",
    progress: Callable[[], int] | None = None,
) -> T:
    """``await aw`` with a deadline of the store's own (the client's socket_timeout
    may be none): past it, redis-py's ``TimeoutError``, retried like a lost connection.
    In the caller's task where ``asyncio.timeout`` exists (3.11): ``wait_for`` runs
    ``aw`` in a task of its own, whose error is never retrieved when the caller is
    cancelled as the connection fails (a shutdown: "Task exception was never
    retrieved" logged). With ``progress`` (3.11; a count of replies read), the
    deadline is ``seconds`` without one: Redis answering a long round trip, read
    slowly by a replica whose loop lags, is not a silent Redis."""
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(None if progress else seconds) as deadline:
                if progress is None:
                    return await aw
                watch = _Watch(deadline, progress, seconds)
                try:
                    return await aw
                finally:
                    watch.cancel()
        return await asyncio.wait_for(aw, seconds)
    except asyncio.TimeoutError:
        raise RedisTimeoutError(f"no reply {what} within {seconds:g} s") from None


async def send(connection: Any, data: bytes) -> None:
    """``data`` written on a held ``connection`` in the caller's task. redis-py's
    ``send_packed_command`` writes in a task of its own whenever the connection
    has a ``socket_timeout`` (its default: 5 s; ``wait_for``): a task and two loop
    iterations more per round trip, where the store's callers have a deadline of
    their own (``within``). A connection without the writer redis-py keeps goes
    through redis-py."""
    writer = getattr(connection, "_writer", None)
    if writer is None or writer.transport.is_closing():
        await connection.send_packed_command(data, check_health=False)
        return
    writer.write(data)
    await writer.drain()


class Then(Protocol):
    """What a submitted call's reply (or its error) is handed to (``replied``), in
    the lane's task as it is read, while its future is not done: an object its
    caller has already, not a callback made per call (one per event, each alive
    until its reply: an object more for the young GC to trace)."""

    def replied(self, reply: Any) -> None: ...


class _Call:
    """One command queued: ``args`` as sent, or, with ``keys``, the arguments of
    a call of ``script`` (``EVALSHA``, built as it is sent: ``command``), which
    calls of its ``many`` script queued with it may join (``_Many``). ``script``:
    the script a ``NOSCRIPT`` reply loads (``None``: a plain command)."""

    __slots__ = ("args", "durable", "future", "keys", "script", "then")

    def __init__(
        self,
        args: Sequence[Any],
        future: asyncio.Future[Any] | None,
        then: Then | None,
        script: Script | None,
        keys: Sequence[Any] | None,
        durable: bool,
    ) -> None:
        self.args = args
        self.future = future
        self.then = then
        self.script = script
        self.keys = keys
        self.durable = durable  # a write answered once ``acks`` replicas have it

    def command(self) -> Sequence[Any]:
        """The command as sent alone."""
        keys = self.keys
        if keys is None:
            return self.args
        assert self.script is not None
        return self.script.command(keys, self.args)

    def settle(self, reply: Any) -> None:
        """Its reply (an exception: raised to its caller)."""
        future = self.future
        if future is None or future.done():
            return
        if self.then is not None:
            self.then.replied(reply)
        elif isinstance(reply, BaseException):
            future.set_exception(reply)
        else:
            future.set_result(reply)

    def cancel(self) -> None:
        if self.future is not None:
            self.future.cancel()


class _Many(_Call):
    """Calls of one script sent as one call of its ``many`` script (one Redis:
    every key on one node), each settled by its own part of the reply. The
    command is built from each call's keys and arguments as given (``_MANY``'s
    layout: every key, the count of calls, each call's counts, every argument)."""

    __slots__ = ("calls",)

    def __init__(self, many: Script, calls: list[_Call]) -> None:
        command: list[Any] = ["EVALSHA", many.sha, 0]
        counts: list[int] = [len(calls)]
        durable = False
        for call in calls:
            keys = call.keys
            assert keys is not None
            command += keys
            counts += (len(keys), len(call.args))
            durable = durable or call.durable
        command[2] = len(command) - 3
        command += counts
        for call in calls:
            command += call.args
        super().__init__(command, None, None, many, None, durable)
        self.calls = calls

    def settle(self, reply: Any) -> None:
        if isinstance(reply, BaseException) or not isinstance(reply, list):
            for call in self.calls:
                call.settle(reply)
            return
        for call, own in zip(self.calls, reply, strict=True):
            call.settle(own)

    def cancel(self) -> None:
        for call in self.calls:
            call.cancel()


def _combined(calls: list[_Call]) -> list[_Call]:
    """``calls`` with those of a ``many`` script sent as one call each script (in
    the place of the first: one connection runs its commands in order, and calls
    of one run are never reordered among themselves)."""
    groups: dict[Script, list[_Call]] = {}
    for call in calls:
        if call.keys is not None and call.script is not None and call.script.many is not None:
            groups.setdefault(call.script.many, []).append(call)
    if not any(len(group) > 1 for group in groups.values()):
        return calls
    out: list[_Call] = []
    for call in calls:
        script = call.script
        many = None if call.keys is None or script is None else script.many
        if many is None or len(groups[many]) < 2:
            out.append(call)
        elif groups[many][0] is call:
            out.append(_Many(many, groups[many]))
    return out


class _Held:
    """A lane's connection on one Redis (taken from the pool while the lane runs)."""

    __slots__ = ("connection", "replies")

    def __init__(self) -> None:
        self.connection: Any = None
        self.replies = 0  # read on it: a round trip's progress

    def read(self) -> int:
        return self.replies


class Pipeliner:
    """A store's command lanes to one Redis, or one node of a cluster (``node``: its
    name; every command is sent to it, none redirected) (see the module doc).
    ``acks``: replicas that must hold a durable write before it is answered;
    ``linger``: the least seconds between two round trips while busy."""

    def __init__(
        self,
        redis: Any,
        lanes: int,
        timeout: float,
        node: str | None = None,
        acks: int = 0,
        linger: float = LINGER,
    ) -> None:
        self.redis = redis
        self.lanes = lanes
        self.linger = linger
        self.timeout = timeout
        self.node = node
        self.acks = acks
        # WAIT's own deadline: within the round trip's, so a missing replica is a
        # refusal (retried), not a lost connection
        self.wait_ms = max(1, int(timeout * 500))
        self.heard = -math.inf  # loop time Redis last answered a round trip
        self.sent_at = -math.inf  # loop time a lane last took a round trip's commands
        self.queue: deque[_Call] = deque()
        self.busy = 0  # lanes sending
        self.tasks: set[asyncio.Task[None]] = set()
        self.idle: list[asyncio.Future[bool]] = []  # lanes waiting for a command
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed: RedisConnectionError | None = None

    async def call(self, *args: Any, durable: bool = False, first: bool = False) -> Any:
        """The command's reply (see the module doc). ``durable``: a write answered
        once ``acks`` replicas hold it. ``first``: ahead of what is queued (a lease's
        renewal: a replica that queues more than its lease of commands must not lose
        its runs' leases to its own queue)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.submit(args, future, None, None, None, durable, first)
        return await future

    async def script(
        self,
        script: Script,
        keys: Sequence[Any],
        args: Sequence[Any],
        *,
        durable: bool = False,
        first: bool = False,
    ) -> Any:
        """The reply of ``script`` run with ``keys`` and ``args`` (``call``'s
        ``durable`` and ``first``): its ``EVALSHA``, loaded when Redis lacks it;
        on one Redis, calls of a ``many`` script queued together go as one call
        of ``script.many``."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.submit(args, future, None, script, keys, durable, first)
        return await future

    def submit(
        self,
        args: Sequence[Any],
        future: asyncio.Future[Any],
        then: Then | None,
        script: Script | None,
        keys: Sequence[Any] | None,
        durable: bool,
        first: bool = False,
    ) -> None:
        """``call`` (``script`` with ``keys``: ``script``'s) without a coroutine of
        its own (a call per event): the reply is ``future``'s, or, with ``then``,
        handed to ``then.replied`` in the lane's task while ``future`` is not done (the
        caller settles ``future``). A ``future`` done before the call is sent
        drops it."""
        call = _Call(args, future, then, script, keys, durable and self.acks > 0)
        if self.closed is not None:
            call.settle(self.closed)
            return
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # first use, or a new event loop (tests)
            self.loop = loop
            self.tasks = set()
            self.idle = []
            self.busy = 0
            self.queue.clear()
        if first:
            self.queue.appendleft(call)
        else:
            self.queue.append(call)
        # a lane neither busy nor idle is about to take it (``_open`` counts the
        # idle ones still waiting; this bound needs no call: one per event)
        if len(self.tasks) <= self.busy + len(self.idle):
            self._open(loop)

    def _open(self, loop: asyncio.AbstractEventLoop) -> None:
        """A lane for what is queued, unless one will take it: a lane in ``tasks``,
        neither ``busy`` nor waiting in ``idle``, is about to drain the queue; a busy
        one drains it after its round trip, but an idle one is woken, or another
        opened, while fewer than ``lanes`` run."""
        if not self.idle:  # (the common case, a call per event: no list built)
            if len(self.tasks) > self.busy:
                return
            waiting = []
        else:
            waiting = [waiter for waiter in self.idle if not waiter.done()]
            if len(self.tasks) > self.busy + len(waiting):
                return
        if waiting:
            self.idle.remove(waiting[-1])
            waiting[-1].set_result(True)
        elif len(self.tasks) < self.lanes:
            task = loop.create_task(self._lane())
            self.tasks.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        # A lane cancelled before it ran (a shutdown cancels every task at once)
        # never ran its ``finally``: it leaves ``tasks`` here, and what was queued
        # for it (a cancelled producer's RUN_ERROR) gets a lane of its own.
        self.tasks.discard(task)
        if self.queue and task.get_loop() is self.loop and not task.get_loop().is_closed():
            self._open(task.get_loop())

    async def _lane(self) -> None:
        held = None if hasattr(self.redis, "get_node_from_key") else _Held()  # one Redis
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self._drain(held)
                waiter: asyncio.Future[bool] = loop.create_future()
                self.idle.append(waiter)
                timer = loop.call_later(IDLE, _wake, waiter, False)
                try:
                    woken = await waiter
                finally:
                    timer.cancel()
                    if waiter in self.idle:
                        self.idle.remove(waiter)
                if not woken and not self.queue:
                    return
        finally:
            # at once, before a caller can look at ``tasks`` again: a lane past its
            # last look at the queue no longer counts as one that will take a call
            self.tasks.discard(asyncio.current_task())  # type: ignore[arg-type,unused-ignore]
            if held is not None and held.connection is not None:
                await self.redis.connection_pool.release(held.connection)

    async def _drain(self, held: _Held | None) -> None:
        queue = self.queue
        loop = asyncio.get_running_loop()
        while queue:
            if len(queue) < MAX_BATCH:
                # a busy node gets a round trip per ``linger`` at most (a quiet one at
                # once): what is queued meanwhile goes in it too, and a round trip
                # costs the replica far more than the wait costs a command
                wait = self.sent_at + self.linger - loop.time()
                await asyncio.sleep(wait if wait > 0 else 0)
            self.sent_at = loop.time()
            calls: list[_Call] = []
            while queue and len(calls) < MAX_BATCH:
                call = queue.popleft()
                future = call.future  # (queued calls have one)
                if future is None or not future.done():  # cancelled callers are dropped
                    calls.append(call)
            if not calls:
                continue
            if held is not None:  # (one Redis: every key on the connection's node)
                calls = _combined(calls)
            self.busy += 1
            try:
                await self._send(calls, held)
            except BaseException as exc:  # the connection (or we were cancelled: ``close``)
                error = exc if isinstance(exc, Exception) else self.closed
                for call in calls:
                    if error is None:
                        call.cancel()
                    else:
                        call.settle(error)
                if not isinstance(exc, Exception):
                    raise
            finally:
                self.busy -= 1

    async def _send(self, calls: list[_Call], held: _Held | None) -> None:
        # a deadline per round trip, running while replies come in (on one Redis)
        progress = None if held is None else held.read
        replies = await within(self._replies(calls, held), self.timeout, progress=progress)
        self.heard = asyncio.get_running_loop().time()
        for call, reply in zip(calls, replies, strict=True):
            call.settle(reply)

    async def _replies(self, calls: list[_Call], held: _Held | None) -> list[Any]:
        async def execute(batch: list[_Call]) -> list[Any]:
            commands = [call.command() for call in batch]
            durable = any(call.durable for call in batch)
            if durable:  # (WAIT counts this connection's writes before it)
                commands.append(("WAIT", self.acks, self.wait_ms))
            if held is None:
                replies = await self._pipeline(commands)
            else:
                replies = await self._raw(commands, held)
            if durable:
                replies = self._waited(batch, replies)
            return replies

        replies = await execute(calls)
        missing = [c for c, r in zip(calls, replies, strict=True) if isinstance(r, NoScriptError)]
        if missing:
            for script in {c.script for c in missing if c.script is not None}:
                await self._load(script.body)
            again = dict(zip(map(id, missing), await execute(missing), strict=True))
            replies = [again.get(id(c), r) for c, r in zip(calls, replies, strict=True)]
        return replies

    def _waited(self, batch: list[_Call], replies: list[Any]) -> list[Any]:
        """The replies to ``batch``, its ``WAIT`` last: when fewer than ``acks``
        replicas acknowledged its writes in time, a durable write's reply is a
        ``NOREPLICAS`` refusal instead (the write stands on the master; the
        caller retries, and the store's scripts are idempotent)."""
        waited = replies.pop()
        if not isinstance(waited, Exception) and int(waited) >= self.acks:
            return replies
        short = ResponseError(
            f"NOREPLICAS {waited} of {self.acks} replicas acknowledged the write within "
            f"{self.wait_ms} ms"
        )
        return [
            short if call.durable and not isinstance(reply, Exception) else reply
            for call, reply in zip(batch, replies, strict=True)
        ]

    async def _load(self, body: str) -> None:
        """``SCRIPT LOAD`` on the lanes' node (a cluster client would ask every
        master, and wait for a stalled one)."""
        if self.node is None:
            await self.redis.script_load(body)
        else:
            node = self.redis.get_node(node_name=self.node)
            await self.redis.execute_command("SCRIPT LOAD", body, target_nodes=node)

    async def _pipeline(self, commands: list[Sequence[Any]]) -> list[Any]:
        """Through redis-py's pipeline (a cluster: it routes each command by slot)."""
        pipe = self.redis.pipeline(transaction=False)
        if self.node is None:  # (a cluster client of one node)
            for args in commands:
                pipe.execute_command(*args)
            return list(await pipe.execute(raise_on_error=False))
        # Every command to this node, not redirected: a script loaded here, and a
        # WAIT here, concern the commands sent here; a slot that moved is an error
        # the caller retries on its new node.
        node = self.redis.get_node(node_name=self.node)
        for args in commands:
            pipe.execute_command(*args, target_nodes=node)
        return list(await pipe.execute(raise_on_error=False, allow_redirections=False))

    async def _raw(self, commands: list[Sequence[Any]], held: _Held) -> list[Any]:
        """On one Redis: packed in one C call (``pack_commands``; redis-py's pipeline
        encodes every argument in Python) on the lane's own connection, replies as
        Redis sent them, parsed by redis-py (by hiredis when it is installed)."""
        try:
            data = pack_commands(commands)
        except TypeError as exc:  # an argument redis-py refuses: its class, its words
            raise DataError(str(exc)) from exc
        pool = self.redis.connection_pool
        if held.connection is None:
            held.connection = await pool.get_connection()
        connection = held.connection
        replies: list[Any] = []
        try:
            await send(connection, data)
            for _ in commands:
                try:
                    # the round trip's deadline is ours (``_send``), not socket_timeout
                    replies.append(await connection.read_response(timeout=math.inf))
                except ResponseError as exc:
                    replies.append(exc)
                held.replies += 1
        except BaseException:
            held.connection = None
            await connection.disconnect()
            await pool.release(connection)
            raise
        return replies

    def close(self) -> None:
        self.closed = RedisConnectionError(CLOSED)
        while self.queue:
            call = self.queue.popleft()
            call.settle(self.closed)
        for task in list(self.tasks):
            task.cancel()


def _wake(waiter: asyncio.Future[bool], woken: bool) -> None:
    if not waiter.done():
        waiter.set_result(woken)
