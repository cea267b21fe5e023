"""A producer's claim on a run: take its lease, or say why not.

Strategy: ``ACQUIRE`` (one script, atomic) takes the lease of a run that has not
ended and whose lease nobody holds, drawing the run's generation when it has no
event yet; a retry after a lost reply finds its own token in the lease (the
token is ``<generation>:<nonce>``: the nonce names the caller). A run with events
and no lease lost its producer: it is continued only by a caller that replays
it deterministically (``replay=True``); otherwise the claim ends it as a
reader's lease check would (``_leases.EXPIRE``: ``RUN_ERROR``,
``LEASE_EXPIRED``) and says so, now and on every retry, so a reader never gets
two producers' events as one run. A run handed over by a draining store (its
lease released, ``_leases.RELEASE``) is taken at once by a replaying caller,
in the generation the released lease names (the run may have no event yet);
any other caller finds it in progress (a taker is on its way). Before a store's
first claim, Redis must run the script that needs the most of it
(``_producer.FAIL``), so a Redis too old is found out before anything of the
run is stored; a draining store claims nothing.

Contract: ``claim`` returns the ``Producer`` holding the run's lease, or the
number of events of a run that has ended already; it raises ``StoreDraining``
(the store is draining), ``RunInProgress`` (a live producer holds the lease, or
the run waits for a replaying taker), ``RunAbandoned`` (see above),
``StoreUnsupported``, ``RunLost`` (a run that ended so: a failover lost its
events) and the ``StoreError``s of a call. ``events`` is closed
unstarted whenever no producer will run them.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterable, Iterable
from typing import Any, Final

from .._codec.selected import frame
from .._decoder import decode_proto
from .._runstore.drain import DRAINING
from .._runstore.ends import LEASE_LAPSED, LOST
from .._runstore.ids import new_generation
from .._streaming import TERMINAL, close_unstarted
from ..errors import RunAbandoned, RunInProgress, RunLost, StoreDraining
from ._keys import PAYLOAD, RunKeys
from ._leases import expire
from ._pages import top
from ._producer import FAIL, Producer, Writing, logger
from ._scripts import PRELUDE, Reply, Script

# KEYS: stream, lease. ARGV: nonce (names the caller), lease_ms, running_ttl_ms,
# generation (of a new run), replay ('1': continue a run whose producer vanished
# or handed it over). {DONE, last, generation, token} | {ENDED, last, end
# reason} | {HELD, last} | {ABANDONED, last} | {RELEASED, last}
ACQUIRE: Final = Script(
    PRELUDE
    + """
local last, seq, fields = top(KEYS[1])
if last and seq % 2 == 1 then return {ENDED, last, fields[2]} end
local holder = redis.call('GET', KEYS[2])
if holder and string.match(holder, '^%d+:(%x+)$') == ARGV[1] then  -- ours: a retried claim
  return {DONE, last or 0, string.match(holder, '^(%d+):'), holder}
end
local handed = released(holder)
if holder and not handed then return {HELD, last or 0} end
if ARGV[5] ~= '1' then
  if handed then return {RELEASED, last or 0} end
  if last then return {ABANDONED, last} end
end
local gen = last and gen_of(seq) or handed or ARGV[4]
local token = gen .. ':' .. ARGV[1]
redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
if last then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {DONE, last or 0, gen, token}
"""
)

LOST_END: Final = (
    "Redis lost events of the run it had acknowledged (a failover): the run was ended "
    "with RUN_ERROR (RUN_LOST) and is not produced again"
)

ABANDONED: Final = (
    "its producer vanished without ending it (the lease expired): the run was ended "
    "with RUN_ERROR (LEASE_EXPIRED) and is not produced again; a producer that "
    "replays the run deterministically passes replay=True to continue it"
)
TOO_LATE: Final = (
    "its producer vanished (or handed it over) and nobody took it over within its "
    "lease: the run was ended with RUN_ERROR (LEASE_EXPIRED) and is not produced again"
)
HANDED_OVER: Final = (
    "the run was handed over by a draining store (its lease released): only a "
    "producer that replays it (replay=True) takes it over"
)


async def claim(
    writing: Writing,
    keys: RunKeys,
    events: Iterable[Any] | AsyncIterable[Any],
    replay: bool,
) -> Producer | int:
    """The run's lease for a new producer of ``events`` (see the module doc), or the
    number of events of a run that has ended already."""
    calls, settings = writing.calls, writing.settings
    nonce = secrets.token_hex(12)
    try:
        if writing.draining:
            raise StoreDraining(keys.run_id, DRAINING)
        await calls.ready(keys, FAIL)
        sent = asyncio.get_running_loop().time()  # the lease is taken no earlier
        reply = await calls.script(
            keys,
            ACQUIRE,
            keys.both,
            [
                nonce,
                settings.lease_ms,
                settings.running_ttl_ms,
                new_generation(keys.run_id),
                "1" if replay else "0",
            ],
            settings.reconnect,
        )
        code, last = int(reply[0]), int(reply[1])
        if code == Reply.ABANDONED:  # end the run for its producer, as a reader would
            await _abandon(writing, keys, last)
    except BaseException:
        await close_unstarted(events, logger)
        raise
    if code != Reply.DONE:
        await close_unstarted(events, logger)
    if code == Reply.ENDED:
        reason = bytes(reply[2]).decode()
        if reason == LEASE_LAPSED:
            raise RunAbandoned(keys.run_id, TOO_LATE if replay else ABANDONED)
        if reason == LOST:
            raise RunLost(keys.run_id, LOST_END)
        return last
    if code == Reply.HELD:
        raise RunInProgress(keys.run_id, "another producer holds the run's lease")
    if code == Reply.RELEASED:
        raise RunInProgress(keys.run_id, HANDED_OVER)
    if code == Reply.ABANDONED:
        raise RunAbandoned(keys.run_id, ABANDONED)
    producer = Producer(writing, keys, bytes(reply[3]).decode(), last, int(reply[2]), events)
    producer.renewed = sent  # its heartbeat counts from the claim, not the run's start
    return producer


async def _abandon(writing: Writing, keys: RunKeys, last: int) -> None:
    """End a run whose producer vanished (no lease) with RUN_ERROR, as a reader's
    lease check does (the EXPIRE script: a live lease meanwhile leaves it)."""
    patience = writing.settings.reconnect  # (a claim's call)
    found = await top(writing.calls, keys, patience)
    if found is None:
        return
    n, seq, fields = found
    terminal = False
    if n == last and seq % 2 == 0 and PAYLOAD in fields:
        with contextlib.suppress(Exception):  # undecodable: the readers name it
            event = decode_proto(frame(bytes(fields[PAYLOAD])), unknown_events="raw")[0]
            terminal = event.get("type") in TERMINAL
    await expire(
        writing.calls,
        writing.settings,
        keys,
        n,
        terminal=terminal,
        generation="",
        look=False,
        patience=patience,
    )
