"""The store's watchdog: live producers fail once Redis has been silent too long.

Strategy: every round trip of the command lanes (and every blocking read of the
tails) stamps ``Pipeliner.heard``. While producers are live, one task looks every
``WATCH`` seconds: Redis quiet for ``PROBE_AFTER`` seconds is pinged (through the
lanes, so a reply stamps ``heard``); quiet for ``silence`` seconds fails every
watched producer. A stalled or black-holed Redis (no error, no reply) is so
noticed within ``silence`` plus a look, whatever the client's ``socket_timeout``.

Contract: ``watch(producer)`` until ``unwatch(producer)``; once Redis has not
answered for ``silence`` seconds, ``producer.unavailable(reason)`` is called
once and the producer is no longer watched. The task ends when nobody is watched.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, Protocol

from ._pipeline import Pipeliner

#: Seconds between the watchdog's looks, and without a reply before it pings Redis.
WATCH: Final = 0.25
PROBE_AFTER: Final = 0.5


class Watched(Protocol):
    """A live producer, as the watchdog sees it."""

    def unavailable(self, reason: str) -> None: ...


class Watchdog:
    """Fails the watched producers when Redis is silent (see the module doc)."""

    def __init__(self, pipeliner: Pipeliner, silence: float) -> None:
        self.pipeliner = pipeliner
        self.silence = silence
        self.producers: set[Watched] = set()
        self._task: asyncio.Task[None] | None = None

    def watch(self, producer: Watched) -> None:
        self.producers.add(producer)
        if self._task is None or self._task.done():
            self.pipeliner.heard = max(self.pipeliner.heard, asyncio.get_running_loop().time())
            self._task = asyncio.ensure_future(self._watch())

    def unwatch(self, producer: Watched) -> None:
        self.producers.discard(producer)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        probe: asyncio.Future[Any] | None = None
        try:
            while self.producers:
                await asyncio.sleep(WATCH)
                quiet = loop.time() - self.pipeliner.heard
                if quiet >= self.silence:
                    error = (
                        f"Redis did not answer for {quiet:.1f} s (the limit: {self.silence:g} s)"
                    )
                    for producer in list(self.producers):
                        producer.unavailable(error)
                    self.producers.clear()
                elif quiet >= PROBE_AFTER and (probe is None or probe.done()):
                    probe = asyncio.ensure_future(self.pipeliner.call("PING"))
                    probe.add_done_callback(_quiet)
        finally:
            if probe is not None:
                probe.cancel()


def _quiet(future: asyncio.Future[Any]) -> None:
    """A probe's outcome is its reply time (``heard``), not its error."""
    if not future.cancelled():
        future.exception()
