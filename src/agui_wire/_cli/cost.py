"""``agui-wire cost``: what each transport costs for a given traffic, measured.

Strategy: take the events (a realistic sample run from ``agui_wire._sample`` by
default, else the events of the captures given), encode each one as the server
writes it, once per transport, and measure:

* bytes: per event (so per event type) and in total, for SSE and protobuf, each
  also compressed with every content coding browsers accept that is installed
  (gzip always; Brotli and Zstandard with their packages: ``agui_wire._compression``),
  *flushed after every event* — what a streaming server has to do for the
  client to see each event when it is sent (Starlette's GZipMiddleware does
  exactly this; buffering the whole response defeats streaming). Whole-response
  gzip is reported alongside, as the lower bound;
* CPU per event, on this machine: encoding the run event by event (plus
  compressing, for gzip) and decoding it from the chunks the server wrote
  (``EventDecoder.feed`` per chunk, after decompressing); and the server's cost
  of *writing* each event to a TCP socket on loopback (this thread's CPU), one
  send per event vs coalesced sends of up to 32 KiB as ``EventStreamResponse``
  does — per event, a send costs more than encoding. Each measurement is a
  pass of whole runs (as many as fill about 12 ms, so scheduler noise stays small);
  the median of ``--repeats`` passes is kept, the
  (transport, direction) passes interleaved in a rotating order so that drift
  (thermal, other load) hits all of them alike, with the garbage collector off
  during a pass and one warm-up round first.

The verdict is computed from those numbers, in plain words: is binary smaller
once both are compressed, by how much per million events, and which is cheaper
on CPU. ``--html`` writes a self-contained report (inline SVG charts, no
external assets; ``report.py``), ``--json`` prints every figure.

Contract: the default run (2,000 events, 7 repeats) finishes in a few seconds.
Events that one transport cannot encode are left out of every figure and
counted in a note. Exit 0, or 1 if a capture had bad frames.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import os
import platform
import socket
import statistics
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Final

import orjson

from .._codec import backend
from .._compression import available, compressor, decompressor
from .._decoder import EventDecoder
from .._encoder import encode_proto, encode_sse
from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from .._sample import realistic_run
from ..errors import EncodeError
from ._args import add_input_options, read_capture
from ._args import sources as open_args_sources
from ._common import EXIT_OK, EXIT_PROBLEMS, CliError, InputError, say
from ._costmodel import CostReport, TransportCost
from ._parser import add_command
from ._progress import Progress, progress_enabled

__all__ = ["CostReport", "TransportCost", "measure", "register", "run", "verdict"]

HELP = "bytes and CPU of each transport for your traffic, and a verdict"
DESCRIPTION = """\
The transport-cost report: for SSE and binary protobuf, each also compressed
(gzip; Brotli and zstd when installed) with a flush per event, the total bytes,
bytes per event type, encode and decode CPU per event and the cost of writing
each event to a socket, measured on this machine, and a verdict: is binary worth
it for this traffic, and why.

With no CAPTURE it runs on a realistic agent run shipped with agui_wire
(agui_wire._sample.realistic_run); with captures, on their events.
"""
EPILOG = """\
examples:
  agui-wire cost
  agui-wire cost --html report.html
  agui-wire cost capture.bin session.har --json > cost.json
"""

CODING_LABELS: Final = {"gzip": "gzip", "br": "Brotli", "zstd": "zstd"}


def _transports() -> tuple[tuple[str, str], ...]:
    """(key, label) per transport measured: plain, then gzip, Brotli and zstd where
    installed (each coding once for SSE, once for protobuf)."""
    out = [("sse", "SSE"), ("proto", "protobuf")]
    for coding in sorted(available(), key=("gzip", "br", "zstd").index):
        label = CODING_LABELS[coding]
        out += [(f"sse+{coding}", f"SSE + {label}"), (f"proto+{coding}", f"protobuf + {label}")]
    return tuple(out)


TRANSPORTS: Final = _transports()
COALESCE_BYTES: Final = 32 * 1024  # what EventStreamResponse puts in one send, at most
DEFAULT_EVENTS: Final = 2000
DEFAULT_REPEATS: Final = 7
PASS_NS: Final = 12_000_000  # a timed pass lasts about this long (whole runs, repeated)


# -- measuring --------------------------------------------------------------------------


def _compressed(chunks: Sequence[bytes], coding: str, level: int | None) -> list[bytes]:
    """Each chunk compressed and flushed, as a streaming server sends it; the end of
    the compressed stream rides with the last one."""
    comp = compressor(coding, level)
    out = [comp.compress(c) for c in chunks]
    tail = comp.finish()
    if out:
        out[-1] += tail
    else:
        out.append(tail)
    return out


def _whole_gzip(chunks: Sequence[bytes], level: int) -> int:
    comp = zlib.compressobj(level, zlib.DEFLATED, 31)
    return len(comp.compress(b"".join(chunks)) + comp.flush())


def _split(key: str) -> tuple[str, str | None]:
    """'proto+br' -> ('proto', 'br'); 'sse' -> ('sse', None)."""
    base, _, coding = key.partition("+")
    return base, coding or None


def _encoders(
    events: Sequence[dict[str, Any]], levels: dict[str, int | None]
) -> dict[str, Callable[[], object]]:
    def plain(encode: Callable[[Any], bytes]) -> Callable[[], object]:
        def go() -> object:
            return [encode(e) for e in events]

        return go

    def compressed(encode: Callable[[Any], bytes], coding: str) -> Callable[[], object]:
        def go() -> object:
            comp = compressor(coding, levels.get(coding))
            squeeze = comp.compress
            out = [squeeze(encode(e)) for e in events]
            out.append(comp.finish())
            return out

        return go

    encode: dict[str, Callable[[Any], bytes]] = {"sse": encode_sse, "proto": encode_proto}
    jobs: dict[str, Callable[[], object]] = {}
    for key, _ in TRANSPORTS:
        base, coding = _split(key)
        jobs[key] = plain(encode[base]) if coding is None else compressed(encode[base], coding)
    return jobs


def _decoders(wire: dict[str, list[bytes]]) -> dict[str, Callable[[], object]]:
    def go_for(chunks: list[bytes], ctype: str, coding: str | None) -> Callable[[], object]:
        def go() -> object:
            decoder = EventDecoder(ctype)
            feed = decoder.feed
            n = 0
            if coding is None:
                for chunk in chunks:
                    n += len(feed(chunk))
            else:
                inflate = decompressor(coding)
                for chunk in chunks:
                    n += len(feed(inflate(chunk)))
            return n + len(decoder.close())

        return go

    ctypes = {"sse": SSE_MEDIA_TYPE, "proto": PROTO_MEDIA_TYPE}
    out = {}
    for key, _ in TRANSPORTS:
        base, coding = _split(key)
        out[key] = go_for(wire[key], ctypes[base], coding)
    return out


def _coalesce(chunks: Sequence[bytes], limit: int) -> list[bytes]:
    """The chunks joined into writes of up to about ``limit`` bytes."""
    out: list[bytes] = []
    batch: list[bytes] = []
    size = 0
    for c in chunks:
        batch.append(c)
        size += len(c)
        if size >= limit:
            out.append(b"".join(batch))
            batch, size = [], 0
    if batch:
        out.append(b"".join(batch))
    return out


def _send_cost(wire: dict[str, list[bytes]], repeats: int) -> dict[str, dict[str, float]]:
    """This thread's CPU (µs per event) to write each plain stream to a loopback TCP
    socket: one send per event, and coalesced writes. A reader thread drains the
    other end (its CPU is not counted: ``thread_time``)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        writer = socket.create_connection(server.getsockname())
        reader, _ = server.accept()
    stop = threading.Event()

    def drain() -> None:
        buf = bytearray(1 << 20)
        while reader.recv_into(buf):
            pass
        stop.set()

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    out: dict[str, dict[str, float]] = {}
    try:
        for key in ("sse", "proto"):
            chunks = wire[key]
            modes = {"per_event": list(chunks), "coalesced": _coalesce(chunks, COALESCE_BYTES)}
            runs: dict[str, list[float]] = {m: [] for m in modes}
            for _ in range(repeats):
                for mode, writes in modes.items():
                    send = writer.sendall
                    start = time.thread_time_ns()
                    for w in writes:
                        send(w)
                    runs[mode].append((time.thread_time_ns() - start) / len(chunks) / 1000)
            out[key] = {m: statistics.median(r) for m, r in runs.items()}
    finally:
        writer.close()
        stop.wait(5)
        reader.close()
    return out


def _time(fn: Callable[[], object], loops: int = 1) -> int:
    """Nanoseconds for ``loops`` calls of ``fn``, the garbage collector off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        return time.perf_counter_ns() - start
    finally:
        if enabled:
            gc.enable()


def _loops(fn: Callable[[], object], target_ns: int) -> int:
    """How many calls of ``fn`` make one pass last about ``target_ns`` (timeit's autorange)."""
    once = max(_time(fn), 1)
    return max(1, round(target_ns / once))


def _machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": str(os.cpu_count() or "?"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(terse=True),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _text_bytes(events: Sequence[dict[str, Any]]) -> int:
    total = 0
    for e in events:
        d = e.get("delta")
        if isinstance(d, str):
            total += len(d.encode("utf-8", "surrogatepass"))
    return total


def measure(
    events: Sequence[dict[str, Any]],
    *,
    source: str = "events",
    repeats: int = DEFAULT_REPEATS,
    gzip_level: int = 6,
    progress: Progress | None = None,
) -> CostReport:
    """Measure every transport on ``events`` (see the module doc)."""
    if not events:
        raise CliError("no events to measure")
    n = len(events)
    sse = [encode_sse(e) for e in events]
    proto = [encode_proto(e) for e in events]
    levels: dict[str, int | None] = {"gzip": gzip_level}
    wire = {"sse": sse, "proto": proto}
    for key, _ in TRANSPORTS:
        base, coding = _split(key)
        if coding is not None:
            wire[key] = _compressed(wire[base], coding, levels.get(coding))
    types = [str(e.get("type")) for e in events]
    by_type: dict[str, dict[str, int]] = {}
    for key, chunks in wire.items():
        per: Counter[str] = Counter()
        for t, chunk in zip(types, chunks, strict=False):
            per[t] += len(chunk)
        by_type[key] = dict(per)

    # Sanity: every transport carries every event.
    decoders = _decoders(wire)
    for key, fn in decoders.items():
        got = fn()
        if got != n:
            raise CliError(f"internal check failed: {key} decodes to {got} events, not {n}")

    encoders = _encoders(events, levels)
    jobs = [(key, "encode", encoders[key]) for key, _ in TRANSPORTS]
    jobs += [(key, "decode", decoders[key]) for key, _ in TRANSPORTS]
    # Warm-up, and as many whole-run calls per pass as make it last PASS_NS, so
    # that scheduler noise is small against what is measured.
    loops = {(key, direction): _loops(fn, PASS_NS) for key, direction, fn in jobs}
    runs: dict[tuple[str, str], list[float]] = {(k, d): [] for k, d, _ in jobs}
    for r in range(repeats):
        shift = (r * 3) % len(jobs)
        for key, direction, fn in jobs[shift:] + jobs[:shift]:
            count = loops[key, direction]
            runs[key, direction].append(_time(fn, count) / count / n / 1000)
            if progress is not None:
                progress.advance()

    transports = [
        TransportCost(
            key=key,
            label=label,
            bytes=sum(len(c) for c in wire[key]),
            encode_us=statistics.median(runs[key, "encode"]),
            decode_us=statistics.median(runs[key, "decode"]),
            by_type=by_type[key],
            encode_runs_us=[round(x, 4) for x in runs[key, "encode"]],
            decode_runs_us=[round(x, 4) for x in runs[key, "decode"]],
        )
        for key, label in TRANSPORTS
    ]
    report = CostReport(
        source=source,
        events=n,
        counts=dict(Counter(types).most_common()),
        text_bytes=_text_bytes(events),
        transports=transports,
        whole_gzip={"sse": _whole_gzip(sse, gzip_level), "proto": _whole_gzip(proto, gzip_level)},
        gzip_level=gzip_level,
        repeats=repeats,
        machine=_machine(),
        implementation=dict(backend.IMPLEMENTATIONS),
        send_us=_send_cost(wire, repeats),
        missing=[c for c in ("br", "zstd") if c not in available()],
    )
    report.verdict = verdict(report)
    return report


# -- the verdict -------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.0f}%"


def _speed(ours: float, theirs: float) -> str:
    """'2.1x faster than SSE', '1.4x slower than SSE' or 'about as fast as SSE'."""
    if ours <= 0 or theirs <= 0 or max(ours, theirs) / min(ours, theirs) < 1.1:
        return "about as fast as SSE"
    if ours < theirs:
        return f"{theirs / ours:.1f}x faster than SSE"
    return f"{ours / theirs:.1f}x slower than SSE"


def _per_million(bytes_: int, events: int) -> str:
    return f"{bytes_ / events * 1e6 / 1e6:,.1f} MB"


def verdict(report: CostReport) -> dict[str, Any]:
    """Plain-words verdict from the measured figures."""
    sse, proto = report.transport("sse"), report.transport("proto")
    sse_gz, proto_gz = report.transport("sse+gzip"), report.transport("proto+gzip")
    n = report.events
    plain_saving = 1 - proto.bytes / sse.bytes
    gz_saving = 1 - proto_gz.bytes / sse_gz.bytes
    reasons: list[str] = []

    if gz_saving >= 0.30:
        headline = (
            f"Yes: binary is worth it for this traffic. Even with gzip on both, protobuf is "
            f"{_pct(gz_saving)} smaller."
        )
        worth = "yes"
    elif gz_saving >= 0.10:
        headline = (
            f"Somewhat: with gzip on both, protobuf saves {_pct(gz_saving)} of the bytes; "
            f"without compression it saves {_pct(plain_saving)}."
        )
        worth = "somewhat"
    elif plain_saving >= 0.25:
        bigger = "larger" if gz_saving < 0 else "smaller"
        headline = (
            f"Not for size, if you compress: protobuf is {_pct(plain_saving)} smaller than plain "
            f"SSE, but with gzip on both it is {_pct(gz_saving)} {bigger}. Binary pays off only "
            "where the stream cannot be compressed."
        )
        worth = "only-uncompressed"
    else:
        headline = (
            f"No: protobuf saves only {_pct(plain_saving)} uncompressed and "
            f"{_pct(gz_saving)} with gzip for this traffic."
        )
        worth = "no"

    reasons.append(
        f"Per million events: SSE {_per_million(sse.bytes, n)}, protobuf "
        f"{_per_million(proto.bytes, n)}; with gzip (flushed per event, as streaming needs) "
        f"SSE {_per_million(sse_gz.bytes, n)}, protobuf {_per_million(proto_gz.bytes, n)}."
    )
    whole_s, whole_p = report.whole_gzip["sse"], report.whole_gzip["proto"]
    reasons.append(
        "gzip finds the repeated JSON keys, type names and ids that protobuf removes, which is "
        "why compression closes the gap; flushing after every event costs it: buffering the "
        f"whole response would give SSE {whole_s:,} and protobuf {whole_p:,} bytes "
        f"(vs {sse_gz.bytes:,} / {proto_gz.bytes:,} streamed)."
    )
    if report.counts:
        top, count = next(iter(report.counts.items()))
        share = count / n
        sse_top = sse.by_type.get(top, 0)
        proto_top = proto.by_type.get(top, 0)
        reasons.append(
            f"{top} is {_pct(share)} of the events: {sse_top / count:.0f} bytes each in SSE, "
            f"{proto_top / count:.0f} in protobuf. The text itself is "
            f"{report.text_bytes / max(n, 1):.0f} bytes per event on average "
            f"({_pct(report.text_bytes / sse.bytes)} of the SSE bytes): the rest is envelope."
        )
    enc_sse, enc_proto = sse_gz.encode_us, proto_gz.encode_us
    dec_sse, dec_proto = sse_gz.decode_us, proto_gz.decode_us
    cpu = (
        f"CPU on this machine, per event with gzip: protobuf encodes {_speed(enc_proto, enc_sse)}"
        f" ({enc_proto:.2f} vs {enc_sse:.2f} µs) and decodes "
        f"{_speed(dec_proto, dec_sse)} ({dec_proto:.2f} vs {dec_sse:.2f} µs); uncompressed, "
        f"{proto.encode_us:.2f} vs {sse.encode_us:.2f} µs to encode and {proto.decode_us:.2f} vs "
        f"{sse.decode_us:.2f} µs to decode."
    )
    if report.implementation.get("decode_payload") == "python":
        cpu += (
            " (This build decodes protobuf in pure Python; with the compiled extension it is "
            "faster.)"
        )
    reasons.append(cpu)
    reasons += _coding_reasons(report)
    if report.send_us:
        send_s, send_p = report.send_us["sse"], report.send_us["proto"]
        reasons.append(
            "Writing costs more than encoding: one socket send per event takes "
            f"{send_s['per_event']:.2f} µs (SSE) / {send_p['per_event']:.2f} µs (protobuf) of "
            f"server CPU here, against {sse.encode_us:.2f} / {proto.encode_us:.2f} µs to encode; "
            f"coalesced writes (as EventStreamResponse makes them) cost {send_s['coalesced']:.2f}"
            f" / {send_p['coalesced']:.2f} µs. An ASGI server adds its own per-send cost "
            "(several µs: benchmarks/server_cost.py), so coalescing matters more than the "
            "transport."
        )
    if worth in ("only-uncompressed", "no"):
        reasons.append(
            "Choose protobuf when the path cannot compress (some proxies and mobile stacks "
            "strip it), when CPU for JSON parsing matters more than bytes, or for typed "
            "frames; otherwise SSE with gzip costs about the same on the wire and is readable "
            "in any browser's devtools."
        )
    else:
        reasons.append(
            "Binary frames are opaque in browser devtools: keep `agui-wire decode` at hand "
            "for captures."
        )
    best = min(report.transports, key=lambda t: t.bytes)
    return {
        "worth_it": worth,
        "headline": headline,
        "reasons": reasons,
        "saving_uncompressed": round(plain_saving, 4),
        "saving_gzip": round(gz_saving, 4),
        "smallest": best.key,
    }


def _coding_reasons(report: CostReport) -> list[str]:
    """Brotli and zstd beside gzip: bytes and encode CPU, SSE and protobuf."""
    out = []
    keys = {t.key for t in report.transports}
    n = report.events
    gz_s, gz_p = report.transport("sse+gzip"), report.transport("proto+gzip")
    for coding in ("br", "zstd"):
        if f"sse+{coding}" not in keys:
            continue
        s, p = report.transport(f"sse+{coding}"), report.transport(f"proto+{coding}")
        out.append(
            f"{CODING_LABELS[coding]} (flushed per event): SSE {_per_million(s.bytes, n)}, "
            f"protobuf {_per_million(p.bytes, n)} per million events ({s.bytes / gz_s.bytes:.0%}"
            f" / {p.bytes / gz_p.bytes:.0%} of gzip's), encoding at {s.encode_us:.2f} / "
            f"{p.encode_us:.2f} µs per event (gzip {gz_s.encode_us:.2f} / {gz_p.encode_us:.2f})."
        )
    if report.missing:
        names = " and ".join(CODING_LABELS[c] for c in report.missing)
        extras = " ".join(f"agui-wire[{'brotli' if c == 'br' else 'zstd'}]" for c in report.missing)
        out.append(f"{names} not measured: not installed here (pip install {extras}).")
    return out


# -- output ---------------------------------------------------------------------------------


def _short(key: str) -> str:
    """'proto+gzip' -> 'proto+gz' (the by-type table's column heads)."""
    base, coding = _split(key)
    head = "SSE" if base == "sse" else "proto"
    return head if coding is None else f"{head}+{ {'gzip': 'gz'}.get(coding, coding) }"


def table(report: CostReport) -> str:
    """The terminal report."""
    n = report.events
    sse = report.transport("sse")
    lines = [
        f"agui-wire cost: {report.source}",
        f"{n:,} events; gzip level {report.gzip_level} (Brotli 5, zstd 3), flushed per event; "
        "CPU: median of "
        f"{report.repeats} interleaved passes on {report.machine['cpu']}",
        "",
        f"{'transport':<17}{'bytes':>11}{'per event':>11}{'vs SSE':>8}"
        f"{'encode µs/ev':>14}{'decode µs/ev':>14}",
    ]
    for t in report.transports:
        lines.append(
            f"{t.label:<17}{t.bytes:>11,}{t.bytes / n:>9.1f} B{t.bytes / sse.bytes:>8.0%}"
            f"{t.encode_us:>14.2f}{t.decode_us:>14.2f}"
        )
    lines += [
        "",
        "mean bytes per event, by type",
        f"{'type':<28}{'count':>7}" + "".join(f"{_short(t.key):>11}" for t in report.transports),
    ]
    for etype, count in report.counts.items():
        row = f"{etype:<28}{count:>7,}"
        for t in report.transports:
            row += f"{t.by_type.get(etype, 0) / count:>11.1f}"
        lines.append(row)
    if report.send_us:
        lines += [
            "",
            "server CPU to write to a loopback socket, µs per event "
            f"(one send per event / coalesced up to {COALESCE_BYTES // 1024} KiB):",
        ]
        for key, label in (("sse", "SSE"), ("proto", "protobuf")):
            cost = report.send_us[key]
            lines.append(f"  {label:<15}{cost['per_event']:>8.2f}{cost['coalesced']:>8.2f}")
    lines += ["", "verdict: " + report.verdict["headline"]]
    lines += [f"  - {r}" for r in report.verdict["reasons"]]
    if report.skipped:
        lines.append(f"  ({report.skipped} event(s) left out: not encodable in every transport)")
    spread = timing_spread(report)
    if spread > 0.3:
        lines.append(
            f"  (timings varied by up to {spread:.0%} between passes: the machine is busy; "
            "the medians are still comparable, more --repeats steadies them)"
        )
    return "\n".join(lines)


def timing_spread(report: CostReport) -> float:
    """The largest interquartile range of a measurement's passes, relative to its median."""
    worst = 0.0
    for t in report.transports:
        for runs, median in ((t.encode_runs_us, t.encode_us), (t.decode_runs_us, t.decode_us)):
            if len(runs) >= 4 and median > 0:
                q = statistics.quantiles(runs, n=4)
                worst = max(worst, (q[2] - q[0]) / median)
    return worst


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(sub, common, "cost", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run)
    p.add_argument(
        "captures", nargs="*", metavar="CAPTURE", help="captures (default: a sample run)"
    )
    p.add_argument(
        "--events",
        type=int,
        default=DEFAULT_EVENTS,
        metavar="N",
        help=f"sample run size (default {DEFAULT_EVENTS:,})",
    )
    p.add_argument("--seed", type=int, default=0, help="sample run seed (default 0)")
    p.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        metavar="R",
        help=f"timed passes per measurement; the median is kept (default {DEFAULT_REPEATS})",
    )
    p.add_argument(
        "--gzip-level",
        type=int,
        default=6,
        choices=range(1, 10),
        metavar="1-9",
        help="gzip compression level (default 6)",
    )
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--json", action="store_true", help="print every figure as JSON instead")
    add_input_options(p, keep_going=False)


def _capture_events(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str, bool]:
    events: list[dict[str, Any]] = []
    failed = False
    labels = []
    for path in args.captures:
        for source in open_args_sources(args, path, allow_many=True):
            labels.append(source.label)
            stream = read_capture(args, source, keep_going=True)
            for frame in stream:
                if frame.error is not None:
                    failed = True
                    say(f"{source.label}: {frame.error} (left out)")
                elif frame.event is not None:
                    events.append(frame.event)
    what = labels[0] if len(labels) == 1 else f"{len(labels)} captures"
    return events, f"{what} ({len(events):,} events)", failed


def _encodable(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    kept = []
    for e in events:
        try:
            encode_proto(e)
            encode_sse(e)
        except EncodeError:
            continue
        kept.append(e)
    return kept, len(events) - len(kept)


def run(args: argparse.Namespace) -> int:
    if args.repeats < 1 or args.events < 2:
        raise CliError("--repeats must be >= 1 and --events >= 2", code=2)
    failed = False
    if args.captures:
        events, source, failed = _capture_events(args)
        events, skipped = _encodable(events)
        if skipped:
            say(f"{skipped} event(s) left out: they cannot be encoded in both transports")
    else:
        events = realistic_run(args.events, args.seed)
        source = (
            f"a realistic agent run ({args.events:,} events, seed {args.seed}; "
            "agui_wire._sample.realistic_run)"
        )
        skipped = 0
    progress = Progress(
        "measuring",
        args.repeats * 2 * len(TRANSPORTS),
        enabled=progress_enabled(args.no_progress),
        unit="passes",
    )
    with progress:
        report = measure(
            events,
            source=source,
            repeats=args.repeats,
            gzip_level=args.gzip_level,
            progress=progress,
        )
    report.skipped = skipped
    if args.html:
        from .report import render_html

        try:
            with open(args.html, "w", encoding="utf-8") as fh:
                fh.write(render_html(report))
        except OSError as exc:
            raise InputError(f"cannot write {args.html}: {exc.strerror or exc}") from None
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(table(report))
        if args.html:
            print(f"\nHTML report: {args.html}")
    return EXIT_PROBLEMS if failed else EXIT_OK
