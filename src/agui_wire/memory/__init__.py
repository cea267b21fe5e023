"""Runs that outlive their HTTP response, in this process: ``RunStore``, the same
contract as ``agui_wire.redis.RunStore`` with no server and no dependency.

Use it for one process (a single worker, a desktop app, a notebook) and for
tests; use ``agui_wire.redis`` once runs must be read from another process or
outlive this one. Both stores give the same events, ids (``n-<generation>``),
errors, ``RUN_ERROR`` codes and HTTP statuses, so an app moves from one to the
other by changing the line that makes the store; tests/runstore runs one suite
on both (and on a Redis Cluster).

Strategy: a run is its events' protobuf payloads in a list (encoded once, as the
Redis store stores them), its generation, its end and its lease
(``_runs``); a producer holds the lease and renews it (``_producer``); a
reader replays the list in pages, then follows the run's appends, each handed
to every reader as one shared batch (``_reading``); ``_store`` is ``RunStore``.
The rules of the Redis store's scripts hold here too, each applied without an
``await`` (atomic in the event loop): an idempotent producer, leases with
takeover by ``replay=True``, ``ttl`` retention, ``maxlen`` trimming with
``HistoryTrimmed`` and a compact prefix of what was trimmed, owner scoping.

What differs, because there is one process: nothing is shared with another
process, and a restart loses every run (a client resuming then gets 404, or
``RUN_REPLACED`` for a run produced again under its id). The Redis faults have
no counterpart: the store is never unreachable (no ``StoreUnavailable``, no
503), never full (no ``STORE_FULL``: ``maxlen`` and ``ttl`` bound it), never
loses acknowledged events (no ``RUN_LOST`` but for a run forgotten after its
``ttl``) and holds nothing it did not write (no ``STORE_CORRUPTED``). A
producer's lease lapses only when its heartbeat stops without the run ending:
in one process a cancelled or failing producer ends its run itself (``CANCELLED``,
``RUN_ERROR``), so leases and takeover matter when a producer's task is stopped
from outside the store (tests/runstore stops one so).

``import agui_wire`` does not import this module.
"""

from __future__ import annotations

from .._runstore.http import resume_after, store_error_response
from .._runstore.ids import (
    LEASE_EXPIRED,
    RUN_LOST,
    RUN_REPLACED,
    STORE_CORRUPTED,
    STORE_FULL,
    EventId,
)
from .._streaming import AFTER_HEADER, SNAPSHOT_HEADER
from ._store import RunStore

__all__ = [
    "AFTER_HEADER",
    "LEASE_EXPIRED",
    "RUN_LOST",
    "RUN_REPLACED",
    "SNAPSHOT_HEADER",
    "STORE_CORRUPTED",
    "STORE_FULL",
    "EventId",
    "RunStore",
    "resume_after",
    "store_error_response",
]
