"""``RunStore.response``, on every backend: the stored bytes written as they are
(a binary frame is the stored payload, never re-encoded), one ASGI send per page
or batch; resume from ``Last-Event-ID`` or ``?after=`` on both transports; the
statuses of docs/scaling.md (an unknown run 404, a position that is not one or
past what the run stored, ended or live, or of a generation the run never had
400, an over-long id 400 naming our limit, a strict ``Accept`` it cannot answer 406 before
the run is looked up); a client that leaves does not stop a background run; many
responses of one run share each batch's bytes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode, encode_proto
from agui_wire.errors import ResumePastEnd, RunReplaced, UnknownGeneration
from agui_wire.memory import AFTER_HEADER, SNAPSHOT_HEADER, resume_after
from examples.script import scripted_run
from tests.runstore.kit import Kit, call, collect, paced, read, sse_ids

pytestmark = pytest.mark.anyio

RUN = scripted_run("thread-1", "run-1")
ACCEPTS = [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE]
SEVEN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    *({"type": "CUSTOM", "name": "t", "value": i} for i in range(5)),
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def ticks(n: int) -> list[dict[str, Any]]:
    return [RUN[0], *({"type": "CUSTOM", "name": "t", "value": i} for i in range(n)), RUN[-1]]


@pytest.mark.cluster
async def test_response_writes_stored_bytes_one_send_per_page(kit: Kit, run_id: str) -> None:
    store = kit.store(batch=100)
    events = ticks(998)
    await store.publish(run_id, events)
    start, bodies = await call(
        store.response(run_id, accept=PROTO_MEDIA_TYPE), headers=[("accept", PROTO_MEDIA_TYPE)]
    )
    assert start["status"] == 200
    headers = dict(start["headers"])
    assert headers[AFTER_HEADER.encode()].split(b"-")[0] == b"0"  # 0-<generation>
    assert headers[SNAPSHOT_HEADER.encode()] == b"0"
    assert b"".join(bodies) == b"".join(encode_proto(e) for e in events)
    # One send per page: a small first page, then four times bigger each (a page is
    # bounded by page_bytes, not by ``batch``).
    sizes = [len(decode(b, PROTO_MEDIA_TYPE)) for b in bodies if b]
    assert sizes == [32, 128, 512, 328]
    start, bodies = await call(store.response(run_id, accept=SSE_MEDIA_TYPE), query=b"after=990")
    text = b"".join(bodies).decode()
    assert text.startswith("id: 991-")  # n-<the run's generation>
    assert decode(b"".join(bodies), SSE_MEDIA_TYPE) == events[990:]


@pytest.mark.parametrize("accept", ACCEPTS)
async def test_resume_from_last_event_id_or_after(kit: Kit, run_id: str, accept: str) -> None:
    store = kit.store()
    await store.publish(run_id, RUN)
    _, bodies = await call(store.response(run_id), headers=[("accept", SSE_MEDIA_TYPE)])
    ids = sse_ids(b"".join(bodies))
    for headers, query in (
        ([("last-event-id", ids[9])], b""),
        ([("last-event-id", "10")], b""),
        ([], f"after={ids[9]}".encode()),
        ([("last-event-id", ids[3])], b"after=10"),  # the query first
    ):
        start, bodies = await call(
            store.response(run_id), headers=[("accept", accept), *headers], query=query
        )
        assert start["status"] == 200
        assert dict(start["headers"])[AFTER_HEADER.encode()].split(b"-")[0] == b"10"
        assert decode(b"".join(bodies), accept) == RUN[10:]
    # after= given by the app wins over the request's
    start, bodies = await call(
        store.response(run_id, after=20), headers=[("accept", accept), ("last-event-id", "3")]
    )
    assert decode(b"".join(bodies), accept) == RUN[20:]


async def test_response_status_for_unknown_run_and_bad_after(kit: Kit, run_id: str) -> None:
    store = kit.store()
    start, _ = await call(store.response("nope"))
    assert start["status"] == 404
    await store.publish(run_id, RUN)
    for bad in ("x1", "-1", "1e3", "3-1", "99999999999999999999"):
        start, bodies = await call(store.response(run_id), headers=[("last-event-id", bad)])
        assert start["status"] == 400, bad
        assert b"event" in b"".join(bodies)
    start, bodies = await call(store.response(run_id), headers=[("last-event-id", "32")])
    assert start["status"] == 200
    assert decode(b"".join(bodies), SSE_MEDIA_TYPE) == RUN[32:]
    with pytest.raises(ValueError, match="after must be"):
        store.response(run_id, after="x")


@pytest.mark.parametrize("accept", ACCEPTS)
async def test_a_resume_past_the_end_is_a_client_error(kit: Kit, run_id: str, accept: str) -> None:
    store = kit.store()
    assert await store.publish(run_id, SEVEN) == 7
    _, bodies = await call(store.response(run_id), headers=[("accept", SSE_MEDIA_TYPE)])
    last_id = sse_ids(b"".join(bodies))[-1]  # the id of event 7, as the client was given it
    past = "8-" + last_id.split("-")[1]
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


async def test_positions_a_live_run_never_gave(kit: Kit, run_id: str, caplog: Any) -> None:
    """Past what the live run stored: what was asked and where the run is. A made-up
    generation: what is known (not one of this run's), not "replaced". Too long: our
    limit, not Python's int conversion's. Each a 400 over HTTP, the client's mistake:
    logged at DEBUG, never with a traceback."""
    store = kit.store(lease=5)
    go = asyncio.Event()

    async def held() -> Any:
        for event in SEVEN[:3]:
            yield event
        await go.wait()
        for event in SEVEN[3:]:
            yield event

    task = await store.start(run_id, held())
    assert task is not None
    got = [event_id for event_id, _ in await read(store, run_id, 3)]
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
    caplog.set_level(logging.DEBUG)
    for value, said in (
        (f"50-{generation}", b"the run is live with 3 events stored so far"),
        ("2-42", b"which is not a generation of this run"),
        ("9" * 10_000, b"an index has at most 16 digits"),
    ):
        for headers, query in (([("last-event-id", value)], b""), ([], f"after={value}".encode())):
            start, bodies = await call(store.response(run_id), headers=headers, query=query)
            assert start["status"] == 400, value[:20]
            body = b"".join(bodies)
            assert said in body, body[:300]
            assert b"set_int_max_str_digits" not in body
            assert len(body) < 300
    assert not [r for r in caplog.records if r.levelno > logging.DEBUG or r.exc_info]
    go.set()
    assert await task == 7


async def test_store_error_response_answers_what_start_and_publish_raise(
    kit: Kit, run_id: str
) -> None:
    """The exception handler of an app's routes answers a store's errors as its
    responses do: a run in progress 409 with the error's own words, the store
    draining 503 with ``Retry-After`` and fixed words; the store's module exports it."""
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from agui_wire import memory
    from agui_wire import redis as redis_store
    from agui_wire.errors import StoreError

    module = redis_store if kit.redis else memory
    store = kit.store()
    gate = asyncio.Event()

    async def held() -> Any:
        yield SEVEN[0]
        await gate.wait()
        for event in SEVEN[1:]:
            yield event

    async def start(request: Request) -> Response:
        await store.start(request.path_params["run_id"], held())
        return PlainTextResponse("started\n", status_code=202)

    app = Starlette(
        routes=[Route("/runs/{run_id}", start, methods=["POST"])],
        exception_handlers={StoreError: module.store_error_response},
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        assert (await client.post(f"/runs/{run_id}")).status_code == 202
        busy = await client.post(f"/runs/{run_id}")
        assert busy.status_code == 409
        assert run_id in busy.text
        assert "retry-after" not in busy.headers
        drained = asyncio.ensure_future(store.drain(10))
        while not store.draining:
            await asyncio.sleep(0.01)
        refused = await client.post(f"/runs/{run_id}-new")
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        assert refused.text == "this server is draining (shutting down): try again\n"
        gate.set()
        await drained


async def test_a_strict_response_refuses_an_accept_before_the_run_is_looked_up(
    kit: Kit, run_id: str
) -> None:
    """Negotiated from the request (no ``request=`` given) before the run is looked
    up: an ``Accept`` it cannot answer is a 406 whether or not the run exists; a
    ``HEAD`` gets the headers without a look-up either."""
    store = kit.store()
    await store.publish(run_id, RUN)
    for name in ("nope", run_id):
        start, bodies = await call(
            store.response(name, strict=True), headers=[("accept", "application/json")]
        )
        assert start["status"] == 406
        assert b"text/event-stream" in b"".join(bodies)
    start, bodies = await call(store.response("nope"), method="HEAD")
    assert (start["status"], b"".join(bodies)) == (200, b"")


async def test_a_client_disconnect_does_not_stop_a_background_run(kit: Kit, run_id: str) -> None:
    store = kit.store()
    task = await store.start(run_id, paced(RUN, 0.01))
    assert task is not None
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


@pytest.mark.cluster
async def test_fan_out_shares_each_batch_between_responses(kit: Kit, run_id: str) -> None:
    """20 responses of one replica on a live burst: each batch is written to every
    response as the very same bytes object, one send each."""
    store = kit.store(batch=256)
    events = ticks(3000)
    gate = asyncio.Event()

    async def producer():
        yield events[0]
        await gate.wait()
        for event in events[1:]:
            yield event

    await store.start(run_id, producer())
    accepts = [PROTO_MEDIA_TYPE] * 10 + [SSE_MEDIA_TYPE] * 10
    responses = [
        asyncio.ensure_future(call(store.response(run_id, accept=accept))) for accept in accepts
    ]
    await asyncio.sleep(0.3)  # all attached to the tail
    gate.set()
    results = [await response for response in responses]
    for (_, bodies), accept in zip(results, accepts, strict=True):
        assert decode(b"".join(bodies), accept) == events
        assert len(bodies) < 100  # one send per batch, not per event
    for group in (results[:10], results[10:]):
        live = [bodies[1:-1] for _, bodies in group]  # after the replayed first event
        for other in live[1:]:
            assert len(other) == len(live[0])
            assert all(a is b for a, b in zip(other, live[0], strict=True))


def test_resume_after_reads_query_then_header() -> None:
    def scope(query: bytes = b"", header: str | None = None):
        headers = [] if header is None else [(b"last-event-id", header.encode())]
        return {"type": "http", "query_string": query, "headers": headers}

    assert resume_after(scope()) is None
    assert resume_after(scope(header="")) is None
    assert resume_after(scope(header="7")) == 7
    assert str(resume_after(scope(header="7-12"))) == "7-12"
    assert resume_after(scope(b"after=3", "7")) == 3
    with pytest.raises(ValueError, match="event index"):
        resume_after(scope(header="-1"))
    with pytest.raises(ValueError, match="event index"):
        resume_after(scope(b"after=1e3"))
    with pytest.raises(ValueError, match="no such generation"):
        resume_after(scope(header="7-3"))


def test_both_stores_are_one_api() -> None:
    """The same names exported, the same public methods (one implementation)."""
    from agui_wire import memory, redis

    assert memory.__all__ == redis.__all__
    for name in memory.__all__:
        if name != "RunStore":
            assert getattr(memory, name) is getattr(redis, name), name
    for method in ("publish", "start", "subscribe", "response", "drain", "aclose"):
        assert getattr(memory.RunStore, method) is getattr(redis.RunStore, method), method
    doc = memory.RunStore.response.__doc__ or ""
    assert "HISTORY_TRIMMED" in doc
    assert "410" not in doc


def test_import_agui_wire_does_not_import_a_store() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agui_wire; print(*(m in sys.modules for m in "
        "('agui_wire.redis', 'redis', 'agui_wire.memory', 'agui_wire._runstore')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"] * 4
