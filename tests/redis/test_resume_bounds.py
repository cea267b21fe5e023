"""Resume positions a run never gave are the client's error, against the real
redis-server, on both transports: ``Last-Event-ID: 8`` on a run of 7 events that
has ended is a 400 (Python: ``ResumePastEnd``, a ``ValueError``), and so is a
position past what a live run stored; a generation the run never had
(``2-42``) is a 400 (``UnknownGeneration``), never "replaced"; a number too big
to be an index (``?after=99999999999999999999``, 10,000 digits) a 400 naming our
limit, measured by its length before its value; ``maxlen``
and ``compact=True`` work together: a compact joiner of a trimmed run gets a
snapshot standing for the events it cannot replay, then the rest.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode
from agui_wire._apply import Compactor
from agui_wire.errors import ResumePastEnd, RunReplaced, UnknownGeneration
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


def test_positions_a_live_run_never_gave(redis_server, run_id) -> None:
    """Past what the live run stored: what was asked and where the run is. A made-up
    generation: what is known (not one of this run's), not "replaced". Too long: our
    limit, not Python's int conversion's."""

    async def main() -> None:
        r = aioredis.from_url(redis_server.url)
        store = RunStore(r, lease=5)
        go = asyncio.Event()

        async def held() -> Any:
            for event in RUN[:3]:
                yield event
            await go.wait()
            for event in RUN[3:]:
                yield event

        task = await store.start(run_id, held())
        assert task is not None
        got = []
        async for event_id, _ in store.subscribe(run_id):
            got.append(event_id)
            if len(got) == 3:
                break
        generation = got[-1].generation
        assert generation is not None
        with pytest.raises(ResumePastEnd) as caught:
            await collect(store, run_id, after=f"50-{generation}")
        assert caught.value.live
        assert str(caught.value).endswith(
            "resuming after event 50, but the run is live with 3 events stored so far: "
            "event 50 is not one it gave (or the store lost events it had acknowledged)"
        )
        with pytest.raises(UnknownGeneration) as unknown:
            await collect(store, run_id, after="2-42")
        assert not isinstance(unknown.value, RunReplaced)
        assert isinstance(unknown.value, ValueError)
        assert (unknown.value.generation, unknown.value.stored) == (42, generation)
        assert "names generation 42, which is not a generation of this run" in str(unknown.value)
        for position in ("9" * 10_000, f"1-{'2' * 10_000}", 10**10_000):
            with pytest.raises(ValueError, match=r"at most|0 to 9,007") as long:
                await collect(store, run_id, after=position)
            assert "set_int_max_str_digits" not in str(long.value)
            assert len(str(long.value)) < 300
        for headers in ([("last-event-id", "2-42")], [("last-event-id", "9" * 10_000)]):
            start, bodies = await call(store.response(run_id), headers=headers)
            assert start["status"] == 400
            assert b"set_int_max_str_digits" not in b"".join(bodies)
        go.set()
        assert await task == 7
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
