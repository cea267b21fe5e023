"""OpenTelemetry instruments of agui_wire: their names, and whether anything records.

Strategy: ``opentelemetry-api`` is optional (``pip install 'agui-wire[otel]'``).
``current()`` is asked once per response (never per event) and answers the
instruments of the process's providers, or ``None`` while nothing would record:
the API is not installed, or neither the meter provider nor the tracer provider
is an SDK's (the API's own proxy and no-op providers, all a process has until it
configures one, record nothing). On ``None`` callers do no telemetry work at all.
The instruments are created once per pair of providers and kept.

Contract: every name an operator sees (instruments, attributes, the span) is
defined here, and docs/telemetry.md lists each (tests/unit/test_telemetry.py
holds the two equal). OpenTelemetry's semantic conventions where one exists
(``error.type``, ``http.response.status_code``, the response header attribute
``http.response.header.content-encoding``); ours under ``agui.``. ``use()``
records to given providers instead of the global ones (an application that keeps
its providers to itself; tests). The run store's instruments (``agui.store.*``)
are declared with the rest; ``agui_wire.redis`` records them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from typing import Any, Final

try:
    from opentelemetry import context, metrics, propagate, trace
    from opentelemetry.metrics import _internal as _metrics_state
    from opentelemetry.propagators.textmap import Getter
except ImportError:  # the otel extra is not installed: nothing records
    API = False
else:
    API = True

# While no provider is set, the API's getters look the environment up on every call
# (OTEL_PYTHON_*_PROVIDER, a KeyError raised and caught: microseconds per response
# for nothing). The API keeps the providers it was given in module globals: when
# those exist and no such variable asks the getters to load a provider, ``current()``
# reads them to learn that none is set, and calls the getters only once one is.
_UNSET_IS_CHEAP: Final = (
    API
    and hasattr(_metrics_state, "_METER_PROVIDER")
    and hasattr(trace, "_TRACER_PROVIDER")
    and not {"OTEL_PYTHON_METER_PROVIDER", "OTEL_PYTHON_TRACER_PROVIDER"} & set(os.environ)
)

#: An ASGI scope's headers: (name, value) byte pairs.
Headers = Iterable[tuple[bytes, bytes]]

#: The instrumentation scope (meter and tracer name).
SCOPE: Final = "agui_wire"

# -- attribute keys ---------------------------------------------------------------------

TRANSPORT: Final = "agui.transport"  # "protobuf" | "sse"
EVENT_TYPE: Final = "agui.event.type"  # the AG-UI event type, e.g. "TEXT_MESSAGE_CONTENT"
OUTCOME: Final = "agui.stream.outcome"  # how a streamed response ended (OUTCOMES)
THREAD_ID: Final = "agui.thread.id"  # span only: ids are unbounded
RUN_ID: Final = "agui.run.id"
STREAM_EVENTS: Final = "agui.stream.events"  # span only: the events the response sent
STREAM_BYTES: Final = "agui.stream.bytes"  # span only: the body bytes it sent
LANE: Final = "agui.store.lane"  # a store's lanes by kind: "read" | "command" | "page"
# OpenTelemetry semantic conventions (the HTTP and error registries)
CONTENT_ENCODING: Final = "http.response.header.content-encoding"  # ["gzip"]: a header's values
STATUS_CODE: Final = "http.response.status_code"
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"  # a store's lanes: the Redis node they talk to
SERVER_PORT: Final = "server.port"

PROTOBUF: Final = "protobuf"
SSE: Final = "sse"

#: ``agui.stream.outcome`` values, in the order a response's end is judged.
OUTCOMES: Final = (
    "disconnected",  # the client left before the end
    "failed",  # the producer raised or produced an event that does not encode
    "cancelled",  # the server cancelled the response (shutdown)
    "finished",  # the last event was RUN_FINISHED
    "run_error",  # the last event was the producer's own RUN_ERROR
    "incomplete",  # the body ended without a terminal event
)

# -- instrument names -------------------------------------------------------------------

SERVER_EVENTS: Final = "agui.server.events"
SERVER_BYTES: Final = "agui.server.bytes"
SERVER_STREAMS_ACTIVE: Final = "agui.server.streams.active"
SERVER_STREAM_DURATION: Final = "agui.server.stream.duration"
SERVER_REFUSALS: Final = "agui.server.refusals"
RUN_SPAN: Final = "agui.run"

STORE_RUNS_ACTIVE: Final = "agui.store.runs.active"
STORE_READERS: Final = "agui.store.readers"
STORE_LANES: Final = "agui.store.lanes"
STORE_LAG: Final = "agui.store.delivery.lag"
STORE_APPENDS: Final = "agui.store.appends"
STORE_APPEND_SIZE: Final = "agui.store.append.size"
STORE_FAULTS: Final = "agui.store.faults"
STORE_DRAINS: Final = "agui.store.drains"
STORE_HANDOVERS: Final = "agui.store.handovers"

# Bucket bounds (advice to the SDK; a View overrides them). A stream lives from
# milliseconds (a refused or replayed run) to an hour (a long agent run); a delivery
# lag is sub-millisecond on one replica and seconds when Redis stalls.
_STREAM_BOUNDS: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600)
_LAG_BOUNDS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
_BATCH_BOUNDS: Final = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _version() -> str | None:
    try:
        return metadata.version("agui-wire")
    except metadata.PackageNotFoundError:  # a source tree on sys.path
        return None


def records(provider: object) -> bool:
    """Whether a provider records: not one the API package itself defines (its
    proxies and no-op providers, which is what a process has until it sets an SDK's)."""
    module = type(provider).__module__
    return not module.startswith(("opentelemetry.metrics", "opentelemetry.trace"))


class Totals:
    """A cumulative count per attribute set, which an asynchronous (observable)
    counter reports when the SDK collects. Adding is a dict update under a lock
    (any thread): an SDK's synchronous ``add`` costs microseconds, too much per
    event. Callers pass long-lived attribute mappings, found by identity (kept,
    so an identity is never reused); two mappings with the same attributes share
    one total (the SDK keeps one observation per attribute set)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[int, list[Any]] = {}  # id(attributes) -> [attributes, total]
        self._totals: dict[frozenset[tuple[str, Any]], list[Any]] = {}
        self._kept: list[Mapping[str, Any]] = []

    def add(self, amount: int, attributes: Mapping[str, Any]) -> None:
        with self._lock:
            entry = self._by_id.get(id(attributes))
            if entry is None:
                key = frozenset(attributes.items())
                entry = self._by_id[id(attributes)] = self._totals.setdefault(key, [attributes, 0])
                self._kept.append(attributes)
            entry[1] += amount

    def observe(self, _options: Any) -> list[Any]:
        with self._lock:
            return [metrics.Observation(total, attrs) for attrs, total in self._totals.values()]


class Meters:
    """The metric instruments of one meter provider, made once per provider (an
    SDK keeps the first of two instruments of one name, and only its callbacks).
    ``created`` lists them, for the docs' table."""

    def __init__(self, meter_provider: Any) -> None:
        self.provider = meter_provider
        meter = meter_provider.get_meter(SCOPE, _version())
        self.created: list[Any] = []

        def made(instrument: Any) -> Any:
            self.created.append(instrument)
            return instrument

        def counter(name: str, unit: str, description: str) -> Any:
            return made(meter.create_counter(name, unit, description))

        def totals(name: str, unit: str, description: str) -> Totals:
            counts = Totals()
            made(meter.create_observable_counter(name, [counts.observe], unit, description))
            return counts

        def updown(name: str, unit: str, description: str) -> Any:
            return made(meter.create_up_down_counter(name, unit, description))

        def histogram(name: str, unit: str, description: str, bounds: Sequence[float]) -> Any:
            return made(
                meter.create_histogram(
                    name, unit, description, explicit_bucket_boundaries_advisory=bounds
                )
            )

        # EventStreamResponse (so RunStore.response), and install()'s encoder
        self.events = totals(SERVER_EVENTS, "{event}", "AG-UI events sent in response bodies")
        self.bytes = totals(SERVER_BYTES, "By", "response body bytes, as the client gets them")
        self.streams_active = updown(
            SERVER_STREAMS_ACTIVE, "{stream}", "event streams being sent now"
        )
        self.stream_duration = histogram(
            SERVER_STREAM_DURATION,
            "s",
            "how long an event stream lasted, by how it ended",
            _STREAM_BOUNDS,
        )
        self.refusals = counter(
            SERVER_REFUSALS, "{response}", "requests answered without a stream, by status"
        )
        # the run store (agui_wire.redis)
        self.store_runs_active = updown(
            STORE_RUNS_ACTIVE, "{run}", "runs this process is producing into the store"
        )
        self.store_readers = updown(STORE_READERS, "{reader}", "subscriptions open in this process")
        self.store_lanes = updown(
            STORE_LANES, "{lane}", "the store's lanes to Redis: blocking reads, commands, pages"
        )
        self.store_lag = histogram(
            STORE_LAG,
            "s",
            "from an event's append to its delivery to a local subscriber",
            _LAG_BOUNDS,
        )
        self.store_appends = totals(STORE_APPENDS, "{append}", "appends of events to the store")
        self.store_append_size = histogram(
            STORE_APPEND_SIZE, "{event}", "events per append", _BATCH_BOUNDS
        )
        self.store_faults = counter(STORE_FAULTS, "{fault}", "store faults, by error type")
        self.store_drains = counter(STORE_DRAINS, "{drain}", "drains of this process's runs")
        self.store_handovers = counter(
            STORE_HANDOVERS, "{run}", "runs handed over to another process"
        )


class Instruments:
    """What to record to: the ``Meters`` of one meter provider and the tracer of
    one tracer provider (a provider that does not record gives no-op ones:
    ``tracing`` says whether spans record)."""

    def __init__(self, meter_provider: Any, tracer_provider: Any) -> None:
        self.meter_provider = meter_provider
        self.tracer_provider = tracer_provider
        meters = _meters.get(id(meter_provider))
        if meters is None or meters.provider is not meter_provider:
            meters = _meters[id(meter_provider)] = Meters(meter_provider)
        self.meters = meters
        self.tracing = records(tracer_provider)
        self.tracer = tracer_provider.get_tracer(SCOPE, _version())

    # -- the run span ------------------------------------------------------------------

    def start_run(self, headers: Headers, attributes: Mapping[str, Any]) -> Any:
        """The ``agui.run`` span of one streamed response (``None`` when tracing is
        off): a child of the current span where there is one (an ASGI server's or a
        middleware's span), else of the trace context the request's headers carry
        (W3C ``traceparent``, or whatever the global propagator reads), as the
        server side of that trace; a new trace when the request has none."""
        if not self.tracing:
            return None
        if trace.get_current_span().get_span_context().is_valid:
            parent, kind = None, trace.SpanKind.INTERNAL
        else:
            parent = propagate.extract(list(headers), getter=_HEADERS)
            kind = trace.SpanKind.SERVER
        return self.tracer.start_span(RUN_SPAN, parent, kind, attributes)


def end_run(
    span: Any, attributes: Mapping[str, Any], error: str | None, exc: BaseException | None
) -> None:
    """End a run span: its final attributes, and an error status naming ``error``."""
    span.set_attributes(attributes)
    if exc is not None:
        span.record_exception(exc)
    if error is not None:
        set_error(span, error)
    span.end()


def error_type(exc: BaseException) -> str:
    """``error.type`` of an exception: its class, qualified by its module unless a
    builtin (``KeyError``, ``agui_wire.errors.StoreUnavailable``)."""
    cls = type(exc)
    name = cls.__qualname__
    return name if cls.__module__ == "builtins" else f"{cls.__module__}.{name}"


def set_error(span: Any, description: str) -> None:
    """Mark ``span`` failed (status ``ERROR``, described)."""
    span.set_status(trace.Status(trace.StatusCode.ERROR, description))


def activate(span: Any) -> object:
    """Make ``span`` the current one (for the tasks created until ``deactivate``)."""
    return context.attach(trace.set_span_in_context(span))


def deactivate(token: object) -> None:
    context.detach(token)  # type: ignore[arg-type]  # the token attach() returned


if API:

    class _HeaderGetter(Getter[Sequence[tuple[bytes, bytes]]]):
        """Reads a propagator's fields from ASGI headers (lower-case byte names)."""

        def get(self, carrier: Sequence[tuple[bytes, bytes]], key: str) -> list[str] | None:
            name = key.lower().encode("latin-1")
            found = [bytes(v).decode("latin-1") for k, v in carrier if bytes(k).lower() == name]
            return found or None

        def keys(self, carrier: Sequence[tuple[bytes, bytes]]) -> list[str]:
            return [bytes(k).decode("latin-1").lower() for k, _ in carrier]

    _HEADERS: Final = _HeaderGetter()


_lock: Final = threading.Lock()
_state: dict[str, Any] = {"instruments": None, "bound": None}
_meters: dict[int, Meters] = {}  # by id(provider); each holds its provider
_watchers: list[Callable[[], None]] = []


def watch(callback: Callable[[], None]) -> None:
    """Call ``callback`` whenever the instruments to record to change (``use()``, or
    ``current()`` finding providers that record): for caches of what ``current()``
    answered."""
    _watchers.append(callback)


def _changed() -> None:
    for callback in _watchers:
        callback()


def use(meter_provider: Any = None, tracer_provider: Any = None) -> None:
    """Record to these providers rather than the global ones; ``use()`` with
    neither goes back to the global providers."""
    bound = None
    if API and (meter_provider is not None or tracer_provider is not None):
        bound = (
            meter_provider or metrics.NoOpMeterProvider(),
            tracer_provider or trace.NoOpTracerProvider(),
        )
    with _lock:
        _state["bound"] = bound
        _state["instruments"] = None
    _changed()


def current() -> Instruments | None:
    """The instruments to record to, or ``None`` when nothing would record."""
    if not API:
        return None
    bound = _state["bound"]
    if bound is None:
        if (
            _UNSET_IS_CHEAP
            and _metrics_state._METER_PROVIDER is None
            and trace._TRACER_PROVIDER is None
        ):
            return None
        meter_provider: Any = metrics.get_meter_provider()
        tracer_provider: Any = trace.get_tracer_provider()
    else:
        meter_provider, tracer_provider = bound
    instruments: Instruments | None = _state["instruments"]
    if (
        instruments is not None
        and instruments.meter_provider is meter_provider
        and instruments.tracer_provider is tracer_provider
    ):
        return instruments
    if not (records(meter_provider) or records(tracer_provider)):
        return None
    with _lock:
        instruments = _state["instruments"]
        made = (
            instruments is None
            or instruments.meter_provider is not meter_provider
            or instruments.tracer_provider is not tracer_provider
        )
        if made:
            instruments = _state["instruments"] = Instruments(meter_provider, tracer_provider)
    if made:
        _changed()
    return instruments
