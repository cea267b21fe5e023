"""``binary_keepalive=True``: the binary stream's keep-alive event goes out only
while a run is open (after an event, not after a terminal one), compressed like
everything else, and never when the last event's type cannot be read.
tests/e2e/test_binary_keepalive.py runs it against the real clients."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agui_wire import PROTO_MEDIA_TYPE, decode
from agui_wire._compression import decompressor
from agui_wire.asgi import KEEPALIVE_EVENT, EncodedEvents, EventStreamResponse
from tests.unit.test_asgi import RUN, Driver

STARTED, FINISHED = RUN[0], RUN[-1]


async def paced(steps: list[Any]) -> AsyncIterator[Any]:
    """Events, with a float in the list meaning: idle that many seconds there."""
    for step in steps:
        if isinstance(step, float):
            await asyncio.sleep(step)
        else:
            yield step


def served(steps: list[Any], **options: Any) -> list[dict[str, Any]]:
    response = EventStreamResponse(
        paced(steps), accept=PROTO_MEDIA_TYPE, keepalive=0.02, binary_keepalive=True, **options
    )
    d = Driver(headers=[(b"accept-encoding", b"gzip")]).run(response)
    if "content-encoding" in d.headers:
        inflate = decompressor(d.headers["content-encoding"])
        return decode(b"".join(inflate(b) for b in d.bodies), PROTO_MEDIA_TYPE)
    return d.events()


def beats_between(events: list[dict[str, Any]]) -> list[int]:
    """How many keep-alives stand before each event of the run (and at the end)."""
    counts, n = [], 0
    for event in events:
        if event == KEEPALIVE_EVENT:
            n += 1
        else:
            counts.append(n)
            n = 0
    return [*counts, n]


def test_only_while_a_run_is_open() -> None:
    second = {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}
    events = served(
        [0.15, STARTED, 0.15, RUN[1], FINISHED, 0.15, second, 0.15, {**FINISHED, "runId": "r2"}]
    )
    before_first, in_first, _, between_runs, in_second, after = beats_between(events)
    assert before_first == 0
    assert in_first >= 2
    assert between_runs == 0  # after RUN_FINISHED, until the next RUN_STARTED
    assert in_second >= 2
    assert after == 0


def test_compressed() -> None:
    events = served([STARTED, 0.15, FINISHED], compress=True)
    assert [e for e in events if e != KEEPALIVE_EVENT] == [STARTED, FINISHED]
    assert events.count(KEEPALIVE_EVENT) >= 2


def test_not_after_a_run_error() -> None:
    error = {"type": "RUN_ERROR", "message": "m"}
    events = served([STARTED, error, 0.15])
    assert events == [STARTED, error]


def test_silent_when_the_last_type_cannot_be_read() -> None:
    class Opaque(EncodedEvents):
        def data(self, binary: bool) -> bytes:
            from agui_wire import encode_proto

            return encode_proto(STARTED)

        @property
        def last_type(self) -> str | None:
            raise ValueError("undecodable")

    events = served([Opaque(), 0.15, FINISHED])
    assert events == [STARTED, FINISHED]
