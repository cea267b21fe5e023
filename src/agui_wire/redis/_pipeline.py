"""Auto-pipelining: every short Redis command of one store goes through a fixed,
small number of connections, however many runs are live.

Strategy: callers queue a command and await its reply; ``lanes`` worker tasks
each take what is queued (up to ``MAX_BATCH`` commands) and send it as one
non-transactional pipeline, one round trip for all of them. So a thousand
producers appending at once cost a few pipelines, not a thousand connections
(redis-py's pool refuses the 101st), and nobody waits for a connection that a
reader holds: blocking reads (``_tails``) never come through here. A quiet store
sends each command at once (an idle lane takes it); a busy one batches by
itself, with no timer.

Contract: ``call`` returns the command's reply as redis-py parses it, or raises
its error; an error of the pipeline as a whole (the connection) is raised to
every command in it, and the caller retries (the store's scripts are
idempotent). ``EVALSHA`` of a script Redis does not hold (a restart, a failover
to a replica that never saw ``SCRIPT LOAD``) loads it and sends the command
again. Commands of a caller cancelled before they were sent are dropped.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Final

from redis.exceptions import NoScriptError

MAX_BATCH: Final = 256  # commands per pipeline


class _Call:
    __slots__ = ("args", "future", "script")

    def __init__(
        self, args: tuple[Any, ...], future: asyncio.Future[Any], script: str | None
    ) -> None:
        self.args = args
        self.future = future
        self.script = script  # the body, for an EVALSHA whose script may need loading


class Pipeliner:
    """A store's command lanes (see the module doc)."""

    def __init__(self, redis: Any, lanes: int) -> None:
        self.redis = redis
        self.lanes = lanes
        self.queue: deque[_Call] = deque()
        self.busy = 0  # lanes sending
        self.tasks: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    async def call(self, *args: Any, script: str | None = None) -> Any:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # first use, or a new event loop (tests)
            self.loop = loop
            self.tasks = set()
            self.busy = 0
            self.queue.clear()
        future: asyncio.Future[Any] = loop.create_future()
        self.queue.append(_Call(args, future, script))
        if self.busy == len(self.tasks) and len(self.tasks) < self.lanes:
            task = loop.create_task(self._lane())
            self.tasks.add(task)
        return await future

    async def _lane(self) -> None:
        try:
            await self._take()
        finally:  # at once, before a caller can look at ``tasks`` again
            self.tasks.discard(asyncio.current_task())  # type: ignore[arg-type,unused-ignore]

    async def _take(self) -> None:
        queue = self.queue
        while queue:
            calls: list[_Call] = []
            while queue and len(calls) < MAX_BATCH:
                call = queue.popleft()
                if not call.future.done():  # cancelled callers are dropped
                    calls.append(call)
            if not calls:
                continue
            self.busy += 1
            try:
                await self._send(calls)
            except BaseException as exc:  # the connection (or we were cancelled)
                for call in calls:
                    if not call.future.done():
                        if isinstance(exc, Exception):
                            call.future.set_exception(exc)
                        else:
                            call.future.cancel()
                if not isinstance(exc, Exception):
                    raise
            finally:
                self.busy -= 1

    async def _send(self, calls: list[_Call]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for call in calls:
            pipe.execute_command(*call.args)
        replies = await pipe.execute(raise_on_error=False)
        missing = [c for c, r in zip(calls, replies, strict=True) if isinstance(r, NoScriptError)]
        if missing:
            for body in {c.script for c in missing if c.script is not None}:
                await self.redis.script_load(body)
            pipe = self.redis.pipeline(transaction=False)
            for call in missing:
                pipe.execute_command(*call.args)
            again = dict(
                zip(map(id, missing), await pipe.execute(raise_on_error=False), strict=True)
            )
            replies = [again.get(id(c), r) for c, r in zip(calls, replies, strict=True)]
        for call, reply in zip(calls, replies, strict=True):
            if call.future.done():
                continue
            if isinstance(reply, Exception):
                call.future.set_exception(reply)
            else:
                call.future.set_result(reply)

    def cancel(self) -> None:
        for task in list(self.tasks):
            task.cancel()
