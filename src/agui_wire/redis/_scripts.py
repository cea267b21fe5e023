"""What the store's Lua scripts share: their reply codes, the Lua helpers they start
with, and ``Script`` (a body and its SHA-1, as ``EVALSHA`` names it).

Strategy: each script owns one write rule and runs atomically in Redis; its body
sits in the module that calls it (``_claim``: ACQUIRE; ``_producer``: APPEND,
RENEW, FINISH, FAIL; ``_leases``: EXPIRE; ``_pages``: PAGE). A script that
answers a rule replies ``{code, last, ...}``: ``last`` the run's last event
index in Redis, ``code`` a ``Reply``. ``PRELUDE`` declares every ``Reply`` as a Lua
local of the same name, so the codes are written once, here, and both sides name
them. A generation travels as a decimal string (Lua numbers print 14 digits).

Contract: a ``Reply`` is an ``int`` (compare a reply's ``int(reply[0])`` with it).
A script's body never changes while the process runs (its SHA-1 is its name);
``_pipeline`` loads it when Redis answers ``NOSCRIPT``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from enum import IntEnum
from typing import Any, Final


class Reply(IntEnum):
    """The first field of a script's reply: what became of the call."""

    DONE = 0  #: done
    ENDED = 1  #: the run has ended
    HELD = 2  #: the lease is not the caller's: another producer holds it
    LOST = 3  #: events the caller knows are stored are missing
    EXPIRED = 4  #: (EXPIRE) the lease had lapsed: this check ended the run
    BEHIND = 5  #: (EXPIRE) the caller has not read up to the last event yet
    REPLACED = 6  #: the stream holds another generation of the run (its entry id follows)
    CORRUPTED = 7  #: an entry the store never wrote (its id follows)
    ABANDONED = 8  #: (ACQUIRE) the run has events and nobody holds its lease
    RELEASED = 9  #: (ACQUIRE) the run was handed over: only a replaying producer takes it


class Script:
    """A Lua script's body and its SHA-1. ``pages``: its reply is a page of a run
    (up to ``page_bytes``), so it is sent on the page lanes, never beside the
    short commands. ``many``: calls of it queued together may go to Redis as one
    call of ``self.many`` (see ``_many``)."""

    __slots__ = ("body", "many", "pages", "sha")

    def __init__(self, body: str, *, pages: bool = False, many: bool = False) -> None:
        self.body = body
        self.pages = pages
        self.sha = hashlib.sha1(body.encode()).hexdigest()
        self.many = Script(_many(body)) if many else None

    def command(self, names: Sequence[Any], args: Sequence[Any]) -> tuple[Any, ...]:
        """The ``EVALSHA`` of this script with ``names`` as its keys."""
        return ("EVALSHA", self.sha, len(names), *names, *args)


# Many calls of one script as one: KEYS every call's keys in turn; ARGV[1] the
# number of calls n, ARGV[2..2n+1] each call's count of keys and of arguments,
# then every call's arguments in turn. Each call runs as its own (``one``, its
# KEYS and ARGV its own), in order; the reply is theirs in order, an error of
# one (a refused command: OOM, WRONGTYPE) its reply alone, so one run's
# refusal is never another's. What a call wrote before its error stands, as it
# would have alone (the store's scripts are idempotent: the caller retries).
# Redis runs one script for many runs per round trip: on one Redis the store's
# appends of a round trip cost one EVALSHA, one packed command and one reply.
_MANY: Final = """
local n = tonumber(ARGV[1])
local out, k, a = {}, 0, 1 + 2 * n
for c = 1, n do
  local nk, na = tonumber(ARGV[2 * c]), tonumber(ARGV[2 * c + 1])
  local keys, argv = {}, {}
  for i = 1, nk do keys[i] = KEYS[k + i] end
  for i = 1, na do argv[i] = ARGV[a + i] end
  k, a = k + nk, a + na
  local ok, reply = pcall(one, keys, argv)
  if ok then
    out[c] = reply
  elseif type(reply) == 'table' and reply.err then
    out[c] = reply
  else
    out[c] = redis.error_reply(tostring(reply))
  end
end
return out
"""


def _many(body: str) -> str:
    """``body`` as the function ``one`` of the many-calls script (its helpers,
    ``PRELUDE``, defined once outside it)."""
    if body.startswith("#!"):
        raise ValueError("a script with a flags line runs alone")
    prelude = PRELUDE if body.startswith(PRELUDE) else ""
    return f"{prelude}\nlocal function one(KEYS, ARGV)\n{body[len(prelude) :]}\nend\n{_MANY}"


#: The helpers every rule script starts with: the reply codes, and
#: ``top(key)``: the stream's last entry as ``index, sequence, fields, id``
#: (``nil`` when it has none); ``gen_of(seq)``: an entry's generation;
#: ``ended_by(fields)``: the token that ended the run; ``ours(lease, token, ms)``:
#: is the lease the caller's (a lease that lapsed with nobody else holding it is
#: the caller's again: Redis or the producer stalled; the run has not ended, or the
#: caller would know by now); ``released(holder)``: the generation a released
#: lease (``<generation>:released``, a run handed over by a draining store) names,
#: else ``nil``. A released lease is a lease like any other to every script but
#: ``ACQUIRE``: nobody's token, so nobody writes, and alive, so lease checks wait.
PRELUDE: Final = (
    f"local {', '.join(code.name for code in Reply)} = {', '.join(str(int(c)) for c in Reply)}"
    + """
local function top(key)
  local t = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
  if #t == 0 then return nil, nil end
  local ms, seq = string.match(t[1][1], '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq), t[1][2], t[1][1]
end
local function gen_of(seq) return string.format('%d', seq - seq % 2) end
local function ended_by(fields) return fields[3] == 'by' and fields[4] end
local function released(holder) return holder and string.match(holder, '^(%d+):released$') end
local function ours(lease, token, ms)
  local holder = redis.call('GET', lease)
  if holder == token then return true end
  if holder then return false end
  redis.call('SET', lease, token, 'PX', ms)
  return true
end
"""
)
