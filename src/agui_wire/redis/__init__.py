"""Runs that outlive their HTTP response: ``RunStore``, AG-UI event streams on Redis Streams.

Strategy: one Redis Stream per run holds every event once, as its protobuf
payload (the compact form: docs/scaling.md gives bytes per event against JSON),
under the explicit entry id ``n-g`` for the run's n-th event (1-based), ``g`` the
run's *generation* (drawn when the run is first stored), so an event's id is its
index and its run: resuming "after n-g" is ``XREAD``/``XRANGE`` from ``n-g``, the
same on every replica and both transports, and a run lost and produced again
under the same id (another generation) is never read as its continuation
(``RunReplaced``). The run's end is one more entry, ``N-(g+1)``, with field
``end``. Writes go through small Lua scripts, each atomic in Redis, that own the
rules:

* **Idempotent producer**: an append skips every event whose index is at or
  below the stream's last id, so a retried job that produces the same run again
  stores each event once (the first write wins), and a request retried after a
  lost reply cannot store an event twice; a retried claim finds its own token in
  the lease, a retried end its own token in the end marker. A run that has ended
  is not produced again: ``publish`` returns at once without iterating.
* **Lease**: a producer holds the run's lease key (``SET NX PX lease``) and
  renews it every ``lease / 3`` and on every append. Appends check the lease
  token, so a producer that lost it (stalled past the lease) cannot write.
* **Lease expiry**: a replica tailing a run that goes quiet checks the lease
  every ``poll`` seconds; once it is gone the check script ends the run with a
  ``RUN_ERROR`` (code ``LEASE_EXPIRED``) and the end marker, stored like any
  event, so every subscriber, everywhere, and every late joiner sees the same
  end, within ``lease + poll`` of the producer's last heartbeat.
* **Retention**: while running the stream and lease expire ``ttl`` after the
  last heartbeat (a producer that died unobserved leaves nothing behind); after
  the end, the stream lives ``ttl`` more seconds. ``maxlen`` bounds the stored
  events (``XADD MAXLEN ~``): subscribers asking for trimmed events get
  ``HistoryTrimmed``, never a silent gap; the producer keeps the compact prefix of
  what was trimmed for compact joiners.
* **Takeover**: a run whose producer vanished is continued by another only with
  ``replay=True`` (it replays the run deterministically); otherwise it is ended
  (``LEASE_EXPIRED``) and the call raises ``RunAbandoned``.
* **Handover** (``RunStore.drain``, a replica shutting down): a producer that
  does not finish within the drain's grace releases its lease without ending the
  run (``<generation>:released``, alive for ``lease``): nobody writes, readers'
  lease checks wait, and a ``replay=True`` claim takes it at once; taken by
  nobody, it lapses and the run ends ``LEASE_EXPIRED`` as above.

Keys (``_keys``): a run is named by its owner and its id together, hashed into
its keys, so two owners never share a run and the wrong owner reads "no such
run"; the keys carry one of ``shards`` Redis Cluster hash tags, so a run's keys
share a slot and a shard's runs can be read by one ``XREAD``.

Reading (``_reading``, ``_tails``; the core's ``read`` and ``folds``): a process
follows all its live runs through a few *lanes*, each one ``XREAD BLOCK`` over
many runs' streams, and hands each batch, as one shared object, to every local subscriber. A batch
decodes its payloads at most once and builds its SSE bytes (with ``id: n-g``) and
its binary frames (the stored bytes, length-prefixed, not re-encoded) at most
once, whatever the number of subscribers; each response writes a batch in one
ASGI send (``EncodedEvents``). A subscriber first replays from Redis (pages
bounded in bytes) up to the live position, then follows the tail; a subscriber
that falls behind by more than ``backlog`` batches (or two pages of bytes) is
cut loose and catches up from Redis again, so a slow client never holds memory.
The subscribers of a run produced in this process follow its producer instead
(``_local``): each append once Redis acknowledged it, with no read from Redis,
and the tail from where they are once the producer stops for any reason but the
run's stored end. Compact joiners share one fold per run, read page by page.
Every short command
goes through a few pipelined connections (``_pipeline``), so connections do not
grow with runs.

Faults (docs/scaling.md has the table): Redis calls that fail with a connection
error are retried with backoff, then raise ``StoreUnavailable``: for
``reconnect`` seconds when they claim or find a run, and as long as the run's
lease may still be valid in Redis (``lease + 1 s``) once it is live, for its
producer and its readers alike; the scripts are idempotent, so a retry never
stores twice.
Events the store acknowledged that are gone (evicted, Redis restarted without
persistence, a failover to a replica that lacked them) raise ``RunLost`` to the
producer, which ends the run ``RUN_ERROR`` (code ``RUN_LOST``) after every event it
sent, and to subscribers, who get that ``RUN_ERROR`` in a response, within
seconds; ``replica_acks`` counts an append stored only once that many replicas hold
it (``WAIT``), so a failover loses none. A refusal is typed
(``_calls``): out of memory ``StoreFull`` (the run ended ``STORE_FULL``),
a key or entry the store never wrote ``StoreCorrupted`` naming them, a Redis older
than 7.0 ``StoreUnsupported`` (when a producer claims a run). Every error class is in
``agui_wire.errors``. Over HTTP a client is told a status and words that name
no host, port or errno (``store_error_response``, the exception handler of an
app's routes, for what ``start``/``publish`` raise; ``response`` for the rest);
the log has the details, an outage once (``_outage``).

``import agui_wire`` does not import this module; it needs the ``redis``
package (``pip install agui-wire[redis]``) and a client made with
``decode_responses=False`` (payloads are bytes).

The package's modules, one job each, each importing only those before it and
the run store's core (``agui_wire._runstore``: ids, batches, folds, appends, a
reader, the HTTP response: what does not talk to Redis); a Lua script sits in the module
that calls it: ``_keys`` (key names, entry ids), ``_settings`` (the options
checked, the timings derived), ``_scripts`` (the scripts' reply codes and Lua
helpers), ``_pipeline`` (auto-pipelined commands: command lanes, page lanes),
``_outage`` (an outage logged once), ``_calls`` (retried calls, refusals typed),
``_entries`` (stream entries as the core's batches), ``_pages``
(stored events read in pages: ``PAGE``), ``_snapshots`` (the compact prefix of a
trimmed run), ``_leases`` (a lapsed lease ends the run: ``EXPIRE``; a run
handed over by a drain: ``RELEASE``), ``_watchdog`` (producers fail when Redis is
silent), ``_producer`` (a claimed run stored: ``APPEND``, ``RENEW``, ``FINISH``,
``FAIL``), ``_claim`` (the lease taken: ``ACQUIRE``), ``_tails`` (lanes, lease
checks), ``_local`` (readers of the runs produced here, fed by their producer),
``_reading`` (what readers and folds read), ``_store`` (``RunStore``;
the drain's algorithm and signal are the core's, ``_runstore.drain``).

Stalls: every round trip and blocking read has a deadline of the store's own,
and a watchdog fails the live producers of a Redis node once it has not answered
for ``lease + 1 s`` (``_watchdog``; the tails do the same for their readers), so
a stalled or black-holed Redis is ``StoreUnavailable`` within ``lease + 2 s``; a
stall shorter than the lease loses nothing (lease checks only look while reads
are overdue). In a Redis Cluster the command lanes, the watchdog and the tails
are per node: a stalled master fails its own runs, the others carry on.
"""

from __future__ import annotations

try:  # redis-py: without it, say which extra installs it (not a bare ModuleNotFoundError)
    import redis as _redis_py  # noqa: F401
except ImportError as exc:
    from ..errors import MissingDependency

    raise MissingDependency("agui_wire.redis", "redis", "redis") from exc

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
