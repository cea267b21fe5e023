"""The self-contained HTML timeline (``agui-wire inspect --timeline --html FILE``).

Strategy: as the cost report (``report``), one HTML string with its CSS inline
(the report's stylesheet plus the timeline's) and no fonts, images or other
files, so the page can be mailed or attached to an issue and opened offline.
Unlike the report it is interactive, so it carries one inline script and the
timeline's data as an inline JSON block (every ``<`` escaped, so no event text
can close the block). The script draws one lane per kind of event (run
lifecycle and errors, messages, tool calls, reasoning, state, other): a row of
marks, one per event, and below it the spans (runs, steps, messages, tool
calls, reasoning), a tool call's argument streaming as a strip along its bar.
Each bar's label is whole: inside the bar where it fits, else beside it; bars
with their labels are packed into rows in pixels at every zoom, so no label is
cut or covers another bar. The axis starts at 0 (or event #0), and a tick label
that would run past the right edge is drawn left of its line. The time axis
zooms with the wheel or the buttons and pans by dragging; hovering a mark shows
its event, hovering a bar its duration (for a tool call: how long its arguments
streamed and its result took), in a tip kept inside the chart (never over the
details below it), and clicking pins either below the chart. Without per-event
times the axis is the event order, and the page says so. The figures of the text
output (time to first token, run durations, tool calls, messages, gaps) are
written into the page as text by Python, so they read and search without the
script.
"""

from __future__ import annotations

from html import escape
from typing import Any, Final

import orjson

from ._timeline import BAD, LANES, TEXT_LIMIT, Timeline, describe_duration
from ._timeline_text import describe_span, render_summary
from .report import CSS

__all__ = ["render_html"]

LANE_COLORS: Final = {
    "run": "#4e5d78",
    "messages": "#2f6fdb",
    "tool calls": "#e0782d",
    "reasoning": "#9b59b6",
    "state": "#2e9d57",
    "other": "#8a8f98",
}
BAD_COLOR: Final = "#d62728"

TIMELINE_CSS: Final = """
.toolbar { display:flex; gap:8px; align-items:center; margin-bottom:10px; color:var(--muted);
  font-size:13px; flex-wrap:wrap; }
.toolbar button { font:inherit; border:1px solid var(--line); background:#fff; border-radius:6px;
  padding:3px 10px; cursor:pointer; color:var(--ink); }
.toolbar button:hover { background:#eef1f5; }
.chart { position:relative; user-select:none; cursor:grab; overflow:hidden; }
.chart.dragging { cursor:grabbing; }
.axis { position:relative; height:22px; margin-left:110px; border-bottom:1px solid var(--line);
  font-size:12px; color:var(--muted); }
.tick { position:absolute; top:0; height:22px; border-left:1px solid var(--line);
  padding-left:3px; white-space:nowrap; }
.tick.end { transform:translateX(-100%); border-left:none; border-right:1px solid var(--line);
  padding:0 3px 0 0; }
.lane { display:flex; border-bottom:1px solid var(--line); }
.lane-name { width:110px; flex:none; padding:6px 8px 6px 0; font-size:13px; font-weight:600;
  color:var(--c); text-align:right; }
.track { position:relative; flex:1; min-height:30px; }
.mark { position:absolute; top:5px; width:3px; height:18px; margin-left:-1px; border-radius:1px;
  background:var(--c); opacity:.85; cursor:pointer; }
.mark:hover, .mark.selected { opacity:1; outline:2px solid var(--ink); z-index:2; }
.span:hover, .span.selected, .span-label:hover { outline:1px solid var(--ink); }
.mark.bad { background:#d62728; width:5px; }
.span { position:absolute; height:16px; border-radius:4px; cursor:pointer;
  background:color-mix(in srgb, var(--c) 30%, #fff); border-left:2px solid var(--c);
  min-width:2px; box-sizing:border-box; }
.span-label { position:absolute; height:16px; font-size:11px; line-height:16px;
  color:#1d2430; white-space:nowrap; padding:0 4px; cursor:pointer; overflow:hidden;
  text-overflow:ellipsis; box-sizing:border-box; }
.span-part { position:absolute; height:4px; margin-top:12px; background:var(--c);
  border-radius:0 0 0 4px; pointer-events:none; }
.span.open { background:repeating-linear-gradient(45deg,
  color-mix(in srgb, var(--c) 30%, #fff) 0 6px, #fff 6px 10px); }
.tip { position:fixed; z-index:5; pointer-events:none; background:#1d2430; color:#fff;
  font-size:12px; padding:6px 8px; border-radius:6px; max-width:460px; white-space:pre-wrap;
  max-height:220px; overflow:hidden; }
.detail { margin-top:12px; font-size:13px; white-space:pre-wrap; color:#303a48;
  font-family: ui-monospace, SFMono-Regular, Menlo, monospace; min-height:1.5em; }
.note { background:#fff7e0; border:1px solid #f0d48a; border-radius:8px; padding:8px 12px;
  margin:12px 0 0; font-size:14px; }
pre.summary { font-size:13px; margin:0; white-space:pre-wrap; }
"""

SCRIPT: Final = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("timeline-data").textContent);
  var timed = data.timed;
  var marks = data.marks, spans = data.spans;
  function pos(t, index) { return timed ? t : index; }
  var lo = Infinity, hi = -Infinity;
  marks.forEach(function (m) {
    var x = pos(m[1], m[0]);
    if (x !== null) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
  });
  if (timed) { lo = Math.min(lo, 0); if (data.end !== null) { hi = Math.max(hi, data.end); } }
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  if (hi <= lo) { hi = lo + (timed ? 0.001 : 1); }
  // the axis starts where the run does (0, or event #0): room on the right only
  var full = [lo, hi + (hi - lo) * 0.02], view = full.slice();
  var GAP = 6, LABEL_GAP = 4, ROW = 19;  // px between packed items, bar to label, row pitch
  var TICK_PX = 70;  // room for one tick's label ("1.500 s", "500.0 ms") and some air
  var chart = document.getElementById("chart");
  var card = chart.parentNode;
  var axis = document.getElementById("axis");
  var tip = document.getElementById("tip");
  var detail = document.getElementById("detail");
  var placed = [];  // marks: [element, at]
  function fmt(x) {
    if (!timed) { return "#" + Math.round(x); }
    var a = Math.abs(x);
    if (a === 0) { return "0"; }
    if (a < 1) { return (x * 1000).toFixed(a < 0.01 ? 2 : 1) + " ms"; }
    return x.toFixed(3) + " s";
  }
  function lanesByName() {
    var out = {};
    data.lanes.forEach(function (name) {
      var lane = document.createElement("div");
      lane.className = "lane";
      lane.style.setProperty("--c", data.colors[name]);
      lane.dataset.lane = name;
      var label = document.createElement("div");
      label.className = "lane-name";
      label.textContent = name;
      var track = document.createElement("div");
      track.className = "track";
      lane.appendChild(label);
      lane.appendChild(track);
      chart.appendChild(lane);
      out[name] = {track: track, bars: []};
    });
    return out;
  }
  var lanes = lanesByName();
  spans.forEach(function (s) {
    var lane = lanes[s.lane];
    var start = timed ? s.start : s.first, end = timed ? s.end : s.last;
    if (start === null) { return; }
    if (end === null) { end = start; }
    var bar = document.createElement("div");
    bar.className = "span" + (s.closed ? "" : " open");
    bar._info = s.detail;
    var label = document.createElement("div");
    label.className = "span-label";
    label.textContent = s.label;
    label._info = s.detail;
    lane.track.appendChild(bar);
    lane.track.appendChild(label);
    var part = null;
    if (timed && s.argsEnd !== null && s.argsEnd > start) {
      // a tool call's first part: its arguments streaming (the rest: waiting for the result)
      part = document.createElement("div");
      part.className = "span-part";
      lane.track.appendChild(part);
    }
    lane.bars.push({bar: bar, label: label, part: part, start: start, end: end,
                    argsEnd: s.argsEnd, width: 0});
  });
  Object.keys(lanes).forEach(function (name) {  // one reflow: every label's own width
    lanes[name].bars.forEach(function (b) { b.width = b.label.offsetWidth; });
  });
  var previous = null;
  marks.forEach(function (m) {
    var x = pos(m[1], m[0]);
    var el = document.createElement("div");
    el.className = "mark" + (m[6] ? " bad" : "");
    el.dataset.index = m[0];
    el.dataset.type = m[2];
    var gap = (timed && previous !== null && m[1] !== null) ? m[1] - previous : null;
    if (m[1] !== null) { previous = m[1]; }
    el._info = "#" + m[0] + "  " + m[2] + (m[1] !== null ? "\nat " + fmt(m[1]) : "") +
      (gap !== null ? "  (+" + fmt(gap) + ")" : "") +
      (m[5] !== null ? "\nbyte " + m[5] : "") + (m[4] ? "\n" + m[4] : "");
    lanes[m[3]].track.appendChild(el);
    placed.push([el, x === null ? 0 : x]);
  });
  // A bar's label goes inside it when it fits, else after it, else before it; bars and
  // labels are packed into rows in pixels, so no label is cut or covers another bar.
  function pack(lane, px, width) {
    var rows = [];
    lane.bars.forEach(function (b) {
      var x0 = px(b.start), x1 = Math.max(px(b.end), x0 + 2), need = b.width;
      var shown = x1 >= 0 && x0 <= width;  // in view: its label is drawn, and packed
      b.label.hidden = !shown;
      var v0 = Math.max(x0, 0), v1 = Math.min(x1, width);  // the part in view
      var left, from, to;
      if (!shown) { left = x0; from = x0; to = x1; }
      else if (need <= v1 - v0) { left = v0; from = x0; to = x1; }  // inside
      else if (x1 + LABEL_GAP + need <= width) {  // after it
        left = x1 + LABEL_GAP; from = x0; to = left + need;
      } else if (x0 - LABEL_GAP - need >= 0) {  // before it
        left = x0 - LABEL_GAP - need; from = left; to = x1;
      }
      else { left = v0; from = x0; to = Math.max(x1, width); }  // wider than the view: cut
      b.label.style.maxWidth = (width - left) + "px";
      var row = 0;
      while (row < rows.length && rows[row] + GAP > from) { row++; }
      rows[row] = to;
      var top = (28 + row * ROW) + "px";
      b.bar.style.left = x0 + "px";
      b.bar.style.width = (x1 - x0) + "px";
      b.bar.style.top = top;
      b.label.style.left = left + "px";
      b.label.style.top = top;
      if (b.part !== null) {
        b.part.style.left = x0 + "px";
        b.part.style.width = Math.max(px(b.argsEnd) - x0, 0) + "px";
        b.part.style.top = top;
      }
    });
    lane.track.style.height = (30 + rows.length * ROW) + "px";
  }
  function layout() {
    var w = view[1] - view[0];
    placed.forEach(function (p) {
      p[0].style.left = ((p[1] - view[0]) / w * 100) + "%";
    });
    Object.keys(lanes).forEach(function (name) {
      var lane = lanes[name], width = lane.track.clientWidth;
      pack(lane, function (t) { return (t - view[0]) / w * width; }, width);
    });
    axis.textContent = "";
    var room = axis.clientWidth;
    var raw = w / Math.max(Math.floor(room / TICK_PX), 2);
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 2.5, 5, 10].map(function (f) { return f * mag; })  // at most 2x raw
      .filter(function (s) { return s >= raw; })[0];
    if (!timed) { step = Math.max(Math.round(step), 1); }  // events have whole numbers
    var last = null;
    for (var t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
      var tick = document.createElement("div");
      tick.className = "tick";
      tick.style.left = ((t - view[0]) / w * 100) + "%";
      tick.textContent = fmt(Math.abs(t) < step / 1e6 ? 0 : t);
      axis.appendChild(tick);
      if (tick.offsetLeft + tick.offsetWidth > room) {  // its label left of its line
        tick.classList.add("end");
        if (last !== null && tick.offsetLeft - tick.offsetWidth < last + GAP) {
          axis.removeChild(tick);  // no room beside the one before: the edge goes bare
          break;
        }
      }
      last = tick.offsetLeft + tick.offsetWidth;
    }
    document.getElementById("range").textContent = fmt(view[0]) + " \u2013 " + fmt(view[1]);
  }
  function zoom(factor, at) {
    var w = view[1] - view[0];
    var nw = Math.min(Math.max(w * factor, (full[1] - full[0]) / 1e5), full[1] - full[0]);
    var a = at - (at - view[0]) * nw / w;
    a = Math.max(full[0], Math.min(a, full[1] - nw));
    view = [a, a + nw];
    layout();
  }
  function xOf(clientX) {
    var r = axis.getBoundingClientRect();
    return view[0] + (clientX - r.left) / r.width * (view[1] - view[0]);
  }
  chart.addEventListener("wheel", function (e) {
    e.preventDefault();
    zoom(e.deltaY > 0 ? 1.25 : 0.8, xOf(e.clientX));
  }, {passive: false});
  var drag = null;
  chart.addEventListener("mousedown", function (e) {
    drag = {x: e.clientX, view: view.slice()};
    chart.classList.add("dragging");
  });
  window.addEventListener("mouseup", function () {
    drag = null;
    chart.classList.remove("dragging");
  });
  window.addEventListener("mousemove", function (e) {
    if (!drag) { return; }
    var r = axis.getBoundingClientRect();
    var dx = (e.clientX - drag.x) / r.width * (drag.view[1] - drag.view[0]);
    var w = drag.view[1] - drag.view[0];
    var a = Math.max(full[0], Math.min(drag.view[0] - dx, full[1] - w));
    view = [a, a + w];
    layout();
  });
  window.addEventListener("resize", layout);
  // The tip stays beside the pointer, flipped left of it where it would run past the card's
  // right edge, and above it where it would reach down over the details below the chart.
  // Fixed, in viewport pixels: it never lengthens the page (a scrollbar appearing would move
  // the chart under the pointer).
  function placeTip(e) {
    var right = card.getBoundingClientRect().right, bottom = chart.getBoundingClientRect().bottom;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = e.clientX + 14 + w <= right ? e.clientX + 14 : Math.max(e.clientX - 14 - w, 0);
    var y = e.clientY + 14 + h <= bottom ? e.clientY + 14 : Math.min(e.clientY - 14, bottom) - h;
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  chart.addEventListener("mouseover", function (e) {
    if (!e.target._info) { return; }
    tip.textContent = e.target._info;
    tip.hidden = false;
    placeTip(e);
  });
  chart.addEventListener("mousemove", function (e) { if (!tip.hidden) { placeTip(e); } });
  chart.addEventListener("mouseout", function () { tip.hidden = true; });
  chart.addEventListener("click", function (e) {
    if (!e.target._info) { return; }
    var old = chart.querySelector(".selected");
    if (old) { old.classList.remove("selected"); }
    e.target.classList.add("selected");
    detail.textContent = e.target._info;
    tip.hidden = true;  // what it said is in the details now
  });
  document.getElementById("fit").addEventListener("click", function () {
    view = full.slice(); layout();
  });
  document.getElementById("zoom-in").addEventListener("click", function () {
    zoom(0.5, (view[0] + view[1]) / 2);
  });
  document.getElementById("zoom-out").addEventListener("click", function () {
    zoom(2, (view[0] + view[1]) / 2);
  });
  layout();
  document.body.dataset.drawn = String(marks.length);
})();
"""


def _data(tl: Timeline) -> str:
    marks = [
        [m.index, m.t, m.type, m.lane, m.text[:TEXT_LIMIT], m.offset, m.type == BAD]
        for m in tl.marks
    ]
    spans = [
        {
            "lane": s.lane,
            "label": s.label,
            "start": s.start,
            "end": s.end,
            "first": s.first,
            "last": s.last,
            "closed": s.closed,
            "detail": describe_span(tl, s)[:TEXT_LIMIT],
            "argsEnd": s.args_end,
        }
        for s in tl.spans
    ]
    data: dict[str, Any] = {
        "timed": tl.timed,
        "end": tl.end,
        "lanes": [lane for lane in LANES if any(m.lane == lane for m in tl.marks)],
        "colors": LANE_COLORS,
        "marks": marks,
        "spans": spans,
    }
    # "<" as \u003c: no event text can end the script element or open a comment in it
    return orjson.dumps(data).decode().replace("<", "\\u003c")


def _tiles(tl: Timeline) -> str:
    tiles: list[tuple[str, str, str]] = []
    token = tl.first_token()
    if token is not None:
        tiles.append(("time to first token", describe_duration(token), "first text delta"))
    runs = [s for s in tl.spans if s.kind == "run"]
    if runs and runs[0].duration is not None:
        tiles.append(("run duration", describe_duration(runs[0].duration), runs[0].label))
    tiles.append(("events", f"{tl.events:,}", f"{tl.bytes:,} bytes"))
    tools = [s for s in tl.spans if s.kind == "tool call"]
    tiles.append(("tool calls", f"{len(tools):,}", ", ".join(s.label for s in tools[:3])))
    gaps = tl.gaps(1)
    if gaps:
        g, _, b = gaps[0]
        tiles.append(("longest gap", describe_duration(g), f"before #{b.index} {b.type}"))
    return "".join(
        f'<div class="tile" style="--c:#2f6fdb"><div class="name">{escape(name)}</div>'
        f'<div class="big">{escape(big)}</div><div class="small">{escape(small)}</div></div>'
        for name, big, small in tiles[:4]
    )


def render_html(tl: Timeline) -> str:
    """The timeline page (see the module doc)."""
    events = tl.events
    note = (
        ""
        if tl.timed
        else '<p class="note">No time per event in this capture: the axis is the event order. '
        "Record a run with <code>agui-wire record URL</code> for arrival times.</p>"
    )
    legend = "".join(
        f'<span style="--c:{LANE_COLORS[lane]}">{escape(lane)}</span>' for lane in LANES
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>AG-UI run timeline — agui-wire</title>
<style>{CSS}{TIMELINE_CSS}</style></head>
<body><main>
<h1>AG-UI run timeline</h1>
<p class="sub">{escape(tl.label)} · {events:,} events · {tl.bytes:,} bytes</p>
<p class="sub">times: {escape(tl.clock_note or "none per event")}</p>
{note}
<div class="tiles">{_tiles(tl)}</div>

<h2>Events on a time axis</h2>
<div class="card" style="position:relative">
<div class="toolbar"><button id="fit" type="button">fit</button>
<button id="zoom-in" type="button">zoom in</button>
<button id="zoom-out" type="button">zoom out</button>
<span id="range"></span><span>· wheel: zoom · drag: pan · click a mark: details</span></div>
<div id="chart" class="chart"><div id="axis" class="axis"></div></div>
<div id="tip" class="tip" hidden></div>
<div id="detail" class="detail">Click an event mark to see it here.</div>
<div class="legend">{legend}<span style="--c:{BAD_COLOR}">bad frame</span></div>
</div>

<h2>What took how long</h2>
<div class="card"><pre class="summary">{escape(render_summary(tl))}</pre></div>
<script type="application/json" id="timeline-data">{_data(tl)}</script>
<script>{SCRIPT}</script>
</main></body></html>
"""
