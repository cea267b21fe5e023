"""Fixtures for the ``agui-wire`` command line tests (helpers in tests/support/cli_support.py).

``cli`` runs the real console script in a subprocess; ``captures`` holds a
realistic run written by agui_wire as binary, SSE and JSON Lines files;
``real`` the committed captures of real framework servers (tests/cli/captures,
written by its make_captures.py: LangGraph and pydantic-ai runs as SSE and
protobuf, and a HAR holding the four).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_wire import encode_proto, encode_sse
from agui_wire._sample import realistic_run
from tests.support.cli_support import run_cli

REAL = Path(__file__).resolve().parent / "captures"


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


@pytest.fixture(scope="session")
def real() -> dict[str, Path]:
    names = ("langgraph.sse", "langgraph.bin", "pydantic-ai.sse", "pydantic-ai.bin")
    return {name: REAL / name for name in (*names, "frameworks.har")}
