"""A capture's events on a time axis: when each arrived, grouped and measured.

Strategy: read the capture frame by frame (``CaptureStream``) and give each event
a time, from the best source the capture has, in this order:

1. ``chunks``: the sidecar ``agui-wire record`` wrote (``_timings``); the
   caller feeds the capture to the reader in the recorded chunks, so an
   event's time is the arrival of the chunk that completed it (client clock,
   seconds since the request was sent);
2. ``messages``: a HAR entry with ``_eventSourceMessages`` (one time per SSE
   message, wall clock; made relative to the entry's ``startedDateTime``);
3. ``timestamps``: the events' own ``timestamp`` fields (server clock, ms;
   relative to the first one; an event without one gets the time before it);
4. ``none``: the events in order only (a HAR's whole-response timings, when
   present, are reported: the time to the first byte and to the last).

Then each event gets a lane (run lifecycle and errors, messages, tool calls,
reasoning, state, other) and the events are grouped, as they stream past, into
spans (a run, step, subagent, message, tool call, reasoning block or message:
from its first event to its last), counting text deltas and characters and, for
a tool call, when its arguments ended and its result came. Memory: one small
``Mark`` per frame (its ids and preview, at most ``TEXT_LIMIT`` characters), no
event is kept.
``_timeline_text`` prints a ``Timeline``; ``timeline_html`` draws it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Final

from ._capture import CaptureFrame, CaptureStream
from ._common import CliError
from ._inputs import Input
from ._timings import Timings

__all__ = [
    "BAD",
    "LANES",
    "REASONING_DELTAS",
    "SKIPPED",
    "TEXT_DELTAS",
    "TEXT_LIMIT",
    "Mark",
    "Span",
    "Timeline",
    "build",
    "describe_duration",
]

#: Lane of each event type prefix, first match wins; the order of ``LANES`` is the page's.
_LANE_OF: Final = (
    ("RUN_", "run"),
    ("STEP_", "run"),
    ("SUBAGENT_", "run"),
    ("TEXT_MESSAGE_", "messages"),
    ("TOOL_CALL_", "tool calls"),
    ("REASONING_", "reasoning"),
    ("THINKING_", "reasoning"),
    ("STATE_", "state"),
    ("MESSAGES_SNAPSHOT", "state"),
    ("ACTIVITY_", "state"),
)
LANES: Final = ("run", "messages", "tool calls", "reasoning", "state", "other")
BAD: Final = "BAD FRAME"  # the type of a frame that did not decode
SKIPPED: Final = "(skipped)"  # an event of a later protocol, skipped with a note
TEXT_LIMIT: Final = 200  # characters kept of a mark's ids and preview
LABEL_LIMIT: Final = 120  # characters kept of a span's key and label
GAPS_SHOWN: Final = 5
TEXT_DELTAS: Final = frozenset({"TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK"})
REASONING_DELTAS: Final = frozenset(
    {"REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CHUNK", "THINKING_TEXT_MESSAGE_CONTENT"}
)


def lane_of(etype: str) -> str:
    for prefix, lane in _LANE_OF:
        if etype.startswith(prefix):
            return lane
    return "other"


@dataclass
class Mark:
    """One frame of the capture on the time axis."""

    index: int
    t: float | None  # seconds (see Timeline.clock); None: no time known
    type: str  # the event type, or BAD, or SKIPPED
    lane: str
    text: str  # ids and a preview, as ``inspect`` prints them
    offset: int | None
    error: str | None = None


def _time(mark: Mark | None) -> float | None:
    return None if mark is None else mark.t


@dataclass
class Span:
    """A run, step, message, tool call or reasoning block: first event to last.

    It holds the marks of its events, not their times: times given afterwards (the
    events' timestamps, known only once the whole capture is read) apply to it too.
    """

    lane: str
    kind: str  # "run", "step", "subagent", "message", "tool call", "reasoning", ...
    key: str
    label: str
    first_mark: Mark
    last_mark: Mark
    closed: bool = False  # its closing event was seen
    deltas: int = 0  # text/argument pieces
    chars: int = 0
    first_delta_mark: Mark | None = None
    last_delta_mark: Mark | None = None
    args_end_mark: Mark | None = None  # tool call: TOOL_CALL_END
    result_mark: Mark | None = None  # tool call: TOOL_CALL_RESULT

    @property
    def first(self) -> int:
        return self.first_mark.index

    @property
    def last(self) -> int:
        return self.last_mark.index

    @property
    def start(self) -> float | None:
        return self.first_mark.t

    @property
    def end(self) -> float | None:
        return self.last_mark.t

    @property
    def args_end(self) -> float | None:
        return _time(self.args_end_mark)

    @property
    def result_at(self) -> float | None:
        return _time(self.result_mark)

    @property
    def duration(self) -> float | None:
        return None if self.start is None or self.end is None else self.end - self.start

    def rate(self) -> tuple[float, float] | None:
        """(characters, deltas) per second while the text streamed."""
        first, last = _time(self.first_delta_mark), _time(self.last_delta_mark)
        if first is None or last is None or self.deltas < 2 or last <= first:
            return None
        return self.chars / (last - first), (self.deltas - 1) / (last - first)

    def as_json(self) -> dict[str, Any]:
        keys = ("lane", "kind", "key", "label", "first", "last", "start", "end", "closed")
        out = {k: getattr(self, k) for k in keys}
        out |= {"deltas": self.deltas, "chars": self.chars}
        out |= {"args_end": self.args_end, "result_at": self.result_at}
        return out


@dataclass
class Timeline:
    """A capture's events on a time axis (see the module doc)."""

    label: str
    format: str
    clock: str  # "chunks", "messages", "timestamps" or "none"
    clock_note: str
    marks: list[Mark] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    bytes: int = 0
    response_at: float | None = None  # response headers / first byte (seconds)
    end: float | None = None  # the stream's last byte
    end_error: str | None = None

    @property
    def timed(self) -> bool:
        return self.clock != "none"

    @property
    def events(self) -> int:
        """How many events (not bad or skipped frames) it has."""
        return sum(m.type not in (BAD, SKIPPED) for m in self.marks)

    def first(self, types: frozenset[str]) -> Mark | None:
        return next((m for m in self.marks if m.type in types and m.t is not None), None)

    def first_token(self) -> float | None:
        """Seconds to the first text delta (time to first token)."""
        mark = self.first(TEXT_DELTAS)
        return None if mark is None else mark.t

    def gaps(self, limit: int = GAPS_SHOWN) -> list[tuple[float, Mark, Mark]]:
        timed = [m for m in self.marks if m.t is not None]
        pairs = [(b.t - a.t, a, b) for a, b in itertools.pairwise(timed) if b.t > a.t]  # type: ignore[operator]
        return sorted(pairs, key=lambda p: -p[0])[:limit]

    def as_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("label", "format", "clock", "clock_note", "bytes")}
        out |= {"response_at": self.response_at, "end": self.end, "end_error": self.end_error}
        out["marks"] = [asdict(m) for m in self.marks]
        out["spans"] = [s.as_json() for s in self.spans]
        out["first_token"] = self.first_token()
        out["gaps"] = [
            {"seconds": g, "after": a.index, "before": b.index} for g, a, b in self.gaps()
        ]
        return out


def describe_duration(seconds: float) -> str:
    """``412.3 ms`` below a second, ``1.843 s`` above."""
    if abs(seconds) < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:,.3f} s"


# -- reading -----------------------------------------------------------------------------


def _epoch(iso: Any) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _har_clock(source: Input) -> tuple[list[float] | None, str, float | None, float | None]:
    """A HAR entry's per-message times (seconds since its request), the note, and
    its whole-response first-byte and end times."""
    har = source.har
    assert har is not None
    timings = har.timings or {}
    phases = ("blocked", "dns", "connect", "send", "wait")
    known = [float(timings[p]) for p in phases if isinstance(timings.get(p), (int, float))]
    first_byte = sum(v for v in known if v > 0) / 1000 if known else None
    total = har.time / 1000 if har.time is not None else None
    start = _epoch(har.started)
    if har.message_times and start is not None:
        times = [t - start for t in har.message_times]
        note = f"{len(times):,} SSE message times from the HAR's _eventSourceMessages (wall clock)"
        return times, note, first_byte, total
    if first_byte is not None or total is not None:
        parts = []
        if first_byte is not None:
            parts.append(f"first byte at {describe_duration(first_byte)}")
        if total is not None:
            parts.append(f"the whole response took {describe_duration(total)}")
        note = (
            "this HAR entry has whole-response timings only (" + ", ".join(parts) + "), "
            "not when each event arrived"
        )
    else:
        note = "this HAR entry has no timings"
    return None, note, first_byte, total


def _frames_with_arrival(
    stream: CaptureStream, timings: Timings
) -> Iterator[tuple[CaptureFrame, float]]:
    at = [0]

    def tap(chunk: bytes, offset: int) -> None:
        at[0] = offset

    stream.tap = tap
    for frame in stream:
        yield frame, timings.arrival(at[0])


def build(
    source: Input,
    stream: CaptureStream,
    describe: Callable[[dict[str, Any]], str],
    timings: Timings | None = None,
) -> Timeline:
    """The timeline of ``source`` read through ``stream`` (see the module doc);
    ``describe`` gives an event's ids and preview."""
    message_times: list[float] | None = None
    response_at = end = None
    if timings is not None:
        clock = "chunks"
        note = (
            f"arrival of each of {len(timings.offsets):,} chunks (client clock, recorded by "
            f"agui-wire record in {timings.path})"
        )
        response_at, end = timings.response_at, timings.end
    elif source.har is not None:
        message_times, note, response_at, end = _har_clock(source)
        clock = "messages" if message_times is not None else "none"
    else:
        clock, note = "none", ""
    timeline = Timeline(source.label, source.format, clock, note, response_at=response_at, end=end)
    if timings is not None:
        timeline.end_error = timings.error
        pairs: Iterator[tuple[CaptureFrame, float | None]] = _frames_with_arrival(stream, timings)
    else:
        pairs = ((f, None) for f in stream)
    stamps: list[tuple[Mark, float | None]] = []
    spans = _Spans()
    for frame, at in pairs:
        if frame.error is not None:
            reason = frame.error.reason[:TEXT_LIMIT]
            timeline.marks.append(Mark(frame.index, at, BAD, "run", reason, frame.offset, reason))
            continue
        if frame.event is None:  # an event of a later protocol, skipped (not an error)
            note = (frame.note or "")[:TEXT_LIMIT]
            timeline.marks.append(Mark(frame.index, at, SKIPPED, "other", note, frame.offset))
            continue
        event = frame.event
        etype = str(event.get("type", "?"))[:TEXT_LIMIT]
        if message_times is not None:
            n = len(stamps)
            at = message_times[n] if n < len(message_times) else None
        text = describe(event)[:TEXT_LIMIT]  # bounded: an id may be megabytes long
        mark = Mark(frame.index, at, etype, lane_of(etype), text, frame.offset)
        timeline.marks.append(mark)
        spans.add(mark, event)
        stamp = event.get("timestamp")
        ok = isinstance(stamp, (int, float)) and not isinstance(stamp, bool)
        stamps.append((mark, float(stamp) if ok else None))  # type: ignore[arg-type]
    timeline.bytes = stream.end_offset
    if timings is not None and stream.end_offset != timings.size:
        why = (
            "it has no end line: the recording was killed before it could write the last "
            "chunk's time"
            if timings.end is None and stream.end_offset > timings.size
            else "another recording's timings, or an edited capture?"
        )
        raise CliError(
            f"{timings.path} does not match {source.label}: it times {timings.size:,} bytes, "
            f"the capture holds {stream.end_offset:,} ({why})"
        )
    if clock == "none" and any(s is not None for _, s in stamps):
        _use_timestamps(timeline, stamps)
    timeline.spans = spans.all
    return timeline


def _use_timestamps(timeline: Timeline, stamps: list[tuple[Mark, float | None]]) -> None:
    first = next(s for _, s in stamps if s is not None)
    missing = 0
    last: float | None = None
    for mark, stamp in stamps:
        if stamp is None:
            missing += 1
            mark.t = last
        else:
            mark.t = last = (stamp - first) / 1000
    timeline.clock = "timestamps"
    prefix = f"{timeline.clock_note}; " if timeline.clock_note else ""
    timeline.clock_note = prefix + (
        "times from the events' own timestamp fields (server clock, ms, from the first one)"
    )
    if missing:
        timeline.clock_note += f"; {missing:,} event(s) without one placed at the time before"


# -- spans -------------------------------------------------------------------------------


def _str(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    return value if isinstance(value, str) else None


class _Spans:
    """Groups events into spans as they come (see ``Span``)."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, str], Span] = {}
        self.all: list[Span] = []
        self.run: str | None = None  # the open run (RUN_ERROR may carry no runId)
        self.chunked: dict[str, str | None] = {"message": None, "tool call": None}
        self.thinking = [0, 0]  # deprecated THINKING_ blocks and messages seen

    def _start(self, kind: str, lane: str, key: str, label: str, mark: Mark) -> Span:
        span = self.open.get((kind, key))
        if span is None:
            span = Span(lane, kind, key[:LABEL_LIMIT], label[:LABEL_LIMIT], mark, mark)
            self.open[(kind, key)] = span
            self.all.append(span)
        return self._touch(span, mark)

    @staticmethod
    def _touch(span: Span, mark: Mark) -> Span:
        span.last_mark = mark
        return span

    def _get(self, kind: str, key: str | None, mark: Mark) -> Span | None:
        span = self.open.get((kind, key)) if key is not None else None
        return None if span is None else self._touch(span, mark)

    def _close(self, kind: str, key: str | None, mark: Mark) -> Span | None:
        span = self._get(kind, key, mark)
        if span is not None:
            span.closed = True
            del self.open[(kind, key)]  # type: ignore[arg-type]
        return span

    @staticmethod
    def _delta(span: Span | None, mark: Mark, text: Any) -> None:
        if span is None or not isinstance(text, str) or not text:
            return
        span.deltas += 1
        span.chars += len(text)
        if span.first_delta_mark is None:
            span.first_delta_mark = mark
        span.last_delta_mark = mark

    def add(self, mark: Mark, event: dict[str, Any]) -> None:
        lane = mark.lane  # lane_of(mark.type): the event family, by its type's prefix
        if lane == "run":
            self._lifecycle(mark, event)
        elif lane == "messages":
            self._message(mark, event)
        elif lane == "tool calls":
            self._tool_call(mark, event)
        elif lane == "reasoning":
            self._reasoning(mark, event)

    def _lifecycle(self, mark: Mark, event: dict[str, Any]) -> None:
        etype = mark.type
        if etype == "RUN_STARTED":
            self.run = _str(event, "runId") or f"#{mark.index}"
            self._start("run", "run", self.run, f"run {self.run}", mark)
        elif etype in ("RUN_FINISHED", "RUN_ERROR"):
            span = self._close("run", _str(event, "runId") or self.run, mark)
            if span is not None and etype == "RUN_ERROR":
                span.label += " (RUN_ERROR)"
        elif etype == "STEP_STARTED":
            name = _str(event, "stepName") or "?"
            self._start("step", "run", name, f"step {name}", mark)
        elif etype == "STEP_FINISHED":
            self._close("step", _str(event, "stepName"), mark)
        elif etype == "SUBAGENT_STARTED":
            key = _str(event, "subagentRunId") or f"#{mark.index}"
            name = _str(event, "name") or key
            self._start("subagent", "run", key, f"subagent {name}", mark)
        else:  # SUBAGENT_FINISHED / SUBAGENT_ERROR
            self._close("subagent", _str(event, "subagentRunId"), mark)

    def _message(self, mark: Mark, event: dict[str, Any]) -> None:
        etype, key = mark.type, _str(event, "messageId")
        if etype == "TEXT_MESSAGE_CHUNK":
            key = key or self.chunked["message"] or f"#{mark.index}"
            self.chunked["message"] = key
        if etype in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CHUNK") and key is not None:
            role = _str(event, "role") or "assistant"
            span = self._start("message", "messages", key, f"{role} message {key}", mark)
            span.closed = etype == "TEXT_MESSAGE_CHUNK"  # chunks have no end event
            self._delta(span, mark, event.get("delta"))
        elif etype == "TEXT_MESSAGE_CONTENT":
            self._delta(self._get("message", key, mark), mark, event.get("delta"))
        elif etype == "TEXT_MESSAGE_END":
            self._close("message", key, mark)

    def _tool_call(self, mark: Mark, event: dict[str, Any]) -> None:
        etype, key = mark.type, _str(event, "toolCallId")
        if etype == "TOOL_CALL_CHUNK":
            key = key or self.chunked["tool call"] or f"#{mark.index}"
            self.chunked["tool call"] = key
        if etype in ("TOOL_CALL_START", "TOOL_CALL_CHUNK") and key is not None:
            name = _str(event, "toolCallName")
            span = self.open.get(("tool call", key))
            if span is None:
                span = self._start("tool call", "tool calls", key, f"{name or '?'} ({key})", mark)
            else:
                self._touch(span, mark)
            self._delta(span, mark, event.get("delta"))
        elif etype == "TOOL_CALL_ARGS":
            self._delta(self._get("tool call", key, mark), mark, event.get("delta"))
        elif etype == "TOOL_CALL_END":
            span = self._get("tool call", key, mark)
            if span is not None:
                span.args_end_mark, span.closed = mark, True  # a frontend tool: no result here
        elif etype == "TOOL_CALL_RESULT":
            span = self._close("tool call", key, mark)
            if span is not None:
                span.result_mark = mark

    def _reasoning(self, mark: Mark, event: dict[str, Any]) -> None:
        etype = mark.type
        key = _str(event, "messageId")
        if etype.startswith("THINKING_"):  # the deprecated events carry no ids
            n = 0 if etype in _BLOCK_EDGES else 1
            self.thinking[n] += etype.endswith("_START")
            key = f"thinking-{'block' if n == 0 else 'message'}-{self.thinking[n]}"
        kind = "reasoning" if etype in _BLOCK_EDGES else "reasoning message"
        if etype in _BLOCK_EDGES and etype.endswith("_START"):
            self._start(kind, "reasoning", key or "?", f"reasoning block {key or ''}".strip(), mark)
        elif etype in _BLOCK_EDGES:
            self._close(kind, key or "?", mark)
        elif etype.endswith(("_MESSAGE_START", "_MESSAGE_CHUNK")):
            span = self._start(
                kind, "reasoning", key or "?", f"reasoning message {key or ''}".strip(), mark
            )
            span.closed = etype.endswith("_CHUNK")
            self._delta(span, mark, event.get("delta"))
        elif etype.endswith("_MESSAGE_CONTENT"):
            self._delta(self._get(kind, key, mark), mark, event.get("delta"))
        elif etype.endswith("_MESSAGE_END"):
            self._close(kind, key, mark)


_BLOCK_EDGES: Final = frozenset(
    {"REASONING_START", "REASONING_END", "THINKING_START", "THINKING_END"}
)
