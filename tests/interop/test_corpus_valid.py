"""The shared corpus and the sample run are valid by the reference's own judgement.

Contract proved here, against the pinned ``@ag-ui/*`` 1.0.0:

* every corpus event passes ``EventSchemas`` (zod) and ``@ag-ui/proto``
  encodes it with no ``console.warn`` (i.e. never through the encoder's
  validation fallback) and no error;
* each type's ``/minimal`` event carries exactly the required keys and its
  ``/full`` event every key the reference schema knows;
* ``corpus.ROUND_TRIP_LOSSY`` / ``corpus.SSE_LOSSY`` are exactly the events the
  reference's own binary / SSE round trips change;
* ``realistic_run`` produces valid events that the client's sequence check
  (``verifyEvents``) accepts, deterministically, in the advertised proportions.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support import corpus
from tests.support.corpus import (
    CASES,
    CORPUS,
    EVENT_TYPES,
    ROUND_TRIP_LOSSY,
    SSE_LOSSY,
    realistic_run,
)

pytestmark = pytest.mark.interop

NAMES = list(CASES)


@pytest.fixture(scope="module")
def reference_frames(node_harness) -> list[bytes]:
    return node_harness.encode_proto(CORPUS)


def test_corpus_covers_every_type() -> None:
    by_type = corpus.corpus_by_type()
    assert list(by_type) == list(EVENT_TYPES)
    assert len(EVENT_TYPES) == 31
    for type_, events in by_type.items():
        assert CASES[f"{type_}/minimal"] in events
        assert CASES[f"{type_}/full"] in events


def test_minimal_and_full_are_what_they_claim(node_harness) -> None:
    shapes, zod = node_harness.shapes(), node_harness.zod_objects()
    for type_, shape in shapes["Event"]["variants"].items():
        keys = zod[shape]
        required = {k for k, optional in keys.items() if not optional}
        assert set(CASES[f"{type_}/minimal"]) == required, type_
        assert set(CASES[f"{type_}/full"]) == set(keys), type_


def test_corpus_passes_zod(node_harness) -> None:
    results = node_harness.validate(CORPUS)
    assert len(results) == len(CORPUS)
    invalid = {name: r.issues for name, r in zip(NAMES, results, strict=True) if not r.ok}
    assert invalid == {}


def test_validation_can_fail(node_harness) -> None:
    """The zod check rejects what it should (so the test above means something)."""
    bad = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"},  # delta missing
        {"type": "STEP_STARTED", "stepName": "s", "timestamp": 2**53},  # beyond safe
        {"type": "RAW", "event": 1, "rawEvent": None},  # rawEvent null
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "tool"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": []},
        },
    ]
    assert [r.ok for r in node_harness.validate(bad)] == [False] * len(bad)


def test_reference_encodes_corpus_silently(node_harness) -> None:
    results = node_harness.encode_proto_results(CORPUS)
    noisy = {
        name: (r.error, r.warnings)
        for name, r in zip(NAMES, results, strict=True)
        if r.error is not None or r.warnings
    }
    assert noisy == {}
    # The encoder warns on invalid input, so silence above is a real verdict.
    [invalid] = node_harness.encode_proto_results([{"type": "TEXT_MESSAGE_CONTENT"}])
    assert invalid.warnings
    assert "without validation" in invalid.warnings[0]


def test_binary_round_trip_lossy_set_is_exact(node_harness, reference_frames: list[bytes]) -> None:
    decoded = node_harness.decode_proto_events(reference_frames)
    changed = {
        name for name, event, back in zip(NAMES, CORPUS, decoded, strict=True) if back != event
    }
    assert changed == set(ROUND_TRIP_LOSSY)


def test_client_reads_reference_binary_stream(node_harness, reference_frames: list[bytes]) -> None:
    stream = b"".join(reference_frames)
    result = node_harness.parse_stream(stream, node_harness.PROTO_MEDIA_TYPE, chunk_size=4093)
    assert (result.error, result.completed, result.warnings) == (None, True, ())
    assert result.events == node_harness.decode_proto_events(stream)


def test_sse_round_trip_lossy_set_is_exact(node_harness) -> None:
    sse = node_harness.encode_sse(CORPUS)
    # One "data: <json>\n\n" per event, as the fixture documents.
    assert len(sse.split(b"\n\n")[:-1]) == len(CORPUS)
    assert all(chunk.startswith(b"data: ") for chunk in sse.split(b"\n\n")[:-1])
    result = node_harness.parse_stream(sse, node_harness.SSE_MEDIA_TYPE, chunk_size=1021)
    assert (result.error, result.completed, result.warnings) == (None, True, ())
    changed = {
        name
        for name, event, back in zip(NAMES, CORPUS, result.events, strict=True)
        if back != event
    }
    assert changed == set(SSE_LOSSY)


# -- the realistic sample run ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "seed"), [(2, 0), (3, 1), (4, 2), (5, 3), (9, 4), (57, 5), (1000, 0), (5000, 7)]
)
def test_realistic_run_is_valid_and_well_formed(node_harness, n: int, seed: int) -> None:
    events = realistic_run(n, seed)
    assert len(events) == n
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_FINISHED"
    assert all(r.ok for r in node_harness.validate(events))
    assert all(not r.warnings for r in node_harness.encode_proto_results(events))
    verdict = node_harness.verify(events)
    assert (verdict.error, verdict.completed, verdict.passed) == (None, True, n)


def test_verify_can_fail(node_harness) -> None:
    events = realistic_run(200, 1)
    # Drop the first TEXT_MESSAGE_START: its content then has no open message.
    i = next(i for i, e in enumerate(events) if e["type"] == "TEXT_MESSAGE_START")
    verdict = node_harness.verify(events[:i] + events[i + 1 :])
    assert not verdict.completed
    assert verdict.error is not None
    assert verdict.passed == i


def test_realistic_run_shape() -> None:
    for n in range(2, 250):
        assert len(realistic_run(n, n)) == n
    assert realistic_run(777, 3) == realistic_run(777, 3)
    assert realistic_run(777, 3) != realistic_run(777, 4)
    events = realistic_run(10_000, 11)
    counts = Counter(e["type"] for e in events)
    assert abs(counts["TEXT_MESSAGE_CONTENT"] / len(events) - 0.86) < 0.005
    for kind in (
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "REASONING_MESSAGE_CONTENT",
        "STEP_STARTED",
    ):
        assert counts[kind] > 0, kind
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert all(1 <= len(d.split()) <= 3 for d in deltas)
    with pytest.raises(ValueError, match="at least"):
        realistic_run(1)
