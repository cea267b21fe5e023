"""The timing sidecar of a recorded capture: when each chunk of the body arrived.

Strategy: ``agui-wire record`` writes the response body, byte for byte as the
client received it (after HTTP content decoding), to the capture file, and
beside it ``CAPTURE.timing.jsonl``, one JSON object per line, appended and
flushed as chunks arrive (a recording cut short keeps what it had):

* line 1, the header: ``{"agui_wire_timing": 1, "url", "method", "accept",
  "status", "content_type", "content_encoding", "started", "response_at"}`` —
  ``started`` is the wall-clock time the request was sent (UTC, ISO 8601) and
  ``response_at`` when the response headers arrived;
* one line per body chunk, in order: ``{"offset", "length", "at"}``: its byte
  offset in the capture, its size, when it arrived;
* the last line: ``{"end", "bytes"}`` plus ``"error"`` when the stream broke.

Every time (``response_at``, ``at``, ``end``) is seconds since the request was
sent, on the monotonic clock (``time.perf_counter``), rounded to microseconds.

``read_timings`` checks a sidecar against its capture (version, contiguous
chunks, the byte count) and ``rechunk`` cuts a capture's byte stream at the
recorded chunk boundaries, so no piece a reader is fed straddles two chunks:
every event completes in a piece of the chunk that completed it on the wire,
and that chunk's ``at`` (``Timings.arrival`` of the piece's offset) is the
event's arrival time.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

import orjson

from ._common import CliError, InputError

__all__ = ["SUFFIX", "VERSION", "TimingWriter", "Timings", "read_timings", "rechunk", "sidecar_of"]

VERSION: Final = 1
SUFFIX: Final = ".timing.jsonl"


def sidecar_of(capture: str) -> Path:
    """Where the sidecar of ``capture`` is (``capture`` + ``SUFFIX``)."""
    return Path(capture + SUFFIX)


def _seconds(t: float) -> float:
    return round(t, 6)


class TimingWriter:
    """Writes a sidecar as a recording goes (see the module doc)."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.offset = 0

    def _line(self, obj: dict[str, Any]) -> None:
        self.out.write(orjson.dumps(obj) + b"\n")
        self.out.flush()

    def header(self, **fields: Any) -> None:
        fields["response_at"] = _seconds(fields["response_at"])
        self._line({"agui_wire_timing": VERSION, **fields})

    def chunk(self, length: int, at: float) -> None:
        self._line({"offset": self.offset, "length": length, "at": _seconds(at)})
        self.offset += length

    def end(self, at: float, error: str | None = None) -> None:
        tail: dict[str, Any] = {"end": _seconds(at), "bytes": self.offset}
        if error is not None:
            tail["error"] = error
        self._line(tail)


@dataclass
class Timings:
    """A sidecar, read and checked."""

    path: str
    header: dict[str, Any]
    offsets: list[int] = field(default_factory=list)  # chunk start offsets, ascending
    arrivals: list[float] = field(default_factory=list)  # seconds since the request
    size: int = 0  # the bytes the chunks cover (where the next chunk starts)
    end: float | None = None  # the stream's end (None: the recording was cut short)
    error: str | None = None  # why the stream ended early, as recorded

    @property
    def response_at(self) -> float | None:
        value = self.header.get("response_at")
        return float(value) if isinstance(value, (int, float)) else None

    def arrival(self, offset: int) -> float:
        """When the byte at ``offset`` arrived."""
        return self.arrivals[max(bisect_right(self.offsets, offset) - 1, 0)]


def _number(line: dict[str, Any], key: str, where: str) -> float:
    value = line.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise CliError(f"{where}: {key!r} is not a non-negative number: {value!r}")
    return value


def read_timings(path: str, capture_size: int | None = None) -> Timings:
    """The sidecar at ``path``; a ``CliError`` naming the line when it is not one
    (or, given ``capture_size``, when it does not cover the capture)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    timings: Timings | None = None
    for n, text in enumerate(raw.splitlines(), 1):
        where = f"{path}: line {n}"
        if not text.strip():
            continue
        try:
            line = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise CliError(f"{where}: not JSON ({exc})") from None
        if not isinstance(line, dict):
            raise CliError(f"{where}: not a JSON object")
        if timings is None:
            if line.get("agui_wire_timing") != VERSION:
                raise CliError(
                    f"{where}: not an agui-wire timing file (the first line must hold "
                    f'"agui_wire_timing": {VERSION}; written by agui-wire record)'
                )
            timings = Timings(path, line)
        elif "end" in line:
            timings.end = _number(line, "end", where)
            error = line.get("error")
            timings.error = error if isinstance(error, str) else None
        else:
            offset = int(_number(line, "offset", where))
            length = int(_number(line, "length", where))
            if offset != timings.size:
                raise CliError(
                    f"{where}: chunk at byte {offset}, but the chunks before end at byte "
                    f"{timings.size}"
                )
            at = _number(line, "at", where)
            if timings.arrivals and at < timings.arrivals[-1]:
                raise CliError(f"{where}: arrives at {at} s, before the chunk before it")
            timings.offsets.append(offset)
            timings.arrivals.append(float(at))
            timings.size = offset + length
    if timings is None:
        raise CliError(f"{path}: an empty timing file")
    if capture_size is not None and capture_size != timings.size:
        raise CliError(
            f"{path} does not match its capture: it times {timings.size:,} bytes, the capture "
            f"holds {capture_size:,} (recorded with another capture, or the capture was edited?)"
        )
    return timings


def rechunk(chunks: Iterator[bytes], timings: Timings) -> Iterator[bytes]:
    """``chunks`` cut at the recorded chunk boundaries too (see the module doc)."""
    bounds = iter([*timings.offsets[1:], timings.size])
    cut = next(bounds, None)
    at = 0
    for data in chunks:
        view = memoryview(data)
        while view:
            while cut is not None and cut <= at:  # an empty recorded chunk
                cut = next(bounds, None)
            if cut is None or at + len(view) < cut:
                yield bytes(view)
                at += len(view)
                break
            n = cut - at
            yield bytes(view[:n])
            view, at = view[n:], cut
