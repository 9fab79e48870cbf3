"""PydanticAI agents, as agui agents.

PydanticAI's AG-UI integration is `pydantic_ai.ui.ag_ui.AGUIAdapter`: built per request with
the agent and an `ag_ui.core.RunAgentInput`, its `run_stream(deps=...)` runs the agent and
yields `ag_ui.core` events. `PydanticAIAgent(agent)` does that for each run and makes the
stream an `agui.Agent`, so `AgentApp` serves a PydanticAI agent (with the run lifecycle,
durable runs, protobuf, keep-alives and everything else it gives any agent):

    from pydantic_ai import Agent
    from agui.adapters import PydanticAIAgent

    app = agui.AgentApp(PydanticAIAgent(Agent("openai:gpt-5")), path="/agent")

The run goes through `AgUiProtocolAgent` (agui.adapters.ag_ui_protocol), so the input crosses in
wire form, each event is decoded by agui's tolerant decoder, an event that does not decode ends
the run in RUN_ERROR INVALID_EVENT, and the RUN_ERROR that PydanticAI makes of an exception
(with the exception's text) reaches the client with a generic message, the text going to the log
(`error_messages=True` passes it on, for development).

What the adapter does with the input is PydanticAI's: the messages become the agent's history,
the run's tools become frontend tools (deferred: the run ends with them pending), `state` is
written to `deps.state` when the deps are a `StateHandler` (`pydantic_ai.ui.StateDeps`), and
`resume` answers the interrupts a run ended with: a tool declared `requires_approval=True` ends
its run in RUN_FINISHED with an interrupt outcome, and the next run's resume entry
(`{"approved": true}` or false, `editedArgs`, `reason`) approves or denies it.

pydantic-ai is imported when a `PydanticAIAgent` is built, never when this module is: install
it with its AG-UI extra, `pip install 'pydantic-ai-slim[ag-ui]'`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

from agui_generated import Event, RunAgentInput, UnknownEvent

from agui.adapters.ag_ui_protocol import AgUiProtocolAgent
from agui.adapters.imports import framework_module

__all__ = ["PydanticAIAgent"]

_INSTALL = "pip install 'pydantic-ai-slim[ag-ui]'"
# The modules whose absence means "PydanticAI's AG-UI integration is not installed".
_MISSING = ("pydantic_ai", "pydantic_ai.ui", "pydantic_ai.ui.ag_ui", "ag_ui", "ag_ui.core")


class PydanticAIAgent:
    """A PydanticAI agent (`pydantic_ai.Agent`) as an `agui.Agent` (see the module).

    deps: what each run gets as its `deps`: None, or a function of the run's input returning
    them, called once per run (a `StateDeps` holds the run's state, so runs must not share one).

    options: keyword arguments of `AGUIAdapter` (`manage_system_prompt`, `include_usage`, ...).

    error_messages: pass the message of the RUN_ERROR PydanticAI makes of an exception on to the
    client, as `AgUiProtocolAgent` does (by default it is logged and the client gets "The agent
    failed while running.").

    Raises ModuleNotFoundError, naming the install line, when pydantic-ai or its AG-UI extra
    (ag-ui-protocol) is not installed, and TypeError when `deps` is given and not callable.
    """

    def __init__(
        self,
        agent: Any,
        *,
        deps: Callable[[RunAgentInput], Any] | None = None,
        options: Mapping[str, Any] | None = None,
        error_messages: bool = False,
    ) -> None:
        if deps is not None and not callable(deps):
            raise TypeError(
                f"deps must be a function of the run's input returning the run's deps, not a "
                f"{type(deps).__qualname__} (runs must not share deps: a StateDeps holds one "
                "run's state)"
            )
        self.agent = agent
        """The PydanticAI agent."""
        self.deps = deps
        """Makes each run's deps from its input (None: no deps)."""
        self.options = dict(options or {})
        """More keyword arguments of each run's AGUIAdapter."""
        self.error_messages = error_messages
        """Whether PydanticAI's RUN_ERROR messages reach the client as they are."""
        self._adapter: Any = _adapter_type()

    async def __call__(self, input: RunAgentInput, /) -> AsyncGenerator[Event | UnknownEvent, None]:
        run = _Run(self, None if self.deps is None else self.deps(input))
        sdk = AgUiProtocolAgent(run, clone=False, error_messages=self.error_messages)
        # aclosing: a run stopped here (a client gone, a stop request) closes PydanticAI's stream
        # now, ending the agent's run, not whenever the event loop finalizes the generator.
        async with aclosing(sdk(input)) as events:
            async for event in events:
                yield event


class _Run:
    """One run as an agent of the official SDK: AgUiProtocolAgent hands `run` the input it made
    (an ag_ui.core.RunAgentInput), and decodes what AGUIAdapter streams."""

    def __init__(self, owner: PydanticAIAgent, deps: Any) -> None:
        self.owner = owner
        self.deps = deps

    def run(self, input: Any, /) -> AsyncIterator[Any]:
        owner = self.owner
        adapter = owner._adapter(agent=owner.agent, run_input=input, **owner.options)
        stream: AsyncIterator[Any] = adapter.run_stream(deps=self.deps)
        return stream


def _adapter_type() -> Any:
    """pydantic_ai.ui.ag_ui.AGUIAdapter, imported now (ModuleNotFoundError saying how to install
    it)."""
    needs = f"PydanticAIAgent needs pydantic-ai with its AG-UI extra: {_INSTALL}"
    return framework_module("pydantic_ai.ui.ag_ui", needs, _MISSING).AGUIAdapter
