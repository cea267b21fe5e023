"""OpenTelemetry: what ``EventStreamResponse`` and ``compat.SDKEventEncoder`` record,
read back from the SDK's in-memory reader and span exporter (values: counts equal
the events sent, bytes equal the body sent), and that nothing is recorded, nor
anything paid per event, without an SDK or without the API package.

In process (``Driver`` plays the server, so the body is exactly what was sent);
tests/e2e/test_telemetry_live.py holds the same against a real client over
uvicorn's sockets, install()'d framework-style servers and the Prometheus exporter.
"""

from __future__ import annotations

import asyncio
import collections
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import agui_wire
from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, _telemetry, compat, decode
from agui_wire._compression import available, decompressor
from agui_wire._sample import realistic_run
from agui_wire.asgi import EncodedEvents, EventStreamResponse
from tests.support.telemetry import WITHOUT_API, Recorded, recording
from tests.unit.test_asgi import RUN, Driver

ROOT = Path(__file__).resolve().parents[2]
TRANSPORT = {SSE_MEDIA_TYPE: "sse", PROTO_MEDIA_TYPE: "protobuf"}
CODINGS = [None, *available()]
# 2,000 events of a realistic run: ~200 KB of SSE, so several sends of up to 32 KiB
LONG = realistic_run(2_000, seed=35)
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def rec() -> Iterator[Recorded]:
    with recording() as recorded:
        yield recorded


def received(d: Driver, coding: str | None) -> list[dict[str, Any]]:
    """The events in what the driver got (decompressed as a client would)."""
    body = d.body
    if coding is not None:
        assert d.headers["content-encoding"] == coding
        inflate = decompressor(coding)
        body = b"".join(inflate(b) for b in d.bodies)
    return decode(body, d.headers["content-type"])


def driver(accept: str, coding: str | None, **options: Any) -> Driver:
    headers = [(b"accept-encoding", coding.encode())] if coding else []
    return Driver(accept=accept, headers=headers, **options)


async def paced(events: list[Any], delay: float = 0.0) -> AsyncIterator[Any]:
    for event in events:
        await asyncio.sleep(delay)
        yield event


# -- counts and bytes: what was sent ------------------------------------------------------


@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_events_and_bytes_are_what_the_response_sent(rec, accept: str, coding: str | None):
    d = driver(accept, coding).run(EventStreamResponse(LONG, compress=coding is not None))
    events = received(d, coding)
    assert events == LONG
    assert len(d.bodies) > 3  # several sends, each counted when it returned
    transport = TRANSPORT[accept]
    encoding = None if coding is None else (coding,)
    sent_types = collections.Counter(e["type"] for e in events)
    for attrs, value in rec.values("agui.server.events").items():
        a = dict(attrs)
        assert a["agui.transport"] == transport
        assert a.get("http.response.header.content-encoding") == encoding
        assert value == sent_types[a["agui.event.type"]], a
    assert rec.by("agui.server.events", "agui.event.type") == dict(sent_types)
    # bytes: the body as sent (compressed when compressed), all of it
    base = {"agui.transport": transport}
    if coding:
        base["http.response.header.content-encoding"] = encoding
    assert rec.values("agui.server.bytes") == {frozenset(base.items()): len(d.body)}
    assert rec.total("agui.server.streams.active") == 0
    assert rec.values("agui.server.stream.duration") == {
        frozenset({"agui.transport": transport, "agui.stream.outcome": "finished"}.items()): 1
    }
    [span] = rec.spans()
    assert span.attributes is not None
    assert dict(span.attributes) == {
        **base,
        "agui.stream.outcome": "finished",
        "agui.stream.events": len(LONG),
        "agui.stream.bytes": len(d.body),
        "agui.thread.id": LONG[0]["threadId"],
        "agui.run.id": LONG[0]["runId"],
    }
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_the_sdks_pydantic_events_count_by_their_type_name(rec, accept: str):
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    adapter = TypeAdapter(Event)
    d = driver(accept, None).run(
        EventStreamResponse([adapter.validate_python(e) for e in RUN], event_id=1)
    )
    assert len(received(d, None)) == len(RUN)
    assert rec.by("agui.server.events", "agui.event.type") == {e["type"]: 1 for e in RUN}
    [span] = rec.spans()
    assert span.attributes is not None
    assert (span.attributes["agui.thread.id"], span.attributes["agui.run.id"]) == ("t", "r")


class Stored(EncodedEvents):
    """Events encoded once for many responses (as the run store hands them out)."""

    __slots__ = ("events",)

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    def data(self, binary: bool) -> bytes:
        encode = agui_wire.encode_proto if binary else agui_wire.encode_sse
        return b"".join(encode(e) for e in self.events)

    @property
    def last_type(self) -> str | None:
        return str(self.events[-1]["type"])


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_pre_encoded_batches_count_every_event_in_them(rec, accept: str):
    batches = [Stored(LONG[:700]), Stored(LONG[700:701]), Stored(LONG[701:])]
    d = driver(accept, "gzip").run(EventStreamResponse(batches, compress=True))
    assert received(d, "gzip") == LONG
    assert rec.by("agui.server.events", "agui.event.type") == dict(
        collections.Counter(e["type"] for e in LONG)
    )
    assert rec.total("agui.server.bytes") == len(d.body)
    [span] = rec.spans()
    assert span.attributes is not None
    assert span.attributes["agui.stream.outcome"] == "finished"
    assert span.attributes["agui.run.id"] == LONG[0]["runId"]


def test_keepalives_are_bytes_not_events(rec):
    """SSE comments and the binary keep-alive (a CUSTOM event the run does not
    have) are bytes the client receives, not events of the run."""
    steps = [RUN[0], RUN[1], RUN[2], RUN[3], RUN[4]]
    sse = driver(SSE_MEDIA_TYPE, None).run(EventStreamResponse(paced(steps, 0.06), keepalive=0.02))
    binary = driver(PROTO_MEDIA_TYPE, None).run(
        EventStreamResponse(paced(steps, 0.06), keepalive=0.02, binary_keepalive=True)
    )
    assert b": keep-alive" in sse.body
    assert len(decode(binary.body, PROTO_MEDIA_TYPE)) > len(steps)  # keep-alives went out
    for d, transport in ((sse, "sse"), (binary, "protobuf")):
        match = {"agui.transport": transport}
        assert rec.total("agui.server.bytes", match) == len(d.body)
        assert rec.total("agui.server.events", match) == len(steps)
    assert {s.attributes["agui.stream.events"] for s in rec.spans()} == {len(steps)}  # type: ignore[index]


# -- how a stream ended --------------------------------------------------------------------

APP_ERROR = {"type": "RUN_ERROR", "message": "the agent gave up", "code": "AGENT"}
UNENCODABLE = {"messageId": "m", "delta": "no type"}


def failing(before: list[dict[str, Any]], how: str) -> Iterator[Any]:
    yield from before
    if how == "unencodable":
        yield UNENCODABLE
    raise KeyError("secret detail")


# case -> (the response, its outcome, error.type, events the client got)
OUTCOMES: dict[str, tuple[Any, str, str | None, int]] = {
    "finished": (lambda: EventStreamResponse(RUN), "finished", None, 5),
    "the producer's RUN_ERROR": (
        lambda: EventStreamResponse([RUN[0], APP_ERROR]),
        "run_error",
        "AGENT",
        2,
    ),
    "a RUN_ERROR without a code": (
        lambda: EventStreamResponse([RUN[0], {"type": "RUN_ERROR", "message": "no"}]),
        "run_error",
        "RUN_ERROR",
        2,
    ),
    "no terminal event": (lambda: EventStreamResponse(RUN[:3]), "incomplete", None, 3),
    "the producer raised before its first event": (
        lambda: EventStreamResponse(failing([], "raise")),
        "failed",
        "INTERNAL_ERROR",
        1,
    ),
    "the producer raised mid-run": (
        lambda: EventStreamResponse(failing(RUN[:2], "raise")),
        "failed",
        "INTERNAL_ERROR",
        3,
    ),
    "an event that does not encode": (
        lambda: EventStreamResponse(failing(RUN[:2], "unencodable")),
        "failed",
        "ENCODE_ERROR",
        3,
    ),
    "raised after RUN_FINISHED (no RUN_ERROR is due)": (
        lambda: EventStreamResponse(failing(RUN, "raise")),
        "failed",
        "KeyError",
        5,
    ),
    "on_error's own event": (
        lambda: EventStreamResponse(
            failing(RUN[:1], "raise"), on_error=lambda exc: {**APP_ERROR, "code": "MINE"}
        ),
        "failed",
        "MINE",
        2,
    ),
    "on_error writing nothing": (
        lambda: EventStreamResponse(failing(RUN[:1], "raise"), on_error=lambda exc: None),
        "failed",
        "KeyError",
        1,
    ),
}


@pytest.mark.parametrize("case", list(OUTCOMES))
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_each_way_a_stream_ends_is_its_outcome(rec, accept: str, case: str, caplog):
    make, outcome, error, count = OUTCOMES[case]
    d = driver(accept, None).run(make())
    assert len(d.events()) == count
    transport = TRANSPORT[accept]
    attrs = {"agui.transport": transport, "agui.stream.outcome": outcome}
    if error is not None:
        attrs["error.type"] = error
    assert rec.values("agui.server.stream.duration") == {frozenset(attrs.items()): 1}
    assert rec.total("agui.server.events") == count
    assert rec.total("agui.server.bytes") == len(d.body)
    assert rec.total("agui.server.streams.active") == 0
    [span] = rec.spans()
    assert span.attributes is not None
    assert span.attributes["agui.stream.outcome"] == outcome
    assert span.attributes.get("error.type") == error
    assert span.attributes["agui.stream.events"] == count
    if error is None:
        assert span.status.status_code is StatusCode.UNSET
    else:
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == error
    raised = [e for e in span.events if e.name == "exception"]
    assert bool(raised) == (outcome == "failed")


def test_a_client_that_leaves_is_a_disconnect_and_what_it_missed_is_not_counted(rec):
    async def forever() -> AsyncIterator[Any]:
        yield RUN[0]
        while True:
            await asyncio.sleep(0.005)
            yield RUN[2]

    d = driver(SSE_MEDIA_TYPE, None, disconnect_after=0.1).run(EventStreamResponse(forever()))
    sent = len(d.events())
    assert sent > 3
    assert rec.values("agui.server.stream.duration") == {
        frozenset({"agui.transport": "sse", "agui.stream.outcome": "disconnected"}.items()): 1
    }
    assert rec.total("agui.server.events") == sent
    assert rec.total("agui.server.bytes") == len(d.body)
    assert rec.total("agui.server.streams.active") == 0


def test_a_send_that_fails_counts_only_what_went_before(rec):
    d = driver(PROTO_MEDIA_TYPE, None, fail_send_after=1).run(EventStreamResponse(paced(RUN, 0.01)))
    assert len(d.bodies) == 1
    assert rec.total("agui.server.events") == 1
    assert rec.total("agui.server.bytes") == len(d.body)
    assert rec.by("agui.server.stream.duration", "agui.stream.outcome") == {"disconnected": 1}


def test_on_error_raise_is_a_failure_with_the_exceptions_type(rec, caplog):
    with pytest.raises(KeyError):
        driver(SSE_MEDIA_TYPE, None).run(
            EventStreamResponse(failing(RUN[:2], "raise"), on_error="raise")
        )
    assert rec.by("agui.server.stream.duration", "error.type") == {"KeyError": 1}
    assert rec.total("agui.server.events") == 2
    assert rec.total("agui.server.streams.active") == 0


def test_a_refused_request_is_a_refusal_by_status_and_no_stream(rec):
    d = Driver(accept="text/html").run(EventStreamResponse(RUN, strict=True))
    assert d.start["status"] == 406
    assert rec.values("agui.server.refusals") == {
        frozenset({"http.response.status_code": 406}.items()): 1
    }
    assert rec.values("agui.server.stream.duration") == {}
    assert rec.spans() == []
    Driver(accept=SSE_MEDIA_TYPE, method="HEAD").run(EventStreamResponse(RUN))
    assert rec.values("agui.server.stream.duration") == {}  # HEAD: headers, no stream


# -- the trace: parent, children -----------------------------------------------------------


def test_the_run_span_continues_the_requests_traceparent(rec):
    d = Driver(accept=SSE_MEDIA_TYPE, headers=[(b"traceparent", TRACEPARENT.encode())])
    d.run(EventStreamResponse(RUN))
    [span] = rec.spans()
    assert span.kind is SpanKind.SERVER
    assert span.context is not None
    assert span.parent is not None
    assert span.context.trace_id == int(TRACEPARENT.split("-")[1], 16)
    assert span.parent.span_id == int(TRACEPARENT.split("-")[2], 16)
    assert span.parent.is_remote


def test_without_a_traceparent_the_run_span_starts_a_trace(rec):
    Driver(accept=SSE_MEDIA_TYPE).run(EventStreamResponse(RUN))
    [span] = rec.spans()
    assert span.parent is None
    assert span.kind is SpanKind.SERVER


def test_under_a_servers_span_the_run_is_its_child_and_the_agents_spans_are_the_runs(rec):
    """An ASGI middleware's span is current when the app runs: the run span is its
    child (the traceparent is the middleware's to read); the producer runs in the
    run span, so what the agent traces nests under it."""
    tracer = rec.tracer_provider.get_tracer("test")

    async def agent() -> AsyncIterator[Any]:
        with tracer.start_as_current_span("llm call"):
            await asyncio.sleep(0)
            yield RUN[0]
        yield RUN[-1]

    async def serve() -> None:
        with tracer.start_as_current_span("http server", kind=SpanKind.SERVER):
            d = Driver(accept=SSE_MEDIA_TYPE, headers=[(b"traceparent", TRACEPARENT.encode())])
            await d(EventStreamResponse(agent()))
        assert trace.get_current_span() is trace.INVALID_SPAN  # the context was restored

    asyncio.run(serve())
    [server] = rec.spans("http server")
    [run] = rec.spans()
    [llm] = rec.spans("llm call")
    assert run.kind is SpanKind.INTERNAL
    assert run.parent is not None
    assert server.context is not None
    assert run.parent.span_id == server.context.span_id
    assert llm.parent is not None
    assert run.context is not None
    assert llm.parent.span_id == run.context.span_id


# -- install(): the SDK-compatible encoder -------------------------------------------------


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_the_compatible_encoder_counts_each_event_and_its_bytes(rec, accept: str):
    """SSE comes back as ``str``: its bytes are the UTF-8 the framework writes."""
    wide = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "héllo ☃ 𝄞"}
    events = [*LONG[:-1], wide, LONG[-1]]
    encoder = compat.SDKEventEncoder(accept)
    out = [encoder.encode(e) for e in events]
    wire = b"".join(o.encode() if isinstance(o, str) else o for o in out)
    assert decode(wire, accept) == events
    assert rec.by("agui.server.events", "agui.event.type") == dict(
        collections.Counter(e["type"] for e in events)
    )
    assert rec.values("agui.server.bytes") == {
        frozenset({"agui.transport": TRANSPORT[accept]}.items()): len(wire)
    }


def test_the_compatible_encoder_counts_exactly_from_many_threads(rec):
    """Sync frameworks encode in worker threads: no count is lost between them."""
    encoder = compat.SDKEventEncoder(PROTO_MEDIA_TYPE)
    sizes: list[int] = []

    def work() -> None:
        sizes.append(sum(len(encoder.encode(e)) for e in LONG))

    threads = [threading.Thread(target=work) for _ in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two bytecodes
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert rec.total("agui.server.events") == 8 * len(LONG)
    assert rec.total("agui.server.bytes") == sum(sizes)


def test_past_256_distinct_event_types_the_rest_count_as_other():
    from agui_wire import _observe

    table: dict[Any, Any] = {}
    base = {"agui.transport": "sse"}
    made = [_observe._with_type(table, base, f"T{i}") for i in range(300)]
    assert len({id(m) for m in made}) == 257  # 256 types, then one set for the rest
    assert made[-1]["agui.event.type"] == "_OTHER"
    assert made[255]["agui.event.type"] == "T255"


def test_the_compatible_encoder_is_made_again_when_telemetry_starts_and_stops():
    plain = compat.SDKEventEncoder(SSE_MEDIA_TYPE)
    assert plain.encode is compat._encode_sse  # off: the plain function, nothing added
    assert compat.SDKEventEncoder(SSE_MEDIA_TYPE) is plain
    with recording() as rec:
        counted = compat.SDKEventEncoder(SSE_MEDIA_TYPE)
        assert counted is not plain
        assert compat.SDKEventEncoder(SSE_MEDIA_TYPE) is counted
        counted.encode(RUN[0])
        assert rec.total("agui.server.events") == 1
    again = compat.SDKEventEncoder(SSE_MEDIA_TYPE)
    assert again is not counted
    assert again.encode is compat._encode_sse


# -- off: nothing recorded, nothing paid ---------------------------------------------------


def test_without_an_sdk_nothing_records_and_no_telemetry_code_runs_per_event():
    """The API alone (its proxy providers): ``current()`` is None, and what a
    response calls in opentelemetry and agui_wire's telemetry modules is the same
    for 5 events in one send as for 2,000 in many: a look per response, nothing
    per event or per send."""
    assert _telemetry.API
    assert _telemetry._UNSET_IS_CHEAP  # this API keeps its providers where we look
    assert _telemetry.current() is None

    def profiled(events: list[dict[str, Any]], accept: str) -> collections.Counter[str]:
        calls: collections.Counter[str] = collections.Counter()

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "call":
                module = frame.f_globals.get("__name__", "")
                if module.startswith(("opentelemetry", "agui_wire._observe", "agui_wire._tel")):
                    calls[f"{module}.{frame.f_code.co_name}"] += 1

        async def stream() -> Driver:
            d = driver(accept, "gzip")
            sys.setprofile(profile)
            try:
                await d(EventStreamResponse(paced(events), compress=True, keepalive=0.001))
            finally:
                sys.setprofile(None)
            return d

        d = asyncio.run(stream())
        assert len(received(d, "gzip")) == len(events)
        return calls

    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        few, many = profiled(RUN, accept), profiled(LONG, accept)
        assert few == many
        # one look per response: the API's own state, not its getters (which read
        # the environment while no provider is set)
        assert few == {"agui_wire._observe.observe": 1, "agui_wire._telemetry.current": 1}


def _run_script(*parts: str) -> str:
    r = subprocess.run(
        [sys.executable, "-c", "\n".join(textwrap.dedent(p) for p in parts)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


STREAM = """
    import asyncio
    from agui_wire.asgi import EventStreamResponse
    from agui_wire import compat, decode

    RUN = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]

    def stream(accept):
        sent = []
        async def send(m):
            sent.append(m)
        async def receive():
            await asyncio.sleep(60)
        scope = {"type": "http", "method": "POST", "headers": [(b"accept", accept.encode())]}
        asyncio.run(EventStreamResponse(RUN)(scope, receive, send))
        body = b"".join(m.get("body", b"") for m in sent[1:])
        assert decode(body, accept) == RUN
        return body
"""


def test_without_the_api_package_everything_works_and_nothing_records():
    out = _run_script(
        WITHOUT_API,
        STREAM,
        """
for accept in ("text/event-stream", "application/vnd.ag-ui.event+proto"):
    stream(accept)
    encoder = compat.SDKEventEncoder(accept)
    assert encoder.encode in (compat._encode_sse, compat._encode_proto)
from agui_wire import _telemetry
_telemetry.use(object(), object())  # providers without the API: still nothing
assert _telemetry.current() is None
print(_telemetry.API, "opentelemetry" in sys.modules)
""",
    )
    assert out.split() == ["False", "False"]


def test_the_global_providers_record_once_an_sdk_is_set():
    """The usual set-up: the application sets the global providers (here after
    agui_wire was imported and had served a response: that one is not counted;
    and after the compatible encoder was made: made again)."""
    out = _run_script(
        STREAM,
        """
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

stream("text/event-stream")  # before the SDK: nothing to count it
plain = compat.SDKEventEncoder("text/event-stream")
reader, exporter = InMemoryMetricReader(), InMemorySpanExporter()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(tracer_provider)
# an install()'d framework alone sees it within compat._RECHECK constructions
for _ in range(compat._RECHECK):
    encoder = compat.SDKEventEncoder("text/event-stream")
assert encoder is not plain
sse = encoder.encode(RUN[1])
body = stream("application/vnd.ag-ui.event+proto")
points = {
    m.name: sum(p.value for p in m.data.data_points)
    for r in reader.get_metrics_data().resource_metrics
    for s in r.scope_metrics
    for m in s.metrics
    if m.name in ("agui.server.events", "agui.server.bytes")
}
print(points["agui.server.events"], points["agui.server.bytes"] == len(body) + len(sse))
print(len(exporter.get_finished_spans()))
""",
    )
    assert out.split() == ["4", "True", "1"]


# -- the names: the docs' table is the instruments ----------------------------------------


def test_docs_table_lists_every_instrument_with_its_kind_and_unit():
    from opentelemetry.sdk.metrics import MeterProvider

    kinds = {
        "Counter": "counter",
        "ObservableCounter": "counter",  # a running total the SDK reads when it collects
        "UpDownCounter": "up-down counter",
        "Histogram": "histogram",
    }
    made = _telemetry.Meters(MeterProvider())
    instruments = {i.name: (kinds[type(i).__name__.lstrip("_")], i.unit) for i in made.created}
    text = (ROOT / "docs" / "telemetry.md").read_text()
    rows = re.findall(r"^\| `(agui\.[a-z._]+)` \| ([a-z -]+) \| `([^`]*)` \|", text, re.M)
    documented = {name: (kind, unit) for name, kind, unit in rows}
    assert documented == instruments
