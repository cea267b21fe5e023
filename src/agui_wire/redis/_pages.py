"""What Redis holds of a run, read in pages: its last entry (``top``) and its stored
events as batches bounded in bytes (``pages``), for replays, catch-ups and folds.

Strategy: ``PAGE`` (one script) returns the entries after a position up to a
byte budget, reading in steps sized by the biggest entry seen, so neither Redis
nor this process holds more than about a page for one reader. The first page is
small (``FIRST_PAGE`` events: the first events go out at once), each next one 4x
the last, up to ``PAGE_EVENTS`` (both ``_runstore.read``'s, as every backend's
pages); the next page is read while the caller uses
this one.

Contract: ``pages`` yields ``Batch``es that follow on from the cursor (checked by
``_entries.entries``: ``HistoryTrimmed``, ``RunLost``, ``RunReplaced``,
``StoreCorrupted``), up to ``stop`` or the run's end; ``RunLost`` when the
stream vanished after the cursor. ``top`` checks an end marker against the
event before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Final

from .._runstore.batches import Batch
from .._runstore.read import FIRST_PAGE, PAGE_EVENTS
from ..errors import RunLost, StoreCorrupted
from ._calls import Calls
from ._entries import entries, fields_of
from ._keys import LOST, RunKeys, parse_id
from ._scripts import Script
from ._settings import Settings

# The entries after ARGV[1] (an exclusive ``(n-s`` or ``-``) up to ARGV[2] (``n-0``
# or ``+``), at most ARGV[3] of them, stopping before the entry that would take
# the payload bytes past ARGV[4] (the first entry always comes: an event bigger
# than a page is a page). Reads in steps sized by the biggest entry seen, so
# Redis holds about a page at a time. KEYS: stream. Returns {entries, cut}: the
# entries as XRANGE gives them, and 1 when the budget cut the page short (more
# may follow), else 0.
PAGE: Final = Script(
    """
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
)


async def top(calls: Calls, keys: RunKeys) -> tuple[int, int, dict[bytes, Any]] | None:
    """The run's last entry: its index, its sequence (the generation, or the
    generation + 1 for the end) and fields; ``None`` when the stream has none.
    An end marker is checked against the event before it (``StoreCorrupted``
    for an end of no generation of the run)."""
    found = await calls.call(keys, "XREVRANGE", keys.stream, "+", "-", "COUNT", 2)
    if not found:
        return None
    (n, seq), *before = [parse_id(raw_id) for raw_id, _ in found]
    if seq % 2 and (before[0] != (n, seq - 1) if before else n != 0):
        raise StoreCorrupted(
            keys.run_id,
            keys.stream,
            f"{n}-{seq}",
            "an end marker of no generation of this run (not after its last event)",
        )
    return n, seq, fields_of(found[0][1])


async def pages(
    calls: Calls,
    settings: Settings,
    keys: RunKeys,
    cursor: int,
    generation: int | None,
    stop: int | None = None,
) -> AsyncIterator[Batch]:
    """Stored events after ``cursor`` (up to ``stop``) as batches of at most
    ``page_bytes`` of payload (an event bigger is a batch of its own) and
    ``PAGE_EVENTS`` events: the first page at most ``FIRST_PAGE`` events, so
    the first events go out at once."""
    count = FIRST_PAGE
    gen = generation or 0  # (known whenever the cursor is past 0)
    upto = "+" if stop is None else f"{stop}-{gen}"
    budget = settings.page_bytes
    ahead = asyncio.ensure_future(
        _page(calls, keys, f"({cursor}-{gen}" if cursor else "-", upto, count, budget)
    )
    try:
        while True:
            found, cut = await ahead
            if not found:
                if cursor and stop is None and not await calls.call(keys, "EXISTS", keys.stream):
                    raise RunLost(keys.run_id, LOST)
                return
            batch, ended = entries(keys, cursor, generation, found)
            del found
            generation = batch.generation
            if ended or (batch.last - cursor < count and not cut):
                yield batch
                return
            cursor = batch.last
            count = min(count * 4, PAGE_EVENTS)
            # the next page is read while the caller uses this one (two pages held)
            ahead = asyncio.ensure_future(
                _page(calls, keys, f"({cursor}-{generation}", upto, count, budget)
            )
            yield batch
    finally:
        ahead.cancel()


async def _page(
    calls: Calls, keys: RunKeys, after: str, upto: str, count: int, budget: int
) -> tuple[list[Any], bool]:
    """Stored entries after ``after`` up to ``upto``, at most ``count`` of them and
    at most ``budget`` bytes of payload (one entry at least), and whether the
    byte budget cut them short."""
    found, cut = await calls.run_script(keys, PAGE, [keys.stream], [after, upto, count, budget])
    return list(found), bool(cut)
