"""Telemetry against real clients over real sockets: the counters equal what the
client received, the documented Prometheus set-up serves them to a scrape, and
the live reading agrees with ``agui-wire cost`` on a capture of the same traffic.

* ``EventStreamResponse`` under uvicorn (in a thread, so the SDK's in-memory
  reader is the test's): both transports, identity and every content coding
  installed, read by httpx as raw bytes (``iter_raw``: still compressed).
* ``install()``: the official SDK's pattern (``ag_ui.encoder.EventEncoder`` and a
  Starlette ``StreamingResponse``, as the frameworks write it) after
  ``agui_wire.install()``.
* A client that closes its socket mid-body: a disconnect, nothing left live.
* docs/telemetry.md's app, served by uvicorn in its own process, scraped over
  HTTP by ``prometheus_client``'s parser; the docs' "bytes per event" query
  computed on the scrape.
* ``agui-wire cost`` on the captured bodies: uncompressed, the same bytes per
  event as the live counters; compressed, the live reading (flushed per send)
  between cost's flushed-per-event figure and its whole-response bound, and
  equal to the first when every event is its own send.
"""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, compat, decode
from agui_wire._compression import available, decompressor
from agui_wire._sample import realistic_run
from agui_wire.asgi import EventStreamResponse
from tests.contract.test_docs import RUN_INPUT, parse
from tests.support.live import read_some_then_close, start_uvicorn, stop, uvicorn_thread
from tests.support.telemetry import Recorded, recording

ROOT = Path(__file__).resolve().parents[2]
TRANSPORT = {SSE_MEDIA_TYPE: "sse", PROTO_MEDIA_TYPE: "protobuf"}
EVENTS = realistic_run(1_000, seed=35)


async def produce(events: list[dict[str, Any]], paced: bool) -> AsyncIterator[Any]:
    for event in events:
        if paced:  # the producer suspends: each event goes out in a send of its own
            await asyncio.sleep(0)
        yield event


async def run(request: Request) -> EventStreamResponse:
    q = request.query_params
    events = EVENTS[: int(q.get("n", len(EVENTS)))]
    if q.get("forever"):
        events = events * 1000
    return EventStreamResponse(
        produce(events, q.get("paced") == "1"),
        request,
        compress=q.get("compress") == "1",
        keepalive=None,
    )


async def sdk(request: Request) -> StreamingResponse:
    """The official SDK's serving pattern, as the frameworks write it."""
    import ag_ui.encoder
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    encoder = ag_ui.encoder.EventEncoder(accept=request.headers.get("accept"))
    adapter = TypeAdapter(Event)

    async def body() -> AsyncIterator[Any]:
        for event in EVENTS:
            yield encoder.encode(adapter.validate_python(event))

    return StreamingResponse(body(), media_type=encoder.get_content_type())


APP = Starlette(routes=[Route("/run", run), Route("/sdk", sdk)])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with uvicorn_thread(APP) as url:
        yield url


@pytest.fixture
def rec() -> Iterator[Recorded]:
    with recording() as recorded:
        yield recorded


def fetch(url: str, accept: str, coding: str | None) -> tuple[httpx.Headers, bytes]:
    """The body exactly as it came off the socket (still compressed)."""
    headers = {"accept": accept, "accept-encoding": coding or "identity"}
    with httpx.Client(timeout=30) as client, client.stream("GET", url, headers=headers) as r:
        assert r.status_code == 200
        return r.headers, b"".join(r.iter_raw())


def events_in(headers: httpx.Headers, raw: bytes) -> list[dict[str, Any]]:
    coding = headers.get("content-encoding")
    body = raw if coding is None else decompressor(coding)(raw)
    return decode(body, headers["content-type"])


def settled(rec: Recorded, name: str, wanted: Any, timeout: float = 5.0) -> None:
    """The server records a stream's end after the client has the last byte."""
    deadline = time.monotonic() + timeout
    while rec.total(name) != wanted and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("paced", [False, True], ids=["burst", "paced"])
@pytest.mark.parametrize("coding", [None, *available()])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_bytes_and_events_equal_what_a_real_client_received(
    server, rec, accept: str, coding: str | None, paced: bool
):
    query = f"?compress={int(coding is not None)}&paced={int(paced)}"
    headers, raw = fetch(server + "/run" + query, accept, coding)
    assert headers.get("content-encoding") == coding
    events = events_in(headers, raw)
    assert events == EVENTS
    settled(rec, "agui.server.stream.duration", 1)
    encoding = None if coding is None else (coding,)
    for attrs in rec.values("agui.server.bytes"):
        assert dict(attrs).get("http.response.header.content-encoding") == encoding
        assert dict(attrs)["agui.transport"] == TRANSPORT[accept]
    assert rec.total("agui.server.bytes") == len(raw)
    assert rec.by("agui.server.events", "agui.event.type") == dict(
        collections.Counter(e["type"] for e in events)
    )
    [span] = rec.spans()
    assert span.attributes is not None
    assert span.attributes["agui.stream.bytes"] == len(raw)
    assert span.attributes["agui.stream.events"] == len(EVENTS)
    assert span.attributes["agui.stream.outcome"] == "finished"
    assert rec.total("agui.server.streams.active") == 0


@pytest.fixture
def installed() -> Iterator[None]:
    compat.install()
    try:
        yield
    finally:
        compat.uninstall()


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_install_servers_count_what_the_framework_wrote(server, installed, rec, accept: str):
    headers, raw = fetch(server + "/sdk", accept, None)
    assert headers["content-type"].split(";")[0] == accept
    events = events_in(headers, raw)
    assert len(events) == len(EVENTS)
    assert rec.total("agui.server.bytes", {"agui.transport": TRANSPORT[accept]}) == len(raw)
    assert rec.by("agui.server.events", "agui.event.type") == dict(
        collections.Counter(e["type"] for e in EVENTS)
    )


@pytest.mark.parametrize("reset", [False, True], ids=["FIN", "RST"])
def test_a_client_that_leaves_mid_body_is_a_disconnect(server, rec, reset: bool):
    got = read_some_then_close(
        server, "GET /run?forever=1&paced=1", accept=PROTO_MEDIA_TYPE, reset=reset, want=5_000
    )
    assert len(got) > 5_000
    settled(rec, "agui.server.stream.duration", 1)
    assert rec.by("agui.server.stream.duration", "agui.stream.outcome") == {"disconnected": 1}
    assert rec.total("agui.server.streams.active") == 0
    # what the server sent reached the socket; the client read part of it
    assert rec.total("agui.server.bytes") >= body_bytes(got.partition(b"\r\n\r\n")[2])


def body_bytes(chunked: bytes) -> int:
    """The body bytes in the start of a chunked HTTP/1.1 body (framing left out)."""
    n = i = 0
    while (j := chunked.find(b"\r\n", i)) >= 0:
        size = int(chunked[i:j], 16)
        n += min(size, len(chunked) - j - 2)
        i = j + 2 + size + 2
    return n


# -- Prometheus: the documented set-up, scraped ---------------------------------------------


def documented_app() -> str:
    [block] = [
        b
        for b in parse(ROOT / "docs" / "telemetry.md")
        if b.language == "python"
        and "PrometheusMetricReader" in b.body
        and "RunStore" not in b.body  # (the run store's app: test_store_telemetry_live.py)
    ]
    return block.body


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = httpx.get(url + "/metrics", follow_redirects=True, timeout=10).text
    return {
        sample.name: [
            *(
                (dict(s.labels), s.value)
                for family in text_string_to_metric_families(text)
                for s in family.samples
                if s.name == sample.name
            )
        ]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_prometheus_serves_the_counters_and_the_docs_queries_read_them(tmp_path):
    (tmp_path / "telemetry_app.py").write_text(documented_app())
    url, process = start_uvicorn(
        "telemetry_app:app", cwd=tmp_path, env={"PATH": ""}, log=tmp_path / "app.log"
    )
    received: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    try:
        with httpx.Client(timeout=30) as client:
            for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
                for coding in ("identity", "gzip"):
                    for _ in range(3):
                        with client.stream(
                            "POST",
                            url + "/agent",
                            json=RUN_INPUT,
                            headers={"accept": accept, "accept-encoding": coding},
                        ) as r:
                            raw = b"".join(r.iter_raw())
                        events = events_in(r.headers, raw)
                        assert events[-1]["type"] == "RUN_FINISHED"
                        key = (TRANSPORT[accept], "" if coding == "identity" else '["gzip"]')
                        received[key][0] += len(raw)
                        received[key][1] += len(events)
        deadline = time.monotonic() + 10
        while True:  # the last stream's end is recorded after its last byte went out
            samples = scrape(url)
            finished = sum(v for _, v in samples["agui_server_stream_duration_seconds_count"])
            if finished == 12 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        stop(process)
    assert finished == 12
    # the docs' query: bytes per event by transport and encoding (one point in time)
    totals: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for i, name in enumerate(("agui_server_bytes_total", "agui_server_events_total")):
        for labels, value in samples[name]:
            key = (labels["agui_transport"], labels["http_response_header_content_encoding"])
            totals[key][i] += value
    assert {k: [int(b), int(e)] for k, (b, e) in totals.items()} == dict(received)
    assert all(v == 0 for _, v in samples["agui_server_streams_active"])
    assert {labels["agui_event_type"] for labels, _ in samples["agui_server_events_total"]} == {
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    }


# -- the same traffic through agui-wire cost --------------------------------------------------


def cost(capture: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "agui_wire", "cost", str(capture), "--json", "--repeats", "1"],
        capture_output=True,
        check=True,
        timeout=300,
    )
    report = json.loads(out.stdout)
    return {t["key"]: t["bytes"] for t in report["transports"]} | {
        f"{k}+whole gzip": v for k, v in report["whole_gzip"].items()
    }


def test_the_live_reading_and_agui_wire_cost_agree_on_the_same_traffic(server, tmp_path):
    """Uncompressed, ``cost`` and the live counters give the same bytes per event
    (the same encoders); with gzip, ``cost`` flushes per event and the server per
    send: a paced stream (a send per event) gives cost's figure exactly, a burst
    less, but never less than the whole-response bound."""
    live: dict[str, float] = {}
    for accept, key in ((SSE_MEDIA_TYPE, "sse"), (PROTO_MEDIA_TYPE, "proto")):
        for coding, paced in ((None, False), ("gzip", True), ("gzip", False)):
            with recording() as rec:
                query = f"?compress={int(coding is not None)}&paced={int(paced)}"
                _, raw = fetch(server + "/run" + query, accept, coding)
                settled(rec, "agui.server.stream.duration", 1)
                per_event = rec.total("agui.server.bytes") / rec.total("agui.server.events")
            assert rec.total("agui.server.bytes") == len(raw)
            live[f"{key}{'+gzip' if coding else ''}{' paced' if paced else ''}"] = per_event
            if coding is None:
                (tmp_path / f"capture.{key}").write_bytes(raw)
    n = len(EVENTS)
    for key in ("sse", "proto"):
        figures = cost(tmp_path / f"capture.{key}")
        assert live[key] == figures[key] / n
        assert live[f"{key}+gzip paced"] == figures[f"{key}+gzip"] / n
        assert figures[f"{key}+whole gzip"] / n <= live[f"{key}+gzip"] < live[f"{key}+gzip paced"]
