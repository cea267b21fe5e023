"""Nothing is left out silently: every command that goes past an
event lists it — input, index, byte offset, type, reason — the first five by
default, every one with ``-v``, and a count at the end; its words are this command
line's options, not Python keywords. (``cost``: tests/cli/test_cli_verdict.py.)
"""

from __future__ import annotations

import re
import subprocess
import sys

import orjson
import pytest

import agui_wire
from agui_wire import encode_proto
from agui_wire.errors import EncodeError
from tests.support.cli_support import jsonl

LISTED = re.compile(rb"^agui-wire: \S+: (?:event|frame) (\d+), byte (\d+)", re.M)


def _corrupt(run_events, bad: int) -> tuple[bytes, list[int]]:
    """A binary capture whose first ``bad`` TEXT_MESSAGE_CONTENT frames carry a field
    number 0 (an error the reader goes past with --keep-going)."""
    out, hit = bytearray(), []
    for i, event in enumerate(run_events):
        frame = bytearray(encode_proto(event))
        if event["type"] == "TEXT_MESSAGE_CONTENT" and len(hit) < bad:
            frame[4] = 0x00  # the payload's first tag: field 0
            hit.append(i)
        out += frame
    return bytes(out), hit


@pytest.mark.parametrize(
    "command", [("decode", "-k"), ("convert", "--to", "sse", "-k"), ("cost", "--repeats", "1")]
)
def test_bad_frames_gone_past_are_listed(cli, tmp_path, run_events, command) -> None:
    data, hit = _corrupt(run_events, 8)
    path = tmp_path / "corrupt.bin"
    path.write_bytes(data)
    r = cli(command[0], path, *command[1:])
    assert r.returncode == 1
    assert [int(i) for i, _ in LISTED.findall(r.stderr)] == hit[:5]
    action = "left out" if command[0] == "cost" else "skipped"
    assert (
        f"8 event(s) {action} (undecodable x8); 3 not listed above (-v lists every one)".encode()
        in r.stderr
    )
    r = cli(command[0], path, *command[1:], "-v")
    assert [int(i) for i, _ in LISTED.findall(r.stderr)] == hit
    summary = f"8 event(s) {action} (undecodable x8)\n".encode()
    assert (summary in r.stderr) == (command[0] == "cost")  # the others listed every one


def test_events_that_cannot_be_encoded_are_listed(cli, real) -> None:
    sse = real["langgraph.sse"].read_bytes()
    events = agui_wire.decode(sse, agui_wire.SSE_MEDIA_TYPE)
    refused = []
    for i, e in enumerate(events):
        try:
            encode_proto(e)
        except EncodeError:
            refused.append((i, e["type"]))
    lines = b"".join(orjson.dumps(e) + b"\n" for e in events)
    r = cli("encode", "-", "--to", "proto", "-k", "-v", "-o", "/dev/null", input=lines)
    assert r.returncode == 1
    listed = re.findall(
        rb"^agui-wire: stdin: event (\d+), byte \d+, (\w+) at (\S+): (.*)$", r.stderr, re.M
    )
    assert [(int(i), t.decode()) for i, t, _, _ in listed] == refused
    for _, _, path, reason in listed:
        assert path.startswith(b"/")
        assert reason.endswith(b"(pass --lossy-numbers to round it) (skipped)")
    assert b"lossy_numbers" not in r.stderr


def test_invalid_utf8_names_the_option(cli) -> None:
    frame = bytearray(
        encode_proto({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "é"})
    )
    frame[frame.index(b"\xc3\xa9") + 1] = 0x28
    r = cli("decode", "-", input=bytes(frame))
    assert r.returncode == 1
    assert b"(pass --invalid-utf8 replace to substitute U+FFFD)" in r.stderr
    r = cli("decode", "-", "--invalid-utf8", "replace", input=bytes(frame))
    assert r.returncode == 0
    assert jsonl(r.stdout)[0]["delta"] == "\ufffd("


def test_later_protocol_events_skipped_are_listed(cli, run_events) -> None:
    # an Event arm no 1.0 reader knows (field 999): skipped by default, with a line each
    unknown = b"\xba\x3e\x00"  # field 999, length-delimited, empty
    frames = [encode_proto(e) for e in run_events[:3]]
    frames.insert(1, len(unknown).to_bytes(4, "big") + unknown)
    r = cli("decode", "-", input=b"".join(frames))
    assert r.returncode == 0, r.stderr
    assert re.search(rb"stdin: frame 1, byte \d+: skipped an event of a later protocol", r.stderr)
    assert b"event(s) skipped" not in r.stderr  # listed: no count needed


@pytest.mark.parametrize("command", ["decode", "inspect", "validate"])
def test_every_error_names_cli_flags_not_python_keywords(cli, captures, command) -> None:
    r = cli(command, captures["proto"], "--max-frame-size", "10")
    assert r.returncode == 1
    said = r.stdout + r.stderr
    assert b"above --max-frame-size 10" in said
    assert b"max_frame_size" not in said


def _decode_peak_kib(path) -> int:
    """Peak RSS (KiB) of ``agui-wire decode --keep-going PATH`` in a fresh interpreter."""
    script = (
        "import resource, sys\n"
        "from agui_wire._cli import main\n"
        f"code = main(['decode', '--keep-going', {str(path)!r}])\n"
        "print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=300, check=False
    )
    code, kib = r.stderr.split()[-2:]
    assert int(code) == 1, r.stderr[-2000:]
    return int(kib)


@pytest.mark.slow
def test_what_is_skipped_is_counted_not_held(tmp_path) -> None:
    """``decode --keep-going`` on a hostile capture of 5-byte bad frames: the skipped
    ones are listed (five) and counted by type, not each kept until the end (an entry
    per frame held: 22 MB more peak RSS for 200,000 more frames; counted: < 1 MB)."""
    peaks = {}
    for n in (50_000, 250_000):
        path = tmp_path / f"bad-{n}.bin"
        path.write_bytes(b"\x00\x00\x00\x01\xff" * n)  # a 1-byte payload: a cut varint
        peaks[n] = _decode_peak_kib(path)
    assert peaks[250_000] - peaks[50_000] < 10 * 1024, peaks
