"""Record the committed framework captures of tests/cli (run it, never edit them by hand).

    make .venv-fw/langgraph/.installed .venv-fw/pydantic-ai/.installed
    .venv/bin/python tests/cli/captures/make_captures.py

Strategy: the apps of tests/frameworks (scripted models, no network) served by
``tests/frameworks/serve.py`` under uvicorn in their pinned venvs, once plain
(the framework's own SSE) and once with ``agui_wire.install()`` (protobuf when
asked); one run each is POSTed and the response body saved as it came off the
socket. The LangGraph state holds a nanosecond timestamp (an integer above
2^53), and ag-ui-langgraph streams RAW events: the traffic where protobuf's
``google.protobuf.Value`` encoding is larger than JSON. Written here:

* ``langgraph.sse`` / ``langgraph.bin``: one LangGraph run, SSE and protobuf;
* ``pydantic-ai.sse`` / ``pydantic-ai.bin``: one pydantic-ai run, likewise;
* ``frameworks.har``: the four responses as Chrome's devtools export them
  (binary bodies base64), after a request that is not AG-UI (entry 0).
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from tests.frameworks.test_frameworks import run_input, start, venv_python, wait_ready  # noqa: E402
from tests.support.cli_support import PROTO, SSE, chrome_har, har_entry  # noqa: E402

APPS = {"langgraph": "langgraph", "pydantic-ai": "pydantic_ai"}  # venv -> app module


def record(venv: str, app: str, tmp: Path) -> dict[str, bytes]:
    import time

    if not venv_python(venv).exists():
        raise SystemExit(f".venv-fw/{venv} missing: make .venv-fw/{venv}/.installed")
    servers = {"sse": start(app, venv, "plain", tmp), "proto": start(app, venv, "before", tmp)}
    try:
        for server in servers.values():
            wait_ready(server, time.monotonic() + 120)
        out = {}
        for kind, server in servers.items():
            accept = PROTO if kind == "proto" else SSE
            response = httpx.post(
                f"{server.url}/agent",
                json=run_input(f"thread-{venv}"),
                headers={"accept": accept},
                timeout=60,
            )
            response.raise_for_status()
            assert response.headers["content-type"].startswith(accept), response.headers
            out[kind] = response.content
        return out
    finally:
        for server in servers.values():
            server.process.terminate()
            server.process.wait(timeout=30)


def main() -> None:
    import tempfile

    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for venv, app in APPS.items():
            bodies = record(venv, app, Path(tmp))
            (HERE / f"{venv}.sse").write_bytes(bodies["sse"])
            (HERE / f"{venv}.bin").write_bytes(bodies["proto"])
            url = f"https://app.example.com/{venv}/agent"
            entries.append(har_entry(url, bodies["sse"], SSE, binary=False))
            entries.append(har_entry(url + "?binary=1", bodies["proto"], PROTO, binary=True))
    (HERE / "frameworks.har").write_bytes(chrome_har(*entries))
    for path in sorted(HERE.iterdir()):
        if path.suffix != ".py":
            print(f"{path.name}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
