"""agui_wire.client: the request it sends, and every way a response can fail.

Responses come from ``httpx.MockTransport`` (exact bytes and failures on demand)
and from the example FastAPI app through ``httpx.ASGITransport``; the e2e suite
runs the same client against a real uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_wire import (
    PROTO_MEDIA_TYPE,
    SSE_MEDIA_TYPE,
    AguiWireError,
    DecodeError,
    encode_proto,
    encode_sse,
)
from agui_wire.asgi import KEEPALIVE_EVENT
from agui_wire.client import (
    BODY_EXCERPT,
    DEFAULT_ACCEPT,
    AgentHTTPError,
    IncompleteRun,
    SequenceError,
    UnexpectedContentType,
    arun_agent,
    run_agent,
)

ROOT = Path(__file__).resolve().parents[2]

URL = "http://agent.test/run"
INPUT = {"threadId": "t", "runId": "r", "messages": [], "tools": [], "context": []}
STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
ERRORED = {"type": "RUN_ERROR", "message": "nope"}
TEXT = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
RUN = [STARTED, {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}, TEXT,
       {"type": "TEXT_MESSAGE_END", "messageId": "m"}, FINISHED]  # fmt: skip


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(encode_sse(e) for e in events)


def proto(*events: dict[str, Any]) -> bytes:
    return b"".join(encode_proto(e) for e in events)


def proto_beating(*events: dict[str, Any]) -> bytes:
    """Binary frames with the keep-alive event after each (a server with
    ``binary_keepalive=True`` and a slow producer)."""
    return proto(*(e for event in events for e in (event, dict(KEEPALIVE_EVENT))))


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body delivered in the given chunks, optionally breaking off."""

    def __init__(self, chunks: list[bytes], fail: Exception | None = None) -> None:
        self.chunks = chunks
        self.fail = fail

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.fail is not None:
            raise self.fail

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk
        if self.fail is not None:
            raise self.fail


Handler = Callable[[httpx.Request], httpx.Response]


def respond(
    body: bytes | list[bytes],
    content_type: str | None = SSE_MEDIA_TYPE,
    status: int = 200,
    fail: Exception | None = None,
    seen: list[httpx.Request] | None = None,
) -> Handler:
    chunks = body if isinstance(body, list) else [body[i : i + 7] for i in range(0, len(body), 7)]

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            request.read()
            seen.append(request)
        headers = {} if content_type is None else {"content-type": content_type}
        return httpx.Response(status, headers=headers, stream=Chunks(chunks, fail))

    return handler


def run_sync(handler: Handler, **kwargs: Any) -> list[dict[str, Any]]:
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        return list(run_agent(client, URL, kwargs.pop("input", INPUT), **kwargs))


def run_async(handler: Handler, **kwargs: Any) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            stream = arun_agent(client, URL, kwargs.pop("input", INPUT), **kwargs)
            return [e async for e in stream]

    return asyncio.run(main())


RUNNERS = [pytest.param(run_sync, id="sync"), pytest.param(run_async, id="async")]


# -- the request ---------------------------------------------------------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_request(runner) -> None:
    seen: list[httpx.Request] = []
    assert runner(respond(sse(*RUN), seen=seen)) == RUN
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == URL
    assert request.headers["accept"] == DEFAULT_ACCEPT
    assert request.headers["content-type"] == "application/json"
    assert "last-event-id" not in request.headers
    assert json.loads(request.content) == INPUT


def test_default_accept_prefers_protobuf() -> None:
    from agui_wire import negotiate

    assert negotiate(DEFAULT_ACCEPT) == PROTO_MEDIA_TYPE
    assert negotiate(DEFAULT_ACCEPT.split(", ")[1]) == SSE_MEDIA_TYPE


def test_request_options() -> None:
    seen: list[httpx.Request] = []
    run_sync(
        respond(sse(TEXT, FINISHED), seen=seen),
        accept=SSE_MEDIA_TYPE,
        headers={"Authorization": "Bearer x"},
        last_event_id="12",
    )
    assert seen[0].headers["accept"] == SSE_MEDIA_TYPE
    assert seen[0].headers["authorization"] == "Bearer x"
    assert seen[0].headers["last-event-id"] == "12"


def test_pydantic_run_agent_input() -> None:
    from ag_ui.core import RunAgentInput, UserMessage

    seen: list[httpx.Request] = []
    body = RunAgentInput(
        thread_id="t",
        run_id="r",
        state=None,
        messages=[UserMessage(id="u", role="user", content="hi")],
        tools=[],
        context=[],
        forwarded_props=None,
    )
    run_sync(respond(sse(*RUN), seen=seen), input=body)
    assert json.loads(seen[0].content) == {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
    }
    with pytest.raises(TypeError, match="RunAgentInput"):
        run_sync(respond(sse(*RUN)), input=["not", "an", "input"])


# -- decoding by content type ------------------------------------------------------------


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize(
    ("content_type", "encode"),
    [
        (SSE_MEDIA_TYPE, sse),
        ("text/event-stream; charset=utf-8", sse),
        (PROTO_MEDIA_TYPE, proto),
        ("application/x-ag-ui", proto),
    ],
)
def test_decoder_follows_the_content_type(runner, content_type, encode) -> None:
    assert runner(respond(encode(*RUN), content_type)) == RUN


def test_events_arrive_incrementally() -> None:
    """Each event is yielded as soon as its chunk arrives, before the next is read."""
    delivered: list[int] = []
    body = [encode_sse(e) for e in RUN]

    class Tracking(Chunks):
        def __iter__(self) -> Iterator[bytes]:
            for i, chunk in enumerate(self.chunks):
                delivered.append(i)
                yield chunk

        async def __aiter__(self) -> Any:
            for i, chunk in enumerate(self.chunks):
                delivered.append(i)
                yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": SSE_MEDIA_TYPE}, stream=Tracking(body))

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        for i, _event in enumerate(run_agent(client, URL, INPUT)):
            assert delivered[-1] == i

    async def main() -> None:
        delivered.clear()
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            i = 0
            async for _event in arun_agent(client, URL, INPUT):
                assert delivered[-1] == i
                i += 1
            assert i == len(RUN)

    asyncio.run(main())


# -- failures -----------------------------------------------------------------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_http_error_carries_status_and_body_excerpt(runner) -> None:
    body = b"upstream model timed out " * 500
    with pytest.raises(AgentHTTPError) as info:
        runner(respond(body, "text/plain", status=502))
    err = info.value
    assert err.status_code == 502
    assert err.url == URL
    assert err.body == body[:BODY_EXCERPT]
    assert str(err).startswith(f"POST {URL}: HTTP 502: upstream model timed out")
    assert isinstance(err, AguiWireError)


@pytest.mark.parametrize("runner", RUNNERS)
def test_http_error_without_body(runner) -> None:
    with pytest.raises(AgentHTTPError, match=r"HTTP 404$"):
        runner(respond(b"", None, status=404))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("content_type", ["application/json", "text/html", None])
def test_wrong_content_type(runner, content_type) -> None:
    with pytest.raises(UnexpectedContentType) as info:
        runner(respond(b'{"detail": "x"}', content_type))
    assert info.value.content_type == content_type
    assert SSE_MEDIA_TYPE in str(info.value)
    assert PROTO_MEDIA_TYPE in str(info.value)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("encode", [sse, proto])
def test_stream_ending_inside_the_run(runner, encode) -> None:
    events: list[dict[str, Any]] = []

    def collect(handler: Handler) -> None:
        with httpx.Client(transport=httpx.MockTransport(handler)) as client:
            events.extend(run_agent(client, URL, INPUT))

    content_type = SSE_MEDIA_TYPE if encode is sse else PROTO_MEDIA_TYPE
    with pytest.raises(IncompleteRun) as info:
        runner(respond(encode(*RUN[:3]), content_type))
    assert info.value.events_read == 3
    assert "ended inside a run" in str(info.value)
    with pytest.raises(IncompleteRun):
        collect(respond(encode(*RUN[:3]), content_type))
    assert events == RUN[:3]  # the events before the end were yielded


@pytest.mark.parametrize("runner", RUNNERS)
def test_empty_stream(runner) -> None:
    with pytest.raises(IncompleteRun, match="before any event"):
        runner(respond(b""))


@pytest.mark.parametrize("runner", RUNNERS)
def test_cut_frame_is_an_incomplete_run(runner) -> None:
    data = proto(*RUN)
    with pytest.raises(IncompleteRun) as info:
        runner(respond(data[:-3], PROTO_MEDIA_TYPE))
    assert info.value.events_read == 4
    assert isinstance(info.value.__cause__, DecodeError)


@pytest.mark.parametrize("runner", RUNNERS)
def test_broken_connection_is_an_incomplete_run(runner) -> None:
    body = [encode_sse(e, id=str(i)) for i, e in enumerate(RUN[:2], 1)]
    fail = httpx.RemoteProtocolError("peer closed connection without sending complete body")
    with pytest.raises(IncompleteRun) as info:
        runner(respond(body, fail=fail))
    err = info.value
    assert err.events_read == 2
    assert err.last_event_id == "2"  # where to resume
    assert err.__cause__ is fail
    assert "RemoteProtocolError" in str(err)


@pytest.mark.parametrize("runner", RUNNERS)
def test_other_errors_propagate(runner) -> None:
    with pytest.raises(ZeroDivisionError):
        runner(respond([sse(STARTED)], fail=ZeroDivisionError()))


@pytest.mark.parametrize("runner", RUNNERS)
def test_decode_errors_propagate(runner) -> None:
    with pytest.raises(DecodeError):
        runner(respond(sse(STARTED) + b"data: [1]\n\n"))


# -- run lifecycle ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "events",
    [
        RUN,
        [STARTED, TEXT, ERRORED],
        [ERRORED],
        [STARTED, FINISHED, ERRORED],  # the reference allows RUN_ERROR after RUN_FINISHED
        [STARTED, FINISHED, STARTED, TEXT, FINISHED],  # two runs in one stream
        [STARTED, ERRORED, STARTED, FINISHED],
    ],
)
def test_valid_lifecycles(events) -> None:
    assert run_sync(respond(sse(*events))) == events


@pytest.mark.parametrize(
    ("events", "index", "reason"),
    [
        ([TEXT, FINISHED], 0, "first event must be RUN_STARTED"),
        ([FINISHED], 0, "first event must be RUN_STARTED"),
        ([STARTED, STARTED], 1, "RUN_STARTED while a run is active"),
        ([STARTED, FINISHED, TEXT], 2, "after RUN_FINISHED"),
        ([STARTED, FINISHED, FINISHED], 2, "after RUN_FINISHED"),
        ([STARTED, ERRORED, TEXT], 2, "after RUN_ERROR"),
        ([STARTED, ERRORED, ERRORED], 2, "after RUN_ERROR"),
    ],
)
def test_sequence_errors(events, index, reason) -> None:
    got: list[dict[str, Any]] = []
    with (
        httpx.Client(transport=httpx.MockTransport(respond(sse(*events)))) as client,
        pytest.raises(SequenceError, match=reason) as info,
    ):
        got.extend(run_agent(client, URL, INPUT))
    assert info.value.index == index
    assert got == events[:index]  # the offending event is not yielded


def test_unchecked_sequence_still_needs_a_terminal_event() -> None:
    assert run_sync(respond(sse(TEXT, FINISHED)), check_sequence=False) == [TEXT, FINISHED]
    with pytest.raises(IncompleteRun):
        run_sync(respond(sse(STARTED, FINISHED, TEXT)), check_sequence=False)


def test_resumed_run_starts_anywhere_but_must_end() -> None:
    assert run_sync(respond(sse(TEXT, FINISHED)), last_event_id="3") == [TEXT, FINISHED]
    with pytest.raises(IncompleteRun):
        run_sync(respond(sse(TEXT)), last_event_id="3")
    with pytest.raises(IncompleteRun):
        run_sync(respond(b""), last_event_id="3")


def test_decoder_options_pass_through() -> None:
    from agui_wire import LimitExceeded

    with pytest.raises(LimitExceeded):
        run_sync(respond(sse(*RUN)), max_events=2)


# -- leaving early -------------------------------------------------------------------------


def test_leaving_early_closes_the_response() -> None:
    closed: list[bool] = []

    class Closing(Chunks):
        def close(self) -> None:
            closed.append(True)

    def handler(request: httpx.Request) -> httpx.Response:
        body = [encode_sse(e) for e in RUN]
        return httpx.Response(200, headers={"content-type": SSE_MEDIA_TYPE}, stream=Closing(body))

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        for _event in run_agent(client, URL, INPUT):
            break
        assert closed == [True]


# -- against the example app, in process ------------------------------------------------------


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE, DEFAULT_ACCEPT])
def test_example_app_through_asgi_transport(accept) -> None:
    from examples.script import scripted_run
    from examples.server import app

    async def main() -> list[dict[str, Any]]:
        transport = httpx.ASGITransport(app=app)
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://example") as client,
            contextlib.aclosing(
                arun_agent(client, "/agent?delay=0", {"threadId": "a", "runId": "b"}, accept=accept)
            ) as stream,
        ):
            return [e async for e in stream]

    assert asyncio.run(main()) == scripted_run("a", "b")


# -- reconnect and resume (responses of agui_wire.redis.RunStore) -----------------------


class Resumable:
    """A server that resumes by position: each request gets the run after its
    ``Last-Event-ID`` (the response says where with ``agui-after``), and the
    responses listed in ``breaks`` break off after that many events."""

    def __init__(
        self, encode: Callable[..., bytes], breaks: list[int], snapshot: int = 0, gen: str = ""
    ) -> None:
        self.encode = encode
        self.breaks = list(breaks)
        self.snapshot = snapshot
        self.gen = gen  # ids "n-<gen>", as RunStore gives them (the run's generation)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        asked = request.headers.get("last-event-id") or "0"
        index, _, gen = asked.partition("-")
        assert gen == (self.gen if index != "0" else gen)  # the generation comes back
        after = int(index)
        tag = f"-{self.gen}" if self.gen else ""
        rest = RUN[after:]
        fail = None
        if self.breaks:
            rest = rest[: self.breaks.pop(0)]
            fail = httpx.ReadError("connection reset")
        if self.encode is proto or self.encode is proto_beating:
            body = self.encode(*rest)
            content_type = PROTO_MEDIA_TYPE
        else:
            body = b"".join(encode_sse(e, id=f"{after + i}{tag}") for i, e in enumerate(rest, 1))
            content_type = SSE_MEDIA_TYPE
        headers = {
            "content-type": content_type,
            "agui-after": f"{after}{tag}",
            "agui-snapshot-events": str(self.snapshot if not after else 0),
        }
        return httpx.Response(200, headers=headers, stream=Chunks([body], fail))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("encode", [sse, proto], ids=["sse", "proto"])
def test_a_broken_resumable_stream_is_resumed(runner, encode) -> None:
    server = Resumable(encode, breaks=[2, 0, 1])
    assert runner(server, backoff=0) == RUN  # every event once, in order
    ids = [r.headers.get("last-event-id") for r in server.requests]
    assert ids == [None, "2", "2", "3"]


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("encode", [sse, proto], ids=["sse", "proto"])
def test_a_resume_sends_the_runs_generation_back(runner, encode) -> None:
    """Ids ``n-<gen>`` (agui_wire.redis): the index counts on, the generation is sent
    back as given, so a run replaced meanwhile is refused rather than spliced."""
    server = Resumable(encode, breaks=[2, 0, 1], gen="1234")
    assert runner(server, backoff=0) == RUN
    ids = [r.headers.get("last-event-id") for r in server.requests]
    assert ids == [None, "2-1234", "2-1234", "3-1234"]
    for bad in ("2-", "-3", "2-x", "²-3"):
        server = Resumable(encode, breaks=[2])
        server.gen = ""
        seen: list[httpx.Request] = []

        def handler(
            request: httpx.Request, bad: str = bad, server: Resumable = server, seen: list = seen
        ) -> httpx.Response:
            seen.append(request)
            response = server(request)
            response.headers["agui-after"] = bad
            return response

        with pytest.raises(IncompleteRun):  # not a position: not resumed
            runner(handler, backoff=0)
        assert len(seen) == 1


@pytest.mark.parametrize("runner", RUNNERS)
def test_binary_keepalives_are_dropped_and_not_counted(runner) -> None:
    """A keep-alive is transport, not an event of the run: not yielded, and not
    counted towards the position a reconnect resumes after."""
    server = Resumable(proto_beating, breaks=[2, 0, 1])
    assert runner(server, backoff=0) == RUN
    ids = [r.headers.get("last-event-id") for r in server.requests]
    assert ids == [None, "2", "2", "3"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_reconnects_are_bounded(runner) -> None:
    server = Resumable(sse, breaks=[2] + [0] * 10)
    with pytest.raises(IncompleteRun) as info:
        runner(server, backoff=0, retries=3)
    assert len(server.requests) == 1 + 3
    assert info.value.last_event_id == "2"  # where a caller could resume later


def test_backoff_doubles_up_to_the_cap(monkeypatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr("agui_wire.client.time.sleep", waits.append)
    server = Resumable(sse, breaks=[2] + [0] * 10)
    with pytest.raises(IncompleteRun):
        run_sync(server, backoff=1.0, retries=5)
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0]


@pytest.mark.parametrize("runner", RUNNERS)
def test_unavailable_on_reconnect_is_retried(runner) -> None:
    server = Resumable(sse, breaks=[2])
    answers = iter([None, 503, 502, None])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(answers)
        if status is not None:
            return httpx.Response(status, text="restarting")
        return server(request)

    assert runner(handler, backoff=0) == RUN


@pytest.mark.parametrize("runner", RUNNERS)
def test_servers_that_do_not_say_where_they_stand_are_not_re_requested(runner) -> None:
    seen: list[httpx.Request] = []
    with pytest.raises(IncompleteRun):
        runner(respond(sse(*RUN[:2]), fail=httpx.ReadError("reset"), seen=seen), backoff=0)
    assert len(seen) == 1


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_break_inside_a_compact_prefix_is_not_resumed(runner) -> None:
    server = Resumable(sse, breaks=[2], snapshot=3)
    with pytest.raises(IncompleteRun):
        runner(server, backoff=0)
    assert len(server.requests) == 1
