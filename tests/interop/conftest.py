"""The pinned npm reference (``@ag-ui/*`` 1.0.0) as a pytest fixture.

Strategy: ``harness.cjs`` wraps the reference packages in one Node CLI; the
session fixture ``node_harness`` installs them once (``npm ci`` from the
committed lockfile, only when ``node_modules`` is missing or older than the
lockfile), checks the installed versions, and hands tests a ``NodeHarness``
whose methods each run one harness subprocess. ``reference_judge`` is the one
long-lived process: zod verdicts for many events, one line each
(tests/support/verdicts.py).

Contract:

* node or npm missing -> the fixture FAILS (CI has both), unless
  ``AGUI_WIRE_SKIP_INTEROP=1``, which skips every test that uses it.
* Events go to Node as JSON (``allow_nan=False``: the reference only ever sees
  what ``JSON.parse`` can produce); results come back with doubles intact
  (``-0.0``, ``NaN`` and ``Infinity`` are spelled so ``json.loads`` reads them).
* The strict helpers (``encode_proto``, ``decode_proto_events``) raise
  ``ReferenceRejected`` when the reference throws or warns; the ``*_results``
  helpers and ``parse_stream`` report errors and warnings as data instead.
  ``HarnessError`` means the harness itself failed: a broken test or setup.
* Test modules reach those exception types and the ``frame`` / ``split_frames``
  helpers through the fixture (``node_harness.Rejected``, ``.HarnessError``,
  ``.frame``, ...), never ``from conftest import``: tests/conftest.py has the
  same module name.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.support.verdicts import ReferenceJudge

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "harness.cjs"
LOCKFILE = HERE / "package-lock.json"
# npm writes this on every install; its mtime says when node_modules was made.
INSTALLED_LOCK = HERE / "node_modules" / ".package-lock.json"
PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
SSE_MEDIA_TYPE = "text/event-stream"
PINNED = ("@ag-ui/core", "@ag-ui/proto", "@ag-ui/encoder", "@ag-ui/client")
REFERENCE_VERSION = "1.0.0"

Event = dict[str, Any]


class HarnessError(RuntimeError):
    """The harness itself failed (bad input, crash); never a reference verdict."""


class ReferenceRejected(AssertionError):
    """A strict helper saw the reference throw or warn."""


@dataclass(frozen=True)
class JsError:
    """An exception the reference raised."""

    name: str
    message: str
    unknown_event_type: bool = False  # decode: an AGUIUnknownEventTypeError

    @classmethod
    def from_json(cls, obj: dict[str, Any] | None) -> JsError | None:
        if obj is None:
            return None
        return cls(obj["name"], obj["message"], bool(obj.get("unknownEventType", False)))


@dataclass(frozen=True)
class EncodeResult:
    """What the reference did with one event on the binary path."""

    frame: bytes | None  # EventEncoder(accept=proto).encodeBinary(event)
    message: bytes | None  # @ag-ui/proto encode(event), unframed
    warnings: tuple[str, ...]  # console.warn during encodeBinary
    error: JsError | None


@dataclass(frozen=True)
class DecodeResult:
    """What ``@ag-ui/proto`` ``decode`` made of one frame."""

    event: Event | None
    warnings: tuple[str, ...]
    error: JsError | None


@dataclass(frozen=True)
class StreamResult:
    """What ``HttpAgent.run()`` parsed from one response body."""

    events: list[Event]
    error: JsError | None  # the stream's error, if it errored
    completed: bool  # the stream completed (False when it errored)
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Verification:
    """``verifyEvents()`` of ``@ag-ui/client`` over one event sequence."""

    passed: int  # events let through before the error (all of them when completed)
    error: JsError | None
    completed: bool
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Validation:
    """``EventSchemas.safeParse`` of one event."""

    ok: bool
    data: Event | None  # zod's output (defaults applied) when ok
    issues: tuple[tuple[tuple[str | int, ...], str], ...]  # (path, message)


def frame(message: bytes) -> bytes:
    """One binary-transport frame: 4-byte big-endian length, then the message."""
    return struct.pack(">I", len(message)) + message


def split_frames(stream: bytes) -> list[bytes]:
    """The messages of a stream of whole frames (ValueError on a partial frame)."""
    out, pos = [], 0
    while pos < len(stream):
        if len(stream) - pos < 4:
            raise ValueError(f"{len(stream) - pos} trailing bytes, not a frame header")
        (n,) = struct.unpack_from(">I", stream, pos)
        if len(stream) - pos - 4 < n:
            raise ValueError(f"frame at {pos} declares {n} bytes, has {len(stream) - pos - 4}")
        out.append(stream[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out


def _jsonl(events: Iterable[Event]) -> bytes:
    # ensure_ascii: lone surrogates and U+2028 travel as escapes; Node's
    # JSON.parse turns them back into the same UTF-16 string.
    return b"".join(
        json.dumps(e, ensure_ascii=True, allow_nan=False).encode() + b"\n" for e in events
    )


def _lines(out: bytes) -> list[Any]:
    # Split on "\n" only: the harness never writes another line break, and
    # str.splitlines() would also split at U+2028 inside strings.
    return [json.loads(line) for line in out.decode("utf-8").split("\n") if line]


class NodeHarness:
    """The reference packages, one subprocess per call (see harness.cjs).

    Test modules should not import conftest (the module name is ambiguous once
    another directory has one), so what they need rides on the instance.
    """

    PROTO_MEDIA_TYPE = PROTO_MEDIA_TYPE
    SSE_MEDIA_TYPE = SSE_MEDIA_TYPE
    HarnessError = HarnessError
    Rejected = ReferenceRejected
    frame = staticmethod(frame)
    split_frames = staticmethod(split_frames)

    def __init__(self, node: str, timeout: float = 120.0) -> None:
        self.node = node
        self.timeout = timeout

    def run(self, command: str, stdin: bytes = b"", *args: str) -> bytes:
        """Run one harness subcommand; its stdout, or HarnessError."""
        proc = subprocess.run(
            [self.node, str(HARNESS), command, *args],
            input=stdin,
            capture_output=True,
            timeout=self.timeout,
            cwd=HERE,
            env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": ""},
            check=False,
        )
        if proc.returncode != 0:
            raise HarnessError(
                f"harness.cjs {command} exited {proc.returncode}:\n"
                + proc.stderr.decode("utf-8", "replace")
            )
        return proc.stdout

    # -- facts about the install -----------------------------------------------------

    def versions(self) -> dict[str, str]:
        """Installed versions of the reference packages, their wire deps, and node."""
        return json.loads(self.run("versions"))

    def shapes(self) -> dict[str, Any]:
        """``@ag-ui/core``'s omitOptionalNulls shape table, as data."""
        return json.loads(self.run("shapes"))

    def zod_objects(self) -> dict[str, dict[str, bool]]:
        """Every exported zod object schema: name -> {key: optional}."""
        return json.loads(self.run("zod-objects"))

    # -- binary transport ------------------------------------------------------------

    def encode_proto_results(self, events: Sequence[Event]) -> list[EncodeResult]:
        """Each event through ``encodeBinary`` and ``encode``; errors and warnings as data.

        Raises HarnessError if a frame is not 4-byte BE length + ``encode``'s bytes.
        """
        results = []
        for i, r in enumerate(_lines(self.run("encode-proto", _jsonl(events)))):
            res = EncodeResult(
                frame=None if r["frame"] is None else base64.b64decode(r["frame"]),
                message=None if r["message"] is None else base64.b64decode(r["message"]),
                warnings=tuple(r["warnings"]),
                error=JsError.from_json(r["error"]),
            )
            if res.frame is not None and res.frame != frame(res.message or b""):
                raise HarnessError(f"event {i}: encodeBinary is not framed encode()")
            results.append(res)
        if len(results) != len(events):
            raise HarnessError(f"{len(events)} events in, {len(results)} results out")
        return results

    def encode_proto(self, events: Sequence[Event]) -> list[bytes]:
        """The reference's frame for each event; ReferenceRejected if any warns or throws."""
        frames = []
        for i, r in enumerate(self.encode_proto_results(events)):
            if r.error is not None or r.warnings or r.frame is None:
                raise ReferenceRejected(
                    f"event {i} ({events[i].get('type')}): error={r.error} warnings={r.warnings}"
                )
            frames.append(r.frame)
        return frames

    def decode_proto(self, stream: bytes | Iterable[bytes]) -> list[DecodeResult]:
        """``decode`` of each frame of a framed stream (or of an iterable of frames).

        The stream must be whole frames (HarnessError otherwise); to test partial
        or oversized frames use ``parse_stream``, which is what a client runs.
        """
        data = stream if isinstance(stream, bytes | bytearray) else b"".join(stream)
        results = []
        for r in _lines(self.run("decode-proto", bytes(data))):
            if "trailing" in r:
                raise HarnessError(f"stream ends with {r['trailing']} bytes of a partial frame")
            results.append(
                DecodeResult(r["event"], tuple(r["warnings"]), JsError.from_json(r["error"]))
            )
        return results

    def decode_proto_events(self, stream: bytes | Iterable[bytes]) -> list[Event]:
        """The decoded events; ReferenceRejected if any frame fails or warns."""
        events = []
        for i, r in enumerate(self.decode_proto(stream)):
            if r.error is not None or r.warnings or r.event is None:
                raise ReferenceRejected(f"frame {i}: error={r.error} warnings={r.warnings}")
            events.append(r.event)
        return events

    # -- SSE, the client, negotiation, validation ---------------------------------------

    def encode_sse(self, events: Sequence[Event]) -> bytes:
        """The exact bytes ``EventEncoder.encode`` writes for the events, concatenated.

        Each event is ``data: <json>\\n\\n`` and JSON.stringify writes no raw
        newline, so ``out.split(b"\\n\\n")[:-1]`` gives the events one by one.
        """
        return self.run("encode-sse", _jsonl(events))

    def parse_stream(
        self, data: bytes, content_type: str | None, chunk_size: int = 0
    ) -> StreamResult:
        """The events ``HttpAgent.run()`` parses from a 200 response with this body.

        ``content_type`` None sends no content-type header; ``chunk_size`` > 0
        delivers the body in reads of that many bytes (0: one read).
        """
        args = ["--chunk-size", str(chunk_size)]
        if content_type is not None:
            args += ["--content-type", content_type]
        r = json.loads(self.run("parse-stream", data, *args))
        return StreamResult(
            r["events"], JsError.from_json(r["error"]), r["completed"], tuple(r["warnings"])
        )

    def negotiate(self, headers: Sequence[str | None]) -> list[str]:
        """``new EventEncoder({accept}).getContentType()`` per Accept value (None: no accept)."""
        return json.loads(self.run("negotiate", json.dumps(list(headers)).encode()))

    def validate(self, events: Sequence[Event]) -> list[Validation]:
        """``EventSchemas.safeParse`` of each event."""
        return [
            Validation(
                r["ok"],
                r["data"],
                tuple((tuple(i["path"]), i["message"]) for i in r["issues"]),
            )
            for r in _lines(self.run("validate", _jsonl(events)))
        ]

    def verify(self, events: Sequence[Event]) -> Verification:
        """The client's sequence check (``verifyEvents``) over the events, in order."""
        r = json.loads(self.run("verify", _jsonl(events)))
        return Verification(
            r["passed"], JsError.from_json(r["error"]), r["completed"], tuple(r["warnings"])
        )

    def apply(self, runs: Sequence[Sequence[Event]]) -> list[dict[str, Any]]:
        """What ``defaultApplyEvents`` of ``@ag-ui/client`` makes of each list of
        events (a client starting with no messages and the state of the
        ``RUN_STARTED`` input echo, else ``{}``): ``messages``, ``state``,
        ``warnings``."""
        return _lines(self.run("apply", _jsonl([list(events) for events in runs])))

    def patch(self, cases: Sequence[tuple[Any, Any]]) -> list[dict[str, Any]]:
        """``applyPatch(doc, patch, true, false)`` of the client's fast-json-patch for
        each (doc, patch): ``doc`` (the result) or ``error`` (``name``, ``message``)."""
        return _lines(self.run("patch", _jsonl([[doc, ops] for doc, ops in cases])))


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    # Parallel sessions (xdist workers) must not run npm ci into one tree at once.
    try:
        import fcntl
    except ImportError:  # not POSIX: no parallel sessions to guard against
        yield
        return
    # Outside the tree: npm ci deletes node_modules, and the tree stays clean.
    key = hashlib.sha256(str(HERE).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"agui-wire-npm-{key}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _needs_install() -> bool:
    return not INSTALLED_LOCK.exists() or INSTALLED_LOCK.stat().st_mtime < LOCKFILE.stat().st_mtime


@pytest.fixture(scope="session")
def reference_judge(node_harness: NodeHarness) -> Iterator[ReferenceJudge]:
    """``EventSchemas`` in one node process for the session (harness.cjs ``judge``)."""
    from tests.support.verdicts import ReferenceJudge

    judge = ReferenceJudge(node_harness.node, HARNESS)
    try:
        yield judge
    finally:
        judge.close()


@pytest.fixture(scope="session")
def node_harness() -> NodeHarness:
    """The reference packages, installed from the lockfile and version-checked."""
    if os.environ.get("AGUI_WIRE_SKIP_INTEROP") == "1":
        pytest.skip("AGUI_WIRE_SKIP_INTEROP=1")
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(
            "interop tests need node and npm on PATH (set AGUI_WIRE_SKIP_INTEROP=1 to skip)",
            pytrace=False,
        )
    with _install_lock():
        if _needs_install():
            proc = subprocess.run(
                [npm, "ci", "--prefix", str(HERE), "--no-audit", "--no-fund"],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if proc.returncode != 0:
                pytest.fail(f"npm ci failed:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
    harness = NodeHarness(node)
    versions = harness.versions()
    wrong = {p: versions[p] for p in PINNED if versions[p] != REFERENCE_VERSION}
    if wrong:
        pytest.fail(f"reference packages are not {REFERENCE_VERSION}: {wrong}", pytrace=False)
    return harness
