"""The real AG-UI frameworks, served under uvicorn with only ``agui_wire.install()`` added.

Each framework runs in its own venv (``.venv-fw/<name>``, from the pinned
``tests/frameworks/requirements/<name>.txt``; ``make frameworks`` creates them and
runs this module), because their dependency trees pin different SDK lines. The
apps (``app_<name>.py``) use scripted models: no network but loopback. Per
framework three servers run the same app: ``plain`` (untouched), ``before`` and
``after`` (``agui_wire.install()`` before / after importing the framework).

A route is served in one of three ways (``Route.served_by``): ``encoder``, the
framework's endpoint writing what the SDK's ``EventEncoder`` returns (protobuf
once installed); ``sse``, the framework's endpoint declaring SSE itself
(agent-framework: SSE whatever the client asks, installed or not); ``adapter``,
the framework's event stream served by ``agui_wire.asgi.EventStreamResponse``
(docs/integrations.md), which negotiates by itself in every mode. Checked for
every route:

* a client asking for protobuf gets exactly ``application/vnd.ag-ui.event+proto``
  where the route serves it (``encoder`` once installed, ``adapter``), SSE
  elsewhere;
* SSE from an installed server is byte-identical to the plain server's
  framework endpoint (``Route.reference``), once ids and timestamps (random per
  run) are replaced by placeholders in order of first appearance; the response
  headers match too when it is the same endpoint;
* the protobuf events equal the SSE events (same canonicalisation; integers
  beyond 2**53 as a JavaScript client reads them: doubles);
* the real ``@ag-ui/client`` ``HttpAgent``, its Accept overridden to protobuf,
  parses the protobuf response into the same events.

Without the venvs the tests skip, unless ``AGUI_WIRE_REQUIRE_FRAMEWORKS=1`` (set
by ``make frameworks``), where a missing venv fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui_wire

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
HTTP_AGENT = ROOT / "tests" / "interop" / "http_agent.cjs"
NODE_MODULES = ROOT / "tests" / "interop" / "node_modules"
PROTO = agui_wire.PROTO_MEDIA_TYPE
SSE = agui_wire.SSE_MEDIA_TYPE
REQUIRED = os.environ.get("AGUI_WIRE_REQUIRE_FRAMEWORKS", "") not in ("", "0")


@dataclass(frozen=True)
class Route:
    path: str
    served_by: str = "encoder"  # or "sse", "adapter" (module doc)
    reference: str = ""  # the plain server's endpoint whose SSE this route's must equal

    @property
    def sse_reference(self) -> str:
        return self.reference or self.path

    def content_type(self, mode: str, accept: str) -> str:
        """What the route answers a client asking for ``accept`` with."""
        if accept != PROTO or self.served_by == "sse":
            return SSE
        return PROTO if self.served_by == "adapter" or mode != "plain" else SSE


# framework -> (venv name, routes to run)
FRAMEWORKS: dict[str, tuple[str, tuple[Route, ...]]] = {
    "pydantic_ai": (
        "pydantic-ai",
        (
            Route("/agent"),
            Route("/error"),
            Route("/error-first"),
            Route("/streaming", "adapter", reference="/agent"),
            Route("/streaming-error-first", "adapter", reference="/error-first"),
        ),
    ),
    "langgraph": ("langgraph", (Route("/agent"),)),
    "strands": ("strands", (Route("/agent"),)),
    "adk": ("adk", (Route("/agent"),)),
    "agent_framework": (
        "agent-framework",
        (Route("/agent", "sse"), Route("/adapter", "adapter", reference="/agent")),
    ),
}
MODES = ("plain", "before", "after")


def venv_python(venv: str) -> Path:
    return ROOT / ".venv-fw" / venv / "bin" / "python"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def start(app: str, venv: str, mode: str, tmp: Path) -> Server:
    port = free_port()
    log = tmp / f"{app}-{mode}.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(venv_python(venv)), str(HERE / "serve.py"), app, str(port), mode],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(tmp),
        )
    return Server(f"http://127.0.0.1:{port}", process, log)


def wait_ready(server: Server, deadline: float) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited:\n{server.log.read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"server not ready:\n{server.log.read_text()}")


@pytest.fixture(scope="module", params=list(FRAMEWORKS))
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, Server]]]:
    app = request.param
    venv, _ = FRAMEWORKS[app]
    if not venv_python(venv).exists():
        message = f".venv-fw/{venv} missing: run `make frameworks`"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    tmp = tmp_path_factory.mktemp(app)
    started = {mode: start(app, venv, mode, tmp) for mode in MODES}
    try:
        deadline = time.monotonic() + 120
        for server in started.values():
            wait_ready(server, deadline)
        yield app, started
    finally:
        for server in started.values():
            server.process.terminate()
        for server in started.values():
            try:
                server.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()


def run_input(thread: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": "run-1",
        "state": {},
        "messages": [{"id": "user-1", "role": "user", "content": "What's the weather in Zürich?"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def post(url: str, accept: str | None, thread: str) -> httpx.Response:
    headers = {"accept": accept} if accept else {}
    response = httpx.post(url, json=run_input(thread), headers=headers, timeout=60)
    assert response.status_code == 200, response.text[:500]
    return response


# Ids and timestamps differ per run: UUIDs (with or without dashes; LangGraph's
# run ids are UUIDv7), pydantic-ai's generated ids, and every "timestamp".
_ID = re.compile(
    r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}|pyd_ai_[0-9a-zA-Z]+"
)
_TIMESTAMP = re.compile(r'"timestamp":\d+')


class Canon:
    """Placeholders for ids by first appearance, so equal ids stay equal."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def id(self, match: re.Match[str]) -> str:
        return self.ids.setdefault(match.group(0), f"<id{len(self.ids)}>")

    def text(self, text: str) -> str:
        return _ID.sub(self.id, _TIMESTAMP.sub('"timestamp":0', text))

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: 0 if k == "timestamp" else self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return _ID.sub(self.id, value)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
            return float(value)  # what a JavaScript client holds
        return value


def canonical_events(events: list[dict[str, Any]], *, binary: bool) -> list[dict[str, Any]]:
    canon = Canon()
    out = []
    for event in events:
        if not binary:
            event = agui_wire.normalize(event)  # what the binary transport keeps
        out.append(canon.value(event))
    return out


def routes(app: str) -> tuple[Route, ...]:
    return FRAMEWORKS[app][1]


def test_protobuf_is_served_and_carries_the_sse_events(
    servers: tuple[str, dict[str, Server]],
) -> None:
    app, started = servers
    for route in routes(app):
        for mode in MODES:
            # fresh thread ids (a UUID each: canonicalised) so no run resumes another
            binary = post(started[mode].url + route.path, PROTO, str(uuid.uuid4()))
            expected = route.content_type(mode, PROTO)
            assert binary.headers["content-type"].partition(";")[0] == expected, (mode, route)
            if expected == PROTO:
                assert binary.headers["content-type"] == PROTO  # exactly: the client uses ===
            sse = post(started[mode].url + route.path, SSE, str(uuid.uuid4()))
            assert sse.headers["content-type"].startswith(SSE)
            from_binary = agui_wire.decode(binary.content, expected)
            from_sse = agui_wire.decode(sse.content, SSE)
            assert from_binary, (mode, route)
            assert from_binary[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
            assert canonical_events(from_binary, binary=expected == PROTO) == canonical_events(
                from_sse, binary=False
            ), (mode, route)


def test_a_failing_model_reaches_every_client_as_one_run_error(
    servers: tuple[str, dict[str, Server]],
) -> None:
    """The error routes (the model failing mid-stream, or before its first token)
    end every response, on both transports and in every mode, with exactly one
    ``RUN_ERROR``, after ``RUN_STARTED``: never an empty or cut body."""
    app, started = servers
    for route in routes(app):
        if "error" not in route.path:
            continue
        for mode in MODES:
            for accept in (PROTO, SSE, None, "*/*"):
                response = post(started[mode].url + route.path, accept, str(uuid.uuid4()))
                content_type = response.headers["content-type"].partition(";")[0]
                assert content_type == route.content_type(mode, accept or SSE), (mode, route)
                types = [e["type"] for e in agui_wire.decode(response.content, content_type)]
                assert types[0] == "RUN_STARTED", (mode, route, accept)
                assert types[-1] == "RUN_ERROR", (mode, route, accept)
                assert types.count("RUN_ERROR") == 1, (mode, route, accept)


def test_sse_is_byte_identical_to_the_plain_server(servers: tuple[str, dict[str, Server]]) -> None:
    app, started = servers
    for route in routes(app):
        for accept in (None, SSE, "*/*"):
            plain = post(started["plain"].url + route.sse_reference, accept, str(uuid.uuid4()))
            plain_text = Canon().text(plain.content.decode())
            assert plain_text.count("data: ") >= 2  # a run, not an empty body
            for mode in MODES:
                if mode == "plain" and not route.reference:
                    continue
                installed = post(started[mode].url + route.path, accept, str(uuid.uuid4()))
                assert installed.headers["content-type"].startswith(SSE)
                if not route.reference:  # the same endpoint: the same headers
                    assert installed.headers["content-type"] == plain.headers["content-type"]
                    for header in ("cache-control", "x-accel-buffering", "content-length"):
                        assert installed.headers.get(header) == plain.headers.get(header)
                assert Canon().text(installed.content.decode()) == plain_text, (mode, route)


def http_agent(url: str, accept: str | None) -> dict[str, Any]:
    if shutil.which("node") is None or not NODE_MODULES.exists():
        message = (
            "node or the npm peers missing: make tests/interop/node_modules/.package-lock.json"
        )
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    args = ["node", str(HTTP_AGENT), "--url", url, "--thread-id", str(uuid.uuid4())]
    if accept is not None:
        args += ["--accept", accept]
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_typescript_http_agent_reads_protobuf(servers: tuple[str, dict[str, Server]]) -> None:
    app, started = servers
    for route in routes(app):
        url = started["after"].url + route.path
        binary = http_agent(url, PROTO)
        expected = route.content_type("after", PROTO)
        assert binary["contentType"].partition(";")[0] == expected, route
        assert binary["error"] is None, binary["error"]
        assert binary["completed"]
        sse = http_agent(url, None)  # HttpAgent's own Accept: text/event-stream
        assert sse["contentType"].startswith(SSE)
        assert sse["error"] is None
        assert binary["events"]
        # Both parsed by the reference client: JSON-parsed SSE vs protobuf-decoded
        assert canonical_events(binary["events"], binary=expected == PROTO) == canonical_events(
            sse["events"], binary=False
        ), route
