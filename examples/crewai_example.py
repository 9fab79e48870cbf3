"""A CrewAI flow served by agui.

    pip install 'agui-spec[server]' ag-ui-crewai
    agui serve crewai_example:agent --app-dir examples

A CrewAI `Flow` on ag-ui-crewai's `CopilotKitState`, as ag-ui-crewai's endpoint serves it: its
chat step calls the model through LiteLLM and `copilotkit_stream` (which streams the answer and
the tool calls to the client), and runs the tools the model calls. get_weather reads the weather
and records the city in the flow's state (the AG-UI shared state: a STATE_SNAPSHOT). book_trip
needs the user's approval first: the flow's `approve` step asks for human feedback
(`@human_feedback` with ag-ui-crewai's feedback provider), which ends the run with an AG-UI
interrupt; the client's answer (`resume`, payload {"approved": true} or false) resumes the flow
in the next run, which books the trip or not. `CrewAIFlowAgent` runs the flow through
ag-ui-crewai's endpoint and makes it an agui agent.

The model is LiteLLM's own offline mock, scripted by `scripted`: each call gets the mock answer
(`mock_response`) for the conversation so far. Asked about the weather in a city it calls
get_weather, asked for a trip it calls book_trip, given a tool's result it answers with it, and
asked anything else it says what it was asked first (so a second turn shows it was handed the
first). Asked about Atlantis, get_weather fails, and so does the run. For a real model, leave
`**scripted(...)` out: `acompletion(model="openai/gpt-4o", ...)` then reads OPENAI_API_KEY (any
LiteLLM model name works).
"""

from __future__ import annotations

import os

# Offline: LiteLLM would otherwise fetch its price list from the network when imported, and
# CrewAI would send telemetry. Both must be set before they are imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")

import json
import re
from typing import Any

from ag_ui_crewai import (
    CopilotKitState,
    agui_feedback_provider,
    copilotkit_emit_tool_result,
    copilotkit_stream,
)
from crewai.flow.flow import Flow, listen, router, start
from crewai.flow.human_feedback import human_feedback
from litellm import ModelResponse, acompletion

from agui.adapters import CrewAIFlowAgent


class TripState(CopilotKitState):
    """The flow's state (and the AG-UI shared state): the messages, the client's tools, and ours."""

    last_city: str | None = None
    trip: str | None = None  # the city of a trip waiting for approval
    trip_call: str | None = None  # the book_trip call waiting for it


def function(name: str, description: str) -> dict[str, Any]:
    """A tool with one parameter, city, as the model is told of it."""
    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": city},
    }


TOOLS = [
    function("get_weather", "The weather in a city."),
    function("book_trip", "Book a trip to a city (the user approves it first)."),
]


def get_weather(state: TripState, city: str) -> str:
    if city == "Atlantis":
        raise ConnectionError("database unavailable: password=hunter2-db-password")
    state.last_city = city  # sent to the client as STATE_SNAPSHOT when the step ends
    return f"Sunny in {city}."


def field(message: Any, name: str) -> Any:
    """A member of a message: a dict (from the client) or LiteLLM's Message (from the model)."""
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


def scripted(messages: list[Any]) -> dict[str, Any]:
    """The scripted model: LiteLLM's mock answer to the conversation so far."""
    last = messages[-1]
    if field(last, "role") == "tool":
        return {"mock_response": str(field(last, "content"))}
    text = str(field(last, "content") or "")
    for name, pattern in (("get_weather", r"weather in (\w+)"), ("book_trip", r"trip to (\w+)")):
        if found := re.search(pattern, text):
            arguments = json.dumps({"city": found.group(1)})
            call = {
                "id": f"call-{len(messages)}",  # the same conversation gets the same ids
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return {"mock_response": ModelResponse(choices=[{"message": message}])}
    first = next(field(m, "content") for m in messages if field(m, "role") == "user")
    return {"mock_response": f"You first asked: {first}"}


async def complete(messages: list[Any], tools: list[Any]) -> Any:
    """The model's next message, streamed to the client."""
    response = await copilotkit_stream(
        await acompletion(
            model="openai/gpt-4o",
            messages=[{"role": "system", "content": "You tell the weather."}, *messages],
            tools=tools,
            stream=True,
            **scripted(messages),  # leave this out for a real model
        )
    )
    return response.choices[0].message


class WeatherFlow(Flow[TripState]):
    @start()
    async def chat(self) -> None:
        self.state.trip = self.state.trip_call = None
        while True:
            message = await complete(self.state.messages, [*TOOLS, *self.state.copilotkit.actions])
            self.state.messages.append(message)
            calls = message.tool_calls or []
            if trips := [c for c in calls if c.function.name == "book_trip"]:
                self.state.trip = json.loads(trips[0].function.arguments)["city"]
                self.state.trip_call = trips[0].id
                return  # to `approve`
            weather = [c for c in calls if c.function.name == "get_weather"]
            if not weather:
                return  # an answer, or a call of a client's tool: the client answers it
            for call in weather:
                result = get_weather(self.state, **json.loads(call.function.arguments))
                self.state.messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result}
                )
                await copilotkit_emit_tool_result(call.id, result)

    @router(chat)
    def route(self) -> str:
        return "needs_approval" if self.state.trip else "done"

    @listen("needs_approval")
    @human_feedback(message="Book this trip?", provider=agui_feedback_provider)
    def approve(self) -> str:
        return f"Book a trip to {self.state.trip}?"

    @listen(approve)
    async def book(self) -> None:
        answer = self.last_human_feedback.feedback if self.last_human_feedback else ""
        approved = json.loads(answer or "{}").get("approved") is True
        city, call = self.state.trip, self.state.trip_call or ""
        result = f"Booked a trip to {city}." if approved else f"No trip to {city}."
        self.state.messages.append({"role": "tool", "tool_call_id": call, "content": result})
        await copilotkit_emit_tool_result(call, result)
        self.state.messages.append(await complete(self.state.messages, []))
        self.state.trip = self.state.trip_call = None


# emit_interrupt_outcome: the approval ends the run with an AG-UI interrupt (RUN_FINISHED's
# outcome), which agui's and the official 1.0 client answer with `resume`.
agent = CrewAIFlowAgent(WeatherFlow(), emit_interrupt_outcome=True)
