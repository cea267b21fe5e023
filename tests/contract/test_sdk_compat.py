"""A server written against the official Python SDK (PyPI ag-ui-protocol 1.0.0)
works unchanged with agui_wire but for the import, and gains the binary transport."""

from __future__ import annotations

import textwrap
import types
from typing import Any

import pytest

pytest.importorskip("ag_ui.core")
starlette = pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

import agui_wire  # noqa: E402

# A typical AG-UI endpoint, as the SDK's documentation writes it.
# ruff: noqa: E501
SERVER = textwrap.dedent(
    """
    from ag_ui.core import (
        EventType, RunStartedEvent, RunFinishedEvent, TextMessageStartEvent,
        TextMessageContentEvent, TextMessageEndEvent, StateSnapshotEvent,
        ToolCallStartEvent, ToolCallArgsEvent, ToolCallEndEvent, MessagesSnapshotEvent,
        UserMessage, AssistantMessage, ToolCall, FunctionCall,
    )
    {IMPORT}
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def agent(request):
        encoder = EventEncoder(accept=request.headers.get("accept"))

        async def events():
            yield encoder.encode(RunStartedEvent(type=EventType.RUN_STARTED, thread_id="t1", run_id="r1"))
            yield encoder.encode(StateSnapshotEvent(snapshot={"count": 1, "items": [None, 2.5]}))
            yield encoder.encode(TextMessageStartEvent(message_id="m1", role="assistant"))
            for word in ["Hello", ", ", "world"]:
                yield encoder.encode(TextMessageContentEvent(message_id="m1", delta=word))
            yield encoder.encode(TextMessageEndEvent(message_id="m1"))
            yield encoder.encode(ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="m1"))
            yield encoder.encode(ToolCallArgsEvent(tool_call_id="c1", delta='{"q":"x"}'))
            yield encoder.encode(ToolCallEndEvent(tool_call_id="c1"))
            yield encoder.encode(MessagesSnapshotEvent(messages=[
                UserMessage(id="u1", content="hi"),
                AssistantMessage(id="m1", content="Hello, world", tool_calls=[
                    ToolCall(id="c1", function=FunctionCall(name="search", arguments='{"q":"x"}'))]),
            ]))
            yield encoder.encode(RunFinishedEvent(type=EventType.RUN_FINISHED, thread_id="t1", run_id="r1"))

        return StreamingResponse(events(), media_type=encoder.get_content_type())

    app = Starlette(routes=[Route("/agent", agent, methods=["POST"])])
    """
)


def server(import_line: str) -> Any:
    module = types.ModuleType("sdk_server")
    exec(SERVER.replace("{IMPORT}", import_line), module.__dict__)
    return module.app


def run(app: Any, accept: str | None) -> tuple[str, list[dict[str, Any]]]:
    headers = {"accept": accept} if accept else {}
    with TestClient(app) as client:
        response = client.post("/agent", json={}, headers=headers)
    content_type = response.headers["content-type"].split(";")[0]
    return content_type, agui_wire.decode(response.content, content_type)


def test_switching_the_import_keeps_the_stream_and_adds_binary() -> None:
    sdk = server("from ag_ui.encoder import EventEncoder")
    ours = server("from agui_wire import EventEncoder")
    sdk_type, sdk_events = run(sdk, "text/event-stream")
    assert sdk_type == "text/event-stream"
    assert len(sdk_events) == 12
    assert run(ours, "text/event-stream") == (sdk_type, sdk_events)
    assert run(ours, None) == (sdk_type, sdk_events)
    # the SDK ignores Accept; we honour it
    assert run(sdk, agui_wire.PROTO_MEDIA_TYPE)[0] == "text/event-stream"
    proto_type, proto_events = run(ours, agui_wire.PROTO_MEDIA_TYPE)
    assert proto_type == agui_wire.PROTO_MEDIA_TYPE
    assert proto_events == [agui_wire.normalize(e) for e in sdk_events]


def test_pydantic_events_encode_like_their_dicts() -> None:
    from ag_ui.core import StateDeltaEvent, TextMessageContentEvent

    for model in (
        TextMessageContentEvent(message_id="m", delta="x", timestamp=5),
        StateDeltaEvent(delta=[{"op": "add", "path": "/a", "value": None}]),
    ):
        as_dict = model.model_dump(mode="json", by_alias=True)
        assert agui_wire.encode_proto(model) == agui_wire.encode_proto(as_dict)
        assert agui_wire.encode_sse(model) == agui_wire.encode_sse(as_dict)
    encoder = agui_wire.EventEncoder(agui_wire.PROTO_MEDIA_TYPE)
    model = TextMessageContentEvent(message_id="m", delta="x")
    assert encoder.encode_many([model, model]) == encoder.encode(model) * 2
