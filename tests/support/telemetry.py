"""OpenTelemetry's SDK, recording what agui_wire reports, for tests to read back.

``recording()`` points agui_wire's telemetry at a fresh SDK ``MeterProvider``
(an ``InMemoryMetricReader``) and ``TracerProvider`` (an ``InMemorySpanExporter``)
while it is open, and back at the global providers after (``_telemetry.use``:
the process's global providers can be set once only). ``Recorded.values(name)``
is a metric's points as ``{attributes: value}`` (a histogram's value: its count),
``Recorded.total(name, match)`` the sum of the points whose attributes match,
``Recorded.histogram(name)`` a histogram's points whole (count, sum, buckets).
``WITHOUT_API`` starts a script that runs as without the ``otel`` extra.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agui_wire import _telemetry

Attributes = frozenset[tuple[str, Any]]

#: The start of a script (``python -c``) run as without the ``otel`` extra: no
#: ``opentelemetry`` module can be imported.
WITHOUT_API = """
import sys
class NoOtel:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, NoOtel())
"""


class Recorded:
    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.exporter = InMemorySpanExporter()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def metrics(self) -> dict[str, dict[Attributes, Any]]:
        """Every metric's points: name -> {attributes: value (a histogram: its count)}."""
        out: dict[str, dict[Attributes, Any]] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points = out.setdefault(metric.name, {})
                    for p in metric.data.data_points:
                        value = p.count if isinstance(p, HistogramDataPoint) else p.value
                        points[frozenset(p.attributes.items())] = value
        return out

    def histogram(self, name: str) -> list[HistogramDataPoint]:
        """A histogram's points, whole (``count``, ``sum``, ``min``, ``max``,
        ``bucket_counts`` over ``explicit_bounds``)."""
        data = self.reader.get_metrics_data()
        return [
            p
            for resource in (data.resource_metrics if data else ())
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for p in metric.data.data_points
            if isinstance(p, HistogramDataPoint)
        ]

    def values(self, name: str) -> dict[Attributes, Any]:
        return self.metrics().get(name, {})

    def total(self, name: str, match: dict[str, Any] | None = None) -> Any:
        """The sum of ``name``'s points whose attributes include ``match``."""
        return sum(
            value
            for attrs, value in self.values(name).items()
            if all(dict(attrs).get(k) == v for k, v in (match or {}).items())
        )

    def by(self, name: str, key: str) -> dict[Any, Any]:
        """``name``'s values summed by one attribute (``None``: points without it)."""
        out: dict[Any, Any] = {}
        for attrs, value in self.values(name).items():
            k = dict(attrs).get(key)
            out[k] = out.get(k, 0) + value
        return {k: v for k, v in out.items() if v}

    def spans(self, name: str = "agui.run") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]


@contextlib.contextmanager
def recording() -> Iterator[Recorded]:
    recorded = Recorded()
    _telemetry.use(recorded.meter_provider, recorded.tracer_provider)
    try:
        yield recorded
    finally:
        _telemetry.use()
        recorded.meter_provider.shutdown()
        recorded.tracer_provider.shutdown()
