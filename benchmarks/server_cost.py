"""What a server pays per event, from event to socket: real uvicorn, loopback, CPU from the OS.

For each HTTP implementation (uvicorn's h11 and httptools), ``server_app.py`` runs
in a process of its own; this process is the client: a raw socket that sends one
``GET`` and reads to EOF (``Connection: close``), so the client's work never
counts. The server's CPU is read from the OS around each stream: the sum of
``/proc/<pid>/task/*/schedstat`` (nanoseconds on a CPU, every thread of the
server), divided by the events streamed.

Contenders (``server_app.py`` says exactly what each does): the official SDK
pattern; ``EventStreamResponse`` on both transports (also fed pydantic events,
and compressed with gzip, Brotli and Zstandard, negotiated from
``Accept-Encoding``); the one-send floor (pre-encoded frames, one ASGI send per
event) and the batched floor (64 frames per send). Modes: burst (every event
ready at once) and paced (the producer idles ~1 ms after each event).

Method: one untimed pass first checks every response (the body decodes to
exactly the run's events; for the SDK, the same number of events), and records
the wire bytes; then ``--rounds`` rounds, each running every case once in a
rotated order (drift and other load hit all alike); the median per case is
reported. Then the added delay (``/delay``: from the producer's yield to the
return of the send carrying the event, measured inside the server) as p50/p99.

    .venv/bin/python benchmarks/server_cost.py              # the README table (~4 min)
    .venv/bin/python benchmarks/server_cost.py --quick      # CI smoke run (~20 s)
    .venv/bin/python benchmarks/server_cost.py --markdown   # tables as Markdown

Targets, checked and printed: burst CPU per event <= 1/20 of the
official pattern's, both transports; paced within 1.1x of the one-send floor;
p99 added delay <= 1 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode  # noqa: E402
from agui_wire._compression import available, decompressor  # noqa: E402
from agui_wire._sample import realistic_run  # noqa: E402

SEED = 20_004


@dataclass
class Case:
    contender: str
    transport: str
    mode: str
    coding: str | None = None
    label: str = ""
    cpu: list[float] = field(default_factory=list)  # ns per event, per round
    wire_bytes: int = 0

    def path(self, n: int) -> str:
        q = f"/{self.contender}?t={self.transport}&m={self.mode}&n={n}"
        return q + (f"&z={self.coding}" if self.coding else "")

    @property
    def key(self) -> str:
        z = f"+{self.coding}" if self.coding else ""
        return f"{self.mode}/{self.contender}{z}/{self.transport}"


def cases(codings: tuple[str, ...]) -> list[Case]:
    out = []
    for mode in ("burst", "paced"):
        out.append(Case("official", "sse", mode, label="official SDK pattern (SSE)"))
        for t in ("sse", "proto"):
            out.append(Case("esr", t, mode, label="EventStreamResponse"))
        if mode == "burst":
            for t in ("sse", "proto"):
                out.append(Case("esr_pydantic", t, mode, label="EventStreamResponse, pydantic"))
        for t in ("sse", "proto"):
            out.append(Case("floor1", t, mode, label="floor: one send per event"))
        if mode == "paced":
            out.append(Case("idle", "sse", mode, label="the pacing alone (no sends)"))
        if mode == "burst":
            for t in ("sse", "proto"):
                out.append(Case("floor64", t, mode, label="floor: 64 frames per send"))
        for z in codings:
            for t in ("sse", "proto"):
                out.append(Case("esr", t, mode, coding=z, label=f"EventStreamResponse + {z}"))
    return out


# -- the server process ----------------------------------------------------------------


class Server:
    def __init__(self, http: str, events: int) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "server_app.py"),
                "--port",
                str(self.port),
                "--http",
                http,
                "--events",
                str(events),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.close()
            raise RuntimeError(f"server_app.py did not start: {line!r}")

    def cpu_ns(self) -> int:
        total = 0
        base = f"/proc/{self.proc.pid}/task"
        for tid in os.listdir(base):
            try:
                with open(f"{base}/{tid}/schedstat") as fh:
                    total += int(fh.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass  # a thread that ended: its time is lost (none of ours use threads)
        return total

    def get(self, path: str, coding: str | None = None, keep: bool = False) -> bytes:
        """One request; the raw response (head + body) if ``keep``, else its length."""
        head = f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
        if coding:
            head += f"Accept-Encoding: {coding}\r\n"
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall((head + "\r\n").encode())
            buf = bytearray(1 << 20)
            view = memoryview(buf)
            chunks = []
            total = 0
            while True:
                n = sock.recv_into(view)
                if n == 0:
                    break
                total += n
                if keep:
                    chunks.append(bytes(view[:n]))
        return b"".join(chunks) if keep else total.to_bytes(8, "big")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def dechunk(raw: bytes) -> tuple[dict[str, str], bytes]:
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if " 200 " not in lines[0] + " ":
        raise RuntimeError(f"bad response: {lines[0]}")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    if headers.get("transfer-encoding") != "chunked":
        return headers, rest
    body = bytearray()
    i = 0
    while True:
        j = rest.index(b"\r\n", i)
        size = int(rest[i:j].split(b";")[0], 16)
        if size == 0:
            return headers, bytes(body)
        body += rest[j + 2 : j + 2 + size]
        i = j + 2 + size + 2


def check(server: Server, case: Case, n: int, expected: list[dict[str, Any]]) -> None:
    """The response carries the run: every event (ours: exactly the dicts)."""
    headers, body = dechunk(server.get(case.path(n), case.coding, keep=True))
    case.wire_bytes = len(body)
    if case.coding:
        if headers.get("content-encoding") != case.coding:
            raise RuntimeError(f"{case.key}: content-encoding {headers.get('content-encoding')}")
        body = decompressor(case.coding)(body)
    ctype = PROTO_MEDIA_TYPE if case.transport == "proto" else SSE_MEDIA_TYPE
    if headers.get("content-type", "").split(";")[0] != ctype:
        raise RuntimeError(f"{case.key}: content-type {headers.get('content-type')}")
    events = decode(body, ctype)
    if len(events) != (0 if case.contender == "idle" else n):
        raise RuntimeError(f"{case.key}: {len(events)} events, not {n}")
    if case.contender == "idle":
        return
    if case.contender in ("esr", "floor1", "floor64") and events != expected[:n]:
        raise RuntimeError(f"{case.key}: the events differ from the run")


def measure(server: Server, all_cases: list[Case], n: dict[str, int], rounds: int) -> None:
    for r in range(rounds):
        shift = (r * 5) % len(all_cases)
        for case in all_cases[shift:] + all_cases[:shift]:
            events = n[case.mode]
            before = server.cpu_ns()
            server.get(case.path(events), case.coding)
            case.cpu.append((server.cpu_ns() - before) / events)
        print(f"  round {r + 1}/{rounds}", file=sys.stderr)


def delays(server: Server, n: dict[str, int]) -> dict[str, dict[str, float]]:
    out = {}
    for mode in ("paced", "bursty", "burst"):
        for c in ("floor1", "esr"):
            for t in ("sse", "proto"):
                events = n["paced"] if mode != "burst" else n["burst"]
                raw = server.get(f"/delay?c={c}&t={t}&m={mode}&n={events}", keep=True)
                out[f"{mode}/{c}/{t}"] = json.loads(dechunk(raw)[1])
    return out


# -- report -----------------------------------------------------------------------------


def _med(case: Case) -> float:
    return statistics.median(case.cpu) / 1000  # µs


def _table(rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        return out + ["| " + " | ".join(r) + " |" for r in rows[1:]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def report(results: dict[str, Any], markdown: bool) -> str:
    lines = []
    for http, res in results["servers"].items():
        cs: list[Case] = res["cases"]
        by = {c.key: c for c in cs}
        n = res["n"]
        lines += [
            "",
            f"uvicorn {http}: server CPU per event, µs (median of {res['rounds']} rounds; "
            f"burst {n['burst']:,} events, paced {n['paced']:,})",
            "",
        ]
        rows = [["mode", "contender", "SSE", "protobuf", "vs official", "bytes/event"]]
        for mode in ("burst", "paced"):
            official = by[f"{mode}/official/sse"]
            seen: list[str] = []
            for c in cs:
                name = c.key.split("/")[1]
                if c.mode != mode or name in seen:
                    continue
                seen.append(name)
                pair = [by.get(f"{mode}/{name}/{t}") for t in ("sse", "proto")]
                cells = [f"{_med(x):.2f}" if x else "-" for x in pair]
                best = min((x for x in pair if x), key=_med)
                ratio = _med(official) / _med(best)
                vs = (
                    "1"
                    if best is official
                    else (f"1/{ratio:.0f}" if ratio >= 10 else f"1/{ratio:.1f}")
                )
                size = " / ".join(f"{x.wire_bytes / n[mode]:.0f}" if x else "-" for x in pair)
                rows.append([mode, c.label, *cells, vs, size])
        lines += _table(rows, markdown)
        lines += [
            "",
            "added delay, µs (the producer's yield -> the send carrying it returned):",
            "",
        ]
        rows = [["producer", "response", "SSE p50", "SSE p99", "proto p50", "proto p99"]]
        for mode in ("paced", "bursty", "burst"):
            for c, label in (("floor1", "one send per event"), ("esr", "EventStreamResponse")):
                d = [res["delays"][f"{mode}/{c}/{t}"] for t in ("sse", "proto")]
                cells = [f"{x[k]:.1f}" for x in d for k in ("p50_us", "p99_us")]
                rows.append([mode, label, *cells])
        lines += _table(rows, markdown)
        lines += ["", "targets:"] + [f"  {t}" for t in targets(res)]
    if "oneshot" in results:
        lines += ["", "one-shot vs bound encoder, ns per call (median of interleaved runs):", ""]
        rows = [["transport", "EventEncoder(...).encode", "one-shot", "ratio"]]
        for t, (bound, one) in results["oneshot"].items():
            rows.append([t, f"{bound:.0f}", f"{one:.0f}", f"{one / bound:.2f}x"])
        lines += _table(rows, markdown)
    return "\n".join(lines)


def targets(res: dict[str, Any]) -> list[str]:
    by = {c.key: c for c in res["cases"]}
    out = []
    off = _med(by["burst/official/sse"])
    for t in ("sse", "proto"):
        ours = _med(by[f"burst/esr/{t}"])
        ok = ours <= off / 20
        out.append(
            f"burst {t}: EventStreamResponse {ours:.2f} µs = 1/{off / ours:.0f} of official "
            f"{off:.2f} µs (target <= 1/20): {'met' if ok else 'NOT met'}"
        )
    idle = _med(by["paced/idle/sse"])
    for t in ("sse", "proto"):
        ours = _med(by[f"paced/esr/{t}"])
        floor = _med(by[f"paced/floor1/{t}"])
        ok = ours <= floor * 1.1
        above = (ours - idle) / max(floor - idle, 1e-9)
        out.append(
            f"paced {t}: EventStreamResponse {ours:.2f} µs = {ours / floor:.2f}x the one-send "
            f"floor {floor:.2f} µs (target <= 1.1x): {'met' if ok else 'NOT met'}; above "
            f"the producer's own pacing ({idle:.2f} µs): {above:.2f}x"
        )
    worst = max(d["p99_us"] for k, d in res["delays"].items() if "/esr/" in k and "burst/" not in k)
    out.append(
        f"p99 added delay, paced and bursty producers: {worst:.0f} µs (target <= 1000 µs): "
        f"{'met' if worst <= 1000 else 'NOT met'}"
    )
    return out


def oneshot(repeats: int) -> dict[str, tuple[float, float]]:
    """``encode_proto`` / ``encode_sse`` against ``EventEncoder(...).encode`` on the
    run's TEXT_MESSAGE_CONTENT events, interleaved, median of ``repeats``."""
    from agui_wire import EventEncoder, encode_proto, encode_sse

    events = [e for e in realistic_run(20_004, SEED) if e["type"] == "TEXT_MESSAGE_CONTENT"]
    pairs = {
        "protobuf": (EventEncoder(PROTO_MEDIA_TYPE).encode, encode_proto),
        "SSE": (EventEncoder(SSE_MEDIA_TYPE).encode, encode_sse),
    }
    out = {}
    for name, (bound, one) in pairs.items():
        runs: dict[int, list[float]] = {0: [], 1: []}
        for r in range(repeats):
            for i in (r % 2, 1 - r % 2):
                fn = (bound, one)[i]
                start = time.perf_counter_ns()
                for e in events:
                    fn(e)
                runs[i].append((time.perf_counter_ns() - start) / len(events))
        out[name] = (statistics.median(runs[0]), statistics.median(runs[1]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI smoke run: small streams, 1 round")
    p.add_argument("--http", nargs="+", default=["h11", "httptools"], choices=["h11", "httptools"])
    p.add_argument("--events", type=int, help="burst stream length (default 20,004)")
    p.add_argument("--paced-events", type=int, help="paced stream length (default 1,000)")
    p.add_argument("--rounds", type=int, help="timed rounds (default 5)")
    p.add_argument("--no-compression", action="store_true", help="leave out the compressed cases")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", metavar="FILE", help="also write every sample as JSON")
    args = p.parse_args()
    n = {
        "burst": args.events or (2_004 if args.quick else 20_004),
        "paced": args.paced_events or (100 if args.quick else 1_000),
    }
    rounds = args.rounds or (1 if args.quick else 5)
    codings = () if args.no_compression else available()
    expected = realistic_run(max(n.values()), SEED)
    results: dict[str, Any] = {"servers": {}, "n": n}
    for http in args.http:
        print(f"uvicorn {http}: starting", file=sys.stderr)
        server = Server(http, max(n.values()))
        try:
            all_cases = cases(codings)
            for case in all_cases:
                check(server, case, n[case.mode], expected)
            measure(server, all_cases, n, rounds)
            d = delays(server, n)
        finally:
            server.close()
        results["servers"][http] = {"cases": all_cases, "rounds": rounds, "n": n, "delays": d}
    results["oneshot"] = oneshot(5 if args.quick else 21)
    print(report(results, args.markdown))
    if args.json:
        out = {
            http: {
                "rounds": r["rounds"],
                "n": r["n"],
                "delays": r["delays"],
                "cases": {c.key: {"cpu_ns": c.cpu, "wire_bytes": c.wire_bytes} for c in r["cases"]},
            }
            for http, r in results["servers"].items()
        }
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
