#!/usr/bin/env python
"""What building an encoder costs, ours against the official SDK's, in one run.

    python benchmarks/construct.py [--quick] [--rounds N]

Some frameworks build an encoder per event (pydantic-ai's ``_event_encoder`` is a
property), so construction is on the per-event path. Contenders, each called with
the same ``Accept`` strings in turn (SSE, protobuf, a browser's header):

* ``sdk``: ``ag_ui.encoder.EventEncoder(accept=a)`` (ignores ``accept``);
* ``compat``: ``agui_wire.compat.SDKEventEncoder(accept=a)`` (what ``install()`` puts in place);
* ``ours``: ``agui_wire.EventEncoder(a)``.

Then the per-event path of pydantic-ai: construct, then ``encode`` one
TEXT_MESSAGE_CONTENT event, for the SDK (SSE) and for compat (SSE and protobuf).

Method: each contender is calibrated to ~20 ms per sample; ``--rounds`` rounds
time every contender once, round-robin with the start rotated per round. Reported:
median ns per call, and for each contender the median of its per-round ratios to
``sdk`` (neighbours in time, so load on the shared machine cancels out).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from ag_ui.core import TextMessageContentEvent
from ag_ui.encoder import EventEncoder as SDKEncoder

import agui_wire
from agui_wire import compat
from agui_wire._codec import selected

ACCEPTS = (
    "text/event-stream",
    agui_wire.PROTO_MEDIA_TYPE,
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
)
EVENT = TextMessageContentEvent(message_id="msg-1", delta="Hello, world")


def construct(factory: Callable[[str], object]) -> Callable[[int], None]:
    a, b, c = ACCEPTS

    def run(n: int) -> None:
        for _ in range(n):
            factory(a)
            factory(b)
            factory(c)

    return run


def per_event(factory: Callable[[str], object], accept: str) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            factory(accept).encode(EVENT)  # type: ignore[attr-defined]
            factory(accept).encode(EVENT)  # type: ignore[attr-defined]
            factory(accept).encode(EVENT)  # type: ignore[attr-defined]

    return run


GROUPS: dict[str, dict[str, Callable[[int], None]]] = {
    "construct (3 Accept headers)": {
        "sdk": construct(lambda a: SDKEncoder(accept=a)),
        "compat": construct(lambda a: compat.SDKEventEncoder(accept=a)),
        "ours": construct(lambda a: agui_wire.EventEncoder(a)),
    },
    "construct + encode one event (pydantic-ai's per-event path)": {
        "sdk": per_event(lambda a: SDKEncoder(accept=a), "text/event-stream"),
        "compat SSE": per_event(lambda a: compat.SDKEventEncoder(accept=a), "text/event-stream"),
        "compat protobuf": per_event(
            lambda a: compat.SDKEventEncoder(accept=a), agui_wire.PROTO_MEDIA_TYPE
        ),
    },
}


def calibrate(fn: Callable[[int], None], target: float) -> int:
    n = 1
    while True:
        start = time.perf_counter()
        fn(n)
        elapsed = time.perf_counter() - start
        if elapsed >= target:
            return n
        n *= 2 if elapsed < target / 4 else 1 + int(target / max(elapsed, 1e-9))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few short rounds (CI smoke run)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    rounds, target = (3, 0.005) if args.quick else (args.rounds, 0.02)
    print(f"agui_wire {agui_wire.__version__}, backend {selected.NAME}; {rounds} rounds")
    for title, contenders in GROUPS.items():
        names = list(contenders)
        reps = {name: calibrate(fn, target) for name, fn in contenders.items()}
        samples: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                gc.collect()
                start = time.perf_counter_ns()
                contenders[name](reps[name])
                samples[name].append((time.perf_counter_ns() - start) / (reps[name] * 3))
        base = names[0]
        print(f"\n{title}")
        print(f"  {'contender':<18} {'ns/call':>9} {'x sdk':>7}")
        for name in names:
            ratio = statistics.median(
                s / b for s, b in zip(samples[name], samples[base], strict=True)
            )
            print(f"  {name:<18} {statistics.median(samples[name]):>9.0f} {ratio:>7.2f}")


if __name__ == "__main__":
    main()
