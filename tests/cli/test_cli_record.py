"""``agui-wire record`` against a real paced agent (uvicorn on a free port), then
``inspect --timeline`` on what it recorded: the times measured are the server's
pauses (tests/cli/paced_agent.py), on both transports. The end-to-end tests run
the console script; the error paths run ``main`` in process (no interpreter
start-up per check), against the same real server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import agui_wire
from tests.cli import paced_agent
from tests.support.cli_support import command, run_cli, run_in_process
from tests.support.live import free_port, start_uvicorn, stop

ROOT = Path(__file__).resolve().parents[2]
ACCEPTS = {"sse": agui_wire.SSE_MEDIA_TYPE, "proto": agui_wire.PROTO_MEDIA_TYPE}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("paced") / "server.log"
    # the server runs the same implementation as the tests (AGUI_WIRE_PURE passes through)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url, process = start_uvicorn("tests.cli.paced_agent:app", cwd=ROOT, env=env, log=log)
    try:
        yield url
    finally:
        stop(process)


def sidecar(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in Path(f"{path}.timing.jsonl").read_bytes().splitlines()]


@pytest.mark.parametrize("accept", ["sse", "proto"])
def test_record_then_timeline(agent: str, tmp_path: Path, accept: str) -> None:
    capture = tmp_path / f"run.{accept}"
    r = run_cli(
        "record", f"{agent}/agent", "--accept", accept, "--message", "hi Zürich", "-o", capture
    )
    assert r.returncode == 0, r.stderr.decode()
    assert f"run.{accept}.timing.jsonl" in r.stdout.decode()

    # the capture: exactly the agent's plan, in the transport asked for, for the input sent
    lines = sidecar(capture)
    header, chunks, tail = lines[0], lines[1:-1], lines[-1]
    assert header["agui_wire_timing"] == 1
    assert header["status"] == 200
    assert header["content_type"].split(";")[0] == ACCEPTS[accept]
    assert header["accept"] == ACCEPTS[accept]
    events = agui_wire.decode(capture.read_bytes(), header["content_type"])
    run_id = events[0]["runId"]
    plan = paced_agent.plan(events[0]["threadId"], run_id, "hi Zürich")
    assert [e["type"] for e in events] == [e["type"] for _, e in plan]
    assert events[3]["delta"] == "hi Zürich"  # the default input carried --message
    assert run_id.startswith("run-")
    # the chunks tile the capture; times only go forward
    assert [c["offset"] for c in chunks] == [
        sum(c["length"] for c in chunks[:i]) for i in range(len(chunks))
    ]
    assert tail["bytes"] == capture.stat().st_size == sum(c["length"] for c in chunks)
    assert "error" not in tail
    times = [c["at"] for c in chunks]
    assert times == sorted(times)
    assert header["response_at"] <= times[0] <= tail["end"]
    assert len(chunks) >= 10  # paced: the events did not arrive in one read

    r = run_in_process("inspect", capture, "--timeline", "--json")
    assert r.returncode == 0, r.stderr.decode()
    tl = orjson.loads(r.stdout)
    assert tl["clock"] == "chunks"
    assert [m["type"] for m in tl["marks"]] == [e["type"] for e in events]
    mark_times = [m["t"] for m in tl["marks"]]
    assert mark_times == sorted(mark_times)
    # the server paused at least this long before the first text delta, so no client can
    # have seen it sooner; the tool's pause shows up between TOOL_CALL_END and the result
    before_token = 0.0
    for pause, event in plan:
        before_token += pause
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            break
    assert tl["first_token"] >= before_token - 0.005
    spans = {s["kind"]: s for s in tl["spans"]}
    tool = spans["tool call"]
    assert tool["label"] == "get_weather (call-1)"
    assert tool["closed"]
    # (a lower bound only up to the client's delay in reading TOOL_CALL_END, which a
    # loaded machine stretches: half the pause still tells it from no pause)
    assert tool["result_at"] - tool["args_end"] >= paced_agent.TOOL_SECONDS / 2
    message = spans["message"]
    assert (message["deltas"], message["chars"]) == (6, len("".join(paced_agent.WORDS)))
    run = spans["run"]
    assert run["label"] == f"run {run_id}"
    assert run["closed"]
    assert run["end"] - run["start"] >= sum(p for p, _ in plan) - 0.01
    gap_after = {(g["after"], g["before"]) for g in tl["gaps"]}
    assert (9, 10) in gap_after  # TOOL_CALL_END -> TOOL_CALL_RESULT

    text = run_in_process("inspect", capture, "--timeline").stdout.decode()
    assert "times: arrival of each of" in text
    assert "(time to first token)" in text
    assert "get_weather (call-1): at " in text
    assert "result " in text
    assert "assistant message m-1: at " in text
    assert "chars/s" in text
    assert "longest gaps:" in text


def test_record_with_an_input_file_and_headers(agent: str, tmp_path: Path) -> None:
    run_input = {
        "threadId": "t-file",
        "runId": "r-file",
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": "from a file"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    (tmp_path / "input.json").write_bytes(orjson.dumps(run_input))
    r = run_in_process(
        "record", f"{agent}/agent", "--input", "input.json", "-H", "X-Trace: 1", "-o", "out.sse",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    events = agui_wire.decode((tmp_path / "out.sse").read_bytes(), agui_wire.SSE_MEDIA_TYPE)
    assert events[0]["runId"] == "r-file"
    assert events[3]["delta"] == "from a file"
    # gzip on the wire: recorded as the client reads it, decompressed, chunk by chunk
    r = run_in_process("record", f"{agent}/agent?gzip=1", "-o", "gz.sse", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert sidecar(tmp_path / "gz.sse")[0]["content_encoding"] == "gzip"
    events = agui_wire.decode((tmp_path / "gz.sse").read_bytes(), agui_wire.SSE_MEDIA_TYPE)
    assert [e["type"] for e in events][-1] == "RUN_FINISHED"
    assert len(sidecar(tmp_path / "gz.sse")) > 10  # flushed per event: still paced chunks
    # the default name when -o is not given, by the transport that answered
    r = run_in_process("record", f"{agent}/agent", "--accept", "proto", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    made = sorted(p.name for p in tmp_path.glob("record-*"))
    assert len(made) == 2
    assert made[0].endswith(".bin")
    assert made[1].endswith(".bin.timing.jsonl")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--input", "missing.json"], 3, "cannot read missing.json"),
        (["--input", "bad.json"], 1, "not JSON"),
        (["--input", "list.json"], 1, "a RunAgentInput is a JSON object, not list"),
        (["--input", "list.json", "--message", "x"], 2, "--message fills the default input"),
        (["-H", "no colon"], 2, "write a header as 'Name: value'"),
        (["--timeout", "0"], 2, "--timeout must be positive"),
    ],
)
def test_record_usage_errors(
    agent: str, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "list.json").write_text("[]")
    r = run_in_process("record", f"{agent}/agent", *args, cwd=tmp_path)
    assert r.returncode == code, r.stderr.decode()
    assert message in r.stderr.decode()
    assert not list(tmp_path.glob("record-*"))


def test_record_refusals_and_broken_streams(agent: str, tmp_path: Path) -> None:
    # a server error: nothing written, the status and the body's start said
    r = run_in_process("record", f"{agent}/fail", "-o", "f.sse", cwd=tmp_path)
    assert r.returncode == 1
    assert "HTTP 500; nothing recorded" in r.stderr.decode()
    assert "the agent is down" in r.stderr.decode()
    assert not (tmp_path / "f.sse").exists()
    # nobody listening
    r = run_in_process(
        "record", f"http://127.0.0.1:{free_port()}/agent", "-o", "n.sse", cwd=tmp_path
    )
    assert r.returncode == 1
    assert "ConnectError" in r.stderr.decode()
    # not a URL
    r = run_in_process("record", "agent.example", "-o", "n.sse", cwd=tmp_path)
    assert r.returncode == 2
    assert "not a URL" in r.stderr.decode()
    # not an AG-UI content type: recorded, with a warning
    r = run_in_process("record", f"{agent}/page", "-o", "p.sse", cwd=tmp_path)
    assert r.returncode == 0
    assert "text/html" in r.stderr.decode()
    assert (tmp_path / "p.sse").read_bytes().startswith(b"<html>")
    # the connection breaks mid-body: what arrived is kept, the sidecar says how it ended
    r = run_in_process("record", f"{agent}/cut", "-o", "c.sse", cwd=tmp_path)
    assert r.returncode == 1
    assert "the stream broke after" in r.stderr.decode()
    tail = sidecar(tmp_path / "c.sse")[-1]
    assert tail["bytes"] == (tmp_path / "c.sse").stat().st_size > 0
    assert tail["error"]
    r = run_in_process("inspect", "c.sse", "--timeline", cwd=tmp_path)
    text = r.stdout.decode()
    assert "assistant message m: at " in text
    assert "never ended" in text
    assert "(broke: " in text


def test_record_without_httpx_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)  # import httpx -> ImportError
    r = run_in_process("record", "http://127.0.0.1:9/agent", "-o", "x.sse", cwd=tmp_path)
    assert r.returncode == 2
    assert "pip install 'agui-wire[client]'" in r.stderr.decode()
    assert not list(tmp_path.iterdir())


def test_an_interrupted_recording_keeps_what_came(agent: str, tmp_path: Path) -> None:
    capture = tmp_path / "slow.sse"
    process = subprocess.Popen(
        [*command(), "record", f"{agent}/slow", "-o", capture],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a shell without job control starts `cmd &` with SIGINT ignored, and the child
        # would inherit that (Python then installs no KeyboardInterrupt handler)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(sidecar_lines(capture)) < 6:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)  # Ctrl-C
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err.decode()
    lines = sidecar(capture)
    assert lines[-1]["error"] == "interrupted"
    assert lines[-1]["bytes"] == capture.stat().st_size
    events = agui_wire.decode(capture.read_bytes(), agui_wire.SSE_MEDIA_TYPE)
    assert len(events) >= 5  # every complete event that came is there
    tl = orjson.loads(run_in_process("inspect", capture, "--timeline", "--json").stdout)
    assert tl["end_error"] == "interrupted"
    assert len(tl["marks"]) == len(events)


def sidecar_lines(capture: Path) -> list[bytes]:
    path = Path(f"{capture}.timing.jsonl")
    return path.read_bytes().splitlines() if path.exists() else []
