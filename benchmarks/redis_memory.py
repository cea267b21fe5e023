"""Memory per request of a run store replica.

    .venv/bin/python benchmarks/redis_memory.py [--events 100000] [--joiners 30]
        [--big 300] [--size 1000000]

Starts a redis-server and one uvicorn replica of tests/redis/app.py (real
processes on loopback), then runs the two scenarios of tests/redis/memory.py:

* 30 concurrent ``compact=1`` joiners of a stored 100,000-event run: the replica's
  peak RSS growth (target: at most 64 MiB) and every joiner's time to its first
  byte (target: all within 1 s);
* one slow reader of a run of 300 events of 1 MB each, published as fast as
  possible while it reads: the replica's peak RSS growth (target: at most 32 MiB).

The machine is shared (2 cores): times are indicative; RSS is the replica's own.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.redis.harness import RedisServer, Replica  # noqa: E402
from tests.redis.memory import MiB, compact_joiners, slow_reader  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--joiners", type=int, default=30)
    parser.add_argument("--big", type=int, default=300)
    parser.add_argument("--size", type=int, default=1_000_000)
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        replica = Replica(server.url, Path(tmp) / "replica.log").start()
        try:
            c = asyncio.run(
                compact_joiners(replica, server.url, events=args.events, joiners=args.joiners)
            )
            ok = c["growth"] <= 64 * MiB and c["first_byte_max"] <= 1.0
            failed |= not ok
            print(
                f"{c['joiners']} compact joiners of a {c['events']:,}-event run "
                f"({c['stored'] / MiB:.1f} MiB in Redis): replica RSS +{c['growth'] / MiB:.1f} MiB "
                f"(target <= 64), first byte p50 {c['first_byte_p50'] * 1e3:.0f} ms, "
                f"max {c['first_byte_max'] * 1e3:.0f} ms (target <= 1000): "
                + ("ok" if ok else "NOT MET")
            )
            s = asyncio.run(slow_reader(replica, server.url, events=args.big, size=args.size))
            ok = s["growth"] <= 32 * MiB
            failed |= not ok
            print(
                f"one slow reader of {s['events']} x {s['size'] / 1e6:g} MB events "
                f"({s['read'] / MiB:.0f} MiB read in {s['seconds']:.1f} s): replica RSS "
                f"+{s['growth'] / MiB:.1f} MiB (target <= 32): " + ("ok" if ok else "NOT MET")
            )
        finally:
            replica.stop()
            server.stop()
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
