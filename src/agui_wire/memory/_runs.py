"""The runs of one in-process store: each run's events, its end, its lease, and
the readers following it; the rules that change them.

Strategy: a run is a list of protobuf payloads (each event encoded once, as the
Redis store stores it, so a reader gets the same events from either), its
generation, its end (a reason, and the token of the producer that wrote it), and
its lease: a holder's token and a loop-time deadline, ``lease`` seconds after
the holder's last append or heartbeat. Each rule runs without an ``await``, so
in one event loop it is as atomic as a Redis script. ``maxlen`` trims the
oldest events once the run holds a quarter more (so a trim costs O(1) an event),
folding what it trims into the run's compact prefix for compact joiners. A run
is forgotten ``ttl`` seconds after its end, or ``lease + ttl`` after its
producer was last heard of (``Runs.get`` purges, oldest first).

Contract: ``Run.append`` and ``Run.close`` hand each change to every reader's
``Inbox`` as one shared ``Batch`` (the end as a batch with ``end`` set);
``Run.takes`` is the lease rule of every write: the caller's, or nobody's and
then the caller's again (a producer that stalled past its lease carries on
while nobody ended its run); ``Run.expire`` ends a run whose lease lapsed, as
a reader's lease check does in Redis.
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Final

from .._apply import Compactor
from .._codec.selected import frame
from .._decoder import decode_proto
from .._runstore.batches import Batch
from .._runstore.ends import FINISHED, LEASE_LAPSED, expired_payload
from .._runstore.ids import CLOSED, check_owner, check_run_id, run_digest
from .._runstore.options import Options
from .._runstore.read import Inbox
from .._streaming import TERMINAL
from ..errors import RunLost, StoreUnavailable

#: What a reader is told when a run it reads was forgotten under it.
GONE: Final = (
    "the run is gone: it was forgotten ttl seconds after its end (or after its "
    "producer's last heartbeat)"
)


class Key:
    """``owner``'s run ``run_id``, as the store names it (``stream``: the owner's
    namespace and the id, hashed; a ``RunRef``); ``ValueError`` for an owner or a
    run id that is not one."""

    __slots__ = ("run_id", "stream")

    def __init__(self, owner: object, run_id: object) -> None:
        self.run_id = check_run_id(run_id)
        self.stream = f"memory:{run_digest(check_owner(owner), self.run_id).hex()}"


class Run:
    """One stored run (see the module doc)."""

    __slots__ = (
        "end",
        "ended_by",
        "expires",
        "expiries",
        "first",
        "folded",
        "folder",
        "generation",
        "holder",
        "inboxes",
        "key",
        "lease_until",
        "payloads",
    )

    def __init__(self, key: Key, generation: int, expiries: list[tuple[float, str]]) -> None:
        self.key = key
        self.expiries = expiries  # the store's (``Runs``)
        self.generation = generation
        self.first = 1  # the index of payloads[0]
        self.payloads: list[bytes] = []
        self.end: str | None = None
        self.ended_by: str | None = None
        self.holder: str | None = None
        self.lease_until = -math.inf
        self.expires = math.inf
        self.inboxes: set[Inbox] = set()
        self.folder: Compactor | None = None  # with maxlen: events 1..folded, folded
        self.folded = 0

    @property
    def last(self) -> int:
        """The index of the last event (0: none)."""
        return self.first + len(self.payloads) - 1

    def held_by(self, now: float) -> str | None:
        """The token holding the lease, ``None`` once it lapsed."""
        return self.holder if now < self.lease_until else None

    def takes(self, token: str, now: float, options: Options) -> bool:
        """Does ``token`` hold the lease (a lapsed one it takes again)? If so it is
        renewed, and the run kept ``lease + ttl`` from now."""
        holder = self.held_by(now)
        if holder is not None and holder != token:
            return False
        self.holder = token
        self.lease_until = now + options.lease
        self.expires = now + options.lease + options.ttl
        return True

    def append(
        self, first: int, payloads: list[bytes], options: Options, stamp: int | None = None
    ) -> None:
        """Store events ``first``... after the last (those at or below it are
        stored already: skipped), trim to ``maxlen``, and hand them to the readers
        (with ``stamp`` on the last, if given: their delivery lag; a reader that
        pages through stored events records none)."""
        skip = self.last + 1 - first
        if skip > 0:
            payloads = payloads[skip:]
            first += skip
        if not payloads:
            return
        self.payloads += payloads
        if options.maxlen is not None and len(self.payloads) > options.maxlen + options.maxlen // 4:
            self._trim(len(self.payloads) - options.maxlen)
        stamps = () if stamp is None else ((first + len(payloads) - 1, stamp),)
        self._push(Batch(self.key, self.generation, first, payloads, None, stamps))

    def _trim(self, count: int) -> None:
        trimmed, self.payloads = self.payloads[:count], self.payloads[count:]
        self.first += count
        if self.folder is None:
            self.folder = Compactor()
        folder = self.folder
        if folder.foldable:
            for event in decode_proto(b"".join(map(frame, trimmed)), unknown_events="raw"):
                folder.feed(event)
        self.folded = self.first - 1

    def snapshot(self) -> tuple[int, int, list[dict[str, Any]]] | None:
        """The compact prefix of the trimmed events: the last it stands for, the
        generation, its events (``None``: nothing trimmed, or not foldable)."""
        folder = self.folder
        if folder is None or not self.folded or not folder.foldable:
            return None
        return self.folded, self.generation, folder.prefix()

    def close(
        self, reason: str, by: str | None, now: float, options: Options, error: bytes | None = None
    ) -> None:
        """End the run with ``reason``: the ``RUN_ERROR`` payload ``error`` first, if
        given; the lease goes, the run is kept ``ttl`` from now."""
        first = self.last + 1
        payloads = [] if error is None else [error]
        self.payloads += payloads
        self.end, self.ended_by = reason, by
        self.holder, self.lease_until = None, -math.inf
        self.expires = now + options.ttl
        heapq.heappush(self.expiries, (self.expires, self.key.stream))
        self._push(Batch(self.key, self.generation, first, payloads, reason))

    def terminal(self) -> bool:
        """Is the last stored event a terminal one?"""
        if not self.payloads:
            return False
        event = decode_proto(frame(self.payloads[-1]), unknown_events="raw")[0]
        return event.get("type") in TERMINAL

    def expire(self, now: float, options: Options) -> bool:
        """End the run if its lease lapsed (after a terminal event: the end alone;
        else a ``RUN_ERROR``, code ``LEASE_EXPIRED``, first). Did it?"""
        if self.end is not None or self.held_by(now) is not None:
            return False
        if self.terminal():
            self.close(FINISHED, None, now, options)
        else:
            self.close(LEASE_LAPSED, None, now, options, expired_payload(options.lease))
        return True

    def _push(self, batch: Batch) -> None:
        for inbox in self.inboxes:
            inbox.push(batch)


class Runs:
    """One store's runs, by key, each forgotten when it expires. Once the store is
    closed (``close``) every call is ``StoreUnavailable`` and the readers attached
    to a run are ended so."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.runs: dict[str, Run] = {}
        self.expiries: list[tuple[float, str]] = []  # one entry per run, maybe early
        self.closed = False

    def get(self, key: Key, now: float) -> Run | None:
        """The run, for a claim or a reader (``StoreUnavailable`` once closed)."""
        if self.closed:
            raise StoreUnavailable(key.run_id, CLOSED)
        return self.current(key, now)

    def current(self, key: Key, now: float) -> Run | None:
        """The run, for its producer: it ends its run also while the store closes."""
        self.purge(now)
        return self.runs.get(key.stream)

    def close(self) -> None:
        self.closed = True
        for run in self.runs.values():
            for inbox in run.inboxes:
                inbox.fail(StoreUnavailable(run.key.run_id, CLOSED))

    def create(self, key: Key, generation: int, now: float) -> Run:
        run = self.runs[key.stream] = Run(key, generation, self.expiries)
        run.expires = now + self.options.lease + self.options.ttl
        heapq.heappush(self.expiries, (run.expires, key.stream))
        return run

    def purge(self, now: float) -> None:
        """Forget the runs whose time is up. A run's entries in the heap are pushed
        when it is created and when it ends (its time shortens to ``ttl``); one
        popped early is pushed again for its time then (a heartbeat kept it)."""
        expiries = self.expiries
        while expiries and expiries[0][0] <= now:
            _, stream = heapq.heappop(expiries)
            run = self.runs.get(stream)
            if run is None:
                continue
            if run.expires <= now:
                del self.runs[stream]
                for inbox in run.inboxes:
                    inbox.fail(RunLost(run.key.run_id, GONE))
            elif run.end is None:  # kept meanwhile: look again then
                heapq.heappush(expiries, (run.expires, stream))
