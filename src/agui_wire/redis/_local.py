"""Readers of a run whose producer runs in this process, fed by the producer.

Strategy: a reader on the replica that produces its run (the usual case: the
request that started a run streams it back) needs no read from Redis for the
run's events: the producer has them, and knows once Redis has acknowledged them.
So while a producer runs, ``Local`` names its run's ``Followers``: each
acknowledged append is pushed as a ``Batch`` (built once, shared, as a tail's) to
the inbox of every reader that follows it, in the append's own turn. Only what
Redis acknowledged is pushed (with ``replica_acks``: what the replicas hold), in
the order it was stored, so a local reader reads what a reader elsewhere reads
from the stream; it fills a gap before a push from the stream as it would before
a tail's batch (``_runstore.read``). The end marker a producer stored (the run
finished) is pushed as the events were. Whatever else stops the producer (a
failure, a lost lease or run, a hand-over, its heartbeat gone) moves its readers
to the Redis tail from the last event pushed to each, so every error reaches them
from the stream, as it reaches every other reader; a producer that gave up on a
silent Redis (``StoreUnavailable``, after as long as a tail's reader waits) ends
them with its error at once.

Contract: ``Local.follow`` returns a ``Follow`` (``None``: no producer of the run
runs here) pushing the run's events to the inbox from its next append on; one
already stored past the reader's cursor is announced at once (an empty batch:
the reader reads the gap from the stream). ``Followers.end`` moves the readers
to the tail (each ``Follow.tail`` then), with no await between the producer's last
push and the move, or hands them the run's end its producer stored. A reader's
``Follow`` is left with ``unfollow``; ``fail`` ends every local reader.
"""

from __future__ import annotations

from collections.abc import Callable

from .._runstore.batches import Batch
from .._runstore.read import Inbox
from ..errors import StoreUnavailable
from ._keys import RunKeys
from ._tails import TailRun

#: How a reader moves to the tail: the run, the reader's position, the
#: generation and its inbox (``_tails.Tails.attach``); returns its tail.
Attach = Callable[[RunKeys, int, "int | None", Inbox], TailRun]


class Follow:
    """One reader following a local producer (``tail``: the tail it moved to)."""

    __slots__ = ("followers", "inbox", "position", "tail")

    def __init__(self, followers: Followers, inbox: Inbox, position: int) -> None:
        self.followers: Followers | None = followers
        self.inbox = inbox
        self.position = position  # the last event pushed to it (or its cursor)
        self.tail: TailRun | None = None


class Followers:
    """The local readers of one live producer's run."""

    __slots__ = ("follows", "generation", "keys", "local", "stored")

    def __init__(self, local: Local, keys: RunKeys, generation: int, stored: int) -> None:
        self.local = local
        self.keys = keys
        self.generation = generation
        self.stored = stored  # the last event Redis acknowledged
        self.follows: dict[Inbox, Follow] = {}

    def push(self, first: int, payloads: list[bytes], stamp: int | None) -> None:
        """Redis acknowledged ``payloads`` as the events from ``first`` on."""
        last = first + len(payloads) - 1
        if last > self.stored:
            self.stored = last
        if not self.follows:
            return
        stamps = () if stamp is None else ((last, stamp),)
        batch = Batch(self.keys, self.generation, first, payloads, None, stamps)
        for follow in self.follows.values():
            follow.inbox.push(batch)
            if last > follow.position:
                follow.position = last

    def end(self, finished: str | None = None, unavailable: StoreUnavailable | None = None) -> None:
        """The producer stopped: its readers follow the run in Redis from here; or,
        with ``finished`` (Redis acknowledged the run's end marker, this reason
        after every event stored), they get that end here; with ``unavailable``
        (Redis was silent for as long as a reader waits), they end with it."""
        if self.local.runs.get(self.keys.stream) is self:
            del self.local.runs[self.keys.stream]
        follows, self.follows = self.follows, {}
        last = (
            None
            if finished is None
            else Batch(self.keys, self.generation, self.stored + 1, [], finished)
        )
        for follow in follows.values():
            follow.followers = None
            if follow.inbox.error is not None:  # (a reader the store ended stays ended)
                continue
            if last is not None:
                follow.inbox.push(last)
            elif unavailable is not None:
                follow.inbox.fail(unavailable)
            else:
                follow.tail = self.local.attach(
                    self.keys, follow.position, self.generation, follow.inbox
                )


class Local:
    """This store's runs with a producer in this process, by stream key."""

    __slots__ = ("attach", "closed", "runs")

    def __init__(self, attach: Attach) -> None:
        self.attach = attach
        self.runs: dict[str, Followers] = {}
        self.closed = False  # readers follow the tail (which the store closed) from now

    def started(self, keys: RunKeys, generation: int, stored: int) -> Followers:
        followers = self.runs[keys.stream] = Followers(self, keys, generation, stored)
        return followers

    def here(self, keys: RunKeys, generation: int | None) -> Followers | None:
        """The run's followers while its producer runs in this process (from its claim
        to its end), when ``generation`` is theirs (``None``: not known)."""
        followers = self.runs.get(keys.stream)
        if followers is None or generation not in (None, followers.generation):
            return None
        return followers

    def follow(
        self, keys: RunKeys, cursor: int, generation: int | None, inbox: Inbox
    ) -> Follow | None:
        followers = self.here(keys, generation)
        if followers is None or self.closed:
            return None
        follow = followers.follows[inbox] = Follow(followers, inbox, cursor)
        if followers.stored > cursor:  # stored since the reader looked: it reads them
            inbox.push(Batch(keys, followers.generation, followers.stored + 1, [], None))
            follow.position = followers.stored
        return follow

    def unfollow(self, follow: Follow) -> None:
        if follow.followers is not None:
            follow.followers.follows.pop(follow.inbox, None)
            follow.followers = None

    def fail(self, error: Callable[[RunKeys], BaseException], close: bool = False) -> None:
        """End every local reader with ``error(run)`` (the store drains; ``close``:
        it closes, and later readers follow the tail)."""
        self.closed = self.closed or close
        for followers in self.runs.values():
            for follow in followers.follows.values():
                follow.inbox.fail(error(followers.keys))
