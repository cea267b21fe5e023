"""Resume positions past the end are the client's error (issue 23 item 7), against
the real redis-server, on both transports: ``Last-Event-ID: 8`` on a run of 7
events that has ended is a 400 (Python: ``ResumePastEnd``, a ``ValueError``), a
number too big to be an index (``?after=99999999999999999999``) a 400; ``maxlen``
and ``compact=True`` work together: a compact joiner of a trimmed run gets a
snapshot standing for the events it cannot replay, then the rest.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire._apply import Compactor
from agui_wire.errors import ResumePastEnd
from agui_wire.redis import RunStore
from tests.redis.conftest import run
from tests.redis.test_store import call

# also on Valkey 8: positions against what the server holds
pytestmark = pytest.mark.valkey

RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    *({"type": "CUSTOM", "name": "t", "value": i} for i in range(5)),
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
ACCEPTS = [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE]


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[int, Any]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


@pytest.mark.parametrize("accept", ACCEPTS)
def test_a_resume_past_the_end_is_a_client_error(redis_server, run_id, accept) -> None:
    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r)
        assert await store.publish(run_id, RUN) == 7
        start, bodies = await call(store.response(run_id), headers=[("accept", SSE_MEDIA_TYPE)])
        last_id = [x for x in b"".join(bodies).decode().splitlines() if x.startswith("id: ")][-1]
        last_id = last_id[4:]  # the id of event 7, as the client was given it
        past = last_id.replace("7", "8", 1) if last_id.startswith("7") else "8"
        cases = [
            ([("last-event-id", "8")], b""),
            ([("last-event-id", past)], b""),
            ([], b"after=8"),
            ([], b"after=99999999999999999999"),
            ([("last-event-id", "99999999999999999999")], b""),
        ]
        for headers, query in cases:
            start, bodies = await call(
                store.response(run_id), headers=[("accept", accept), *headers], query=query
            )
            assert start["status"] == 400, (headers, query, start["status"])
            text = b"".join(bodies).decode()
            assert "event" in text, text
            assert "Redis" not in text, text
        # the last event's id itself is fine: nothing after it, the run's end
        start, bodies = await call(
            store.response(run_id), headers=[("accept", accept), ("last-event-id", last_id)]
        )
        assert start["status"] == 200
        assert decode(b"".join(bodies), accept) == []
        with pytest.raises(ResumePastEnd):
            await collect(store, run_id, after=8)
        with pytest.raises(ValueError, match="ended after event 7"):
            await collect(store, run_id, after=8)
        assert await collect(store, run_id, after=7) == []
        await r.aclose()

    run(main())


def test_the_response_docstring_says_what_a_trimmed_position_gets() -> None:
    doc = RunStore.response.__doc__ or ""
    assert "410" not in doc
    assert "HISTORY_TRIMMED" in doc
    assert "400" in doc


@pytest.mark.parametrize("accept", ACCEPTS)
def test_maxlen_and_compact_work_together(redis_server, run_id, accept) -> None:
    """A long run trimmed to about 100 events: a compact joiner gets a snapshot and
    the events after it, applying to the same messages and state as the whole run."""
    events = _long_run(run_id)

    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r, maxlen=100, batch=50)
        assert await store.publish(run_id, events) == len(events)
        assert await r.xlen(store.stream_key(run_id)) < len(events)  # trimmed
        got = [e for _, e in await collect(store, run_id, compact=True)]
        assert len(got) < len(events)
        assert _applied(got) == _applied(events)
        start, bodies = await call(
            store.response(run_id, compact=True), headers=[("accept", accept)]
        )
        assert start["status"] == 200
        assert decode(b"".join(bodies), accept) == got
        await r.aclose()

    run(main())


def _long_run(run_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id}]
    events.append({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
    events += [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"w{i} "} for i in range(600)
    ]
    events.append({"type": "TEXT_MESSAGE_END", "messageId": "m1"})
    events.append({"type": "STATE_SNAPSHOT", "snapshot": {"n": 600}})
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": run_id})
    return events


def _applied(events: list[dict[str, Any]]) -> Any:
    """The messages and state a client ends with (the fold the store uses)."""
    folder = Compactor()
    for event in events:
        folder.feed(event)
    prefix = folder.prefix()
    return [e for e in prefix if e["type"] in ("MESSAGES_SNAPSHOT", "STATE_SNAPSHOT")]
