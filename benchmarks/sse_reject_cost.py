"""What refusing an event costs the SSE encoders, next to accepting it.

For each case, two events that differ in one value at the end of the event: the
bad one (``EncodeError``) and the same event with that value made valid. Both
are timed in one process, interleaved, on the Cython writer (``_fast.SSEEncoder``,
when built) and its pure twin (``sse_writer.SSEEncoder``); the table shows the
medians and the ratio reject / accept. The goal: at most 3x.

Two sizes: a ~50 KB ``STATE_SNAPSHOT`` (benchmarks/workloads.py), where the
ratio is what the walk costs, and a small ``CUSTOM`` event, where it is mostly
the fixed cost of raising an exception (about a microsecond in CPython).

Usage: ``.venv/bin/python benchmarks/sse_reject_cost.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import state_snapshot

from agui_wire import EncodeError
from agui_wire._codec import sse_writer

# (name, bad value, valid value in its place)
CASES: list[tuple[str, Any, Any]] = [
    ("NaN", float("nan"), 0.5),
    ("lone surrogate", "ab\ud800", "ab"),
    ("int beyond 64 bits", 2**64, 2**62),
    ("set", {1, 2}, [1, 2]),
    ("non-str key", {1: 2}, {"1": 2}),
    ("object()", object(), None),
]


def _events(value: Any, big: bool) -> dict[str, Any]:
    if big:
        event = copy.deepcopy(_SNAPSHOT)
        event["snapshot"]["documents"][-1]["last"] = value
        return event
    return {"type": "CUSTOM", "name": "n", "value": {"a": [1, "two", 3.0], "last": value}}


_SNAPSHOT = state_snapshot()


def _time(fn: Callable[[], Any], min_time: float) -> float:
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / n
        n *= 2


def _reject(encode: Callable[[Any], bytes], event: Any) -> Callable[[], None]:
    def run() -> None:
        try:
            encode(event)
        except EncodeError:
            return
        raise AssertionError("accepted")

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.02)
    args = parser.parse_args()
    encoders: list[tuple[str, Callable[[Any], bytes]]] = []
    try:
        from agui_wire import _fast

        encoders.append(("cython", _fast.SSEEncoder().encode))
    except ImportError:
        pass
    encoders.append(("pure", sse_writer.SSEEncoder().encode))
    print(f"{'encoder':<7} {'event':<9} {'case':<20} {'accept':>10} {'reject':>10} {'ratio':>6}")
    worst = 0.0
    for big in (True, False):
        for name, bad_value, good_value in CASES:
            bad, good = _events(bad_value, big), _events(good_value, big)
            for enc_name, encode in encoders:
                encode(good)
                try:
                    encode(bad)
                except EncodeError:
                    pass
                else:
                    print(f"{enc_name:<7} {'50 KB' if big else 'small':<9} {name:<20} accepted")
                    continue
                accept_fn, reject_fn = (lambda e=encode, g=good: e(g)), _reject(encode, bad)
                a, r = [], []
                for _ in range(args.rounds):
                    a.append(_time(accept_fn, args.min_time))
                    r.append(_time(reject_fn, args.min_time))
                acc, rej = statistics.median(a), statistics.median(r)
                ratio = rej / acc
                if big:
                    worst = max(worst, ratio)
                print(
                    f"{enc_name:<7} {'50 KB' if big else 'small':<9} {name:<20} "
                    f"{acc * 1e6:>8.2f}us {rej * 1e6:>8.2f}us {ratio:>5.1f}x"
                )
    print(f"worst ratio on the 50 KB event: {worst:.1f}x (goal <= 3x)")


if __name__ == "__main__":
    main()
