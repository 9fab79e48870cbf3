"""Agno agents, as agui agents.

Agno's AG-UI integration is its AgentOS interface `agno.os.interfaces.agui.AGUI`: a FastAPI
route whose body is `run_entity(agent, input)` (in `agno.os.interfaces.agui.router`), which runs
an Agno `Agent` or `Team` on an `ag_ui.core.RunAgentInput` and yields `ag_ui.core` events. An
Agno agent has no `run(input)` of the official SDK's shape, so `AgnoAgent(agent)` calls
`run_entity` for each run and makes the stream an `agui.Agent`: `AgentApp` serves an Agno agent
(with the run lifecycle, durable runs, protobuf, keep-alives and everything else it gives any
agent) as AgentOS' AG-UI route does:

    from agno.agent import Agent
    from agui.adapters import AgnoAgent

    app = agui.AgentApp(AgnoAgent(Agent(model=..., db=...)), path="/agent")

The run goes through `AgUiProtocolAgent` (agui.adapters.ag_ui_protocol), so the input crosses in
wire form, each event is decoded by agui's tolerant decoder, an event that does not decode ends
the run in RUN_ERROR INVALID_EVENT, and the RUN_ERROR that Agno makes of an exception (with the
exception's text) reaches the client with a generic message, the text going to the log
(`error_messages=True` passes it on, for development).

What happens to the input is Agno's: only the last user message is the run's input (the
history is the one the agent's `db` keeps for the session, the thread's id), `state` is the
run's `session_state`, the run's tools become frontend tools, and trailing tool messages answer
the tools a paused run waits for (a tool with `requires_confirmation=True`: its answer is
`{"accepted": true}` or false, which needs the agent's `db`, where the paused run is kept).

agno is imported when an `AgnoAgent` is built, never when this module is: install it with its
AG-UI and AgentOS extras (the interface's module imports FastAPI), `pip install 'agno[agui,os]'`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

from agui_generated import Event, RunAgentInput, UnknownEvent

from agui.adapters.ag_ui_protocol import AgUiProtocolAgent
from agui.adapters.imports import framework_module

__all__ = ["AgnoAgent"]

_INSTALL = "pip install 'agno[agui,os]'"
# The modules whose absence means "Agno's AG-UI interface is not installed".
_MISSING = ("agno", "agno.os", "fastapi", "ag_ui", "ag_ui.core", "ag_ui.encoder", "jsonpatch")


class AgnoAgent:
    """An Agno `Agent` or `Team` as an `agui.Agent` (see the module).

    user_id: the Agno user id of every run (AgentOS' route resolves one from the request; None:
    no user).

    error_messages: pass the message of the RUN_ERROR Agno makes of an exception on to the
    client, as `AgUiProtocolAgent` does (by default it is logged and the client gets "The agent
    failed while running.").

    Raises ModuleNotFoundError, naming the install line, when agno, its AG-UI extra
    (ag-ui-protocol) or FastAPI (its AgentOS extra) is not installed.
    """

    def __init__(
        self, agent: Any, *, user_id: str | None = None, error_messages: bool = False
    ) -> None:
        self.agent = agent
        """The Agno agent (or team)."""
        self.user_id = user_id
        """The Agno user id of every run."""
        self.error_messages = error_messages
        """Whether Agno's RUN_ERROR messages reach the client as they are."""
        self._run_entity: Any = _run_entity()
        self._sdk = AgUiProtocolAgent(self, clone=False, error_messages=error_messages)

    def run(self, input: Any, /) -> AsyncIterator[Any]:
        """One run as an agent of the official SDK: `input` is the ag_ui.core.RunAgentInput
        AgUiProtocolAgent made; the events are Agno's AG-UI interface's."""
        stream: AsyncIterator[Any] = self._run_entity(self.agent, input, user_id=self.user_id)
        return stream

    async def __call__(self, input: RunAgentInput, /) -> AsyncGenerator[Event | UnknownEvent, None]:
        # aclosing: a run stopped here (a client gone, a stop request) closes Agno's stream now.
        async with aclosing(self._sdk(input)) as events:
            async for event in events:
                yield event


def _run_entity() -> Any:
    """agno.os.interfaces.agui.router.run_entity, imported now (ModuleNotFoundError saying how
    to install it)."""
    needs = f"AgnoAgent needs agno with its AG-UI and AgentOS extras: {_INSTALL}"
    return framework_module("agno.os.interfaces.agui.router", needs, _MISSING).run_entity
