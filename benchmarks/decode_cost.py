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
  ``feed``         ``EventDecoder(proto).feed(frame)``, one decoder for the whole run
  ``decode_proto`` ``agui_wire.decode_proto(frame)``, one call per frame

SSE
  ``payload``      ``orjson.loads`` of the data + the dict and ``type`` checks
  ``feed``         ``EventDecoder(SSE).feed(block)``, one decoder for the whole run
  ``bound``        ``SSEEventReader().feed(block)``, the SSE parser without EventDecoder
  ``decode``       ``agui_wire.decode(block, SSE)``, one call per block

Method: per round every column runs once over all chunks, in an order that
rotates round by round; the ratio is the median of the per-round ratios
(neighbours in time, so load on the shared machine cancels out). The goal:
``feed`` <= 1.5x ``payload`` on both transports. ``--only proto.feed`` runs one
column once (for ``valgrind --tool=callgrind``, whose instruction counts are
repeatable where wall time is not).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

import orjson
import workloads as W

import agui_wire
from agui_wire import EventDecoder, decode, decode_proto
from agui_wire._codec import backend
from agui_wire._codec.sse_reader import SSEEventReader

PROTO = agui_wire.PROTO_MEDIA_TYPE
SSE = agui_wire.SSE_MEDIA_TYPE
GOAL = 1.5

Pass = Callable[[], int]  # decodes every chunk once; returns how many events


def proto_columns(w: W.Workload) -> dict[str, Pass]:
    payloads, frames = w.payloads, w.frames
    decode_payload = backend.decode_payload

    def payload() -> int:
        return len([decode_payload(p) for p in payloads])

    def feed() -> int:
        f = EventDecoder(PROTO).feed
        return sum([len(f(c)) for c in frames])

    def one_shot() -> int:
        return sum([len(decode_proto(c)) for c in frames])

    return {"payload": payload, "feed": feed, "decode_proto": one_shot}


def sse_columns(w: W.Workload) -> dict[str, Pass]:
    blocks = w.sse_events
    datas = [b[6:-2] for b in blocks]  # the JSON of "data: <json>\n\n"
    loads = orjson.loads

    def payload() -> int:
        n = 0
        for d in datas:
            event = loads(d)
            if type(event) is dict and type(event.get("type")) is str:
                n += 1
        return n

    def feed() -> int:
        f = EventDecoder(SSE).feed
        return sum([len(f(c)) for c in blocks])

    def bound() -> int:
        f = SSEEventReader().feed
        return sum([len(f(c)) for c in blocks])

    def one_shot() -> int:
        return sum([len(decode(c, SSE)) for c in blocks])

    return {"payload": payload, "feed": feed, "bound": bound, "decode": one_shot}


def sample(fn: Pass, events: int) -> float:
    """CPU ns per event of one pass."""
    gc.collect()
    start = time.process_time_ns()
    got = fn()
    elapsed = time.process_time_ns() - start
    assert got == events, f"decoded {got} events, expected {events}"
    return elapsed / events


def measure(columns: dict[str, Pass], events: int, rounds: int) -> dict[str, list[float]]:
    names = list(columns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for fn in columns.values():  # warm up (caches, interned keys)
        sample(fn, events)
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
    impl = dict(backend.IMPLEMENTATIONS)
    print(
        f"agui_wire {agui_wire.__version__}, backend {backend.NAME} "
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
