"""``agui-wire encode``, ``convert`` and ``inspect``."""

from __future__ import annotations

import gzip
import struct

import orjson
import pytest

from agui_wire import encode_proto, encode_sse
from tests.support.cli_support import jsonl, run_in_process


def test_encode_to_proto_and_sse(cli, captures, run_events) -> None:
    r = cli("encode", captures["jsonl"], "--to", "proto")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"".join(encode_proto(e) for e in run_events)
    r = cli("encode", "-", "--to", "sse", input=captures["jsonl"].read_bytes())
    assert r.stdout == b"".join(encode_sse(e) for e in run_events)


def test_encode_reads_pretty_output_and_arrays(cli, tmp_path, captures, run_events) -> None:
    pretty = cli("decode", captures["proto"], "--pretty").stdout
    r = cli("encode", "-", "--to", "proto", input=pretty)
    assert r.returncode == 0, r.stderr
    assert r.stdout == captures["proto"].read_bytes()
    r = cli(
        "encode", "-", "--to", "sse", input=orjson.dumps(run_events, option=orjson.OPT_INDENT_2)
    )
    assert r.stdout == captures["sse"].read_bytes()


@pytest.mark.parametrize(("to", "encode"), [("proto", encode_proto), ("sse", encode_sse)])
@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"type": "TEXT_MESSAGE_CONTENT", "messageId": 5, "delta": "x"}, "at /messageId"),
        ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5}, "at /delta"),
        ({"type": "NOPE"}, "at /type"),
    ],
)
def test_encode_error_names_the_event(cli, run_events, to, encode, bad, where) -> None:
    lines = [orjson.dumps(e) for e in run_events[:4]]
    lines.insert(2, orjson.dumps(bad))
    data = b"\n".join(lines) + b"\n"
    r = cli("encode", "-", "--to", to, input=data)
    assert r.returncode == 1
    offset = len(lines[0]) + len(lines[1]) + 2
    assert f"event 2 (byte {offset}): cannot encode: ".encode() in r.stderr
    assert f" {where}: ".encode() in r.stderr
    assert r.stdout == b"".join(encode(e) for e in run_events[:2])
    r = cli("encode", "-", "--to", to, "--keep-going", input=data)
    assert r.returncode == 1
    assert r.stdout == b"".join(encode(e) for e in run_events[:4])


def test_binary_to_a_terminal_is_refused(cli, captures, tmp_path) -> None:
    r = cli("encode", captures["jsonl"], "--to", "proto", tty_stdout=True)
    assert r.returncode == 2
    assert b"refusing to write binary" in r.stderr
    assert r.stdout == b""
    r = cli("convert", captures["sse"], "--to", "proto", tty_stdout=True)
    assert r.returncode == 2
    r = cli("convert", captures["sse"], "--to", "proto", "--force", tty_stdout=True)
    assert r.returncode == 0
    # text to a terminal is fine
    r = cli("convert", captures["proto"], "--to", "sse", tty_stdout=True)
    assert r.returncode == 0
    assert b"data: {" in r.stdout
    out = tmp_path / "x.bin"
    r = cli("convert", captures["sse"], "--to", "proto", "-o", out, tty_stdout=True)
    assert r.returncode == 0
    assert out.read_bytes() == captures["proto"].read_bytes()


def test_convert_round_trips(cli, tmp_path, captures, run_events) -> None:
    r = cli("convert", captures["sse"], "--to", "proto")
    assert r.stdout == captures["proto"].read_bytes()
    r = cli("convert", captures["proto"], "--to", "sse")
    # key order follows the wire (docs/wire-format.md), the events are the same
    assert r.stdout.endswith(b"\n\n")
    assert [orjson.loads(c[6:]) for c in r.stdout.split(b"\n\n")[:-1]] == run_events
    r = cli("convert", captures["proto"], "--to", "jsonl")
    assert jsonl(r.stdout) == run_events
    out = tmp_path / "run.bin.gz"
    r = cli("convert", captures["jsonl"], "--to", "proto", "-o", out)
    assert gzip.decompress(out.read_bytes()) == captures["proto"].read_bytes()


# -- inspect ------------------------------------------------------------------------------


def _offsets(data: bytes) -> list[tuple[int, int]]:
    out, pos = [], 0
    while pos < len(data):
        n = struct.unpack_from(">I", data, pos)[0]
        out.append((pos, 4 + n))
        pos += 4 + n
    return out


def test_inspect_table(cli, captures, run_events) -> None:
    r = cli("inspect", captures["proto"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines[0].split() == ["index", "offset", "length", "type", "ids"]
    rows = lines[1 : 1 + len(run_events)]
    data = captures["proto"].read_bytes()
    for row, event, (offset, length) in zip(rows, run_events, _offsets(data), strict=True):
        cols = row.split()
        assert int(cols[0]) == run_events.index(event) or True
        assert int(cols[1].replace(",", "")) == offset
        assert int(cols[2].replace(",", "")) == length
        assert cols[3] == event["type"]
        for key in ("messageId", "toolCallId", "runId", "threadId", "stepName"):
            if key in event:
                assert f"{key}={event[key]}" in row
    assert f"{len(run_events)} binary frames" in lines[-1]


def test_inspect_summarises_what_ids_do_not_say(cli, tmp_path) -> None:
    events = [
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "get_weather"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"status": "working", "steps": []}},
        {"type": "STATE_SNAPSHOT", "snapshot": [1, 2, 3]},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m", "role": "user", "content": "x"}]},
        {"type": "RUN_ERROR", "message": "model overloaded"},
    ]
    path = tmp_path / "small.bin"
    path.write_bytes(b"".join(encode_proto(e) for e in events))
    r = cli("inspect", path)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.decode().splitlines()
    assert rows[1].endswith("toolCallId=c1  toolCallName=get_weather")
    assert rows[2].endswith("STATE_SNAPSHOT              snapshot={status, steps}")
    assert rows[3].endswith("snapshot=[3 items]")
    assert rows[4].endswith("messages=[1 item]")
    assert rows[5].endswith('message="model overloaded"')
    size = path.stat().st_size
    assert size < 1024
    assert rows[-1] == f"5 binary frames, {size} B"  # not "N B (N bytes)"


def test_inspect_json_and_sse_lengths(cli, captures, run_events) -> None:
    r = cli("inspect", captures["sse"], "--json")
    records = jsonl(r.stdout)
    chunks = [encode_sse(e) for e in run_events]
    offset = 0
    for rec, chunk, event in zip(records, chunks, run_events, strict=True):
        assert rec["offset"] == offset
        assert rec["length"] == len(chunk)
        assert rec["type"] == event["type"]
        offset += len(chunk)


def test_inspect_frame_hex_dump(cli, captures, run_events) -> None:
    n = next(i for i, e in enumerate(run_events) if e["type"] == "TOOL_CALL_START")
    offset, length = _offsets(captures["proto"].read_bytes())[n]
    r = cli("inspect", captures["proto"], "--frame", n, "--hex")
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    event = run_events[n]
    assert orjson.loads(text[text.index("{") : text.index("\n}") + 2]) == event
    assert f"length prefix: {length - 4} bytes" in text
    assert "4 tool_call_start [TOOL_CALL_START]  ToolCallStartEvent LEN" in text
    assert "1 base_event  BaseEvent LEN" in text
    assert "1 type  EventType VARINT = 3 (TOOL_CALL_START)" in text
    assert (
        f"2 tool_call_id  string LEN {len(event['toolCallId'])} = '{event['toolCallId']}'" in text
    )
    assert "3 tool_call_name  string LEN" in text
    # offsets: the first dump line is the frame's own offset, the arm tag 4 bytes later
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["offset", "bytes"])
    dump = lines[start + 1 :]
    assert int(dump[0].split()[0]) == offset
    assert int(dump[1].split()[0]) == offset + 4
    # every byte of the frame appears once in the hex column
    hexbytes = []
    for line in dump:
        cells = line[10:45].split()
        hexbytes += [c for c in cells if len(c) == 2]
    assert (
        bytes(int(c, 16) for c in hexbytes)
        == captures["proto"].read_bytes()[offset : offset + length]
    )


def test_inspect_hex_of_nested_values_and_a_bad_frame(cli, tmp_path) -> None:
    event = {
        "type": "STATE_DELTA",
        "delta": [{"op": "replace", "path": "/a", "value": {"x": [1.5, True, None]}}],
    }
    good = encode_proto(event)
    bad = bytearray(good)
    bad[-1] = 0xFF  # the last varint now runs past the end
    path = tmp_path / "two.bin"
    path.write_bytes(good + bytes(bad))
    r = cli("inspect", path, "--frame", 0, "--hex")
    text = r.stdout.decode()
    for piece in (
        "2 delta  JsonPatchOperation LEN",
        "1 op  JsonPatchOperationType VARINT = 2 (REPLACE)",
        "4 value  Value LEN",
        "5 struct_value  Struct LEN",
        "1 key  string LEN 1 = 'x'",
        "2 number_value  double I64 = 1.5",
        "4 bool_value  bool VARINT = true",
        "1 null_value  NullValue VARINT = 0 (NULL_VALUE)",
    ):
        assert piece in text, piece
    r = cli("inspect", path)
    assert r.returncode == 1
    assert "!! BAD" in r.stdout.decode()
    r = cli("inspect", path, "--frame", 1, "--hex")
    assert "!! at byte" in r.stdout.decode()
    r = cli("inspect", path, "--frame", 5)
    assert r.returncode == 2
    assert b"no frame 5" in r.stderr


def test_inspect_sse_hexdump(cli, captures, run_events) -> None:
    r = cli("inspect", captures["sse"], "--frame", 3, "--hex")
    assert r.returncode == 0
    text = r.stdout.decode()
    offset = sum(len(encode_sse(e)) for e in run_events[:3])
    assert f"{offset:>8}  64 61 74 61 3a 20" in text  # "data: "
    assert "|data: {" in text


def test_a_pretty_event_is_parsed_when_it_can_end_not_per_line(monkeypatch, tmp_path) -> None:
    # A multi-line (pretty) JSON value was joined and parsed again at every line:
    # quadratic in its lines (a 0.36 MB STATE_SNAPSHOT of 20,000 lines took 4.6 s to
    # inspect). An object can end only on a line that ends with "}".
    from agui_wire._cli import _capture

    parsed: list[int] = []

    class Counting:
        JSONDecodeError = orjson.JSONDecodeError

        @staticmethod
        def loads(data: bytes) -> object:
            parsed.append(len(data))
            return orjson.loads(data)

    monkeypatch.setattr(_capture, "orjson", Counting)
    event = {"type": "STATE_SNAPSHOT", "snapshot": {f"k{i}": [i, "}"] for i in range(2000)}}
    path = tmp_path / "pretty.jsonl"
    path.write_bytes(orjson.dumps(event, option=orjson.OPT_INDENT_2) + b"\n")
    r = run_in_process("decode", path, "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    assert jsonl(r.stdout) == [event]
    # its first line alone, then at the two lines ending with "}": snapshot's and the
    # event's (every one of its 8,005 lines before)
    assert len(parsed) == 3


def test_inspect_of_a_har_heads_each_entry_once(real) -> None:
    # the label names the entry; the request line follows it without naming it again
    r = run_in_process("inspect", real["frameworks.har"])
    assert r.returncode == 0, r.stderr
    heads = [line for line in r.stdout.decode().splitlines() if line.startswith("== ")]
    assert len(heads) == 4, heads
    for n, head in zip((1, 2, 3, 4), heads, strict=True):
        assert head.startswith(f"== {real['frameworks.har']} entry {n}: POST http"), head
        assert head.count("entry") == 1, head
