"""What Redis holds of a run, read in pages: its last entry (``top``) and its stored
events as batches bounded in bytes (``pages``), for replays, catch-ups and folds.

Strategy: ``PAGE`` (one script) returns the entries after a position up to a
byte budget, reading in steps sized by the biggest entry seen, so neither Redis
nor this process holds more than about a page for one reader. The first page is
small (``FIRST_PAGE`` events: the first events go out at once), each next one 4x
the last, up to ``PAGE_EVENTS`` (both ``_runstore.read``'s, as every backend's
pages) or the caller's ``most`` (a fold's smaller pages); the next page is read
while the caller uses this one, unless the caller asks for each (a fold: its
page's reply is read while it waits, not in its turns of the loop).

Contract: ``pages`` yields ``Batch``es that follow on from the cursor (checked by
``_entries.entries``: ``RunLost``, ``RunReplaced``, ``StoreCorrupted``), up to
``stop`` or the run's end, and never leaves a gap: events missing after the
cursor (a page that starts past it, or ends before ``stop``) raise
``HistoryTrimmed`` when the stream now starts past them (``maxlen`` trimmed
them), else ``RunLost`` (it holds events before and after them: a failover lost
them); ``RunLost`` too when the stream vanished after the cursor. ``top``
checks an end marker against the event before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

from .._runstore.batches import Batch
from .._runstore.read import FIRST_PAGE, PAGE_EVENTS
from ..errors import HistoryTrimmed, RunLost, StoreCorrupted, StoreError
from ._calls import Calls
from ._entries import entries, fields_of
from ._keys import LOST, RunKeys, parse_id
from ._scripts import Script
from ._settings import Settings

# The entries after ARGV[1] (an exclusive ``(n-s`` or ``-``) up to ARGV[2] (``n-0``
# or ``+``), at most ARGV[3] of them, stopping before the entry that would take
# the payload bytes past ARGV[4] (the first entry always comes: an event bigger
# than a page is a page). Reads in steps sized by the biggest entry seen, so
# Redis holds about a page at a time. KEYS: stream. Returns {entries, cut}:
# the entries flat, each its id then its fields as XRANGE gives them, or, for
# the usual entry (one field ``p``), its payload alone (a table per entry less
# to build and send: half of Redis's time for a page, and the page takes Redis
# for ~1 ms per 1,000 events); cut is 1 when the budget cut the page short
# (more may follow), else 0.
PAGE: Final = Script(
    """
local from, upto = ARGV[1], ARGV[2]
local count, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local out, n, bytes, biggest, step = {}, 0, 0, 1, 1
while n < count do
  local got = redis.call('XRANGE', KEYS[1], from, upto, 'COUNT', step)
  for _, entry in ipairs(got) do
    local size, fields = 0, entry[2]
    for i = 2, #fields, 2 do size = size + #fields[i] end
    if n > 0 and bytes + size > budget then return {out, 1} end
    out[2 * n + 1] = entry[1]
    if #fields == 2 and fields[1] == 'p' then
      out[2 * n + 2] = fields[2]
    else
      out[2 * n + 2] = fields
    end
    n = n + 1
    bytes = bytes + size
    if size > biggest then biggest = size end
    if n >= count then return {out, 0} end
  end
  if #got < step then return {out, 0} end
  from = '(' .. got[#got][1]
  step = math.max(1, math.min(count - n, math.floor((budget - bytes) / biggest)))
end
return {out, 0}
""",
    pages=True,
)


async def top(
    calls: Calls, keys: RunKeys, patience: float | None = None
) -> tuple[int, int, dict[bytes, Any]] | None:
    """The run's last entry: its index, its sequence (the generation, or the
    generation + 1 for the end) and fields; ``None`` when the stream has none.
    An end marker is checked against the event before it (``StoreCorrupted``
    for an end of no generation of the run)."""
    found = await calls.call(
        keys, "XREVRANGE", keys.stream, "+", "-", "COUNT", 2, patience=patience
    )
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
    *,
    most: int | None = None,
    ahead: bool = True,
) -> AsyncIterator[Batch]:
    """Stored events after ``cursor`` (up to ``stop``) as batches of at most
    ``page_bytes`` of payload (an event bigger is a batch of its own) and
    ``most`` events (default ``PAGE_EVENTS``): the first page at most
    ``FIRST_PAGE`` events, so the first events go out at once. ``ahead``: the
    next page is read while the caller uses this one; else when it asks."""
    most = PAGE_EVENTS if most is None else most
    count = min(FIRST_PAGE, most)
    gen = generation or 0  # (known whenever the cursor is past 0)
    upto = "+" if stop is None else f"{stop}-{gen}"
    budget = settings.page_bytes
    after = f"({cursor}-{gen}" if cursor else "-"
    reading: asyncio.Future[tuple[list[Any], bool]] | None = None  # (the page ahead)
    try:
        while True:
            if reading is None:
                found, cut = await _page(calls, keys, after, upto, count, budget)
            else:
                found, cut = await reading
            if not found:
                if stop is not None and cursor < stop:  # events up to ``stop`` exist, or did
                    raise await _missing(calls, keys, cursor)
                if cursor and stop is None and not await calls.call(keys, "EXISTS", keys.stream):
                    raise RunLost(keys.run_id, LOST)
                return
            try:
                batch, ended = entries(keys, cursor, generation, pairs(found))
            except HistoryTrimmed:  # the page starts past the cursor: trimmed, or lost?
                raise await _missing(calls, keys, cursor) from None
            del found
            generation = batch.generation
            if ended or (batch.last - cursor < count and not cut):
                yield batch
                if not ended and stop is not None and batch.last < stop:
                    raise await _missing(calls, keys, batch.last)
                return
            cursor = batch.last
            count = min(count * 4, most)
            after = f"({cursor}-{generation}"
            if ahead:  # the next page is read while the caller uses this one (two held)
                reading = asyncio.ensure_future(_page(calls, keys, after, upto, count, budget))
            yield batch
    finally:
        if reading is not None:
            reading.cancel()


async def _missing(calls: Calls, keys: RunKeys, cursor: int) -> StoreError:
    """Why the events after ``cursor`` are not in the stream: ``HistoryTrimmed`` when
    it starts past them (``XADD MAXLEN ~`` trims the oldest), ``RunLost`` when it
    holds events up to the cursor (a failover lost the ones after) or nothing."""
    first = await calls.call(keys, "XRANGE", keys.stream, "-", "+", "COUNT", 1)
    if not first:
        return RunLost(keys.run_id, LOST)
    n, _ = parse_id(first[0][0])
    if n > cursor + 1:
        return HistoryTrimmed(keys.run_id, cursor, n)
    return RunLost(
        keys.run_id,
        f"events after {cursor} are missing from the stream, which holds earlier and "
        "later ones (a failover lost acknowledged events)",
    )


async def _page(
    calls: Calls, keys: RunKeys, after: str, upto: str, count: int, budget: int
) -> tuple[list[Any], bool]:
    """Stored entries after ``after`` up to ``upto``, flat (each its id, then its
    fields or payload: ``pairs`` gives them as ``_entries.entries`` reads them), at
    most ``count`` of them and at most ``budget`` bytes of payload (one entry at
    least), and whether the byte budget cut them short."""
    flat, cut = await calls.run_script(keys, PAGE, [keys.stream], [after, upto, count, budget])
    return flat, bool(cut)


def pairs(flat: list[Any]) -> Iterator[tuple[Any, Any]]:
    """A page's entries as ``(id, fields or payload)``, one at a time: a page of
    tuples would outlive the cyclic GC's young generation (the next page is read
    while a fold feeds this one) and fill the old ones."""
    return zip(flat[::2], flat[1::2], strict=True)
