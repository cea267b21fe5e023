"""The example app under a real uvicorn, consumed by the real ``@ag-ui/client``
1.0.0 ``HttpAgent`` in Node (tests/interop/http_agent.cjs), over real HTTP.

* ``agent.run()`` (the transport layer) receives every scripted event, equal to
  the script, over SSE and over protobuf (the agent's Accept header overridden;
  it picks the binary parser only for the exact content type, checked here).
* ``agent.runAgent()`` (the whole client pipeline: schema enforcement,
  ``verifyEvents``, message and state application) completes and ends with the
  script's state and messages.
* A producer failure reaches it as ``RUN_ERROR``; aborting the run closes the
  server's generator.
"""

from __future__ import annotations

import uuid

import pytest

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from examples.script import FINAL_STATE, scripted_run

pytestmark = pytest.mark.interop

TRANSPORTS = [
    pytest.param(None, SSE_MEDIA_TYPE, id="default-accept-sse"),
    pytest.param(PROTO_MEDIA_TYPE, PROTO_MEDIA_TYPE, id="proto"),
    pytest.param(
        f"{PROTO_MEDIA_TYPE}, {SSE_MEDIA_TYPE};q=0.5", PROTO_MEDIA_TYPE, id="prefer-proto"
    ),
]


def new_run_id() -> str:
    return f"ts-{uuid.uuid4()}"


@pytest.mark.parametrize(("accept", "content_type"), TRANSPORTS)
def test_http_agent_receives_every_event(live_server, ts_agent, accept, content_type) -> None:
    run_id = new_run_id()
    run = ts_agent.run(f"{live_server.url}/agent", accept=accept, run_id=run_id)
    assert run.error is None
    assert run.completed
    assert run.warnings == []
    assert run.status == 200
    assert run.content_type == content_type
    assert run.accept == (accept or SSE_MEDIA_TYPE)  # the reference's own default
    assert run.events == scripted_run("thread-1", run_id)


@pytest.mark.parametrize(("accept", "content_type"), TRANSPORTS[:2])
def test_http_agent_pipeline_applies_the_run(live_server, ts_agent, accept, content_type) -> None:
    run_id = new_run_id()
    run = ts_agent.run(
        f"{live_server.url}/agent?delay=0.002", accept=accept, run_id=run_id, mode="pipeline"
    )
    assert run.error is None
    assert run.completed
    assert run.content_type == content_type
    assert run.events == scripted_run("thread-1", run_id)
    assert run.extra["state"] == FINAL_STATE
    new = {m["id"]: m for m in run.extra["newMessages"]}
    assert new["msg-1"]["content"] == "Let me check the weather in Zürich ☀️…"
    assert new["msg-1"]["toolCalls"] == [
        {
            "id": "call-1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Zürich", "unit": "C"}'},
        }
    ]
    assert new["tool-1"]["content"] == '{"temperature": 21.5, "sky": "clear"}'
    assert new["msg-2"]["content"] == "It is 21.5 °C and clear in Zürich."
    assert new["reasoning-1"]["content"] == "The user wants today's weather: call get_weather."


@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_http_agent_learns_the_run_failed(live_server, ts_agent, accept) -> None:
    run_id = new_run_id()
    run = ts_agent.run(f"{live_server.url}/agent?fail_after=4", accept=accept, run_id=run_id)
    assert run.error is None
    assert run.completed
    assert run.events[:4] == scripted_run("thread-1", run_id)[:4]
    assert run.events[4:] == [
        {
            "type": "RUN_ERROR",
            "message": "the agent failed while producing events",
            "code": "INTERNAL_ERROR",
        }
    ]


@pytest.mark.parametrize("mode", ["raw", "pipeline"])
@pytest.mark.parametrize("accept", [SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE])
def test_http_agent_abort_closes_the_server_generator(live_server, ts_agent, accept, mode) -> None:
    run_id = new_run_id()
    run = ts_agent.run(
        f"{live_server.url}/agent?delay=0.05",
        accept=accept,
        run_id=run_id,
        mode=mode,
        abort_after=3,
    )
    assert run.extra["aborted"]
    assert run.events[:3] == scripted_run("thread-1", run_id)[:3]
    record = live_server.wait_status(run_id, "cancelled", timeout=3)
    assert record["produced"] < len(scripted_run())
