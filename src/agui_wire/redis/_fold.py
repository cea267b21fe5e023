"""Compact prefixes for late joiners, folded page by page and shared.

Strategy: a fold reads the run's stored events in pages bounded in bytes
(``_pages.pages``) and feeds each page to a ``Compactor`` before reading the
next, so it holds the folded state (messages, state, what is open), never the
run. Compact joiners of one run that arrive while its fold runs await that fold
instead of starting their own; a finished fold is reused for ``poll`` seconds
(its prefix stands for events 1..n; a joiner reads what followed from Redis).

Contract: ``Folds.fold(keys)`` returns a ``Fold``: the prefix (``None`` when the
run cannot be folded: chunks, a second ``RUN_STARTED``, nothing stored yet; the
joiner replays it whole), the last event it stands for, and whether the run had
ended. A run stored with ``maxlen`` has the producer's prefix of its first events
(``_snapshots``): the fold starts from it, so the trimmed events are
folded in, not lost. Store errors of the fold reach every joiner awaiting it.
"""

from __future__ import annotations

import asyncio

from .._apply import Compactor
from .._runstore.batches import Prefix
from . import _snapshots
from ._calls import Calls
from ._keys import RunKeys
from ._pages import pages
from ._settings import Settings


class Fold:
    __slots__ = ("ended", "last", "prefix")

    def __init__(self, prefix: Prefix | None, last: int, ended: bool) -> None:
        self.prefix = prefix
        self.last = last
        self.ended = ended


_NOTHING = Fold(None, 0, False)


class Folds:
    """This process's folds, by run (see the module doc)."""

    def __init__(self, settings: Settings, calls: Calls) -> None:
        self.settings = settings
        self.calls = calls
        self.running: dict[str, asyncio.Future[Fold]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    async def fold(self, keys: RunKeys) -> Fold:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # folds of another event loop cannot be awaited here
            self.loop, self.running = loop, {}
        future = self.running.get(keys.stream)
        if future is None or (future.done() and future.exception() is not None):
            future = self.running[keys.stream] = asyncio.ensure_future(self._fold(keys))
            future.add_done_callback(lambda f: self._finished(keys.stream, f))
        return await asyncio.shield(future)

    def _finished(self, key: str, future: asyncio.Future[Fold]) -> None:
        if future.cancelled() or future.exception() is not None:
            self._forget(key, future)
        else:
            asyncio.get_running_loop().call_later(self.settings.poll, self._forget, key, future)

    def _forget(self, key: str, future: asyncio.Future[Fold]) -> None:
        if self.running.get(key) is future:
            del self.running[key]

    async def _fold(self, keys: RunKeys) -> Fold:
        folder = Compactor()
        ended = False
        cursor, generation = 0, None
        snapshot = await _snapshots.read(self.calls, keys)  # a run trimmed by maxlen
        if snapshot is not None:
            cursor, generation, events = snapshot
            for event in events:
                folder.feed(event)
        async for batch in pages(self.calls, self.settings, keys, cursor, generation):
            generation = batch.generation  # (pages checks each entry's)
            for event in batch.events():
                folder.feed(event)
            cursor = batch.last
            ended = batch.end is not None
            if not folder.foldable:
                return _NOTHING
        if folder.foldable and folder.run_started is not None and cursor:
            return Fold(Prefix(folder.prefix(), cursor, generation), cursor, ended)
        return _NOTHING

    def cancel(self) -> None:
        for future in self.running.values():
            future.cancel()
