"""The self-contained HTML cost report (``agui-wire cost --html``).

Strategy: one HTML string, CSS inline in a ``<style>`` block and every chart an
inline SVG drawn here from the ``CostReport`` numbers: no scripts, fonts,
images or other external assets, so the file can be mailed, attached to an
issue or opened offline. Sections: the verdict, one tile per transport, bytes on
the wire (with the whole-response gzip lower bound marked), where the bytes go
by event type (stacked), CPU per event (encode/decode), the per-type table with
every event left out (where, which type, why), and how it was measured. Every
figure the terminal table shows is in the page as text (so it can be searched
and tested), formatted the same way.
"""

from __future__ import annotations

from html import escape
from typing import Final

from ._costmodel import CostReport, TransportCost

__all__ = ["render_html"]

COLORS: Final = {
    "sse": "#e0782d",
    "proto": "#2f6fdb",
    "sse+gzip": "#f2b27f",
    "proto+gzip": "#8db4f2",
    "sse+br": "#f5c9a3",
    "proto+br": "#b3cdf5",
    "sse+zstd": "#c98a55",
    "proto+zstd": "#5f8fd6",
}
TYPE_COLORS: Final = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#9c755f",
)
OTHER_COLOR: Final = "#bab0ac"
VERDICT_COLORS: Final = {
    "yes": "#2e9d57",
    "somewhat": "#d9a400",
    "only-uncompressed": "#d9822b",
    "no": "#8a8f98",
    "too-few": "#8a8f98",
}

CSS: Final = """
:root { --ink:#1d2430; --muted:#5d6878; --line:#e4e8ee; --bg:#f6f8fb; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 32px 24px 64px; }
h1 { font-size: 28px; margin: 0 0 4px; letter-spacing: -0.01em; }
h2 { font-size: 18px; margin: 36px 0 12px; }
.sub { color: var(--muted); margin: 0; }
.card { background:#fff; border:1px solid var(--line); border-radius:12px; padding:20px 24px;
  box-shadow: 0 1px 2px rgba(20,30,50,.04); }
.verdict { border-left: 6px solid var(--accent); margin-top: 24px; }
.verdict .headline { font-size: 21px; font-weight: 650; margin: 0 0 10px; }
.verdict ul { margin: 0; padding-left: 20px; color: #303a48; }
.verdict li { margin: 4px 0; }
.tiles { display:grid; grid-template-columns: repeat(4, 1fr); gap: 12px; margin-top: 20px; }
.tile { background:#fff; border:1px solid var(--line); border-radius:12px; padding:14px 16px;
  border-top: 5px solid var(--c); }
.tile .name { font-weight: 600; }
.tile .big { font-size: 24px; font-weight: 700; margin: 2px 0; font-variant-numeric: tabular-nums; }
.tile .small { color: var(--muted); font-size: 13px; font-variant-numeric: tabular-nums; }
svg { display:block; width:100%; height:auto; }
svg text { font: 13px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; fill: var(--ink); }
svg .muted { fill: var(--muted); }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums;
  font-size: 14px; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { color: var(--muted); font-weight: 600; }
td .bar { display:inline-block; height:8px; border-radius:2px; margin-left:6px;
  vertical-align: middle; opacity:.85; }
.legend { display:flex; flex-wrap:wrap; gap: 6px 16px; margin-top: 10px; color: var(--muted);
  font-size: 13px; }
.legend span::before { content:""; display:inline-block; width:10px; height:10px;
  border-radius:2px; margin-right:6px; background: var(--c); vertical-align: -1px; }
.notes { color: var(--muted); font-size: 13px; }
code { font-size: 13px; background:#eef1f5; padding: 1px 4px; border-radius: 4px; }
@media (max-width: 760px) { .tiles { grid-template-columns: repeat(2, 1fr); } }
"""


def _num(n: float) -> str:
    return f"{n:,.0f}"


def _svg(width: int, height: int, body: str, label: str) -> str:
    return (
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" '
        f'xmlns="http://www.w3.org/2000/svg">{body}</svg>'
    )


def _send_note(report: CostReport) -> str:
    if not report.send_us:
        return ""
    s, p = report.send_us["sse"], report.send_us["proto"]
    return (
        '<p class="notes">Writing to a loopback TCP socket (server CPU per event): one send per '
        f"event {s['per_event']:.2f} µs (SSE) / {p['per_event']:.2f} µs (protobuf); coalesced "
        f"into writes of up to 32 KiB {s['coalesced']:.2f} / {p['coalesced']:.2f} µs. An ASGI "
        "server adds its own cost to every send (several µs).</p>"
    )


def _left_out_note(report: CostReport) -> str:
    """Every event left out of the figures: where, which type, why (as the terminal lists)."""
    if not report.left_out:
        return ""
    rows = "".join(
        f"<tr><td>{escape(str(s['input']))}</td><td>{s['index']}</td><td>{s['offset']}</td>"
        f"<td>{escape(str(s['type'] or ''))}</td><td>{escape(s['path'])}</td>"
        f"<td>{escape(s['reason'])}</td></tr>"
        for s in report.left_out
    )
    share = ""
    if report.input_bytes:
        share = f" ({report.left_out_bytes / report.input_bytes:.0%} of the input's bytes)"
    return (
        f"<p class='notes'>{report.skipped} event(s) were left out of every figure{share}:</p>"
        "<table><thead><tr><th>input</th><th>index</th><th>byte</th><th>type</th><th>at</th>"
        f"<th>reason</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _missing_note(report: CostReport) -> str:
    if not report.missing:
        return ""
    names = ", ".join(
        {"br": "Brotli (brotli)", "zstd": "zstd (zstandard)"}[c] for c in report.missing
    )
    return f" ({escape(names)} not installed here, so not measured)"


def _bytes_chart(report: CostReport) -> str:
    width, left, right, row = 980, 150, 200, 46
    scale_max = max(t.bytes for t in report.transports)
    plot = width - left - right
    sse = report.transport("sse").bytes
    parts = []
    for i, t in enumerate(report.transports):
        y = 10 + i * row
        w = max(plot * t.bytes / scale_max, 1)
        parts.append(
            f'<text x="{left - 12}" y="{y + 21}" text-anchor="end">{escape(t.label)}</text>'
            f'<rect x="{left}" y="{y + 4}" width="{w:.1f}" height="26" rx="4" '
            f'fill="{COLORS[t.key]}"/>'
            f'<text x="{left + w + 8:.1f}" y="{y + 21}">{_num(t.bytes)} B '
            f'<tspan class="muted">({t.bytes / sse:.0%} of SSE)</tspan></text>'
        )
        whole = report.whole_gzip.get(t.key.split("+")[0]) if t.key.endswith("gzip") else None
        if whole:
            wx = left + plot * whole / scale_max
            parts.append(
                f'<line x1="{wx:.1f}" x2="{wx:.1f}" y1="{y}" y2="{y + 34}" stroke="#1d2430" '
                'stroke-width="2" stroke-dasharray="3 3"/>'
            )
    height = 20 + len(report.transports) * row
    parts.append(
        f'<text x="{left}" y="{height}" class="muted">dashed line: the same stream gzipped '
        "whole (buffered, not streamed) — the lower bound</text>"
    )
    return _svg(width, height + 8, "".join(parts), "bytes on the wire per transport")


def _type_order(report: CostReport, limit: int = 7) -> list[str]:
    sse = report.transport("sse").by_type
    ranked = sorted(sse, key=lambda k: -sse[k])
    return ranked[:limit]


def _stacked_chart(report: CostReport, types: list[str]) -> str:
    """Each transport's bytes split by event type, every bar 100% (the composition;
    the absolute sizes are the chart above)."""
    width, left, right, row = 980, 150, 110, 44
    plot = width - left - right
    parts = []
    for i, t in enumerate(report.transports):
        y = 8 + i * row
        x = float(left)
        parts.append(
            f'<text x="{left - 12}" y="{y + 21}" text-anchor="end">{escape(t.label)}</text>'
        )
        segments = [
            (k, t.by_type.get(k, 0), TYPE_COLORS[j % len(TYPE_COLORS)]) for j, k in enumerate(types)
        ]
        other = t.bytes - sum(v for _, v, _ in segments)
        segments.append(("other", other, OTHER_COLOR))
        for name, value, color in segments:
            if value <= 0:
                continue
            share = value / t.bytes
            w = plot * share
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="26" fill="{color}">'
                f"<title>{escape(name)}: {_num(value)} B ({share:.0%} of {escape(t.label)})</title>"
                "</rect>"
            )
            if w > 40:
                parts.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + 21}" text-anchor="middle" '
                    f'style="fill:#fff;font-size:12px">{share:.0%}</text>'
                )
            x += w
        parts.append(f'<text x="{x + 8:.1f}" y="{y + 21}">{_num(t.bytes)} B</text>')
    height = 12 + len(report.transports) * row
    legend = (
        "".join(
            f'<span style="--c:{TYPE_COLORS[j % len(TYPE_COLORS)]}">{escape(k)}</span>'
            for j, k in enumerate(types)
        )
        + f'<span style="--c:{OTHER_COLOR}">other</span>'
    )
    return _svg(width, height, "".join(parts), "bytes by event type") + (
        f'<div class="legend">{legend}</div>'
    )


def _cpu_chart(report: CostReport) -> str:
    width, left, right, group = 980, 150, 150, 64
    plot = width - left - right
    top = max(max(t.encode_us, t.decode_us) for t in report.transports) or 1.0
    parts = []
    for i, t in enumerate(report.transports):
        y = 8 + i * group
        parts.append(
            f'<text x="{left - 12}" y="{y + 30}" text-anchor="end">{escape(t.label)}</text>'
        )
        for j, (what, value) in enumerate((("encode", t.encode_us), ("decode", t.decode_us))):
            yy = y + 4 + j * 24
            w = max(plot * value / top, 1)
            opacity = "1" if what == "encode" else "0.55"
            parts.append(
                f'<rect x="{left}" y="{yy}" width="{w:.1f}" height="20" rx="3" '
                f'fill="{COLORS[t.key]}" fill-opacity="{opacity}"/>'
                f'<text x="{left + w + 8:.1f}" y="{yy + 15}">{what} {value:.2f} µs</text>'
            )
    height = 12 + len(report.transports) * group
    return _svg(width, height, "".join(parts), "CPU per event")


def _tile(t: TransportCost, report: CostReport) -> str:
    sse = report.transport("sse").bytes
    return (
        f'<div class="tile" style="--c:{COLORS[t.key]}"><div class="name">{escape(t.label)}</div>'
        f'<div class="big">{_num(t.bytes)} B</div>'
        f'<div class="small">{t.bytes / report.events:.1f} B per event · {t.bytes / sse:.0%} of SSE'
        f"<br>encode {t.encode_us:.2f} µs · decode {t.decode_us:.2f} µs per event</div></div>"
    )


def _type_table(report: CostReport) -> str:
    head = "".join(f"<th>{escape(t.label)}</th>" for t in report.transports)
    peak = max(
        (t.by_type.get(k, 0) / c for t in report.transports for k, c in report.counts.items()),
        default=1.0,
    )
    rows = []
    for etype, count in report.counts.items():
        cells = []
        for t in report.transports:
            mean = t.by_type.get(etype, 0) / count
            bar = 60 * mean / peak if peak else 0
            cells.append(
                f'<td>{mean:.1f}<span class="bar" style="width:{bar:.0f}px;'
                f'background:{COLORS[t.key]}"></span></td>'
            )
        rows.append(
            f"<tr><td><code>{escape(etype)}</code></td><td>{count:,}</td>{''.join(cells)}</tr>"
        )
    totals = "".join(f"<td><b>{_num(t.bytes)}</b></td>" for t in report.transports)
    rows.append(f"<tr><td><b>total bytes</b></td><td><b>{report.events:,}</b></td>{totals}</tr>")
    return (
        f"<table><thead><tr><th>event type</th><th>count</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="notes">Mean bytes per event of each type; the last row is the total.</p>'
    )


def render_html(report: CostReport) -> str:
    """The report page (see the module doc)."""
    v = report.verdict
    accent = VERDICT_COLORS.get(v.get("worth_it", "no"), "#8a8f98")
    m = report.machine
    impl = ", ".join(f"{k}: {val}" for k, val in sorted(report.implementation.items()))
    reasons = "".join(f"<li>{escape(r)}</li>" for r in v.get("reasons", []))
    tiles = "".join(_tile(t, report) for t in report.transports)
    types = _type_order(report)
    skipped = _left_out_note(report)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>AG-UI transport cost — agui-wire</title>
<style>{CSS}</style></head>
<body><main>
<h1>AG-UI transport cost</h1>
<p class="sub">{escape(report.source)} · {report.counted()} · measured {escape(m["date"])}</p>

<section class="card verdict" style="--accent:{accent}">
<p class="headline">{escape(v.get("headline", ""))}</p>
<ul>{reasons}</ul>
</section>

<div class="tiles">{tiles}</div>

<h2>Bytes on the wire</h2>
<div class="card">{_bytes_chart(report)}</div>

<h2>Where the bytes go: share of each event type</h2>
<div class="card">{_stacked_chart(report, types)}</div>

<h2>CPU per event on this machine</h2>
<div class="card">{_cpu_chart(report)}
<p class="notes">Median of {report.repeats} passes over the whole run, the measurements
interleaved; encode includes compression and decode includes decompression for the compressed
transports. Lighter bars: decode.</p>{_send_note(report)}</div>

<h2>Bytes per event, by type</h2>
<div class="card">{_type_table(report)}{skipped}</div>

<h2>How this was measured</h2>
<div class="card notes">
<p>Each event is encoded as a server writes it: SSE as <code>data: &lt;json&gt;\\n\\n</code>
(text/event-stream), protobuf as a 4-byte big-endian length and one <code>ag_ui.Event</code>
(application/vnd.ag-ui.event+proto). {report.levels()}, each flushed after every event,
which a streaming server must do for the client to see each event when it is
sent{_missing_note(report)};
gzipping the whole response at once (the dashed lines) gives SSE
{report.whole_gzip["sse"]:,} and protobuf {report.whole_gzip["proto"]:,} bytes. Decoding reads
the chunks the server wrote, in order, with <code>agui_wire.EventDecoder</code>.</p>
<p>Machine: {escape(m["cpu"])} ({escape(m["cpus"])} CPUs), {escape(m["python"])},
{escape(m["platform"])}. agui_wire codec: {escape(impl)}.</p>
</div>
</main></body></html>
"""
