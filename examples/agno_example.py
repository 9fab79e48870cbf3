"""An Agno agent served by agui: `agui serve agno_example:agent --app-dir examples`.

One tool (`get_weather`), one state update (each lookup is counted in the run's session state,
which is the AG-UI shared state: the client gets it as STATE_DELTA and STATE_SNAPSHOT) and one
approval (`book_trip` requires confirmation: the run pauses with the call, the client answers it
with a tool message `{"accepted": true}`, and the next run runs it). Agno's AG-UI interface
turns the agent's runs into AG-UI events; `AgnoAgent` makes it an agui agent.

The model is scripted, offline and deterministic (an Agno `Model` that answers as a provider's
would): it calls a tool for the question, then answers from the tool's result, so the run is the
same every time, with no network and no key. For a real model, give the Agent one of Agno's
instead of ScriptedModel(), such as `OpenAIChat(id="gpt-5")` of `agno.models.openai`
(pip install openai; it reads OPENAI_API_KEY).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.run import RunContext
from agno.tools import tool

from agui.adapters import AgnoAgent

log = logging.getLogger("agno_example")


def get_weather(run_context: RunContext, city: str) -> str:
    """The weather in a city; counts the lookup in the session state."""
    if city == "Atlantis":  # the weather database of the lost city is down
        raise RuntimeError("database unavailable: password=hunter2-db-password")
    state = run_context.session_state  # the run's AG-UI state
    if state is not None:
        state["lookups"] = state.get("lookups", 0) + 1
        state["last_city"] = city
    return f"It is sunny in {city}."


@tool(requires_confirmation=True)
def book_trip(city: str) -> str:
    """Book a trip to a city (runs only once the user confirms)."""
    return f"Your trip to {city} is booked."


def tool_errors_stay_here(
    function_name: str, function_call: Callable[..., Any], arguments: dict[str, Any]
) -> Any:
    """A tool hook. Agno hands a failing tool's exception text to the model as the tool's result,
    and its AG-UI interface sends that result to the client (TOOL_CALL_RESULT): the text is logged
    here instead, and the model and the client get a generic one."""
    try:
        return function_call(**arguments)
    except Exception as exc:
        log.error("tool %s failed: %s", function_name, exc)
        return "Error: the tool failed."


def reply(messages: list[Message]) -> ModelResponse:
    """The scripted model: a tool's result gets an answer; "book" calls book_trip; a question
    naming a city ("... in Paris?") calls get_weather; anything else recalls the last city."""
    last = messages[-1]
    if last.role == "tool":
        return ModelResponse(role="assistant", content=str(last.content))
    prompts = [str(m.content) for m in messages if m.role == "user"]
    prompt = prompts[-1]
    city = re.search(r"\b(?:in|to) ([A-Z]\w+)", prompt)
    if city:
        name = "book_trip" if "book" in prompt.lower() else "get_weather"
        call = {
            "id": f"call-{len(messages)}",  # the same conversation gets the same ids
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({"city": city[1]})},
        }
        return ModelResponse(role="assistant", tool_calls=[call])
    asked = [c for p in prompts[:-1] for c in re.findall(r"\bin ([A-Z]\w+)", p)]
    text = f"You asked about {asked[-1]}." if asked else "Ask me about a city's weather."
    return ModelResponse(role="assistant", content=text)


class ScriptedModel(Model):
    """An Agno model playing `reply`; Agno runs the tools it calls, as for its own models."""

    def __init__(self) -> None:
        super().__init__(id="scripted", name="ScriptedModel", provider="example")

    def invoke(self, *args: Any, messages: list[Message], **kwargs: Any) -> ModelResponse:
        return reply(messages)

    async def ainvoke(self, *args: Any, messages: list[Message], **kwargs: Any) -> ModelResponse:
        return reply(messages)

    def invoke_stream(
        self, *args: Any, messages: list[Message], **kwargs: Any
    ) -> Iterator[ModelResponse]:
        yield reply(messages)

    async def ainvoke_stream(
        self, *args: Any, messages: list[Message], **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        yield reply(messages)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


agno_agent = Agent(
    name="weather",
    model=ScriptedModel(),
    tools=[get_weather, book_trip],
    tool_hooks=[tool_errors_stay_here],
    # The sessions (a thread's history, a paused run) in the process; a database of Agno's
    # (SqliteDb, PostgresDb, ...) keeps them across restarts.
    db=InMemoryDb(),
    add_history_to_context=True,
    instructions="You tell the weather and book trips.",
    telemetry=False,  # Agno sends usage telemetry to its API otherwise (AGNO_TELEMETRY=false too)
)

agent = AgnoAgent(agno_agent)
