"""A LlamaIndex workflow served by agui.

    pip install 'agui-spec[server]' llama-index-protocols-ag-ui
    agui serve llama_index_example:agent --app-dir examples

llama-index-protocols-ag-ui's `AGUIChatWorkflow` (the workflow its AG-UI router serves) with two
backend tools and one frontend tool. get_weather reads the weather and records the city in the
AG-UI shared state (the workflow's "state", sent to the client as STATE_SNAPSHOT); book_trip
books a trip, but only after the user approves it: asked for a trip, the model first calls
approve_trip, a frontend tool, so the run ends with that call open for the client to answer; the
client's answer (a tool message, {"approved": true} or false) comes with the next run, which
books the trip or not. `LlamaIndexAgent` runs the workflow as the router does and makes it an
agui agent.

The model is LlamaIndex's own offline MockFunctionCallingLLM, scripted by `reply`: asked about
the weather in a city it calls get_weather, asked for a trip it calls approve_trip, given a
tool's result it answers with it, and asked anything else it says what it was asked first (so a
second turn shows it was handed the first). Asked about Atlantis, get_weather fails; the workflow
hands the exception's text to the model as the tool's result (and so to the client, in the
MESSAGES_SNAPSHOT), and the model says it could not get the weather. For a real model give the
workflow a real function-calling LLM instead, such as `OpenAI(model="gpt-5")` of
`llama_index.llms.openai` (pip install llama-index-llms-openai; it reads OPENAI_API_KEY).
"""

# No `from __future__ import annotations` here: LlamaIndex finds a tool's Context parameter by
# its annotation, which must be the class itself, not the string "Context".

import json
import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context
from llama_index.protocols.ag_ui.agent import AGUIChatWorkflow

from agui.adapters import LlamaIndexAgent


async def get_weather(ctx: Context, city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ConnectionError("database unavailable: password=hunter2-db-password")
    # The workflow keeps the AG-UI shared state in its store under "state", and sends it to
    # the client as STATE_SNAPSHOT after each tool call.
    state = await ctx.store.get("state", default={})
    await ctx.store.set("state", {**state, "last_city": city})
    return f"Sunny in {city}."


def book_trip(city: str) -> str:
    """Book a trip to a city (the model calls it once the user approved it)."""
    return f"Booked a trip to {city}."


def approve_trip(city: str) -> str:
    """Ask the user to approve a trip to a city: a frontend tool, answered by the client."""
    return ""  # not called for the client: the run ends with the call open


def calls(messages: Sequence[ChatMessage]) -> dict[str, tuple[str, dict[str, Any]]]:
    """The tool calls of the conversation by id: made in this run (ToolCallBlock) or handed back
    by the client (the AG-UI tool calls the workflow keeps in additional_kwargs)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        for call in message.additional_kwargs.get("ag_ui_tool_calls") or []:
            found[call["id"]] = (call["name"], json.loads(call["arguments"]))
        for block in message.blocks:
            if isinstance(block, ToolCallBlock):
                arguments = block.tool_kwargs
                if isinstance(arguments, str):
                    arguments = json.loads(arguments)
                found[block.tool_call_id or ""] = (block.tool_name, arguments)
    return found


def said(message: ChatMessage) -> str:
    """A message's text without the state the workflow puts in front of the last user message."""
    return re.sub(r"<state>[\s\S]*?</state>", "", message.content or "").strip()


def call(message_count: int, name: str, **arguments: Any) -> ChatMessage:
    call_id = f"call-{message_count}"  # the same conversation gets the same ids
    block = ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=arguments)
    return ChatMessage(role="assistant", blocks=[block])


def reply(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
    """The scripted model: what it says to the conversation so far."""
    last = messages[-1]
    result_of = last.additional_kwargs.get("tool_call_id")  # a tool's result
    if result_of is not None:
        name, arguments = calls(messages)[result_of]
        # said(): a result the client sent comes as a user message, so the state is put in front
        result = said(last)
        if name == "approve_trip":
            if json.loads(result).get("approved"):
                return call(len(messages), "book_trip", city=arguments["city"])
            return ChatMessage(role="assistant", content=f"No trip to {arguments['city']}.")
        if name == "get_weather" and not result.startswith("Sunny"):
            return ChatMessage(role="assistant", content="I could not get the weather.")
        return ChatMessage(role="assistant", content=result)
    text = said(last)
    if found := re.search(r"weather in (\w+)", text):
        return call(len(messages), "get_weather", city=found.group(1))
    if found := re.search(r"trip to (\w+)", text):
        return call(len(messages), "approve_trip", city=found.group(1))
    first = next(m for m in messages if m.role == "user")
    return ChatMessage(role="assistant", content=f"You first asked: {said(first)}")


async def workflow() -> AGUIChatWorkflow:
    """A fresh workflow for each run, as the AG-UI router makes one per request."""
    return AGUIChatWorkflow(
        llm=MockFunctionCallingLLM(response_generator=reply),
        backend_tools=[get_weather, book_trip],
        frontend_tools=[approve_trip],
    )


agent = LlamaIndexAgent(workflow)
