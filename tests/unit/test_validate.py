"""agui_wire.validate through its public API: ``validate_event``, ``validate_stream``,
``StreamValidator`` and ``Problem``.

The rule cases are in tests/support/validation_cases.py (tests/interop/test_cli_validate.py
holds the same cases to zod and the client's verifyEvents); here each is checked
through the library, then what the API promises beyond single rules: positions,
layers switched on and off, every problem reported (not only the first), nothing
raised on any input, the readable and JSON forms of a problem, and the lazy import.
tests/unit/test_validate_shapes.py and test_validate_state.py cover the schema
port's tables and the state layer.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import agui_wire.validate
from agui_wire._sample import realistic_run
from agui_wire.validate import Problem, StreamValidator, validate_event, validate_stream
from tests.support.validation_cases import (
    BROKEN_EVENTS,
    RF,
    RS,
    STREAMS,
    VALID_ODDITIES,
    delta,
    snap,
    tme,
)


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


# -- beyond single rules ------------------------------------------------------------------------


def test_public_api() -> None:
    assert sorted(agui_wire.validate.__all__) == [
        "EVENT_SHAPES",
        "Problem",
        "REFERENCE_SEQUENCE_RULES",
        "StreamValidator",
        "validate_event",
        "validate_stream",
    ]
    # every rule verifyEvents has (by our stable code) has a stream case
    rules = {rule for _, rule, _ in STREAMS.values()}
    assert rules >= agui_wire.validate.REFERENCE_SEQUENCE_RULES


def test_import_agui_wire_does_not_import_validate() -> None:
    code = (
        "import sys, agui_wire; agui_wire.EventEncoder; agui_wire.decode;"
        " print(any(m.startswith('agui_wire.validate') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "event", ["x", 5, None, [], [{"type": "RUN_STARTED"}], {}, {"type": 5}, {"type": "NOPE"}]
)
def test_anything_is_a_problem_not_an_exception(event: Any) -> None:
    (problem,) = validate_event(event)
    assert problem.severity == "error"
    assert problem.rule in ("schema.type", "schema.enum")
    assert problem.path in ("", "/type")
    problems = validate_stream([RS, event, RF])
    assert [p.index for p in problems if p.rule.startswith("schema.")] == [1]


def test_what_is_not_an_event_is_named() -> None:
    assert validate_event([])[0].message == "an event is a JSON object, not an array"
    assert validate_event(None)[0].message == "an event is a JSON object, not a null"


def test_nested_paths() -> None:
    event = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "1", "role": "wizard"}]}
    assert [(p.rule, p.path, p.event_type) for p in validate_event(event)] == [
        ("schema.enum", "/messages/0/role", "MESSAGES_SNAPSHOT")
    ]
    event = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "1", "role": "user"}]}
    assert [(p.rule, p.path) for p in validate_event(event)] == [
        ("schema.required", "/messages/0/content")
    ]


def test_every_problem_is_reported_with_its_position() -> None:
    events = [
        RS,
        tme("m"),  # not started
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "x"},  # not started
        RF,
        {**RS, "runId": "r2"},  # a second run after the first finished: fine
        {**RF, "runId": "r2"},
    ]
    problems = validate_stream(events, offsets=[0, 10, 20, 30, 40, 50], end_offset=60)
    assert [(p.rule, p.index, p.offset, p.event_type) for p in problems] == [
        ("text.not-started", 1, 10, "TEXT_MESSAGE_END"),
        ("tool.not-started", 2, 20, "TOOL_CALL_ARGS"),
    ]


def test_layers_switch_off() -> None:
    bad_shape = {**tme("m"), "messageId": 5}  # a schema error, and never started
    failing = delta({"op": "remove", "path": "/x"})
    events = [RS, bad_shape, snap({}), failing, RF]

    def rules(**layers: bool) -> list[str]:
        return [p.rule for p in validate_stream(events, **layers)]

    assert rules() == ["schema.type", "text.not-started", "state.patch"]
    assert rules(schema=False) == ["text.not-started", "state.patch"]
    assert rules(sequence=False) == ["schema.type", "state.patch"]
    assert rules(state=False) == ["schema.type", "text.not-started"]
    assert rules(schema=False, sequence=False, state=False) == []
    # the end of the stream is the sequence layer's
    assert [p.rule for p in validate_stream([RS])] == ["run.unterminated"]
    assert validate_stream([RS], sequence=False) == []


def test_stream_validator_accumulates_and_takes_explicit_positions() -> None:
    v = StreamValidator()
    assert v.feed(RS, index=7, offset=100) == []
    found = v.feed(tme("m"), index=9, offset=160)
    assert [(p.index, p.offset) for p in found] == [(9, 160)]
    found += v.close(end_offset=200)
    assert v.problems == found
    assert v.events == 2
    assert [p.rule for p in v.problems] == ["text.not-started", "run.unterminated"]
    assert validate_stream([]) == [
        Problem(
            "error",
            "stream.empty",
            "the stream has no events (a run starts with RUN_STARTED)",
        )
    ]


def test_problem_forms() -> None:
    p = Problem("error", "schema.type", "bad", 3, 42, "/delta", "TEXT_MESSAGE_CONTENT")
    assert str(p) == "event 3 (byte 42) TEXT_MESSAGE_CONTENT: error [schema.type] at /delta: bad"
    assert p.as_dict() == {
        "severity": "error",
        "rule": "schema.type",
        "message": "bad",
        "index": 3,
        "offset": 42,
        "path": "/delta",
        "type": "TEXT_MESSAGE_CONTENT",
    }
    assert str(Problem("note", "x.y", "m", 0)) == "event 0: note [x.y]: m"
    assert (
        str(Problem("error", "run.unterminated", "m"))
        == "end of stream: error [run.unterminated]: m"
    )
    assert p.located(5, None) == Problem(
        "error", "schema.type", "bad", 5, None, "/delta", "TEXT_MESSAGE_CONTENT"
    )
    with pytest.raises(AttributeError):
        p.rule = "other"  # type: ignore[misc]
