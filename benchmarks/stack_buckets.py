"""Where a replica's CPU goes: sampled stacks (py-spy's raw collapsed format) or a
cProfile dump, summed into the parts of the run store's hot path.

    .venv/bin/python benchmarks/stack_buckets.py STACKS.txt [--us-per-event X]

Strategy: a sample belongs to one bucket. Its innermost frame decides when it is
asyncio's own code (the loop, tasks, futures, timers, events, queues, ``wait_for``:
the cost of a wakeup, whoever asked for it; "by who awaited" says who did), but a
socket's read or write counts for the command that needed it; otherwise the
innermost frame of agui_wire or of the benchmark decides (redis-py's and hiredis's
frames count for the agui_wire frame that called them, so the XREAD's reply parsing
is told from a command lane's). A frame of ``OUTER`` anywhere in the stack decides
before that (a batch's decode, with the framing it does for the decoder).
benchmarks/redis_throughput.py --profile prints this for both of its rows; this
file's main re-reads a saved profile.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path
from typing import Any

# (file part, function) -> bucket; ``*`` any function of the file. First match wins,
# looked up from the innermost agui_wire/benchmark frame outwards.
PRODUCER = "producer side (Source, Producer.run, Appends, admit: encode)"
SCRIPTS = "script calls (append/renew args and replies)"
LANES = "command lanes (pipeline, pack, socket, replies)"
XREAD_SEND = "XREAD building and sending"
XREAD_PARSE = "XREAD reply parsing (hiredis)"
BATCH = "batch building (entries, Batch, _dispatch)"
DECODE = "decode (Batch.events)"
DISPATCH = "dispatch (inbox, subscribe, ids)"
LOOP = "task wakeups and the loop (asyncio)"
RESPONSE = "response writes"
TELEMETRY = "telemetry (agui_wire._observe)"
SEND = "socket writes to Redis (pipelines and XREADs: redis-py runs each in a task)"
OTHER = "lease checks, watchdog, other store code"
AGENT = "workload: the producers' generator"
READER = "workload: the readers (checks, latency)"
ENCODE = "workload: encode (pump)"
# py-spy shows a collection under the GC callback's frame: these samples are the GC's
PROBES = "the cyclic GC (under the benchmark's GC callback) and the loop-lag probe"
GC = "the cyclic GC (gc_collect_main: seen with --native only)"
ORDER = [
    AGENT,
    ENCODE,
    READER,
    PROBES,
    PRODUCER,
    SCRIPTS,
    LANES,
    XREAD_SEND,
    XREAD_PARSE,
    BATCH,
    DECODE,
    DISPATCH,
    SEND,
    LOOP,
    GC,
    RESPONSE,
    TELEMETRY,
    OTHER,
    "not in Python code (GC, interpreter)",
]

W = "agui_wire/"
R = W + "redis/"
S = W + "_runstore/"
RULES: list[tuple[str, str, str]] = [
    ("redis_throughput.py", "_time_gc", PROBES),
    ("redis_throughput.py", "_lag", PROBES),
    ("redis_throughput.py", "produce", AGENT),
    ("redis_throughput.py", "pump", ENCODE),
    ("redis_throughput.py", "*", READER),
    (R + "_producer.py", "Producer.append", SCRIPTS),
    (R + "_producer.py", "Producer._check", SCRIPTS),
    (R + "_producer.py", "Producer._heartbeat", SCRIPTS),
    (R + "_producer.py", "*", PRODUCER),
    (S + "appends.py", "*", PRODUCER),
    (W + "_streaming.py", "Source", PRODUCER),
    (W + "_streaming.py", "event_type", PRODUCER),
    (R + "_calls.py", "Calls.script", SCRIPTS),
    (R + "_calls.py", "Calls.run_script", SCRIPTS),
    (R + "_pipeline.py", "*", LANES),
    (R + "_tails.py", "_Lane._dispatch", BATCH),
    (R + "_tails.py", "_pairs", BATCH),
    (R + "_tails.py", "_Lane._xread", XREAD_SEND),  # unless it is parsing (below)
    (R + "_tails.py", "_Lane._read", XREAD_SEND),
    (R + "_tails.py", "_Lane._loop", XREAD_SEND),
    (R + "_entries.py", "*", BATCH),
    (S + "batches.py", "Batch.items", DISPATCH),
    (S + "batches.py", "Batch.after", DISPATCH),
    (S + "batches.py", "*", BATCH),
    (S + "read.py", "*", DISPATCH),
    (S + "ids.py", "EventId", DISPATCH),
    (R + "_store.py", "RunStore.subscribe", DISPATCH),
    (W + "_observe.py", "*", TELEMETRY),
    (R, "*", OTHER),
    (W, "*", OTHER),
]
# A frame anywhere in the stack that decides the bucket, whatever runs inside it:
# a batch's decode (framing its payloads included), an HTTP response's writes.
OUTER: list[tuple[str, str, str]] = [
    (S + "batches.py", "Batch.events", DECODE),
    (S + "http.py", "*", RESPONSE),
    (W + "asgi.py", "*", RESPONSE),
    ("redis/asyncio/connection.py", "AbstractConnection._send_packed_command", SEND),
]
_ROOTS = ("run_replica", "replica")  # redis_throughput.py's frames around the loop
_IO = ("asyncio/selector_events.py", "asyncio/streams.py")
_ASYNCIO = ("asyncio/", "selectors.py", "threading.py", "uvloop/")
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def _frame(text: str) -> tuple[str, str]:
    m = _FRAME.match(text)
    return (m["func"], m["file"]) if m else (text, "")


def _rule(func: str, file: str, rules: list[tuple[str, str, str]]) -> str | None:
    """The first rule naming the function: as qualified, the nested function alone,
    or the function it is nested in (``f.<locals>.g``)."""
    outer, _, inner = func.partition(".<locals>.")
    names = (func, inner, outer) if inner else (func,)
    for part, name, bucket in rules:
        if part in file and any(
            name == "*" or n == name or n.startswith(name + ".") for n in names if n
        ):
            return bucket
    return None


def classify(stack: list[str]) -> tuple[str, str]:
    """A sample's bucket, and who asked (the innermost frame of ours, for the loop)."""
    frames = [_frame(f) for f in stack]  # outermost first
    if any(func == "gc_collect_main" for func, _ in frames):
        return GC, "-"  # whoever allocated when a collection was due
    for func, file in frames:
        bucket = _rule(func, file, OUTER)
        if bucket is not None:
            return bucket, "-"
    ours = None
    for func, file in reversed(frames):
        if func in _ROOTS:
            break  # the benchmark's main: whatever runs under it is the loop's
        bucket = _rule(func, file, RULES)
        if bucket is not None:
            ours = (func, file, bucket)
            break
    func, file = frames[-1] if frames else ("", "")
    caller = f"{ours[0]} ({ours[1].rsplit('/', 1)[-1]})" if ours else "-"
    if any(part in file for part in _IO) and ours is not None:
        pass  # a socket's read or write: the cost of the command that needed it
    elif any(part in file for part in _ASYNCIO):
        return LOOP, caller
    if ours is None:
        return ("not in Python code (GC, interpreter)" if not frames else LOOP), caller
    bucket = ours[2]
    if bucket == XREAD_SEND and any("read_response" in f for f, _ in frames):
        bucket = XREAD_PARSE
    return bucket, caller


def read_collapsed(path: Path) -> list[tuple[list[str], int]]:
    """py-spy's raw output: ``frame;frame;... count`` per line, outermost first."""
    samples = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():  # (--nonblocking: a rare torn line, skipped)
            samples.append((stack.split(";"), int(count)))
    return samples


def buckets(
    samples: list[tuple[list[str], int]],
) -> tuple[Counter[str], Counter[str], dict[str, Counter[str]], int]:
    """Samples per bucket, the loop's by who awaited, each bucket's leaf functions."""
    shares: Counter[str] = Counter()
    loop_callers: Counter[str] = Counter()
    leaves: dict[str, Counter[str]] = {}
    total = 0
    for stack, count in samples:
        bucket, caller = classify(stack)
        shares[bucket] += count
        if bucket == LOOP:
            loop_callers[caller] += count
        func, file = _frame(stack[-1]) if stack else ("-", "")
        leaves.setdefault(bucket, Counter())[f"{func} ({file.rsplit('/', 1)[-1]})"] += count
        total += count
    return shares, loop_callers, leaves, total


def print_buckets(
    samples: list[tuple[list[str], int]], us_per_event: float | None, detail: int = 3
) -> None:
    shares, callers, leaves, total = buckets(samples)
    print(f"   {total:,} samples")
    for name in ORDER:
        if shares[name]:
            share = shares[name] / total
            us = f"{share * us_per_event:7.1f} us/event" if us_per_event else ""
            print(f"   {share * 100:5.1f}%  {us}  {name}")
            for leaf, n in leaves[name].most_common(detail):
                print(f"   {'':>{23 if us_per_event else 8}}{n / total * 100:5.1f}%  {leaf}")
    top = ", ".join(f"{caller} {n / total * 100:.1f}%" for caller, n in callers.most_common(5) if n)
    print(f"   the loop's share, by who awaited: {top}")


# -- cProfile: the same buckets by function, and call counts ------------------------------

_BUILTINS = [
    ("hiredis.Reader", "hiredis reply parsing (all replies)"),
    ("pack_commands", "command packing (agui_wire._fast, C)"),
    ("decode_proto", "decode (C)"),
    ("encode", "encode (C)"),
    ("select.epoll", LOOP),
    ("socket", "socket calls"),
    ("_asyncio.", LOOP),
    ("method 'send'", "socket calls"),
    ("method 'recv", "socket calls"),
]


def bucket_cprofile(stats: Any, delivered: int) -> None:
    """Own time by bucket, and the calls per delivered event of the busiest functions."""
    shares: Counter[str] = Counter()
    rows = []
    for (file, _, func), (_, ncalls, tottime, _, _) in stats.stats.items():
        if file == "~":
            bucket = next((b for key, b in _BUILTINS if key in func), "other C calls")
        elif any(part in file for part in _ASYNCIO):
            bucket = LOOP
        else:
            short = file.replace("\\", "/")
            bucket = next(
                (
                    b
                    for part, name, b in OUTER + RULES
                    if part in short and (name == "*" or name.rsplit(".", 1)[-1] == func)
                ),
                "other Python (redis-py, stdlib)",
            )
        shares[bucket] += tottime
        rows.append((tottime, ncalls, f"{func} ({file.rsplit('/', 1)[-1]})"))
    total = sum(shares.values())
    for name, t in shares.most_common():
        print(f"   {t / total * 100:5.1f}%  {t / delivered * 1e6:7.1f} us/event  {name}")
    print("   busiest functions (own time): calls per event, us per event")
    for tottime, ncalls, name in sorted(rows, reverse=True)[:15]:
        print(f"   {ncalls / delivered:8.3f}  {tottime / delivered * 1e6:7.2f}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stacks", type=Path)
    parser.add_argument("--us-per-event", type=float, help="the profiled run's CPU per event")
    parser.add_argument("--detail", type=int, default=3, help="leaf functions per bucket")
    args = parser.parse_args()
    print_buckets(read_collapsed(args.stacks), args.us_per_event, args.detail)


if __name__ == "__main__":
    main()
