"""The run store's names in Redis: keys, entry ids, the codes it writes, and the Lua
scripts that own the write rules (each atomic in Redis).

Contract: a run's stream and lease keys share one Redis Cluster hash tag, so every
script touches one slot. Entry ``n-0`` is the run's n-th event (1-based), field
``p`` its protobuf payload; ``N-1`` (after the last event ``N-0``), field ``end``,
is the run's end. Imports nothing of the package: everything else builds on it.
"""

from __future__ import annotations

from typing import Final

#: ``RUN_ERROR`` codes the store writes.
LEASE_EXPIRED: Final = "LEASE_EXPIRED"
RUN_LOST: Final = "RUN_LOST"

TERMINAL: Final = frozenset({"RUN_FINISHED", "RUN_ERROR"})
PAYLOAD: Final = b"p"
END: Final = b"end"


def stream_key(prefix: str, run_id: str) -> str:
    return f"{prefix}{{{run_id}}}"


def lease_key(prefix: str, run_id: str) -> str:
    return f"{prefix}{{{run_id}}}:lease"


def parse_id(raw: bytes) -> tuple[int, int]:
    """A stream entry id ``ms-seq`` as two ints."""
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)


# -- the scripts -----------------------------------------------------------------------
# Each returns {code, last}: ``last`` is the run's last event index in Redis.
# Codes: 0 done, 1 the run has ended, 2 the lease is not ours (held by another /
# expired), 3 acknowledged events are missing (lost), 4 the run does not exist,
# 5 the caller has not read up to the last event yet.

_TOP: Final = """
local function top(key)
  local t = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
  if #t == 0 then return nil, nil end
  local ms, seq = string.match(t[1][1], '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
"""

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms.
ACQUIRE: Final = (
    _TOP
    + """
local last, seq = top(KEYS[1])
if last and seq > 0 then return {1, last} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if last then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  return {0, last or 0}
end
return {2, last or 0}
"""
)

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms, maxlen (0: none),
# known (events this producer knows are stored), first index, payloads...
APPEND: Final = (
    _TOP
    + """
local last, seq = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[5]) then return {3, last} end
if seq and seq > 0 then return {1, last} end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {2, last} end
local maxlen = tonumber(ARGV[4])
local n = tonumber(ARGV[6]) - 1
for i = 7, #ARGV do
  n = n + 1
  if n > last then
    if n ~= last + 1 then return {3, last} end
    if maxlen > 0 then
      redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, n .. '-0', 'p', ARGV[i])
    else
      redis.call('XADD', KEYS[1], n .. '-0', 'p', ARGV[i])
    end
    last = n
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {0, last}
"""
)

# KEYS: stream, lease. ARGV: token, ttl_ms, known, reason.
FINISH: Final = (
    _TOP
    + """
local last, seq = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[3]) then return {3, last} end
if seq and seq > 0 then return {1, last} end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {2, last} end
redis.call('XADD', KEYS[1], last .. '-1', 'end', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return {0, last}
"""
)

# KEYS: stream, lease. ARGV: token, lease_ms, running_ttl_ms, known.
RENEW: Final = (
    _TOP
    + """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  local last = top(KEYS[1]) or 0
  if last < tonumber(ARGV[4]) then return {3, last} end
  return {2, last}
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {0, -1}
"""
)

# KEYS: stream, lease. ARGV: known (events the caller has read), ttl_ms,
# RUN_ERROR payload, '1' when event ``known`` is terminal.
EXPIRE: Final = (
    _TOP
    + """
if redis.call('EXISTS', KEYS[2]) == 1 then return {0, -1} end
local known = tonumber(ARGV[1])
local last, seq = top(KEYS[1])
if last == nil then
  if known > 0 then return {3, 0} end
  last, seq = 0, 0
end
if last < known then return {3, last} end
if seq > 0 then return {1, last} end
if last > known then return {5, last} end
if ARGV[4] == '1' then
  redis.call('XADD', KEYS[1], last .. '-1', 'end', 'finished')
else
  redis.call('XADD', KEYS[1], (last + 1) .. '-0', 'p', ARGV[3])
  redis.call('XADD', KEYS[1], (last + 1) .. '-1', 'end', 'lease-expired')
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {2, last}
"""
)
