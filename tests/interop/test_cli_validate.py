"""agui_wire.validate against the reference: zod ``EventSchemas`` and the client's
``verifyEvents``, on the corpus, realistic runs, and deliberately broken events
and streams (tests/support/validation_cases.py).

Agreement, exactly:

* an event has a schema error here iff ``EventSchemas.safeParse`` rejects it,
  and the first error's path is one of zod's issue paths;
* for a sequence, the first error of a rule in ``REFERENCE_SEQUENCE_RULES`` is
  at the event where ``verifyEvents`` stops (``passed``), and there is none when
  it completes. The rules agui_wire adds (end of stream, state patches) are
  checked to be ones the reference lets through.
"""

from __future__ import annotations

import pytest

from agui_wire.validate import REFERENCE_SEQUENCE_RULES, validate_event, validate_stream
from tests.support.corpus import CORPUS, realistic_run
from tests.support.validation_cases import BROKEN_EVENTS, STREAMS, VALID_ODDITIES

pytestmark = pytest.mark.interop


def _pointer(path: tuple[object, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def test_schema_agrees_with_zod(node_harness) -> None:
    events = (
        list(CORPUS)
        + [e for e, _ in BROKEN_EVENTS.values()]
        + list(VALID_ODDITIES.values())
        + realistic_run(300, 2)
    )
    verdicts = node_harness.validate(events)
    assert len(verdicts) == len(events)
    for event, verdict in zip(events, verdicts, strict=True):
        errors = [p for p in validate_event(event) if p.severity == "error"]
        assert (not errors) == verdict.ok, (event, errors, verdict.issues)
        if errors:
            zod_paths = {_pointer(path) for path, _ in verdict.issues}
            # zod reports a failed union at the union; we explain inside it
            assert any(errors[0].path.startswith(p) for p in zod_paths), (
                errors[0],
                verdict.issues,
            )


def test_sequence_agrees_with_verify_events(node_harness) -> None:
    cases = dict(STREAMS)
    for n, seed in ((2, 0), (60, 1), (1000, 2)):
        cases[f"realistic {n}"] = (realistic_run(n, seed), None, None)
    # a realistic run with one event removed, at several places
    base = realistic_run(300, 5)
    for i in (0, 1, 3, 17, 150, 299):
        cases[f"realistic without event {i}"] = (base[:i] + base[i + 1 :], "?", None)
    for name, (events, rule, _index) in cases.items():
        verdict = node_harness.verify(events)
        problems = validate_stream(events)
        ours = [p for p in problems if p.severity == "error" and p.rule in REFERENCE_SEQUENCE_RULES]
        if verdict.error is None:
            assert ours == [], (name, [str(p) for p in ours])
            # what we report beyond the reference is only our own rules
            extra = {p.rule for p in problems if p.severity == "error"}
            assert extra <= {
                "run.unterminated",
                "stream.empty",
                "state.patch",
                "activity.patch",
            } | {r for r in extra if r.startswith("schema.")}, name
        else:
            assert ours, (name, verdict.error)
            assert ours[0].index == verdict.passed, (name, str(ours[0]), verdict.error.message)
        if rule not in (None, "?") and rule in REFERENCE_SEQUENCE_RULES:
            assert verdict.error is not None, name
