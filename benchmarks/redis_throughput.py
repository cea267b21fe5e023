"""The run store's cost per delivered event, side by side with the workload alone.

    .venv/bin/python benchmarks/redis_throughput.py [--runs 100 1000 10000]
        [--rates 5 25 50] [--loops asyncio uvloop] [--repeat N] [--deltas 100] [--json FILE]
    .venv/bin/python benchmarks/redis_throughput.py --quick          # CI: checks only
    .venv/bin/python benchmarks/redis_throughput.py --profile DIR --runs 1000 --rates 25

Each cell (N runs, R events/s per run, an event loop) runs two replicas, one after
the other, each a child process (this script with ``--replica``) doing the same
work: N runs live at once, each RUN_STARTED, a text message of ``--deltas`` deltas
``1/R`` s apart on a fixed schedule (a producer that fell behind catches up at
once, so the offered rate is N x R events/s whatever the replica does; each
delta is ``"<k> <perf_counter at the yield>"``), RUN_FINISHED, and one local
reader per run that checks each event arrives once and in order:

* ``workload``: the runs alone. Each event is encoded to a protobuf frame
  (``agui_wire.encode_proto``), handed through the run's ``asyncio.Queue``, and
  decoded (``agui_wire.decode_proto``) by the reader: what the store cannot avoid
  (encode once, decode once), with no store.
* ``RunStore``: the client built as docs/scaling.md builds it (``redis.from_url``,
  redis-py's default pool), ``store.start`` per run and ``store.subscribe`` as its
  reader, on a redis-server this script starts on a free loopback port (flushed
  before each cell).

Per delivered event: the replica's CPU (user + system time of the child process
from the first start to the last reader's end: ``getrusage``), Redis's CPU
(``INFO cpu``, the same window, with its commands per event from ``INFO
commandstats`` and its socket reads per event, ~round trips, from ``INFO stats``),
the replica's context switches; ``CPU``: its CPU time / wall (a replica that
keeps up idles between events; one that cannot uses what the machine gives it),
``wait``: the time it was runnable but waiting for a CPU (``/proc`` schedstat), /
wall: what the shared machine took from it; ``needs``: the cores it needs to keep
up at the CPU per event it showed (offered events/s x CPU per event: above ``CPU``,
the replica falls behind and its queue becomes the latency); publish -> deliver
p50/p99 over every delta (and per second of the run, in ``--json``); the
most connections the replica held (``CLIENT LIST``, sampled every 0.2 s); wall
against the workload's length (``(deltas + 1) / R``: starts are spread over one
interval). ``ratio`` is RunStore / workload CPU per event, taken per repeat (the
two rows of one repeat run back to back, so both see the same machine) and
summarised as median (min-max). Last, per loop, the most events/s one replica
carried with p99 <= 100 ms and wall within 10% of the length.

``--profile DIR``: at each (runs, rate) given, the RunStore replica and the
workload with the default loop under ``py-spy record`` (attached once the replica
is warm, raw collapsed stacks in DIR), aggregated by benchmarks/stack_buckets.py
into where the time goes; then the same RunStore replica under ``cProfile`` (call
counts per event, a second opinion on the shares: it slows Python calls, not C) and
with ``asyncio.events.Handle._run`` counted (loop callbacks, task steps per event).

The machine is shared: numbers are indicative; compare the two rows of a cell,
and run ``--repeat`` to see the spread. ``--quick`` (CI) asserts nothing about
time: it fails if an event is missing, repeated or out of order, a producer does
not finish, or the replica holds more than 32 connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import inspect
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MAX_CONNECTIONS = 32  # docs/scaling.md: 10,000 live runs per replica within this
P99_TARGET = 0.100  # s: the p99 at which a replica counts as carrying the load
WALL_SLACK = 1.10  # and its wall within 10% of the workload's length


# -- the replica (a child process) -------------------------------------------------------


def _usage() -> tuple[float, int]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw + usage.ru_nivcsw


def _waited() -> float:
    """Seconds this process's threads spent runnable but waiting for a CPU (Linux
    schedstat; 0 elsewhere): how much the shared machine held the replica back."""
    total = 0.0
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            total += int((task / "schedstat").read_text().split()[1]) / 1e9
    return total


class _Check:
    """The reader's side: each run's events once and in order, and the latencies."""

    def __init__(self, deltas: int) -> None:
        self.deltas = deltas
        self.latencies: list[float] = []
        self.sent: list[float] = []  # when each latency's delta was yielded
        self.problems: list[str] = []
        # runs the store ended with its typed error (StoreError: it gave up, e.g.
        # overloaded past its deadlines): what they delivered was checked like the rest
        self.gave_up: Counter[str] = Counter()
        self.gave_up_example = ""
        self.lapsed = 0  # runs its reader saw ended RUN_ERROR LEASE_EXPIRED

    def event(self, run_id: str, index: int, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "RUN_ERROR" and event.get("code") == "LEASE_EXPIRED":
            # the store ended the run for its readers: its producer's lease lapsed
            # (the producer raises LeaseLost: counted as a run the store gave up on)
            self.lapsed += 1
            return
        deltas = self.deltas
        if 3 <= index <= deltas + 2:
            if kind != "TEXT_MESSAGE_CONTENT":
                self.problems.append(f"{run_id}: event {index} is {kind}")
                return
            k, _, sent = event["delta"].partition(" ")
            self.sent.append(float(sent))
            self.latencies.append(time.perf_counter() - self.sent[-1])
            if int(k) != index - 2:
                self.problems.append(f"{run_id}: event {index} is delta {k}")
        elif kind != _SHAPE.get(index if index <= 2 else index - deltas, "?"):
            self.problems.append(f"{run_id}: event {index} is {kind}")

    def end(self, run_id: str, produced: int, read: int) -> None:
        if produced != self.deltas + 4 or read != self.deltas + 4:
            self.problems.append(f"{run_id}: produced {produced}, read {read}")


_SHAPE = {1: "RUN_STARTED", 2: "TEXT_MESSAGE_START", 3: "TEXT_MESSAGE_END", 4: "RUN_FINISHED"}


async def replica(config: dict[str, Any]) -> dict[str, Any]:
    """One replica: ``runs`` producers and readers; returns what it measured."""
    from agui_wire import EventDecoder, decode_proto, encode_proto
    from agui_wire.errors import StoreError

    runs, deltas, mode = config["runs"], config["deltas"], config["mode"]
    reader = config.get("reader", "subscribe")
    interval = 1 / config["rate"]
    loop = asyncio.get_running_loop()
    check = _Check(deltas)

    async def produce(run_id: str, start: float) -> Any:
        await asyncio.sleep(max(0.0, start - loop.time()))
        yield {"type": "RUN_STARTED", "threadId": "bench", "runId": run_id}
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
        for k in range(1, deltas + 1):
            await asyncio.sleep(max(0.0, start + k * interval - loop.time()))
            delta = f"{k} {time.perf_counter()!r}"
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": delta}
        yield {"type": "TEXT_MESSAGE_END", "messageId": "m"}
        yield {"type": "RUN_FINISHED", "threadId": "bench", "runId": run_id}

    async def pump(events: Any, queue: asyncio.Queue[Any], encode: bool) -> int:
        count = 0
        async for event in events:
            queue.put_nowait(encode_proto(event) if encode else event)
            count += 1
        return count

    async def dequeue(queue: asyncio.Queue[Any]) -> Any:
        for _ in range(deltas + 4):
            yield await queue.get()

    async def in_memory(n: int, t0: float) -> int:
        run_id = f"run-{n}"
        queue: asyncio.Queue[Any] = asyncio.Queue()
        events = produce(run_id, t0 + interval * n / runs)
        task = asyncio.ensure_future(pump(events, queue, reader == "subscribe"))
        if reader != "subscribe":  # the events through EventStreamResponse, no store
            from agui_wire.asgi import EventStreamResponse

            read = await over_http(EventStreamResponse(dequeue(queue)), run_id)
            check.end(run_id, await task, read)
            return read
        index = 0
        while index < deltas + 4:
            event = decode_proto(await queue.get())[0]
            index += 1
            check.event(run_id, index, event)
        check.end(run_id, await task, index)
        return index

    store: Any = None
    logged: Counter[str] = Counter()  # the store's log records (not printed: counted)
    _count_logs(logged)
    if mode == "store":
        import redis.asyncio as redis

        from agui_wire.redis import RunStore

        store = RunStore(redis.from_url(config["url"]), ttl=600, lease=30)  # as docs/scaling.md

    async def over_http(response: Any, run_id: str) -> int:
        """The response as an ASGI app, in-process (no socket): its body decoded as
        it is sent, each event checked; returns the events read."""
        read = 0
        media = "application/vnd.ag-ui.event+proto" if reader == "proto" else "text/event-stream"
        decoder = EventDecoder(media)
        scope = {"type": "http", "method": "GET", "path": "/", "query_string": b""}
        scope["headers"] = [(b"accept", media.encode())]

        async def receive() -> Any:
            await loop.create_future()  # the client never leaves

        async def send(message: dict[str, Any]) -> None:
            nonlocal read
            body = message.get("body") if message["type"] == "http.response.body" else None
            if body:
                for event in decoder.feed(body):
                    read += 1
                    check.event(run_id, read, event)

        await response(scope, receive, send)
        return read

    async def in_store(n: int, t0: float) -> int:
        run_id = f"run-{n}"
        task = await store.start(run_id, produce(run_id, t0 + interval * n / runs))
        assert task is not None
        index = 0
        try:
            if reader != "subscribe":
                index = await over_http(store.response(run_id), run_id)
            else:
                async for event_id, event in store.subscribe(run_id):
                    index += 1
                    if event_id != index:
                        check.problems.append(f"{run_id}: id {event_id} after {index - 1}")
                        index = event_id
                    check.event(run_id, index, event)
            check.end(run_id, await task, index)
        except StoreError as exc:  # the store gave up on the run: counted, not a wrong event
            check.gave_up[type(exc).__name__] += 1
            check.gave_up_example = check.gave_up_example or f"{run_id}: {exc}"
        except Exception as exc:
            check.problems.append(f"{run_id}: {type(exc).__name__}: {exc}")
        return index

    one = in_store if mode == "store" else in_memory
    await one(-1, loop.time())  # warm-up: imports, scripts loaded, connections open
    check.latencies.clear()
    check.sent.clear()
    if config.get("gc"):
        gc.set_threshold(config["gc"], 20, 100)
    print("ready", flush=True)
    await _line(loop)  # the parent samples from here
    counting = _count_callbacks() if config.get("count") else None
    tracing = _trace_store() if config.get("count") and mode == "store" else None
    profiler = None
    if config.get("cprofile"):
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    lags: list[float] = []
    ticker = asyncio.ensure_future(_lag(lags))
    collecting = _time_gc()
    cpu, switches = _usage()
    waited = _waited()
    wall = time.perf_counter()
    t0 = loop.time()
    delivered = sum(await asyncio.gather(*(one(n, t0) for n in range(runs))))
    wall = time.perf_counter() - wall
    waited = _waited() - waited
    ticker.cancel()
    gc_time, collections, gc_by_generation = collecting()
    cpu, switches = (a - b for a, b in zip(_usage(), (cpu, switches), strict=True))
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(config["cprofile"])
    callbacks = counting() if counting is not None else None
    trace = tracing() if tracing is not None else None
    if store is not None:
        await store.aclose()
    by_second = _by_second(check.sent, check.latencies, time.perf_counter() - (loop.time() - t0))
    latencies = sorted(check.latencies)
    lags.sort()
    return {
        "lag50": statistics.median(lags) if lags else None,
        "lag99": lags[int(len(lags) * 0.99)] if lags else None,
        "delivered": delivered,
        "cpu": cpu,
        "waited": waited,
        "switches": switches,
        "wall": wall,
        "p50": statistics.median(latencies) if latencies else None,
        "p99": latencies[int(len(latencies) * 0.99)] if latencies else None,
        "by_second": by_second,
        "problems": check.problems[:5],
        "problem_count": len(check.problems),
        "gave_up": dict(check.gave_up),
        "gave_up_example": check.gave_up_example[:300],
        "lapsed": check.lapsed,
        "logged": dict(logged),
        "gc": gc_time,
        "collections": collections,
        "gc_by_generation": gc_by_generation,
        "callbacks": callbacks,
        "trace": trace,
    }


def _by_second(sent: list[float], latencies: list[float], t0: float) -> list[list[float]]:
    """p50 and p99 publish->deliver (s) of the deltas yielded in each second of the
    run: flat where the replica keeps up, growing where it falls behind."""
    seconds: dict[int, list[float]] = {}
    for at, latency in zip(sent, latencies, strict=True):
        seconds.setdefault(int(at - t0), []).append(latency)
    out = []
    for second in sorted(seconds):
        values = sorted(seconds[second])
        out.append([second, statistics.median(values), values[int(len(values) * 0.99)]])
    return out


def _count_logs(logged: Counter[str]) -> None:
    """The store's log records counted by message instead of printed (an overloaded
    replica logs one traceback per failed run)."""
    import logging

    class Counting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged[record.getMessage()[:60]] += 1

    log = logging.getLogger("agui_wire")
    log.addHandler(Counting())
    log.propagate = False


def _time_gc() -> Any:
    """Time the cyclic GC's collections from now on, in process CPU time (the
    machine is shared: a wall clock would count time the replica was not running);
    returns a function giving the seconds per generation, their sum, and how many
    collections there were (and stopping)."""
    spent = [0.0, 0.0]  # total, start of the current collection
    counts = [0, 0, 0]  # collections per generation
    took = [0.0, 0.0, 0.0]  # seconds per generation

    def timed(phase: str, info: dict[str, Any]) -> None:
        generation = info["generation"]
        if phase == "start":
            spent[1] = time.process_time()
        else:
            took[generation] += time.process_time() - spent[1]
            counts[generation] += 1

    gc.callbacks.append(timed)

    def done() -> tuple[float, list[int], list[float]]:
        gc.callbacks.remove(timed)
        return sum(took), counts, took

    return done


async def _line(loop: asyncio.AbstractEventLoop) -> None:
    """Until the parent writes a line (no thread: a profiler would sample it)."""
    ready: asyncio.Future[None] = loop.create_future()
    fd = sys.stdin.fileno()
    loop.add_reader(fd, ready.set_result, None)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    sys.stdin.readline()


async def _lag(lags: list[float]) -> None:
    """The loop's lag: how late a 5 ms sleep wakes (a saturated loop, or a starved
    process, wakes late; waiting on Redis does not)."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(0.005)
        lags.append(loop.time() - start - 0.005)


def _count_callbacks() -> Any:
    """Count the default loop's callbacks (``Handle._run``) by kind from now on;
    returns a function giving the counts (and undoing it)."""
    from asyncio import events

    counts: Counter[str] = Counter()
    original = events.Handle._run

    def run(handle: Any) -> None:
        callback = handle._callback
        name = getattr(callback, "__qualname__", None) or type(callback).__name__
        counts[name] += 1
        original(handle)

    events.Handle._run = run  # type: ignore[method-assign]

    def done() -> dict[str, int]:
        events.Handle._run = original  # type: ignore[method-assign]
        return dict(counts)

    return done


def _trace_store() -> Any:
    """Time the store's round trips from now on (diagnostics of the --profile pass:
    they wrap private methods, and say so when those are gone): a command lane's
    pipeline (commands in it), a lane's XREAD (entries in its reply), a producer's
    append (events in it). Returns a function giving per kind the count, the mean
    size and the p50/p99 duration (ms)."""
    import importlib

    traced: dict[str, list[tuple[float, int]]] = {}

    def wrap(where: str, name: str, kind: str, size: Any) -> None:
        module, _, cls = where.rpartition(".")
        try:
            owner = getattr(importlib.import_module(module), cls, None)
        except ImportError:
            owner = None
        original = getattr(owner, name, None)
        if original is None:
            traced[f"{kind} (not traced: {where}.{name} is gone)"] = []
            return
        seen = traced.setdefault(kind, [])

        async def timed(*args: Any) -> Any:
            start = time.perf_counter()
            reply = await original(*args)
            seen.append((time.perf_counter() - start, size(args, reply)))
            return reply

        def timed_future(*args: Any) -> Any:  # a method that returns a future
            start = time.perf_counter()
            future = asyncio.ensure_future(original(*args))
            future.add_done_callback(
                lambda f: seen.append((time.perf_counter() - start, size(args, None)))
            )
            return future

        setattr(owner, name, timed if inspect.iscoroutinefunction(original) else timed_future)

    def entries(args: Any, reply: Any) -> int:
        return sum(len(found) for _, found in reply or ())

    pipeline, lane = "agui_wire.redis._pipeline.Pipeliner", "agui_wire.redis._tails._Lane"
    wrap(pipeline, "_send", "command-lane round trip", lambda a, r: len(a[1]))
    wrap(lane, "_xread", "lane XREAD (blocking)", entries)
    wrap("agui_wire.redis._producer.Producer", "append", "producer append", lambda a, r: len(a[2]))

    def done() -> dict[str, Any]:
        out = {}
        for kind, seen in traced.items():
            times = sorted(t for t, _ in seen)
            out[kind] = {
                "count": len(seen),
                "size": statistics.mean(n for _, n in seen) if seen else 0,
                "p50_ms": times[len(times) // 2] * 1e3 if times else 0,
                "p99_ms": times[int(len(times) * 0.99)] * 1e3 if times else 0,
            }
        return out

    return done


def run_replica(config: dict[str, Any]) -> None:
    if config["loop"] == "uvloop":
        import uvloop

        result = uvloop.run(replica(config))
    else:
        result = asyncio.run(replica(config))
    print("result " + json.dumps(result), flush=True)


# -- the parent: one cell, then the grid ---------------------------------------------------


def measure(
    server: Any, mode: str, runs: int, rate: float, deltas: int, loop: str, **extra: Any
) -> dict[str, Any]:
    """One replica's run (``mode``: ``memory`` or ``store``); ``extra`` goes to the
    replica's config (``gc``, ``count``, ``cprofile``) but ``pyspy``: a path, to
    record the replica's stacks there."""
    import redis

    admin = redis.Redis.from_url(server.url)
    pyspy = extra.pop("pyspy", None)
    native = extra.pop("native", False)
    if mode == "store":
        admin.flushall()
    base = len(admin.client_list())  # admin itself (the replica not started yet)
    config = {"mode": mode, "url": server.url, "runs": runs, "rate": rate, "deltas": deltas}
    config |= {"loop": loop, **extra}
    child = subprocess.Popen(
        [sys.executable, __file__, "--replica", json.dumps(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line != "ready":
        child.kill()
        raise RuntimeError(f"the replica did not start: {line!r}")
    spy = None
    if pyspy is not None:
        spy = subprocess.Popen(
            [
                *("py-spy", "record", "--pid", str(child.pid), "--format", "raw"),
                *("--output", str(pyspy)),
                # native frames (the GC, C code) need the process paused per sample
                *(("--native", "--rate", "250") if native else ("--nonblocking", "--rate", "1000")),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            executable=str(Path(sys.executable).with_name("py-spy")),
        )
        time.sleep(1.0)  # attached (it samples from its first look)
    admin.config_resetstat()
    redis_cpu = _redis_cpu(admin)
    child.stdin.write("go\n")
    child.stdin.flush()
    peak = 0
    while child.poll() is None:
        if mode == "store":
            peak = max(peak, len(admin.client_list()) - base)
        time.sleep(0.2)
    lines = child.stdout.read().splitlines()
    results = [line for line in lines if line.startswith("result ")]
    if child.returncode or not results:
        raise RuntimeError(f"the replica failed (exit {child.returncode}): {lines[-5:]}")
    result: dict[str, Any] = json.loads(results[-1].removeprefix("result "))
    result["connections"] = peak
    if mode == "store":
        result["redis_cpu"] = _redis_cpu(admin) - redis_cpu
        stats = admin.info("commandstats")
        result["commands"] = {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}
        result["commands_usec"] = {k.removeprefix("cmdstat_"): v["usec"] for k, v in stats.items()}
        result["redis_reads"] = admin.info("stats")["total_reads_processed"]
    if spy is not None:
        _, err = spy.communicate(timeout=120)
        if spy.returncode:
            raise RuntimeError(f"py-spy failed: {err.strip()[-500:]}")
    admin.close()
    return result


def _redis_cpu(admin: Any) -> float:
    info = admin.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _spread(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    mid = statistics.median(values) * scale
    if len(values) == 1:
        return f"{mid:.{digits}f}"
    low, high = min(values) * scale, max(values) * scale
    return f"{mid:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def summarise(rows: list[dict[str, Any]], length: float, offered: float) -> dict[str, Any]:
    """The repeats of one row of a cell: medians (and min-max) per delivered event."""
    per = [r["cpu"] / r["delivered"] for r in rows]
    out = {
        "cpu_us": [v * 1e6 for v in per],
        "p50_ms": [r["p50"] * 1e3 for r in rows],
        "p99_ms": [r["p99"] * 1e3 for r in rows],
        "wall_s": [r["wall"] for r in rows],
        "switches": [r["switches"] / r["delivered"] for r in rows],
        "lag99_ms": [r["lag99"] * 1e3 for r in rows],
        "busy": [r["cpu"] / r["wall"] for r in rows],
        # cores the replica needs to keep up at this CPU per event (offered x CPU/event)
        "needed": [r["cpu"] / r["delivered"] * offered for r in rows],
        "starved": [r["waited"] / r["wall"] for r in rows],
        "gc_us": [r["gc"] / r["delivered"] * 1e6 for r in rows],
        "connections": max(r["connections"] for r in rows),
        "failed": sum(r["problem_count"] + sum(r["gave_up"].values()) for r in rows),
        "delivered": rows[0]["delivered"],
        "length_s": length,
    }
    if "redis_cpu" in rows[0]:
        out["redis_us"] = [r["redis_cpu"] / r["delivered"] * 1e6 for r in rows]
        out["redis_reads"] = [r["redis_reads"] / r["delivered"] for r in rows]
        calls: Counter[str] = Counter()
        for r in rows:
            calls.update(r["commands"])
        scale = len(rows) * rows[0]["delivered"]
        out["commands"] = {k: round(v / scale, 6) for k, v in calls.most_common()}
    return out


def carried(row: dict[str, Any]) -> bool:
    return statistics.median(row["p99_ms"]) <= P99_TARGET * 1e3 and (
        statistics.median(row["wall_s"]) <= row["length_s"] * WALL_SLACK
    )


def print_cell(runs: int, rate: float, loop: str, memory: dict[str, Any], store: dict[str, Any]):
    ratios = [s / m for s, m in zip(store["cpu_us"], memory["cpu_us"], strict=True)]
    head = f"{runs:>7,} {rate:>5g} {runs * rate:>9,.0f} {loop:<8}"
    for name, row in (("workload", memory), ("RunStore", store)):
        redis_us = _spread(row["redis_us"]) if "redis_us" in row else "-"
        wall = f"{statistics.median(row['wall_s']):.1f} / {row['length_s']:.1f} s"
        print(
            f"{head} {name:<9}{_spread(row['cpu_us']):>22} {redis_us:>20} "
            f"{_spread(row['p50_ms']):>20} {_spread(row['p99_ms']):>22} "
            f"{row['connections']:>5} {wall:>15} {_spread(row['lag99_ms']):>18} "
            f"{_spread(row['gc_us']):>16} {statistics.median(row['busy']) * 100:>5.0f}% "
            f"{statistics.median(row['starved']) * 100:>5.0f}% "
            f"{statistics.median(row['needed']):>6.2f}",
            flush=True,
        )
        head = " " * len(head)
    calls = store["commands"]
    top = ", ".join(f"{k} {calls.get(k, 0):.3g}" for k in ("evalsha", "xread"))
    print(
        f"{head} ratio    {_spread(ratios, digits=2):>22}x   Redis per event: {top} "
        f"({sum(calls.values()):.3g} commands with the scripts' own, "
        f"{statistics.median(store['redis_reads']):.3f} socket reads)\n",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--rates", type=float, nargs="+", default=[5, 25, 50])
    parser.add_argument("--loops", nargs="+", default=["asyncio", "uvloop"])
    parser.add_argument("--deltas", type=int, default=100, help="text deltas per run")
    parser.add_argument("--repeat", type=int, default=1, help="each cell's two rows, N times")
    parser.add_argument("--gc", type=int, default=0, help="the replica's first GC threshold")
    parser.add_argument(
        "--reader",
        choices=["subscribe", "proto", "sse"],
        default="subscribe",
        help="each run's reader: store.subscribe (the workload: its queue), or the run's "
        "HTTP response as an in-process ASGI app, binary or SSE (store.response; the "
        "workload: EventStreamResponse over its queue), its body decoded",
    )
    parser.add_argument("--json", type=Path, help="write every cell's numbers here")
    parser.add_argument("--quick", action="store_true", help="CI size: checks only")
    parser.add_argument("--markdown", action="store_true", help="print the grid as a table")
    parser.add_argument("--profile", type=Path, help="profile into this directory (see above)")
    parser.add_argument(
        "--passes",
        default="spy,cprofile,count",
        help="with --profile: which of py-spy (both rows, each loop), cProfile and "
        "counted loop callbacks with the store's round trips timed",
    )
    parser.add_argument(
        "--native",
        action="store_true",
        help="with --profile: py-spy --native (C frames: the GC's share; pauses the "
        "replica at each sample, 250 a second)",
    )
    parser.add_argument("--replica", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replica:
        run_replica(json.loads(args.replica))
        return
    if args.quick:
        args.runs, args.rates, args.deltas, args.repeat = [100, 1000], [25], 10, 1
    if "uvloop" in args.loops:
        try:
            import uvloop  # noqa: F401
        except ImportError:
            print("uvloop is not installed: its rows are left out\n")
            args.loops = [loop for loop in args.loops if loop != "uvloop"]

    from tests.redis.harness import RedisServer

    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            if args.profile:
                profile(server, args)
                return
            failed = grid(server, args)
        finally:
            server.stop()
    if failed:
        sys.exit(1)


def _machine(server: Any) -> str:
    import platform

    import redis

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    admin = redis.Redis.from_url(server.url)
    version = admin.info("server")["redis_version"]
    admin.close()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs ({cpu}; shared, load average {load}); Python "
        f"{platform.python_version()}; redis-server {version} on loopback"
    )


def grid(server: Any, args: argparse.Namespace) -> bool:
    print(
        f"{args.deltas} deltas per run, one local reader per run ({args.reader}), one replica; "
        f"{_machine(server)}; GC threshold {args.gc or 'default'}; "
        f"median (min-max) of {args.repeat} repeat(s)\n"
    )
    print(
        f"{'runs':>7} {'ev/s':>5} {'offered':>9} {'loop':<8} {'row':<9}{'CPU us/event':>22} "
        f"{'Redis us/event':>20} {'p50 ms':>20} {'p99 ms':>22} {'conns':>5} "
        f"{'wall / length':>15} {'loop lag p99 ms':>18} {'GC CPU us/event':>16} "
        f"{'CPU':>6} {'wait':>6} {'needs':>6}"
    )
    failed = False
    overloaded: list[str] = []
    cells: list[dict[str, Any]] = []
    for runs in args.runs:
        for rate in args.rates:
            for loop in args.loops:
                rows: dict[str, list[dict[str, Any]]] = {"memory": [], "store": []}
                for _ in range(args.repeat):
                    for mode in rows:
                        r = measure(
                            server,
                            mode,
                            runs,
                            rate,
                            args.deltas,
                            loop,
                            gc=args.gc,
                            reader=args.reader,
                        )
                        gave_up = sum(r["gave_up"].values())
                        if gave_up:
                            overloaded.append(
                                f"{mode} {runs:,} runs x {rate:g}/s ({loop}): the store ended "
                                f"{gave_up:,} runs with its typed error {r['gave_up']} "
                                f"({r['lapsed']:,} readers got RUN_ERROR LEASE_EXPIRED; e.g. "
                                f"{r['gave_up_example']}), wall {r['wall']:.0f} s, p50 "
                                f"{(r['p50'] or 0):.1f} s: overloaded, every event it "
                                "delivered once and in order"
                            )
                            print("OVERLOADED " + overloaded[-1], flush=True)
                        # wrong, missing or repeated events are failures; so are runs the
                        # store gave up on at CI's size (--quick), where nothing overloads
                        complete = r["delivered"] == runs * (args.deltas + 4) or not args.quick
                        ok = r["problem_count"] == 0 and complete
                        ok = ok and r["connections"] <= MAX_CONNECTIONS
                        ok = ok and not (args.quick and gave_up)
                        if not ok:
                            failed = True
                            print(
                                f"FAILED {mode} {runs} runs x {rate:g}/s ({loop}): "
                                f"{r['problem_count']} problems {r['problems'][:2]}, "
                                f"{r['delivered']:,} delivered, {r['connections']} "
                                f"connections; gave up {r['gave_up']}; logged {r['logged']}"
                            )
                        rows[mode].append(r)
                length = (args.deltas + 1) / rate
                memory, store = (
                    summarise(rows[m], length, runs * rate) for m in ("memory", "store")
                )
                print_cell(runs, rate, loop, memory, store)
                cells.append(
                    {"runs": runs, "rate": rate, "loop": loop, "workload": memory, "store": store}
                )
    for loop in args.loops:
        ok = [c for c in cells if c["loop"] == loop and carried(c["store"])]
        best = max(ok, key=lambda c: c["runs"] * c["rate"], default=None)
        print(
            f"{loop}: one replica carried "
            + (
                f"{best['runs'] * best['rate']:,.0f} events/s ({best['runs']:,} runs x "
                f"{best['rate']:g}/s) with p99 <= {P99_TARGET * 1e3:.0f} ms, wall within "
                f"{(WALL_SLACK - 1) * 100:.0f}%"
                if best
                else "no cell of this grid within p99 <= 100 ms"
            )
        )
    if args.json:
        args.json.write_text(json.dumps({"machine": _machine(server), "cells": cells}, indent=1))
    if args.markdown:
        print("\n" + markdown(cells))
    print(
        "\nchecks: "
        + (
            "FAILED"
            if failed
            else "every event delivered once and in order"
            + (
                f"; runs the store gave up on (overloaded): {len(overloaded)} row(s), above"
                if overloaded
                else ", every run"
            )
        )
    )
    return failed


def _redis_commands(r: dict[str, Any]) -> str:
    """Redis's time per delivered event by command (a script's own commands are
    counted inside its EVALSHA's time too: INFO commandstats)."""
    n = r["delivered"]
    usec = sorted(r["commands_usec"].items(), key=lambda kv: -kv[1])
    return "Redis us per event by command (calls per event): " + ", ".join(
        f"{k} {v / n:.2f} ({r['commands'][k] / n:.3f})" for k, v in usec if v / n >= 0.05
    )


def markdown(cells: list[dict[str, Any]]) -> str:
    """The grid as the README's and docs/scaling.md's table (medians)."""
    m = statistics.median

    def ms(value: float) -> str:
        return f"{value:.2g}" if value < 10 else f"{value:,.0f}"

    lines = [
        "| runs x events/s (offered) | loop | replica CPU / event: workload | RunStore "
        "| ratio | Redis CPU / event | p50 / p99: workload | RunStore | wall / length "
        "| appends, XREADs per 1,000 events | replica waiting for a CPU "
        "| replica cores: needed / got | runs failed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        w, s = c["workload"], c["store"]
        calls = s["commands"]
        lines.append(
            f"| {c['runs']:,} x {c['rate']:g} ({c['runs'] * c['rate']:,.0f}) | {c['loop']} "
            f"| {m(w['cpu_us']):.1f} µs | {m(s['cpu_us']):.1f} µs "
            f"| {m([a / b for a, b in zip(s['cpu_us'], w['cpu_us'], strict=True)]):.2f}x "
            f"| {m(s['redis_us']):.1f} µs "
            f"| {ms(m(w['p50_ms']))} / {ms(m(w['p99_ms']))} ms "
            f"| {ms(m(s['p50_ms']))} / {ms(m(s['p99_ms']))} ms "
            f"| {m(s['wall_s']):.1f} / {s['length_s']:.1f} s "
            f"| {calls.get('evalsha', 0) * 1e3:,.0f}, {ms(calls.get('xread', 0) * 1e3)} "
            f"| {m(s['starved']) * 100:.0f}% | {m(s['needed']):.2f} / {m(s['busy']):.2f} "
            f"| {s.get('failed', 0):,} |"
        )
    return "\n".join(lines)


def profile(server: Any, args: argparse.Namespace) -> None:
    """py-spy on both rows (per loop), then cProfile and the loop's callbacks counted
    (the default loop)."""
    import pstats

    sys.path.insert(0, str(Path(__file__).parent))
    from stack_buckets import bucket_cprofile, print_buckets, read_collapsed

    out: Path = args.profile
    out.mkdir(parents=True, exist_ok=True)
    print(f"{_machine(server)}; readers: {args.reader}\n")

    def run(mode: str, runs: int, rate: float, loop: str, **extra: Any) -> dict[str, Any]:
        extra |= {"gc": args.gc, "reader": args.reader}
        return measure(server, mode, runs, rate, args.deltas, loop, **extra)

    def said(r: dict[str, Any]) -> str:
        n = r["delivered"]
        by = ", ".join(
            f"gen{g}: {c:,} in {t * 1e3:.0f} ms"
            for g, (c, t) in enumerate(zip(r["collections"], r["gc_by_generation"], strict=True))
        )
        return (
            f"{r['cpu'] / n * 1e6:.1f} us/event (GC {r['gc'] / n * 1e6:.1f}: {by}), p50 "
            f"{r['p50'] * 1e3:.1f} ms, p99 {r['p99'] * 1e3:.0f} ms, loop lag p99 "
            f"{r['lag99'] * 1e3:.0f} ms, wall {r['wall']:.1f} s"
        )

    for runs in args.runs:
        for rate in args.rates:
            cell = f"{runs}x{rate:g}-{args.reader}"
            for loop in args.loops if "spy" in args.passes else ():
                for mode in ("memory", "store"):
                    plain = run(mode, runs, rate, loop)
                    path = out / f"{mode}-{cell}-{loop}.txt"
                    spied = run(mode, runs, rate, loop, pyspy=path, native=args.native)
                    cpu = spied["cpu"] / spied["delivered"] * 1e6
                    print(f"== {mode}, {runs:,} runs x {rate:g}/s, {loop}")
                    print(f"   unprofiled: {said(plain)}\n   under py-spy: {said(spied)}")
                    print_buckets(read_collapsed(path), cpu)
                    if mode == "store":
                        print("   " + _redis_commands(spied))
            if "cprofile" in args.passes:
                stats_path = out / f"store-{cell}.pstats"
                profiled = run("store", runs, rate, "asyncio", cprofile=str(stats_path))
                print(f"== cProfile of the store, {runs:,} runs x {rate:g}/s: {said(profiled)}")
                bucket_cprofile(pstats.Stats(str(stats_path)), profiled["delivered"])
            for name, mode in (("workload", "memory"), ("RunStore", "store")):
                if "count" not in args.passes:
                    break
                r = run(mode, runs, rate, "asyncio", count=True)
                calls = r["callbacks"] or {}
                total = sum(calls.values())
                print(
                    f"== {name}, loop callbacks counted: {said(r)}\n   "
                    f"{total / r['delivered']:.2f} loop callbacks per event "
                    f"({r['switches'] / r['delivered']:.3f} OS context switches), the most:"
                )
                for key, n in Counter(calls).most_common(8):
                    print(f"   {n / r['delivered']:7.3f}  {key}")
                for kind, t in (r["trace"] or {}).items():
                    print(
                        f"   {kind}: {t['count'] / r['delivered']:.4f} per event, "
                        f"{t['size']:.1f} each, p50 {t['p50_ms']:.1f} ms, p99 {t['p99_ms']:.1f} ms"
                    )
            print()


if __name__ == "__main__":
    main()
