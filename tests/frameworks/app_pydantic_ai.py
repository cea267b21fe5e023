"""pydantic-ai's AGUIAdapter with scripted FunctionModels (no network).

/agent: reasoning, then a tool call whose arguments stream in pieces; the tool
returns a value plus a state snapshot (holding an integer beyond 2**53) and a
custom event; then streamed text. /error: the model fails mid-stream;
/error-first: before its first token (a model call that fails at once).
/streaming: /agent's run through agui_wire's EventStreamResponse instead of the
adapter's StreamingResponse (streaming headers, SSE keep-alive; docs/integrations.md);
/streaming-error-first: /error-first's run that way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ag_ui.core import CustomEvent, EventType, StateSnapshotEvent
from pydantic_ai import Agent, ToolReturn
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingCalls,
    DeltaThinkingPart,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
)
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agui_wire.asgi import EventStreamResponse

BIG = 2**60 + 1


def _after_tool(messages: list[ModelMessage]) -> bool:
    last = messages[-1]
    return isinstance(last, ModelRequest) and any(
        isinstance(part, ToolReturnPart) for part in last.parts
    )


async def scripted(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls | DeltaThinkingCalls]:
    if _after_tool(messages):
        for piece in ("It is ", "21 °C ", "in Zürich."):
            yield piece
        return
    yield {0: DeltaThinkingPart(content="The user wants ")}
    yield {0: DeltaThinkingPart(content="the weather.")}
    yield {1: DeltaToolCall(name="get_weather", json_args='{"city": ', tool_call_id="call_w")}
    yield {1: DeltaToolCall(json_args='"Zürich"}')}


async def failing(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls | DeltaThinkingCalls]:
    yield "Starting"
    raise RuntimeError("the model broke")


agent = Agent(FunctionModel(stream_function=scripted))


@agent.tool_plain
def get_weather(city: str) -> ToolReturn:
    """Weather for a city."""
    return ToolReturn(
        return_value={"city": city, "celsius": 21},
        metadata=[
            StateSnapshotEvent(
                type=EventType.STATE_SNAPSHOT, snapshot={"city": city, "observed_ns": BIG}
            ),
            CustomEvent(type=EventType.CUSTOM, name="weather", value={"celsius": 21}),
        ],
    )


async def failing_at_once(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls | DeltaThinkingCalls]:
    raise RuntimeError("the model is unreachable")
    yield ""  # an async generator that fails before its first token


failing_agent = Agent(FunctionModel(stream_function=failing))
failing_at_once_agent = Agent(FunctionModel(stream_function=failing_at_once))


async def run(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


async def run_failing(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=failing_agent)


async def run_failing_at_once(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=failing_at_once_agent)


async def run_streaming_failing_at_once(request: Request) -> Response:
    adapter = await AGUIAdapter.from_request(request, agent=failing_at_once_agent)
    return EventStreamResponse(adapter.run_stream(), request, lossy_numbers=True)


async def run_streaming(request: Request) -> Response:
    adapter = await AGUIAdapter.from_request(request, agent=agent)
    return EventStreamResponse(adapter.run_stream(), request, lossy_numbers=True)


app = Starlette(
    routes=[
        Route("/agent", run, methods=["POST"]),
        Route("/error", run_failing, methods=["POST"]),
        Route("/error-first", run_failing_at_once, methods=["POST"]),
        Route("/streaming-error-first", run_streaming_failing_at_once, methods=["POST"]),
        Route("/streaming", run_streaming, methods=["POST"]),
    ]
)
