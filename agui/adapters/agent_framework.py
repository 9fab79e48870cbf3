"""Microsoft Agent Framework agents, as agui agents.

agent-framework-ag-ui serves an Agent Framework agent over AG-UI with its own FastAPI endpoint
(`add_agent_framework_fastapi_endpoint`), through its `AgentFrameworkAgent` wrapper, whose
`run(input)` takes the request as a dict and yields `ag_ui.core` events.
`AgentFrameworkAgent(agent)` here makes that wrapper an `agui.Agent`, so `AgentApp` serves it
(with the run lifecycle, durable runs, protobuf, keep-alives and everything else it gives any
agent) and `Conversation.run` runs it:

    from agent_framework import Agent
    from agui.adapters import AgentFrameworkAgent

    agent = AgentFrameworkAgent(Agent(client, name="weather", tools=[get_weather]))

`agent` is what the endpoint takes: an Agent Framework agent (anything `SupportsAgentRun`,
wrapped as the endpoint wraps it, with `options` such as `state_schema`,
`predict_state_config` or `require_confirmation` passed to agent-framework-ag-ui's
`AgentFrameworkAgent`), a `Workflow` (wrapped in its `AgentFrameworkWorkflow`), or either of
those wrappers, used as they are.

Each run hands the wrapper the input's wire form (`agui.to_json(input)`, camelCase, the form
the endpoint's request model accepts), with `tools`, `context`, `forwardedProps` and `state`
filled in when the client left them out: agent-framework-ag-ui requires ag-ui-protocol<0.2, whose
models require the first three, and 1.0 makes them optional. What it yields is read exactly as
`AgUiProtocolAgent` reads an official agent's stream (agui.adapters.ag_ui_protocol): decoded
by agui's tolerant decoder, an item that does not decode ending the run in RUN_ERROR
`INVALID_EVENT`, and the message of a RUN_ERROR it sends withheld from the client and logged
(`error_messages=True` passes it on).

agent-framework-ag-ui is imported when an `AgentFrameworkAgent` is built, never when this module
is: `pip install agent-framework-ag-ui`. It installs ag-ui-protocol 0.1, which `AgUiProtocolAgent`
refuses; this adapter needs nothing of ag-ui-protocol itself.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

from agui_generated import (
    AgentCapabilities,
    Event,
    IdentityCapabilities,
    RunAgentInput,
    UnknownEvent,
)

from agui.adapters.ag_ui_protocol import read_events
from agui.adapters.imports import framework_module
from agui.observe.runlog import run_fields
from agui.wire.codec import to_json

__all__ = ["AgentFrameworkAgent"]

_INSTALL = "pip install agent-framework-ag-ui"

_REQUIRED_BY_0_1 = (("tools", list), ("context", list), ("forwardedProps", dict), ("state", dict))
"""Members of RunAgentInput that ag-ui-protocol 0.1 requires (state: agent-framework-ag-ui
reads it as a dict), with the empty value of each."""


class AgentFrameworkAgent:
    """A Microsoft Agent Framework agent (or agent-framework-ag-ui's wrapper of one) as an
    `agui.Agent` (see the module).

    options: keyword arguments of agent-framework-ag-ui's `AgentFrameworkAgent`, used when
    `agent` is not already wrapped (`state_schema`, `predict_state_config`,
    `require_confirmation`, ...).

    error_messages: pass the message of a RUN_ERROR the agent sends on to the client; by default
    the client gets "The agent failed while running." and the message is logged (see
    `AgUiProtocolAgent`).

    `capabilities` declares the agent's name and description, and that it runs on
    agent-framework.

    Raises TypeError when `agent` is none of those the module lists (or options come with an
    already wrapped one), and ModuleNotFoundError when agent-framework-ag-ui is not installed.
    """

    def __init__(self, agent: Any, *, error_messages: bool = False, **options: Any) -> None:
        ag_ui, framework = _import("agent_framework_ag_ui"), _import("agent_framework")
        wrappers = (ag_ui.AgentFrameworkAgent, ag_ui.AgentFrameworkWorkflow)
        if isinstance(agent, wrappers):
            if options:
                raise TypeError(
                    f"{type(agent).__qualname__} is already wrapped; give its options "
                    f"({', '.join(sorted(options))}) to agent-framework-ag-ui's wrapper instead"
                )
            runner: Any = agent
        elif isinstance(agent, framework.Workflow):
            runner = ag_ui.AgentFrameworkWorkflow(workflow=agent, **options)
        elif isinstance(agent, framework.SupportsAgentRun):
            runner = ag_ui.AgentFrameworkAgent(agent, **options)
        else:
            raise TypeError(
                f"{type(agent).__qualname__} is not an Agent Framework agent: expected an agent "
                "(SupportsAgentRun, such as agent_framework.Agent), a Workflow, or "
                "agent_framework_ag_ui's AgentFrameworkAgent or AgentFrameworkWorkflow"
            )
        self.runner = runner
        """agent-framework-ag-ui's wrapper, whose `run(dict)` each run calls."""
        self.error_messages = error_messages
        """Whether the agent's RUN_ERROR messages reach the client as they are."""

    @property
    def capabilities(self) -> AgentCapabilities:
        """The wrapper's name and description (who the agent is), on agent-framework."""
        name = getattr(self.runner, "name", None)
        description = getattr(self.runner, "description", None)
        return AgentCapabilities(
            identity=IdentityCapabilities(
                name=name if isinstance(name, str) and name else None,
                type="agent-framework",
                description=description if isinstance(description, str) and description else None,
            )
        )

    async def __call__(self, input: RunAgentInput, /) -> AsyncGenerator[Event | UnknownEvent, None]:
        wire = to_json(input)
        for key, empty in _REQUIRED_BY_0_1:
            if wire.get(key) is None:
                wire[key] = empty()
        stream: AsyncIterator[Any] = self.runner.run(wire)
        async with aclosing(
            read_events(stream, run_fields(input.thread_id, input.run_id), self.error_messages)
        ) as events:
            async for event in events:
                yield event


def _import(name: str) -> Any:
    """A module of Agent Framework, imported now (ModuleNotFoundError saying how to install it)."""
    return framework_module(name, f"AgentFrameworkAgent needs agent-framework-ag-ui: {_INSTALL}")
