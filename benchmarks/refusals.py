#!/usr/bin/env python
"""What refusing bad input costs against accepting it, per decoder and encoder (issue 15).

    python benchmarks/refusals.py [--quick] [--rounds N] [--mib 8] [--only TEXT]

Inputs (each a good twin and a bad one of the same size):

* ``bad UTF-8 at the end``: a STATE_SNAPSHOT of ``--mib`` MiB (a list of small
  documents); the bad twin has one byte of its last string replaced by 0xFF.
  Protobuf: the frame; SSE: the ``data:`` event.
* ``10,000 levels deep``: a STATE_SNAPSHOT whose value is a list nested 10,000
  deep (74 KB as protobuf). Accepted with ``max_depth=10000``, refused
  (``LimitExceeded``) with the default 1024: the same bytes. SSE cannot carry it
  (1023 levels at most), so its row nests 1000 deep and is refused with
  ``max_depth=500``.

Decoders: the payload decoders (Cython, pure Python, upb) on the frame's payload;
``EventDecoder.feed`` (binary and SSE) and ``decode_proto`` on the whole frame;
the payload decoders run on whatever is built (the pure one always).

Encoders (``encode_sse``'s and ``encode_proto``'s, Cython when built and the pure
twins): an event refused for one value at its end (NaN, which the Cython SSE scan
finds itself; a lone surrogate, which it finds only after orjson refused the
event) against the same event with a valid value there. Two sizes: a small
``CUSTOM`` event (where a refusal is mostly the fixed cost of building and
raising an ``EncodeError`` in Python, ~1 us) and the ~50 KB ``STATE_SNAPSHOT`` of
benchmarks/workloads.py.

The ``floor`` row is raising an ``EncodeError`` in Python with no encoding at all,
against the Cython protobuf encoder's small accept (~0.3 us): about 2x already. A
small event's refusal is that plus the Python code that words it (the one place
each error text lives), a constant few microseconds, which is why the small-event
encoder rows stay above 3x while the 50 KB rows and every decoder row meet it.

Method: per row, the accept and the refuse call alternate round by round (each
sample calibrated to ``--min-time``); reported: the median time of each and the
median of the per-round ratios refuse/accept (neighbours in time, so load on the
shared machine cancels out). The goal is a ratio <= 3 on every row.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import agui_wire
from agui_wire import DecodeError, EncodeError, EventDecoder, decode_proto, encode_proto, encode_sse
from agui_wire._codec import proto_reader, proto_writer, selected, sse_writer, upb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import state_snapshot

PROTO = agui_wire.PROTO_MEDIA_TYPE
SSE = agui_wire.SSE_MEDIA_TYPE


def big_snapshot(mib: float) -> dict[str, Any]:
    docs = []
    size = 0
    i = 0
    while size < mib * (1 << 20):
        doc = {"id": f"doc-{i}", "title": "quarterly revenue forecast", "score": i * 0.5}
        doc["tags"] = ["north", "review"]
        docs.append(doc)
        size += 90
        i += 1
    return {"type": "STATE_SNAPSHOT", "snapshot": {"docs": docs}}


def spoil(data: bytes, marker: bytes) -> bytes:
    """``data`` with the first byte of the last ``marker`` set to 0xFF."""
    at = data.rindex(marker)
    return data[:at] + b"\xff" + data[at + 1 :]


def deep(levels: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return {"type": "STATE_SNAPSHOT", "snapshot": value}


Call = Callable[[], Any]


def refused(call: Call) -> Call:
    def run() -> None:
        try:
            call()
        except (DecodeError, EncodeError):
            return
        raise AssertionError("not refused")

    return run


def rows(mib: float, pure: bool) -> list[tuple[str, Call, Call]]:
    snap = big_snapshot(mib)
    frame = encode_proto(snap)
    bad_frame = spoil(frame, b"quarterly")
    payload, bad_payload = frame[4:], bad_frame[4:]
    event = encode_sse(snap)
    bad_event = spoil(event, b"quarterly")
    deep_frame = encode_proto(deep(10_000), max_depth=10_000)
    deep_payload = deep_frame[4:]
    deep_sse = encode_sse(deep(1000))
    payload_decoders: list[tuple[str, Callable[..., Any]]] = []
    if selected.NAME == "cython":
        payload_decoders.append(("cython decode_payload", selected.decode_payload))
    if pure:
        payload_decoders.append(("pure decode_payload", proto_reader.decode_payload))
    payload_decoders.append(("upb decode_payload", upb.decode_payload))
    out: list[tuple[str, Call, Call]] = []
    label = f"bad UTF-8 at the end, {len(frame) / (1 << 20):.1f} MiB"
    for name, dp in payload_decoders:
        out.append((f"{label}: {name}", lambda dp=dp: dp(payload), lambda dp=dp: dp(bad_payload)))
    out.append(
        (
            f"{label}: EventDecoder.feed (protobuf)",
            lambda: EventDecoder(PROTO).feed(frame),
            lambda: EventDecoder(PROTO).feed(bad_frame),
        )
    )
    out.append(
        (f"{label}: decode_proto", lambda: decode_proto(frame), lambda: decode_proto(bad_frame))
    )
    out.append(
        (
            f"{label}: EventDecoder.feed (SSE)",
            lambda: EventDecoder(SSE).feed(event),
            lambda: EventDecoder(SSE).feed(bad_event),
        )
    )
    label = f"10,000 levels deep, {len(deep_frame) / 1000:.0f} KB"
    for name, dp in payload_decoders:
        out.append(
            (
                f"{label}: {name}",
                lambda dp=dp: dp(deep_payload, max_depth=10_000),
                lambda dp=dp: dp(deep_payload),
            )
        )
    out.append(
        (
            f"{label}: EventDecoder.feed (protobuf)",
            lambda: EventDecoder(PROTO, max_depth=10_000).feed(deep_frame),
            lambda: EventDecoder(PROTO).feed(deep_frame),
        )
    )
    out.append(
        (
            f"{label}: decode_proto",
            lambda: decode_proto(deep_frame, max_depth=10_000),
            lambda: decode_proto(deep_frame),
        )
    )
    out.append(
        (
            "1,000 levels deep (SSE), max_depth 1024 vs 500: EventDecoder.feed",
            lambda: EventDecoder(SSE).feed(deep_sse),
            lambda: EventDecoder(SSE, max_depth=500).feed(deep_sse),
        )
    )
    out += encoder_rows(pure)
    return [(name, good, refused(bad)) for name, good, bad in out]


def encoder_rows(pure: bool) -> list[tuple[str, Call, Call]]:
    encoders: list[tuple[str, Callable[[Any], bytes]]] = []
    if selected.NAME == "cython":
        encoders += [
            ("cython SSE", selected.SSEEncoder().encode),
            ("cython protobuf", selected.encode_proto),
        ]
    if pure:
        encoders += [
            ("pure SSE", sse_writer.SSEEncoder().encode),
            ("pure protobuf", proto_writer.encode_proto),
        ]
    big = state_snapshot()

    def event(size: str, value: Any) -> dict[str, Any]:
        if size == "small":
            return {"type": "CUSTOM", "name": "n", "value": {"a": [1, "two", 3.0], "last": value}}
        out = copy.deepcopy(big)
        out["snapshot"]["documents"][-1]["last"] = value
        return out

    out: list[tuple[str, Call, Call]] = []
    if encoders:
        # the least any refusal in Python costs: raising one EncodeError, no encoding
        def floor() -> None:
            raise EncodeError("r", event_type="CUSTOM", path="/value/last")

        good_small = event("small", 0.5)
        name, encode = next((n, e) for n, e in encoders if n.endswith("protobuf"))
        out.append(
            (
                f"floor: raise an EncodeError, against {name}'s small accept",
                lambda e=encode: e(good_small),
                floor,
            )
        )
    for size in ("small", "50 KB"):
        for what, bad, fine in (("NaN", float("nan"), 0.5), ("lone surrogate", "a\ud800", "a")):
            good_event, bad_event = event(size, fine), event(size, bad)
            for name, encode in encoders:
                out.append(
                    (
                        f"encode, {size} event, {what} at the end: {name}",
                        lambda e=encode, g=good_event: e(g),
                        lambda e=encode, b=bad_event: e(b),
                    )
                )
    return out


def calibrate(fn: Call, target: float) -> int:
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= target:
            return n
        n *= 2 if elapsed < target / 4 else 1 + int(target / max(elapsed, 1e-9))


def sample(fn: Call, reps: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - start) / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 MiB, 3 rounds (CI smoke run)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--mib", type=float, default=8.0, help="size of the big frame")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per sample")
    parser.add_argument("--no-pure", action="store_true", help="leave out the pure twins")
    parser.add_argument("--only", default="", help="only the rows whose name holds this text")
    args = parser.parse_args()
    rounds, mib, target = (3, 1.0, 0.02) if args.quick else (args.rounds, args.mib, args.min_time)
    warnings.simplefilter("ignore")
    print(f"agui_wire {agui_wire.__version__}, backend {selected.NAME}; {rounds} rounds (CPU time)")
    print(f"  {'input: decoder or encoder':<72} {'accept':>10} {'refuse':>10} {'ratio':>6}")
    worst = 0.0
    for name, good, bad in rows(mib, not args.no_pure):
        if args.only not in name:
            continue
        reps = {id(f): calibrate(f, target) for f in (good, bad)}
        accept: list[float] = []
        refuse: list[float] = []
        for r in range(rounds):
            pair = (good, bad) if r % 2 == 0 else (bad, good)
            for fn in pair:
                (accept if fn is good else refuse).append(sample(fn, reps[id(fn)]))
        ratio = statistics.median(b / a for a, b in zip(accept, refuse, strict=True))
        worst = max(worst, ratio)
        print(
            f"  {name:<72} {statistics.median(accept) * 1e6:>8.1f}us "
            f"{statistics.median(refuse) * 1e6:>8.1f}us {ratio:>6.2f}"
        )
    print(f"worst ratio {worst:.2f} (goal <= 3: {'met' if worst <= 3 else 'NOT MET'})")


if __name__ == "__main__":
    main()
