"""ag-ui-strands serving a Strands agent whose model is scripted (no network).

The model streams a tool call (arguments in pieces), the tool runs, then the
model streams its answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ag_ui_strands import StrandsAgent, create_strands_app
from strands import Agent, tool
from strands.models.model import Model


class ScriptedModel(Model):
    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        after_tool = (
            any("toolResult" in block for block in messages[-1]["content"]) if messages else False
        )
        yield {"messageStart": {"role": "assistant"}}
        if after_tool:
            yield {"contentBlockStart": {"start": {}}}
            for piece in ("It is ", "21 °C ", "in Zürich."):
                yield {"contentBlockDelta": {"delta": {"text": piece}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            yield {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": "call_w", "name": "get_weather"}}
                }
            }
            for piece in ('{"city": ', '"Zürich"}'):
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": piece}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1},
            }
        }


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"21 °C in {city}"


agent = StrandsAgent(
    agent=Agent(model=ScriptedModel(), tools=[get_weather], callback_handler=None),
    name="weather",
)
app = create_strands_app(agent, "/agent")
