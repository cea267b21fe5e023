"""A run's lease, as readers and claimers see it: what it names, the end of a run
whose producer's lease lapsed, and a run handed over (its lease released).

Strategy: a producer holds the run's lease key (its token,
``<generation>:<nonce>``, ``PX lease``) and renews it (``_producer``). A
draining producer hands its run over with ``RELEASE``: the lease becomes
``<generation>:released`` for ``lease`` more, so the run is not ended
(nobody's token: nobody writes; alive: lease checks wait) and a replaying
producer takes it at once (``_claim.ACQUIRE``); taken by nobody, it lapses and
the run ends as any other (``LEASE_EXPIRED``, within ``lease + poll`` of the
release). Anyone else only looks: ``EXPIRE`` (one script, atomic) ends a run
whose lease is gone, after its last stored event,
with a ``RUN_ERROR`` (code ``LEASE_EXPIRED``) and the end marker, both stored
like any event, so every reader everywhere sees the same end. It ends the run
only for a caller that has read up to the run's last event (else it replies
``BEHIND``: the caller reads first), so the ``RUN_ERROR`` never goes before an
event the caller has not seen, nor after a terminal one (then the end marker
alone).

Contract: ``expire`` returns the script's reply (``Reply.DONE`` with the
lease's PTTL while it lives, ``EXPIRED`` once this call ended the run, else why
not); ``terminal_at`` whether event ``n`` is the run's last and a terminal one
(what ``expire`` asks of a caller that did not read that event itself);
``release`` the reply of ``RELEASE`` (``DONE`` once the lease is released; else,
as an append's, why the run is not the caller's); ``lease_generation`` what a
lease names.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

from .._codec.selected import frame
from .._decoder import decode_proto
from .._runstore.ends import expired_payload
from .._streaming import TERMINAL
from ._calls import Calls
from ._keys import PAYLOAD, RunKeys
from ._pages import top
from ._scripts import PRELUDE, Script
from ._settings import Settings

# KEYS: stream, lease. ARGV: known (events the caller has read), ttl_ms,
# RUN_ERROR payload, '1' when event ``known`` is terminal, the caller's
# generation ('': none known; then a new run's, for a run with no event), '1' to
# look only (Redis just stalled: the producer's renewal may be on its way; a run
# lost or replaced is still said). Events the caller read that Redis no longer
# holds are said whatever the lease, with its PTTL: {LOST, last, pttl} (a
# failover's new master may lack the last ones: a live producer stores them
# again, or ends the run RUN_LOST; -2: no producer will). A live lease: {DONE,
# -1, its PTTL} (the reader checks again when it would lapse); looking only:
# {DONE, -1, 0}.
EXPIRE: Final = Script(
    PRELUDE
    + """
local known = tonumber(ARGV[1])
local last, seq, fields, id = top(KEYS[1])
local gen = ARGV[5]
local pttl = redis.call('PTTL', KEYS[2])
if known > 0 then
  if last and gen ~= '' and gen_of(seq) ~= gen then return {REPLACED, last, id} end
  if (last or 0) < known then return {LOST, last or 0, pttl} end
end
if pttl ~= -2 then return {DONE, -1, pttl} end
if last == nil then
  last, seq = 0, tonumber(gen)
  if not seq then return {LOST, 0, -2} end
end
gen = gen_of(seq)
if seq % 2 == 1 then return {ENDED, last} end
if last > known then return {BEHIND, last} end
if ARGV[6] == '1' then return {DONE, -1, 0} end
local done = string.format('%d', tonumber(gen) + 1)
if ARGV[4] == '1' then
  redis.call('XADD', KEYS[1], last .. '-' .. done, 'end', 'finished')
else
  redis.call('XADD', KEYS[1], (last + 1) .. '-' .. gen, 'p', ARGV[3])
  redis.call('XADD', KEYS[1], (last + 1) .. '-' .. done, 'end', 'lease-expired')
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
return {EXPIRED, last}
"""
)


# KEYS: stream, lease (, snapshot). ARGV: token, known (events the producer knows
# are stored), generation, hold_ms (the released lease's life), running_ttl_ms.
# {DONE, last} | {LOST, last} | {REPLACED, last, id} | {ENDED, last} | {HELD, last}
RELEASE: Final = Script(
    PRELUDE
    + """
local last, seq, fields, id = top(KEYS[1])
last = last or 0
if last < tonumber(ARGV[2]) then return {LOST, last} end
if seq then
  if gen_of(seq) ~= ARGV[3] then return {REPLACED, last, id} end
  if seq % 2 == 1 then return {ENDED, last} end
end
if not ours(KEYS[2], ARGV[1], ARGV[4]) then return {HELD, last} end
redis.call('SET', KEYS[2], ARGV[3] .. ':released', 'PX', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if KEYS[3] then redis.call('PEXPIRE', KEYS[3], ARGV[5]) end
return {DONE, last}
"""
)


async def expire(
    calls: Calls,
    settings: Settings,
    keys: RunKeys,
    known: int,
    *,
    terminal: bool,
    generation: int | str,
    look: bool,
    patience: float | None = None,
) -> list[Any]:
    """End the run if its lease is gone (the EXPIRE script; see the module doc):
    ``known`` is the last event the caller has read, ``terminal`` whether that
    one is terminal, ``generation`` the caller's (``""``: none known), ``look``
    only look (no end)."""
    args = [
        known,
        settings.ttl_ms,
        expired_payload(settings.lease),
        "1" if terminal else "0",
        generation,
        int(look),
    ]
    return await calls.run_script(keys, EXPIRE, keys.both, args, patience)


async def terminal_at(calls: Calls, keys: RunKeys, n: int) -> bool:
    """Is event ``n`` the run's last stored entry, and a terminal event?"""
    found = await top(calls, keys)
    if found is None:
        return False
    last, seq, fields = found
    if last != n or seq % 2 or PAYLOAD not in fields:
        return False
    with contextlib.suppress(Exception):  # undecodable: the readers name it
        event = decode_proto(frame(bytes(fields[PAYLOAD])), unknown_events="raw")[0]
        return event.get("type") in TERMINAL
    return False


async def release(
    calls: Calls,
    settings: Settings,
    keys: RunKeys,
    names: list[str],
    token: str,
    known: int,
    generation: str,
) -> list[Any]:
    """Hand the run over (the RELEASE script; see the module doc): ``names`` its
    keys as the producer writes them, ``token`` the producer's, ``known`` the
    events it knows are stored."""
    args = [token, known, generation, settings.lease_ms, settings.running_ttl_ms]
    return await calls.script(keys, RELEASE, names, args)


async def lease_generation(
    calls: Calls, keys: RunKeys, patience: float | None = None
) -> int | bool | None:
    """The generation its lease names (a run with no event yet; ``None``: a
    lease without one), or ``False``: no lease."""
    holder = await calls.call(keys, "GET", keys.lease, patience=patience)
    if holder is None:
        return False
    head, colon, _ = bytes(holder).partition(b":")
    return int(head) if colon and head.isdigit() else None
