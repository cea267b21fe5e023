"""What the reference client (``@ag-ui/client`` / ``@ag-ui/proto`` 1.0.0) makes of
candidate heartbeats on the binary transport: the measurements behind
``EventStreamResponse(binary_keepalive=True)`` (docs/serving.md, Keep-alive).

* A zero-length frame (an empty ``Event``): ``HttpAgent`` fails the run at it.
* ``KEEPALIVE_EVENT`` (a ``CUSTOM`` event) between any two events of a run, after
  ``RUN_STARTED`` and before the terminal event: parsed, passed by
  ``verifyEvents``, and the applied messages and state are the run's own.
* The same event before ``RUN_STARTED`` or after the run's end: ``verifyEvents``
  refuses it, which is why the response sends it inside a run only.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, encode_proto
from agui_wire.asgi import KEEPALIVE_EVENT
from examples.script import scripted_run

pytestmark = pytest.mark.interop

RUN = scripted_run("thread-1", "run-1")
BEAT = dict(KEEPALIVE_EVENT)
EMPTY_FRAME = b"\x00\x00\x00\x00"


def frames(events: list[Any]) -> bytes:
    return b"".join(EMPTY_FRAME if e is None else encode_proto(e) for e in events)


def test_a_zero_length_frame_fails_the_run(node_harness) -> None:
    result = node_harness.parse_stream(frames([RUN[0], RUN[1], None, *RUN[2:]]), PROTO_MEDIA_TYPE)
    assert not result.completed
    assert result.error is not None
    assert "Invalid event" in result.error.message
    assert result.events == RUN[:2]  # nothing after it reaches the client


def test_the_keepalive_event_between_any_two_events_of_a_run_changes_nothing(
    node_harness,
) -> None:
    beating = [RUN[0]]
    for event in RUN[1:]:
        beating += [BEAT, event]
    assert beating.count(BEAT) == len(RUN) - 1
    parsed = node_harness.parse_stream(frames(beating), PROTO_MEDIA_TYPE, chunk_size=7)
    assert parsed.error is None
    assert parsed.completed
    assert [e for e in parsed.events if e != BEAT] == node_harness.decode_proto_events(frames(RUN))
    verified = node_harness.verify(beating)
    assert verified.error is None
    assert verified.completed
    assert verified.passed == len(beating)
    with_beats, without = node_harness.apply([beating, RUN])
    assert with_beats["messages"] == without["messages"]
    assert with_beats["state"] == without["state"]
    assert with_beats["warnings"] == without["warnings"] == []


@pytest.mark.parametrize(
    ("where", "events", "message"),
    [
        ("before RUN_STARTED", [BEAT, *RUN], "First event must be 'RUN_STARTED'"),
        ("after RUN_FINISHED", [*RUN, BEAT], "The run has already finished"),
    ],
)
def test_outside_a_run_the_reference_refuses_it(
    node_harness, where: str, events: list[Any], message: str
) -> None:
    verified = node_harness.verify(events)
    assert not verified.completed, where
    assert verified.error is not None
    assert message in verified.error.message
