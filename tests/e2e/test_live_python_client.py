"""The example app under a real uvicorn, consumed by agui_wire's Python client.

Over both transports (forced through Accept) the client gets exactly the
scripted events; the wire carries the streaming headers; events arrive as they
are produced; a client leaving mid-stream closes the server's generator; ids,
resume, keep-alive, producer failure and 406 behave as docs/serving.md says.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import httpx
import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, decode, normalize
from agui_wire.client import DEFAULT_ACCEPT, AgentHTTPError, arun_agent, run_agent
from examples.script import scripted_run

TRANSPORTS = [pytest.param(SSE_MEDIA_TYPE, id="sse"), pytest.param(PROTO_MEDIA_TYPE, id="proto")]


def run_input(run_id: str | None = None) -> dict[str, object]:
    return {
        "threadId": "thread-e2e",
        "runId": run_id or str(uuid.uuid4()),
        "messages": [{"id": "u1", "role": "user", "content": "weather?"}],
        "tools": [],
        "context": [],
    }


def test_script_reads_back_identically_over_both_transports() -> None:
    # The premise of comparing with ==: the binary round trip changes nothing.
    events = scripted_run()
    assert all(normalize(e) == e for e in events)


@pytest.mark.parametrize("accept", TRANSPORTS)
def test_sync_client_gets_the_script(live_server, accept) -> None:
    body = run_input()
    with httpx.Client(timeout=10) as client:
        events = list(run_agent(client, f"{live_server.url}/agent", body, accept=accept))
    assert events == scripted_run(body["threadId"], body["runId"])
    assert live_server.wait_status(body["runId"], "finished")["produced"] == len(events)


@pytest.mark.parametrize("accept", TRANSPORTS)
def test_async_client_gets_the_script(live_server, accept) -> None:
    body = run_input()

    async def main() -> list[dict[str, object]]:
        async with httpx.AsyncClient(timeout=10) as client:
            return [
                e async for e in arun_agent(client, f"{live_server.url}/agent", body, accept=accept)
            ]

    assert asyncio.run(main()) == scripted_run(body["threadId"], body["runId"])


def test_pydantic_run_input(live_server) -> None:
    from ag_ui.core import RunAgentInput, UserMessage

    body = RunAgentInput(
        thread_id="thread-pyd",
        run_id="run-pyd",
        state={},
        messages=[UserMessage(id="u1", role="user", content="hi")],
        tools=[],
        context=[],
        forwarded_props={},
    )
    with httpx.Client(timeout=10) as client:
        events = list(run_agent(client, f"{live_server.url}/agent", body))
    assert events == scripted_run("thread-pyd", "run-pyd")


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (DEFAULT_ACCEPT, PROTO_MEDIA_TYPE),
        (SSE_MEDIA_TYPE, SSE_MEDIA_TYPE),
        (PROTO_MEDIA_TYPE, PROTO_MEDIA_TYPE),
        ("*/*", SSE_MEDIA_TYPE),
        (None, SSE_MEDIA_TYPE),
    ],
)
def test_wire_headers(live_server, accept, expected) -> None:
    headers = {} if accept is None else {"accept": accept}
    with httpx.Client(timeout=10) as client:
        r = client.post(f"{live_server.url}/agent", json=run_input(), headers=headers)
    assert r.status_code == 200
    assert r.http_version == "HTTP/1.1"
    assert r.headers["content-type"] == expected  # exactly: the TS client compares with ===
    assert r.headers["cache-control"] == "no-cache, no-transform"
    assert r.headers["x-accel-buffering"] == "no"
    assert r.headers["connection"] == "keep-alive"
    assert r.headers["vary"] == "accept"
    assert r.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in r.headers
    assert len(decode(r.content, r.headers["content-type"])) == len(scripted_run())


@pytest.mark.parametrize("accept", TRANSPORTS)
def test_events_arrive_as_produced(live_server, accept) -> None:
    """Each event is on the wire when it is produced, not when the run ends."""
    delay = 0.04
    arrivals = []
    with httpx.Client(timeout=10) as client:
        start = time.monotonic()
        for _ in run_agent(
            client, f"{live_server.url}/agent?delay={delay}", run_input(), accept=accept
        ):
            arrivals.append(time.monotonic() - start)
    n = len(arrivals)
    assert n == len(scripted_run())
    # Buffered, everything would arrive at ~n * delay; streamed, event i at ~(i + 1) * delay.
    assert arrivals[0] < n * delay / 3
    assert arrivals[n // 2] < 0.8 * n * delay
    late = [i for i, t in enumerate(arrivals) if t < (i + 1) * delay * 0.9]
    assert not late, f"events {late} arrived before they were produced?"


@pytest.mark.parametrize("accept", TRANSPORTS)
def test_client_leaving_closes_the_generator(live_server, accept) -> None:
    body = run_input()
    with httpx.Client(timeout=10) as client:
        for i, _event in enumerate(
            run_agent(client, f"{live_server.url}/agent?delay=0.05", body, accept=accept)
        ):
            if i == 2:
                break  # the generator's cleanup closes the response and the connection
    record = live_server.wait_status(body["runId"], "cancelled", timeout=3)
    assert 3 <= record["produced"] < len(scripted_run())


def test_async_client_leaving_closes_the_generator(live_server) -> None:
    body = run_input()

    async def main() -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            url = f"{live_server.url}/agent?delay=0.05"
            async with contextlib.aclosing(
                arun_agent(client, url, body, accept=PROTO_MEDIA_TYPE)
            ) as events:
                async for event in events:
                    if event["type"] == "STEP_STARTED":
                        break

    asyncio.run(main())
    live_server.wait_status(body["runId"], "cancelled", timeout=3)


def test_disconnect_while_the_producer_is_idle(live_server) -> None:
    """The client leaves while the generator sleeps: only http.disconnect can tell."""
    body = run_input()
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST",
            f"{live_server.url}/agent?delay=5",
            json=body,
            headers={"accept": SSE_MEDIA_TYPE},
        ) as r,
    ):
        assert r.status_code == 200
        live_server.wait_status(body["runId"], "running")
    t0 = time.monotonic()
    live_server.wait_status(body["runId"], "cancelled", timeout=3)
    assert time.monotonic() - t0 < 2  # not after the 5 s sleep


def test_ids_and_resume(live_server) -> None:
    body = run_input()
    script = scripted_run(body["threadId"], body["runId"])
    with httpx.Client(timeout=10) as client:
        full = client.post(f"{live_server.url}/agent", json=body).text
        ids = [line[4:] for line in full.split("\n") if line.startswith("id: ")]
        assert ids == [str(i) for i in range(1, len(script) + 1)]

        resumed = client.post(
            f"{live_server.url}/agent", json=body, headers={"last-event-id": "10"}
        ).text
        assert resumed.startswith("id: 11\n")
        events = list(run_agent(client, f"{live_server.url}/agent", body, last_event_id="10"))
        assert events == script[10:]
        bad = client.post(f"{live_server.url}/agent", json=body, headers={"last-event-id": "x"})
        assert bad.status_code == 400


def test_keepalive_comments_while_idle(live_server) -> None:
    seen = b""
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST",
            f"{live_server.url}/agent?delay=0.35&keepalive=0.1",
            json=run_input(),
            headers={"accept": SSE_MEDIA_TYPE},
        ) as r,
    ):
        for chunk in r.iter_bytes():
            seen += chunk
            if seen.count(b"data: ") >= 3:
                break
    # ~3 keep-alives in each 0.35 s gap before an event.
    assert seen.count(b": keep-alive\n\n") >= 6
    assert [e["type"] for e in decode(seen, SSE_MEDIA_TYPE)] == [
        e["type"] for e in scripted_run()[:3]
    ]


def test_binary_stream_stays_silent_while_idle(live_server) -> None:
    chunks: list[tuple[float, bytes]] = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST",
            f"{live_server.url}/agent?delay=0.3&keepalive=0.05",
            json=run_input(),
            headers={"accept": PROTO_MEDIA_TYPE},
        ) as r,
    ):
        start = time.monotonic()
        for chunk in r.iter_bytes():
            chunks.append((time.monotonic() - start, chunk))
            if len(decode(b"".join(c for _, c in chunks), PROTO_MEDIA_TYPE)) >= 2:
                break
    # Only the frames themselves: two events, nothing in between.
    data = b"".join(c for _, c in chunks)
    assert len(decode(data, PROTO_MEDIA_TYPE)) == 2
    assert len(data) == sum(len(chunk) for _, chunk in chunks)


@pytest.mark.parametrize("accept", TRANSPORTS)
def test_producer_failure_reaches_the_client_as_run_error(live_server, accept) -> None:
    body = run_input()
    with httpx.Client(timeout=10) as client:
        events = list(
            run_agent(client, f"{live_server.url}/agent?fail_after=5", body, accept=accept)
        )
    assert events[:5] == scripted_run(body["threadId"], body["runId"])[:5]
    assert events[5:] == [
        {
            "type": "RUN_ERROR",
            "message": "the agent failed while producing events",
            "code": "INTERNAL_ERROR",
        }
    ]
    live_server.wait_status(body["runId"], "failed")


def test_not_acceptable(live_server) -> None:
    with httpx.Client(timeout=10) as client, pytest.raises(AgentHTTPError) as info:
        list(run_agent(client, f"{live_server.url}/agent", run_input(), accept="application/json"))
    assert info.value.status_code == 406
    assert SSE_MEDIA_TYPE in str(info.value)
    assert PROTO_MEDIA_TYPE in str(info.value)


def test_bad_request_is_a_clear_error(live_server) -> None:
    with httpx.Client(timeout=10) as client, pytest.raises(AgentHTTPError) as info:
        list(run_agent(client, f"{live_server.url}/agent", {"threadId": "t"}))
    assert info.value.status_code == 422
    assert "runId" in str(info.value)


def test_example_client_script(live_server) -> None:
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for flag in ("--sse", "--proto"):
        proc = subprocess.run(
            [
                sys.executable,
                "examples/client.py",
                f"{live_server.url}/agent",
                flag,
                "--run-id",
                "cli",
            ],
            cwd=root,
            capture_output=True,
            timeout=30,
            check=True,
        )
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        assert events == scripted_run("thread-1", "cli")
        assert b"33 events" in proc.stderr
