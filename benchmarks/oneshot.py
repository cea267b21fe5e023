#!/usr/bin/env python
"""One-shot functions beside the bound paths they stand for (issue 14 item 3).

    python benchmarks/oneshot.py [--quick] [--repeats N] [--calls N]

One small event (TEXT_MESSAGE_CONTENT, a few words), in one run, side by side:

  ``encode_proto(e)``          vs ``EventEncoder(proto).encode(e)`` (encoder made once)
  ``encode_sse(e)``            vs ``EventEncoder(SSE).encode(e)``
  ``decode_proto(frame)``      vs ``EventDecoder(proto).feed(frame)`` (decoder made once)
  ``decode(block, SSE)``       vs ``EventDecoder(SSE).feed(block)``

and, for what a connection pays once, ``EventDecoder(proto)`` and ``EventDecoder(SSE)``
construction. Method: a sample is ``calls`` calls through ``deque(map(...), maxlen=0)``
(no Python loop around the calls), wall ns per call; every pair's two sides alternate
sample by sample, and each reports its minimum over ``repeats`` samples (the least
disturbed on a shared machine). The goal: one-shot <= 1.3x the bound path.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections import deque
from collections.abc import Callable
from itertools import repeat
from typing import Any

import agui_wire
from agui_wire import EventDecoder, EventEncoder, decode, decode_proto, encode_proto, encode_sse
from agui_wire._codec import selected

PROTO = agui_wire.PROTO_MEDIA_TYPE
SSE = agui_wire.SSE_MEDIA_TYPE
GOAL = 1.3
EVENT: dict[str, Any] = {
    "type": "TEXT_MESSAGE_CONTENT",
    "messageId": "msg_01HZX3",
    "delta": "quarterly revenue forecast",
}

# A side: what is called, and the arguments of each call (one tuple, repeated).
Side = tuple[Callable[..., Any], tuple[Any, ...]]


def pairs() -> dict[str, tuple[Side, Side]]:
    """Each row: (one-shot, bound path), both checked to give the same result."""
    frame = encode_proto(EVENT)
    block = encode_sse(EVENT)
    rows: dict[str, tuple[Side, Side]] = {
        "encode_proto": ((encode_proto, (EVENT,)), (EventEncoder(PROTO).encode, (EVENT,))),
        "encode_sse": ((encode_sse, (EVENT,)), (EventEncoder(SSE).encode, (EVENT,))),
        "decode_proto": ((decode_proto, (frame,)), (EventDecoder(PROTO).feed, (frame,))),
        "decode(SSE)": ((decode, (block, SSE)), (EventDecoder(SSE).feed, (block,))),
    }
    for name, ((one, one_args), (bound, bound_args)) in rows.items():
        assert one(*one_args) == bound(*bound_args), name
    return rows


def construction() -> dict[str, Side]:
    return {
        "EventDecoder(proto)": (EventDecoder, (PROTO,)),
        "EventDecoder(SSE)": (EventDecoder, (SSE,)),
    }


def sample(side: Side, calls: int) -> float:
    """Wall ns per call over ``calls`` calls."""
    fn, args = side
    streams = [repeat(a, calls) for a in args]
    start = time.perf_counter_ns()
    deque(map(fn, *streams), maxlen=0)
    return (time.perf_counter_ns() - start) / calls


def best(sides: list[Side], calls: int, repeats: int) -> list[float]:
    """Minimum ns per call of each side, the sides alternating sample by sample."""
    mins = [float("inf")] * len(sides)
    for side in sides:
        sample(side, max(calls // 10, 1))  # warm up
    gc.collect()
    gc.disable()
    try:
        for r in range(repeats):
            order = range(len(sides)) if r % 2 == 0 else reversed(range(len(sides)))
            for i in order:
                mins[i] = min(mins[i], sample(sides[i], calls))
    finally:
        gc.enable()
    return mins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few samples (CI smoke, < 5 s)")
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    repeats, calls = (5, 2_000) if args.quick else (args.repeats, args.calls)
    print(
        f"agui_wire {agui_wire.__version__}, backend {selected.NAME}; one "
        f"{EVENT['type']} event; min of {repeats} samples of {calls:,} calls, wall ns per call"
    )
    print(f"  {'one-shot':<14} {'ns':>7}   {'bound path':<34} {'ns':>7} {'ratio':>7}")
    verdicts = []
    for name, (one, bound) in pairs().items():
        one_ns, bound_ns = best([one, bound], calls, repeats)
        bound_name = getattr(bound[0], "__qualname__", repr(bound[0]))
        ratio = one_ns / bound_ns
        verdicts.append(ratio <= GOAL)
        print(f"  {name:<14} {one_ns:>7.0f}   {bound_name:<34} {bound_ns:>7.0f} {ratio:>6.2f}x")
    made = construction()
    for name, ns in zip(made, best(list(made.values()), calls // 4 or 1, repeats), strict=True):
        print(f"  {name:<14} {ns:>7.0f}   (construction, once per connection)")
    print(f"one-shot / bound: goal <= {GOAL}x: {'met' if all(verdicts) else 'NOT MET'}")


if __name__ == "__main__":
    main()
