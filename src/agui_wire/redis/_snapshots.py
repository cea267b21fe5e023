"""A run's snapshot key: the compact prefix of its first events, kept beside a
stream that ``maxlen`` trims, so compact joiners fold in what was trimmed.

Strategy: the producer folds every event once Redis has it (``Compactor``); after
every ``maxlen // 2`` stored events it writes the prefix (events 1..k) to the
run's snapshot key as ``k-<generation>\\n`` and the prefix's binary frames, so the
key always reaches past what ``XADD MAXLEN ~`` trimmed (the stream keeps at
least the ``maxlen`` newest). A run the fold cannot compact (chunks, a second
``RUN_STARTED``) writes none: its trimmed compact joiners get ``HISTORY_TRIMMED``.

Contract: ``Snapshots`` is the producer's writer (``produced`` each event,
``stored`` after each acknowledged append); ``read`` returns the last snapshot
(``None``: none), or ``StoreCorrupted`` for a key that is not one.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .._apply import Compactor
from .._decoder import decode_proto
from .._runstore.batches import PROTO
from ..errors import StoreCorrupted
from ._calls import Calls
from ._keys import RunKeys, parse_id


class Snapshots:
    """A producer's snapshots of its run (see the module doc)."""

    def __init__(
        self, calls: Calls, keys: RunKeys, generation: str, maxlen: int, ttl_ms: int
    ) -> None:
        self.calls = calls
        self.keys = keys
        self.generation = generation.encode()
        self.ttl_ms = ttl_ms  # the key's, renewed with every snapshot (a live run's)
        self.folder = Compactor()
        self.waiting: deque[Any] = deque()  # produced, not yet stored
        self.folded = 0  # events fed to the folder
        self.written = 0  # the last snapshot's k
        self.every = max(1, maxlen // 2)

    def produced(self, event: Any) -> None:
        self.waiting.append(event)

    async def stored(self, last: int) -> None:
        folder = self.folder
        while self.folded < last and self.waiting:
            folder.feed(self.waiting.popleft())
            self.folded += 1
        if not folder.foldable or self.folded - self.written < self.every:
            return
        head = b"%d-%s\n" % (self.folded, self.generation)
        data = head + PROTO.encode_many(folder.prefix())
        keys = self.keys
        await self.calls.call(keys, "SET", keys.snapshot, data, "PX", self.ttl_ms)
        self.written = self.folded


async def read(calls: Calls, keys: RunKeys) -> tuple[int, int, list[dict[str, Any]]] | None:
    """The producer's compact prefix of a run stored with ``maxlen``: the last
    event it stands for, the run's generation, its events; ``None``: none."""
    data = await calls.call(keys, "GET", keys.snapshot)
    if data is None:
        return None
    head, _, frames = bytes(data).partition(b"\n")
    try:
        n, seq = parse_id(head)
        events = decode_proto(frames, unknown_events="raw")
    except ValueError as exc:  # DecodeError too
        raise StoreCorrupted(keys.run_id, keys.snapshot, None, f"not a snapshot: {exc}") from None
    return n, seq, events
