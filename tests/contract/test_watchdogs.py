"""No test can hold CI until its clock runs out (a try sat at 99% of a pass until then).

Runs pytest under this project's own configuration (pyproject.toml) on a scratch test
that never ends, with the deadline scaled down from the command line: one that waits
with the GIL released, one stuck in C code that holds it (a Python timer never runs
there). Under pytest-xdist, as `make test` runs, the worker is replaced and only that
test fails; alone, as the frameworks' and sanitizer passes run, the session ends. Both
print the stuck test's stack.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STUCK = {
    "sleeps": "import time\n\ndef test_stuck():\n    time.sleep(3600)\n",
    # catastrophic backtracking: the regex engine never releases the GIL
    "holds_the_gil": "import re\n\ndef test_stuck():\n    re.match(r'(a+)+$', 'a' * 64 + 'b')\n",
}
RUNNERS = {"xdist": ["-n", "2"], "alone": ["-p", "no:xdist"]}


@pytest.mark.parametrize("runner", sorted(RUNNERS))
@pytest.mark.parametrize("kind", sorted(STUCK))
def test_a_stuck_test_ends_in_bounded_time(kind: str, runner: str, tmp_path: Path) -> None:
    (tmp_path / "test_stuck.py").write_text(STUCK[kind])
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    pass\n")
    cmd = [
        sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
        "--rootdir", str(tmp_path), "-p", "no:cacheprovider", *RUNNERS[runner],
        "-o", "faulthandler_timeout=3", str(tmp_path),
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"a stuck test held the session past 120 s:\n{e.stdout!r}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Timeout (0:00:03)!" in out, out
    assert 'test_stuck.py", line 4 in test_stuck' in out, out  # the stuck line's stack
    if runner == "xdist":
        assert "1 failed, 1 passed" in out, out
        assert "crashed while running 'test_stuck.py::test_stuck'" in out, out


SURVIVOR = """
import asyncio

import pytest

from tests.support import stores
from tests.support.stores import Opened

stores.SHUTDOWN = 0.2


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def opened(anyio_backend):
    opened = Opened()
    yield opened
    await opened.aclose()


async def stubborn():
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass  # a task that survives its cancellation


@pytest.mark.anyio
async def test_leaves_a_survivor(opened):
    asyncio.ensure_future(stubborn())
    await asyncio.sleep(0)


@pytest.mark.anyio
async def test_after_it(opened):
    await asyncio.sleep(0)
"""


def test_a_task_that_survives_its_cancellation_fails_its_test_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    """tests/support/stores.py: a run store test's teardown ends the tasks it left; one
    that will not end fails that test, naming what it awaits, and the loop still
    closes (anyio's runner would wait for it for ever)."""
    (tmp_path / "test_survivor.py").write_text(SURVIVOR)
    cmd = [
        sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
        "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-p", "no:xdist",
        "-o", "faulthandler_timeout=60", str(tmp_path),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 task(s) did not end within 0.2 s of being cancelled" in out, out
    assert "in stubborn" in out, out  # what it awaits
    assert "2 passed, 1 error" in out, out
