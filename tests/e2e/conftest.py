"""End-to-end fixtures: the example app under a real uvicorn, and the real
``@ag-ui/client`` ``HttpAgent`` in Node.

Strategy: ``live_server`` starts ``python -m uvicorn examples.server:app`` as a
subprocess on a free loopback port (one server per test module, so a module's
measurements are its own), waits until ``/healthz`` answers, and kills it on
teardown. ``ts_agent`` runs ``tests/interop/http_agent.cjs`` (a real
``HttpAgent`` over Node's fetch) against a URL; it depends on the interop
suite's ``node_harness`` fixture, which installs and version-checks the pinned
npm packages (same skip/fail rules: ``AGUI_WIRE_SKIP_INTEROP=1`` skips).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

# The interop suite's node_harness fixture, registered for this directory too.
from tests.interop.conftest import node_harness as node_harness
from tests.support.live import start_uvicorn, stop

ROOT = Path(__file__).resolve().parents[2]
INTEROP = ROOT / "tests" / "interop"
HTTP_AGENT = INTEROP / "http_agent.cjs"


@dataclass
class LiveServer:
    """A uvicorn process serving examples.server:app."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss_kib(self) -> int:
        """The server process's resident set size (VmRSS), in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS in /proc status")

    def run_status(self, run_id: str) -> dict[str, Any] | None:
        r = httpx.get(f"{self.url}/runs/{run_id}", timeout=5)
        return None if r.status_code == 404 else r.json()

    def wait_status(self, run_id: str, wanted: str, timeout: float = 5.0) -> dict[str, Any]:
        """Poll ``/runs/{run_id}`` until its status is ``wanted``."""
        deadline = time.monotonic() + timeout
        record = None
        while time.monotonic() < deadline:
            record = self.run_status(run_id)
            if record is not None and record["status"] == wanted:
                return record
            time.sleep(0.02)
        raise AssertionError(f"run {run_id} is {record}, not {wanted!r} after {timeout}s")


def _start(env: dict[str, str], log: Path) -> LiveServer:
    url, process = start_uvicorn(
        "examples.server:app", cwd=ROOT, env=env, log=log, ready_path="/healthz"
    )
    return LiveServer(url, process, log)


@contextlib.contextmanager
def running_server(**env: str) -> Iterator[LiveServer]:
    """The example app under uvicorn for the duration of the block."""
    full_env = {**os.environ, "AGUI_EXAMPLE_DELAY": "0", "PYTHONUNBUFFERED": "1", **env}
    with tempfile.TemporaryDirectory() as tmp:
        server = _start(full_env, Path(tmp) / "uvicorn.log")
        try:
            yield server
        finally:
            stop(server.process)
            # Anything the server logged (tracebacks) helps explain a failure.
            sys.stderr.write(server.log.read_text(errors="replace"))


@pytest.fixture(scope="session")
def start_server() -> Any:
    """``running_server`` itself, for modules that want a server of their own."""
    return running_server


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    with running_server() as server:
        yield server


# -- the TypeScript client ----------------------------------------------------------


@dataclass
class TsRun:
    """What the real HttpAgent did (see http_agent.cjs for the fields)."""

    accept: str | None
    status: int | None
    content_type: str | None
    events: list[dict[str, Any]]
    completed: bool
    error: dict[str, str] | None
    warnings: list[str]
    extra: dict[str, Any] = field(default_factory=dict)


class TsAgent:
    """Runs http_agent.cjs, one Node process per run."""

    def __init__(self, node: str) -> None:
        self.node = node

    def run(
        self,
        url: str,
        *,
        accept: str | None = None,
        mode: str = "raw",
        thread_id: str = "thread-1",
        run_id: str = "run-1",
        abort_after: int | None = None,
        timeout: float = 60.0,
    ) -> TsRun:
        args = [self.node, str(HTTP_AGENT), "--url", url, "--mode", mode]
        args += ["--thread-id", thread_id, "--run-id", run_id]
        if accept is not None:
            args += ["--accept", accept]
        if abort_after is not None:
            args += ["--abort-after", str(abort_after)]
        proc = subprocess.run(args, capture_output=True, timeout=timeout, cwd=INTEROP, check=False)
        if proc.returncode != 0:
            raise RuntimeError(
                f"http_agent.cjs exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')}"
            )
        out = json.loads(proc.stdout)
        known = ("accept", "status", "contentType", "events", "completed", "error", "warnings")
        return TsRun(
            out["accept"],
            out["status"],
            out["contentType"],
            out["events"],
            out["completed"],
            out["error"],
            out["warnings"],
            {k: v for k, v in out.items() if k not in known},
        )


@pytest.fixture(scope="session")
def ts_agent(node_harness: Any) -> TsAgent:
    return TsAgent(node_harness.node)
