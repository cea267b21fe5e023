"""A real headless Chromium for page tests, driven over the DevTools protocol.

Strategy: Debian's ``chromium`` (``make chromium`` installs it) started with the
flags this machine needs (no sandbox as root, no GPU, no network of its own) and
a fresh profile, and ``--remote-debugging-pipe``: the protocol runs over file
descriptors 3 (commands in) and 4 (replies and events out), NUL-separated JSON,
so no WebSocket client is needed. ``open_page(path)`` loads a file in a new tab
and collects what a page test must fail on: uncaught exceptions
(``Runtime.exceptionThrown``), ``console.error``/``console.assert``
(``Runtime.consoleAPICalled``) and browser-logged errors (``Log.entryAdded``,
level error). ``evaluate`` runs an expression in the page; ``screenshot``
writes a PNG.

Contract: every call has a deadline (``TIMEOUT`` seconds) and raises
``ChromiumError`` with chromium's stderr when it passes or chromium exits; the
process is killed on ``close`` whatever happened.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Final

__all__ = ["Chromium", "ChromiumError", "chromium_binary"]

TIMEOUT: Final = 30.0
FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--window-size=1280,900",
)


class ChromiumError(RuntimeError):
    pass


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise ChromiumError(
            "chromium is not installed: `make chromium` installs the Debian package "
            "(apt-get install chromium)"
        )
    return found


class Chromium:
    """One browser process; see the module doc."""

    def __init__(self, workdir: Path) -> None:
        profile = workdir / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "chromium.log"
        self._log = self.log_path.open("wb")
        # the pipe ends go to fds 3 and 4 (what --remote-debugging-pipe reads and writes)
        self.process = subprocess.Popen(
            [
                "sh",
                "-c",
                'exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null',
                chromium_binary(),
                *FLAGS,
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            start_new_session=True,  # its helper processes end with it (close)
        )
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        self.target: str | None = None
        self.viewport: tuple[int, int] | None = None  # set_width's, until the next page

    # -- the protocol ----------------------------------------------------------------------

    def _fail(self, why: str) -> ChromiumError:
        self._log.flush()
        return ChromiumError(f"{why}\nchromium's log:\n{self.log_path.read_text(errors='replace')}")

    def _read_message(self, deadline: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._fail("chromium did not answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                data = os.read(fd, 1 << 16)
                if not data:
                    raise self._fail("chromium closed the protocol pipe (it exited?)")
                self._buffer += data
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def send(self, method: str, session: bool = True, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its reply (events meanwhile are kept)."""
        assert self.process.stdin is not None
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session and self.session is not None:
            command["sessionId"] = self.session
        self.process.stdin.write(json.dumps(command).encode() + b"\0")
        self.process.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise self._fail(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        for event in self.events:
            if event["method"] == method and event.get("sessionId") == self.session:
                return event
        while True:
            message = self._read_message(deadline)
            if "method" in message:
                self.events.append(message)
                if message["method"] == method and message.get("sessionId") == self.session:
                    return message

    # -- what page tests use ----------------------------------------------------------------

    def open_page(self, path: Path) -> None:
        """A new tab on ``path``, loaded (its load event fired); the tab before is closed
        and what it reported forgotten."""
        if self.target is not None:
            self.send("Target.closeTarget", session=False, targetId=self.target)
        self.target = self.send("Target.createTarget", session=False, url="about:blank")["targetId"]
        attached = self.send(
            "Target.attachToTarget", session=False, targetId=self.target, flatten=True
        )
        self.session = attached["sessionId"]
        self.events = []
        self.viewport = None
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")
        self.send("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def errors(self) -> list[str]:
        """What the page threw or logged as an error so far."""
        out = []
        for event in self.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                text = details.get("exception", {}).get("description") or details.get("text")
                out.append(f"uncaught: {text}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                values = [a.get("value", a.get("description")) for a in params.get("args", [])]
                out.append(f"console.{params['type']}: {values}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(f"log: {params['entry'].get('text')}")
        return out

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (a promise is awaited)."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def set_width(self, width: int, height: int = 900) -> None:
        """The open tab's viewport, in CSS pixels (as a window that size shows it)."""
        self.viewport = (width, height)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def mouse(self, kind: str, x: float, y: float) -> None:
        """A real pointer event at viewport point (x, y): ``move``, or ``click`` (press and
        release of the left button there)."""
        steps = (
            [("mouseMoved", 0)] if kind == "move" else [("mousePressed", 1), ("mouseReleased", 1)]
        )
        for event, clicks in steps:
            button = "left" if clicks else "none"
            self.send(
                "Input.dispatchMouseEvent", type=event, x=x, y=y, button=button, clickCount=clicks
            )

    def screenshot(self, path: Path) -> Path:
        """The whole page as a PNG; the viewport is as it was after it (capturing beyond
        it resizes the page for a moment, and would leave the pointer aiming elsewhere)."""
        # A viewport as tall as the page, rather than ``captureBeyondViewport``: that hides
        # the scrollbars, and they come back only at a later scroll or input, so a layout
        # measured after it is shifted by half a bar (a pointer aimed there misses).
        viewport = self.viewport
        width, height = viewport or self.evaluate("[innerWidth, innerHeight]")
        self.set_width(width, max(height, self.evaluate("document.documentElement.scrollHeight")))
        shot = self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
        if viewport is None:
            self.send("Emulation.clearDeviceMetricsOverride")
            self.viewport = None
        else:
            self.set_width(*viewport)
        return path

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.send("Browser.close", session=False)
                self.process.wait(timeout=10)
        except (ChromiumError, OSError, subprocess.TimeoutExpired):
            pass
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)  # the browser's own group
            self.process.wait()
            self._log.close()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
