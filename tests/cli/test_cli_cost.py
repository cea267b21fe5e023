"""``agui-wire cost``: the table, the JSON, the HTML report, and the progress bar."""

from __future__ import annotations

import io
import re
import time

import orjson
import pytest

from agui_wire._cli._costmodel import TRANSPORTS
from agui_wire._cli._progress import Progress
from agui_wire._cli.cost import table
from agui_wire._cli.cost_measure import measure
from agui_wire._cli.report import render_html
from agui_wire._compression import available
from agui_wire._sample import realistic_run

LABELS = tuple(label for _, label in TRANSPORTS)


def test_default_cost_is_fast_and_complete(cli) -> None:
    start = time.monotonic()
    r = cli("cost")
    elapsed = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    # The README's first command: a few seconds, even on a loaded CI machine.
    assert elapsed < 20, elapsed
    out = r.stdout.decode()
    assert "realistic agent run (seed 0; agui_wire._sample.realistic_run)\n2,000 events;" in out
    for label in LABELS:
        assert re.search(rf"^{re.escape(label)}\s+[\d,]+\s+[\d.]+ B", out, re.M), label
    assert "TEXT_MESSAGE_CONTENT" in out
    assert "verdict: " in out


def test_json_and_html_report(cli, tmp_path) -> None:
    html_path = tmp_path / "report.html"
    r = cli("cost", "--events", 400, "--repeats", 2, "--json", "--html", html_path)
    assert r.returncode == 0, r.stderr
    data = orjson.loads(r.stdout)
    assert data["events"] == 400
    transports = {t["key"]: t for t in data["transports"]}
    assert list(transports)[:4] == ["sse", "proto", "sse+gzip", "proto+gzip"]
    # Brotli and zstd beside gzip when installed (the test extra installs both)
    assert {k.partition("+")[2] for k in transports} - {""} == set(available())
    assert set(data["send_us"]) == {"sse", "proto"}
    for cost in data["send_us"].values():
        assert cost["per_event"] > cost["coalesced"] > 0
    for t in transports.values():
        assert t["bytes"] > 0
        assert t["encode_us"] > 0
        assert t["decode_us"] > 0
        assert sum(t["by_type"].values()) == t["bytes"]
        assert len(t["encode_runs_us"]) == 2
    assert sum(data["counts"].values()) == 400
    assert data["verdict"]["headline"]
    assert data["verdict"]["reasons"]
    assert data["verdict"]["worth_it"] in ("yes", "somewhat", "only-uncompressed", "no")

    html = html_path.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>")
    # the figures of every transport are in the page, as the table prints them
    for t in transports.values():
        assert t["label"] in html
        assert f"{t['bytes']:,} B" in html
        assert f"{t['encode_us']:.2f} µs" in html
        assert f"{t['decode_us']:.2f} µs" in html
    assert html.count("<svg") >= 3
    assert data["verdict"]["headline"].split(":")[0] in html
    # self-contained: no scripts, no external resources
    assert "<script" not in html
    assert not re.search(r"""(src|href)\s*=""", html)
    assert "url(" not in html
    assert "@import" not in html
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html)


def test_cost_of_captures(cli, captures) -> None:
    r = cli("cost", captures["proto"], captures["sse"], "--repeats", 1, "--json")
    assert r.returncode == 0, r.stderr
    data = orjson.loads(r.stdout)
    assert data["events"] == 240
    assert "2 captures" in data["source"]


def test_measure_figures_add_up() -> None:
    events = realistic_run(300, 1)
    report = measure(events, repeats=1)
    sse = report.transport("sse")
    proto = report.transport("proto")
    from agui_wire import encode_proto, encode_sse

    assert sse.bytes == sum(len(encode_sse(e)) for e in events)
    assert proto.bytes == sum(len(encode_proto(e)) for e in events)
    assert report.transport("sse+gzip").bytes < sse.bytes
    for coding in available():  # (measure checks that each decodes to every event)
        for base, plain in (("sse", sse), ("proto", proto)):
            assert report.transport(f"{base}+{coding}").bytes < plain.bytes
    text = table(report)
    for t in report.transports:
        assert f"{t.bytes:,}" in text
    assert f"{sse.bytes:,} B" in render_html(report)


# -- progress --------------------------------------------------------------------------------


def test_progress_draws_only_when_enabled_and_after_a_moment() -> None:
    stream = io.StringIO()
    p = Progress("decoding", 1000, enabled=True, stream=stream, delay=0.0, rate=1000)
    p.update(500)
    assert "decoding [" in stream.getvalue()
    assert "50.0%" in stream.getvalue()
    p.close()
    assert stream.getvalue().endswith("\r\x1b[K")

    quiet = io.StringIO()
    p = Progress("decoding", 1000, enabled=False, stream=quiet, delay=0.0)
    p.update(500)
    p.close()
    assert quiet.getvalue() == ""

    later = io.StringIO()
    p = Progress("decoding", None, enabled=True, stream=later, delay=60)
    p.update(10)
    p.close()
    assert later.getvalue() == ""  # quick work never shows a bar


@pytest.mark.parametrize("unit", ["B", "passes"])
def test_progress_line_without_total(unit: str) -> None:
    p = Progress("measuring", None, enabled=False, unit=unit)
    p.update(2048)
    assert p.line().startswith("measuring 2")
