"""A compact joiner of a long run beside a replica's other live runs.

    .venv/bin/python benchmarks/redis_fold_isolation.py [--events 200000] [--runs 200]
        [--interval 0.2] [--rounds 3] [--window 3] [--repeat 1] [--baseline DIR] [--quick]

Starts a redis-server (tests/redis/harness.py, loopback) and stores one run of
``--events`` text deltas. Then one replica (this process, one event loop, a
``RunStore`` built as docs/scaling.md builds it) runs ``--runs`` live runs, each
a delta every ``--interval`` seconds carrying its publish time, each read by one
local subscriber; ``--rounds`` times, after a quiet window of ``--window``
seconds, a compact joiner (``subscribe(compact=True)``) of the long run folds it
and takes its snapshot. Reported side by side, from the same runs in the same
process:

* publish -> deliver latency of the other runs' deltas (p50 / p99 / max), for
  deltas published in the quiet windows and for those published while a fold ran;
* the event loop's lag (a 10 ms ticker's oversleep, p99 / max) in both;
* the replica's garbage collections (young and full, per second) in both;
* the replica's and Redis's CPU (% of a core) in both;
* how long each fold took, and Redis's slowest command (``SLOWLOG``).

``--baseline DIR`` measures another checkout (its ``src``) in turn with this one,
``--repeat`` times each, so both see the same machine: each measurement is a
process of its own. ``--quick`` (CI) is small and asserts only what is not time:
every delta delivered in order, every fold's snapshot holding the whole message.
The machine is shared (2 cores): compare the columns of one run, not runs. The
measurements are kept in arrays of floats, not tuples, so the benchmark's own
bookkeeping sets off none of the replica's garbage collections (a tuple per
delta, 1,000 a second, set off 32 of the 35 young ones in 20 s of 200 runs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

Event = dict[str, Any]
LONG_RUN = "fold-isolation-long"
DELTA = "0123456."  # 8 bytes per delta of the long run


def long_run(n: int) -> list[Event]:
    events: list[Event] = [{"type": "RUN_STARTED", "threadId": "t", "runId": LONG_RUN}]
    events.append({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
    events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": DELTA}] * n
    events.append({"type": "TEXT_MESSAGE_END", "messageId": "m"})
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": LONG_RUN})
    return events


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def bench(
    url: str, events: int, runs: int, interval: float, rounds: int, window: float
) -> dict[str, Any]:
    import redis.asyncio as redis

    from agui_wire.redis import RunStore

    loader = RunStore(redis.from_url(url), ttl=600, lease=30)
    await loader.publish(LONG_RUN, long_run(events))
    await loader.aclose()
    await loader.redis.aclose()

    client = redis.from_url(url)
    store = RunStore(client, ttl=600, lease=30)  # as docs/scaling.md
    await client.config_set("slowlog-log-slower-than", 5000)
    await client.slowlog_reset()
    stop = asyncio.Event()
    # (published, latency), (when, oversleep), (when, generation) of a collection
    samples: tuple[array[float], array[float]] = (array("d"), array("d"))
    lags: tuple[array[float], array[float]] = (array("d"), array("d"))
    collections: tuple[array[float], array[float]] = (array("d"), array("d"))
    problems: list[str] = []

    def collected(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections[0].append(time.time())
            collections[1].append(info["generation"])

    gc.callbacks.append(collected)

    async def produce(run_id: str, offset: float) -> AsyncIterator[Event]:
        await asyncio.sleep(offset)
        yield {"type": "RUN_STARTED", "threadId": "bench", "runId": run_id}
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
        while not stop.is_set():
            await asyncio.sleep(interval)
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": repr(time.time())}
        yield {"type": "TEXT_MESSAGE_END", "messageId": "m"}
        yield {"type": "RUN_FINISHED", "threadId": "bench", "runId": run_id}

    async def live(n: int) -> None:
        run_id = f"fold-isolation-{os.getpid()}-{n}"  # (one Redis for every measurement)
        task = await store.start(run_id, produce(run_id, interval * n / runs))
        expected = 1
        async for event_id, event in store.subscribe(run_id):
            now = time.time()
            if event_id != expected:
                problems.append(f"{run_id}: id {event_id} after {expected - 1}")
            expected = event_id + 1
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                published = float(event["delta"])
                samples[0].append(published)
                samples[1].append(now - published)
        assert task is not None
        if await task != expected - 1:
            problems.append(f"{run_id}: produced {task.result()}, read {expected - 1}")

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            before = loop.time()
            await asyncio.sleep(0.01)
            lags[0].append(time.time())
            lags[1].append(loop.time() - before - 0.01)

    async def join() -> float:
        started = time.perf_counter()
        whole = ""
        async with contextlib.aclosing(store.subscribe(LONG_RUN, compact=True)) as joined:
            async for _, event in joined:  # the snapshot, then the end (the run ended)
                if event["type"] == "MESSAGES_SNAPSHOT":
                    whole = "".join(str(m.get("content", "")) for m in event["messages"])
        if whole != DELTA * events:
            problems.append(f"the snapshot holds {len(whole)} characters, not {events * 8}")
        return time.perf_counter() - started

    tasks = [asyncio.ensure_future(live(n)) for n in range(runs)]
    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(max(1.0, 3 * interval))  # every run started and read
    quiet: list[tuple[float, float]] = []
    folding: list[tuple[float, float]] = []
    durations: list[float] = []
    cpu = {"quiet": [0.0, 0.0, 0.0], "folding": [0.0, 0.0, 0.0]}  # seconds: wall, replica, Redis

    async def used() -> tuple[float, float, float]:
        info = await client.info("cpu")
        redis_cpu = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        return time.time(), time.process_time(), redis_cpu

    for _ in range(rounds):
        before = await used()
        await asyncio.sleep(window)
        after = await used()
        quiet.append((before[0], after[0]))
        durations.append(await join())
        done = await used()
        folding.append((after[0], done[0]))
        for name, a, b in (("quiet", before, after), ("folding", after, done)):
            cpu[name] = [total + y - x for total, x, y in zip(cpu[name], a, b, strict=True)]
    stop.set()
    await asyncio.gather(*tasks)
    await tick
    slow = sorted(await client.slowlog_get(128), key=lambda entry: -entry["duration"])
    slowest = slow[0]["duration"] if slow else 0
    what = _command(slow[0]["command"]) if slow else ""
    await store.aclose()
    await client.aclose()
    gc.callbacks.remove(collected)

    def within(
        spans: list[tuple[float, float]], items: tuple[array[float], array[float]]
    ) -> list[float]:
        return [
            value for at, value in zip(*items, strict=True) if any(a <= at < b for a, b in spans)
        ]

    def rate(spans: list[tuple[float, float]], young: bool) -> float:
        n = sum(1 for g in within(spans, collections) if (g < 2) == young)
        return n / sum(b - a for a, b in spans)

    return {
        "quiet": within(quiet, samples),
        "folding": within(folding, samples),
        "lag_quiet": within(quiet, lags),
        "lag_folding": within(folding, lags),
        "gc": {
            w: [rate(spans, True), rate(spans, False)]
            for w, spans in (("quiet", quiet), ("folding", folding))
        },
        "durations": durations,
        "cpu": cpu,
        "slowest_ms": slowest / 1000,
        "slowest_what": what,
        "problems": problems,
        "delivered": len(samples[0]),
    }


def _command(command: Any) -> str:
    """A SLOWLOG entry's command, named (a script by its first words)."""
    words = bytes(command).split() if isinstance(command, bytes) else str(command).split()
    return " ".join(w.decode("ascii", "replace") if isinstance(w, bytes) else w for w in words[:2])


def _add(a: dict[str, list[float]], b: dict[str, list[float]]) -> dict[str, list[float]]:
    return {k: [x + y for x, y in zip(a[k], b[k], strict=True)] for k in a}


def child(url: str, args: argparse.Namespace, src: Path) -> dict[str, Any]:
    """One measurement in a process of its own, importing agui_wire from ``src``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)])}
    sizes = [args.events, args.runs, args.interval, args.rounds, args.window]
    out = subprocess.run(
        [sys.executable, __file__, "--child", url, *map(str, sizes)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="deltas of the long run")
    parser.add_argument("--runs", type=int, default=200, help="other live runs")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between deltas")
    parser.add_argument("--rounds", type=int, default=3, help="folds per measurement")
    parser.add_argument("--window", type=float, default=3.0, help="quiet seconds before a fold")
    parser.add_argument("--repeat", type=int, default=1, help="measurements per tree")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout, measured in turn with this one"
    )
    parser.add_argument("--quick", action="store_true", help="CI: small, checks no time")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        url, events, runs, interval, rounds, window = args.child
        result = asyncio.run(
            bench(url, int(events), int(runs), float(interval), int(rounds), float(window))
        )
        print(json.dumps(result), flush=True)
        return
    if args.quick:
        args.events, args.runs, args.rounds, args.window = 20_000, 20, 1, 1.0

    from tests.redis.harness import RedisServer

    trees = {"this tree": ROOT / "src"}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve() / "src", **trees}
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            for _ in range(args.repeat):  # in turn, so both see the same machine
                for name, src in trees.items():
                    r = child(server.url, args, src)
                    total = results.setdefault(
                        name, {k: [] for k in r if not k.startswith("slowest")}
                    )
                    for key, value in r.items():
                        if key == "slowest_ms":
                            if value >= total.get("slowest", 0.0):
                                total["slowest"] = value
                                total["slowest_what"] = r["slowest_what"]
                        elif key == "slowest_what":
                            pass
                        elif key in ("cpu", "gc"):
                            total[key] = value if not total[key] else _add(total[key], value)
                        elif key != "delivered":
                            total[key] += value
        finally:
            server.stop()
    print(
        f"{args.runs} live runs, a delta every {args.interval:g} s each "
        f"({args.runs / args.interval:,.0f} events/s); a compact joiner of a "
        f"{args.events:,}-event run, {args.rounds * args.repeat} folds per tree; "
        f"{os.cpu_count()} CPUs (shared)\n"
    )
    print(f"{'':<22}" + "".join(f"{name:>32}" for name in results))
    print(f"{'other runs':<22}" + f"{'quiet':>10} {'folding':>10} {'ratio':>10}" * len(results))
    rows: list[tuple[str, str, float]] = [
        ("latency p50", "", 0.5),
        ("latency p99", "", 0.99),
        ("latency max", "", 1.0),
        ("event-loop lag p99", "lag_", 0.99),
        ("event-loop lag max", "lag_", 1.0),
    ]
    for label, prefix, q in rows:
        line = f"{label:<22}"
        for r in results.values():
            a = percentile(r[prefix + "quiet"], q) * 1e3
            b = percentile(r[prefix + "folding"], q) * 1e3
            line += f"{a:>8.1f}ms {b:>8.1f}ms {b / a:>9.2f}x"
        print(line)
    for label, column in (("replica CPU, % of core", 1), ("Redis CPU, % of core", 2)):
        line = f"{label:<22}"
        for r in results.values():
            a, b = (100 * r["cpu"][w][column] / r["cpu"][w][0] for w in ("quiet", "folding"))
            line += f"{a:>9.0f}% {b:>9.0f}% {b / a:>9.2f}x"
        print(line)
    for label, column in (("young GCs per s", 0), ("full GCs per s", 1)):
        line = f"{label:<22}"
        for r in results.values():
            a, b = (r["gc"][w][column] / args.repeat for w in ("quiet", "folding"))
            line += f"{a:>10.2f} {b:>10.2f} {'':>10}"
        print(line)
    line = f"{'deltas measured':<22}"
    for r in results.values():
        line += f"{len(r['quiet']):>10,} {len(r['folding']):>10,} {'':>10}"
    print(line)
    print()
    problems = False
    for name, r in results.items():
        folds = ", ".join(f"{d:.2f}" for d in r["durations"])
        print(
            f"{name}: fold of {args.events:,} events {folds} s; Redis's slowest command "
            + (f"{r['slowest']:.1f} ms ({r['slowest_what']})" if r["slowest"] else "under 5 ms")
        )
        if r["problems"]:
            print(f"{name} FAILED:", r["problems"][:5])
            problems = True
        if not (r["quiet"] and r["folding"]):
            print(f"{name} FAILED: no delta measured in a window")
            problems = True
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
