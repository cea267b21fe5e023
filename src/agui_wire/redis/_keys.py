"""The run store's names in Redis: keys, entry ids, the codes it writes, and the Lua
scripts that own the write rules (each atomic in Redis).

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


# -- the scripts -----------------------------------------------------------------------
# Each returns {code, last, ...}: ``last`` is the run's last event index in Redis.
# Codes: 0 done, 1 the run has ended, 2 the lease is not ours (held by another),
# 3 acknowledged events are missing (lost), 5 the caller has not read up to the
# last event yet, 6 the stream holds another generation of the run (replaced),
# 7 an entry the store never wrote (corrupted; its id follows), 8 the run's
# producer vanished without ending it (ACQUIRE: nobody holds the lease).
# A generation travels as a decimal string (Lua numbers print 14 digits).

_TOP: Final = """
local function top(key)
  local t = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
  if #t == 0 then return nil, nil end
  local ms, seq = string.match(t[1][1], '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq), t[1][2], t[1][1]
end
local function gen_of(seq) return string.format('%d', seq - seq % 2) end
local function ended_by(fields) return fields[3] == 'by' and fields[4] end
-- A lease that lapsed with nobody else holding it is ours again (Redis or this
-- producer stalled; the run has not ended, or the caller would know by now).
local function ours(lease, token, ms)
  local holder = redis.call('GET', lease)
  if holder == token then return true end
  if holder then return false end
  redis.call('SET', lease, token, 'PX', ms)
  return true
end
"""

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms, generation (of a
# new run), replay ('1': continue a run whose producer vanished).
# {0, last, generation} | {1, last, end reason} | {2, last} | {8, last}
ACQUIRE: Final = (
    _TOP
    + """
local last, seq, fields = top(KEYS[1])
if last and seq % 2 == 1 then return {1, last, fields[2]} end
local holder = redis.call('GET', KEYS[2])
if holder == ARGV[1] then  -- ours: a retry after a lost reply
  return {0, last or 0, last and gen_of(seq) or ARGV[4]}
end
if holder then return {2, last or 0} end
if last and ARGV[5] ~= '1' then return {8, last} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
if last then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {0, last or 0, last and gen_of(seq) or ARGV[4]}
"""
)

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms, maxlen (0: none),
# known (events this producer knows are stored), first index, generation,
# payloads... An event at or below the stream's last is skipped when it is the
# one stored (a retry after a lost reply), else the stored one is corrupt.
APPEND: Final = (
    _TOP
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
local known, gen = tonumber(ARGV[5]), ARGV[7]
if last < known then return {3, last} end
if seq then
  if gen_of(seq) ~= gen then return {6, last, id} end
  if seq % 2 == 1 then return {1, last} end
end
if not ours(KEYS[2], ARGV[1], ARGV[2]) then return {2, last} end
local maxlen = tonumber(ARGV[4])
local n = tonumber(ARGV[6]) - 1
for i = 8, #ARGV do
  n = n + 1
  if n > last then
    if n ~= last + 1 then return {3, last} end
    if maxlen > 0 then
      redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, n .. '-' .. gen, 'p', ARGV[i])
    else
      redis.call('XADD', KEYS[1], n .. '-' .. gen, 'p', ARGV[i])
    end
    last = n
  elseif n > known then
    local e = redis.call('XRANGE', KEYS[1], n .. '-' .. gen, n .. '-' .. gen)
    if #e == 1 and (#e[1][2] ~= 2 or e[1][2][1] ~= 'p' or e[1][2][2] ~= ARGV[i]) then
      return {7, last, e[1][1]}
    end
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
return {0, last}
"""
)

# KEYS: stream, lease. ARGV: token, ttl_ms, known, reason, generation, its end's
# sequence (generation + 1).
FINISH: Final = (
    _TOP
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[3]) then return {3, last} end
if seq then
  if gen_of(seq) ~= ARGV[5] then return {6, last, id} end
  if seq % 2 == 1 then
    if ended_by(fields) == ARGV[1] then return {0, last} end  -- by us: a retry
    return {1, last}
  end
end
if last > tonumber(ARGV[3]) then return {7, last, id} end  -- not written by us
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {2, last} end
redis.call('XADD', KEYS[1], last .. '-' .. ARGV[6], 'end', ARGV[4], 'by', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
redis.call('DEL', KEYS[2])
return {0, last}
"""
)

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms, known, generation.
RENEW: Final = (
    _TOP
    + """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  local last, seq, fields, id = top(KEYS[1])
  last = last or 0
  if last < tonumber(ARGV[4]) then return {3, last} end
  if seq then
    if gen_of(seq) ~= ARGV[5] then return {6, last, id} end
    if seq % 2 == 1 then return {1, last} end
  end
  if not ours(KEYS[2], ARGV[1], ARGV[2]) then return {2, last} end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
return {0, -1}
"""
)

# KEYS: stream, lease. ARGV: known (events the caller has read), ttl_ms,
# RUN_ERROR payload, '1' when event ``known`` is terminal, the caller's
# generation ('': none known; then a new run's, for a run with no event), '1' to
# look only (Redis just stalled: the producer's renewal may be on its way; a run
# lost or replaced is still said). A live lease: {0, -1, its PTTL} (the reader
# checks again when it would lapse); looking only: {0, -1, 0}.
EXPIRE: Final = (
    _TOP
    + """
local pttl = redis.call('PTTL', KEYS[2])
if pttl ~= -2 then return {0, -1, pttl} end
local known = tonumber(ARGV[1])
local last, seq, fields, id = top(KEYS[1])
local gen = ARGV[5]
if last == nil then
  if known > 0 then return {3, 0} end
  last, seq = 0, tonumber(gen)
  if not seq then return {3, 0} end
end
if known > 0 and gen ~= '' and gen_of(seq) ~= gen then return {6, last, id} end
gen = gen_of(seq)
if last < known then return {3, last} end
if seq % 2 == 1 then return {1, last} end
if last > known then return {5, last} end
if ARGV[6] == '1' then return {0, -1, 0} end
local done = string.format('%d', tonumber(gen) + 1)
if ARGV[4] == '1' then
  redis.call('XADD', KEYS[1], last .. '-' .. done, 'end', 'finished')
else
  redis.call('XADD', KEYS[1], (last + 1) .. '-' .. gen, 'p', ARGV[3])
  redis.call('XADD', KEYS[1], (last + 1) .. '-' .. done, 'end', 'lease-expired')
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
return {2, last}
"""
)

# KEYS: stream, lease. ARGV: token, ttl_ms, known, reason, generation, its end's
# sequence, RUN_ERROR payload, the index of the producer's terminal event (0:
# none). Ends the run after a failure: the RUN_ERROR after what Redis holds (not
# after a terminal event), then the end. Runs when Redis is out of memory (a few
# hundred bytes past ``maxmemory``), so a run that filled Redis still ends.
FAIL: Final = (
    "#!lua flags=allow-oom\n"
    + _TOP
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[3]) then return {3, last} end
if seq then
  if gen_of(seq) ~= ARGV[5] then return {6, last, id} end
  if seq % 2 == 1 then
    if ended_by(fields) == ARGV[1] then return {0, last} end
    return {1, last}
  end
end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {2, last} end
if tonumber(ARGV[8]) ~= last then
  last = last + 1
  redis.call('XADD', KEYS[1], last .. '-' .. ARGV[5], 'p', ARGV[7])
end
redis.call('XADD', KEYS[1], last .. '-' .. ARGV[6], 'end', ARGV[4], 'by', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
redis.call('DEL', KEYS[2])
return {0, last}
"""
)

# A page of stored entries bounded in bytes: the entries after ARGV[1] (an
# exclusive ``(n-s`` or ``-``) up to ARGV[2] (``n-0`` or ``+``), at most ARGV[3] of
# them, stopping before the entry that would take the payload bytes past ARGV[4]
# (the first entry always comes: an event bigger than a page is a page). Reads in
# steps sized by the biggest entry seen, so Redis holds about a page at a time.
# KEYS: stream. Returns {entries, cut}: the entries as XRANGE gives them, and 1
# when the budget cut the page short (more may follow), else 0.
PAGE: Final = """
local from, upto = ARGV[1], ARGV[2]
local count, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local out, bytes, biggest, step = {}, 0, 1, 1
while #out < count do
  local got = redis.call('XRANGE', KEYS[1], from, upto, 'COUNT', step)
  for _, entry in ipairs(got) do
    local size, fields = 0, entry[2]
    for i = 2, #fields, 2 do size = size + #fields[i] end
    if #out > 0 and bytes + size > budget then return {out, 1} end
    out[#out + 1] = entry
    bytes = bytes + size
    if size > biggest then biggest = size end
    from = '(' .. entry[1]
    if #out >= count then return {out, 0} end
  end
  if #got < step then return {out, 0} end
  step = math.max(1, math.min(count - #out, math.floor((budget - bytes) / biggest)))
end
return {out, 0}
"""
