"""A built-in demo agent that needs no model and no key.

It exercises most of the protocol: a step, a reasoning span, a state snapshot and a delta, a
streamed text answer, a tool call with its result and an activity. `forwardedProps.interrupt: true`
makes the run finish with an interrupt outcome that asks for approval.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
from agui_generated import (
    PROTOCOL_VERSION,
    ActivitySnapshotEvent,
    AddOperation,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    ReplaceOperation,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)

__all__ = ["DemoAgent"]


class DemoAgent:
    """The demo agent. `delay` is the pause between streamed tokens, in seconds."""

    def __init__(self, delay: float = 0.02) -> None:
        self.delay = delay

    async def __call__(self, input: RunAgentInput) -> AsyncIterator[Any]:
        thread, run = input.thread_id, input.run_id
        said = _last_user_text(input) or "hello"
        yield RunStartedEvent(thread_id=thread, run_id=run, protocol_version=PROTOCOL_VERSION)
        yield StepStartedEvent(step_name="think")
        span, thought = _id("reasoning"), _id("thought")
        yield ReasoningStartEvent(message_id=span)
        yield ReasoningMessageStartEvent(message_id=thought)
        for word in ["The", " user", " said", f" {said!r};", " I", " will", " echo", " it."]:
            await self._pause()
            yield ReasoningMessageContentEvent(message_id=thought, delta=word)
        yield ReasoningMessageEndEvent(message_id=thought)
        yield ReasoningEndEvent(message_id=span)
        yield StepFinishedEvent(step_name="think")

        yield StateSnapshotEvent(snapshot={"echoes": 0, "last": None})
        message = _id("message")
        yield TextMessageStartEvent(message_id=message)
        for word in f"You said: {said}".split(" "):
            await self._pause()
            yield TextMessageContentEvent(message_id=message, delta=word + " ")
        yield TextMessageEndEvent(message_id=message)

        call = _id("call")
        yield ToolCallStartEvent(
            tool_call_id=call, tool_call_name="count_characters", parent_message_id=message
        )
        arguments = orjson.dumps({"text": said}).decode()
        for part in (arguments[:8], arguments[8:-1], arguments[-1:]):
            await self._pause()
            yield ToolCallArgsEvent(tool_call_id=call, delta=part)
        yield ToolCallEndEvent(tool_call_id=call)
        yield ToolCallResultEvent(
            message_id=_id("result"), tool_call_id=call, content=str(len(said))
        )
        yield StateDeltaEvent(
            delta=(
                ReplaceOperation(path="/echoes", value=1),
                ReplaceOperation(path="/last", value=said),
                AddOperation(path="/characters", value=len(said)),
            )
        )
        yield ActivitySnapshotEvent(
            message_id=_id("activity"), activity_type="progress", content={"done": 3, "total": 3}
        )
        usage = (
            TokenUsage(
                provider="demo",
                model="echo",
                input_tokens=len(said.split()),
                output_tokens=8,
                total_tokens=len(said.split()) + 8,
            ),
        )
        forwarded = input.forwarded_props
        if isinstance(forwarded, dict) and forwarded.get("interrupt") is True:
            interrupt = Interrupt(
                id=_id("interrupt"),
                reason="input_required",
                message="Approve the echo?",
                response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
            )
            yield RunFinishedEvent(
                thread_id=thread,
                run_id=run,
                outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)),
                usage=usage,
            )
            return
        yield RunFinishedEvent(
            thread_id=thread,
            run_id=run,
            result={"echoed": said},
            outcome=RunFinishedSuccessOutcome(),
            usage=usage,
        )

    async def _pause(self) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        else:
            await asyncio.sleep(0)


def _last_user_text(input: RunAgentInput) -> str:
    for message in reversed(input.messages):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                return message.content
            return " ".join(getattr(p, "text", "") for p in message.content).strip()
    return ""


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
