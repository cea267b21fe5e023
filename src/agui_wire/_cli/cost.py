"""``agui-wire cost``: what each transport costs for a given traffic, measured.

Strategy: take the events (a realistic sample run from ``agui_wire._sample`` by
default, else the events of the captures given), leave out, and list, those
that cannot be encoded in both transports with the options given
(``--lossy-numbers``, ``--extra-keys``, as for ``encode``), measure the rest
(``cost_measure``: bytes per transport and per event type, CPU, socket writes)
and put the verdict in plain words (``verdict``). The terminal table is
written here; ``--html`` writes a self-contained report (inline SVG charts, no
external assets; ``report``), ``--json`` prints every figure.

Contract: the default run (2,000 events, 7 repeats) finishes in a few seconds.
Events left out are listed on stderr (the first few, all with ``-v``), and the
verdict says how many and what share of the input's bytes they held. Exit 0,
or 1 if a capture had bad frames, had no events, or events were left out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any, Final

import orjson

from .._encoder import encode_proto, encode_sse
from .._sample import realistic_run
from ..errors import EncodeError
from ._args import (
    add_input_options,
    left_out,
    no_events,
    read_capture,
    skip_frame,
    skip_unencodable,
    write_page,
)
from ._args import sources as open_args_sources
from ._common import EXIT_OK, EXIT_PROBLEMS, CliError, say
from ._costmodel import COALESCE_BYTES, TRANSPORTS, CostReport, split_key
from ._leftout import LeftOut
from ._parser import add_command
from ._progress import Progress, progress_enabled
from .cost_measure import DEFAULT_REPEATS, measure
from .encode import add_encode_options

__all__ = ["register", "run", "table"]

HELP = "bytes and CPU of each transport for your traffic, and a verdict"
DESCRIPTION = """\
The transport-cost report: for SSE and binary protobuf, each also compressed
(gzip; Brotli and zstd when installed) with a flush per event, the total bytes,
bytes per event type, encode and decode CPU per event and the cost of writing
each event to a socket, measured on this machine, and a verdict: which transport
is smaller for this traffic, by how much, and why.

With no CAPTURE it runs on a realistic agent run shipped with agui_wire
(agui_wire._sample.realistic_run); with captures, on their events. Events that
cannot be encoded in both transports are left out, listed, and counted in the
verdict.
"""
EPILOG = """\
examples:
  agui-wire cost
  agui-wire cost --html report.html
  agui-wire cost capture.bin session.har --json > cost.json
  agui-wire cost langgraph.sse --lossy-numbers
"""
DEFAULT_EVENTS: Final = 2000

# -- output ---------------------------------------------------------------------------------


def _short(key: str) -> str:
    """'proto+gzip' -> 'proto+gz' (the by-type table's column heads)."""
    base, coding = split_key(key)
    head = "SSE" if base == "sse" else "proto"
    return head if coding is None else f"{head}+{ {'gzip': 'gz'}.get(coding, coding) }"


def table(report: CostReport) -> str:
    """The terminal report."""
    n = report.events
    sse = report.transport("sse")
    lines = [
        f"agui-wire cost: {report.source}",
        f"{report.counted()}; {report.levels()}, flushed per event; CPU: median of "
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
    add_encode_options(p)
    add_input_options(p, keep_going=False)


def _capture_events(
    args: argparse.Namespace, log: LeftOut
) -> tuple[list[tuple[str, Any]], str, int, bool]:
    """The events of every capture, each with its source label and frame; the bad frames
    and skipped events go to ``log``. Also: a label, the bytes read, and whether any
    capture was bad or empty."""
    events: list[tuple[str, Any]] = []
    failed = False
    labels = []
    size = 0
    for path in args.captures:
        for source in open_args_sources(args, path, allow_many=True):
            labels.append(source.label)
            stream = read_capture(args, source, keep_going=True, sse_lengths=True)
            for frame in stream:
                if frame.event is not None:
                    events.append((source.label, frame))
                else:
                    failed = failed or frame.error is not None
                    skip_frame(log, source, frame)
            size += stream.end_offset
            failed = no_events(args, stream) or failed
    what = labels[0] if len(labels) == 1 else f"{len(labels)} captures"
    return events, what, size, failed


def _encodable(
    args: argparse.Namespace, found: list[tuple[str, Any]], log: LeftOut
) -> list[dict[str, Any]]:
    kept = []
    for label, frame in found:
        event = frame.event
        try:
            encode_proto(event, lossy_numbers=args.lossy_numbers, extra_keys=args.extra_keys)
            encode_sse(event, lossy_numbers=args.lossy_numbers)
        except EncodeError as exc:
            skip_unencodable(log, label, frame, exc, "cannot be encoded in both transports")
            continue
        kept.append(event)
    return kept


def run(args: argparse.Namespace) -> int:
    if args.repeats < 1 or args.events < 2:
        raise CliError("--repeats must be >= 1 and --events >= 2", code=2)
    failed = False
    log = left_out(args, "left out", keep=True)
    input_bytes = 0
    if args.captures:
        found, what, input_bytes, failed = _capture_events(args, log)
        events = _encodable(args, found, log)
        source = what  # the counts: CostReport.counted()
        if summary := log.summary(always=True):
            say(summary)
        if not events:
            raise CliError(
                "no events to measure: "
                + ("every one was left out" if log.items else "the captures hold none")
            )
    else:
        events = realistic_run(args.events, args.seed)
        source = f"a realistic agent run (seed {args.seed}; agui_wire._sample.realistic_run)"
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
            lossy_numbers=args.lossy_numbers,
            extra_keys=args.extra_keys,
            left_out=[s.as_dict() for s in log.items],
            input_bytes=input_bytes,
            progress=progress,
        )
    if args.html:
        from .report import render_html

        write_page(args.html, render_html(report))
    if args.json:
        sys.stdout.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(table(report))
        if args.html:
            print(f"\nHTML report: {args.html}")
    return EXIT_PROBLEMS if failed or log.items else EXIT_OK
