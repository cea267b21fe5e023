"""Helpers for the ``agui-wire`` command line tests (tests/cli, tests/interop/test_cli_*).

``run_cli(*args, input=b"", tty_stdout=False)`` runs the real console script
(``agui-wire`` next to the interpreter, else ``python -m agui_wire``) in a
subprocess; ``tty_stdout`` gives it a pseudo-terminal as stdout.
``run_in_process(*args, input=None)`` runs the same ``main`` in this process (no
interpreter start-up: for the many small error-path checks), ``input`` as its
stdin, its stdout and stderr captured, returning the same ``CompletedProcess``. ``jsonl``
parses its JSON Lines output. ``chrome_har`` builds a HAR file the way Chrome's
devtools export it (binary bodies base64-encoded with ``"encoding": "base64"``).
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import pty
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson

PROTO = "application/vnd.ag-ui.event+proto"
SSE = "text/event-stream"


def command() -> list[str]:
    script = shutil.which("agui-wire", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "agui_wire"]


def run_cli(
    *args: Any, input: bytes = b"", tty_stdout: bool = False, cwd: Any = None
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "AGUI_WIRE_NO_PROGRESS"}
    cmd = [*command(), *map(str, args)]
    if not tty_stdout:
        return subprocess.run(
            cmd, input=input, capture_output=True, timeout=300, env=env, cwd=cwd, check=False
        )
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=slave, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    os.close(slave)
    out = bytearray()

    def drain() -> None:  # the pty buffer is small: read while the command runs
        try:
            while chunk := os.read(master, 65536):
                out.extend(chunk)
        except OSError:  # EIO once the command has exited
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    _, err = proc.communicate(input, timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return subprocess.CompletedProcess(proc.args, proc.returncode, bytes(out), err)


def run_in_process(
    *args: Any, cwd: Any = None, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    from agui_wire._cli import main

    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
    argv = [str(a) for a in args]
    saved_stdin = sys.stdin
    sys.stdin = stdin  # `-`: the command reads sys.stdin.buffer
    try:
        with (
            contextlib.chdir(cwd or os.getcwd()),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
        ):
            code = main(argv)
    finally:
        sys.stdin = saved_stdin
    stdout.flush()
    stderr.flush()
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def jsonl(out: bytes) -> list[Any]:
    """JSON Lines output, split on newline only (U+2028 may be raw inside strings)."""
    return [orjson.loads(line) for line in out.split(b"\n") if line.strip()]


def har_entry(url: str, body: bytes | None, content_type: str, *, binary: bool) -> dict[str, Any]:
    """One entry as Chrome exports it; ``binary`` bodies are base64 with encoding."""
    content: dict[str, Any] = {"size": len(body or b""), "mimeType": content_type}
    if body is not None:
        if binary:
            content |= {"text": base64.b64encode(body).decode(), "encoding": "base64"}
        else:
            content["text"] = body.decode("utf-8")
    return {
        "_initiator": {"type": "script"},
        "_priority": "High",
        "_resourceType": "fetch",
        "cache": {},
        "connection": "443",
        "pageref": "page_1",
        "request": {
            "method": "POST",
            "url": url,
            "httpVersion": "http/2.0",
            "headers": [
                {"name": ":method", "value": "POST"},
                {"name": "accept", "value": content_type},
                {"name": "content-type", "value": "application/json"},
            ],
            "queryString": [],
            "cookies": [],
            "headersSize": -1,
            "bodySize": 2,
            "postData": {"mimeType": "application/json", "text": "{}"},
        },
        "response": {
            "status": 200,
            "statusText": "",
            "httpVersion": "http/2.0",
            "headers": [
                {"name": "content-type", "value": content_type},
                {"name": "cache-control", "value": "no-cache"},
            ],
            "cookies": [],
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
            "_transferSize": len(body or b"") + 120,
            "_error": None,
        },
        "serverIPAddress": "203.0.113.7",
        "startedDateTime": "2025-11-30T02:00:00.000Z",
        "time": 812.5,
        "timings": {
            "blocked": 1,
            "dns": -1,
            "ssl": -1,
            "connect": -1,
            "send": 0.2,
            "wait": 300,
            "receive": 511.3,
        },
    }


def chrome_har(*entries: dict[str, Any]) -> bytes:
    """A HAR document around ``entries``, with a page and an unrelated entry first."""
    unrelated = har_entry(
        "https://app.example.com/static/app.js",
        b"console.log(1)",
        "application/javascript",
        binary=False,
    )
    return orjson.dumps(
        {
            "log": {
                "version": "1.2",
                "creator": {"name": "WebInspector", "version": "537.36"},
                "pages": [
                    {
                        "startedDateTime": "2025-11-30T01:59:59.000Z",
                        "id": "page_1",
                        "title": "https://app.example.com/",
                        "pageTimings": {"onContentLoad": 120, "onLoad": 240},
                    }
                ],
                "entries": [unrelated, *entries],
            }
        },
        option=orjson.OPT_INDENT_2,
    )
