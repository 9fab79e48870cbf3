"""A LangGraph graph served by agui: `agui serve langgraph_agent:agent --app-dir examples`.

A chat node and a tool node, compiled with a checkpointer: one tool (`get_weather`), one state
update (each lookup is counted in the graph's state, which ag-ui-langgraph sends to the client as
STATE_SNAPSHOT) and one approval (`book_trip` asks the user with LangGraph's `interrupt()`: the
run ends with an AG-UI interrupt, and the next run's resume answers it). ag-ui-langgraph's
`LangGraphAgent` turns the graph's runs into AG-UI events; `AgUiProtocolAgent` makes it an agui
agent.

The model is scripted, offline and deterministic: asked about the weather in a city it calls
get_weather, asked to book a trip to a city it calls book_trip, given a tool's result it answers
with it, and asked anything else it recalls the city asked about before (so a second turn shows
it was handed the first). For a real model, put one of LangChain's chat models in its place:
`init_chat_model("openai:gpt-5").bind_tools(tools)` (`from langchain.chat_models import
init_chat_model`, pip install langchain-openai, and OPENAI_API_KEY in the environment).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Annotated, Any

from ag_ui_langgraph import LangGraphAgent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.outputs.chat_generation import merge_chat_generation_chunks
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
from langgraph.types import Command, interrupt

from agui.adapters import AgUiProtocolAgent


class Trip(MessagesState):
    """The graph's state: the messages, and the AG-UI shared state the client sees."""

    lookups: int
    last_city: str | None


@tool
def get_weather(
    city: str,
    state: Annotated[dict[str, Any], InjectedState],
    tool_call_id: Annotated[str, InjectedToolCallId],
) -> Command[Any]:
    """The weather in a city; counts the lookup in the shared state."""
    if city == "Atlantis":  # the weather database of the lost city is down
        raise RuntimeError("database unavailable: password=hunter2-db-password")
    # The tool's result and the state update, in one step of the graph.
    return Command(
        update={
            "lookups": state.get("lookups", 0) + 1,
            "last_city": city,
            "messages": [ToolMessage(f"It is sunny in {city}.", tool_call_id=tool_call_id)],
        }
    )


@tool
def book_trip(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Book a trip to a city, once the user approves it."""
    # The run stops here until the client answers; the answer is what interrupt() returns.
    answer = interrupt(
        {
            "reason": "tool_call",
            "toolCallId": tool_call_id,
            "message": f"Book a trip to {city}?",
            "responseSchema": {
                "type": "object",
                "properties": {"approved": {"type": "boolean"}},
                "required": ["approved"],
            },
        }
    )
    if isinstance(answer, dict) and answer.get("approved") is True:
        return f"Your trip to {city} is booked."
    return f"The trip to {city} was not booked."


tools = [get_weather, book_trip]


def reply(messages: Sequence[BaseMessage]) -> Iterator[AIMessageChunk]:
    """The scripted model's answer to the conversation so far, streamed as a real model does: a
    text word by word, a tool call as its name, then its arguments."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        for word in re.findall(r"\S+\s*", str(last.content)):
            yield AIMessageChunk(content=word)
        return
    asked = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
    city = re.search(r"\b(?:in|to) ([A-Z]\w+)", asked[-1])
    if city:
        name = "book_trip" if "book" in asked[-1].lower() else "get_weather"
        call = tool_call_chunk(name=name, args="", id=f"call-{len(messages)}", index=0)
        yield AIMessageChunk(content="", tool_call_chunks=[call])
        arguments = tool_call_chunk(args=json.dumps({"city": city[1]}), index=0)
        yield AIMessageChunk(content="", tool_call_chunks=[arguments])
        return
    cities = [c for text in asked[:-1] for c in re.findall(r"\bin ([A-Z]\w+)", text)]
    yield AIMessageChunk(
        content=f"You asked about {cities[-1]}." if cities else "Ask me about a city's weather."
    )


class ScriptedChatModel(BaseChatModel):
    """An offline chat model that plays `reply`."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self  # the script knows its tools

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in reply(messages):
            yield ChatGenerationChunk(message=chunk)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        merged = merge_chat_generation_chunks(list(self._stream(messages)))
        assert merged is not None
        return ChatResult(generations=[merged])


model = ScriptedChatModel().bind_tools(tools)


async def chat(state: Trip) -> dict[str, Any]:
    return {"messages": [await model.ainvoke(state["messages"])]}


builder = StateGraph(Trip)
builder.add_node("chat", chat)
builder.add_node("tools", ToolNode(tools))
builder.add_edge(START, "chat")
builder.add_conditional_edges("chat", tools_condition)
builder.add_edge("tools", "chat")
# interrupt() needs a checkpointer: the paused run's state waits there for the resume.
graph = builder.compile(checkpointer=InMemorySaver())

# emit_interrupt_outcome: an interrupt ends the run with RUN_FINISHED's AG-UI interrupt outcome,
# answered by the next run's `resume` (ag-ui-langgraph's default is its own CUSTOM event only).
# emit_raw_events=False: no RAW copy of each of LangGraph's events (large, and kept by a store).
travel = LangGraphAgent(
    name="travel", graph=graph, emit_interrupt_outcome=True, emit_raw_events=False
)
agent = AgUiProtocolAgent(travel)
