"""What a run store records (OpenTelemetry, ``agui_wire._telemetry``): the runs it
produces, its readers and lanes, its appends and their sizes, the delay from an
append to a reader's delivery, its faults, drains and hand-overs, and spans of
its operations that are not per event (a claim, a reader's open, a fold, a drain).

Strategy: the core calls these where each thing happens, for every backend
(``store``: a claim's span, a run live, the faults of ``publish``, ``start`` and
its background runs; ``appends``: an append's stamp, count and size; ``read``:
readers, their faults and lag; ``folds``; ``drain``); a backend calls only what
is its own (Redis: its lanes of each kind, per node, and hand-overs). Each looks
at ``_telemetry.current()`` once and returns at once when nothing records, so an
event costs nothing and an append or a batch at most that look. An up-down
counter is taken down on the instruments and attributes it was taken up on
(``Live``: the caller keeps it), so a change of providers meanwhile leaves no
count behind. Appends are a running total (``_telemetry.Totals``: an SDK's
``add`` costs microseconds); an append's size and a delivered batch's lag are
one histogram record each.

Delivery lag: a producer whose telemetry records stamps the last event entry of
each append with its wall-clock time when it sent it (``stamp()``, ms since the
epoch; Redis keeps it on the entry, a store in memory on the batch it hands its
live readers; a ``Batch`` carries the stamps of its entries). A reader following the
live run records, per batch it delivers, its wall-clock time minus the stamp of
the append holding the batch's first (oldest) event: the first stamp at or after
that event, so a reader keeps no state, and entries nobody stamped (a lease
check's ``RUN_ERROR``, a producer whose telemetry is off) never borrow another
append's time. A batch that holds no end of an append (a read cut one) records
nothing; the batch with that end does. The two clocks are two hosts' when the
producer runs on another replica: their skew is in the reading (a negative lag
reads as 0).

Contract: telemetry never fails the store: a counter or a span that raises is
the SDK's bug, not caught here, but nothing here raises when nothing records.
``fault`` counts a ``StoreError`` the store's caller gets (once per call or
reader it ended), not the answers about a run (``ANSWERS``) nor a drain's
``StoreDraining`` (drains and hand-overs have counters of their own).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final

from .. import _telemetry as otel
from ..errors import RunInProgress, RunNotFound, StoreDraining, StoreError

#: ``StoreError``s that answer the caller about a run rather than say the store
#: failed (a ``ValueError`` among them is about what the caller asked: a position).
ANSWERS: Final = (RunNotFound, RunInProgress, ValueError, StoreDraining)

#: Span names: the store's operations that are not per event.
CLAIM: Final = "agui.store.claim"
OPEN: Final = "agui.store.open"
FOLD: Final = "agui.store.fold"
DRAIN: Final = "agui.store.drain"

#: ``agui.store.lane`` values: Redis's blocking reads (the tails), the command
#: lanes and the page lanes (a set of each per node).
READ: Final = "read"
COMMAND: Final = "command"
PAGE: Final = "page"

_NONE: Final[Mapping[str, Any]] = {}  # the attribute set of the appends' total (kept)


# -- up-down counters ----------------------------------------------------------------------


class Live:
    """Things counted by an up-down counter: ``n`` up when made, down at ``end()``
    (once), on the same instrument and attributes."""

    __slots__ = ("attributes", "counter", "n")

    def __init__(self, counter: Any, n: int = 1, attributes: Mapping[str, Any] = _NONE) -> None:
        self.counter, self.n, self.attributes = counter, n, attributes
        counter.add(n, attributes)

    def end(self) -> None:
        counter, self.counter = self.counter, None
        if counter is not None:
            counter.add(-self.n, self.attributes)


def run_started() -> Live | None:
    """A run this process produces: ``agui.store.runs.active`` until ``end()``."""
    instruments = otel.current()
    return None if instruments is None else Live(instruments.meters.store_runs_active)


def reader_opened() -> Live | None:
    """A subscription of this process: ``agui.store.readers`` until ``end()``."""
    instruments = otel.current()
    return None if instruments is None else Live(instruments.meters.store_readers)


def lanes_opened(kind: str, node: str = "", count: int = 1) -> Live | None:
    """``count`` lanes of ``kind`` (``READ``, ``COMMAND``, ``PAGE``) to Redis's
    ``node`` (``host:port``; ``""``: not named, one Redis or a read lane, whose
    node follows its shard): ``agui.store.lanes`` until ``end()``."""
    instruments = otel.current()
    if instruments is None:
        return None
    attributes: dict[str, Any] = {otel.LANE: kind}
    host, _, port = node.rpartition(":")
    if host and port.isdigit():
        attributes[otel.SERVER_ADDRESS] = host
        attributes[otel.SERVER_PORT] = int(port)
    return Live(instruments.meters.store_lanes, count, attributes)


def ended(live: Live | None) -> None:
    if live is not None:
        live.end()


# -- appends and their delivery ------------------------------------------------------------


def stamp() -> int | None:
    """The time to stamp an append with (ms since the epoch), or ``None`` when this
    process's telemetry does not record (its appends carry no stamp)."""
    return None if otel.current() is None else time.time_ns() // 1_000_000


def appended(events: int, stamped: int | None) -> None:
    """An append of ``events`` events, ``stamped`` by ``stamp()``, was stored
    (not stamped: telemetry did not record when it was sent; nothing to look at)."""
    instruments = None if stamped is None else otel.current()
    if instruments is not None:
        meters = instruments.meters
        meters.store_appends.add(1, _NONE)
        meters.store_append_size.record(events)


def delivered(first: int, stamps: tuple[tuple[int, int], ...]) -> None:
    """A reader following the live run delivered a batch of events ``first``...
    whose entries that end an append carry ``stamps`` ((index, ms since the
    epoch)): records now minus the stamp of the append holding its first event,
    the first stamp at or after it (none in the batch: a read cut that append,
    or its writer did not stamp it: nothing recorded)."""
    if not stamps:
        return
    instruments = otel.current()
    if instruments is None:
        return
    for n, ms in stamps:
        if n >= first:
            lag = time.time_ns() // 1_000_000 - ms
            instruments.meters.store_lag.record(lag / 1000 if lag > 0 else 0.0)
            return


# -- faults, drains, hand-overs ----------------------------------------------------------


def fault(exc: BaseException | None) -> None:
    """``exc`` leaves the store's API: counted by its class if it is a fault."""
    if not isinstance(exc, StoreError) or isinstance(exc, ANSWERS):
        return
    instruments = otel.current()
    if instruments is not None:
        instruments.meters.store_faults.add(1, {otel.ERROR_TYPE: otel.error_type(exc)})


def drained() -> None:
    """The store starts to drain (``drain``)."""
    instruments = otel.current()
    if instruments is not None:
        instruments.meters.store_drains.add(1)


def handed_over() -> None:
    """A run was handed over (its lease released for a producer elsewhere)."""
    instruments = otel.current()
    if instruments is not None:
        instruments.meters.store_handovers.add(1)


# -- spans ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _span(tracer: Any, name: str, attributes: Mapping[str, Any]) -> Iterator[Any]:
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            error = otel.error_type(exc)
            span.set_attribute(otel.ERROR_TYPE, error)
            if not isinstance(exc, (*ANSWERS, asyncio.CancelledError)):  # nor is a cancellation
                span.record_exception(exc)
                otel.set_error(span, error)
            raise


_OFF: Final = contextlib.nullcontext()


def span(name: str, run_id: str | None = None) -> contextlib.AbstractContextManager[Any]:
    """The span of one of the store's operations (a child of the current span),
    or a context that does nothing while tracing is off. ``error.type`` names the
    exception that leaves it; its status is ``ERROR`` unless that is an answer or a
    cancellation (the caller left, the store closes)."""
    instruments = otel.current()
    if instruments is None or not instruments.tracing:
        return _OFF
    return _span(instruments.tracer, name, _NONE if run_id is None else {otel.RUN_ID: run_id})
