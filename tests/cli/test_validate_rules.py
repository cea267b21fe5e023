"""``agui-wire validate`` on captures: rules, positions, exit codes, output forms.

The library's own tests are in tests/unit/test_validate.py; the cases are in
tests/support/validation_cases.py, and tests/interop/test_cli_validate.py holds
them against zod and the client's verifyEvents.
"""

from __future__ import annotations

import orjson
import pytest

from agui_wire import encode_proto, encode_sse
from tests.support.validation_cases import STREAMS

# -- the command ------------------------------------------------------------------------------


def test_validate_clean_capture(cli, captures) -> None:
    for kind in ("proto", "sse", "jsonl"):
        r = cli("validate", captures[kind])
        assert r.returncode == 0, r.stdout + r.stderr
        assert b": valid: 120 events, 0 error(s), 0 note(s)" in r.stdout


@pytest.mark.parametrize("name", [n for n, (_, rule, _) in STREAMS.items() if rule])
def test_validate_command_reports_rule_index_and_offset(cli, tmp_path, name) -> None:
    events, rule, index = STREAMS[name]
    # JSON Lines: exactly the events (SSE and binary would drop the optional nulls)
    chunks = [orjson.dumps(e) + b"\n" for e in events]
    path = tmp_path / "stream.jsonl"
    path.write_bytes(b"".join(chunks))
    r = cli("validate", path, "--json")
    assert r.returncode == 1
    doc = orjson.loads(r.stdout)
    assert doc["valid"] is False
    problems = [
        p
        for p in doc["problems"]
        if p["severity"] == "error" and not p["rule"].startswith("schema.")
    ]
    assert (problems[0]["rule"], problems[0]["index"]) == (rule, index)
    expected_offset = sum(map(len, chunks)) if index is None else sum(map(len, chunks[:index]))
    assert problems[0]["offset"] == expected_offset


def test_validate_text_output_and_exit(cli, tmp_path) -> None:
    events, _, _ = STREAMS["content without start"]
    path = tmp_path / "s.bin"
    path.write_bytes(b"".join(encode_proto(e) for e in events))
    r = cli("validate", path)
    assert r.returncode == 1
    out = r.stdout.decode()
    first_len = len(encode_proto(events[0]))
    assert (
        f"s.bin: event 1 (byte {first_len}) TEXT_MESSAGE_CONTENT: error [text.not-started]" in out
    )
    assert "INVALID: 3 events, 1 error(s), 0 note(s)" in out


def test_notes_and_strict(cli, tmp_path) -> None:
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "x-trace": "abc"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    r = cli("validate", path)
    assert r.returncode == 0
    assert b"note [schema.unknown-key] at /x-trace" in r.stdout
    assert cli("validate", path, "--strict").returncode == 1
    quiet = cli("validate", path, "--no-notes").stdout
    assert b"schema.unknown-key" not in quiet
    assert b"1 note(s)" in quiet


def test_decode_errors_are_problems_and_reading_goes_on(cli, tmp_path, run_events) -> None:
    chunks = [encode_sse(e) for e in run_events]
    chunks[10] = b"data: {not json}\n\n"
    path = tmp_path / "bad.sse"
    path.write_bytes(b"".join(chunks))
    r = cli("validate", path, "--json")
    doc = orjson.loads(r.stdout)
    rules = [(p["rule"], p["index"]) for p in doc["problems"]]
    assert ("decode", 10) in rules
    # the event lost was a TEXT_MESSAGE_CONTENT or similar: whatever follows is still checked
    assert doc["events"] == len(run_events) - 1


def test_har_entries_are_validated_separately(cli, tmp_path, run_events) -> None:
    from tests.support.cli_support import PROTO, SSE, chrome_har, har_entry

    good = b"".join(encode_proto(e) for e in run_events)
    broken = b"".join(encode_sse(e) for e in run_events[:30])  # cut inside the run
    har = tmp_path / "s.har"
    har.write_bytes(
        chrome_har(
            har_entry("https://x/a", good, PROTO, binary=True),
            har_entry("https://x/b", broken, SSE, binary=False),
        )
    )
    r = cli("validate", har)
    assert r.returncode == 1
    out = r.stdout.decode()
    assert "entry 1: valid" in out
    assert "entry 2: end of stream" in out
    assert "run.unterminated" in out
    assert orjson.loads(cli("validate", har, "--entry", "1", "--json").stdout)["valid"] is True
