"""``agui-wire decode`` (and the shared input handling) on good and broken captures.

Every test runs the real console script in a subprocess. Captures here are
written by agui_wire; tests/interop/test_cli_interop.py does the same with
captures from the reference encoder.
"""

from __future__ import annotations

import gzip
import os
import pty
import struct
import subprocess

import orjson
import pytest

from agui_wire import encode_proto, encode_sse
from tests.support.cli_support import PROTO, SSE, chrome_har, command, har_entry, jsonl


def frame_offsets(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        pos += 4 + struct.unpack_from(">I", data, pos)[0]
    return out


@pytest.mark.parametrize("kind", ["proto", "sse", "jsonl"])
def test_decode_each_format(cli, captures, run_events, kind) -> None:
    r = cli("decode", captures[kind])
    assert r.returncode == 0, r.stderr
    assert jsonl(r.stdout) == run_events
    assert r.stderr == b""


def test_decode_stdin(cli, captures, run_events) -> None:
    r = cli("decode", "-", input=captures["proto"].read_bytes())
    assert r.returncode == 0
    assert jsonl(r.stdout) == run_events


@pytest.mark.parametrize(
    ("command", "kind"),
    [("decode", "proto"), ("inspect", "sse"), ("validate", "proto"), ("encode", "jsonl")],
)
def test_stdin_is_read_when_no_capture_is_named(cli, captures, run_events, command, kind) -> None:
    # `cat capture.bin | agui-wire decode`, as the README shows it
    extra = ("--to", "sse") if command == "encode" else ()
    named = cli(command, captures[kind], *extra)
    piped = cli(command, *extra, input=captures[kind].read_bytes())
    assert piped.returncode == named.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout.replace(str(captures[kind]).encode(), b"stdin")


def test_no_capture_and_stdin_a_terminal_is_a_usage_error() -> None:
    master, slave = pty.openpty()
    try:
        r = subprocess.run(
            [*command(), "decode"], stdin=slave, capture_output=True, timeout=60, check=False
        )
    finally:
        os.close(slave)
        os.close(master)
    assert r.returncode == 2
    assert b"no input: name a file, or pipe one in" in r.stderr


def test_python_dash_m_is_the_same_command(captures, run_events) -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "agui_wire", "decode", str(captures["sse"])],
        capture_output=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert jsonl(r.stdout) == run_events


def test_gzip_is_detected_by_magic_not_name(cli, tmp_path, captures, run_events) -> None:
    for kind in ("proto", "sse"):
        odd = tmp_path / f"capture-{kind}.dat"
        odd.write_bytes(gzip.compress(captures[kind].read_bytes()))
        r = cli("decode", odd)
        assert r.returncode == 0, r.stderr
        assert jsonl(r.stdout) == run_events
    # gzip on stdin too
    r = cli("decode", "-", input=gzip.compress(captures["proto"].read_bytes()))
    assert jsonl(r.stdout) == run_events


def test_pretty_and_envelope(cli, captures, run_events) -> None:
    r = cli("decode", captures["proto"], "--pretty")
    assert r.returncode == 0
    assert b'\n  "type": "RUN_STARTED"' in r.stdout
    r = cli("decode", captures["proto"], "--envelope")
    records = jsonl(r.stdout)
    offsets = frame_offsets(captures["proto"].read_bytes())
    assert [rec["index"] for rec in records] == list(range(len(run_events)))
    assert [rec["offset"] for rec in records] == offsets
    assert [rec["event"] for rec in records] == run_events


def test_output_file_and_gzip_output(cli, tmp_path, captures, run_events) -> None:
    out = tmp_path / "events.jsonl.gz"
    r = cli("decode", captures["sse"], "-o", out)
    assert r.returncode == 0
    assert r.stdout == b""
    assert jsonl(gzip.decompress(out.read_bytes())) == run_events


# -- HAR ------------------------------------------------------------------------------------


def test_har_with_base64_binary_body(cli, tmp_path, run_events) -> None:
    body = b"".join(encode_proto(e) for e in run_events)
    har = tmp_path / "session.har"
    har.write_bytes(
        chrome_har(har_entry("https://app.example.com/agent", body, PROTO, binary=True))
    )
    r = cli("decode", har)
    assert r.returncode == 0, r.stderr
    assert jsonl(r.stdout) == run_events


def test_har_with_several_responses(cli, tmp_path, run_events) -> None:
    first, second = run_events[:40], run_events[40:]
    har = tmp_path / "session.har"
    har.write_bytes(
        chrome_har(
            har_entry(
                "https://app.example.com/agent",
                b"".join(encode_sse(e) for e in first),
                SSE,
                binary=False,
            ),
            har_entry(
                "https://app.example.com/agent?binary=1",
                b"".join(encode_proto(e) for e in second),
                PROTO,
                binary=True,
            ),
        )
    )
    # Entry 0 is the unrelated script; the AG-UI responses are entries 1 and 2.
    r = cli("decode", har)
    assert r.returncode == 0, r.stderr
    records = jsonl(r.stdout)
    assert [rec["entry"] for rec in records] == [1] * 40 + [2] * 80
    assert [rec["event"] for rec in records] == run_events
    assert b"entry   1" in r.stderr
    assert b"entry   2" in r.stderr
    assert b"--entry" in r.stderr
    # --entry picks one, plain events
    r = cli("decode", har, "--entry", "2")
    assert jsonl(r.stdout) == second
    # convert cannot merge two streams: a usage error that lists the entries
    r = cli("convert", har, "--to", "sse")
    assert r.returncode == 2
    assert b"pick one with --entry N" in r.stderr
    assert b"application/vnd.ag-ui.event+proto" in r.stderr
    # an entry that is not an AG-UI response
    r = cli("decode", har, "--entry", "0")
    assert r.returncode == 2
    assert b"not an AG-UI response" in r.stderr
    # gzip-compressed HAR
    gz = tmp_path / "session.har.gz"
    gz.write_bytes(gzip.compress(har.read_bytes()))
    r = cli("decode", gz, "--entry", "1")
    assert jsonl(r.stdout) == first


def test_har_without_agui_responses(cli, tmp_path) -> None:
    har = tmp_path / "x.har"
    har.write_bytes(chrome_har())
    r = cli("decode", har)
    assert r.returncode == 1
    assert b"no AG-UI responses" in r.stderr


def test_har_over_the_size_cap(cli, tmp_path, run_events) -> None:
    body = b"".join(encode_proto(e) for e in run_events)
    har = tmp_path / "big.har"
    har.write_bytes(chrome_har(har_entry("https://x/agent", body, PROTO, binary=True)))
    r = cli("decode", har, "--max-har-size", "1KiB")
    assert r.returncode == 3
    assert b"--max-har-size" in r.stderr


# -- broken captures ------------------------------------------------------------------------


def test_truncated_binary(cli, tmp_path, captures, run_events) -> None:
    data = captures["proto"].read_bytes()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:-7])
    r = cli("decode", cut)
    assert r.returncode == 1
    assert jsonl(r.stdout) == run_events[:-1]
    last = frame_offsets(data)[-1]
    err = r.stderr.decode()
    assert f"frame {len(run_events) - 1}" in err
    assert f"byte {len(data) - 7}" in err
    # the words a cut SSE capture gets (test_truncated_sse_says_where_the_stream_ended)
    assert f"the stream ended inside event {len(run_events) - 1}, mid-frame" in err
    assert str(last) in err or "trailing bytes" in err


def test_truncated_sse_says_where_the_stream_ended(cli, tmp_path, captures, run_events) -> None:
    # cut inside the last event's data: the same words as a binary stream cut mid-frame
    data = captures["sse"].read_bytes()
    cut = tmp_path / "cut.sse"
    cut.write_bytes(data[:-7])
    r = cli("decode", cut)
    assert r.returncode == 1
    assert jsonl(r.stdout) == run_events[:-1]
    err = r.stderr.decode()
    last = len(run_events) - 1
    assert f"the stream ended inside event {last}" in err
    assert "not valid JSON" not in err


def test_broken_capture_is_shown_whole_and_marked(cli, tmp_path, run_events) -> None:
    # events @ag-ui/core's schemas reject are written as read, each marked, exit 1
    events = [dict(e) for e in run_events]
    bad_at = next(i for i, e in enumerate(events) if e["type"] == "TEXT_MESSAGE_CONTENT")
    events[bad_at]["delta"] = 5
    chunks = [
        encode_sse(e) if i != bad_at else b"data: " + orjson.dumps(e) + b"\n\n"
        for i, e in enumerate(events)
    ]
    path = tmp_path / "broken.sse"
    path.write_bytes(b"".join(chunks))
    r = cli("decode", path)
    assert r.returncode == 1
    assert jsonl(r.stdout) == events
    err = r.stderr.decode()
    offset = sum(map(len, chunks[:bad_at]))
    assert f"event {bad_at}, byte {offset}" in err
    assert "TEXT_MESSAGE_CONTENT at /delta" in err
    assert "(kept: @ag-ui/core's schemas reject it)" in err
    r = cli("decode", path, "--envelope")
    records = jsonl(r.stdout)
    assert [rec["event"] for rec in records] == events
    marked = [i for i, rec in enumerate(records) if "invalid" in rec]
    assert marked == [bad_at]
    assert records[bad_at]["invalid"]["path"] == "/delta"


def _corrupt_frame(data: bytes, index: int) -> bytes:
    out = bytearray(data)
    pos = frame_offsets(data)[index]
    out[pos + 4] = 0x07  # tag: field 0, wire type 7
    return bytes(out)


def test_bad_frame_in_the_middle(cli, tmp_path, captures, run_events) -> None:
    data = captures["proto"].read_bytes()
    bad = tmp_path / "bad.bin"
    bad.write_bytes(_corrupt_frame(data, 30))
    offset = frame_offsets(data)[30]
    r = cli("decode", bad)
    assert r.returncode == 1
    assert jsonl(r.stdout) == run_events[:30]
    assert f"frame 30, byte {offset + 4}".encode() in r.stderr
    assert b"--keep-going" in r.stderr
    r = cli("decode", bad, "--keep-going")
    assert r.returncode == 1  # problems were found, even though it went on
    assert jsonl(r.stdout) == run_events[:30] + run_events[31:]
    assert b"(skipped)" in r.stderr
    assert b"1 bad" in r.stderr


def test_oversized_frame_cannot_be_skipped(cli, tmp_path, captures, run_events) -> None:
    data = captures["proto"].read_bytes()
    pos = frame_offsets(data)[10]
    broken = data[:pos] + b"\x7f\xff\xff\xff" + data[pos + 4 :]
    path = tmp_path / "huge.bin"
    path.write_bytes(broken)
    r = cli("decode", path, "-k")
    assert r.returncode == 1
    assert jsonl(r.stdout) == run_events[:10]
    assert f"frame 10, byte {pos}".encode() in r.stderr
    assert b"above --max-frame-size " in r.stderr
    assert b"cannot continue" in r.stderr


def test_bad_sse_event_is_skipped(cli, tmp_path, run_events) -> None:
    chunks = [encode_sse(e) for e in run_events]
    chunks[5] = b'data: {"type": "TEXT_MESSAGE_CONTENT", "messageId": \n\n'
    data = b"".join(chunks)
    path = tmp_path / "bad.sse"
    path.write_bytes(data)
    offset = sum(map(len, chunks[:5]))
    r = cli("decode", path)
    assert r.returncode == 1
    assert jsonl(r.stdout) == run_events[:5]
    assert f"event 5, byte {offset}: data is not valid JSON".encode() in r.stderr
    r = cli("decode", path, "--keep-going")
    assert jsonl(r.stdout) == run_events[:5] + run_events[6:]


def test_invalid_utf8_in_sse_resynchronises(cli, tmp_path, run_events) -> None:
    chunks = [encode_sse(e) for e in run_events]
    chunks[7] = b'data: {"type":"CUSTOM","name":"\xff","value":1}\n\n'
    path = tmp_path / "utf8.sse"
    path.write_bytes(b"".join(chunks))
    r = cli("decode", path)
    assert r.returncode == 1
    assert b"invalid UTF-8" in r.stderr
    assert jsonl(r.stdout) == run_events[:7]
    # --keep-going can read past it, so the message says so (it did not before
    # the library reader: a parser error was reported as if nothing could follow)
    assert b"stopped at the first error (7 events before it; --keep-going" in r.stderr
    r = cli("decode", path, "--keep-going")
    assert r.returncode == 1
    assert jsonl(r.stdout) == run_events[:7] + run_events[8:]
    # the events after the bad one keep their stream indices and offsets
    r = cli("decode", path, "--keep-going", "--envelope")
    records = jsonl(r.stdout)
    assert records[7]["index"] == 8
    assert records[7]["offset"] == sum(map(len, chunks[:8]))
    # the reference's choice: replace, and nothing is wrong
    r = cli("decode", path, "--invalid-utf8", "replace")
    assert r.returncode == 0
    assert jsonl(r.stdout)[7]["name"] == "\ufffd"


def test_garbage(cli, tmp_path) -> None:
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    r = cli("decode", path)
    assert r.returncode == 1
    assert r.stdout == b""
    assert b"cannot tell the format: the first byte is 0x89" in r.stderr
    # forced to binary: a frame length that is far too large
    r = cli("decode", path, "--format", "proto")
    assert r.returncode == 1
    assert b"frame 0, byte 0" in r.stderr


def test_bad_json_lines(cli, tmp_path, run_events) -> None:
    lines = [orjson.dumps(e) for e in run_events[:5]]
    lines.insert(2, b'{"type": "TEXT_MESSAGE_CONTENT",}')
    lines.insert(4, b"[1, 2]")
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    r = cli("decode", path, "-k")
    assert r.returncode == 1
    assert jsonl(r.stdout) == run_events[:5]
    assert b"line 3" in r.stderr
    assert b"line 5: not a JSON object" in r.stderr


def test_empty_input_is_a_problem_unless_allowed(cli) -> None:
    r = cli("decode", "-", input=b"")
    assert r.returncode == 1
    assert r.stdout == b""
    assert r.stderr == (
        b"agui-wire: stdin: no AG-UI events: the input is empty (0 bytes) "
        b"(--allow-empty accepts an empty stream)\n"
    )
    r = cli("decode", "-", "--allow-empty", input=b"")
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")


def test_io_and_usage_errors(cli, tmp_path) -> None:
    r = cli("decode", tmp_path / "missing.bin")
    assert r.returncode == 3
    assert b"cannot read" in r.stderr
    assert b"No such file" in r.stderr
    r = cli("decode", tmp_path)
    assert r.returncode == 3
    r = cli("decode", "-", "--format", "xml")
    assert r.returncode == 2
    r = cli("frobnicate")
    assert r.returncode == 2


def test_help_documents_exit_codes(cli) -> None:
    for args in ([], ["decode"], ["validate"], ["cost"]):
        r = cli(*args, "--help")
        assert r.returncode == 0
        text = r.stdout.decode()
        assert "exit status" in text
        assert "3  I/O error" in text


def test_no_progress_bar_when_stderr_is_not_a_terminal(cli, captures) -> None:
    r = cli("validate", captures["proto"])
    assert b"\r" not in r.stderr
    assert b"\x1b[" not in r.stderr
