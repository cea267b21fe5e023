"""The run store at production scale: many live runs on one replica.

    .venv/bin/python benchmarks/redis_scale.py [--runs 100 1000 10000] [--quick]

Starts a redis-server (tests/redis/harness.py, loopback). For each size N, one
*replica* process (this script with ``--replica``) builds its client exactly as
docs/scaling.md does (``redis.from_url``, redis-py's default pool) and a
``RunStore``, then starts N runs (``store.start``) and one local reader per run
(``store.subscribe``), all live at once: each run is RUN_STARTED, a text message
of ``--deltas`` deltas ``--interval`` seconds apart (each delta its publish time,
``time.time()`` when the producer yields it; runs start spread over one
interval), RUN_FINISHED. While they run, this process samples ``CLIENT LIST``
(the replica's connections to Redis). Reported per N:

* every event delivered with contiguous ids, every producer finished (checked);
* the most connections the replica held (the target: at most 32);
* replica CPU per delivered event (user + system time of the replica while its
  runs are live, producing and storing included, / events delivered);
* publish -> deliver latency p50 / p99 over every delta;
* Redis CPU per delivered event beside it (``INFO cpu``).

``--gc N`` raises the replica's first cyclic-GC threshold: with thousands of live
runs, Python's default (a collection every 700 allocations, the oldest generation
every 100 of those) rescans the live objects over and over.

``events/s`` is the rate the producers offer (runs / ``--interval``), ``wall``
the time from the first start to the last reader's end (a run alone takes
``deltas x interval``): when the replica's CPU cannot keep up with the offered
rate, events queue and the latency is that queue. The machine is shared (2
cores): numbers are indicative, and the growth from one N to the next within one
run is what to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def replica(url: str, runs: int, deltas: int, interval: float) -> dict[str, Any]:
    """One replica: ``runs`` producers and readers; returns what it measured."""
    import redis.asyncio as redis

    from agui_wire.redis import RunStore

    store = RunStore(redis.from_url(url), ttl=600, lease=30)  # as docs/scaling.md
    latencies: list[float] = []
    problems: list[str] = []

    async def produce(run_id: str, offset: float) -> Any:
        await asyncio.sleep(offset)
        yield {"type": "RUN_STARTED", "threadId": "bench", "runId": run_id}
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
        for _ in range(deltas):
            await asyncio.sleep(interval)
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": repr(time.time())}
        yield {"type": "TEXT_MESSAGE_END", "messageId": "m"}
        yield {"type": "RUN_FINISHED", "threadId": "bench", "runId": run_id}

    async def one(n: int) -> int:
        run_id = f"scale-{runs}-{n}"  # one Redis serves every size
        task = await store.start(run_id, produce(run_id, interval * max(n, 0) / runs))
        expected = 1
        async for event_id, event in store.subscribe(run_id):
            now = time.time()
            if event_id != expected:
                problems.append(f"{run_id}: id {event_id} after {expected - 1}")
            expected = event_id + 1
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                latencies.append(now - float(event["delta"]))
        assert task is not None
        produced = await task
        if produced != deltas + 4 or expected != deltas + 5:
            problems.append(f"{run_id}: produced {produced}, read {expected - 1}")
        return expected - 1

    await one(-1)  # warm-up: imports, scripts loaded, connections open
    latencies.clear()
    print("ready", flush=True)
    sys.stdin.readline()  # the parent samples Redis from here on
    cpu, wall = _cpu(), time.perf_counter()
    delivered = sum(await asyncio.gather(*(one(n) for n in range(runs))))
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    await store.aclose()
    latencies.sort()
    return {
        "delivered": delivered,
        "cpu": cpu,
        "wall": wall,
        "p50": statistics.median(latencies),
        "p99": latencies[int(len(latencies) * 0.99)],
        "problems": problems[:5],
        "problem_count": len(problems),
    }


def measure(url: str, runs: int, deltas: int, interval: float, threshold: int) -> dict[str, Any]:
    import redis

    admin = redis.Redis.from_url(url)
    base = len(admin.client_list())  # admin itself (the replica not started yet)
    child = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--replica",
            url,
            str(runs),
            str(deltas),
            str(interval),
            str(threshold),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    redis_cpu = _redis_cpu(admin)
    child.stdin.write("go\n")
    child.stdin.flush()
    peak = 0
    while child.poll() is None:
        peak = max(peak, len(admin.client_list()) - base)
        time.sleep(0.2)
    result = json.loads(child.stdout.read().strip().splitlines()[-1])
    result["connections"] = peak
    result["redis_cpu"] = _redis_cpu(admin) - redis_cpu
    admin.close()
    return result


def _redis_cpu(admin: Any) -> float:
    info = admin.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--deltas", type=int, default=10)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--quick", action="store_true", help="CI size: 100 and 1,000 runs, short")
    parser.add_argument(
        "--gc",
        type=int,
        default=0,
        help="the replica's first cyclic-GC threshold (gc.set_threshold(N, 20, 100)); "
        "0: Python's default (700, 10, 10)",
    )
    parser.add_argument("--replica", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replica:
        url, runs, deltas, interval, threshold = args.replica
        if int(threshold):
            gc.set_threshold(int(threshold), 20, 100)
        result = asyncio.run(replica(url, int(runs), int(deltas), float(interval)))
        print(json.dumps(result), flush=True)
        return
    if args.quick:
        args.runs, args.deltas, args.interval = [100, 1000], 5, 0.5

    from tests.redis.harness import RedisServer

    print(
        f"{args.deltas} deltas per run, {args.interval:g} s apart; one replica, one local "
        f"reader per run; GC threshold {args.gc or 'default'}; {os.cpu_count()} CPUs "
        "(shared)\n"
    )
    header = (
        f"{'runs':>7} {'events':>9} {'events/s':>9} {'wall':>6} {'conns':>6} {'CPU/event':>10} "
        f"{'Redis CPU/ev':>13} {'p50':>9} {'p99':>9}  checks"
    )
    print(header)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            for runs in args.runs:
                r = measure(server.url, runs, args.deltas, args.interval, args.gc)
                ok = r["problem_count"] == 0 and r["delivered"] == runs * (args.deltas + 4)
                ok = ok and r["connections"] <= 32
                failed |= not ok
                ideal = runs * args.deltas / (args.deltas * args.interval)  # events/s offered
                print(
                    f"{runs:>7,} {r['delivered']:>9,} {ideal:>9,.0f} {r['wall']:>5.1f}s "
                    f"{r['connections']:>6} {r['cpu'] / r['delivered'] * 1e6:>8.1f}us "
                    f"{r['redis_cpu'] / r['delivered'] * 1e6:>11.1f}us "
                    f"{r['p50'] * 1e3:>7.1f}ms {r['p99'] * 1e3:>7.1f}ms  "
                    + ("ok" if ok else f"FAILED {r['problems']}"),
                    flush=True,
                )
        finally:
            server.stop()
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
