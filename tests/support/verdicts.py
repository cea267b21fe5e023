"""Who accepts an event: the reference's zod schemas, and each of our entry points.

Strategy: ``ReferenceJudge`` keeps one ``node harness.cjs judge`` process for a
whole session and sends it events one JSON line each; it answers a line each, in
order, with ``EventSchemas.safeParse`` of the event as given and of what
``@ag-ui/encoder`` would put on the wire for it (``omitOptionalNulls`` first).
Verdicts are cached by the event's JSON, so hypothesis's repeats and a corpus
judged by several tests cost one round trip each.

``verdicts(event)`` runs our four entry points on one event (the backend is the
one the test pass selected: Cython, or the pure twins under AGUI_WIRE_PURE=1):

* ``proto``: ``encode_proto`` (``EventEncoder`` on protobuf is the same encoder);
* ``sse``: ``encode_sse``;
* ``sse_decode``: ``decode(b"data: <json>\\n\\n", "text/event-stream")``, with the
  JSON exactly as given (``None`` kept), by default options;
* ``validate``: ``validate_event`` (an error-severity problem is a refusal).

Each is an ``Outcome``: accepted, or refused with the error's class and text. A
decoder that skips the event (an unknown type, with a warning) refuses it too:
no event reaches the caller. Anything but the documented errors escaping an entry
point (a ``TypeError``, a ``RecursionError``...) is not caught: it is a bug.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agui_wire import (
    SSE_MEDIA_TYPE,
    DecodeError,
    EncodeError,
    decode,
    encode_proto,
    encode_sse,
    validate_event,
)

COLUMNS = ("proto", "sse", "sse_decode", "validate")
# The zod verdict each column answers to: an encoder, for what the reference's
# encoder would write (optional nulls left out); a reader, for the event as read.
JUDGED_BY = {"proto": "wire", "sse": "wire", "sse_decode": "event", "validate": "event"}


class JudgeError(RuntimeError):
    """The judge process failed (never a verdict)."""


@dataclass(frozen=True)
class ZodVerdict:
    ok: bool
    issues: tuple[tuple[tuple[str | int, ...], str], ...]  # (path, message)


@dataclass(frozen=True)
class Judgement:
    event: ZodVerdict  # EventSchemas.safeParse(event)
    wire: ZodVerdict  # EventSchemas.safeParse(omitOptionalNulls(event, "Event"))

    def __getitem__(self, which: str) -> ZodVerdict:
        return self.event if which == "event" else self.wire


@contextlib.contextmanager
def _deep_recursion() -> Iterator[None]:
    # json.dumps recurses once per container; the corpus nests past 1000 on purpose.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def json_line(event: Any) -> str | None:
    """The event as one line of ASCII JSON, or None when JSON cannot hold it (NaN,
    ±Infinity): lone surrogates and U+2028 travel as escapes, which ``JSON.parse``
    turns back into the same UTF-16 string."""
    with _deep_recursion():
        try:
            return json.dumps(event, ensure_ascii=True, allow_nan=False)
        except ValueError:
            return None


def sse_bytes(event: Any) -> bytes | None:
    """``data: <json>\\n\\n`` for the event as given, UTF-8 (a lone surrogate, which
    UTF-8 cannot hold, as its escape); None when JSON cannot hold it."""
    with _deep_recursion():
        try:
            text = json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except ValueError:
            return None
        try:
            data = text.encode()
        except UnicodeEncodeError:
            data = json.dumps(event, allow_nan=False, separators=(",", ":")).encode()
    return b"data: " + data + b"\n\n"


def _non_finite_marked(value: Any) -> Any:
    """``value`` with NaN and ±Infinity as the strings harness.cjs ``judge`` reads
    back as those numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"\0{value!r:s}\0".replace("nan", "NaN").replace("inf", "Infinity")
    if isinstance(value, dict):
        return {k: _non_finite_marked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_non_finite_marked(v) for v in value]
    return value


class ReferenceJudge:
    """``EventSchemas`` of ``@ag-ui/core`` 1.0.0, in one long-lived node process."""

    def __init__(self, node: str, harness: Path) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._proc = subprocess.Popen(
            [node, str(harness), "judge"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=harness.parent,
            env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "1"},
        )
        self._cache: dict[str, Judgement] = {}
        self.round_trips = 0

    def judge(self, events: Sequence[Any]) -> list[Judgement]:
        """Each event's judgement. NaN and ±Infinity reach node as those numbers
        (harness.cjs ``judge``): only the wire verdict means anything for such an
        event, since no reader ever holds one."""
        lines = [json_line(e) or json_line(_non_finite_marked(e)) or "" for e in events]
        todo = list(dict.fromkeys(ln for ln in lines if ln not in self._cache))
        if todo:
            self._ask(todo)
        return [self._cache[ln] for ln in lines]

    def _ask(self, lines: list[str]) -> None:
        proc = self._proc
        assert proc.stdin is not None
        assert proc.stdout is not None
        payload = "".join(ln + "\n" for ln in lines).encode()
        failure: list[BaseException] = []

        def write() -> None:  # beside the reads: a big batch fills both pipes
            try:
                proc.stdin.write(payload)  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            except OSError as exc:
                failure.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        for line in lines:
            answer = proc.stdout.readline()
            if not answer:
                writer.join(5)
                raise JudgeError(f"the judge stopped ({failure}): {self._errors()}")
            r = json.loads(answer)
            self._cache[line] = Judgement(_verdict(r["event"]), _verdict(r["wire"]))
        writer.join()
        self.round_trips += 1

    def _errors(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def close(self) -> None:
        proc = self._proc
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._stderr.close()


def _verdict(obj: dict[str, Any]) -> ZodVerdict:
    return ZodVerdict(obj["ok"], tuple((tuple(i["path"]), i["message"]) for i in obj["issues"]))


class ReferenceShapes:
    """Which members of an event a schema names, from the reference itself: the
    structure of ``omitOptionalNulls``'s shape table (which key holds which object,
    array of objects, or union) and the keys of each zod object schema
    (harness.cjs ``shapes`` and ``zod-objects``)."""

    def __init__(self, shapes: dict[str, Any], keys: dict[str, dict[str, bool]]) -> None:
        self._shapes = shapes
        self._keys = keys

    def named(self, event: Any) -> Any:
        """``event`` without the members no schema names (recursively, in the
        structure; opaque JSON whole): what the protobuf wire can carry of it. An
        object whose tag is unknown keeps the keys of every variant."""
        return self._walk(event, "Event")

    def _walk(self, value: Any, shape: Any) -> Any:
        if isinstance(shape, dict):  # {"array": name}
            if not isinstance(value, list):
                return value
            return [self._walk(v, shape["array"]) for v in value]
        if not isinstance(value, dict):
            return value
        desc = self._shapes[shape]
        if "discriminator" in desc:
            tag = value.get(desc["discriminator"])
            variants = desc["variants"]
            if isinstance(tag, str) and tag in variants:
                return self._walk(value, variants[tag])
            if shape == "Event":
                return value  # no type: nothing to carry, every encoder refuses it
            names = list(variants.values())
        else:
            names = [shape]
        known: set[str] = set()
        fields: dict[str, Any] = {}
        for name in names:
            known |= set(self._keys[name])
            fields.update(self._shapes[name].get("fields", {}))
        return {
            k: self._walk(v, fields[k]) if k in fields else v
            for k, v in value.items()
            if k in known
        }


# -- our side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one entry point did with one event."""

    ok: bool
    error: type[BaseException] | None = None
    message: str = ""

    @property
    def words(self) -> tuple[str, str] | None:
        """(class name, text) of a refusal."""
        return None if self.error is None else (self.error.__name__, self.message)


ACCEPTED = Outcome(True)


def _refused(exc: BaseException) -> Outcome:
    return Outcome(False, type(exc), str(exc))


def run_proto(event: Any) -> Outcome:
    try:
        encode_proto(event)
    except EncodeError as exc:
        return _refused(exc)
    return ACCEPTED


def run_sse(event: Any) -> Outcome:
    try:
        encode_sse(event)
    except EncodeError as exc:
        return _refused(exc)
    return ACCEPTED


def run_sse_decode(event: Any) -> Outcome | None:
    data = sse_bytes(event)
    if data is None:
        return None  # SSE cannot carry it: nothing to read
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            events = decode(data, SSE_MEDIA_TYPE)
        except DecodeError as exc:
            return _refused(exc)
    if len(events) == 1:
        return ACCEPTED
    said = "; ".join(f"{w.category.__name__}: {w.message}" for w in seen)
    return Outcome(False, None, f"{len(events)} events out ({said or 'no warning'})")


def run_validate(event: Any) -> Outcome | None:
    if json_line(event) is None:
        return None  # not JSON: no reader ever holds it
    errors = [p for p in validate_event(event) if p.severity == "error"]
    if not errors:
        return ACCEPTED
    return Outcome(False, None, str(errors[0]))


RUNNERS = {
    "proto": run_proto,
    "sse": run_sse,
    "sse_decode": run_sse_decode,
    "validate": run_validate,
}


def outcomes(event: Any) -> dict[str, Outcome | None]:
    """Every column's outcome (None where the column has nothing to say)."""
    return {column: RUNNERS[column](event) for column in COLUMNS}
