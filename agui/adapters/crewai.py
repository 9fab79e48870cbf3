"""CrewAI flows, as agui agents.

ag-ui-crewai serves a CrewAI `Flow` over AG-UI with a FastAPI endpoint,
`add_crewai_flow_fastapi_endpoint(app, flow, path, **options)`: per request it copies the flow,
prepares its inputs from the request (`crewai_prepare_inputs`: the messages, state, tools and
context), drives it through CrewAI's stream frames, translates what the flow raises (the
`copilotkit_stream` of its model calls, `copilotkit_emit_state`, tool results, steps) into
AG-UI events, and resumes a flow paused for human feedback when the request carries `resume`.
All of that lives inside the endpoint's request handler; there is no `run(input)` to call.
`CrewAIFlowAgent(flow, **options)` registers that endpoint on a router of its own, with the
same options, and calls its handler for each run with the run's `ag_ui.core.RunAgentInput`,
reading the events the handler streams, so the run is exactly the endpoint's:

    from agui.adapters import CrewAIFlowAgent

    agent = CrewAIFlowAgent(WeatherFlow())

The stream is read as `AgUiProtocolAgent` reads an official agent's (agui.adapters.ag_ui_protocol):
the input crosses in wire form, each event is decoded by agui's tolerant decoder, one that does
not decode ends the run in RUN_ERROR `INVALID_EVENT`, and the message of the endpoint's RUN_ERROR
(a failing flow: "CrewAI flow failed; see server logs", its code naming the exception's class) is
logged and replaced by agui's generic message (`error_messages=True` passes it on). A run that
ends early closes the endpoint's stream as a disconnecting client does (the endpoint's own
teardown).

ag-ui-crewai and FastAPI (which it requires) are imported when a `CrewAIFlowAgent` is built,
never when this module is: `pip install ag-ui-crewai`.
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

from agui.adapters.ag_ui_protocol import AgUiProtocolAgent
from agui.adapters.imports import framework_module

__all__ = ["CrewAIFlowAgent"]

_INSTALL = "pip install ag-ui-crewai"
_SSE_REQUEST: dict[str, Any] = {
    "type": "http",
    "method": "POST",
    "path": "/",
    "query_string": b"",
    "headers": [(b"accept", b"text/event-stream")],
}
"""The request the endpoint's handler is given: it reads only the accept header (SSE)."""


class CrewAIFlowAgent:
    """A CrewAI flow (`crewai.flow.flow.Flow`) as an `agui.Agent`, run by ag-ui-crewai's flow
    endpoint (see the module).

    options: keyword arguments of `add_crewai_flow_fastapi_endpoint` (`emit_interrupt_outcome`,
    `emission_shape`, `emit_raw_events`, `conversational`, ...).

    error_messages: pass the message of a RUN_ERROR the endpoint sends on to the client, as
    `AgUiProtocolAgent` does (by default it is logged and the client gets "The agent failed
    while running.").

    `capabilities` declares the flow's class name, on crewai.

    Raises ModuleNotFoundError when ag-ui-crewai is not installed, and what the endpoint raises
    for options it refuses (ValueError).
    """

    def __init__(self, flow: Any, *, error_messages: bool = False, **options: Any) -> None:
        ag_ui_crewai, routing = _import("ag_ui_crewai"), _import("fastapi")
        router = routing.APIRouter()
        ag_ui_crewai.add_crewai_flow_fastapi_endpoint(router, flow, "/", **options)
        (route,) = router.routes
        self.flow = flow
        """The flow; each run runs the endpoint's copy of it."""
        self.error_messages = error_messages
        """Whether the endpoint's RUN_ERROR messages reach the client as they are."""
        self._handler: Any = route.endpoint
        self._request: Any = _import("starlette.requests").Request
        self._sdk = AgUiProtocolAgent(self, clone=False, error_messages=error_messages)

    @property
    def capabilities(self) -> AgentCapabilities:
        """Who the agent is: the flow's class, on crewai."""
        return AgentCapabilities(
            identity=IdentityCapabilities(name=type(self.flow).__name__, type="crewai")
        )

    async def __call__(self, input: RunAgentInput, /) -> AsyncGenerator[Event | UnknownEvent, None]:
        async with aclosing(self._sdk(input)) as events:
            async for event in events:
                yield event

    def run(self, input: Any, /) -> AsyncIterator[Any]:
        """One run as the endpoint streams it, for `AgUiProtocolAgent`: `input` is the
        `ag_ui.core.RunAgentInput` it made; the items are SSE text."""
        return self._stream(input)

    async def _stream(self, input: Any) -> AsyncGenerator[Any, None]:
        response = await self._handler(input_data=input, request=self._request(_SSE_REQUEST))
        body: AsyncIterator[Any] = response.body_iterator
        try:
            async for chunk in body:
                yield chunk
        finally:
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                await aclose()


def _import(name: str) -> Any:
    """A module ag-ui-crewai's endpoint needs, imported now (ModuleNotFoundError saying how to
    install it)."""
    return framework_module(name, f"CrewAIFlowAgent needs ag-ui-crewai: {_INSTALL}")
