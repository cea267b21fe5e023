"""ag-ui-adk serving an ADK ``LlmAgent`` whose model is scripted (no network).

The model (a ``BaseLlm`` yielding scripted ``LlmResponse``s) streams a text
fragment and then a tool call; the tool writes a nanosecond timestamp (beyond
2**53) into the session state, which reaches the client in STATE_DELTA and
STATE_SNAPSHOT events; then the model streams its answer in pieces.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import ToolContext
from google.genai import types

BIG = 1_712_345_678_901_234_567  # ns since the epoch: beyond 2**53


def _response(*parts: types.Part, partial: bool) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), partial=partial)


class ScriptedLlm(BaseLlm):
    """First turn: a text fragment, then a get_weather call; after the tool: an answer."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        if any(part.function_response for part in last.parts or ()):
            pieces = ("It is ", "21 °C ", "in Zürich.")
            for piece in pieces:
                yield _response(types.Part(text=piece), partial=True)
            yield _response(types.Part(text="".join(pieces)), partial=False)
            return
        call = types.FunctionCall(id="call_w", name="get_weather", args={"city": "Zürich"})
        yield _response(types.Part(text="Let me check."), partial=True)
        yield _response(
            types.Part(text="Let me check."), types.Part(function_call=call), partial=False
        )


def get_weather(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """Weather for a city."""
    tool_context.state["observed_ns"] = BIG
    return {"city": city, "celsius": 21}


agent = ADKAgent(
    adk_agent=LlmAgent(name="weather", model=ScriptedLlm(), tools=[get_weather]),
    app_name="weather",
    user_id="user",
)
app = FastAPI()
add_adk_fastapi_endpoint(app, agent, path="/agent")
