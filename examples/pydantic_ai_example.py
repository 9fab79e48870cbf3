"""A PydanticAI agent served by agui: `agui serve pydantic_ai_example:agent --app-dir examples`.

One tool (`get_weather`), one state update (each lookup is counted in the AG-UI shared state,
sent to the client as STATE_SNAPSHOT) and one approval (`book_trip` needs the user's yes: the
run ends with an interrupt, and the next run's resume answers it).

The model is PydanticAI's own offline FunctionModel, scripted: it calls a tool for the question,
then answers from the tool's result, so the run is the same every time, with no network and no
key. For a real model, pass its name instead: `Agent("openai:gpt-5", ...)` (and its API key in
the environment, e.g. OPENAI_API_KEY).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from ag_ui.core import EventType, StateSnapshotEvent
from pydantic import BaseModel
from pydantic_ai import Agent, DeferredToolRequests, RunContext, ToolReturn
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui import StateDeps

from agui.adapters import PydanticAIAgent


class Trip(BaseModel):
    """The AG-UI shared state: what the client and the agent both see."""

    lookups: int = 0
    last_city: str | None = None


async def script(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    """The scripted model: a tool's result gets an answer; "book" calls book_trip; a question
    naming a city ("... in Paris?") calls get_weather; anything else recalls the last city."""
    last = messages[-1]
    results = (
        [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if isinstance(last, ModelRequest)
        else []
    )
    if results:
        for word in re.findall(r"\S+\s*", str(results[-1].content)):
            yield word
        return
    prompts = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
    prompt = str(prompts[-1])
    city = re.search(r"\b(?:in|to) ([A-Z]\w+)", prompt)
    if city and "book" in prompt.lower():
        yield {0: DeltaToolCall(name="book_trip", json_args=f'{{"city": "{city[1]}"}}')}
    elif city:
        yield {0: DeltaToolCall(name="get_weather", json_args=f'{{"city": "{city[1]}"}}')}
    else:
        asked = [c for p in prompts[:-1] for c in re.findall(r"\bin ([A-Z]\w+)", str(p))]
        yield f"You asked about {asked[-1]}." if asked else "Ask me about a city's weather."


# output_type: a run may end with a tool waiting for approval (DeferredToolRequests).
pydantic_agent = Agent(
    FunctionModel(stream_function=script),
    deps_type=StateDeps[Trip],
    output_type=[str, DeferredToolRequests],
    instructions="You tell the weather and book trips.",
)


@pydantic_agent.tool
def get_weather(ctx: RunContext[StateDeps[Trip]], city: str) -> ToolReturn:
    """The weather in a city; counts the lookup in the shared state."""
    if city == "Atlantis":  # the weather database of the lost city is down
        raise RuntimeError("database unavailable: password=hunter2-db-password")
    state = ctx.deps.state
    state.lookups += 1
    state.last_city = city
    return ToolReturn(
        return_value=f"It is sunny in {city}.",
        # Events in a tool's metadata go to the client: here the new state.
        metadata=[StateSnapshotEvent(type=EventType.STATE_SNAPSHOT, snapshot=state.model_dump())],
    )


@pydantic_agent.tool_plain(requires_approval=True)
def book_trip(city: str) -> str:
    """Book a trip to a city (runs only once the user approves)."""
    return f"Your trip to {city} is booked."


# Each run gets its own deps: PydanticAI writes the run's AG-UI state into them.
agent = PydanticAIAgent(pydantic_agent, deps=lambda input: StateDeps(Trip()))
