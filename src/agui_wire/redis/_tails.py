"""The live side of reading: per process and run, one tail reads the stream and
hands each batch, as one shared object, to every local reader's inbox.

Contract: ``Tails.attach(run_id, position, inbox)`` makes the inbox receive every
batch after ``position`` (or after the tail's own position, if it runs already:
the reader fills a gap from Redis itself) until the run's end, or the error that
stopped the tail. A tail checks the run's lease when the run is quiet, so a
producer that died ends the run with ``RUN_ERROR`` for everyone.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from ..errors import RunLost, StoreError
from ._backend import Backend
from ._batches import Batch, entries, stream_entries
from ._keys import TERMINAL

logger = logging.getLogger("agui_wire.redis")


class Inbox:
    """What a tail hands one subscriber: shared batches, or the error that ended it."""

    __slots__ = ("batches", "error", "lagging", "limit", "wake")

    def __init__(self, limit: int) -> None:
        self.batches: deque[Batch] = deque()
        self.error: BaseException | None = None
        self.lagging = False  # dropped batches: catch up from Redis
        self.limit = limit
        self.wake = asyncio.Event()

    def push(self, batch: Batch) -> None:
        if len(self.batches) >= self.limit:
            self.batches.clear()
            self.lagging = True
        self.batches.append(batch)
        self.wake.set()

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.wake.set()


class Tails:
    """This process's tails, by run."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.runs: dict[str, _Tail] = {}

    def attach(self, run_id: str, position: int, inbox: Inbox) -> _Tail:
        tail = self.runs.get(run_id)
        if tail is None:
            tail = self.runs[run_id] = _Tail(self, run_id, position)
        tail.attach(inbox)
        return tail

    def cancel(self) -> None:
        for tail in list(self.runs.values()):
            if tail.task is not None:
                tail.task.cancel()


class _Tail:
    """One reader per run per process: ``XREAD BLOCK`` from the last position,
    each batch handed to every local inbox; checks the lease when the run is quiet."""

    def __init__(self, tails: Tails, run_id: str, position: int) -> None:
        self.tails = tails
        self.run_id = run_id
        self.position = position  # the last event read
        self.last_terminal = False
        self.inboxes: set[Inbox] = set()
        self.task: asyncio.Task[None] | None = None

    def attach(self, inbox: Inbox) -> None:
        self.inboxes.add(inbox)
        if self.task is None:
            self.task = asyncio.ensure_future(self._run())

    def detach(self, inbox: Inbox) -> None:
        self.inboxes.discard(inbox)
        if not self.inboxes:
            self._close()

    def _close(self) -> None:
        if self.tails.runs.get(self.run_id) is self:
            del self.tails.runs[self.run_id]
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()

    async def _run(self) -> None:
        backend = self.tails.backend
        key = backend.key(self.run_id)
        try:
            while self.inboxes:
                reply = await backend.retry(
                    self.run_id,
                    backend.redis.xread,
                    {key: f"{self.position}-0"},
                    count=backend.batch,
                    block=backend.poll_ms,
                )
                found = stream_entries(reply)
                if not found:
                    await self._quiet()
                    continue
                batch, ended = entries(self.run_id, self.position, found)
                if batch.payloads:
                    self.position = batch.last
                    self.last_terminal = batch.last_type in TERMINAL
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
        backend = self.tails.backend
        code, _last = await backend.expire_check(self.run_id, self.position, self.last_terminal)
        if code == 3:
            raise RunLost(self.run_id, "the stream lost events it had stored (Redis restarted?)")
