"""What the run store costs this process per event, on each backend, and against
another checkout of the tree (``--baseline DIR``): the before/after of a change.

Arms, each a fresh process per case and round (``python -c``, its ``PYTHONPATH``
the arm's ``src``), every arm once per round in a rotated order: ``memory``
(``agui_wire.memory.RunStore``), ``redis`` (``agui_wire.redis.RunStore`` on one
redis-server this script starts, tests/redis/harness.py, loopback), and with
``--baseline DIR`` ``base-redis`` (DIR's own ``agui_wire.redis``, e.g. the tree
before the change).

Cases (``--events`` N per run), each measured as this process's CPU time (user +
system, ``time.process_time``) per event, Redis's CPU not counted:

* ``produce``: ``publish`` of a burst of N events (an async generator), to its end;
* ``replay``: ``subscribe`` of that ended run, every event;
* ``response``: ``response()`` of it as SSE, the ASGI app called directly, to EOF;
* ``fan-out``: one live run of N events read by 10 subscribers at once (CPU per
  delivered event: producing included).

Reported: the median per arm, and each arm against ``redis`` (or ``base-redis``)
as the median of per-round ratios (the arms ran side by side, so drift hits all
alike). The machine is shared: compare ratios, not absolute numbers.

    .venv/bin/python benchmarks/runstore_cost.py                       # ~2 min
    .venv/bin/python benchmarks/runstore_cost.py --baseline /tmp/base  # before/after
    .venv/bin/python benchmarks/runstore_cost.py --quick               # CI smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ("produce", "replay", "response", "fan-out")

# One case in a fresh process: prints the CPU seconds it took and the events it did.
PROGRAM = """
import asyncio, json, sys, time, uuid
backend, case, n, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
RUN = f"run-{uuid.uuid4()}"  # one Redis serves every process: a run id of its own
cpu = time.process_time  # (getrusage counts in scheduler ticks here: 10 ms)

EVENTS = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
EVENTS += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "token %d " % i}
           for i in range(n - 2)]
EVENTS += [{"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]

async def burst():
    for event in EVENTS:
        yield event

async def main():
    client = None
    if backend == "memory":
        from agui_wire.memory import RunStore
        store = RunStore()
    else:
        import redis.asyncio as aioredis
        from agui_wire.redis import RunStore
        client = aioredis.from_url(url)
        store = RunStore(client)
    try:
        if case != "produce":
            if case == "fan-out":
                gate = asyncio.Event()
                async def gated():
                    await gate.wait()
                    async for event in burst():
                        yield event
                await store.start(RUN, gated())
            else:
                await store.publish(RUN, burst())
        start = cpu()
        if case == "produce":
            await store.publish(RUN, burst())
            done = n
        elif case == "replay":
            done = 0
            async for _ in store.subscribe(RUN):
                done += 1
        elif case == "response":
            size = 0
            async def receive():
                await asyncio.Event().wait()
            async def send(message):
                nonlocal size
                size += len(message.get("body", b""))
            scope = {"type": "http", "method": "GET", "headers": [
                (b"accept", b"text/event-stream")], "query_string": b""}
            await store.response(RUN)(scope, receive, send)
            done = n
        else:
            async def read():
                count = 0
                async for _ in store.subscribe(RUN):
                    count += 1
                return count
            readers = [asyncio.ensure_future(read()) for _ in range(10)]
            await asyncio.sleep(0.2)  # all attached
            start = cpu()
            gate.set()
            done = sum(await asyncio.gather(*readers))
        took = cpu() - start
    finally:
        await store.aclose()
        if client is not None:
            await client.aclose()
    print(json.dumps({"cpu": took, "events": done}))

asyncio.run(main())
"""


def measure(tree: Path, backend: str, case: str, n: int, url: str) -> float:
    """Microseconds of CPU per event of one case in a fresh process of ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAM), backend, case, str(n), url],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return 1e6 * result["cpu"] / result["events"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=20_000, help="events per run")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--baseline", type=Path, help="another checkout (its own src)")
    p.add_argument("--quick", action="store_true", help="CI smoke run: 2,000 events, 1 round")
    args = p.parse_args()
    n, rounds = (2_000, 1) if args.quick else (args.events, args.rounds)
    arms = {"memory": (ROOT, "memory"), "redis": (ROOT, "redis")}
    if args.baseline:
        arms["base-redis"] = (args.baseline.resolve(), "redis")
    reference = "base-redis" if args.baseline else "redis"
    names = list(arms)
    samples: dict[str, dict[str, list[float]]] = {a: {c: [] for c in CASES} for a in names}
    from tests.redis.harness import RedisServer

    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            for r in range(rounds):
                for case in CASES:
                    for name in names[r % len(names) :] + names[: r % len(names)]:
                        tree, backend = arms[name]
                        samples[name][case].append(measure(tree, backend, case, n, server.url))
                print(f"round {r + 1}/{rounds} done", file=sys.stderr)
        finally:
            server.stop()
    print(
        f"\nrun store: this process's CPU per event, µs ({n:,}-event runs, median of "
        f"{rounds} rounds); ratio: median of per-round ratios against {reference}\n"
    )
    against = [f"{a} / {reference}" for a in names if a != reference]
    print(f"| case | {' | '.join(names)} | {' | '.join(against)} |")
    print("|" + "---|" * (1 + 2 * len(names) - 1))
    for case in CASES:
        medians = [f"{statistics.median(samples[a][case]):.2f}" for a in names]
        ratios = [
            statistics.median(
                x / y for x, y in zip(samples[a][case], samples[reference][case], strict=True)
            )
            for a in names
            if a != reference
        ]
        print(f"| {case} | {' | '.join(medians)} | {' | '.join(f'{x:.2f}x' for x in ratios)} |")


if __name__ == "__main__":
    main()
