"""Conversation: the next input, interrupts and resume, the pipeline end to end, the summary, and
the `agui run --summary` / `agui replay` command lines.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import agui
from agui.errors import ProtocolError
from agui.stream.conversation import (
    Conversation,
    ExpiredInterruptError,
    InterruptError,
    PendingInterruptsError,
    expires,
)
from agui.stream.pipeline import Pipeline

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
SUMMARY_KEYS = {
    "outcome",
    "error",
    "events",
    "eventTypes",
    "messages",
    "state",
    "warnings",
    "pendingInterrupts",
}


def interrupted(
    *interrupts: dict[str, Any], clock: Callable[[], datetime] = lambda: NOW
) -> Conversation:
    """A conversation whose last run ended with these interrupts."""
    conversation = Conversation("t", clock=clock)
    conversation.consume(
        [RUN, {**DONE, "outcome": {"type": "interrupt", "interrupts": list(interrupts)}}]
    )
    return conversation


# ── the next input ───────────────────────────────────────────────────────────────────────────


def test_next_input_declares_the_version_and_a_new_run_id() -> None:
    """protocolVersion is this package's; every input gets a fresh runId on the same thread."""
    conversation = Conversation("thread-9")
    first, second = conversation.next_input(), conversation.next_input()
    assert first.protocol_version == agui.PROTOCOL_VERSION == "1.0"
    assert first.thread_id == second.thread_id == "thread-9"
    assert first.run_id != second.run_id
    uuid.UUID(first.run_id)


def test_next_input_defaults_match_the_typescript_client() -> None:
    """tools and context default to [], forwardedProps to {}, state to {}, no resume."""
    wire = agui.to_json(Conversation("t").next_input())
    assert {k: wire[k] for k in ("state", "messages", "tools", "context", "forwardedProps")} == {
        "state": {},
        "messages": [],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    assert "resume" not in wire


def test_next_input_text_becomes_a_user_message_after_the_history() -> None:
    """A text message becomes a user message, last in the input; the conversation is unchanged
    until a run of that input starts."""
    conversation = Conversation("t", messages=[agui.SystemMessage(id="s", content="be nice")])
    run_input = conversation.next_input("hello")
    assert [type(m) for m in run_input.messages] == [agui.SystemMessage, agui.UserMessage]
    assert run_input.messages[1].content == "hello"
    assert [m["id"] for m in conversation.messages_json()] == ["s"]
    conversation.consume([RUN, DONE], input=run_input)
    assert [m["id"] for m in conversation.messages_json()] == ["s", run_input.messages[1].id]


def test_next_input_leaves_activity_messages_out() -> None:
    """Activity messages stay client-side: they are never sent back to the agent."""
    conversation = Conversation("t")
    conversation.consume(
        [
            RUN,
            {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {}},
            {"type": "TEXT_MESSAGE_START", "messageId": "m"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m"},
            DONE,
        ]
    )
    assert [m.id for m in conversation.next_input().messages] == ["m"]


def test_next_input_carries_the_state_and_omits_a_null_one() -> None:
    """The state travels as it is; a null state (which the input cannot carry) is omitted."""
    conversation = Conversation("t", state={"n": 0})
    assert conversation.next_input().state == {"n": 0}
    conversation.apply(agui.StateSnapshotEvent(snapshot=None))
    assert "state" not in agui.to_json(conversation.next_input())


def test_next_input_passes_tools_context_and_props() -> None:
    """tools, context and forwardedProps are passed through."""
    tool = agui.Tool(name="search", description="finds things")
    context = agui.Context(description="user", value="ann")
    run_input = Conversation("t").next_input(tools=[tool], context=[context], forwarded_props=[1])
    assert (run_input.tools, run_input.context, run_input.forwarded_props) == (
        (tool,),
        (context,),
        [1],
    )


# ── interrupts and resume ────────────────────────────────────────────────────────────────────


def test_a_run_leaving_interrupts_unanswered_is_refused() -> None:
    """The TypeScript wording, with the count and the ids; the history is not changed."""
    conversation = interrupted({"id": "i1", "reason": "a"}, {"id": "i2", "reason": "b"})
    before = conversation.messages
    with pytest.raises(PendingInterruptsError) as caught:
        conversation.next_input("next")
    assert str(caught.value) == "Thread has 2 pending interrupt(s) not addressed by resume: i1, i2"
    assert isinstance(caught.value, ValueError)
    assert conversation.messages == before


def test_a_partial_answer_names_only_what_is_left() -> None:
    """Only the interrupts without an answer are listed."""
    conversation = interrupted({"id": "i1", "reason": "a"}, {"id": "i2", "reason": "b"})
    conversation.cancel("i2")
    with pytest.raises(
        PendingInterruptsError,
        match=r"^Thread has 1 pending interrupt\(s\) not addressed by resume: i1$",
    ):
        conversation.next_input()


def test_answers_are_sent_in_interrupt_order() -> None:
    """resume follows the order of the interrupts, not the order of the answers; a cancellation
    carries no payload and a None payload is left out."""
    conversation = interrupted(
        {"id": "i1", "reason": "a"}, {"id": "i2", "reason": "b"}, {"id": "i3", "reason": "c"}
    )
    conversation.cancel("i3")
    conversation.resolve("i2")
    conversation.resolve("i1", {"approved": True}, metadata={"sig": "x"})
    wire = agui.to_json(conversation.next_input())
    assert wire["resume"] == [
        {
            "interruptId": "i1",
            "status": "resolved",
            "payload": {"approved": True},
            "metadata": {"sig": "x"},
        },
        {"interruptId": "i2", "status": "resolved"},
        {"interruptId": "i3", "status": "cancelled"},
    ]


def test_an_answer_can_be_replaced() -> None:
    """Answering the same interrupt twice keeps the last answer."""
    conversation = interrupted({"id": "i1", "reason": "a"})
    conversation.resolve("i1", 1)
    conversation.cancel("i1")
    (entry,) = conversation.next_input().resume or ()
    assert entry.status == agui.ResumeStatus.CANCELLED


def test_answering_an_unknown_interrupt_is_an_error() -> None:
    """Only pending interrupts can be answered."""
    conversation = interrupted({"id": "i1", "reason": "a"})
    with pytest.raises(InterruptError, match="nope"):
        conversation.resolve("nope", 1)
    with pytest.raises(InterruptError, match="nope"):
        conversation.cancel("nope")


def test_an_expired_interrupt_can_only_be_cancelled() -> None:
    """Resolving one past expiresAt fails with the TypeScript wording; cancelling works."""
    conversation = interrupted({"id": "i1", "reason": "a", "expiresAt": "2030-01-01T11:00:00Z"})
    with pytest.raises(ExpiredInterruptError) as caught:
        conversation.resolve("i1", {"ok": True})
    assert str(caught.value) == (
        "Interrupt i1 expired at 2030-01-01T11:00:00Z and can no longer be answered. "
        "Cancel it to continue the thread."
    )
    conversation.cancel("i1")
    assert [e.status for e in conversation.next_input().resume or ()] == ["cancelled"]


def test_an_interrupt_expiring_right_now_is_expired() -> None:
    """expiresAt equal to the current time counts as expired."""
    conversation = interrupted({"id": "i1", "reason": "a", "expiresAt": "2030-01-01T12:00:00Z"})
    with pytest.raises(ExpiredInterruptError):
        conversation.resolve("i1", 1)


def test_an_answer_given_before_expiry_is_refused_after_it() -> None:
    """Expiry is checked again when the input is built."""
    now = [NOW]
    conversation = interrupted(
        {"id": "i1", "reason": "a", "expiresAt": "2030-01-01T12:30:00+00:00"}, clock=lambda: now[0]
    )
    conversation.resolve("i1", 1)
    now[0] = NOW + timedelta(hours=1)
    with pytest.raises(
        ExpiredInterruptError, match=r"^Interrupt i1 expired at 2030-01-01T12:30:00"
    ):
        conversation.next_input()


def test_an_explicit_expired_resolution_is_refused() -> None:
    """An explicit `resume` is checked like recorded answers."""
    conversation = interrupted({"id": "i1", "reason": "a", "expiresAt": "2000-01-01"})
    entry = agui.ResumeEntry(interrupt_id="i1", status=agui.ResumeStatus.RESOLVED, payload=1)
    with pytest.raises(ExpiredInterruptError):
        conversation.next_input(resume=[entry])


def test_an_explicit_resume_is_sent_as_given() -> None:
    """An explicit `resume` replaces the recorded answers."""
    conversation = interrupted({"id": "i1", "reason": "a"})
    conversation.cancel("i1")
    entry = agui.ResumeEntry(interrupt_id="i1", status=agui.ResumeStatus.RESOLVED, payload="yes")
    assert conversation.next_input(resume=[entry]).resume == (entry,)


@pytest.mark.parametrize(
    ("expires_at", "expired"),
    [
        ("2030-01-01T12:00:00Z", True),  # exactly now: expired (<=)
        ("2030-01-01T12:00:01Z", False),
        ("2030-01-01T13:00:00+02:00", True),  # 11:00 UTC
        ("2030-01-01T11:59:59", True),  # no offset: read as UTC
        ("next tuesday", False),  # unreadable: never expires
        ("", False),
    ],
)
def test_expiry_reading(expires_at: str, expired: bool) -> None:
    """expiresAt is ISO 8601; at or before now is expired; unreadable never expires."""
    interrupt = agui.Interrupt(id="i", reason="r", expires_at=expires_at)
    at = expires(interrupt)
    assert (at is not None and at <= NOW) is expired


def test_an_unreadable_expiry_can_still_be_answered() -> None:
    """An interrupt whose expiresAt cannot be read is answerable."""
    conversation = interrupted({"id": "i1", "reason": "a", "expiresAt": "soon"})
    conversation.resolve("i1", 1)
    assert conversation.next_input().resume is not None


def test_answers_go_stale_when_the_next_run_finishes() -> None:
    """Once a run finishes, earlier answers are dropped, even for a reused interrupt id."""
    conversation = interrupted({"id": "i1", "reason": "a"})
    conversation.resolve("i1", 1)
    conversation.consume(
        [
            {**RUN, "runId": "r2"},
            {
                **DONE,
                "runId": "r2",
                "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "b"}]},
            },
        ]
    )
    with pytest.raises(PendingInterruptsError):
        conversation.next_input()


def test_a_successful_run_leaves_nothing_pending() -> None:
    """After a resumed run succeeds the next input needs no resume."""
    conversation = interrupted({"id": "i1", "reason": "a"})
    conversation.cancel("i1")
    conversation.next_input()
    conversation.consume([{**RUN, "runId": "r2"}, {**DONE, "runId": "r2"}])
    assert conversation.pending_interrupts == ()
    assert conversation.next_input().resume is None


# ── the pipeline ─────────────────────────────────────────────────────────────────────────────


def test_consume_runs_the_whole_pipeline() -> None:
    """Chunks are expanded, events verified and applied; the run's result is returned."""
    conversation = Conversation("t", keep_events=True)
    result = conversation.consume(
        [
            json.dumps(RUN),
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "Hel"},
            b'{"type":"TEXT_MESSAGE_CHUNK","delta":"lo"}',
            agui.RunFinishedEvent(thread_id="t", run_id="r", result=[1]),
        ]
    )
    assert result is not None and result.outcome == "success" and result.result == [1]
    assert conversation.messages_json() == [{"id": "m", "role": "assistant", "content": "Hello"}]
    assert conversation.summary()["eventTypes"] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


def test_stripped_members_and_unknown_events_are_warnings() -> None:
    """Unknown members are stripped and unknown events dropped, each reported with the number of
    its event as received (from 1)."""
    conversation = Conversation("t", keep_events=True)
    conversation.consume([RUN, {"type": "FUTURE_EVENT"}, {**DONE, "futureProp": 1}])
    warnings = conversation.summary()["warnings"]
    assert [(w["kind"], w["pointer"], w["event"]) for w in warnings] == [
        ("dropped_event", "/type", 2),
        ("stripped", "/futureProp", 3),
    ]
    assert conversation.summary()["eventTypes"] == ["RUN_STARTED", "RUN_FINISHED"]


def test_a_truncated_stream_is_rejected_and_recorded() -> None:
    """A stream ending inside a run raises; the run is truncated and the summary failed."""
    conversation = Conversation("t", keep_events=True)
    with pytest.raises(ProtocolError, match="without a terminal event"):
        conversation.consume([RUN, {"type": "TEXT_MESSAGE_START", "messageId": "m"}])
    assert conversation.runs[-1].outcome == "truncated"
    summary = conversation.summary()
    assert summary["outcome"] == "failed"
    assert "without a terminal event" in summary["error"]
    assert summary["eventTypes"] == ["RUN_STARTED", "TEXT_MESSAGE_START"]


@pytest.mark.parametrize("keep_partial", [False, True])
def test_a_rejected_event_keeps_what_came_before(keep_partial: bool) -> None:
    """Events before the one the verifier rejects are delivered and applied; the rejected run is
    then rolled back (the state as before it) unless keep_partial."""
    conversation = Conversation("t", keep_events=True, keep_partial=keep_partial)
    with pytest.raises(ProtocolError, match="No active text message found with ID 'x'"):
        conversation.consume(
            [
                RUN,
                {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": "x", "delta": "?"},
                DONE,
            ]
        )
    assert conversation.state == ({"a": 1} if keep_partial else {})
    assert conversation.summary()["eventTypes"] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert conversation.failures == [conversation.summary()["error"]]


def test_a_malformed_event_is_a_failure_not_a_crash() -> None:
    """A known field with the wrong type rejects the stream with a StreamError naming the frame
    (as HttpAgent.run raises it)."""
    conversation = Conversation("t")
    with pytest.raises(agui.StreamError, match="frame 2"):
        conversation.consume([RUN, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42}])
    summary = conversation.summary()
    assert summary["outcome"] == "failed" and "/delta" in summary["error"]


def test_a_producer_run_error_is_an_event_not_an_exception() -> None:
    """RUN_ERROR is delivered; the run is recorded as error and the summary says "error" (the
    agent's, not a rejection by the client) with its message."""
    conversation = Conversation("t", keep_events=True)
    result = conversation.consume([RUN, {"type": "RUN_ERROR", "message": "model overloaded"}])
    assert result is not None and result.outcome == "error"
    summary = conversation.summary()
    assert (summary["outcome"], summary["error"]) == ("error", "model overloaded")
    assert summary["eventTypes"] == ["RUN_STARTED", "RUN_ERROR"]


def test_runs_after_a_run_error_are_processed() -> None:
    """A RUN_ERROR ends its run, not the stream: a second run in the same stream is applied, and
    the summary still reports "error" (some run did not complete)."""
    conversation = Conversation("t", keep_events=True)
    conversation.consume(
        [
            RUN,
            {"type": "RUN_ERROR", "message": "first attempt failed"},
            {**RUN, "runId": "r2"},
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "b", "delta": "second"},
            {**DONE, "runId": "r2"},
        ]
    )
    assert [r.outcome for r in conversation.runs] == ["error", "success"]
    summary = conversation.summary()
    assert (summary["outcome"], summary["error"]) == ("error", "first attempt failed")
    assert summary["messages"] == [{"id": "b", "role": "assistant", "content": "second"}]


def test_an_interrupt_after_a_completed_run_is_the_outcome() -> None:
    """The last run's interrupt decides: the summary says "interrupt", with no error."""
    conversation = Conversation("t")
    conversation.consume(
        [
            RUN,
            DONE,
            {**RUN, "runId": "r2"},
            {
                **DONE,
                "runId": "r2",
                "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "x"}]},
            },
        ]
    )
    assert conversation.outcome() == ("interrupt", None)


def test_events_are_not_kept_by_default() -> None:
    """Without keep_events the conversation holds messages and state, not the events; on_event
    still sees each one as it is applied."""
    seen: list[str] = []
    conversation = Conversation("t", on_event=lambda e: seen.append(e.type.value))
    conversation.consume(
        [RUN, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}, DONE]
    )
    assert conversation.events == []
    assert conversation.summary()["eventTypes"] == []
    assert seen == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert [m.content for m in conversation.messages] == ["x"]


def test_an_empty_stream_is_not_a_success() -> None:
    """No event at all is reported, not taken as a completed run."""
    conversation = Conversation("t")
    with pytest.raises(ProtocolError, match="without any event"):
        conversation.consume([])
    assert conversation.summary()["outcome"] == "failed"


def test_several_runs_in_one_stream() -> None:
    """A stream may carry several runs; messages accumulate."""
    conversation = Conversation("t")
    conversation.consume(
        [
            RUN,
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "a", "delta": "1"},
            DONE,
            {**RUN, "runId": "r2"},
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "b", "delta": "2"},
            {**DONE, "runId": "r2"},
        ]
    )
    assert [r.run_id for r in conversation.runs] == ["r", "r2"]
    assert [m["content"] for m in conversation.messages_json()] == ["1", "2"]


def test_summary_has_exactly_the_documented_keys() -> None:
    """outcome, error, events, eventTypes, messages, state, warnings, pendingInterrupts."""
    conversation = interrupted({"id": "i1", "reason": "a"})
    summary = conversation.summary()
    assert set(summary) == SUMMARY_KEYS
    assert summary["outcome"] == "interrupt" and summary["error"] is None
    assert summary["pendingInterrupts"] == [{"id": "i1", "reason": "a"}]
    json.dumps(summary)


def test_pipeline_reports_truncation_even_without_a_verifier() -> None:
    """The pipeline itself refuses to end inside a run, whatever its stages."""
    pipeline = Pipeline(stages=[])
    pipeline.feed(RUN)
    with pytest.raises(ProtocolError, match="without a terminal event"):
        pipeline.finish()
    assert pipeline.reducer.runs[-1].outcome == "truncated"


def test_pipeline_without_a_conversation() -> None:
    """Pipeline works on its own reducer; run() feeds and finishes."""
    pipeline = Pipeline()
    delivered = pipeline.run([RUN, {"type": "STATE_SNAPSHOT", "snapshot": 0}, DONE])
    assert [e.type for e in delivered] == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert pipeline.reducer.state == 0


def _walk_stream(pipeline: Pipeline, items: list[Any]) -> list[Any]:
    """What a pipeline makes of a stream: each event delivered (as JSON), the error that stops
    it (its text and frame), then the warnings, the runs, the messages and the state."""
    seen: list[Any] = []
    try:
        for item in items:
            seen += [agui.to_json(e) for e in pipeline.steps(item)]
        seen += [agui.to_json(e) for e in pipeline.finish()]
    except (ProtocolError, agui.StreamError) as exc:
        seen.append(("error", str(exc), getattr(exc, "frame", None)))
    reducer = pipeline.reducer
    made = [
        seen,
        [(w.kind, w.message, w.pointer, w.event) for w in reducer.warnings],
        [(r.outcome, r.error_message, r.pending_tool_call_ids) for r in reducer.runs],
        reducer.messages_json(),
        reducer.state,
    ]
    # The ids minted for a legacy producer's reasoning are random: named by their order instead.
    text = json.dumps(made, default=list)
    minted = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text)
    for number, uuid_ in enumerate(dict.fromkeys(minted)):
        text = text.replace(uuid_, f"minted-{number}")
    return json.loads(text)  # type: ignore[no-any-return]


def test_the_pipelines_fast_path_changes_nothing() -> None:
    """Every conformance case's stream, and streams that break the rules around an open
    message (content after RUN_ERROR, after its END, in a chunk lane, of a subagent), go through
    the default pipeline (deltas of an open stream skip the stages) exactly as through the same
    stages passed explicitly (every event through each stage)."""
    from agui.stream.chunks import ChunkExpander
    from agui.stream.verify import Verifier

    from .conformance.runner import frames, load_cases

    start = {"type": "TEXT_MESSAGE_START", "messageId": "m"}
    content = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}
    end = {"type": "TEXT_MESSAGE_END", "messageId": "m"}
    streams = [frames(case) for case in load_cases()]
    streams += [
        [RUN, start, content, {"type": "RUN_ERROR", "message": "boom"}, content],
        [RUN, start, content, end, content, DONE],
        [RUN, start, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "c", "delta": "a"}, content],
        [RUN, start, {**content, "subagentRunId": "s"}, end, DONE],
        [RUN, {"type": "TOOL_CALL_START", "toolCallId": "t", "toolCallName": "f"}]
        + [{"type": "TOOL_CALL_ARGS", "toolCallId": "t", "delta": "{"}] * 3
        + [
            {"type": "TOOL_CALL_END", "toolCallId": "t"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "t", "delta": "}"},
        ],
        [RUN, {"type": "REASONING_MESSAGE_START", "messageId": "r", "role": "reasoning"}]
        + [{"type": "REASONING_MESSAGE_CONTENT", "messageId": "r", "delta": "hm"}] * 2
        + [{"type": "REASONING_MESSAGE_END", "messageId": "r"}, DONE],
    ]
    assert len(streams) > 100
    for items in streams:
        quick = _walk_stream(Pipeline(), items)
        slow = _walk_stream(Pipeline(stages=[ChunkExpander(), Verifier()]), items)
        assert quick == slow, items


# ── running an agent ─────────────────────────────────────────────────────────────────────────


class Echo:
    """A local agent: echoes the last user message and stores the resume it got in the state."""

    def __init__(self) -> None:
        self.inputs: list[agui.RunAgentInput] = []

    async def __call__(self, run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        self.inputs.append(run_input)
        ids: dict[str, Any] = {"thread_id": run_input.thread_id, "run_id": run_input.run_id}
        yield agui.RunStartedEvent(**ids)
        last = run_input.messages[-1] if run_input.messages else None
        if (
            run_input.resume is None
            and isinstance(last, agui.UserMessage)
            and last.content == "ask"
        ):
            interrupt = agui.Interrupt(id="approve", reason="input_required")
            yield agui.RunFinishedEvent(
                **ids, outcome=agui.RunFinishedInterruptOutcome(interrupts=(interrupt,))
            )
            return
        yield agui.TextMessageChunkEvent(message_id=f"a-{run_input.run_id}", delta="echo")
        yield agui.StateSnapshotEvent(snapshot=[agui.to_json(r) for r in run_input.resume or ()])
        yield agui.RunFinishedEvent(**ids)


def test_run_an_agent_across_an_interrupt() -> None:
    """run() sends the history, stops at the interrupt, and the resumed run carries the answer."""

    async def main() -> None:
        agent = Echo()
        conversation = Conversation("thread")
        first = await conversation.run(agent, "ask")
        assert first is not None and first.outcome == "interrupt"
        with pytest.raises(PendingInterruptsError):
            await conversation.run(agent)
        conversation.resolve("approve", {"ok": True})
        second = await conversation.run(agent)
        assert second is not None and second.outcome == "success"
        assert conversation.state == [
            {"interruptId": "approve", "status": "resolved", "payload": {"ok": True}}
        ]
        assert [type(m) for m in agent.inputs[1].messages] == [agui.UserMessage]
        assert [m["role"] for m in conversation.messages_json()] == ["user", "assistant"]

    asyncio.run(main())


def test_run_records_a_failing_agent() -> None:
    """A local agent that raises mid-stream ends its run in RUN_ERROR AGENT_ERROR, as behind a
    server: the run is recorded as error, the exception's text stays out of the conversation."""

    async def broken(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        raise ConnectionError("connection reset")

    async def main() -> None:
        conversation = Conversation("t")
        result = await conversation.run(broken, "hi")
        assert result is not None and result.outcome == "error"
        assert result.error_code == "AGENT_ERROR"
        outcome, error = conversation.outcome()
        assert outcome == "error" and error is not None and "connection reset" not in error

    asyncio.run(main())


FRAMES = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "futureProp": 1},
    {"type": "FUTURE_EVENT"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def raw_sse_app(frames: list[Any]) -> Any:
    """An ASGI app answering every POST with these frames, verbatim, as SSE."""
    body = b"".join(
        b"data: " + (f if isinstance(f, bytes) else json.dumps(f).encode()) + b"\n\n"
        for f in frames
    )

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def test_run_over_http_reports_what_the_client_stripped(serve: Callable[[Any], str]) -> None:
    """Warnings from HttpAgent's tolerant decoding are collected, numbered by frame (from 1)."""
    url = serve(raw_sse_app(FRAMES))

    async def main() -> Conversation:
        conversation = Conversation("t")
        await conversation.run(agui.HttpAgent(url), "hi")
        return conversation

    summary = asyncio.run(main()).summary()
    assert summary["outcome"] == "completed"
    assert [(w["kind"], w["pointer"], w["event"]) for w in summary["warnings"]] == [
        ("stripped", "/futureProp", 1),
        ("dropped_event", "/type", 2),
    ]
    assert summary["messages"][-1] == {"id": "m", "role": "assistant", "content": "hi"}


# ── the command line ─────────────────────────────────────────────────────────────────────────


def cli(*args: str | Path) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "agui", *map(str, args)],
        capture_output=True,
        timeout=60,
        check=False,
        text=True,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def summary_of(stdout: str) -> dict[str, Any]:
    (line,) = stdout.splitlines()
    summary: dict[str, Any] = json.loads(line)
    assert set(summary) == SUMMARY_KEYS
    return summary


def jsonl(path: Path, events: list[Any]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_replay_json_lines(tmp_path: Path) -> None:
    """A JSON Lines recording is replayed: exit 0 and a completed summary."""
    code, out, _ = cli("replay", jsonl(tmp_path / "s.jsonl", FRAMES), "--summary")
    summary = summary_of(out)
    assert code == 0 and summary["outcome"] == "completed"
    assert summary["eventTypes"] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert [w["kind"] for w in summary["warnings"]] == ["stripped", "dropped_event"]


def test_replay_an_sse_capture(tmp_path: Path) -> None:
    """An SSE capture (comments, CRLF) is recognised by its content."""
    capture = ": keep-alive\r\n\r\n" + "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in FRAMES)
    path = tmp_path / "capture.txt"
    path.write_text(capture)
    code, out, _ = cli("replay", path, "--summary")
    assert code == 0 and summary_of(out)["messages"] == [
        {"id": "m", "role": "assistant", "content": "hi"}
    ]


@pytest.mark.parametrize(
    ("events", "outcome", "error"),
    [
        (
            [{"type": "TEXT_MESSAGE_START", "messageId": "m"}],
            "failed",
            "First event must be 'RUN_STARTED'",
        ),
        ([RUN], "failed", "without a terminal event"),
        ([RUN, {"type": "STATE_DELTA", "delta": "nope"}], "failed", "/delta"),
        ([RUN, {"type": "RUN_ERROR", "message": "overloaded"}], "error", "overloaded"),
    ],
)
def test_replay_failures_exit_1_with_a_summary(
    tmp_path: Path, events: list[Any], outcome: str, error: str
) -> None:
    """Rejections and truncation give outcome failed, a RUN_ERROR gives error; both exit 1,
    with no traceback."""
    code, out, err = cli("replay", jsonl(tmp_path / "s.jsonl", events), "--summary")
    summary = summary_of(out)
    assert code == 1 and summary["outcome"] == outcome
    assert error in summary["error"]
    assert "Traceback" not in err


def test_replay_of_an_error_then_a_second_run(tmp_path: Path) -> None:
    """A RUN_ERROR, then a second run in the same stream: "error", exit 1, and the second run's
    messages are in the summary."""
    events = [
        RUN,
        {"type": "RUN_ERROR", "message": "overloaded"},
        {**RUN, "runId": "r2"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "b", "delta": "retry worked"},
        {**DONE, "runId": "r2"},
    ]
    code, out, _ = cli("replay", jsonl(tmp_path / "s.jsonl", events), "--summary")
    summary = summary_of(out)
    assert (code, summary["outcome"], summary["error"]) == (1, "error", "overloaded")
    assert summary["messages"] == [{"id": "b", "role": "assistant", "content": "retry worked"}]
    assert summary["eventTypes"][-1] == "RUN_FINISHED"


def test_replay_of_an_interrupt_exits_0(tmp_path: Path) -> None:
    """A run that finishes with an interrupt is "interrupt" and exits 0 (it did what it meant)."""
    events = [
        RUN,
        {**DONE, "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "x"}]}},
    ]
    code, out, _ = cli("replay", jsonl(tmp_path / "s.jsonl", events), "--summary")
    summary = summary_of(out)
    assert (code, summary["outcome"], summary["error"]) == (0, "interrupt", None)
    assert summary["pendingInterrupts"] == [{"id": "i", "reason": "x"}]


def test_replay_without_summary_prints_events(tmp_path: Path) -> None:
    """Without --summary every delivered event is a JSON line."""
    code, out, _ = cli("replay", jsonl(tmp_path / "s.jsonl", [RUN, DONE]))
    assert code == 0
    assert [json.loads(line)["type"] for line in out.splitlines()] == [
        "RUN_STARTED",
        "RUN_FINISHED",
    ]


def test_replay_an_unreadable_file(tmp_path: Path) -> None:
    """A missing file is a usage error (exit 2)."""
    code, _, err = cli("replay", tmp_path / "missing.jsonl", "--summary")
    assert code == 2 and "cannot read" in err


def test_run_summary_over_http(serve: Callable[[Any], str], tmp_path: Path) -> None:
    """`agui run URL --input FILE --summary` prints one summary; the input's history is kept."""
    url = serve(raw_sse_app(FRAMES))
    run_input = agui.RunAgentInput(
        thread_id="t",
        run_id="r",
        messages=(agui.UserMessage(id="u", content="hi"),),
        state={"s": 1},
    )
    path = tmp_path / "input.json"
    path.write_bytes(agui.encode(run_input))
    code, out, _ = cli("run", url, "--input", path, "--summary")
    summary = summary_of(out)
    assert code == 0 and summary["outcome"] == "completed"
    assert [m["id"] for m in summary["messages"]] == ["u", "m"]
    assert summary["state"] == {"s": 1}
    assert [w["kind"] for w in summary["warnings"]] == ["stripped", "dropped_event"]


def test_run_summary_reports_a_truncated_stream(serve: Callable[[Any], str]) -> None:
    """A server that stops inside a run gives outcome failed and exit 1."""
    url = serve(raw_sse_app(FRAMES[:3]))
    code, out, _ = cli("run", url, "--summary")
    summary = summary_of(out)
    assert code == 1 and "without a terminal event" in summary["error"]


def test_run_summary_reports_an_unreachable_server() -> None:
    """A transport failure is a failed summary, not a traceback."""
    code, out, _ = cli("run", "http://127.0.0.1:9/agent", "--summary")
    summary = summary_of(out)
    assert code == 1 and summary["outcome"] == "failed" and summary["error"]


def test_an_unexpected_failure_is_described_in_a_sentence() -> None:
    """A failure that is not one of the package's errors (a bug, a transport error) reaches the
    summary as a sentence with its type, never as a bare class name."""

    async def agent_with_a_broken_transport(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)

    class BrokenSource:
        """A frame source whose transport fails without a message."""

        async def frames(self, input: agui.RunAgentInput, /) -> AsyncIterator[bytes]:
            yield b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}'
            raise LookupError()

        def __call__(self, input: agui.RunAgentInput, /) -> AsyncIterator[Any]:
            return agent_with_a_broken_transport(input)

    conversation = Conversation("t")
    with pytest.raises(LookupError):
        asyncio.run(conversation.run(BrokenSource(), "hi"))
    outcome, error = conversation.outcome()
    assert outcome == "failed"
    assert error == "LookupError while consuming the stream: no details given"
