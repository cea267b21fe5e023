"""The store's watchdog: a live producer fails once the Redis node of its run has been
silent too long, and only then.

Strategy: every round trip of a node's command lanes (and every blocking read of
the tails) stamps when that node last answered (``Calls.heard``). While producers
are live, one task looks every ``WATCH`` seconds at the nodes that serve them
(on one Redis, one node; in a cluster, the master of each shard's slot, looked
up at each look, so a failover's new master is watched once it serves): a node
quiet for ``PROBE_AFTER`` seconds is pinged (through its lanes, so a reply
stamps it); silent for ``silence`` seconds (``lease + 1 s``: a producer's lease
may have lapsed in Redis by then) with a ping unanswered, it fails the producers
of its runs. The replica's own stalls are not the node's silence: a look that
comes a look late (a blocked loop, a starved process) pings but judges nobody,
since replies may wait unread in its sockets; the look after it judges. A stalled
or black-holed node (no error, no reply) is so noticed within ``silence`` plus a
look, whatever the client's ``socket_timeout``, and a stalled master of a
cluster fails its own runs, never those of the masters that answer.

Contract: ``watch(producer, keys)`` until ``unwatch(producer, keys)``; once the
node of ``keys`` has not answered for ``silence`` seconds,
``producer.unavailable(reason)`` is called once and the producer is no longer
watched. The task ends when nobody is watched.
"""

from __future__ import annotations

import asyncio
from math import inf
from typing import Any, Final, Protocol

from ._calls import Calls
from ._keys import RunKeys

#: Seconds between the watchdog's looks, and without a reply before it pings a node.
WATCH: Final = 0.25
PROBE_AFTER: Final = 0.5


class Watched(Protocol):
    """A live producer, as the watchdog sees it."""

    def unavailable(self, reason: str) -> None: ...


class Watchdog:
    """Fails the watched producers of a silent node (see the module doc)."""

    def __init__(self, calls: Calls, silence: float) -> None:
        self.calls = calls
        self.silence = silence
        self.producers: dict[int, set[Watched]] = {}  # by shard (its runs share a node)
        self._task: asyncio.Task[None] | None = None

    def watch(self, producer: Watched, keys: RunKeys) -> None:
        self.producers.setdefault(keys.shard, set()).add(producer)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._watch())

    def unwatch(self, producer: Watched, keys: RunKeys) -> None:
        watched = self.producers.get(keys.shard)
        if watched is not None:
            watched.discard(producer)
            if not watched:
                del self.producers[keys.shard]

    async def _watch(self) -> None:
        calls = self.calls
        loop = asyncio.get_running_loop()
        seen: dict[str, float] = {}  # a node is judged from when this task first saw it
        probes: dict[str, asyncio.Future[Any]] = {}
        probed: dict[str, float] = {}  # when each node was last pinged
        judge = True
        try:
            while self.producers:
                due = loop.time() + WATCH
                await asyncio.sleep(WATCH)
                now = loop.time()
                # A look that comes a look late (this replica stalled, not Redis) judges
                # nobody: replies may wait unread in its sockets. The next look judges.
                judge = not judge or now - due < WATCH
                for shard in list(self.producers):
                    try:
                        node = calls.shard_node(shard)
                    except Exception:  # no master for the slot yet (a failover): the
                        continue  # producers' calls retry; the next look finds it
                    last = max(calls.heard(node), seen.setdefault(node, now))
                    quiet = now - last
                    # silent only with a ping unanswered: quiet alone may be this
                    # replica's own delay (a look that came late)
                    if judge and quiet >= self.silence and probed.get(node, -inf) >= last:
                        self._fail(shard, node, quiet)
                    elif quiet >= PROBE_AFTER:
                        probe = probes.get(node)
                        if probe is None or probe.done():
                            probed[node] = now
                            probe = probes[node] = asyncio.ensure_future(
                                calls.lanes(node).call("PING")
                            )
                            probe.add_done_callback(_quiet)
        finally:
            for probe in probes.values():
                probe.cancel()

    def _fail(self, shard: int, node: str, quiet: float) -> None:
        where = f"Redis ({node})" if node else "Redis"
        error = f"{where} did not answer for {quiet:.1f} s (the limit: {self.silence:g} s)"
        for producer in list(self.producers.pop(shard, ())):
            producer.unavailable(error)


def _quiet(future: asyncio.Future[Any]) -> None:
    """A probe's outcome is its reply time (``heard``), not its error."""
    if not future.cancelled():
        future.exception()
