"""The run store's names in Redis: keys, entry ids and positions, generations, and
the ``RUN_ERROR`` codes it writes.

Keys. A run is named by its owner and its id together: ``RunKeys.of(layout, owner,
run_id)`` hashes both (BLAKE2b, 128 bits) into the key, so any strings are safe
and two owners never share a run, whatever ids they choose; ``owner=None`` is a
namespace of its own (the shared one of single-tenant apps). The hash also picks
the run's *shard*: one of ``shards`` Redis Cluster hash tags, each chosen so that
the shards' slots are spread evenly over the 16,384 (a cluster whose masters
hold equal slot ranges gets an equal share). All keys of a run carry its shard's
tag, so every script touches one slot, and the runs of one shard can be read by
one ``XREAD`` (a cluster refuses keys of different slots in one command):

    {prefix}{<shard tag>}<hash>          the run's stream
    {prefix}{<shard tag>}<hash>:lease    its producer's lease: ``<generation>:<token>``
    {prefix}{<shard tag>}<hash>:snap     with ``maxlen``: the compact prefix of events
                                         1..k, ``k-<generation>\n`` + binary frames

Entries. ``n-g`` is the run's n-th event (1-based), field ``p`` its protobuf
payload, ``g`` the run's *generation*: an even number drawn when the run is first
stored, so a run produced again after Redis lost it has other ids (``new_generation``)
and a reader never takes one for the other. ``N-(g+1)`` (after the last event
``N-g``), field ``end`` (the reason; and ``by``, the token of the producer that
ended it, so its retry knows it did), is the run's end. Clients get ids
``n-g`` (``EventId``); runs stored before generations are generation 0.

Imports nothing of the package: everything else builds on it.
"""

from __future__ import annotations

import binascii
import hashlib
import secrets
from typing import Any, Final

#: ``RUN_ERROR`` codes the store writes.
LEASE_EXPIRED: Final = "LEASE_EXPIRED"
RUN_LOST: Final = "RUN_LOST"
RUN_REPLACED: Final = "RUN_REPLACED"
STORE_FULL: Final = "STORE_FULL"
STORE_CORRUPTED: Final = "STORE_CORRUPTED"
#: What a reader is told when a run's keys vanished under it.
LOST: Final = (
    "the run's stream is gone: its keys were evicted (maxmemory policy) or lost "
    "(Redis restarted without persistence, or a failover lost them)"
)

PAYLOAD: Final = b"p"
END: Final = b"end"

#: The longest run id, in UTF-8 bytes.
MAX_RUN_ID_BYTES: Final = 256
SLOTS: Final = 16384  # Redis Cluster hash slots
MAX_GENERATION: Final = 10**13  # generations are even numbers below it
MAX_INDEX: Final = 2**53  # the largest event index a position may name


def check_run_id(run_id: object) -> str:
    """``run_id`` if it is a run id (a ``str`` of 1 to ``MAX_RUN_ID_BYTES`` UTF-8
    bytes), else ``ValueError`` naming the rule it breaks."""
    rule = f"a run id is a string of 1 to {MAX_RUN_ID_BYTES} UTF-8 bytes"
    if not isinstance(run_id, str):
        raise ValueError(f"{rule}, not {type(run_id).__name__} {_shown(run_id)}")
    try:
        size = len(run_id.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{rule}: {_shown(run_id)} has a lone surrogate at {exc.start}") from None
    if not 0 < size <= MAX_RUN_ID_BYTES:
        raise ValueError(f"{rule}, not {size} bytes: {_shown(run_id)}")
    return run_id


def check_owner(owner: object) -> str | None:
    if owner is not None and not isinstance(owner, str):
        raise ValueError(f"owner must be a string or None, not {type(owner).__name__}")
    return owner


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


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
        h = hashlib.blake2b(digest_size=16, person=b"agui-wire-run")
        if owner is None:
            h.update(b"\x00")
        else:
            raw = owner.encode("utf-8", "surrogatepass")
            h.update(b"\x01" + len(raw).to_bytes(8, "big") + raw)
        h.update(run_id.encode("utf-8"))
        digest = h.digest()
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


def new_generation() -> int:
    """A new run's generation: even (its end is ``generation + 1``), at least 2, and
    below 10**13 (exact in Lua's numbers), random so that a run produced again
    after Redis lost it never reuses it."""
    return 2 + 2 * secrets.randbelow(MAX_GENERATION // 2 - 1)


def generation_of(seq: int) -> int:
    """The generation of an entry id's sequence (an event's, or an end's)."""
    return seq - seq % 2


class EventId(int):
    """A run's event index (an ``int``, 1-based) that carries the run's generation:
    ``str()`` is ``n-<generation>``, the id clients are given (SSE ``id:``, the
    ``agui-after`` header), so that a resume of a run replaced meanwhile is refused
    rather than continued with the other run's events. ``subscribe`` yields these;
    ``after=`` takes one, its ``str()``, or a plain index (no generation check)."""

    generation: int | None

    def __new__(cls, index: int, generation: int | None = None) -> EventId:
        self = super().__new__(cls, index)
        self.generation = generation
        return self

    def __str__(self) -> str:
        n = int(self)
        return str(n) if self.generation is None else f"{n}-{self.generation}"

    def __repr__(self) -> str:
        return f"EventId({int(self)}, generation={self.generation})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (EventId, (int(self), self.generation))


def parse_position(raw: object) -> EventId:
    """A resume position: an index ``n`` (int or digits) or an id ``n-<generation>``
    as given to clients; ``ValueError`` naming what is wrong."""
    if isinstance(raw, EventId):
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        index, generation = raw, None
    elif isinstance(raw, str):
        text = raw.strip()
        head, dash, tail = text.partition("-")
        if not (
            head.isdigit() and head.isascii() and (not dash or (tail.isdigit() and tail.isascii()))
        ):
            raise ValueError(f"not an event index (n) or id (n-<generation>): {text[:40]!r}")
        index, generation = int(head), int(tail) if dash else None
        if generation is not None and (generation % 2 or generation >= MAX_GENERATION):
            raise ValueError(f"not an event id (no such generation): {text[:40]!r}")
    else:
        raise ValueError(f"an event index is an int or a string, not {type(raw).__name__}")
    if not 0 <= index <= MAX_INDEX:
        raise ValueError(f"not an event index: {index} (0 to {MAX_INDEX:,})")
    return EventId(index, generation)
