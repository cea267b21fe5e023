"""Fixtures for the ``agui-wire`` command line tests (helpers in tests/support/cli_support.py).

``cli`` runs the real console script in a subprocess; ``captures`` holds a
realistic run written by agui_wire as binary, SSE and JSON Lines files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_wire import encode_proto, encode_sse
from agui_wire._sample import realistic_run
from tests.support.cli_support import run_cli


@pytest.fixture(scope="session")
def cli() -> Any:
    return run_cli


@pytest.fixture(scope="session")
def run_events() -> list[dict[str, Any]]:
    return realistic_run(120, 7)


@pytest.fixture(scope="session")
def captures(tmp_path_factory: pytest.TempPathFactory, run_events) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("captures")
    files = {"proto": d / "run.bin", "sse": d / "run.sse", "jsonl": d / "run.jsonl"}
    files["proto"].write_bytes(b"".join(encode_proto(e) for e in run_events))
    files["sse"].write_bytes(b"".join(encode_sse(e) for e in run_events))
    files["jsonl"].write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in run_events))
    return files
