"""``agui-wire inspect --timeline`` on every time source a capture can have (a
recording's sidecar, a HAR's message times or whole-response timings, the events'
own timestamps, none), and on sidecars that are wrong. ``main`` runs in process
here (tests/cli/test_cli_record.py runs the console script end to end)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_wire import encode_proto, encode_sse
from agui_wire._cli._timings import TimingWriter, read_timings, rechunk
from tests.support.cli_support import PROTO, SSE, chrome_har, har_entry, run_in_process

EVENTS: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "STEP_STARTED", "stepName": "plan"},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "search", "delta": '{"q"'},
    {"type": "TOOL_CALL_CHUNK", "delta": ': "x"}'},
    {"type": "STEP_FINISHED", "stepName": "plan"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "role": "assistant", "delta": "Hel"},
    {"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"},
    {"type": "CUSTOM", "name": "note", "value": 1},
    {"type": "RUN_ERROR", "message": "boom"},
]


def write_recording(path: Path, body: bytes, times: list[tuple[int, float]]) -> None:
    """A capture and its sidecar as ``agui-wire record`` writes them: ``times`` are
    (chunk length, arrival) pairs covering ``body``."""
    path.write_bytes(body)
    with open(f"{path}.timing.jsonl", "wb") as fh:
        w = TimingWriter(fh)
        w.header(url="http://x/agent", method="POST", accept=SSE, status=200,
                 content_type=SSE, content_encoding=None, started="2026-01-01T00:00:00Z",
                 response_at=0.001)  # fmt: skip
        for length, at in times:
            w.chunk(length, at)
        w.end(times[-1][1] + 0.001 if times else 0.001)


def timeline(*args: Any, code: int = 0) -> dict[str, Any]:
    r = run_in_process("inspect", *args, "--timeline", "--json")
    assert r.returncode == code, r.stderr.decode()
    return dict(orjson.loads(r.stdout))


@pytest.mark.parametrize("fmt", ["sse", "proto"])
def test_each_event_gets_the_arrival_of_the_chunk_that_completed_it(
    tmp_path: Path, fmt: str
) -> None:
    encode = encode_sse if fmt == "sse" else encode_proto
    frames = [encode(e) for e in EVENTS]
    body = b"".join(frames)
    # chunk k = the first half of frame k+1's bytes glued to the second half of frame k's,
    # so every event completes in the chunk after the one it starts in
    cuts = sorted(
        {0, len(body)}
        | {sum(map(len, frames[:i])) + len(frames[i]) // 2 for i in range(len(frames))}
    )
    times = [(b - a, 0.1 * (k + 1)) for k, (a, b) in enumerate(itertools.pairwise(cuts))]
    capture = tmp_path / f"run.{fmt}"
    write_recording(capture, body, times)
    tl = timeline(capture)
    assert tl["clock"] == "chunks"
    assert [m["t"] for m in tl["marks"]] == pytest.approx(
        [0.1 * (k + 2) for k in range(len(EVENTS))]
    )
    spans = {(s["kind"], s["key"]): s for s in tl["spans"]}
    # chunked messages and tool calls continue without their ids
    assert spans[("tool call", "c1")]["deltas"] == 2
    assert spans[("message", "m1")]["chars"] == 5
    assert spans[("step", "plan")]["closed"]
    assert spans[("run", "r")]["label"] == "run r (RUN_ERROR)"
    assert tl["first_token"] == pytest.approx(0.7)
    # gzip on top: the same times (the reader cuts the decompressed bytes again)
    gz = tmp_path / f"run.{fmt}.gz"
    import gzip

    gz.write_bytes(gzip.compress(body))
    r = run_in_process("inspect", gz, "--timeline", "--json", "--timing", f"{capture}.timing.jsonl")
    assert [m["t"] for m in orjson.loads(r.stdout)["marks"]] == [m["t"] for m in tl["marks"]]


def test_rechunk_restores_the_recorded_chunks(tmp_path: Path) -> None:
    rng = random.Random(7)
    for _ in range(200):
        body = rng.randbytes(rng.randrange(0, 300))
        lengths: list[int] = []
        while sum(lengths) < len(body):
            lengths.append(min(rng.choice([0, 1, 2, 7, 50]), len(body) - sum(lengths)))
        path = tmp_path / "t.timing.jsonl"
        with open(path, "wb") as fh:
            w = TimingWriter(fh)
            w.header(response_at=0.0)
            for k, n in enumerate(lengths):
                w.chunk(n, float(k))
            w.end(2.0)
        timings = read_timings(str(path))
        reads = []
        rest = body
        while rest:
            n = rng.randrange(1, 80)
            reads.append(rest[:n])
            rest = rest[n:]
        pieces = list(rechunk(iter(reads), timings))
        assert b"".join(pieces) == body
        assert all(pieces)
        at = 0
        for piece in pieces:  # each inside one recorded chunk: one arrival time
            assert timings.arrival(at) == timings.arrival(at + len(piece) - 1)
            at += len(piece)


def test_har_times(tmp_path: Path) -> None:
    body = b"".join(encode_sse(e) for e in EVENTS)
    entry = har_entry("https://app.example.com/agent", body, SSE, binary=False)
    har = tmp_path / "whole.har"
    har.write_bytes(chrome_har(entry))
    tl = timeline(har)
    # whole-response timings only: said, and no time is made up for the events
    assert tl["clock"] == "none"
    assert all(m["t"] is None for m in tl["marks"])
    assert tl["response_at"] == pytest.approx(0.3012)
    assert tl["end"] == pytest.approx(0.8125)
    r = run_in_process("inspect", har, "--timeline")
    text = r.stdout.decode()
    assert (
        "whole-response timings only (first byte at 301.2 ms, the whole response took 812.5 ms)"
        in text
    )
    assert "(no time per event: record with `agui-wire record URL`" in text
    assert "first byte:" in text
    assert "response done:" in text
    # a HAR writer that keeps each SSE message's time (_eventSourceMessages, epoch seconds)
    start = 1764468000.0  # 2025-11-30T02:00:00Z, the entry's startedDateTime
    entry["_eventSourceMessages"] = [
        {"time": start + 0.5 + i / 10, "eventName": "message", "eventId": "", "data": "{}"}
        for i in range(len(EVENTS))
    ]
    har.write_bytes(chrome_har(entry))
    tl = timeline(har)
    assert tl["clock"] == "messages"
    assert [m["t"] for m in tl["marks"]] == pytest.approx(
        [0.5 + i / 10 for i in range(len(EVENTS))]
    )
    # a binary body in a HAR, base64 as Chrome stores it: events in order, no times
    body = b"".join(encode_proto(e) for e in EVENTS)
    har.write_bytes(chrome_har(har_entry("https://x/agent", body, PROTO, binary=True)))
    tl = timeline(har)
    assert [m["type"] for m in tl["marks"]] == [e["type"] for e in EVENTS]


def test_event_timestamps_and_no_times(tmp_path: Path) -> None:
    stamped = [dict(e) for e in EVENTS]
    for i, e in enumerate(stamped):
        if i != 3:
            e["timestamp"] = 1_700_000_000_000 + 250 * i
    capture = tmp_path / "stamped.sse"
    capture.write_bytes(b"".join(encode_sse(e) for e in stamped))
    tl = timeline(capture)
    assert tl["clock"] == "timestamps"
    assert "1 event(s) without one placed at the time before" in tl["clock_note"]
    times = [m["t"] for m in tl["marks"]]
    assert times[:3] == [0.0, 0.25, 0.5]
    assert times[3] == 0.5
    assert times[4] == 1.0
    spans = {(s["kind"], s["key"]): s for s in tl["spans"]}  # spans take the times too
    assert (spans[("run", "r")]["start"], spans[("run", "r")]["end"]) == (0.0, 2.0)
    assert spans[("tool call", "c1")]["end"] == 0.5
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"".join(encode_proto(e) for e in EVENTS))
    tl = timeline(plain)
    assert tl["clock"] == "none"
    assert tl["first_token"] is None
    text = run_in_process("inspect", plain, "--timeline").stdout.decode()
    assert "time (s)" not in text
    assert "events 0..8" in text


def test_bad_frames_are_on_the_timeline(tmp_path: Path) -> None:
    frames = [encode_proto(e) for e in EVENTS[:3]]
    frames[1] = frames[1][:4] + b"\x07" + frames[1][5:]  # field number 0: a bad payload
    capture = tmp_path / "bad.bin"
    capture.write_bytes(b"".join(frames))
    tl = timeline(capture, code=1)
    assert [m["type"] for m in tl["marks"]] == ["RUN_STARTED", "BAD FRAME", "TOOL_CALL_CHUNK"]
    assert "field number 0" in tl["marks"][1]["error"]
    # an event of a later protocol (an Event field this schema does not know) is skipped
    # with a note, not an error; a megabyte-long id is cut in the marks and the span labels
    later = b"\x9a\x06\x00"  # field 99, length 0
    huge = "x" * 1_000_000
    capture.write_bytes(
        encode_proto({"type": "RUN_STARTED", "threadId": huge, "runId": huge})
        + len(later).to_bytes(4, "big")
        + later
        + encode_proto({"type": "RUN_FINISHED", "threadId": huge, "runId": huge})
    )
    tl = timeline(capture)
    assert [m["type"] for m in tl["marks"]] == ["RUN_STARTED", "(skipped)", "RUN_FINISHED"]
    assert "later protocol" in tl["marks"][1]["text"]
    assert max(len(m["text"]) for m in tl["marks"]) <= 200
    assert [len(s["label"]) <= 120 and s["closed"] for s in tl["spans"]] == [True]


def test_no_events_is_not_a_timeline(tmp_path: Path) -> None:
    empty, text = tmp_path / "empty.sse", tmp_path / "notes.txt"
    empty.write_bytes(b"")
    text.write_bytes(b"hello, not a capture\n")
    for path in (empty, text):
        r = run_in_process("inspect", path, "--timeline")
        assert r.returncode == 1
        assert "no AG-UI events" in r.stderr.decode()
    assert run_in_process("inspect", empty, "--timeline", "--allow-empty").returncode == 0
    assert run_in_process("inspect", text, "--timeline", "--allow-empty").returncode == 1


def test_wrong_sidecars_and_options(tmp_path: Path) -> None:
    body = b"".join(encode_sse(e) for e in EVENTS)
    capture = tmp_path / "run.sse"
    write_recording(capture, body, [(len(body) - 10, 0.1)])  # times fewer bytes than it holds
    r = run_in_process("inspect", capture, "--timeline")
    assert r.returncode == 1
    assert (
        f"it times {len(body) - 10:,} bytes, the capture holds {len(body):,}" in r.stderr.decode()
    )
    sidecar = Path(f"{capture}.timing.jsonl")
    # killed mid-recording: the capture got a chunk the timing file did not, nor its end line
    lines = sidecar.read_bytes().splitlines(keepends=True)
    sidecar.write_bytes(b"".join(lines[:-1]))
    r = run_in_process("inspect", capture, "--timeline")
    assert r.returncode == 1
    assert "it has no end line: the recording was killed" in r.stderr.decode()
    for text, message in [
        (b'{"offset": 0}\n', 'the first line must hold "agui_wire_timing": 1'),
        (b"", "an empty timing file"),
        (b'{"agui_wire_timing": 1}\n{"offset": 5, "length": 1, "at": 0}\n', "chunk at byte 5"),
        (b'{"agui_wire_timing": 1}\n{"offset": 0, "length": -1, "at": 0}\n', "'length' is not"),
        (b'{"agui_wire_timing": 1}\nnope\n', "line 2: not JSON"),
        (
            b'{"agui_wire_timing": 1}\n{"offset": 0, "length": 1, "at": 2}\n'
            b'{"offset": 1, "length": 1, "at": 1}\n',
            "before the chunk before it",
        ),
    ]:
        sidecar.write_bytes(text)
        r = run_in_process("inspect", capture, "--timeline")
        assert r.returncode == 1, text
        assert message in r.stderr.decode(), (text, r.stderr)
    sidecar.unlink()
    har = tmp_path / "two.har"
    sse = har_entry("https://x/agent", body, SSE, binary=False)
    har.write_bytes(chrome_har(sse, sse))
    for args, message in [
        ([capture, "--timeline", "--frame", "1"], "--frame and --hex are for the table"),
        ([capture, "--html", "x.html"], "--html and --timing go with --timeline"),
        ([har, "--timeline", "--timing", "x"], "a HAR has its own"),
        ([har, "--timeline", "--html", "x.html"], "pick one with --entry N"),
    ]:
        r = run_in_process("inspect", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr.decode(), (args, r.stderr)
    r = run_in_process(
        "inspect", har, "--timeline", "--entry", "2", "--html", tmp_path / "one.html"
    )
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "one.html").read_text().startswith("<!doctype html>")
