"""The run store's names in Redis: keys, entry ids, and what a reader is told when
a run's keys vanished.

Keys. A run is named by its owner and its id together: ``Layout.keys(owner,
run_id)`` hashes both into the key (``_runstore.ids.run_digest``), so any strings are
safe and two owners never share a run. The hash also picks the run's *shard*:
one of ``shards`` Redis Cluster hash tags, each chosen so that the shards' slots
are spread evenly over the 16,384 (a cluster whose masters hold equal slot
ranges gets an equal share). All keys of a run carry its shard's tag, so every
script touches one slot, and the runs of one shard can be read by one ``XREAD``
(a cluster refuses keys of different slots in one command):

    {prefix}{<shard tag>}<hash>          the run's stream
    {prefix}{<shard tag>}<hash>:lease    its producer's lease: ``<generation>:<nonce>``
                                         (the token), or ``<generation>:released``
                                         (handed over by a draining store)
    {prefix}{<shard tag>}<hash>:snap     with ``maxlen``: the compact prefix of events
                                         1..k, ``k-<generation>\n`` + binary frames

Entries. ``n-g`` is the run's n-th event (1-based), field ``p`` its protobuf
payload, ``g`` the run's generation (``_runstore.ids``); the last event of an
append whose producer's telemetry records has field ``t`` too, the producer's
wall-clock time when it sent the append (ms since the epoch: the readers'
delivery lag). ``N-(g+1)`` (after the last event ``N-g``), field ``end`` (the
reason; and ``by``, the token of the producer that ended it, so its retry knows
it did), is the run's end.

Imports nothing of the package (only the core's ids): everything else builds on it.
"""

from __future__ import annotations

import binascii
from typing import Final

from .._runstore.ids import check_owner, check_run_id, run_digest

#: What a reader is told when a run's keys vanished under it.
LOST: Final = (
    "the run's stream is gone: its keys were evicted (maxmemory policy) or lost "
    "(Redis restarted without persistence, or a failover lost them)"
)

PAYLOAD: Final = b"p"
STAMP: Final = b"t"
END: Final = b"end"

SLOTS: Final = 16384  # Redis Cluster hash slots


def key_slot(key: str | bytes) -> int:
    """The Redis Cluster hash slot of ``key`` (CRC16/XMODEM of its hash tag)."""
    raw = key.encode() if isinstance(key, str) else key
    start = raw.find(b"{")
    if start != -1:
        end = raw.find(b"}", start + 1)
        if end > start + 1:
            raw = raw[start + 1 : end]
    return binascii.crc_hqx(raw, 0) % SLOTS


def shard_tags(shards: int) -> tuple[str, ...]:
    """For each shard i, the first tag ``s<i>.<n>`` whose slot falls in the i-th of
    ``shards`` equal parts of the slot range (the same on every replica)."""
    tags = []
    for i in range(shards):
        low, high = i * SLOTS // shards, (i + 1) * SLOTS // shards
        n = 0
        while not low <= key_slot(f"{{s{i}.{n}}}") < high:
            n += 1
        tags.append(f"s{i}.{n}")
    return tuple(tags)


class Layout:
    """How one store names its keys: ``prefix`` and the shards' tags."""

    __slots__ = ("prefix", "tags")

    def __init__(self, prefix: str, shards: int) -> None:
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise ValueError(f"prefix must be a string without braces, not {prefix!r}")
        if isinstance(shards, bool) or not isinstance(shards, int) or not 0 < shards <= SLOTS:
            raise ValueError(f"shards must be an int from 1 to {SLOTS}, not {shards!r}")
        self.prefix = prefix
        self.tags = shard_tags(shards)

    def keys(self, owner: object, run_id: object) -> RunKeys:
        """The keys of ``owner``'s run ``run_id``; ``ValueError`` for a run id or
        an owner that is not one."""
        return RunKeys(self, check_owner(owner), check_run_id(run_id))


class RunKeys:
    """One run's keys (see the module doc); ``shard`` indexes ``Layout.tags``."""

    __slots__ = ("lease", "run_id", "shard", "snapshot", "stream")

    def __init__(self, layout: Layout, owner: str | None, run_id: str) -> None:
        digest = run_digest(owner, run_id)
        self.run_id = run_id
        self.shard = int.from_bytes(digest[:4], "big") % len(layout.tags)
        self.stream = f"{layout.prefix}{{{layout.tags[self.shard]}}}{digest.hex()}"
        self.lease = f"{self.stream}:lease"
        self.snapshot = f"{self.stream}:snap"

    @property
    def both(self) -> list[str]:
        """The stream and lease keys, as the scripts take them."""
        return [self.stream, self.lease]

    @property
    def all(self) -> list[str]:
        """The stream, lease and snapshot keys (a run stored with ``maxlen``)."""
        return [self.stream, self.lease, self.snapshot]


def parse_id(raw: bytes) -> tuple[int, int]:
    """A stream entry id ``ms-seq`` as two ints (``ValueError`` if it is not one)."""
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)
