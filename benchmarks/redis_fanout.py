"""The run store under load: one producer, N subscribers across two replicas.

    .venv/bin/python benchmarks/redis_fanout.py [--events 2000] [--subscribers 1 10 100]

Starts a redis-server and two uvicorn replicas of tests/redis/app.py (real
processes on loopback, tests/redis/harness.py). For each N and transport, N
subscribers (half on each replica) connect to a run that has not started yet;
replica A then publishes ``--events`` text deltas as fast as it can (a burst:
throughput) or 500 per second (paced: latency). Every subscriber reads its
whole body; a few decode it and compare each delta (its publish time) with the
time it arrived. Reported:

* delivered events/s: N x events / (first publish to last subscriber done);
* server CPU per delivered event: both replicas' CPU time (from /proc,
  including the producer's own work) / delivered events; Redis CPU beside it;
* publish -> delivery p50/p99 (paced run, decoded subscribers);
* Redis memory per 1,000 events of a realistic run (agui_wire.sample), stored as
  protobuf payloads (what RunStore stores) vs as SSE JSON, from MEMORY USAGE;
* resume latency: a GET with Last-Event-ID into a stored 5,000-event run, to
  the first byte of the first event, p50 over 50 tries, beside a fresh subscribe.

The machine is shared (2 cores): numbers are indicative, ratios within a run
are what to compare. The load generator runs on the same cores.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import redis  # noqa: E402

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, EventDecoder, encode_proto, encode_sse  # noqa: E402
from agui_wire._sample import realistic_run  # noqa: E402
from tests.redis.harness import RedisServer, Replica  # noqa: E402

SAMPLED = 4  # subscribers per run that decode and time every event


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far, in ns resolution (schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


class _Chunked:
    """A minimal HTTP/1.1 chunked-body reader (the load generator must be cheaper
    than the servers it measures: no HTTP client library per event)."""

    def __init__(self) -> None:
        self.buffer = b""
        self.done = False

    def feed(self, data: bytes) -> bytes:
        self.buffer += data
        out = []
        while True:
            line_end = self.buffer.find(b"\r\n")
            if line_end < 0:
                break
            size = int(self.buffer[:line_end].split(b";")[0], 16)
            if size == 0:
                self.done = True
                break
            if len(self.buffer) < line_end + 2 + size + 2:
                break
            out.append(self.buffer[line_end + 2 : line_end + 2 + size])
            self.buffer = self.buffer[line_end + 2 + size + 2 :]
        return b"".join(out)


async def get(port: int, path: str, headers: dict[str, str]) -> tuple[asyncio.StreamReader, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    writer.write(f"GET {path} HTTP/1.1\r\nhost: bench\r\n{head}\r\n".encode())
    status = await reader.readuntil(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200"), status[:200]
    assert b"transfer-encoding: chunked" in status.lower()
    return reader, writer


async def subscriber(
    port: int, path: str, accept: str, timed: bool, ready: asyncio.Event
) -> tuple[int, list[float]]:
    latencies: list[float] = []
    reader, writer = await get(port, path, {"accept": accept})
    ready.set()
    body = _Chunked()
    decoder = EventDecoder(accept) if timed else None
    size = 0
    while not body.done:
        data = await reader.read(262144)
        if not data:
            break
        chunk = body.feed(data)
        size += len(chunk)
        if decoder is not None and chunk:
            now = time.time()
            for event in decoder.feed(chunk):
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    if not latencies:
                        latencies.append(float(event["delta"]))  # the first publish time
                    latencies.append(now - float(event["delta"]))
    writer.close()
    return size, latencies


async def one_run(
    replicas: list[Replica], redis_pid: int, n: int, accept: str, events: int, delay: float
) -> dict[str, Any]:
    run_id = f"bench-{uuid.uuid4()}"
    async with httpx.AsyncClient(timeout=120) as client:
        r = await client.post(
            f"{replicas[0].url}/publish",
            params={"run": run_id, "events": events, "delay": delay, "hold": 0.5 + n * 0.02},
        )
        assert r.status_code == 202
        readies = [asyncio.Event() for _ in range(n)]
        tasks = [
            asyncio.ensure_future(
                subscriber(
                    replicas[i % 2].port,
                    f"/runs/{run_id}/events",
                    accept,
                    i < SAMPLED,
                    readies[i],
                )
            )
            for i in range(n)
        ]
        await asyncio.gather(*(e.wait() for e in readies))
        cpu0 = sum(cpu_seconds(r.pid) for r in replicas)
        redis0 = cpu_seconds(redis_pid)
        results = await asyncio.gather(*tasks)
        done = time.time()
        # From the first delta's publish time (it carries it) to the last body's end.
        elapsed = done - min(stamp for _, lat in results for stamp in lat[:1])
        cpu = sum(cpu_seconds(r.pid) for r in replicas) - cpu0
        redis_cpu = cpu_seconds(redis_pid) - redis0
    sizes = {size for size, _ in results}
    assert len(sizes) == 1, f"subscribers got different bodies: {sorted(sizes)[:5]}"
    latencies = sorted(x for _, lat in results for x in lat[1:])
    delivered = n * (events + 4)
    return {
        "delivered_per_s": delivered / elapsed,
        "cpu_us": cpu / delivered * 1e6,
        "redis_cpu_us": redis_cpu / delivered * 1e6,
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else float("nan"),
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)] if latencies else float("nan"),
    }


def memory_per_1000(url: str) -> tuple[float, float, float, float]:
    """Redis bytes per 1,000 events of a realistic run: protobuf payloads vs SSE
    JSON, and the payload bytes alone."""
    events = realistic_run(10_000)
    r = redis.Redis.from_url(url)
    out = []
    for name, encode in (
        ("proto", lambda e: encode_proto(e)[4:]),
        ("sse", lambda e: encode_sse(e)),
    ):
        key = f"bench-mem-{name}-{uuid.uuid4()}"
        pipe = r.pipeline(transaction=False)
        raw = 0
        for i, event in enumerate(events, 1):
            data = encode(event)
            raw += len(data)
            pipe.xadd(key, {"p": data}, id=f"{i}-0")
        pipe.execute()
        usage = int(r.memory_usage(key, samples=0) or 0)
        out += [usage / len(events) * 1000, raw / len(events) * 1000]
        r.delete(key)
    r.close()
    return out[0], out[2], out[1], out[3]


async def resume_latency(replicas: list[Replica], accept: str) -> tuple[float, float]:
    run_id = f"bench-{uuid.uuid4()}"
    async with httpx.AsyncClient(timeout=60) as client:
        await client.post(f"{replicas[0].url}/publish", params={"run": run_id, "events": 5000})
        # wait for the end
        async with client.stream("GET", f"{replicas[1].url}/runs/{run_id}/events") as response:
            await response.aread()

        async def first_byte(headers: dict[str, str]) -> float:
            t0 = time.perf_counter()
            reader, writer = await get(replicas[1].port, f"/runs/{run_id}/events", headers)
            body = _Chunked()
            while not body.feed(await reader.read(65536)):  # until the first event's bytes
                pass
            elapsed = time.perf_counter() - t0
            writer.close()
            return elapsed

        resumed, fresh = [], []
        for i in range(50):
            resumed.append(await first_byte({"accept": accept, "last-event-id": str(2500 + i)}))
            fresh.append(await first_byte({"accept": accept}))
    return statistics.median(resumed) * 1000, statistics.median(fresh) * 1000


async def bench(args: argparse.Namespace, replicas: list[Replica], server: RedisServer) -> None:
    assert server.process is not None
    rows = []
    for n in args.subscribers:
        for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
            burst = await one_run(replicas, server.process.pid, n, accept, args.events, 0.0)
            paced = await one_run(replicas, server.process.pid, n, accept, args.paced, 0.002)
            rows.append((n, accept, burst, paced))
            name = "SSE" if accept == SSE_MEDIA_TYPE else "protobuf"
            print(
                f"N={n:<4} {name:<9} {burst['delivered_per_s']:>10,.0f} ev/s  "
                f"{burst['cpu_us']:6.2f} us CPU/ev (Redis {burst['redis_cpu_us']:.2f})  "
                f"paced p50 {paced['p50_ms']:.2f} ms p99 {paced['p99_ms']:.2f} ms",
                flush=True,
            )
    print()
    print(
        "| subscribers | transport | delivered events/s | server CPU / delivered event "
        "| Redis CPU / delivered event | publish→delivery p50 | p99 |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n, accept, burst, paced in rows:
        name = "SSE" if accept == SSE_MEDIA_TYPE else "protobuf"
        cells = [
            str(n),
            name,
            f"{burst['delivered_per_s']:,.0f}",
            f"{burst['cpu_us']:.2f} µs",
            f"{burst['redis_cpu_us']:.2f} µs",
            f"{paced['p50_ms']:.2f} ms",
            f"{paced['p99_ms']:.2f} ms",
        ]
        print("| " + " | ".join(cells) + " |")
    proto, sse, proto_raw, sse_raw = memory_per_1000(server.url)
    print()
    print("| Redis memory per 1,000 events (realistic run) | as protobuf | as SSE JSON | ratio |")
    print("|---|---:|---:|---:|")
    for what, p, j in (
        ("MEMORY USAGE of the stream", proto, sse),
        ("payload bytes alone", proto_raw, sse_raw),
    ):
        print(f"| {what} | {p / 1024:,.1f} KiB | {j / 1024:,.1f} KiB | {j / p:.2f}x |")
    print()
    print("| resume into a stored 5,000-event run | to first event byte, p50 |")
    print("|---|---:|")
    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        resumed, fresh = await resume_latency(replicas, accept)
        name = "SSE" if accept == SSE_MEDIA_TYPE else "protobuf"
        print(f"| {name}: Last-Event-ID 2500 | {resumed:.2f} ms |")
        print(f"| {name}: from the start | {fresh:.2f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="events per burst run")
    parser.add_argument("--paced", type=int, default=500, help="events per paced run")
    parser.add_argument("--subscribers", type=int, nargs="+", default=[1, 10, 100])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        replicas = [Replica(server.url, Path(tmp) / f"r{i}.log").start() for i in range(2)]
        try:
            asyncio.run(bench(args, replicas, server))
        finally:
            for replica in replicas:
                replica.stop()
            server.stop()


if __name__ == "__main__":
    main()
