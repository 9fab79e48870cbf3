"""A Google ADK agent served by agui: `agui serve adk_example:agent --app-dir examples`.

One tool (`get_weather`, which records the city in the session state: the client gets it as
STATE_DELTA), one approval (`book_trip` is a FunctionTool with require_confirmation=True: the
run ends with an interrupt, and the next run's resume answers it) and the capabilities the agent
declares (ADKAgent's `capabilities`, served at GET /agent/capabilities).

ag-ui-adk's `ADKAgent` runs the ADK agent and turns its events into AG-UI events;
`AgUiProtocolAgent` makes it an agui agent. The model is scripted, offline and deterministic (a
`BaseLlm` of ADK's, the way ADK takes any model): asked about the weather in a city it calls
get_weather, asked to book a trip to a city it calls book_trip, given a tool's result it says
it, and asked anything else it recalls the last city asked about. For a real model, pass its
name instead: `LlmAgent(model="gemini-2.5-flash", ...)` (and GOOGLE_API_KEY in the environment).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator

from ag_ui_adk import ADKAgent
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.tools import FunctionTool, ToolContext
from google.genai import types

from agui.adapters import AgUiProtocolAgent


def get_weather(city: str, tool_context: ToolContext) -> str:
    """The weather in a city; records it in the session state."""
    if city == "Atlantis":  # the weather database of the lost city is down
        raise RuntimeError("database unavailable: password=hunter2-db-password")
    tool_context.state["last_city"] = city
    return f"It is sunny in {city}."


def book_trip(city: str) -> str:
    """Book a trip to a city (runs only once the user approves)."""
    return f"Your trip to {city} is booked."


def reply(contents: list[types.Content]) -> types.Part:
    """The scripted model: what it says to the conversation so far."""
    results = [p.function_response for p in contents[-1].parts or [] if p.function_response]
    if results:
        answer = results[-1].response or {}
        return types.Part(text=str(answer.get("result", answer)))
    prompts = [p.text for c in contents if c.role == "user" for p in c.parts or [] if p.text]
    prompt = prompts[-1] if prompts else ""
    city = re.search(r"\b(?:in|to) ([A-Z]\w+)", prompt)
    if city and "book" in prompt.lower():
        return types.Part(
            function_call=types.FunctionCall(name="book_trip", args={"city": city[1]})
        )
    if city:
        return types.Part(
            function_call=types.FunctionCall(name="get_weather", args={"city": city[1]})
        )
    asked = [c for p in prompts[:-1] for c in re.findall(r"\bin ([A-Z]\w+)", p)]
    return types.Part(text=f"You asked about {asked[-1]}." if asked else "Ask me about a city.")


class ScriptedModel(BaseLlm):
    """An offline ADK model playing `reply`, its text streamed word by word."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        part = reply(llm_request.contents)
        if stream and part.text:
            for word in re.findall(r"\S+\s*", part.text):
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text=word)]), partial=True
                )
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


weather = LlmAgent(
    name="weather",
    model=ScriptedModel(),
    description="Tells the weather and books trips.",
    instruction="You tell the weather and book trips.",
    tools=[get_weather, FunctionTool(book_trip, require_confirmation=True)],
)

# Resumable: a run paused for a confirmation goes on where it stopped once it is answered.
app = App(
    name="weather", root_agent=weather, resumability_config=ResumabilityConfig(is_resumable=True)
)

agent = AgUiProtocolAgent(
    ADKAgent.from_app(
        app,
        user_id="demo",
        # A tool confirmation ends the run in an AG-UI interrupt; RunAgentInput.resume answers it.
        emit_interrupt_outcome=True,
        capabilities={
            "identity": {"name": "weather", "type": "google-adk"},
            "humanInTheLoop": {"supported": True, "approvals": True},
        },
    )
)
