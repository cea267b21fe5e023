"""What telemetry costs a server: off (the default) must cost nothing measurable.

Arms, each a ``server_app.py`` process (real uvicorn, h11, loopback), measured as
``server_cost.py`` measures (server CPU per event from ``/proc``, a raw-socket
client reading to EOF), every arm once per round in a rotated order:

* ``none``: ``opentelemetry`` not importable (``agui-wire`` without the ``otel`` extra);
* ``api``: the API installed, no SDK configured (what a process has by default);
* ``sdk``: an SDK ``MeterProvider`` (a reader that is never collected: the recording
  alone) and ``TracerProvider`` (a batch span processor) set as the global providers;
* ``base`` (``--baseline DIR``): another checkout's ``benchmarks/server_app.py`` with
  its own ``src``, e.g. the tree before telemetry existed: the before/after.

Cases: ``EventStreamResponse`` burst (every event ready: a few sends of up to 32 KiB)
and paced (one event per send: the most sends per event), SSE and protobuf, plain and
gzip. Then, in a process per arm, ``compat.SDKEventEncoder`` (what ``install()`` serves):
``encode`` per event and construction per request, ns, interleaved rounds.

Reported: the median per arm, and each arm against ``none`` (or ``base``) as the
median of per-round ratios (the arms ran side by side, so drift hits all alike).

    .venv/bin/python benchmarks/telemetry_cost.py                       # ~3 min
    .venv/bin/python benchmarks/telemetry_cost.py --baseline /tmp/main  # before/after
    .venv/bin/python benchmarks/telemetry_cost.py --quick               # CI smoke run
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from server_cost import Server, dechunk  # noqa: E402

ROOT = HERE.parent

# Run before the app is imported: the arm's OpenTelemetry state.
PRELUDE = {
    "none": """
        import sys
        class _NoOtel:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, _NoOtel())
    """,
    "api": "",
    "sdk": """
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
        _tp = TracerProvider()
        _tp.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
        trace.set_tracer_provider(_tp)
    """,
}
PRELUDE["base"] = ""


class Arm(Server):
    """``server_app.py`` of a tree, started with an arm's prelude."""

    def __init__(self, name: str, tree: Path, events: int) -> None:
        self.name = name
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        app = tree / "benchmarks" / "server_app.py"
        argv = [str(app), "--port", str(self.port), "--http", "h11", "--events", str(events)]
        code = textwrap.dedent(PRELUDE[name]) + textwrap.dedent(f"""
            import runpy, sys
            sys.argv = {argv!r}
            runpy.run_path({str(app)!r}, run_name="__main__")
        """)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.close()
            raise RuntimeError(f"arm {name}: server_app.py did not start: {line!r}")


CASES = [
    (mode, t, z) for mode in ("burst", "paced") for t in ("sse", "proto") for z in (None, "gzip")
]


def path(mode: str, t: str, z: str | None, n: int) -> str:
    return f"/esr?t={t}&m={mode}&n={n}" + (f"&z={z}" if z else "")


def servers(arms: list[Arm], n: dict[str, int], rounds: int) -> dict[str, dict[str, list[float]]]:
    cpu: dict[str, dict[str, list[float]]] = {a.name: {} for a in arms}
    for arm in arms:  # one untimed pass: every response complete
        for mode, t, z in CASES:
            _, body = dechunk(arm.get(path(mode, t, z, n[mode]), z, keep=True))
            if not body:
                raise RuntimeError(f"{arm.name}: empty body for {mode}/{t}/{z}")
    for r in range(rounds):
        order = arms[r % len(arms) :] + arms[: r % len(arms)]
        for mode, t, z in CASES:
            key = f"{mode}/{t}" + (f"+{z}" if z else "")
            for arm in order:
                before = arm.cpu_ns()
                arm.get(path(mode, t, z, n[mode]), z)
                # a thread's schedstat is brought up to date when it leaves the CPU: let
                # the server finish the response's end (the span, the histogram) and idle
                time.sleep(0.005)
                cpu[arm.name].setdefault(key, []).append((arm.cpu_ns() - before) / n[mode])
        print(f"  round {r + 1}/{rounds}", file=sys.stderr)
    return cpu


# -- compat.SDKEventEncoder, in a process per arm ----------------------------------------------

MICRO = """
    import json, sys, time
    sys.path.insert(0, {src!r})
    from agui_wire import compat
    from agui_wire._sample import realistic_run
    events = realistic_run({n}, seed=20_004)
    out = {{}}
    for accept in ("text/event-stream", "application/vnd.ag-ui.event+proto"):
        encode = compat.SDKEventEncoder(accept).encode
        times = []
        for _ in range(5):
            start = time.perf_counter_ns()
            for e in events:
                encode(e)
            times.append(time.perf_counter_ns() - start)
        out["encode " + accept.split("/")[1]] = min(times) / len(events)
        times = []
        for _ in range(7):  # short loops: the best of several (a busy machine preempts)
            start = time.perf_counter_ns()
            for _ in range({n}):
                compat.SDKEventEncoder(accept)
            times.append(time.perf_counter_ns() - start)
        out["construct " + accept.split("/")[1]] = min(times) / {n}
    print(json.dumps(out))
"""


def micro(arm: str, tree: Path, n: int) -> dict[str, float]:
    code = textwrap.dedent(PRELUDE[arm]) + textwrap.dedent(MICRO.format(src=str(tree / "src"), n=n))
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    return dict(json.loads(r.stdout))


# -- report ------------------------------------------------------------------------------------


def table(
    samples: dict[str, dict[str, list[float]]], reference: str, unit: str, scale: float
) -> list[str]:
    arms = list(samples)
    keys = list(samples[reference])
    head = [
        "case",
        *[f"{a} {unit}" for a in arms],
        *[f"{a}/{reference}" for a in arms if a != reference],
    ]
    rows = [head]
    for key in keys:
        meds = [statistics.median(samples[a][key]) / scale for a in arms]
        ratios = [
            statistics.median(
                x / y for x, y in zip(samples[a][key], samples[reference][key], strict=True)
            )
            for a in arms
            if a != reference
        ]
        rows.append([key, *[f"{m:.2f}" for m in meds], *[f"{r:.3f}" for r in ratios]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return [
        "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI smoke run: small streams, 1 round")
    p.add_argument("--rounds", type=int, help="timed rounds (default 9)")
    p.add_argument("--baseline", type=Path, help="a tree without telemetry (its own src)")
    p.add_argument("--json", metavar="FILE", help="also write every sample as JSON")
    args = p.parse_args()
    n = {"burst": 2_004 if args.quick else 20_004, "paced": 100 if args.quick else 1_000}
    rounds = args.rounds or (1 if args.quick else 9)
    names = [*(["base"] if args.baseline else []), "none", "api", "sdk"]
    trees = {name: args.baseline if name == "base" else ROOT for name in names}
    reference = "base" if args.baseline else "none"
    arms: list[Arm] = []
    try:
        for name in names:
            print(f"starting {name}", file=sys.stderr)
            arms.append(Arm(name, trees[name], max(n.values())))
        cpu = servers(arms, n, rounds)
    finally:
        for arm in arms:
            arm.close()
    encoders: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            for key, value in micro(name, trees[name], n["burst"]).items():
                encoders[name].setdefault(key, []).append(value)
    print(
        f"\nserver CPU per event, µs (uvicorn h11; median of {rounds} rounds; burst "
        f"{n['burst']:,} events, paced {n['paced']:,}); ratios: median of per-round ratios\n"
    )
    print("\n".join(table(cpu, reference, "µs", 1000)))
    print("\ncompat.SDKEventEncoder (install()): ns per event (encode) and per call (construct)\n")
    print("\n".join(table(encoders, reference, "ns", 1)))
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu_ns": cpu, "compat_ns": encoders}, indent=1))


if __name__ == "__main__":
    main()
