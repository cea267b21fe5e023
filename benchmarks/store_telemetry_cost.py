"""What telemetry costs the run store's delivery: off must cost nothing measurable.

Arms, each a long-lived worker process with a ``RunStore`` on one shared
redis-server (real, loopback; ``--store memory``: an ``agui_wire.memory.RunStore``
of its own, no Redis), fed the same cases in a rotated order per round:

* ``none``: ``opentelemetry`` not importable (``agui-wire`` without the ``otel`` extra);
* ``api``: the API installed, no SDK configured (what a process has by default);
* ``sdk``: an SDK ``MeterProvider`` (a reader that is never collected: the recording
  alone) and ``TracerProvider`` (a batch span processor) set as the global providers;
* ``base`` and ``base-sdk`` (``--baseline DIR``): another checkout's ``src`` (the tree
  before the store recorded anything) with the API alone and with the SDK: the
  before/after, off and on.

Cases (a worker produces and reads in the same process, so its CPU is the store's
both sides: producer, tails, readers):

* ``burst``: one run of ``--burst`` events published as fast as the source gives
  them (appends of up to ``batch`` events), one reader (``subscribe``);
* ``paced``: ``--runs`` runs of ``--paced`` events, 1 ms apart (an append, a tail
  read and a delivered batch per event: the most telemetry calls per event), a
  reader each;
* ``fanout``: one run of ``--paced`` events 1 ms apart, ``--readers`` readers
  (a lag record per reader per batch when recording);
* ``http``: one run of ``--burst`` events, two SSE ``RunStore.response``s
  (in-process ASGI, the body counted per send when recording).

Reported: worker CPU per delivered event (``time.process_time``), the median per
arm, and each arm against ``none`` (or ``base``) as the median of per-round
ratios (the arms ran side by side, so drift hits all alike); Redis's CPU per
event beside it (``/proc``: the stamp is one more field per append); and Redis's
memory (``MEMORY USAGE``, every node) of a burst and a paced run per arm, and of
2,000 entries with a stamp every 1, 64 and 512 entries against none.

    .venv/bin/python benchmarks/store_telemetry_cost.py                        # ~4 min
    .venv/bin/python benchmarks/store_telemetry_cost.py --baseline /tmp/main   # before/after
    .venv/bin/python benchmarks/store_telemetry_cost.py --store memory         # in memory
    .venv/bin/python benchmarks/store_telemetry_cost.py --quick                # CI smoke run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from telemetry_cost import PRELUDE, table  # noqa: E402

from tests.redis.harness import RedisServer  # noqa: E402

PRELUDES = {**PRELUDE, "base": "", "base-sdk": PRELUDE["sdk"]}

# The worker: one store, one loop; a line of JSON in (a case), a line out (its CPU).
WORKER = """
    import asyncio, json, sys, time, uuid
    sys.path.insert(0, {src!r})
    URL = {url!r}
    MEMORY = {memory!r}  # the store in memory, else on Redis at URL

    def make_store():
        if MEMORY:
            from agui_wire.memory import RunStore
            return RunStore(ttl=30, batch=512)
        import redis.asyncio as aioredis
        from agui_wire.redis import RunStore
        return RunStore(aioredis.from_url(URL), ttl=30, batch=512)

    DELTA = {{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a token or two"}}

    def run_events(rid, n):
        yield {{"type": "RUN_STARTED", "threadId": "t", "runId": rid}}
        yield {{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}}
        for _ in range(n - 4):
            yield DELTA
        yield {{"type": "TEXT_MESSAGE_END", "messageId": "m"}}
        yield {{"type": "RUN_FINISHED", "threadId": "t", "runId": rid}}

    async def paced(rid, n, gate):
        await gate.wait()
        for event in run_events(rid, n):
            await asyncio.sleep(0.001)
            yield event

    async def burst(rid, n, gate):
        await gate.wait()
        for event in run_events(rid, n):
            yield event

    async def read(store, rid):
        got = 0
        async for _ in store.subscribe(rid):
            got += 1
        return got

    class Sink:
        def __init__(self):
            self.bytes = 0
            self.done = asyncio.Event()
        async def receive(self):
            await self.done.wait()
            return {{"type": "http.disconnect"}}
        async def send(self, message):
            self.bytes += len(message.get("body", b""))
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.done.set()

    async def respond(store, rid):
        sink = Sink()
        accept = [(b"accept", b"text/event-stream")]
        scope = {{"type": "http", "method": "GET", "path": "/", "headers": accept}}
        await store.response(rid)(scope, sink.receive, sink.send)
        return sink.bytes

    async def case(store, name, n, runs, readers):
        gate = asyncio.Event()
        ids = [f"bench-{{uuid.uuid4()}}" for _ in range(runs)]
        source = paced if name in ("paced", "fanout") else burst
        tasks = [await store.start(rid, source(rid, n, gate)) for rid in ids]
        if name == "http":
            reading = [asyncio.ensure_future(respond(store, ids[0])) for _ in range(readers)]
        else:
            reading = [
                asyncio.ensure_future(read(store, rid)) for rid in ids for _ in range(readers)
            ]
        await asyncio.sleep(0.05)  # every reader on its run's tail: all is delivered live
        start = time.process_time_ns()
        gate.set()
        got = await asyncio.gather(*reading)
        await asyncio.gather(*tasks)
        cpu = time.process_time_ns() - start
        delivered = n * runs * readers
        if name != "http":
            assert sum(got) == delivered, (got, delivered)
        return cpu, delivered, ids

    async def main():
        store = make_store()
        print("ready", flush=True)
        for line in sys.stdin:
            order = json.loads(line)
            cpu, delivered, ids = await case(
                store, order["case"], order["n"], order["runs"], order["readers"]
            )
            memory = 0
            if order.get("memory"):
                for rid in ids:  # (samples=0: every node, not an estimate from the first 5)
                    memory += await store.redis.memory_usage(store.stream_key(rid), samples=0)
            print(json.dumps({{"cpu_ns": cpu, "events": delivered, "memory": memory}}), flush=True)
        await store.aclose()

    asyncio.run(main())
"""


class Worker:
    def __init__(self, name: str, tree: Path, url: str, memory: bool) -> None:
        self.name = name
        code = textwrap.dedent(PRELUDES[name]) + textwrap.dedent(
            WORKER.format(src=str(tree / "src"), url=url, memory=memory)
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.close()
            raise RuntimeError(f"worker {name} did not start: {line!r}")

    def do(self, order: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(order) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} died")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def redis_cpu_ns(server: RedisServer) -> int:
    assert server.process is not None
    total = 0
    for task in Path(f"/proc/{server.process.pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[0])
    return total


def stamp_memory(url: str, entries: int = 2_000, payload: int = 40) -> dict[str, int]:
    """Redis's memory for one stream of ``entries`` event entries (``payload``-byte
    payloads, the store's ids), without stamps and with one every 1, 64 and 512
    entries (an append's last: paced, bursts of 64 and of 512)."""
    import redis

    client = redis.Redis.from_url(url)
    out = {}
    for every in (0, 1, 64, 512):
        key = f"memory-{every}"
        for i in range(1, entries + 1):
            fields = {b"p": b"x" * payload}
            if every and (i % every == 0 or i == entries):
                fields[b"t"] = str(time.time_ns() // 1_000_000).encode()
            client.xadd(key, fields, id=f"{i}-2")
        out["unstamped" if not every else f"stamp every {every}"] = client.memory_usage(
            key, samples=0
        )
        client.delete(key)
    client.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI smoke run: small cases, 1 round")
    p.add_argument("--rounds", type=int, help="timed rounds (default 7)")
    p.add_argument("--burst", type=int, default=20_000, help="events of a burst run")
    p.add_argument("--paced", type=int, default=200, help="events of a paced run")
    p.add_argument("--runs", type=int, default=20, help="paced runs at once")
    p.add_argument("--readers", type=int, default=10, help="readers of the fan-out run")
    p.add_argument("--baseline", type=Path, help="a tree whose store records nothing")
    p.add_argument("--json", metavar="FILE", help="also write every sample as JSON")
    p.add_argument("--store", choices=("redis", "memory"), default="redis", help="the store")
    args = p.parse_args()
    on_redis = args.store == "redis"
    if args.quick:
        args.burst, args.paced, args.runs, args.readers = 2_000, 40, 4, 3
    rounds = args.rounds or (1 if args.quick else 7)
    names = [*(["base", "base-sdk"] if args.baseline else []), "none", "api", "sdk"]
    trees = {name: args.baseline if name.startswith("base") else ROOT for name in names}
    reference = "base" if args.baseline else "none"
    cases = {
        "burst": {"n": args.burst, "runs": 1, "readers": 1},
        "paced": {"n": args.paced, "runs": args.runs, "readers": 1},
        "fanout": {"n": args.paced, "runs": 1, "readers": args.readers},
        "http": {"n": args.burst, "runs": 1, "readers": 2},
    }
    cpu: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    redis_cpu: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    memory: dict[str, dict[str, int]] = {name: {} for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        workers: list[Worker] = []
        try:
            stamps = stamp_memory(server.url)
            for name in names:
                print(f"starting {name}", file=sys.stderr)
                workers.append(Worker(name, trees[name], server.url, not on_redis))
            for worker in workers:  # one untimed pass each; Redis's memory per run kind
                for key in ("burst", "paced"):
                    out = worker.do({"case": key, **cases[key], "memory": on_redis})
                    memory[worker.name][key] = out["memory"] // cases[key]["runs"]
            for r in range(rounds):
                order = workers[r % len(workers) :] + workers[: r % len(workers)]
                for key, shape in cases.items():
                    for worker in order:
                        before = redis_cpu_ns(server)
                        out = worker.do({"case": key, **shape})
                        time.sleep(0.005)  # schedstat is brought up to date off the CPU
                        spent = redis_cpu_ns(server) - before
                        cpu[worker.name].setdefault(key, []).append(out["cpu_ns"] / out["events"])
                        redis_cpu[worker.name].setdefault(key, []).append(spent / out["events"])
                print(f"  round {r + 1}/{rounds}", file=sys.stderr)
        finally:
            for worker in workers:
                worker.close()
            server.stop()
    shapes = (
        f"burst {args.burst:,} events; paced {args.runs} runs x {args.paced} events 1 ms "
        f"apart; fan-out {args.readers} readers x {args.paced}; http 2 SSE responses x "
        f"{args.burst:,}"
    )
    print(
        f"\n{args.store} store CPU per delivered event, µs (median of {rounds} rounds; {shapes})\n"
    )
    print("\n".join(table(cpu, reference, "µs", 1000)))
    if on_redis:
        print("\nRedis CPU per delivered event, µs\n")
        print("\n".join(table(redis_cpu, reference, "µs", 1000)))
        print("\nRedis memory per run (MEMORY USAGE of its stream), bytes\n")
        for name in names:
            print(f"  {name:9} " + "  ".join(f"{k} {v:,}" for k, v in memory[name].items()))
        print("\nRedis memory of 2,000 entries of 40-byte payloads, bytes (ratio to unstamped)\n")
        for key, value in stamps.items():
            print(f"  {key:16} {value:9,}  {value / stamps['unstamped']:.3f}")
    if args.json:
        samples = {"cpu_ns": cpu, "redis_cpu_ns": redis_cpu, "memory": memory, "stamps": stamps}
        Path(args.json).write_text(json.dumps(samples, indent=1))


if __name__ == "__main__":
    main()
