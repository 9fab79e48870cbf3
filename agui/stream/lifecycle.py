"""The run lifecycle: one wrapper that makes any agent's stream a correct run.

`run_lifecycle(agent, input)` iterates the agent and yields its events with:

* RUN_STARTED first: inserted (threadId, runId and protocolVersion from the input) when the agent
  does not send one, and given protocolVersion when the agent's own lacks it;
* exactly one terminal event last: RUN_FINISHED added when the agent just returns; an agent that
  raises ends in RUN_ERROR `AGENT_ERROR` (logged with its traceback; the exception text never
  reaches the client), and an item that is not an event model ends in RUN_ERROR `INVALID_EVENT`;
* after the terminal event nothing more: what the agent still yields is dropped and logged, while
  the agent is left to finish its work (the wrapper keeps pulling until the agent returns).

AgentApp serves every agent through it, and `Conversation.run` runs a local agent through it, so
a local agent and the same agent behind a server give the same events.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, get_args

import attrs
from agui_generated import (
    PROTOCOL_VERSION,
    Event,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    UnknownEvent,
)

from agui.agent.protocol import Agent

__all__ = ["AGENT_ERROR", "INVALID_EVENT", "run_error", "run_lifecycle", "run_started"]

log = logging.getLogger("agui.agent")

AGENT_ERROR = "AGENT_ERROR"
"""The RUN_ERROR code of a run whose agent raised."""
INVALID_EVENT = "INVALID_EVENT"
"""The RUN_ERROR code of a run whose agent produced something that cannot be sent."""

_EVENT_TYPES: frozenset[type] = frozenset((*get_args(Event), UnknownEvent))
_TERMINAL: frozenset[type] = frozenset((RunFinishedEvent, RunErrorEvent))


def run_started(run_input: RunAgentInput) -> RunStartedEvent:
    """The RUN_STARTED inserted for an agent that sends none."""
    return RunStartedEvent(
        thread_id=run_input.thread_id, run_id=run_input.run_id, protocol_version=PROTOCOL_VERSION
    )


def run_error(message: str, code: str) -> RunErrorEvent:
    """A RUN_ERROR with a message for the client (never an exception's text) and a code."""
    return RunErrorEvent(message=message, code=code)


def _describe(item: Any) -> str:
    return str(getattr(item, "type", type(item).__name__))


async def run_lifecycle(
    agent: Agent, run_input: RunAgentInput
) -> AsyncGenerator[Event | UnknownEvent, None]:
    """The agent's events for `run_input`, inside a correct run lifecycle (see the module)."""
    run_id = run_input.run_id
    started = terminal = False
    stream: AsyncIterator[Any] | None = None
    try:
        # Inside the try: an agent whose call itself raises ends in RUN_ERROR too.
        stream = agent(run_input)
        async for event in stream:
            if terminal:
                log.warning(
                    "run %s: dropped %s sent after the terminal event", run_id, _describe(event)
                )
                continue
            kind = type(event)
            if kind not in _EVENT_TYPES:
                log.error(
                    "run %s: the agent yielded %s, which is not an AG-UI event; yield the event "
                    "model classes (agui.TextMessageContentEvent, ...)",
                    run_id,
                    kind.__name__,
                )
                if not started:
                    started = True
                    yield run_started(run_input)
                terminal = True
                yield run_error("The agent produced an invalid event.", INVALID_EVENT)
                return
            if not started:
                started = True
                if kind is RunStartedEvent:
                    if event.protocol_version is None:
                        event = attrs.evolve(event, protocol_version=PROTOCOL_VERSION)
                else:
                    yield run_started(run_input)
            if kind in _TERMINAL:
                terminal = True
            yield event
    except Exception:
        log.exception("run %s: the agent failed", run_id)
        if not started:
            started = True
            yield run_started(run_input)
        if not terminal:
            terminal = True
            yield run_error("The agent failed while running.", AGENT_ERROR)
    finally:
        if isinstance(stream, AsyncGenerator):
            try:
                await stream.aclose()
            except Exception:  # the run still needs its end
                log.exception("run %s: closing the agent failed", run_id)
    if not started:
        yield run_started(run_input)
    if not terminal:
        yield RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
