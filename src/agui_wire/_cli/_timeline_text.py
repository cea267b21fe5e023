"""The timeline as text (``agui-wire inspect --timeline``).

Strategy: a header saying where the times come from (or that there are none),
one table row per frame (index, time, gap to the previous event, lane, type,
ids and a preview), then ``render_summary``: time to the first byte, event and
token; each run's duration; each message's duration and text per second
(characters, and deltas: about one per token for most models); each tool
call's argument streaming time and how long its result took; reasoning, steps,
state changes; the longest gaps. The HTML page shows the same summary text.
"""

from __future__ import annotations

from typing import IO

from ._timeline import REASONING_DELTAS, TEXT_DELTAS, Span, Timeline, describe_duration

__all__ = ["describe_span", "render_summary", "render_text"]

# -- text --------------------------------------------------------------------------------


def _at(t: float | None) -> str:
    return "?" if t is None else describe_duration(t)


_KIND = {"proto": "binary frames", "sse": "SSE events", "jsonl": "JSON lines"}


def _summary(tl: Timeline) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if tl.response_at is not None:
        what = "response headers" if tl.clock == "chunks" else "first byte"
        rows.append((what, describe_duration(tl.response_at)))
    first = next((m for m in tl.marks if m.t is not None), None)
    if first is not None:
        rows.append(("first event", f"{_at(first.t)}  {first.type}"))
    token = tl.first(TEXT_DELTAS)
    if token is not None:
        rows.append(("first token", f"{_at(token.t)}  {token.type}  (time to first token)"))
    thought = tl.first(REASONING_DELTAS)
    if thought is not None:
        rows.append(("first reasoning token", f"{_at(thought.t)}  {thought.type}"))
    for span in tl.spans:
        if span.kind == "run":
            took = _at(span.duration) if tl.timed else f"events {span.first}..{span.last}"
            rows.append((span.label, took + ("" if span.closed else ", never finished")))
    if tl.end is not None:
        end = f"{describe_duration(tl.end)}" + (
            f"  (broke: {tl.end_error})" if tl.end_error else ""
        )
        rows.append(("last byte" if tl.clock == "chunks" else "response done", end))
    return rows


def describe_span(tl: Timeline, s: Span) -> str:
    """One span: its label, when and how long (or its events, without times), and
    for a tool call how long its arguments streamed and its result took; for text,
    the deltas, characters and rates."""
    where = f"events {s.first}..{s.last}"
    if tl.timed:
        where = f"at {_at(s.start)}, " + (f"took {_at(s.duration)}" if s.closed else "never ended")
    line = f"{s.label}: {where}"
    if s.kind == "tool call":
        parts = []
        if s.args_end is not None and s.start is not None:
            parts.append(f"arguments streamed {describe_duration(s.args_end - s.start)}")
        if s.result_at is not None and s.args_end is not None:
            parts.append(f"result {describe_duration(s.result_at - s.args_end)} after the call")
        elif s.args_end_mark is not None and s.result_mark is None:
            parts.append("no result in this stream (a frontend tool?)")
        if parts:
            line += "; " + ", ".join(parts)
    elif s.deltas:
        line += f"; {s.deltas:,} delta{'' if s.deltas == 1 else 's'}, {s.chars:,} chars"
        rate = s.rate()
        if rate is not None:
            line += f" ({rate[0]:,.0f} chars/s, {rate[1]:,.1f} deltas/s)"
    return line


def _span_lines(tl: Timeline, kind: str) -> list[str]:
    return ["  " + describe_span(tl, s) for s in tl.spans if s.kind == kind]


def render_summary(tl: Timeline) -> str:
    """What took how long: first byte/event/token, runs, messages, tool calls,
    reasoning, steps, state changes and the longest gaps."""
    out = [f"{name + ':':<23} {value}" for name, value in _summary(tl)]
    for kind, title in (
        ("message", "messages"),
        ("tool call", "tool calls"),
        ("reasoning message", "reasoning"),
        ("step", "steps"),
        ("subagent", "subagents"),
    ):
        lines = _span_lines(tl, kind)
        if lines:
            out += ["", f"{title}:", *lines]
    states = [m for m in tl.marks if m.lane == "state"]
    if states:
        listed = ", ".join(f"{m.type} at {_at(m.t)}" if tl.timed else m.type for m in states[:8])
        more = f", … {len(states) - 8} more" if len(states) > 8 else ""
        out += ["", f"state changes: {len(states):,} ({listed}{more})"]
    gaps = tl.gaps()
    if gaps:
        out += ["", "longest gaps:"]
        for g, a, b in gaps:
            out.append(
                f"  {describe_duration(g):>10}  after {a.index} {a.type}, before {b.index} {b.type}"
            )
    return "\n".join(out)


def render_text(tl: Timeline, out: IO[str]) -> None:
    """The timeline as a table of events, then ``render_summary``."""
    print(f"timeline of {tl.label}: {tl.events:,} {_KIND[tl.format]}, {tl.bytes:,} bytes", file=out)
    if tl.clock_note:
        print(f"times: {tl.clock_note}", file=out)
    if not tl.timed:
        print("(no time per event: record with `agui-wire record URL` for arrival times)", file=out)
    print(file=out)
    head = f"{'index':>6}  " + (f"{'time (s)':>10}  {'gap':>9}  " if tl.timed else "")
    print(head + f"{'lane':<10}  {'type':<26}  ids", file=out)
    previous: float | None = None
    for m in tl.marks:
        row = f"{m.index:>6}  "
        if tl.timed:
            gap = "" if m.t is None or previous is None else f"+{m.t - previous:.3f}"
            row += f"{'?' if m.t is None else f'{m.t:.3f}':>10}  {gap:>9}  "
            previous = m.t if m.t is not None else previous
        print(row + f"{m.lane:<10}  {m.type:<26}  {m.text}".rstrip(), file=out)
    print(file=out)
    print(render_summary(tl), file=out)
