"""The Agent abstraction: anything that turns a RunAgentInput into a stream of events.

A local agent (an async generator function, or an object with such a `__call__`) and a remote one
(`agui.HttpAgent`) are interchangeable: the server serves either, and a client-side integration can
be tested against a local agent without a network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from agui_generated import RunAgentInput

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """Call it with the run's input; iterate the events of that run.

    The stream may carry RUN_STARTED and a terminal RUN_FINISHED / RUN_ERROR itself; the server adds
    whatever is missing. Events are the generated models (an `agui.UnknownEvent` passes through
    unchanged).

    An agent may also have a `validate(input) -> list[agui.Problem]` method: AgentApp calls it
    once the body is decoded and answers 400 with the problems, before any event is sent, when the
    list is not empty (agui.model.ModelAgent refuses clashing tool names this way)."""

    def __call__(self, input: RunAgentInput, /) -> AsyncIterator[Any]: ...
