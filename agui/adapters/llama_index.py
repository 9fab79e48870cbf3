"""LlamaIndex workflows, as agui agents.

llama-index-protocols-ag-ui serves a LlamaIndex workflow over AG-UI with a FastAPI router,
`get_ag_ui_workflow_router(workflow_factory)`: per request it awaits the factory for a fresh
workflow (its `AGUIChatWorkflow`, or any workflow that writes its `...WorkflowEvent`s, which are
`ag_ui.core` events, to the event stream), runs it with `input_data=` the request's
`ag_ui.core.RunAgentInput`, and streams RUN_STARTED, the workflow's AG-UI events and
RUN_FINISHED. The workflow has no `run(input)` returning AG-UI events, so `AgUiProtocolAgent`
cannot take it: `LlamaIndexAgent(workflow_factory)` does what the router does for each run and
makes the stream an `agui.Agent`, so `AgentApp` serves it (with the run lifecycle, durable
runs, protobuf, keep-alives and everything else it gives any agent):

    from llama_index.protocols.ag_ui.agent import AGUIChatWorkflow
    from agui.adapters import LlamaIndexAgent

    async def workflow() -> AGUIChatWorkflow:
        return AGUIChatWorkflow(llm=llm, backend_tools=[get_weather])

    agent = LlamaIndexAgent(workflow)

The same factory is what `get_ag_ui_workflow_router` takes, and the events are the router's:
the same workflow events, selected as the router selects them (its `AG_UI_EVENTS`), between the
same RUN_STARTED (with protocolVersion) and RUN_FINISHED. They are read as `AgUiProtocolAgent`
reads an official agent's stream (agui.adapters.ag_ui_protocol): the input crosses in wire form
(validated as `ag_ui.core.RunAgentInput`), each event is decoded by agui's tolerant decoder, and
one that does not decode ends the run in RUN_ERROR `INVALID_EVENT`. An exception in the workflow
(a timeout, a failing model) goes to the lifecycle: RUN_ERROR `AGENT_ERROR` with agui's generic
message, logged with its traceback, where the router sends the exception's text. A run that
ends early (the client gone, a stop request) cancels the workflow's run (`cancel_run`), which the
router leaves running.

llama-index-protocols-ag-ui is imported when a `LlamaIndexAgent` is built, never when this
module is: `pip install llama-index-protocols-ag-ui`.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

from agui_generated import (
    AgentCapabilities,
    Event,
    IdentityCapabilities,
    RunAgentInput,
    UnknownEvent,
)

from agui.adapters.ag_ui_protocol import AgUiProtocolAgent
from agui.adapters.imports import framework_module

__all__ = ["LlamaIndexAgent"]

_INSTALL = "pip install llama-index-protocols-ag-ui"
_EVENTS = "llama_index.protocols.ag_ui.events"
FORWARDED = (
    "TextMessageStartWorkflowEvent",
    "TextMessageContentWorkflowEvent",
    "TextMessageEndWorkflowEvent",
    "ToolCallStartWorkflowEvent",
    "ToolCallArgsWorkflowEvent",
    "ToolCallEndWorkflowEvent",
    "StateSnapshotWorkflowEvent",
    "StateDeltaWorkflowEvent",
    "MessagesSnapshotWorkflowEvent",
    "TextMessageChunkWorkflowEvent",
    "ToolCallChunkWorkflowEvent",
    "CustomWorkflowEvent",
)
"""The workflow events of llama_index.protocols.ag_ui.events that reach the client: those the
router forwards (its `AG_UI_EVENTS`; the router's module is not imported, since it needs
FastAPI)."""


class LlamaIndexAgent:
    """A LlamaIndex workflow, made per run by `workflow_factory` (an async function returning
    the workflow, as `get_ag_ui_workflow_router` takes), as an `agui.Agent` (see the module).

    error_messages: pass the message of a RUN_ERROR the workflow's stream carries on to the
    client, as `AgUiProtocolAgent` does (by default it is logged and the client gets "The agent
    failed while running.").

    `capabilities` declares that the agent is a LlamaIndex workflow.

    Raises TypeError when `workflow_factory` is not callable, and ModuleNotFoundError when
    llama-index-protocols-ag-ui is not installed.
    """

    def __init__(
        self, workflow_factory: Callable[[], Awaitable[Any]], *, error_messages: bool = False
    ) -> None:
        if not callable(workflow_factory):
            raise TypeError(
                f"workflow_factory must be an async function returning a workflow (as "
                f"get_ag_ui_workflow_router takes), not a {type(workflow_factory).__qualname__}"
            )
        self.workflow_factory = workflow_factory
        """Makes each run's workflow."""
        self.error_messages = error_messages
        """Whether RUN_ERROR messages reach the client as they are."""
        self._events: Any = _import_events()
        self._forwarded = tuple(getattr(self._events, name) for name in FORWARDED)
        self._sdk = AgUiProtocolAgent(self, clone=False, error_messages=error_messages)

    @property
    def capabilities(self) -> AgentCapabilities:
        """Who the agent is: a LlamaIndex workflow."""
        return AgentCapabilities(identity=IdentityCapabilities(type="llama-index"))

    async def __call__(self, input: RunAgentInput, /) -> AsyncGenerator[Event | UnknownEvent, None]:
        async with aclosing(self._sdk(input)) as events:
            async for event in events:
                yield event

    def run(self, input: Any, /) -> AsyncIterator[Any]:
        """One run as the router streams it, for `AgUiProtocolAgent`: `input` is the
        `ag_ui.core.RunAgentInput` it made; the items are `ag_ui.core` events."""
        return self._stream(input)

    async def _stream(self, input: Any) -> AsyncGenerator[Any, None]:
        events = self._events
        workflow = await self.workflow_factory()
        handler = workflow.run(input_data=input)
        finished = False
        try:
            yield events.RunStartedWorkflowEvent(
                timestamp=_timestamp(),
                thread_id=input.thread_id,
                run_id=input.run_id,
                protocol_version=_protocol_version(),
            )
            async for event in handler.stream_events():
                if isinstance(event, self._forwarded):
                    yield event
            await handler
            finished = True
            yield events.RunFinishedWorkflowEvent(
                timestamp=_timestamp(), thread_id=input.thread_id, run_id=input.run_id
            )
        finally:
            if not finished:  # an exception, or the run closed early: stop the workflow too
                await handler.cancel_run()


def _timestamp() -> int:
    """The router's timestamps: whole seconds since the epoch."""
    return int(time.time())


def _protocol_version() -> str:
    """The installed ag-ui-protocol's PROTOCOL_VERSION, which the router's RUN_STARTED declares."""
    version: str = importlib.import_module("ag_ui.core").PROTOCOL_VERSION
    return version


def _import_events() -> Any:
    """llama_index.protocols.ag_ui.events, imported now (ModuleNotFoundError saying how to
    install it)."""
    needs = f"LlamaIndexAgent needs llama-index-protocols-ag-ui: {_INSTALL}"
    return framework_module(_EVENTS, needs)
