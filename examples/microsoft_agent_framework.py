"""A Microsoft Agent Framework agent served by agui.

    pip install 'agui-spec[server]' agent-framework-ag-ui
    agui serve microsoft_agent_framework:agent --app-dir examples

An `agent_framework.Agent` with a tool that reads the weather (and records the city in the AG-UI
shared state, so the client gets a STATE_SNAPSHOT) and a tool that books a trip, which a person
must approve first: the run pauses with an interrupt (RUN_FINISHED, outcome "interrupt"), and the
client's answer (`resume`, payload {"approved": true}) runs it in the next run.
agent-framework-ag-ui's wrapper turns its runs into AG-UI events; `AgentFrameworkAgent` makes it
an agui agent.

The model is scripted, offline and deterministic: asked about the weather in a city it calls
get_weather, asked for a trip to a city it calls book_trip, given a tool's result it answers with
it, and asked anything else it says what it was asked first (so a second turn shows it was
handed the first). Asked about Atlantis, get_weather fails: its exception (with a password in
it) is logged by Agent Framework by type only, and the model gets "Error: Function failed.".
For a real model, give the Agent a real client instead of ScriptedChatClient(), such as
`OpenAIChatClient()` of `agent_framework.openai` (pip install agent-framework-openai; it reads
OPENAI_API_KEY) or any other chat client of Agent Framework's.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)
from agent_framework_ag_ui import state_update

from agui.adapters import AgentFrameworkAgent


@tool
def get_weather(city: str) -> Content:
    """The weather in a city."""
    if city == "Atlantis":
        raise ConnectionError("database unavailable: password=hunter2-db-password")
    # The text goes to the model; the state is merged into the AG-UI shared state.
    return state_update(f"Sunny in {city}", state={"last_city": city})


@tool(approval_mode="always_require")
def book_trip(city: str) -> str:
    """Book a trip to a city (a person approves it first)."""
    return f"Booked a trip to {city}"


def reply(messages: Sequence[Message]) -> list[Content]:
    """The scripted model: what it says to the conversation so far."""
    last = messages[-1]
    if last.role == "tool":
        results = [c for c in last.contents if c.type == "function_result"]
        return [Content.from_text(f"{str(results[-1].result).rstrip('.')}.")]
    text = last.text or ""
    call_id = f"call-{len(messages)}"  # the same conversation gets the same ids
    if found := re.search(r"weather in (\w+)", text):
        arguments = json.dumps({"city": found.group(1)})
        return [Content.from_function_call(call_id, "get_weather", arguments=arguments)]
    if found := re.search(r"trip to (\w+)", text):
        arguments = json.dumps({"city": found.group(1)})
        return [Content.from_function_call(call_id, "book_trip", arguments=arguments)]
    first = next(m.text for m in messages if m.role == "user")
    return [Content.from_text(f"You first asked: {first}")]


class ScriptedChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A chat client playing `reply`; FunctionInvocationLayer runs the tools it calls, as it does
    for Agent Framework's own clients."""

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **_: Any
    ) -> Any:
        contents = reply(messages)
        if not stream:

            async def whole() -> ChatResponse:
                return ChatResponse(messages=[Message(role="assistant", contents=contents)])

            return whole()

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            for content in contents:
                if content.type != "text":
                    yield ChatResponseUpdate(role="assistant", contents=[content])
                    continue
                for word in re.findall(r"\S+\s*", content.text or ""):  # streamed word by word
                    yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(word)])

        return self._build_response_stream(updates())


agent = AgentFrameworkAgent(
    Agent(
        ScriptedChatClient(),
        name="weather",
        description="Tells the weather and books trips.",
        tools=[get_weather, book_trip],
    )
)
