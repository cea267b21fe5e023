"""The run store's telemetry on live traffic: docs/telemetry.md's run-store app,
two uvicorn replicas of it on one real redis-server, scraped over HTTP
(``prometheus_client``'s parser) while a run is live and after it, and the docs'
queries computed on the scrapes as Prometheus would.

A run is started on replica A (its producer) and read on both: through A's
response and through B's (B's ``start`` finds the run in progress and reads it
from Redis). While it streams, "live runs per replica" is 1 on A and 0 on B,
each replica has a reader, a blocking read and its command and page lanes;
after it, every gauge is back to 0, A's appends add up to the run's events (the
"events per append" query), and both replicas recorded a delivery lag for the
batches their reader delivered: B's measures across replicas (A's stamp, B's
clock), and the docs' p99 query reads it.
"""

from __future__ import annotations

import collections
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_wire.redis._settings import COMMAND_LANES, PAGE_LANES
from tests.contract.test_docs import RUN_INPUT, parse
from tests.e2e.test_telemetry_live import scrape
from tests.redis.harness import RedisServer
from tests.support.live import start_uvicorn, stop

ROOT = Path(__file__).resolve().parents[2]
TOKENS = 150  # 10 ms apart: a run of 1.5 s
EVENTS = TOKENS + 4


def documented_store_app(redis_url: str) -> str:
    [block] = [
        b
        for b in parse(ROOT / "docs" / "telemetry.md")
        if b.language == "python" and "RunStore" in b.body and "PrometheusMetricReader" in b.body
    ]
    assert "redis://localhost:6379" in block.body
    return block.body.replace("redis://localhost:6379", redis_url)


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus's ``histogram_quantile`` over cumulative ``(le, count)`` buckets."""
    buckets = sorted(buckets)
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / (count - below)
        lower, below = le, count
    raise AssertionError("unreachable")


def one(samples: dict[str, list[tuple[dict[str, str], float]]], name: str) -> float:
    return sum(value for _, value in samples.get(name, []))


def read_run(url: str, into: dict[str, Any]) -> None:
    body = {**RUN_INPUT, "runId": into["run_id"], "forwardedProps": {"tokens": TOKENS}}
    events = 0
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST", url + "/agent", json=body, headers={"accept": "text/event-stream"}
        ) as r,
    ):
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data:"):
                events += 1
                into.setdefault("first", time.monotonic())
    into["events"] = events


@pytest.mark.slow
def test_live_runs_per_replica_and_the_p99_lag_from_scrapes(tmp_path):
    (tmp_path / "redis-dir").mkdir()
    server = RedisServer(tmp_path / "redis-dir").start()
    processes = []
    try:
        (tmp_path / "store_app.py").write_text(documented_store_app(server.url))
        urls = []
        for name in ("a", "b"):
            url, process = start_uvicorn(
                "store_app:app",
                cwd=tmp_path,
                env={"PATH": ""},
                log=tmp_path / f"{name}.log",
                ready_path="/metrics/",
            )
            urls.append(url)
            processes.append(process)
        a, b = urls
        on_a: dict[str, Any] = {"run_id": "telemetry-run"}
        on_b: dict[str, Any] = {"run_id": "telemetry-run"}
        reading_a = threading.Thread(target=read_run, args=(a, on_a))
        reading_a.start()
        deadline = time.monotonic() + 20
        while "first" not in on_a:  # A produces and streams the run
            assert time.monotonic() < deadline
            time.sleep(0.01)
        reading_b = threading.Thread(target=read_run, args=(b, on_b))
        reading_b.start()
        while "first" not in on_b:  # B streams it from Redis
            assert time.monotonic() < deadline
            time.sleep(0.01)
        live = {url: scrape(url) for url in urls}
        reading_a.join(30)
        reading_b.join(30)
        assert on_a["events"] == on_b["events"] == EVENTS
        deadline = time.monotonic() + 10
        while True:  # gauges settle once each response's end is recorded
            after = {url: scrape(url) for url in urls}
            settled = all(
                one(after[url], "agui_store_readers") == 0
                and one(after[url], "agui_store_runs_active") == 0
                for url in urls
            )
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        for process in processes:
            stop(process)
        server.stop()

    # live runs per replica: sum by (instance) (agui_store_runs_active)
    assert {url: one(live[url], "agui_store_runs_active") for url in urls} == {a: 1, b: 0}
    assert {url: one(live[url], "agui_store_readers") for url in urls} == {a: 1, b: 1}
    # each replica's command and page lanes (one Redis), and a blocking read on B; A's
    # reader follows the producer there and opens on what it knows (redis/_local): no
    # blocking read, and page lanes only if the producer stored events before it opened
    lanes = {
        url: {labels["agui_store_lane"]: value for labels, value in live[url]["agui_store_lanes"]}
        for url in urls
    }
    kinds = {"command": COMMAND_LANES, "page": PAGE_LANES}
    assert lanes[b] == {"read": 1, **kinds}
    assert lanes[a] in ({"command": COMMAND_LANES}, kinds)
    for url in urls:
        assert one(after[url], "agui_store_runs_active") == 0
        assert one(after[url], "agui_store_readers") == 0
        assert one(after[url], "agui_server_events_total") == EVENTS
        assert "agui_store_faults_total" not in after[url]
    # events per append: A produced the run, one append per paced event or a few
    appends = one(after[a], "agui_store_appends_total")
    assert one(after[a], "agui_store_append_size_count") == appends
    assert one(after[a], "agui_store_append_size_sum") == EVENTS
    assert EVENTS / 3 <= appends <= EVENTS
    print(f"replica a: {appends:.0f} appends of {EVENTS} events")
    assert "agui_store_appends_total" not in after[b]  # B produced nothing
    # the p99 lag, per replica and over both, from the cumulative buckets
    merged: dict[float, float] = collections.defaultdict(float)
    for url in urls:
        samples = after[url]
        count = one(samples, "agui_store_delivery_lag_seconds_count")
        # a record per batch its reader delivered live (a few events each at most)
        assert EVENTS / 4 <= count <= EVENTS, (url, count)
        buckets = [
            (float(labels["le"]), value)
            for labels, value in samples["agui_store_delivery_lag_seconds_bucket"]
        ]
        for le, value in buckets:
            merged[le] += value
        p99 = histogram_quantile(0.99, buckets)
        print(f"replica {'ab'[urls.index(url)]}: {count:.0f} lag records, p99 {p99 * 1000:.1f} ms")
        assert 0 <= p99 <= 1.0, (url, p99)  # loopback, one run: milliseconds
        assert one(samples, "agui_store_delivery_lag_seconds_sum") <= count * 1.0
    assert 0 <= histogram_quantile(0.99, list(merged.items())) <= 1.0
