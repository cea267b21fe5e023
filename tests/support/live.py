"""Real servers for tests: uvicorn in a subprocess on a free loopback port, or in
a thread of the test process.

``start_uvicorn("module:app", cwd=..., env=..., log=...)`` returns the base URL and
the process once the server answers HTTP (any status: an app need not have a
health route); ``stop`` ends it (SIGTERM, then SIGKILL). A free port can be taken
by someone else between the probe and uvicorn's bind, so the start is retried.

``uvicorn_thread(app)`` serves an ASGI app object from a thread (its own event
loop, a real listening socket bound first, so no port race), for tests that
look at the app's own state and log records (``caplog`` sees them: uvicorn is
told not to configure logging); the context manager stops it.

``read_some_then_close(url, "POST /path", accept=...)`` is a client that leaves
mid-body: a raw socket reads the headers and some of the body, then closes
(FIN) or aborts (RST).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "free_port",
    "read_some_then_close",
    "start_uvicorn",
    "stop",
    "uvicorn_thread",
    "wait_http",
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> bool:
    """True once ``url`` answers HTTP, False if ``process`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            httpx.get(url, timeout=1)
            return True
        except httpx.TransportError:
            time.sleep(0.05)
    return False


def start_uvicorn(
    app: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    ready_path: str = "/",
    python: str = sys.executable,
) -> tuple[str, subprocess.Popen[bytes]]:
    for _attempt in range(3):
        port = free_port()
        args = ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [python, "-m", "uvicorn", app, *args, "--no-access-log"],
                cwd=cwd,
                env=dict(env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        if wait_http(url + ready_path, process):
            return url, process
        stop(process)
    raise RuntimeError(f"uvicorn {app} did not start:\n{log.read_text(errors='replace')}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@contextlib.contextmanager
def uvicorn_thread(app: Any, **config: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread; yields the base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    options = {"log_config": None, "access_log": False, "lifespan": "off", **config}
    server = uvicorn.Server(uvicorn.Config(app, **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start in its thread")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def read_some_then_close(
    url: str,
    request: str,
    *,
    accept: str,
    reset: bool,
    compress: bool = False,
    want: int = 300,
) -> bytes:
    """Send ``request`` (``"METHOD /target"``; a POST carries ``{}``) over a raw
    socket, read the headers and ``want`` body bytes, then close (FIN) or abort
    (RST: SO_LINGER 0). Returns what was read."""
    host, port = url.removeprefix("http://").split(":")
    method = request.split(" ", 1)[0]
    head = f"{request} HTTP/1.1\r\nhost: {host}\r\naccept: {accept}\r\n"
    if compress:
        head += "accept-encoding: gzip\r\n"
    body = ""
    if method == "POST":
        head += "content-length: 2\r\ncontent-type: application/json\r\n"
        body = "{}"
    sock = socket.create_connection((host, int(port)), timeout=5)
    try:
        sock.sendall(f"{head}\r\n{body}".encode())
        got = b""
        while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < want:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"the server ended the response early: {got[-300:]!r}")
            got += chunk
        if reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        sock.close()
    return got
