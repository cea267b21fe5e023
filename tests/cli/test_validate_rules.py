"""agui_wire.validate rule by rule, and ``agui-wire validate`` on captures.

The cases are in tests/support/validation_cases.py; tests/interop/test_cli_validate.py
holds the same cases against zod and the client's verifyEvents.
"""

from __future__ import annotations

import orjson
import pytest

from agui_wire import encode_proto, encode_sse
from agui_wire._jsonpatch import apply_patch, parse_pointer
from agui_wire._sample import realistic_run
from agui_wire.errors import PatchError, PointerError
from agui_wire.validate import StreamValidator, validate_event, validate_stream
from tests.support.validation_cases import BROKEN_EVENTS, STREAMS, VALID_ODDITIES


@pytest.mark.parametrize("name", list(BROKEN_EVENTS))
def test_broken_event(name: str) -> None:
    event, rule = BROKEN_EVENTS[name]
    errors = [p for p in validate_event(event) if p.severity == "error"]
    assert errors, "no error"
    assert errors[0].rule == rule, [str(p) for p in errors]


@pytest.mark.parametrize("name", list(VALID_ODDITIES))
def test_valid_oddity(name: str) -> None:
    problems = validate_event(VALID_ODDITIES[name])
    assert [p for p in problems if p.severity == "error"] == []


def test_unknown_keys_are_notes_with_paths() -> None:
    problems = validate_event({"type": "TEXT_MESSAGE_END", "messageId": "m", "extra": 1})
    assert [(p.severity, p.rule, p.path) for p in problems] == [
        ("note", "schema.unknown-key", "/extra")
    ]


@pytest.mark.parametrize("name", list(STREAMS))
def test_stream(name: str) -> None:
    events, rule, index = STREAMS[name]
    problems = [
        p
        for p in validate_stream(events)
        if p.severity == "error" and not p.rule.startswith("schema.")
    ]
    if rule is None:
        assert problems == []
    else:
        assert problems, "no problem found"
        assert (problems[0].rule, problems[0].index) == (rule, index), [str(p) for p in problems]


@pytest.mark.parametrize("n", [2, 3, 5, 20, 500, 3000])
def test_realistic_runs_are_clean(n: int) -> None:
    assert validate_stream(realistic_run(n, n)) == []


def test_incremental_positions_and_close() -> None:
    v = StreamValidator()
    assert v.feed({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, offset=0) == []
    (p,) = v.feed({"type": "TEXT_MESSAGE_END", "messageId": "m"}, offset=61)
    assert (p.index, p.offset, p.rule, p.event_type) == (
        1,
        61,
        "text.not-started",
        "TEXT_MESSAGE_END",
    )
    assert "event 1 (byte 61) TEXT_MESSAGE_END: error [text.not-started]" in str(p)
    (end,) = v.close(end_offset=99)
    assert (end.index, end.offset, end.rule) == (None, 99, "run.unterminated")
    assert str(end).startswith("end of stream (byte 99): error [run.unterminated]")


def test_recovery_reports_trailing_events_once() -> None:
    rs = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    rf = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    tail = [{"type": "CUSTOM", "name": "x", "value": i} for i in range(5)]
    problems = validate_stream([rs, rf, *tail])
    assert [(p.rule, p.index) for p in problems] == [
        ("run.after-finished", 2),
        ("run.after-end-count", None),
    ]
    assert "4 more event(s)" in problems[1].message


# -- RFC 6902 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "patch", "expected"),
    [
        # RFC 6902 appendix A
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"baz": "qux", "foo": "bar"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
            {"foo": "bar", "baz": "qux"},
        ),
        (
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
        ),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        ({"foo": None}, [{"op": "test", "path": "/foo", "value": None}], {"foo": None}),
        (
            {"a": {"b": 1}},
            [
                {"op": "copy", "from": "/a", "path": "/c"},
                {"op": "replace", "path": "/c/b", "value": 2},
            ],
            {"a": {"b": 1}, "c": {"b": 2}},
        ),
        ({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], [1]),
        ({"n": 1}, [{"op": "test", "path": "/n", "value": 1.0}], {"n": 1}),
    ],
)
def test_apply_patch(doc, patch, expected) -> None:
    before = orjson.dumps(doc)
    assert apply_patch(doc, patch) == expected
    assert orjson.dumps(doc) == before  # never mutated


@pytest.mark.parametrize(
    ("doc", "patch", "reason"),
    [
        ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], "no member 'baz'"),
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], "test failed"),
        ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/3", "value": 1}], "out of bounds"),
        ({"foo": [1]}, [{"op": "add", "path": "/foo/01", "value": 1}], "not an array index"),
        ({"foo": 1}, [{"op": "test", "path": "/foo", "value": True}], "test failed"),
        ({"a": {}}, [{"op": "move", "from": "/a", "path": "/a/b"}], "own child"),
        ({}, [{"op": "remove", "path": "/x"}], "no member 'x'"),
        ({}, [{"op": "frob", "path": "/x"}], "unknown op"),
        ({}, [{"op": "add", "path": "/x"}], "needs a 'value'"),
        ({"a": [1]}, [{"op": "replace", "path": "/a/-", "value": 1}], "not an array index"),
    ],
)
def test_patch_errors(doc, patch, reason) -> None:
    with pytest.raises(PatchError, match=reason) as info:
        apply_patch(doc, patch)
    assert info.value.index == 0


def test_pointer_syntax() -> None:
    assert parse_pointer("") == []
    assert parse_pointer("/a~1b/~0/") == ["a/b", "~", ""]
    for bad in ("a", "/~2", "/~"):
        with pytest.raises(PointerError):
            parse_pointer(bad)


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
