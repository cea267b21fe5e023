"""agent-framework-ag-ui serving an ``Agent`` whose chat client is scripted (no network).

The client streams a tool call; the tool answers with a state update holding a
nanosecond timestamp (beyond 2**53); then the client streams its answer in
pieces. Two routes run the same agent:

/agent: the framework's own endpoint (``add_agent_framework_fastapi_endpoint``),
which builds ``EventEncoder()`` without the request's Accept and declares
``text/event-stream`` itself, so it serves SSE whatever the client asks for.
/adapter: the adapter of docs/integrations.md: the framework's event stream
(``AgentFrameworkAgent.run``) served by agui_wire's ``EventStreamResponse``,
which negotiates from Accept.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    tool,
)
from agent_framework_ag_ui import (
    AgentFrameworkAgent,
    AGUIRequest,
    add_agent_framework_fastapi_endpoint,
    state_update,
)
from fastapi import FastAPI, Request

from agui_wire.asgi import EventStreamResponse

BIG = 1_712_345_678_901_234_567  # ns since the epoch: beyond 2**53


class ScriptedChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """First turn: a get_weather call; after the tool: a streamed answer."""

    def _updates(self, messages: Sequence[Message]) -> list[ChatResponseUpdate]:
        if any(content.type == "function_result" for content in messages[-1].contents):
            return [
                ChatResponseUpdate(
                    role="assistant", contents=[Content.from_text(piece)], message_id="ai-2"
                )
                for piece in ("It is ", "21 °C ", "in Zürich.")
            ]
        call = Content.from_function_call("call_w", "get_weather", arguments='{"city": "Zürich"}')
        return [ChatResponseUpdate(role="assistant", contents=[call], message_id="ai-1")]

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool = False,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        updates = self._updates(messages)
        if stream:

            async def pieces() -> AsyncIterator[ChatResponseUpdate]:
                for update in updates:
                    yield update

            return self._build_response_stream(pieces())

        async def whole() -> ChatResponse:
            return ChatResponse.from_updates(updates)

        return whole()


@tool
def get_weather(city: str) -> Content:
    """Weather for a city."""
    return state_update(f"21 °C in {city}", state={"city": city, "observed_ns": BIG})


agent = Agent(client=ScriptedChatClient(), tools=[get_weather], name="weather")
app = FastAPI()
add_agent_framework_fastapi_endpoint(app, agent, "/agent", single_user=True)

# The adapter (docs/integrations.md): the framework's runner, agui_wire's response.
runner = AgentFrameworkAgent(agent=agent)


@app.post("/adapter", response_model=None)
async def adapter(body: AGUIRequest, request: Request) -> EventStreamResponse:
    events = runner.run(body.model_dump(exclude_none=True))
    return EventStreamResponse(events, request, lossy_numbers=True)
