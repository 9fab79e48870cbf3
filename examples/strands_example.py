"""A Strands agent served by agui: `agui serve strands_example:agent --app-dir examples`.

One tool (`get_weather`), one state update (each lookup is counted in the AG-UI shared state,
sent to the client as STATE_SNAPSHOT) and one approval (`book_trip` needs the user's yes: the
run ends with an interrupt, and the next run's resume answers it). ag-ui-strands' StrandsAgent
turns the Strands agent's runs into AG-UI events; `AgUiProtocolAgent` makes it an agui agent.

The model is scripted, offline and deterministic (a Strands `Model` that streams the events a
provider's would): it calls a tool for the question, then answers from the tool's result, so
the run is the same every time, with no network and no key. For a real model, give the Agent
one of Strands' providers instead of ScriptedModel(), such as `BedrockModel()` of
`strands.models` (AWS credentials in the environment) or `OpenAIModel(...)` of
`strands.models.openai` (pip install 'strands-agents[openai]', OPENAI_API_KEY).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

from ag_ui_strands import StrandsAgent, StrandsAgentConfig, ToolBehavior, ToolResultContext
from strands import Agent, tool
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from agui.adapters import AgUiProtocolAgent

log = logging.getLogger("strands_example")


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":  # the weather database of the lost city is down
        raise RuntimeError("database unavailable: password=hunter2-db-password")
    return f"It is sunny in {city}."


@tool
def book_trip(city: str) -> str:
    """Book a trip to a city (runs only once the user approves)."""
    return f"Your trip to {city} is booked."


def count_lookup(context: ToolResultContext) -> dict[str, Any] | None:
    """The shared state after a lookup: the run's state (the client's) with one more. A failed
    lookup's result is Strands' error text ("Error: ..."): nothing to count, no new state."""
    if str(context.result_data).startswith("Error:"):
        return None
    state = dict(context.input_data.state or {})
    return {"lookups": state.get("lookups", 0) + 1, "last_city": context.tool_input["city"]}


class ToolErrorsStayHere(HookProvider):
    """Strands hands a failing tool's exception text to the model as the tool's result, and
    ag-ui-strands sends that result to the client (TOOL_CALL_RESULT): the text is logged here
    instead, and the model and the client get a generic one."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self.withhold)

    def withhold(self, event: AfterToolCallEvent) -> None:
        if event.exception is not None:
            log.error("tool %s failed: %s", event.tool_use["name"], event.exception)
            text = "Error: the tool failed."
            event.result = {**event.result, "content": [{"text": text}]}


def said(text: str) -> list[StreamEvent]:
    """A model's streamed answer: the text, a word a chunk."""
    chunks: list[StreamEvent] = [
        {"contentBlockDelta": {"delta": {"text": word}}} for word in re.findall(r"\S+\s*", text)
    ]
    return [*chunks, {"contentBlockStop": {}}, {"messageStop": {"stopReason": "end_turn"}}]


def called(name: str, call_id: str, arguments: dict[str, Any]) -> list[StreamEvent]:
    """A model's streamed tool call."""
    return [
        {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": call_id}}}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


def reply(messages: Messages) -> list[StreamEvent]:
    """The scripted model: a tool's result gets an answer; "book" calls book_trip; a question
    naming a city ("... in Paris?") calls get_weather; anything else recalls the last city."""
    results = [block["toolResult"] for block in messages[-1]["content"] if "toolResult" in block]
    if results:
        content = results[-1]["content"]
        return said(content[0].get("text", "") if content else "")
    prompts = [
        block["text"]
        for message in messages
        if message["role"] == "user"
        for block in message["content"]
        if "text" in block
    ]
    prompt = prompts[-1]
    call_id = f"call-{len(messages)}"  # the same conversation gets the same ids
    city = re.search(r"\b(?:in|to) ([A-Z]\w+)", prompt)
    if city and "book" in prompt.lower():
        return called("book_trip", call_id, {"city": city[1]})
    if city:
        return called("get_weather", call_id, {"city": city[1]})
    asked = [c for p in prompts[:-1] for c in re.findall(r"\bin ([A-Z]\w+)", p)]
    return said(f"You asked about {asked[-1]}." if asked else "Ask me about a city's weather.")


class ScriptedModel(Model):
    """A Strands model playing `reply`, streamed as a provider's model streams."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(  # type: ignore[override]
        self, messages: Messages, *args: Any, **kwargs: Any
    ) -> AsyncIterator[StreamEvent]:
        yield {"messageStart": {"role": "assistant"}}
        for event in reply(messages):
            yield event


# A template: ag-ui-strands builds a Strands agent of its own per thread from it.
strands_agent = Agent(
    model=ScriptedModel(),
    tools=[get_weather, book_trip],
    system_prompt="You tell the weather and book trips.",
    callback_handler=None,
)

config = StrandsAgentConfig(
    tool_behaviors={
        # Sent as STATE_SNAPSHOT once the tool has answered.
        "get_weather": ToolBehavior(state_from_result=count_lookup),
        # The run ends with an interrupt before the tool runs; {"approved": true} runs it.
        "book_trip": ToolBehavior(interrupt_on_call=True),
    }
)

# Hooks go to the wrapper, which gives them to every thread's agent.
strands_agui = StrandsAgent(
    strands_agent, name="weather", config=config, hooks=[ToolErrorsStayHere()]
)
agent = AgUiProtocolAgent(strands_agui)
