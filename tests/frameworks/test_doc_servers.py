"""The complete servers of docs/integrations.md, run as written in their frameworks' venvs.

Each ``python`` block marked ``<!-- doc-test: framework VENV -->`` is a whole
``server.py``; tests/contract/test_docs.py skips it (the framework is not in the
project's venv) and this module serves it: the block is written to a scratch
directory as ``server.py`` and started as the document says, ``uvicorn
server:app``, with ``.venv-fw/VENV``'s interpreter (agui_wire from ``src``).
Then ``agui-wire record`` (the command the document shows) asks it for a run
once with ``--accept proto`` and once with ``--accept sse``:

* the binary answer is exactly ``application/vnd.ag-ui.event+proto``, the SSE
  answer ``text/event-stream``;
* both decode to one run, ``RUN_STARTED`` to ``RUN_FINISHED``, with the model's
  text in ``TEXT_MESSAGE_CONTENT`` deltas;
* the binary events equal the SSE events (ids and timestamps canonicalised, as
  test_frameworks.py does).

Without the venv the test skips, unless ``AGUI_WIRE_REQUIRE_FRAMEWORKS=1``.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import orjson
import pytest

import agui_wire
from tests.contract.test_docs import ROOT, Block, parse
from tests.frameworks import test_frameworks
from tests.frameworks.test_frameworks import (
    PROTO,
    REQUIRED,
    SSE,
    Server,
    canonical_events,
    free_port,
    venv_python,
    wait_ready,
)
from tests.support.cli_support import run_cli

DOC = ROOT / "docs" / "integrations.md"
BLOCKS = [b for b in parse(DOC) if "framework" in b.directives]
ACCEPTS = {"proto": PROTO, "sse": SSE}


def test_the_document_has_a_server_per_framework() -> None:
    assert sorted(b.directives["framework"] for b in BLOCKS) == ["langgraph", "pydantic-ai"]
    for block in BLOCKS:
        assert block.language == "python"
        assert "agui_wire.install()" in block.body  # the one line
        assert "\napp = " in block.body


def serve(block: Block, tmp: Path) -> Server:
    venv = block.directives["framework"]
    if not venv_python(venv).exists():
        message = f".venv-fw/{venv} missing: run `make frameworks`"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    (tmp / "server.py").write_text(block.body)
    port = free_port()
    log = tmp / "server.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(venv_python(venv)), "-m", "uvicorn", "server:app", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp,
        )
    return Server(f"http://127.0.0.1:{port}", process, log)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_the_documented_server_serves_both_transports(block: Block, tmp_path: Path) -> None:
    server = serve(block, tmp_path)
    try:
        wait_ready(server, time.monotonic() + 120)
        events = {}
        for name, media_type in ACCEPTS.items():
            capture = tmp_path / f"run.{name}"
            # a fresh UUID thread per request (canonicalised), so no run resumes another
            run_input = tmp_path / f"input-{name}.json"
            run_input.write_bytes(orjson.dumps(test_frameworks.run_input(str(uuid.uuid4()))))
            r = run_cli(
                "record", f"{server.url}/agent", "--accept", name, "--input", run_input,
                "-o", capture,
            )  # fmt: skip
            assert r.returncode == 0, r.stderr.decode() + server.log.read_text()
            header = orjson.loads(Path(f"{capture}.timing.jsonl").read_bytes().split(b"\n")[0])
            content_type = header["content_type"]
            if name == "proto":
                assert content_type == PROTO  # exactly: the TypeScript client compares with ===
            else:
                assert content_type.partition(";")[0] == media_type
            decoded = agui_wire.decode(capture.read_bytes(), content_type)
            assert decoded[0]["type"] == "RUN_STARTED", decoded[:2]
            assert decoded[-1]["type"] == "RUN_FINISHED", decoded[-2:]
            text = "".join(e["delta"] for e in decoded if e["type"] == "TEXT_MESSAGE_CONTENT")
            assert "21 °C" in text, text
            events[name] = decoded
        assert canonical_events(events["proto"], binary=True) == canonical_events(
            events["sse"], binary=False
        )
        # the recording reads back on a time axis (the document's last command)
        r = run_cli("inspect", tmp_path / "run.proto", "--timeline")
        assert r.returncode == 0, r.stderr.decode()
        assert "(time to first token)" in r.stdout.decode()
    finally:
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
