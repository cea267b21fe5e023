"""What ``RunStore(replica_acks=1)`` costs per event, side by side with the default (0).

    .venv/bin/python benchmarks/redis_durability.py [--runs 100] [--events 300]
        [--rate 50] [--burst 20000] [--repeat 3] [--json FILE]
    .venv/bin/python benchmarks/redis_durability.py --quick          # CI: checks only

A redis-server master and a replica of it (``--replicaof``), each on a free
loopback port, started by this script. Each repeat runs every workload twice, back
to back, with ``replica_acks=0`` (the master's reply is the acknowledgement) and
``replica_acks=1`` (a ``WAIT 1`` after each round trip of appends: an event counts
as stored once the replica has it, so a failover to it loses none), on a store of
its own, in this process:

* ``paced``: ``--runs`` runs live at once, each ``--events`` events ``1/--rate`` s
  apart (a streaming agent): per event, this process's CPU, the master's and the
  replica's (``INFO cpu``), and the latency of the producer's appends (one round
  trip: sent -> acknowledged, p50/p99), which is what ``WAIT`` adds to.
* ``burst``: one run of ``--burst`` events published as fast as the store takes them
  (appends batched while one is in flight): events per second and CPU per event.

Every run is read back (``XLEN``): every event stored once, or the benchmark fails.
The machine is shared: compare the two rows of a workload, taken back to back;
``ratio`` is acks=1 / acks=0 per repeat, summarised as median (min-max).
``--quick`` (CI) asserts nothing about time: it fails if an event is missing or a
producer does not finish in either mode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu(info: dict[str, Any]) -> float:
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


async def _servers_cpu(master: Any, replica: Any) -> tuple[float, float]:
    return _cpu(await master.info("cpu")), _cpu(await replica.info("cpu"))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Appends:
    """The producers' append round trips (sent -> acknowledged) and events stored,
    timed around ``Producer.append`` (the store's one call per round trip of events)."""

    def __init__(self) -> None:
        from agui_wire.redis import _producer

        self.module = _producer
        self.original = _producer.Producer.append
        self.latencies: list[float] = []
        self.events = 0

    def __enter__(self) -> _Appends:
        original, latencies = self.original, self.latencies

        async def timed(producer: Any, first: int, payloads: list[bytes], *rest: Any) -> None:
            began = time.perf_counter()
            await original(producer, first, payloads, *rest)
            latencies.append(time.perf_counter() - began)
            self.events += len(payloads)

        self.module.Producer.append = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self.module.Producer.append = self.original  # type: ignore[method-assign]


async def workload(
    url: str, replica_url: str, acks: int, kind: str, args: argparse.Namespace, tag: str
) -> dict[str, Any]:
    import redis.asyncio as aioredis

    from agui_wire.redis import RunStore

    master = aioredis.from_url(url)
    replica = aioredis.from_url(replica_url)
    store = RunStore(master, replica_acks=acks)
    started = {"type": "RUN_STARTED", "threadId": "b", "runId": "r"}
    finished = {"type": "RUN_FINISHED", "threadId": "b", "runId": "r"}

    async def paced(n: int, interval: float) -> Any:
        yield started
        for i in range(n):
            await asyncio.sleep(interval)
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"token {i} "}
        yield finished

    def burst(n: int) -> Any:
        yield started
        for i in range(n):
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": f"token {i} "}
        yield finished

    if kind == "paced":
        ids = [f"{tag}-{acks}-{i}" for i in range(args.runs)]
        expected = args.events + 2
    else:
        ids = [f"{tag}-{acks}-burst"]
        expected = args.burst + 2
    before_servers = await _servers_cpu(master, replica)
    before = time.process_time()
    began = time.perf_counter()
    with _Appends() as appends:
        if kind == "paced":
            counts = await asyncio.gather(
                *(store.publish(i, paced(args.events, 1 / args.rate)) for i in ids)
            )
        else:
            counts = [await store.publish(ids[0], burst(args.burst))]
    wall = time.perf_counter() - began
    cpu = time.process_time() - before
    after_servers = await _servers_cpu(master, replica)
    problems = [
        f"{i}: published {c} of {expected}"
        for i, c in zip(ids, counts, strict=True)
        if c != expected
    ]
    for i in ids:
        stored = await master.xlen(store.stream_key(i))
        if stored != expected + 1:  # and the end marker
            problems.append(f"{i}: {stored - 1} events stored of {expected}")
    events = len(ids) * expected
    await store.aclose()
    await master.aclose()
    await replica.aclose()
    return {
        "acks": acks,
        "kind": kind,
        "events": events,
        "client_us": cpu / events * 1e6,
        "master_us": (after_servers[0] - before_servers[0]) / events * 1e6,
        "replica_us": (after_servers[1] - before_servers[1]) / events * 1e6,
        "append_p50_ms": _percentile(appends.latencies, 0.5) * 1e3,
        "append_p99_ms": _percentile(appends.latencies, 0.99) * 1e3,
        "events_per_append": appends.events / max(1, len(appends.latencies)),
        "events_per_s": events / wall,
        "problems": problems,
    }


def _start(directory: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    from tests.redis.harness import _ping, redis_server_binary

    directory.mkdir()
    process = subprocess.Popen(
        [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(directory),
            "--save",
            "",
            "--appendonly",
            "no",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 10
    while not _ping(port):
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("redis-server did not start")
        time.sleep(0.02)
    return process


async def _linked(replica_url: str) -> None:
    import redis.asyncio as aioredis

    replica = aioredis.from_url(replica_url)
    try:
        while (await replica.info("replication")).get("master_link_status") != "up":
            await asyncio.sleep(0.05)
    finally:
        await replica.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true", help="CI: small sizes, checks only")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.events, args.rate, args.burst, args.repeat = 10, 30, 100.0, 2000, 1
    from tests.redis.harness import free_port

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        port, replica_port = free_port(), free_port()
        master = _start(Path(tmp) / "master", port)
        replica = _start(Path(tmp) / "replica", replica_port, "--replicaof", "127.0.0.1", str(port))
        url = f"redis://127.0.0.1:{port}/0"
        replica_url = f"redis://127.0.0.1:{replica_port}/0"
        try:
            asyncio.run(_linked(replica_url))
            for repeat in range(args.repeat):
                for kind in ("paced", "burst"):
                    for acks in (0, 1):
                        row = asyncio.run(
                            workload(url, replica_url, acks, kind, args, f"r{repeat}")
                        )
                        row["repeat"] = repeat
                        rows.append(row)
        finally:
            for process in (replica, master):
                process.terminate()
                process.wait(timeout=10)
    problems = [p for row in rows for p in row["problems"]]
    _report(rows, args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    if problems:
        print("\nPROBLEMS:\n  " + "\n  ".join(problems[:20]))
        return 1
    return 0


def _report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\nreplica_acks 0 vs 1, one master and one replica on loopback; paced: {args.runs} runs "
        f"x {args.events} events at {args.rate:g}/s; burst: one run of {args.burst:,} events"
    )
    columns = (
        "workload  acks  client us/ev  master us/ev  replica us/ev  append p50/p99 ms"
        "  ev/append    events/s"
    )
    print(columns)
    for kind in ("paced", "burst"):
        for acks in (0, 1):
            mine = [r for r in rows if r["kind"] == kind and r["acks"] == acks]

            def med(key: str, mine: list[dict[str, Any]] = mine) -> float:
                return statistics.median(r[key] for r in mine)

            print(
                f"{kind:8}  {acks:>4}  {med('client_us'):>12.1f}  {med('master_us'):>12.1f}"
                f"  {med('replica_us'):>13.1f}  {med('append_p50_ms'):>8.2f}/"
                f"{med('append_p99_ms'):<8.2f}  {med('events_per_append'):>9.1f}"
                f"  {med('events_per_s'):>10,.0f}"
            )
        for key, label in (
            ("client_us", "client CPU"),
            ("master_us", "master CPU"),
            ("append_p50_ms", "append p50"),
            ("events_per_s", "events/s"),
        ):
            ratios = []
            for repeat in range(args.repeat):
                pair = {
                    r["acks"]: r[key] for r in rows if r["kind"] == kind and r["repeat"] == repeat
                }
                if pair.get(0):
                    ratios.append(pair[1] / pair[0])
            if ratios:
                print(
                    f"  {kind} {label} ratio (acks 1 / 0): {statistics.median(ratios):.2f} "
                    f"({min(ratios):.2f}-{max(ratios):.2f})"
                )


if __name__ == "__main__":
    sys.exit(main())
