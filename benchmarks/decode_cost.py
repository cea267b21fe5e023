#!/usr/bin/env python
"""What a live stream that arrives one event per chunk costs to decode (issue 14 item 4).

    python benchmarks/decode_cost.py [--quick] [--rounds N] [--only COLUMN]

Data: the realistic run (``workloads.run()``, 20,004 events; ``--quick``: 2,004),
one event per chunk, as a server that writes every event at once delivers it:
each protobuf frame (prefix + payload) or SSE block (``data: ...\\n\\n``) is one
``bytes``. Every column decodes the same chunks in the same run; reported in ns
per event (CPU time) and as ratios to the payload decode:

protobuf
  ``payload``      ``decode_payload`` (the backend's) on each frame's body: the floor
  ``feed``         ``EventDecoder(proto).feed(frame)``, one decoder per pass
  ``decode_proto`` ``agui_wire.decode_proto(frame)``, one call per frame

SSE
  ``payload``      ``orjson.loads`` of each block's data alone (from ``bytes``): the floor
  ``feed``         ``EventDecoder(SSE).feed(block)``, one decoder per pass
  ``bound``        ``SSEEventReader().feed(block)``, the SSE parser without EventDecoder
  ``decode``       ``agui_wire.decode(block, SSE)``, one call per block

Method: a pass calls the column on every chunk, one by one, dropping each result at
once (``deque(map(feed, chunks), maxlen=0)``: no Python loop around the calls, so
what is timed is the call). Per round every column runs once, in an order that
rotates round by round; the ratio is the median of the per-round ratios
(neighbours in time, so load on the shared machine cancels out). The goal:
``feed`` <= 1.5x ``payload`` on both transports. ``--only proto.feed`` runs one
column once (for ``valgrind --tool=callgrind``, whose instruction counts are
repeatable where wall time is not).
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson
import workloads as W

import agui_wire
from agui_wire import EventDecoder, decode, decode_proto
from agui_wire._codec import selected
from agui_wire._codec.sse_reader import SSEEventReader

PROTO = agui_wire.PROTO_MEDIA_TYPE
SSE = agui_wire.SSE_MEDIA_TYPE
GOAL = 1.5

# A column: a fresh callable per pass (a new EventDecoder for feed), the chunks it
# is called on one by one, and whether it returns a list of events (else one event).
Column = tuple[Callable[[], Callable[[Any], Any]], list[Any], bool]


def proto_columns(w: W.Workload) -> dict[str, Column]:
    return {
        "payload": (lambda: selected.decode_payload, w.payloads, False),
        "feed": (lambda: EventDecoder(PROTO).feed, w.frames, True),
        "decode_proto": (lambda: decode_proto, w.frames, True),
    }


def sse_columns(w: W.Workload) -> dict[str, Column]:
    blocks = w.sse_events
    datas = [b[6:-2] for b in blocks]  # the JSON of "data: <json>\n\n"
    return {
        "payload": (lambda: orjson.loads, datas, False),
        "feed": (lambda: EventDecoder(SSE).feed, blocks, True),
        "bound": (
            lambda: SSEEventReader(plain_blocks=selected.plain_sse_blocks).feed,
            blocks,
            True,
        ),
        "decode": (lambda: functools.partial(decode, content_type=SSE), blocks, True),
    }


def count(column: Column) -> int:
    """Events the column decodes (untimed: the check that it decodes them all)."""
    make, chunks, many = column
    fn = make()
    return sum(len(fn(c)) for c in chunks) if many else len([fn(c) for c in chunks])


def run(column: Column) -> None:
    """One pass: every chunk once, each result dropped at once (as a consumer would)."""
    make, chunks, _ = column
    deque(map(make(), chunks), maxlen=0)


def sample(column: Column, events: int) -> float:
    """CPU ns per event of one pass."""
    gc.collect()
    start = time.process_time_ns()
    run(column)
    return (time.process_time_ns() - start) / events


def measure(columns: dict[str, Column], events: int, rounds: int) -> dict[str, list[float]]:
    names = list(columns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name, column in columns.items():  # warm up (caches, interned keys), and check
        got = count(column)
        assert got == events, f"{name}: decoded {got} events, expected {events}"
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(sample(columns[name], events))
    return times


def report(transport: str, times: dict[str, list[float]]) -> float:
    """Print one transport's rows; return feed's ratio to the payload decode."""
    base = times["payload"]
    print(f"  {transport:<9} {'column':<14} {'ns/event':>9} {'min':>8} {'x payload':>10}")
    feed_ratio = 0.0
    for name, samples in times.items():
        ratio = statistics.median(t / b for t, b in zip(samples, base, strict=True))
        if name == "feed":
            feed_ratio = ratio
        print(
            f"  {'':<9} {name:<14} {statistics.median(samples):>9.0f} {min(samples):>8.0f} "
            f"{ratio:>9.2f}x"
        )
    return feed_ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,004 events, 3 rounds (CI smoke)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", help="run one column once, e.g. proto.feed or sse.payload")
    args = parser.parse_args()
    n, rounds = (W.QUICK_RUN_EVENTS, 3) if args.quick else (W.RUN_EVENTS, args.rounds)
    w = W.run(n)
    tables = {"protobuf": proto_columns(w), "SSE": sse_columns(w)}
    if args.only:
        transport, _, column = args.only.partition(".")
        table = tables["protobuf" if transport == "proto" else "SSE"]
        print(f"{args.only}: {sample(table[column], w.count):.0f} ns/event")
        return
    impl = dict(selected.IMPLEMENTATIONS)
    print(
        f"agui_wire {agui_wire.__version__}, backend {selected.NAME} "
        f"(FrameReader: {impl['FrameReader']}); {w.name}, one event per chunk; "
        f"{rounds} rounds, CPU time"
    )
    verdicts = []
    for transport, columns in tables.items():
        ratio = report(transport, measure(columns, w.count, rounds))
        verdicts.append(f"{transport} {ratio:.2f}x")
    met = all(float(v.split()[-1][:-1]) <= GOAL for v in verdicts)
    print(
        f"feed / payload decode: {', '.join(verdicts)} "
        f"(goal <= {GOAL}x: {'met' if met else 'NOT MET'})"
    )


if __name__ == "__main__":
    main()
