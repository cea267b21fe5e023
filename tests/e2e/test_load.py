"""200 concurrent streams against one uvicorn process, some of them read slowly.

Setup (one server process of its own, so the memory figures are this test's):

* 160 fast readers of the scripted run (``delay`` 10 ms between events), half
  over SSE, half over protobuf, through ``arun_agent``;
* 20 slow readers of the scripted run (20 ms of "work" per event);
* 20 stalled readers of a bulk run (``BULK_EVENTS`` text deltas of
  ``BULK_SIZE`` bytes, produced as fast as the socket takes them; 2.5 times what
  the kernel may buffer for one connection, so ~10 MiB here): they read the
  first event, then nothing for ``STALL`` seconds, then the rest.

Checks: every stream delivers exactly its run, in order; while the stalled
readers read nothing their producers stop (``/runs`` shows them running with
only a part of the run produced: backpressure, not buffering), and resume to
the end afterwards; the server's RSS (``/proc/<pid>/status``) stays bounded
during the load and settles afterwards; the whole thing takes < 60 s.

Why memory stays bounded: ``EventStreamResponse`` asks the producer for the next
event only after ``send`` returned; uvicorn's ``send`` waits on its transport's
drain once the asyncio write buffer is above 64 KiB (``FlowControl``); that
buffer only fills once the kernel's socket buffers (a few MiB on loopback) are
full because the reader stopped reading. So a stalled stream costs the server
at most ~64 KiB of buffered bytes plus one event, however long the run.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from agui_wire.client import arun_agent
from examples.script import bulk_run, scripted_run

# the server's RSS is measured with whichever backend encodes: both passes (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.both_backends]

N_FAST, N_SLOW, N_STALLED = 160, 20, 20
STALL = 1.5  # seconds the stalled readers read nothing
MIB = 1024  # in KiB, the unit of VmRSS
RCVBUF = 64 * 1024  # the stalled readers' SO_RCVBUF (fixed: no receive autotuning)


def _send_buffer_max() -> int:
    """The most a server socket may buffer for a stalled reader (tcp_wmem max)."""
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    except (OSError, IndexError, ValueError):
        return 4 << 20


# A stalled stream must be longer than what the kernel can absorb for it, or a
# producer could finish without ever meeting backpressure: 2.5x that, >= ~6 MiB.
BULK_SIZE = 1024
BULK_EVENTS = max(6000, int(2.5 * (_send_buffer_max() + 2 * RCVBUF) / BULK_SIZE))


class RssSampler(threading.Thread):
    """Samples a process's VmRSS (KiB) every few milliseconds."""

    def __init__(self, server: Any, period: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.period = period
        self.samples: list[int] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.samples.append(self.server.rss_kib())
            time.sleep(self.period)

    def stop(self) -> list[int]:
        self.stopped.set()
        self.join()
        return self.samples


@pytest.fixture(scope="module")
def server(start_server):
    with start_server() as s:
        yield s


def body(run_id: str) -> dict[str, Any]:
    return {"threadId": "load", "runId": run_id, "messages": [], "tools": [], "context": []}


async def warm_up(client: httpx.AsyncClient, url: str) -> None:
    """Touch every code path once so lazy imports and caches are in the baseline."""
    for accept in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE):
        async for _ in arun_agent(client, f"{url}/agent?delay=0", body("warm"), accept=accept):
            pass
        bulk = f"{url}/bulk?events=500&size={BULK_SIZE}"
        async for _ in arun_agent(client, bulk, body("warm-bulk"), accept=accept):
            pass


def test_200_concurrent_streams_with_slow_readers(server) -> None:
    url = server.url
    report: dict[str, Any] = {}

    async def fast(client: httpx.AsyncClient, i: int, work: float) -> None:
        run_id = f"fast-{i}-{uuid.uuid4()}"
        accept = SSE_MEDIA_TYPE if i % 2 else PROTO_MEDIA_TYPE
        got = []
        async for event in arun_agent(
            client, f"{url}/agent?delay=0.01", body(run_id), accept=accept
        ):
            got.append(event)
            if work:
                await asyncio.sleep(work)
        assert got == scripted_run("load", run_id), f"stream {run_id} ({accept})"

    async def stalled(
        client: httpx.AsyncClient, i: int, ready: list[str], release: asyncio.Event
    ) -> None:
        run_id = f"bulk-{i}-{uuid.uuid4()}"
        accept = SSE_MEDIA_TYPE if i % 2 else PROTO_MEDIA_TYPE
        stream = arun_agent(
            client, f"{url}/bulk?events={BULK_EVENTS}&size={BULK_SIZE}", body(run_id), accept=accept
        )
        got = [await stream.__anext__()]
        ready.append(run_id)
        await release.wait()  # reading nothing: the server must stop producing
        async for event in stream:
            got.append(event)
        assert got == list(bulk_run("load", run_id, BULK_EVENTS, BULK_SIZE)), run_id

    async def main() -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=20)
        timeout = httpx.Timeout(60.0)
        small_window = httpx.AsyncHTTPTransport(
            limits=limits, socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)]
        )
        async with (
            httpx.AsyncClient(limits=limits, timeout=timeout) as client,
            httpx.AsyncClient(transport=small_window, timeout=timeout) as slow_client,
            httpx.AsyncClient(timeout=timeout) as control,
        ):
            await warm_up(client, url)
            await asyncio.sleep(0.3)
            report["baseline"] = server.rss_kib()
            sampler = RssSampler(server)
            sampler.start()
            t0 = time.monotonic()
            ready: list[str] = []
            release = asyncio.Event()
            tasks = [asyncio.ensure_future(fast(client, i, 0.0)) for i in range(N_FAST)]
            tasks += [asyncio.ensure_future(fast(client, N_FAST + i, 0.02)) for i in range(N_SLOW)]
            tasks += [
                asyncio.ensure_future(stalled(slow_client, i, ready, release))
                for i in range(N_STALLED)
            ]
            while len(ready) < N_STALLED:
                await asyncio.sleep(0.05)
                failed = [t for t in tasks if t.done() and t.exception() is not None]
                if failed:
                    await failed[0]
            await asyncio.sleep(STALL)
            produced = []
            for run_id in ready:
                record = (await control.get(f"{url}/runs/{run_id}")).json()
                assert record["status"] == "running", (run_id, record)
                produced.append(record["produced"])
            report["stalled_produced"] = produced
            report["rss_stalled"] = server.rss_kib()
            release.set()
            await asyncio.gather(*tasks)
            report["elapsed"] = time.monotonic() - t0
            report["during"] = sampler.stop()
            for run_id in ready:
                record = (await control.get(f"{url}/runs/{run_id}")).json()
                assert record == {"status": "finished", "produced": BULK_EVENTS + 4}
            await asyncio.sleep(0.5)
            report["after"] = server.rss_kib()

    asyncio.run(main())

    total = BULK_EVENTS + 4
    peak = max(report["during"])
    print(
        f"\n200 streams in {report['elapsed']:.1f} s; server RSS: baseline "
        f"{report['baseline'] / MIB:.1f} MiB, peak {peak / MIB:.1f} MiB, while stalled "
        f"{report['rss_stalled'] / MIB:.1f} MiB, after {report['after'] / MIB:.1f} MiB; "
        f"stalled producers at {min(report['stalled_produced'])}.."
        f"{max(report['stalled_produced'])} of {total} events"
    )
    assert report["elapsed"] < 60
    # Backpressure: each stalled producer stopped well short of its run (what it
    # did produce sits in the kernel's socket buffers and uvicorn's 64 KiB).
    assert max(report["stalled_produced"]) < 0.9 * total
    # Buffering what the 20 stalled readers did not take would cost the server
    # 20 x (BULK_EVENTS - produced) events: over 100 MiB.
    assert peak - report["baseline"] < 32 * MIB
    assert report["after"] - report["baseline"] < 24 * MIB
