#!/usr/bin/env python
"""Every contender side by side, in one process, on the same events.

    python benchmarks/compare.py [--quick] [--memory] [--markdown] [--json out.json]

Method (benchmarks/README.md has the details):

* Workloads: ``realistic_run(20004, seed=20004)`` (the issue's numbers), its
  TEXT_MESSAGE_CONTENT events alone ("hot"), a ~50 KB STATE_SNAPSHOT, and a
  100 MB protobuf stream cut into 1 MiB reads for the framer. Every contender of
  a section gets the same dicts (encode) or the same bytes (decode).
* Each contender runs once untimed and its output is checked against the
  events; one that raises is reported with how many events it fails on and is
  not timed; one whose output differs is timed and flagged.
* Warm-up, then each contender is calibrated to ``--min-time`` per sample
  (repeating fast calls); then ``--rounds`` rounds, each timing every contender
  once, round-robin with the starting point rotated each round. Reported: the
  median ns/event and the interquartile range. Ratios for the targets are the
  median of per-round ratios (the two contenders ran seconds apart).
* GC: setup objects are frozen (``gc.freeze()``) and ``gc.collect()`` runs before
  every sample; the collector stays on while timing (``--no-gc`` turns it off),
  the same for every contender.
* Node (``@ag-ui/encoder``/``@ag-ui/proto`` 1.0.0) runs in its own process on the
  same events (JSONL), before the Python rounds, timed inside node.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import gc
import gzip
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
INTEROP = ROOT / "tests" / "interop"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import contenders as C  # noqa: E402
import orjson  # noqa: E402
import workloads as W  # noqa: E402

import agui_wire  # noqa: E402
from agui_wire._codec import selected  # noqa: E402

MiB = 1 << 20


# -- cases ---------------------------------------------------------------------------


@dataclass
class Case:
    """One contender on one workload."""

    key: str  # stable id: "<op>.<section>.<n>"
    op: str  # "encode" | "decode" | "framer"
    section: str  # "run" | "hot" | "snapshot" | "stream"
    label: str
    transport: str
    fn: Callable[[], Any]  # the timed call
    events: int  # events per call
    wire_bytes: int  # wire bytes produced or consumed per call
    note: str = ""
    baseline: bool = False  # the orjson row the "x orjson" column divides by
    reps: int = 1
    samples: list[float] = field(default_factory=list)  # ns per event, one per round
    error: str | None = None  # not timed: why

    def stats(self) -> dict[str, float]:
        s = sorted(self.samples)
        if not s:
            return {}
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else (s[0],) * 3
        med = statistics.median(s)
        return {"median": med, "q1": q1, "q3": q3, "min": s[0], "max": s[-1]}

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan


SECTION_TITLES = {
    ("encode", "run"): "encode: realistic run",
    ("encode", "hot"): "encode: hot event (TEXT_MESSAGE_CONTENT, per event)",
    ("encode", "snapshot"): "encode: ~50 KB STATE_SNAPSHOT",
    ("decode", "run"): "decode: captured realistic run",
    ("decode", "hot"): "decode: hot event (TEXT_MESSAGE_CONTENT, per event)",
    ("decode", "snapshot"): "decode: ~50 KB STATE_SNAPSHOT",
    ("framer", "stream"): "framer: FrameReader.feed over 1 MiB chunks",
}


def _count_failures(c: C.Contender, prepared: Any) -> str:
    if c.each is None or c.items is None:
        return ""
    items = c.items(prepared)
    failed, first = 0, ""
    for item in items:
        try:
            c.each(item)
        except Exception as exc:
            failed += 1
            first = first or f"{type(exc).__name__}: {exc}"
    return f"fails on {failed}/{len(items)} events; first: {first}" if failed else ""


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _wire_bytes(c: C.Contender, w: W.Workload, out: Any) -> int:
    """Bytes an encoder produced (its own output) or a decoder read (the workload's)."""
    if c.output == "proto" or c.output == "sse":
        return len(out) if isinstance(out, bytes) else sum(len(C.utf8(x)) for x in out)
    if c.output == "none":
        return 0
    return len(w.proto) if c.transport == "protobuf" else len(w.sse)


def build_cases(n_events: int, framer_bytes: int) -> tuple[list[Case], list[str]]:
    log: list[str] = []
    workloads = {"run": W.run(n_events), "hot": W.hot(n_events), "snapshot": W.snapshot()}
    cases: list[Case] = []
    for op, factory in (("encode", C.encoders), ("decode", C.decoders)):
        for section, w in workloads.items():
            for i, c in enumerate(factory(section)):
                key = f"{op}.{section}.{i}"
                case = Case(key, op, section, c.name, c.transport, lambda: None, w.count, 0, c.note)
                case.baseline = c.name.startswith("orjson")
                cases.append(case)
                try:
                    prepared = c.prepare(w)
                except Exception as exc:
                    case.error = _short(f"prepare failed: {type(exc).__name__}: {exc}")
                    continue
                try:
                    out = c.run(prepared)
                except Exception as exc:
                    case.error = _short(
                        _count_failures(c, prepared) or f"{type(exc).__name__}: {exc}"
                    )
                    continue
                bad = C.differences(c, w, out)
                if bad:
                    case.note = (case.note + "; " if case.note else "") + (
                        f"OUTPUT DIFFERS on {bad}/{w.count} events"
                    )
                case.wire_bytes = _wire_bytes(c, w, out)
                del out
                case.fn = functools.partial(c.run, prepared)
    # the framer: backend (target) and, when the extension is in, the pure twin
    chunks, frames, total = W.framer_stream(framer_bytes)
    readers: list[tuple[str, Any]] = [
        (f"agui_wire FrameReader ({selected.IMPLEMENTATIONS['FrameReader']})", selected.FrameReader)
    ]
    if selected.IMPLEMENTATIONS["FrameReader"] == "cython":
        from agui_wire._codec import framing

        readers.append(("agui_wire FrameReader (pure-Python twin)", framing.FrameReader))
    for i, (label, reader) in enumerate(readers):
        fn = functools.partial(W.frame_all, reader, chunks)
        case = Case(f"framer.stream.{i}", "framer", "stream", label, "protobuf", fn, frames, total)
        case.note = f"{total / 1e6:.0f} MB, {frames} frames"
        got = fn()
        if got != frames:
            case.error = f"split {got} frames, expected {frames}"
        cases.append(case)
    log.append(
        f"workloads: {', '.join(w.name for w in workloads.values())}; framer {total / 1e6:.0f} MB"
    )
    return cases, log


# -- timing --------------------------------------------------------------------------


def _timed(fn: Callable[[], Any], reps: int, gc_on: bool) -> int:
    gc.collect()
    if not gc_on:
        gc.disable()
    try:
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            fn()
        return time.perf_counter_ns() - t0
    finally:
        gc.enable()


def measure(
    cases: list[Case], rounds: int, min_time: float, gc_on: bool, log: Callable[[str], None]
) -> None:
    live = [c for c in cases if c.error is None]
    for c in live:  # warm-up (the check already ran once) and calibration
        c.fn()
        one = _timed(c.fn, 1, gc_on) / 1e9
        c.reps = max(1, math.ceil(min_time / max(one, 1e-9)))
    gc.collect()
    gc.freeze()  # workloads and prepared inputs: never traversed while timing
    try:
        for r in range(rounds):
            start = time.perf_counter()
            k = r % len(live)
            for c in live[k:] + live[:k]:
                c.samples.append(_timed(c.fn, c.reps, gc_on) / c.reps / c.events)
            log(f"round {r + 1}/{rounds}: {time.perf_counter() - start:.1f} s")
    finally:
        gc.unfreeze()


# -- node ----------------------------------------------------------------------------


def run_node(
    n_events: int, rounds: int, min_time: float, log: Callable[[str], None]
) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        return {"error": "node not on PATH"}
    if not (INTEROP / "node_modules" / "@ag-ui" / "encoder").is_dir():
        return {"error": "tests/interop/node_modules missing (npm ci --prefix tests/interop)"}
    wl = {"run": W.run(n_events), "hot": W.hot(n_events), "snapshot": W.snapshot()}
    with tempfile.TemporaryDirectory(prefix="agui-wire-bench-") as tmp:
        argv = [node, "--expose-gc", str(HERE / "node_bench.cjs"), "--rounds", str(rounds)]
        argv += ["--min-time", str(min_time)]
        for name, w in wl.items():
            path = Path(tmp) / f"{name}.jsonl"
            path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in w.events))
            argv.append(f"{name}={path}")
        log("node: timing @ag-ui/encoder and @ag-ui/proto ...")
        env = {**os.environ, "NODE_PATH": str(INTEROP / "node_modules")}
        proc = subprocess.run(argv, capture_output=True, env=env, check=False, timeout=3600)
    if proc.returncode != 0:
        return {"error": _short(proc.stderr.decode("utf-8", "replace"), 400)}
    result: dict[str, Any] = json.loads(proc.stdout)
    for name, w in wl.items():
        entries = result["workloads"][name]["contenders"]
        expect = {
            "protobuf": hashlib.sha256(w.proto).hexdigest(),
            "SSE": hashlib.sha256(w.sse).hexdigest(),
        }
        for label, entry in entries.items():
            entry["median"] = statistics.median(entry["samples"])
            if entry["sha256"] is not None:
                kind = "protobuf" if "protobuf" in label else "SSE"
                entry["identical_to_agui_wire"] = entry["sha256"] == expect[kind]
            if entry["decoded"] is not None and entry["decoded"] != w.count:
                entry["error"] = f"decoded {entry['decoded']} events, expected {w.count}"
    return result


# -- memory --------------------------------------------------------------------------


def run_memory(size_mb: int, directory: str | None, log: Callable[[str], None]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agui-wire-capture-", dir=directory) as tmp:
        path = Path(tmp) / "capture.bin"
        t0 = time.perf_counter()
        facts = W.write_capture(path, size_mb * MiB)
        took = time.perf_counter() - t0
        log(f"memory: wrote {facts['bytes'] / 1e9:.2f} GB in {took:.0f} s; decoding it ...")
        proc = subprocess.run(
            [sys.executable, str(HERE / "memory_probe.py"), str(path), str(facts["events"])],
            capture_output=True,
            check=False,
        )
        path.unlink()
    if proc.returncode != 0:
        return {"error": _short(proc.stderr.decode("utf-8", "replace"), 400), **facts}
    probe = json.loads(proc.stdout)
    budget_kib = 64 * 1024 + math.ceil(facts["largest_frame"] / 1024)
    peak = probe["peak_rss_kib"]
    return {**facts, **probe, "budget_kib": budget_kib, "met": peak <= budget_kib}


# -- report --------------------------------------------------------------------------


def machine_info(args: argparse.Namespace) -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    from google.protobuf.internal import api_implementation

    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    git = "unknown"
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        git = head + (" (uncommitted changes)" if dirty else "")
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cpus": affinity,
        "loadavg_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "agui_wire": f"{agui_wire.__version__} @ {git}",
        "backend": selected.NAME,
        "backend_names": dict(selected.IMPLEMENTATIONS),
        "orjson": version("orjson"),
        "protobuf": f"{version('protobuf')} ({api_implementation.Type()})",
        "pydantic": version("pydantic"),
        "ag-ui-protocol": version("ag-ui-protocol"),
        "gc": "on" if not args.no_gc else "off while timing",
        "rounds": args.rounds,
        "min_time": args.min_time,
        "quick": args.quick,
    }


def sizes(n_events: int) -> list[dict[str, Any]]:
    rows = []
    for w in (W.run(n_events), W.snapshot()):
        sse_len, proto_len = len(w.sse), len(w.proto)
        for transport, data in (("SSE", w.sse), ("protobuf", w.proto)):
            gz = len(gzip.compress(data, compresslevel=6, mtime=0))
            rows.append(
                {
                    "workload": w.name,
                    "transport": transport,
                    "bytes": len(data),
                    "per_event": len(data) / w.count,
                    "gzip6": gz,
                    "gzip6_per_event": gz / w.count,
                    "vs_sse": len(data) / sse_len,
                }
            )
        del proto_len
    return rows


@dataclass
class Target:
    text: str
    measured: str
    met: bool | None  # None: could not be measured
    detail: str = ""


def _paired(num: Case, den: Case) -> tuple[float, float, float]:
    """Median and quartiles of the per-round ratio num/den."""
    ratios = sorted(a / b for a, b in zip(num.samples, den.samples, strict=True))
    if len(ratios) == 1:
        return ratios[0], ratios[0], ratios[0]
    q1, med, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return med, q1, q3


def targets(cases: list[Case], node: dict[str, Any], memory: dict[str, Any] | None) -> list[Target]:
    by = {(c.op, c.section, c.label, c.transport): c for c in cases}

    def get(op: str, section: str, label: str, transport: str = "protobuf") -> Case | None:
        c = by.get((op, section, label, transport))
        return c if c is not None and c.error is None and c.samples else None

    out: list[Target] = []

    def ratio(text: str, num: Case | None, den: Case | None, limit: float, faster: bool) -> None:
        if num is None or den is None:
            out.append(Target(text, "n/a", None, "a contender failed or is missing"))
            return
        med, q1, q3 = _paired(num, den)
        if faster:  # "at least N x faster": den/num
            value, lo, hi = 1 / med, 1 / q3, 1 / q1
            out.append(Target(text, f"{value:.1f}x faster (IQR {lo:.1f}-{hi:.1f})", value >= limit))
        else:
            out.append(Target(text, f"{med:.2f}x the time (IQR {q1:.2f}-{q3:.2f})", med <= limit))

    ours = get("encode", "run", "agui_wire EventEncoder.encode_many")
    orjson_enc = get("encode", "run", C.ORJSON_SSE, "SSE")
    sdk_dicts = get("encode", "run", "official SDK from dicts (model_validate + encode)", "SSE")
    ratio("encode run to framed protobuf <= 0.7x orjson SSE", ours, orjson_enc, 0.7, faster=False)
    ratio(
        "encode run >= 30x faster than the official SDK (dict -> pydantic -> SSE)",
        ours,
        sdk_dicts,
        30,
        faster=True,
    )
    node_enc = (
        node.get("workloads", {})
        .get("run", {})
        .get("contenders", {})
        .get("encodeBinary (protobuf)")
    )
    if ours is None or node_enc is None:
        out.append(
            Target(
                "encode run >= 20x faster than Node @ag-ui/encoder protobuf",
                "n/a",
                None,
                node.get("error", ""),
            )
        )
    else:
        value = node_enc["median"] / ours.median
        out.append(
            Target(
                "encode run >= 20x faster than Node @ag-ui/encoder protobuf",
                f"{value:.1f}x faster (medians, separate processes)",
                value >= 20,
            )
        )
    hot = get("encode", "hot", "agui_wire EventEncoder.encode")
    if hot is None:
        out.append(Target("hot TEXT_MESSAGE_CONTENT encode <= 150 ns/event", "n/a", None))
    else:
        s = hot.stats()
        out.append(
            Target(
                "hot TEXT_MESSAGE_CONTENT encode <= 150 ns/event",
                f"{s['median']:.0f} ns (IQR {s['q1']:.0f}-{s['q3']:.0f})",
                s["median"] <= 150,
            )
        )
    dec = get("decode", "run", "agui_wire decode_proto")
    ratio(
        "decode run to dicts <= 0.8x orjson decoding the SSE",
        dec,
        get("decode", "run", "orjson: split + loads", "SSE"),
        0.8,
        faster=False,
    )
    ratio(
        "decode run >= 15x faster than MessageToDict",
        dec,
        get("decode", "run", "upb: FromString + MessageToDict"),
        15,
        faster=True,
    )
    framer = next((c for c in cases if c.op == "framer" and c.key.endswith(".0")), None)
    if framer is None or framer.error or not framer.samples:
        out.append(Target("framer >= 1 GB/s", "n/a", None))
    else:
        gbs = framer.wire_bytes / (framer.median * framer.events)
        out.append(Target("framer >= 1 GB/s", f"{gbs:.2f} GB/s", gbs >= 1.0))
    ratio(
        "50 KB snapshot encode <= 2x orjson",
        get("encode", "snapshot", "agui_wire EventEncoder.encode"),
        get("encode", "snapshot", C.ORJSON_SSE, "SSE"),
        2.0,
        faster=False,
    )
    ratio(
        "50 KB snapshot decode <= 2x orjson",
        get("decode", "snapshot", "agui_wire decode_proto"),
        get("decode", "snapshot", "orjson: split + loads", "SSE"),
        2.0,
        faster=False,
    )
    size = f"{memory['bytes'] / 1e9:.2f} GB" if memory and "bytes" in memory else "1 GB"
    text = f"decode a {size} capture frame by frame: peak RSS <= 64 MiB + largest frame"
    if memory is None:
        out.append(Target(text, "not run (--memory)", None))
    elif "error" in memory:
        out.append(Target(text, "failed", False, memory["error"]))
    else:
        out.append(
            Target(
                text,
                f"{memory['peak_rss_kib'] / 1024:.1f} MiB peak "
                f"(budget {memory['budget_kib'] / 1024:.1f} MiB)",
                memory["met"],
            )
        )
    return out


def _fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:,.2f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:,.1f} µs"
    return f"{ns:,.0f} ns"


def _fmt_rate(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.2f}{unit}"
    return f"{x:.0f}"


def timing_rows(
    cases: list[Case], node: dict[str, Any], workloads: dict[str, W.Workload]
) -> list[tuple[str, list[list[str]]]]:
    """Per section: [transport, contender, ns/event, IQR, events/s, MB/s, x orjson, note]."""
    sections: list[tuple[str, list[list[str]]]] = []
    node_map = {
        ("encode", "protobuf"): ["encodeBinary (protobuf)"],
        ("encode", "SSE"): ["encode (SSE, string)", "encodeBinary (SSE, bytes)"],
        ("decode", "protobuf"): ["@ag-ui/proto decode (per frame)"],
        ("decode", "SSE"): ["SSE split + JSON.parse"],
    }
    for (op, section), title in SECTION_TITLES.items():
        rows: list[list[str]] = []
        group = [c for c in cases if c.op == op and c.section == section]
        base = next((c for c in group if c.baseline and c.samples), None)
        for c in group:
            if c.error is not None:
                rows.append([c.transport, c.label, "FAILED", "", "", "", "", c.error])
                continue
            s = c.stats()
            med = s["median"]
            iqr = f"±{(s['q3'] - s['q1']) / 2 / med * 100:.0f}%" if med else ""
            mbs = c.wire_bytes / (med * c.events) * 1e3 if c.wire_bytes else 0
            rel = f"{_paired(c, base)[0]:.2f}x" if base is not None else ""
            rows.append(
                [
                    c.transport,
                    c.label,
                    _fmt_ns(med),
                    iqr,
                    _fmt_rate(1e9 / med),
                    f"{mbs:,.0f}" if mbs else "",
                    rel,
                    c.note,
                ]
            )
        wl = node.get("workloads", {}).get(section)
        if wl is not None and op in ("encode", "decode"):
            w = workloads[section]
            for transport in ("protobuf", "SSE"):
                for label in node_map[(op, transport)]:
                    e = wl["contenders"][label]
                    med = e["median"]
                    q1, _, q3 = (
                        statistics.quantiles(e["samples"], n=4, method="inclusive")
                        if len(e["samples"]) > 1
                        else (med, med, med)
                    )
                    nbytes = e["bytes"] or (len(w.proto) if transport == "protobuf" else len(w.sse))
                    mbs = nbytes / (med * wl["events"]) * 1e3
                    rel = f"{med / base.median:.2f}x*" if base is not None else ""
                    note = "node, own process"
                    if e.get("identical_to_agui_wire") is not None:
                        note += (
                            "; bytes identical to agui_wire"
                            if e["identical_to_agui_wire"]
                            else "; BYTES DIFFER from agui_wire"
                        )
                    if e.get("error"):
                        note += "; " + e["error"]
                    rows.append(
                        [
                            transport,
                            f"node {label}",
                            _fmt_ns(med),
                            f"±{(q3 - q1) / 2 / med * 100:.0f}%",
                            _fmt_rate(1e9 / med),
                            f"{mbs:,.0f}",
                            rel,
                            note,
                        ]
                    )
        sections.append((title, rows))
    return sections


def robustness(depths: Sequence[int]) -> list[list[str]]:
    """Each snapshot contender on a deeply nested snapshot: ok, or the error."""
    rows = []
    works = {d: W.deep_workload(d) for d in depths}
    for op, factory in (("encode", C.encoders), ("decode", C.decoders)):
        for c in factory("snapshot"):
            row = [op, c.transport, c.name]
            for d in depths:
                w = works[d]
                try:
                    out = c.run(c.prepare(w))
                    bad = C.differences(c, w, out)
                    row.append("ok" if not bad else "wrong output")
                except Exception as exc:
                    row.append(_short(f"{type(exc).__name__}: {exc}", 70))
            rows.append(row)
    return rows


def _table(headers: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    fmt = lambda r: "  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)])


def _load(avg: Sequence[float] | None) -> str:
    return ", ".join(f"{x:.1f}" for x in avg) if avg else "n/a"


def render(
    report: dict[str, Any], cases: list[Case], workloads: dict[str, W.Workload], markdown: bool
) -> str:
    m = report["machine"]
    out: list[str] = []
    h = "### " if markdown else "== "
    out.append(f"{h}agui_wire benchmarks ({m['date']})")
    out.append(
        f"CPU: {m['cpu']} ({m['cpus']} CPUs, load {_load(m['loadavg_start'])}); "
        f"{m['python']}; orjson {m['orjson']}; protobuf {m['protobuf']}; pydantic {m['pydantic']}; "
        f"ag-ui-protocol {m['ag-ui-protocol']}; node {report['node'].get('node', 'n/a')}; "
        f"agui_wire {m['agui_wire']}, backend {m['backend']} {m['backend_names']}; "
        f"{m['rounds']} rounds, >= {m['min_time']} s/sample, GC {m['gc']}"
        + ("; QUICK RUN (indicative only)" if m["quick"] else "")
    )
    headers = ["transport", "contender", "ns/event", "IQR", "events/s", "MB/s", "x orjson", "note"]
    for title, rows in timing_rows(cases, report["node"], workloads):
        out += ["", f"{h}{title}", _table(headers, rows, markdown)]
    out.append(
        "\nx orjson: median of per-round ratios to the section's orjson row "
        "(* node: ratio of medians, separate process)"
    )
    out += [
        "",
        f"{h}bytes on the wire",
        _table(
            [
                "workload",
                "transport",
                "bytes",
                "bytes/event",
                "gzip -6",
                "gzip bytes/event",
                "vs SSE",
            ],
            [
                [
                    r["workload"],
                    r["transport"],
                    f"{r['bytes']:,}",
                    f"{r['per_event']:.1f}",
                    f"{r['gzip6']:,}",
                    f"{r['gzip6_per_event']:.1f}",
                    f"{r['vs_sse']:.2f}",
                ]
                for r in report["sizes"]
            ],
            markdown,
        ),
    ]
    if report.get("robustness"):
        depths = report["robustness_depths"]
        out += [
            "",
            f"{h}deeply nested STATE_SNAPSHOT (which contenders cope)",
            _table(
                ["op", "transport", "contender", *(f"depth {d}" for d in depths)],
                report["robustness"],
                markdown,
            ),
        ]
    status = {True: "met", False: "NOT MET", None: "n/a"}
    out += [
        "",
        f"{h}targets",
        _table(
            ["target", "measured", "status", "detail"],
            [[t["text"], t["measured"], status[t["met"]], t["detail"]] for t in report["targets"]],
            markdown,
        ),
    ]
    if report.get("memory"):
        mem = report["memory"]
        if "error" not in mem:
            out.append(
                f"\nmemory: {mem['bytes'] / 1e9:.2f} GB capture, {mem['events']:,} events "
                f"decoded in {mem['seconds']:.0f} s; peak RSS {mem['peak_rss_kib'] / 1024:.1f} "
                f"MiB (after imports {mem['baseline_rss_kib'] / 1024:.1f} MiB), "
                f"largest frame {mem['largest_frame'] / MiB:.2f} MiB"
            )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="small workload, few rounds (CI smoke run)")
    p.add_argument("--rounds", type=int, help="timed rounds (default 15, quick 3)")
    p.add_argument(
        "--min-time", type=float, help="seconds per sample at least (default 0.05, quick 0.005)"
    )
    p.add_argument(
        "--events",
        type=int,
        help=f"events in the run (default {W.RUN_EVENTS}, quick {W.QUICK_RUN_EVENTS})",
    )
    p.add_argument(
        "--no-gc", action="store_true", help="disable the GC while timing (all contenders)"
    )
    p.add_argument("--no-node", action="store_true", help="skip the Node contenders")
    p.add_argument("--memory", action="store_true", help="also run the 1 GB capture memory test")
    p.add_argument(
        "--memory-size", type=int, default=1024, metavar="MiB", help="capture size (default 1024)"
    )
    p.add_argument("--memory-dir", help="where to write the capture (default: the temp dir)")
    p.add_argument(
        "--markdown", action="store_true", help="print the tables as Markdown (for the README)"
    )
    p.add_argument("--json", metavar="PATH", help="write every sample and fact as JSON")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 15)
    args.min_time = args.min_time if args.min_time is not None else (0.005 if args.quick else 0.05)
    n_events = args.events or (W.QUICK_RUN_EVENTS if args.quick else W.RUN_EVENTS)
    framer_bytes = 8_000_000 if args.quick else W.FRAMER_BYTES
    if not C.HAVE_SDK:
        print("ag-ui-protocol is not installed: pip install -e '.[test]'", file=sys.stderr)
        return 2

    def log(msg: str) -> None:
        print(f"[compare] {msg}", file=sys.stderr, flush=True)

    machine = machine_info(args)
    log(f"backend {selected.NAME} {dict(selected.IMPLEMENTATIONS)}; building workloads ...")
    cases, notes = build_cases(n_events, framer_bytes)
    for n in notes:
        log(n)
    for c in cases:
        if c.error:
            log(f"FAILED {c.op}/{c.section} {c.label} [{c.transport}]: {c.error}")
    node: dict[str, Any] = (
        {"error": "skipped (--no-node)"}
        if args.no_node
        else run_node(n_events, args.rounds, args.min_time, log)
    )
    if "error" in node:
        log(f"node: {node['error']}")
    log(f"timing {sum(c.error is None for c in cases)} cases, {args.rounds} rounds ...")
    measure(cases, args.rounds, args.min_time, not args.no_gc, log)
    depths = (16, 64, 300)
    log("robustness: deep snapshots ...")
    rob = robustness(depths)
    memory = run_memory(args.memory_size, args.memory_dir, log) if args.memory else None
    machine["loadavg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    report: dict[str, Any] = {
        "machine": machine,
        "node": node,
        "sizes": sizes(n_events),
        "robustness": rob,
        "robustness_depths": list(depths),
        "memory": memory,
        "targets": [t.__dict__ for t in targets(cases, node, memory)],
        "cases": [
            {
                "key": c.key,
                "op": c.op,
                "section": c.section,
                "contender": c.label,
                "transport": c.transport,
                "events_per_call": c.events,
                "wire_bytes_per_call": c.wire_bytes,
                "reps": c.reps,
                "ns_per_event": c.stats(),
                "samples": c.samples,
                "error": c.error,
                "note": c.note,
            }
            for c in cases
        ],
    }
    workloads = {"run": W.run(n_events), "hot": W.hot(n_events), "snapshot": W.snapshot()}
    print(render(report, cases, workloads, args.markdown))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
