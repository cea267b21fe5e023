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

``agui-wire record`` runs with the framework venv's interpreter, as a reader who
followed the page runs it there.

Each framework's ``pip install`` line (``<!-- doc-test: install VENV -->``) is held
to the pinned freeze ``tests/frameworks/requirements/VENV.txt``: every package it
names is in the freeze at a version its specifier allows, and what it installs (its
requirements and theirs, extras and markers followed through the venv's installed
metadata; agui-wire's own from pyproject.toml) is exactly the freeze, no more and
no less.

Without the venv the tests skip, unless ``AGUI_WIRE_REQUIRE_FRAMEWORKS=1``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import subprocess
import time
import uuid
from pathlib import Path

import orjson
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import agui_wire
from tests.contract.test_docs import ROOT, Block, install_lines, parse
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

tomllib = pytest.importorskip("tomllib")  # Python 3.11+ (CI's venv)

DOC = ROOT / "docs" / "integrations.md"
BLOCKS = [b for b in parse(DOC) if "framework" in b.directives]
INSTALLS = {b.directives["install"]: b for b in parse(DOC) if b.directives.get("install")}
ACCEPTS = {"proto": PROTO, "sse": SSE}
FRAMEWORK_VENVS = ["adk", "agent-framework", "langgraph", "pydantic-ai", "strands"]


def test_the_document_has_a_server_per_framework() -> None:
    assert sorted(b.directives["framework"] for b in BLOCKS) == ["langgraph", "pydantic-ai"]
    for block in BLOCKS:
        assert block.language == "python"
        assert "agui_wire.install()" in block.body  # the one line
        assert "\napp = " in block.body


def need(venv: str) -> None:
    if not venv_python(venv).exists():
        message = f".venv-fw/{venv} missing: run `make frameworks`"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)


def test_each_framework_has_its_install_line() -> None:
    assert sorted(INSTALLS) == FRAMEWORK_VENVS
    for venv, block in INSTALLS.items():
        assert (ROOT / "tests" / "frameworks" / "requirements" / f"{venv}.txt").exists()
        assert block.language == "sh"


def _pinned(venv: str) -> dict[str, str]:
    text = (ROOT / "tests" / "frameworks" / "requirements" / f"{venv}.txt").read_text()
    pins = [line.split("==") for line in text.splitlines() if "==" in line]
    return {canonicalize_name(name): version.strip() for name, version in pins}


def _own(extras: set[str]) -> list[Requirement]:
    """agui-wire's requirements with ``extras``, from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = list(project["dependencies"])
    for extra in extras:
        found += project["optional-dependencies"][extra]
    return [Requirement(r) for r in found]


def installs(venv: str, line: str) -> tuple[set[str], list[str]]:
    """What ``line`` installs, resolved over the venv's installed metadata: the names of
    every distribution it brings in, and what the venv does not satisfy."""
    site = json.loads(
        subprocess.run(
            [venv_python(venv), "-c", "import json, site, platform; print(json.dumps("
             "[site.getsitepackages(), platform.python_version()]))"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    dists = {
        canonicalize_name(d.metadata["Name"]): d
        for d in importlib.metadata.distributions(path=site[0])
    }
    env = {"python_version": ".".join(site[1].split(".")[:2]), "python_full_version": site[1]}
    args = shlex.split(line)
    assert args[:2] == ["pip", "install"], line
    todo = [Requirement(a) for a in args[2:]]
    seen: set[tuple[str, frozenset[str]]] = set()
    names, problems = set(), []
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        names.add(name)
        if name == "agui-wire":  # not installed there (PYTHONPATH=src): pyproject says
            todo += [r for r in _own(req.extras) if r.marker is None or r.marker.evaluate(env)]
            continue
        dist = dists.get(name)
        if dist is None or not req.specifier.contains(dist.version, prereleases=True):
            problems.append(f"{req} ({dist.version if dist else 'not installed'})")
            continue
        for text in dist.requires or []:
            sub = Requirement(text)
            for extra in req.extras or {""}:
                if sub.marker is None or sub.marker.evaluate({**env, "extra": extra}):
                    todo.append(sub)
                    break
    return names - {"agui-wire"}, problems


@pytest.mark.parametrize("venv", FRAMEWORK_VENVS)
def test_the_install_line_is_exactly_the_pinned_venv(venv: str) -> None:
    need(venv)
    (line,) = install_lines(INSTALLS[venv])
    names, problems = installs(venv, line)
    assert not problems, f"{line}: the pinned venv does not satisfy {problems}"
    pinned = set(_pinned(venv))
    assert names - pinned == set(), f"{line} brings what the freeze lacks"
    assert pinned - names == set(), f"the freeze holds what {line} does not bring"


def serve(block: Block, tmp: Path) -> Server:
    venv = block.directives["framework"]
    need(venv)
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
            # in the framework's venv, as the page's reader runs it: needs the client extra
            r = subprocess.run(
                [venv_python(block.directives["framework"]), "-m", "agui_wire", "record",
                 f"{server.url}/agent", "--accept", name, "--input", str(run_input),
                 "-o", str(capture)],
                env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                capture_output=True, timeout=120, check=False,
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
