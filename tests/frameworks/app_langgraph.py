"""ag-ui-langgraph serving a LangGraph graph with a scripted streaming chat model.

The model streams a tool call (arguments in pieces), the tool runs, then the
model streams its answer. The graph state holds an integer beyond 2**53 (a
nanosecond timestamp), which reaches the client in STATE_SNAPSHOT events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

BIG = 1_712_345_678_901_234_567  # ns since the epoch: beyond 2**53


class ScriptedChatModel(BaseChatModel):
    """First turn: a get_weather tool call; after the tool: a streamed answer."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _chunks(self, messages: list[BaseMessage]) -> list[AIMessageChunk]:
        if isinstance(messages[-1], ToolMessage):
            pieces = ("It is ", "21 °C ", "in Zürich.")
            return [AIMessageChunk(content=p, id="ai-2") for p in pieces]
        return [
            AIMessageChunk(
                content="",
                id="ai-1",
                tool_call_chunks=[
                    tool_call_chunk(name="get_weather", args='{"city": ', id="call_w", index=0)
                ],
            ),
            AIMessageChunk(
                content="",
                id="ai-1",
                tool_call_chunks=[tool_call_chunk(args='"Zürich"}', index=0)],
            ),
        ]

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages):
            generation = ChatGenerationChunk(message=chunk)
            if run_manager is not None:
                run_manager.on_llm_new_token(str(chunk.content), chunk=generation)
            yield generation

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        merged = None
        for generation in self._stream(messages, stop, run_manager, **kwargs):
            merged = generation if merged is None else merged + generation
        assert merged is not None
        message = AIMessage(
            content=merged.message.content,
            id=merged.message.id,
            tool_calls=getattr(merged.message, "tool_calls", []),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"21 °C in {city}"


class State(MessagesState):
    observed_ns: int


model = ScriptedChatModel()


async def call_model(state: State) -> dict[str, Any]:
    response = await model.ainvoke(state["messages"])
    return {"messages": [response], "observed_ns": BIG}


def route(state: State) -> str:
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else END


builder = StateGraph(State)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode([get_weather]))
builder.add_edge(START, "model")
builder.add_conditional_edges("model", route, ["tools", END])
builder.add_edge("tools", "model")
graph = builder.compile(checkpointer=MemorySaver())

app = FastAPI()
add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="weather", graph=graph), "/agent")
