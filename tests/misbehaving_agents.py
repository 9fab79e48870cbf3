"""Agents whose streams break the rules a client enforces, each repaired or ended by the run
lifecycle (agui.stream.lifecycle) so that no client rejects the run.

Shared by tests/test_server_lifecycle.py (this package's client, over HTTP and locally) and
tests/interop/test_server_lifecycle_ts.py (the official TypeScript client). Each case names the
agent, the event types the server must send, and how the run ends ("completed" or the RUN_ERROR
code).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import attrs

import agui


async def open_text(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Returns with its text message still open."""
    yield agui.TextMessageStartEvent(message_id="m1")
    yield agui.TextMessageContentEvent(message_id="m1", delta="partial answer")


async def open_tool_call(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Returns with its tool call still open."""
    yield agui.ToolCallStartEvent(tool_call_id="c1", tool_call_name="lookup")
    yield agui.ToolCallArgsEvent(tool_call_id="c1", delta='{"q": "x"}')


async def open_reasoning(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Returns inside a reasoning message, inside a reasoning span."""
    yield agui.ReasoningStartEvent(message_id="r1")
    yield agui.ReasoningMessageStartEvent(message_id="r1-m")
    yield agui.ReasoningMessageContentEvent(message_id="r1-m", delta="thinking")


async def open_at_own_finish(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Sends its own RUN_FINISHED (with a result) while its text message is open."""
    yield agui.TextMessageStartEvent(message_id="m1")
    yield agui.TextMessageContentEvent(message_id="m1", delta="done")
    yield agui.RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id, result={"ok": True})


async def second_run_started(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Sends RUN_STARTED twice."""
    started = agui.RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id)
    yield started
    yield agui.TextMessageStartEvent(message_id="m1")
    yield agui.TextMessageContentEvent(message_id="m1", delta="once")
    yield agui.TextMessageEndEvent(message_id="m1")
    yield attrs.evolve(started, run_id=run.run_id + "-again")


async def mismatched_finish(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Ends with a RUN_FINISHED that names another thread and run."""
    yield agui.TextMessageStartEvent(message_id="m1")
    yield agui.TextMessageContentEvent(message_id="m1", delta="hello")
    yield agui.TextMessageEndEvent(message_id="m1")
    yield agui.RunFinishedEvent(thread_id="thread-elsewhere", run_id="run-elsewhere")


async def refused_mid_run(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Streams content for a message it never started (the Verifier refuses it)."""
    yield agui.TextMessageStartEvent(message_id="m1")
    yield agui.TextMessageContentEvent(message_id="m1", delta="fine so far")
    yield agui.TextMessageContentEvent(message_id="ghost", delta="never started")
    yield agui.TextMessageEndEvent(message_id="m1")


async def open_step_and_subagent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Returns inside a step and a subagent, whose own text message is open."""
    yield agui.StepStartedEvent(step_name="plan")
    yield agui.SubagentStartedEvent(subagent_run_id="sub-1", name="helper")
    yield agui.TextMessageStartEvent(message_id="m-sub", subagent_run_id="sub-1")
    yield agui.TextMessageContentEvent(message_id="m-sub", delta="from the helper")


async def open_chunks_and_text(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Returns with a chunk stream pending (the client ends it) and an explicit message open."""
    yield agui.TextMessageStartEvent(message_id="m1")
    yield agui.TextMessageContentEvent(message_id="m1", delta="explicit")
    yield agui.ReasoningMessageChunkEvent(message_id="r1", delta="chunked thought")


CASES: dict[str, tuple[Any, list[str], str]] = {
    "open_text": (
        open_text,
        ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"],
        "completed",
    ),
    "open_tool_call": (
        open_tool_call,
        ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"],
        "completed",
    ),
    "open_reasoning": (
        open_reasoning,
        [
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "RUN_FINISHED",
        ],
        "completed",
    ),
    "open_at_own_finish": (
        open_at_own_finish,
        ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"],
        "completed",
    ),
    "second_run_started": (
        second_run_started,
        ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"],
        "completed",
    ),
    "mismatched_finish": (
        mismatched_finish,
        ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"],
        "completed",
    ),
    "refused_mid_run": (
        refused_mid_run,
        ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "RUN_ERROR"],
        "INVALID_EVENT",
    ),
    "open_step_and_subagent": (
        open_step_and_subagent,
        [
            "STEP_STARTED",
            "SUBAGENT_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "SUBAGENT_ERROR",
            "RUN_FINISHED",
        ],
        "completed",
    ),
    "open_chunks_and_text": (
        open_chunks_and_text,
        [
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "REASONING_MESSAGE_CHUNK",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ],
        "completed",
    ),
}
"""name -> (agent, the event types the server sends after RUN_STARTED, "completed" or the
RUN_ERROR code)."""
