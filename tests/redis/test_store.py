"""``agui_wire.redis.RunStore`` against a real redis-server, in one process.

Covers the contract of the module doc: event ids are 1-based indexes; replay
then tail; resume after any n without gap or duplicate; the idempotent producer
(a retried run stores each event once, the first write wins, an ended run is not
produced again); the lease (a live producer excludes another; a lost lease
stops the producer); failures end the run with RUN_ERROR; ``maxlen`` trimming
is reported, not skipped; slow subscribers catch up from Redis; compact
prefixes; the ASGI response (one send per batch, stored bytes unchanged, 404,
400, headers).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode, encode_proto
from agui_wire._codec.framing import frame
from agui_wire.errors import HistoryTrimmed, LeaseLost, RunInProgress, RunNotFound
from agui_wire.redis import AFTER_HEADER, SNAPSHOT_HEADER, RunStore, resume_after
from examples.script import scripted_run
from tests.redis.conftest import run

# also on Valkey 8: the store's contract on the server's streams, scripts and blocking reads
pytestmark = pytest.mark.valkey

RUN = scripted_run("thread-1", "run-1")


def client(server: Any) -> aioredis.Redis:
    return aioredis.from_url(server.url)


async def paced(events: list[dict[str, Any]], delay: float = 0.0):
    for event in events:
        await asyncio.sleep(delay)
        yield event


async def collect(store: RunStore, run_id: str, **kwargs: Any) -> list[tuple[int, dict[str, Any]]]:
    return [item async for item in store.subscribe(run_id, **kwargs)]


def test_ids_are_indexes_and_every_subscriber_gets_the_run(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, lease=2)
        task = await store.start(run_id, paced(RUN, 0.005))
        early, late = await asyncio.gather(collect(store, run_id), asyncio.sleep(0.05, None))
        assert task is not None
        assert await task == len(RUN)
        assert [i for i, _ in early] == list(range(1, len(RUN) + 1))
        assert [e for _, e in early] == RUN
        after_end = await collect(store, run_id)
        assert after_end == early  # a late joiner replays the whole run
        assert late is None
        await r.aclose()

    run(main())


@pytest.mark.parametrize("after", [0, 1, 2, 10, 32, 33])
def test_resume_after_n_has_no_gap_and_no_duplicate(redis_server, run_id, after) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        await store.publish(run_id, RUN)
        got = await collect(store, run_id, after=after)
        assert got == [(i, RUN[i - 1]) for i in range(after + 1, len(RUN) + 1)]
        await r.aclose()

    run(main())


def test_resume_while_live(redis_server, run_id) -> None:
    """Subscribers joining at every point of a live run each get exactly the rest."""

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, batch=4)
        task = await store.start(run_id, paced(RUN, 0.01))
        readers = []
        while not task.done():
            # as a client that saw them: the end marker, once written, is not an event
            after = min(await r.xlen(store.stream_key(run_id)), len(RUN))
            readers.append((after, asyncio.ensure_future(collect(store, run_id, after=after))))
            await asyncio.sleep(0.007)
        assert len(readers) > 10
        for after, reader in readers:
            got = await reader
            assert [i for i, _ in got] == list(range(after + 1, len(RUN) + 1))
            assert [e for _, e in got] == RUN[after:]
        await r.aclose()

    run(main())


def test_retried_publish_stores_each_event_once(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        assert await store.publish(run_id, RUN) == len(RUN)
        stored = await r.xrange(store.stream_key(run_id))
        advanced = []

        def again():
            for event in RUN:
                advanced.append(event)
                yield event

        # The run has ended: a retry returns without producing anything.
        assert await store.publish(run_id, again()) == len(RUN)
        assert advanced == []
        assert await r.xrange(store.stream_key(run_id)) == stored
        assert len(stored) == len(RUN) + 1  # the events and the end marker
        gen = int(stored[0][0].split(b"-")[1])  # the run's generation: even, random
        assert gen % 2 == 0
        assert gen > 0
        assert [entry_id for entry_id, _ in stored[:3]] == [b"%d-%d" % (n, gen) for n in (1, 2, 3)]
        end_id, end = stored[-1]
        assert end_id == f"{len(RUN)}-{gen + 1}".encode()
        assert end[b"end"] == b"finished"  # and ``by``: the producer's token
        assert sorted(end) == [b"by", b"end"]
        assert end[b"by"].split(b":")[0] == str(gen).encode()  # <generation>:<random>
        await r.aclose()

    run(main())


def test_retry_after_a_crash_continues_where_redis_stands(redis_server, run_id) -> None:
    """A producer died after 10 events (its lease gone, nobody ended the run): the
    retried job runs the whole generator again; events 1..10 keep their first
    write, 11.. are stored once."""

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, lease=30)
        gate = asyncio.Event()

        async def dies_after_ten():
            for event in RUN[:10]:
                yield event
            gate.set()
            await asyncio.sleep(3600)

        task = await store.start(run_id, dies_after_ten())
        await gate.wait()
        await asyncio.sleep(0.1)
        task.remove_done_callback(store._task_done)
        # As if the process had died: no cleanup, the lease expires.
        await r.delete(store.stream_key(run_id) + ":lease")
        retried = [dict(e, rerun=True) if i < 10 else e for i, e in enumerate(RUN)]
        other = RunStore(r)
        assert await other.publish(run_id, retried, replay=True) == len(RUN)
        got = await collect(other, run_id)
        assert [e for _, e in got] == RUN  # the first 10 as first written
        task.cancel()
        with pytest.raises((LeaseLost, asyncio.CancelledError)):
            await task
        assert len(await r.xrange(store.stream_key(run_id))) == len(RUN) + 1
        await r.aclose()

    run(main())


def test_a_live_producer_excludes_another(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        task = await store.start(run_id, paced(RUN, 0.01))
        untouched = []

        def second():
            untouched.append(1)
            yield RUN[0]

        with pytest.raises(RunInProgress):
            await store.publish(run_id, second())
        assert untouched == []
        assert await task == len(RUN)
        await r.aclose()

    run(main())


def test_a_producer_that_lost_its_lease_stops(redis_server, run_id) -> None:
    """Another holds the run's lease (the producer stalled past it, the run was
    taken): the producer stops at its next renewal (``LeaseLost``) and writes
    nothing more; once that lease lapses too, a reader's check ends the run."""

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, lease=0.6)

        async def quiet():
            yield RUN[0]
            await asyncio.Event().wait()  # its next write is a renewal (every lease / 3)
            yield RUN[1]

        task = await store.start(run_id, quiet())
        assert task is not None
        while not await r.xlen(store.stream_key(run_id)):  # event 1 stored
            await asyncio.sleep(0.01)
        await r.set(store.stream_key(run_id) + ":lease", b"another", px=1500)
        with pytest.raises(LeaseLost):
            await task
        got = await collect(store, run_id)  # a quiet check ends the run, the lease gone
        assert [e["type"] for _, e in got] == ["RUN_STARTED", "RUN_ERROR"]
        assert got[-1][1]["code"] == "LEASE_EXPIRED"
        await store.aclose()
        await r.aclose()

    run(main())


@pytest.mark.parametrize("produced", [2, 0])
def test_a_failing_producer_ends_the_run_with_run_error(redis_server, run_id, produced) -> None:
    """Also before its first event: the run is that one RUN_ERROR (as an
    ``EventStreamResponse`` of the producer says), not an end with nothing in it."""

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)

        async def fails():
            for event in RUN[:produced]:
                yield event
            raise RuntimeError("model timeout")

        with pytest.raises(RuntimeError, match="model timeout"):
            await store.publish(run_id, fails())
        got = await collect(store, run_id)
        types = [e["type"] for _, e in got]
        assert types == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"][-produced - 1 :]
        assert got[-1][1]["code"] == "INTERNAL_ERROR"
        assert "model timeout" not in str(got[-1][1])
        await r.aclose()

    run(main())


def test_maxlen_trims_and_resuming_into_the_trim_is_an_error(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, maxlen=100, batch=50)
        events = (
            [RUN[0]]
            + [{"type": "CUSTOM", "name": "tick", "value": i} for i in range(2000)]
            + [RUN[-1]]
        )
        await store.publish(run_id, events)
        assert await r.xlen(store.stream_key(run_id)) < 400
        with pytest.raises(HistoryTrimmed) as info:
            await collect(store, run_id)
        assert info.value.after == 0
        assert info.value.first > 1
        tail = await collect(store, run_id, after=len(events) - 50)
        assert [e for _, e in tail] == events[-50:]
        await r.aclose()

    run(main())


def test_unknown_run(redis_server) -> None:
    async def main() -> None:
        r = client(redis_server)
        with pytest.raises(RunNotFound):
            await collect(RunStore(r), "no-such-run")
        await r.aclose()

    run(main())


def test_a_slow_subscriber_catches_up_from_redis(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, batch=2, backlog=2)
        events = [RUN[0]] + [{"type": "CUSTOM", "name": "t", "value": i} for i in range(300)]
        events.append(RUN[-1])
        gate = asyncio.Event()

        async def producer():
            yield events[0]
            await gate.wait()
            for event in events[1:]:
                await asyncio.sleep(0)
                yield event

        await store.start(run_id, producer())
        slow = store.subscribe(run_id)
        first = await slow.__anext__()  # attached to the tail, then not reading
        fast = asyncio.ensure_future(collect(store, run_id))
        gate.set()
        assert [e for _, e in await fast] == events
        rest = [item async for item in slow]
        assert [first, *rest] == list(enumerate(events, 1))
        await r.aclose()

    run(main())


def test_compact_prefix_then_tail(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        await store.publish(run_id, RUN)
        got = await collect(store, run_id, compact=True)
        types = [e["type"] for _, e in got]
        assert types == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
        assert {i for i, _ in got} == {len(RUN)}
        from examples.script import FINAL_STATE

        assert got[2][1]["snapshot"] == FINAL_STATE
        await r.aclose()

    run(main())


# -- the ASGI response -----------------------------------------------------------------


async def call(app: Any, *, headers=(), query: bytes = b"", method: str = "GET"):
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def receive():
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    scope = {
        "type": "http",
        "method": method,
        "http_version": "1.1",
        "headers": [(k.encode(), v.encode()) for k, v in headers],
        "query_string": query,
    }
    await app(scope, receive, send)
    start = sent[0]
    bodies = [m["body"] for m in sent[1:] if m["type"] == "http.response.body"]
    return start, bodies


def test_response_writes_stored_bytes_one_send_per_batch(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, batch=100)
        events = [RUN[0]] + [{"type": "CUSTOM", "name": "t", "value": i} for i in range(998)]
        events.append(RUN[-1])
        await store.publish(run_id, events)
        start, bodies = await call(
            store.response(run_id, accept=PROTO_MEDIA_TYPE), headers=[("accept", PROTO_MEDIA_TYPE)]
        )
        assert start["status"] == 200
        headers = dict(start["headers"])
        assert headers[AFTER_HEADER.encode()].split(b"-")[0] == b"0"  # 0-<generation>
        assert headers[SNAPSHOT_HEADER.encode()] == b"0"
        payloads = [f[b"p"] for _, f in await r.xrange(store.stream_key(run_id)) if b"p" in f]
        assert b"".join(bodies) == b"".join(frame(p) for p in payloads)
        assert b"".join(bodies) == b"".join(encode_proto(e) for e in events)
        # One send per page read from Redis: a small first page, then four times
        # bigger each (a page is bounded by page_bytes, not by `batch`).
        sizes = [len(decode(b, PROTO_MEDIA_TYPE)) for b in bodies if b]
        assert sizes == [32, 128, 512, 328]
        start, bodies = await call(
            store.response(run_id, accept=SSE_MEDIA_TYPE), query=b"after=990"
        )
        text = b"".join(bodies).decode()
        assert text.startswith("id: 991-")  # n-<the run's generation>
        assert decode(b"".join(bodies), SSE_MEDIA_TYPE) == events[990:]
        await r.aclose()

    run(main())


def test_response_status_for_unknown_run_and_bad_after(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        start, _ = await call(store.response("nope"))
        assert start["status"] == 404
        await store.publish(run_id, RUN)
        start, _ = await call(store.response(run_id), headers=[("last-event-id", "x1")])
        assert start["status"] == 400
        start, bodies = await call(store.response(run_id), headers=[("last-event-id", "32")])
        assert start["status"] == 200
        assert decode(b"".join(bodies), SSE_MEDIA_TYPE) == RUN[32:]
        await r.aclose()

    run(main())


def test_a_strict_response_refuses_an_accept_before_it_asks_redis(redis_server, run_id) -> None:
    """Negotiated from the request (no ``request=`` given) before the run is looked
    up: an ``Accept`` it cannot answer is a 406 whether or not the run exists (and
    costs Redis nothing); a ``HEAD`` gets the headers without a look-up either."""

    async def main() -> None:
        r = client(redis_server)
        try:
            store = RunStore(r)
            await store.publish(run_id, RUN)
            for name in ("nope", run_id):
                start, bodies = await call(
                    store.response(name, strict=True), headers=[("accept", "application/json")]
                )
                assert start["status"] == 406
                assert b"text/event-stream" in b"".join(bodies)
            before = (await r.info("commandstats")).get("cmdstat_xrevrange", {}).get("calls", 0)
            start, bodies = await call(store.response("nope"), method="HEAD")
            assert (start["status"], b"".join(bodies)) == (200, b"")
            after = (await r.info("commandstats")).get("cmdstat_xrevrange", {}).get("calls", 0)
            assert after == before
        finally:
            await r.aclose()

    run(main())


def test_a_client_disconnect_does_not_stop_a_background_run(redis_server, run_id) -> None:
    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        task = await store.start(run_id, paced(RUN, 0.01))
        sent = []
        gone = asyncio.Event()

        async def receive():
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)
            if len(sent) == 3:
                gone.set()

        scope = {"type": "http", "method": "GET", "headers": [], "query_string": b""}
        await store.response(run_id)(scope, receive, send)
        assert len(sent) < len(RUN)
        assert await task == len(RUN)
        assert [e for _, e in await collect(store, run_id)] == RUN
        await r.aclose()

    run(main())


def test_resume_after_reads_query_then_header() -> None:
    def scope(query: bytes = b"", header: str | None = None):
        headers = [] if header is None else [(b"last-event-id", header.encode())]
        return {"type": "http", "query_string": query, "headers": headers}

    assert resume_after(scope()) is None
    assert resume_after(scope(header="")) is None
    assert resume_after(scope(header="7")) == 7
    assert resume_after(scope(b"after=3", "7")) == 3
    with pytest.raises(ValueError, match="event index"):
        resume_after(scope(header="-1"))
    with pytest.raises(ValueError, match="event index"):
        resume_after(scope(b"after=1e3"))


def test_import_agui_wire_does_not_import_the_store() -> None:
    import subprocess
    import sys

    code = "import sys, agui_wire; print('agui_wire.redis' in sys.modules, 'redis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_late_joiner_of_a_long_run_gets_a_snapshot_not_every_token(redis_server, run_id) -> None:
    from tests.redis.app import token_run

    events = token_run("thread-1", run_id, 50_000, size=4)
    events = events[:-2]  # still streaming: the message is open, the run too

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, batch=2000)
        gate = asyncio.Event()

        async def producer():
            for event in events:
                yield event
            await gate.wait()
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "!"}
            yield {"type": "TEXT_MESSAGE_END", "messageId": "m1"}
            yield {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": run_id}

        task = await store.start(run_id, producer())
        while await r.xlen(store.stream_key(run_id)) < len(events):
            await asyncio.sleep(0.05)
        joiner = store.subscribe(run_id, compact=True)
        prefix = [await joiner.__anext__() for _ in range(3)]
        gate.set()
        rest = [item async for item in joiner]
        types = [e["type"] for _, e in prefix]
        assert types == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "TEXT_MESSAGE_START"]
        assert {i for i, _ in prefix} == {len(events)}
        text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert prefix[1][1]["messages"] == [{"id": "m1", "role": "assistant", "content": text}]
        assert [e["type"] for _, e in rest] == [
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
        assert [i for i, _ in rest] == [len(events) + 1, len(events) + 2, len(events) + 3]
        await task
        await r.aclose()

    run(main())


def test_fan_out_shares_each_batch_between_responses(redis_server, run_id) -> None:
    """20 responses of one replica on a live burst: each batch read from Redis is
    written to every response as the very same bytes object, one send each."""

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r, batch=256)
        events = [RUN[0]] + [{"type": "CUSTOM", "name": "t", "value": i} for i in range(3000)]
        events.append(RUN[-1])
        gate = asyncio.Event()

        async def producer():
            yield events[0]
            await gate.wait()
            for event in events[1:]:
                yield event

        task = await store.start(run_id, producer())
        assert task is not None
        responses = []
        for accept in [PROTO_MEDIA_TYPE] * 10 + [SSE_MEDIA_TYPE] * 10:
            responses.append(asyncio.ensure_future(call(store.response(run_id, accept=accept))))
        await asyncio.sleep(0.3)  # all attached to the tail
        gate.set()
        results = [await response for response in responses]
        accepts = [PROTO_MEDIA_TYPE] * 10 + [SSE_MEDIA_TYPE] * 10
        for (_, bodies), accept in zip(results, accepts, strict=True):
            assert decode(b"".join(bodies), accept) == events
            assert len(bodies) < 100  # one send per batch, not per event
        for group in (results[:10], results[10:]):
            live = [bodies[1:-1] for _, bodies in group]  # after the replayed first event
            for other in live[1:]:
                assert len(other) == len(live[0])
                assert all(a is b for a, b in zip(other, live[0], strict=True))
        assert await task == len(events)
        await store.aclose()
        await r.aclose()

    run(main())


def test_events_are_stored_while_the_producer_waits(redis_server, run_id) -> None:
    """Events produced while an append is in flight go out as soon as it returns,
    not with the producer's next event (which may be minutes away)."""

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        gate = asyncio.Event()

        async def producer():
            for event in RUN[:20]:
                yield event  # a burst: most arrive while an append is in flight
            await gate.wait()
            for event in RUN[20:]:
                yield event

        task = await store.start(run_id, producer())
        got = []
        async for item in store.subscribe(run_id):
            got.append(item)
            if len(got) == 20:
                break
        gate.set()
        assert [e for _, e in got] == RUN[:20]
        assert await task == len(RUN)
        await r.aclose()

    run(main())


def test_sdk_events_are_stored_as_the_json_they_dump_to(redis_server, run_id) -> None:
    """A producer of the official SDK's pydantic events: each is stored as the
    event dict the SDK's own encoder writes (camelCase, no unset fields)."""
    from ag_ui.core import RunFinishedEvent, RunStartedEvent, TextMessageContentEvent

    sdk = [
        RunStartedEvent(thread_id="t", run_id="r"),
        TextMessageContentEvent(message_id="m", delta="hi"),
        RunFinishedEvent(thread_id="t", run_id="r"),
    ]

    async def main() -> None:
        r = client(redis_server)
        store = RunStore(r)
        try:
            assert await store.publish(run_id, sdk) == 3
            got = [event for _, event in await collect(store, run_id)]
        finally:
            await r.aclose()
        assert got == [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in sdk]

    run(main())
