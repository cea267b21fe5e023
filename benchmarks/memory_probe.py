"""Child process of ``compare.py --memory``: decode a capture file frame by frame
(``iter_decode`` over the open file, events discarded) and report peak RSS.

    python benchmarks/memory_probe.py CAPTURE EXPECTED_EVENTS

Prints JSON: events, seconds, baseline_rss_kib (after imports), peak_rss_kib
(VmHWM from /proc/self/status, else getrusage ru_maxrss) and both sources.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import agui_wire
from agui_wire._codec import selected


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _maxrss_kib() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss // 1024 if sys.platform == "darwin" else rss  # bytes on macOS, KiB elsewhere


def main() -> int:
    path, expected = sys.argv[1], int(sys.argv[2])
    baseline = _status_kib("VmRSS") or _maxrss_kib()
    count = 0
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for _ in agui_wire.iter_decode(fh, agui_wire.PROTO_MEDIA_TYPE):
            count += 1
    seconds = time.perf_counter() - t0
    hwm, maxrss = _status_kib("VmHWM"), _maxrss_kib()
    if count != expected:
        print(f"decoded {count} events, expected {expected}", file=sys.stderr)
        return 1
    print(
        json.dumps(
            {
                "events": count,
                "seconds": seconds,
                "baseline_rss_kib": baseline,
                "peak_rss_kib": hwm if hwm is not None else maxrss,
                "vmhwm_kib": hwm,
                "ru_maxrss_kib": maxrss,
                "backend": dict(selected.IMPLEMENTATIONS),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
