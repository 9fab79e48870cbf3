"""Verification (agui.stream.verify.Verifier): one test per rule of protocol.md §3.5, the rules the issue
adds (thread/run agreement, one thread per stream, unique interrupt ids, truncation) and the
protocol-version warning of §3.9."""

from __future__ import annotations

import enum
import inspect
import re
from typing import Any, ClassVar

import attrs
import pytest

import agui
from agui.errors import ProtocolError
from agui.stream.verify import TRUNCATED, Verifier
from agui.wire.codec import UnknownEvent

# ── event shorthands ─────────────────────────────────────────────────────────────────────────


def started(run: str = "r1", thread: str = "t", **kw: Any) -> agui.RunStartedEvent:
    return agui.RunStartedEvent(thread_id=thread, run_id=run, **kw)


def finished(run: str = "r1", thread: str = "t", **kw: Any) -> agui.RunFinishedEvent:
    return agui.RunFinishedEvent(thread_id=thread, run_id=run, **kw)


ERROR = agui.RunErrorEvent(message="boom")


def text(kind: str, mid: str, tag: str | None = None) -> Any:
    if kind == "start":
        return agui.TextMessageStartEvent(message_id=mid, subagent_run_id=tag)
    if kind == "content":
        return agui.TextMessageContentEvent(message_id=mid, delta="x", subagent_run_id=tag)
    return agui.TextMessageEndEvent(message_id=mid, subagent_run_id=tag)


def tool(kind: str, tid: str, tag: str | None = None, parent: str | None = None) -> Any:
    if kind == "start":
        return agui.ToolCallStartEvent(
            tool_call_id=tid, tool_call_name="f", subagent_run_id=tag, parent_message_id=parent
        )
    if kind == "args":
        return agui.ToolCallArgsEvent(tool_call_id=tid, delta="{}", subagent_run_id=tag)
    return agui.ToolCallEndEvent(tool_call_id=tid, subagent_run_id=tag)


def step(kind: str, name: str, tag: str | None = None) -> Any:
    cls = agui.StepStartedEvent if kind == "start" else agui.StepFinishedEvent
    return cls(step_name=name, subagent_run_id=tag)


def sub_started(sid: str, parent: str | None = None) -> agui.SubagentStartedEvent:
    return agui.SubagentStartedEvent(subagent_run_id=sid, name="n", parent_subagent_run_id=parent)


def sub_finished(sid: str) -> agui.SubagentFinishedEvent:
    return agui.SubagentFinishedEvent(subagent_run_id=sid)


# ── drivers ──────────────────────────────────────────────────────────────────────────────────


def accepts(*events: Any, verifier: Verifier | None = None) -> Verifier:
    """Every event is accepted (and passed on unchanged) and the stream ends cleanly."""
    verifier = verifier or Verifier()
    for event in events:
        assert verifier.feed(event) == [event]
    verifier.finish()
    return verifier


def rejects(*events: Any) -> str:
    """The last event (only) is rejected; returns the message."""
    verifier = Verifier()
    for event in events[:-1]:
        verifier.feed(event)
    with pytest.raises(ProtocolError) as info:
        verifier.feed(events[-1])
    assert info.value.event == len(events)  # counted from 1
    return str(info.value)


# ── lifecycle ────────────────────────────────────────────────────────────────────────────────


def test_the_first_event_must_be_run_started() -> None:
    assert rejects(step("start", "s")) == "First event must be 'RUN_STARTED'"


def test_a_stream_may_open_with_run_error() -> None:
    accepts(ERROR)


def test_nothing_but_run_started_after_run_error() -> None:
    assert rejects(started(), ERROR, step("start", "s")) == (
        "Cannot send event type 'STEP_STARTED': The run has already errored with 'RUN_ERROR'. "
        "No further events can be sent."
    )
    assert "already errored" in rejects(ERROR, ERROR)


def test_nothing_but_run_started_or_run_error_after_run_finished() -> None:
    assert rejects(started(), finished(), step("start", "s")) == (
        "Cannot send event type 'STEP_STARTED': The run has already finished with "
        "'RUN_FINISHED'. Start a new run with 'RUN_STARTED'."
    )
    accepts(started(), finished(), ERROR)


def test_run_started_while_a_run_is_active_is_rejected() -> None:
    assert rejects(started(), started("r2")).startswith(
        "Cannot send 'RUN_STARTED' while a run is still active."
    )


def test_several_runs_in_one_stream_each_start_afresh() -> None:
    """A subagent id closed in the first run may be used again in the second (per-run state)."""
    accepts(
        ERROR,
        started("r1"),
        sub_started("s"),
        sub_finished("s"),
        finished("r1"),
        started("r2"),
        sub_started("s"),
        sub_finished("s"),
        finished("r2"),
    )
    accepts(started("r1"), step("start", "x"), ERROR, started("r2"), finished("r2"))


def test_a_stream_that_ends_inside_a_run_is_truncated() -> None:
    verifier = Verifier()
    verifier.feed(started())
    with pytest.raises(ProtocolError) as info:
        verifier.finish()
    assert str(info.value) == TRUNCATED
    assert TRUNCATED == (
        "The stream ended without a terminal event (RUN_FINISHED or RUN_ERROR): the run is "
        "truncated."
    )


def test_a_stream_that_ends_after_a_terminal_or_with_no_run_is_complete() -> None:
    accepts()
    accepts(started(), finished())
    accepts(started(), ERROR)
    accepts(started(), finished(), started("r2"), ERROR)


# ── thread and run identity, interrupts (beyond TS 1.0.0) ─────────────────────────────────────


def test_run_finished_must_name_the_thread_of_its_run_started() -> None:
    assert rejects(started(), finished(thread="other")) == (
        "RUN_FINISHED threadId 'other' does not match RUN_STARTED threadId 't'."
    )


def test_run_finished_must_name_the_run_of_its_run_started() -> None:
    assert rejects(started("r1"), finished("r2")) == (
        "RUN_FINISHED runId 'r2' does not match RUN_STARTED runId 'r1'."
    )


def test_a_stream_carries_one_thread() -> None:
    message = rejects(started(), finished(), started("r2", thread="u"))
    assert message.startswith("RUN_STARTED threadId 'u' does not match the stream's threadId 't'")
    accepts(started(), finished(), started("r2"), finished("r2"))


def test_interrupt_ids_are_unique_within_an_outcome() -> None:
    def outcome(*ids: str) -> agui.RunFinishedInterruptOutcome:
        return agui.RunFinishedInterruptOutcome(
            interrupts=tuple(agui.Interrupt(id=i, reason="input_required") for i in ids)
        )

    accepts(started(), finished(outcome=outcome("i1", "i2")))
    assert rejects(started(), finished(outcome=outcome("i1", "i2", "i1"))).startswith(
        "RUN_FINISHED lists interrupt id 'i1' more than once"
    )


# ── RUN_FINISHED with something open ─────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("opened", "message"),
    [
        (
            [step("start", "a"), step("start", "b", "s1")],
            "Cannot send 'RUN_FINISHED' while steps are still active: a, b (subagent 's1')",
        ),
        (
            [text("start", "m1"), text("start", "m2")],
            "Cannot send 'RUN_FINISHED' while text messages are still active: m1, m2",
        ),
        (
            [agui.ReasoningMessageStartEvent(message_id="r")],
            "Cannot send 'RUN_FINISHED' while reasoning messages are still active: r",
        ),
        (
            [agui.ReasoningStartEvent(message_id="r")],
            "Cannot send 'RUN_FINISHED' while reasoning spans are still active: r",
        ),
        (
            [tool("start", "t")],
            "Cannot send 'RUN_FINISHED' while tool calls are still active: t",
        ),
        (
            [sub_started("s1")],
            "Cannot send 'RUN_FINISHED' while subagents are still active: s1",
        ),
    ],
    ids=["steps", "text", "reasoning-message", "reasoning-span", "tool", "subagent"],
)
def test_run_finished_lists_what_is_still_open(opened: list[Any], message: str) -> None:
    assert rejects(started(), *opened, finished()) == message


# ── brackets ─────────────────────────────────────────────────────────────────────────────────


def test_text_message_brackets() -> None:
    assert rejects(started(), text("start", "m"), text("start", "m")) == (
        "Cannot send 'TEXT_MESSAGE_START' event: A text message with ID 'm' is already in "
        "progress. Complete it with 'TEXT_MESSAGE_END' first."
    )
    assert rejects(started(), text("content", "m")) == (
        "Cannot send 'TEXT_MESSAGE_CONTENT' event: No active text message found with ID 'm'. "
        "Start a text message with 'TEXT_MESSAGE_START' first."
    )
    assert rejects(started(), text("start", "m"), text("end", "m"), text("end", "m")) == (
        "Cannot send 'TEXT_MESSAGE_END' event: No active text message found with ID 'm'. "
        "A 'TEXT_MESSAGE_START' event must be sent first."
    )


def test_a_closed_text_message_may_be_reopened() -> None:
    m = "m"
    accepts(
        started(), text("start", m), text("end", m), text("start", m), text("end", m), finished()
    )


def test_tool_call_brackets() -> None:
    assert rejects(started(), tool("start", "t"), tool("start", "t")) == (
        "Cannot send 'TOOL_CALL_START' event: A tool call with ID 't' is already in progress. "
        "Complete it with 'TOOL_CALL_END' first."
    )
    assert rejects(started(), tool("args", "t")) == (
        "Cannot send 'TOOL_CALL_ARGS' event: No active tool call found with ID 't'. "
        "Start a tool call with 'TOOL_CALL_START' first."
    )
    assert rejects(started(), tool("end", "t")) == (
        "Cannot send 'TOOL_CALL_END' event: No active tool call found with ID 't'. "
        "A 'TOOL_CALL_START' event must be sent first."
    )
    accepts(
        started(),
        tool("start", "t"),
        tool("end", "t"),
        tool("start", "t"),
        tool("end", "t"),
        finished(),
    )


def test_reasoning_brackets() -> None:
    span = agui.ReasoningStartEvent
    span_end = agui.ReasoningEndEvent
    msg = agui.ReasoningMessageStartEvent
    assert "A reasoning span with ID 'r' is already in progress" in rejects(
        started(), span(message_id="r"), span(message_id="r")
    )
    assert "A reasoning message with ID 'r' is already in progress" in rejects(
        started(), msg(message_id="r"), msg(message_id="r")
    )
    assert rejects(started(), agui.ReasoningMessageContentEvent(message_id="r", delta="")) == (
        "Cannot send 'REASONING_MESSAGE_CONTENT' event: No active reasoning message found with "
        "ID 'r'. Start a reasoning message with 'REASONING_MESSAGE_START' first."
    )
    assert "Cannot send 'REASONING_MESSAGE_END' event: No active reasoning message found" in (
        rejects(started(), agui.ReasoningMessageEndEvent(message_id="r"))
    )
    assert "No active reasoning span found with ID 'r'" in rejects(
        started(), msg(message_id="r"), span_end(message_id="r")
    )
    # A span and the message inside it may share an id; both may reopen after closing.
    end = agui.ReasoningMessageEndEvent(message_id="r")
    accepts(
        started(),
        span(message_id="r"),
        msg(message_id="r"),
        end,
        msg(message_id="r"),
        end,
        span_end(message_id="r"),
        finished(),
    )


def test_step_brackets() -> None:
    assert rejects(started(), step("start", "s"), step("start", "s")) == (
        "Step \"s\" is already active for 'STEP_STARTED'"
    )
    assert rejects(started(), step("start", "s", "a"), step("start", "s", "a")) == (
        "Step \"s\" is already active for 'STEP_STARTED' in subagent 'a'"
    )
    assert rejects(started(), step("finish", "s")) == (
        "Cannot send 'STEP_FINISHED' for step \"s\" that was not started"
    )


def test_steps_are_keyed_by_owner() -> None:
    accepts(
        started(),
        step("start", "tools"),
        step("start", "tools", "s1"),
        step("finish", "tools", "s1"),
        step("finish", "tools"),
        finished(),
    )
    assert rejects(started(), step("start", "tools"), step("finish", "tools", "s1")) == (
        "Cannot send 'STEP_FINISHED' for step \"tools\" attributed to subagent 's1': that step "
        "is open under the parent agent. A step must be finished by whoever started it."
    )


# ── subagents ────────────────────────────────────────────────────────────────────────────────


def test_a_subagent_cannot_start_twice_while_active() -> None:
    assert rejects(started(), sub_started("s"), sub_started("s")) == (
        "Cannot send 'SUBAGENT_STARTED': subagent 's' is already active. Finish it with "
        "'SUBAGENT_FINISHED' first."
    )


def test_a_closed_subagent_id_cannot_be_reused_in_the_run() -> None:
    assert rejects(started(), sub_started("s"), sub_finished("s"), sub_started("s")) == (
        "Cannot send 'SUBAGENT_STARTED': subagent 's' has already finished in this run. "
        "Subagent IDs are per-invocation and cannot be reused."
    )


def test_a_parent_subagent_must_have_started_in_this_run() -> None:
    assert rejects(started(), sub_started("c", parent="p")) == (
        "Cannot send 'SUBAGENT_STARTED': parentSubagentRunId 'p' has not been started in this run."
    )
    accepts(
        started(),
        sub_started("p"),
        sub_finished("p"),
        sub_started("c", parent="p"),
        sub_finished("c"),
        finished(),
    )


@pytest.mark.parametrize(
    "terminal",
    [sub_finished("s"), agui.SubagentErrorEvent(subagent_run_id="s", message="x")],
    ids=["finished", "error"],
)
def test_a_subagent_terminal_needs_an_active_subagent(terminal: Any) -> None:
    assert rejects(started(), terminal) == (
        f"Cannot send '{terminal.type}': no active subagent found with ID 's'. "
        "A 'SUBAGENT_STARTED' event must be sent first."
    )


# ── attribution ──────────────────────────────────────────────────────────────────────────────


def test_a_continuation_must_not_disagree_with_its_opener() -> None:
    assert rejects(started(), text("start", "m", "s1"), text("content", "m", "s2")) == (
        "Cannot send 'TEXT_MESSAGE_CONTENT': subagentRunId 's2' does not match the message 'm' "
        "opener's subagent 's1'."
    )
    assert "opener's subagent '(the parent agent)'" in rejects(
        started(), tool("start", "t"), tool("end", "t", "s1")
    )


def test_an_untagged_continuation_agrees_and_tags_need_no_announcement() -> None:
    accepts(
        started(),
        text("start", "m", "ghost"),
        text("content", "m"),
        text("end", "m", "ghost"),
        finished(),
    )


def test_the_owner_outlives_the_close() -> None:
    assert "does not match the message 'm' opener's subagent 's1'" in rejects(
        started(), text("start", "m", "s1"), text("end", "m"), text("start", "m", "s2")
    )


def test_an_untagged_reopen_does_not_hand_the_message_to_the_parent() -> None:
    accepts(
        started(),
        text("start", "m", "s1"),
        text("end", "m"),
        text("start", "m"),
        text("content", "m", "s1"),
        text("end", "m"),
        finished(),
    )


def test_a_reasoning_span_and_its_message_share_one_owner() -> None:
    assert "does not match the reasoning message 'r' opener's subagent 's1'" in rejects(
        started(),
        agui.ReasoningStartEvent(message_id="r", subagent_run_id="s1"),
        agui.ReasoningMessageStartEvent(message_id="r", subagent_run_id="s2"),
    )


def test_a_tool_call_belongs_to_its_parent_message() -> None:
    assert rejects(started(), text("start", "m", "s1"), tool("start", "t", "s2", parent="m")) == (
        "Cannot send 'TOOL_CALL_START': subagentRunId 's2' does not match its parent message "
        "'m' owner 's1'. A tool call belongs to the message that carries it."
    )


def test_an_untagged_tool_call_reopened_under_another_owners_message_is_rejected() -> None:
    message = rejects(
        started(),
        text("start", "m1", "s1"),
        text("start", "m2"),
        tool("start", "t", parent="m1"),
        tool("end", "t"),
        tool("start", "t", parent="m2"),
    )
    assert message.startswith(
        "Cannot send 'TOOL_CALL_START': tool call 't' is owned by 's1' but its parent message "
        "'m2' is owned by '(the parent agent)'."
    )


def test_an_untagged_tool_call_inherits_its_parent_messages_owner() -> None:
    assert "does not match the tool call 't' opener's subagent 's1'" in rejects(
        started(), text("start", "m", "s1"), tool("start", "t", parent="m"), tool("args", "t", "s2")
    )


def test_tool_call_result_records_the_owner_of_the_message_it_mints() -> None:
    result = agui.ToolCallResultEvent(
        message_id="r", tool_call_id="t", content="ok", subagent_run_id="s1"
    )
    assert "does not match the message 'r' opener's subagent 's1'" in rejects(
        started(), result, text("start", "r", "s2")
    )


def test_activity_owner_follows_replacing_snapshots_only() -> None:
    def snap(tag: str, replace: bool | None = None) -> agui.ActivitySnapshotEvent:
        return agui.ActivitySnapshotEvent(
            message_id="a", activity_type="plan", content={}, replace=replace, subagent_run_id=tag
        )

    def delta(tag: str) -> agui.ActivityDeltaEvent:
        return agui.ActivityDeltaEvent(
            message_id="a", activity_type="plan", patch=(), subagent_run_id=tag
        )

    assert rejects(started(), snap("s1"), delta("s2")) == (
        "Cannot send 'ACTIVITY_DELTA': subagentRunId 's2' does not match the activity 'a' "
        "opener's subagent 's1'."
    )
    assert "opener's subagent 's1'" in rejects(
        started(), snap("s1"), snap("s2", replace=False), delta("s2")
    )
    accepts(started(), snap("s1"), snap("s2"), delta("s2"), finished())


def test_encrypted_values_agree_with_the_entity_they_attach_to() -> None:
    def value(subtype: str, entity: str, tag: str) -> agui.ReasoningEncryptedValueEvent:
        return agui.ReasoningEncryptedValueEvent(
            subtype=agui.ReasoningEncryptedValueSubtype(subtype),
            entity_id=entity,
            encrypted_value="e",
            subagent_run_id=tag,
        )

    assert "does not match the tool call 'x' opener's subagent 's1'" in rejects(
        started(), tool("start", "x", "s1"), tool("end", "x"), value("tool-call", "x", "s2")
    )
    reasoning = agui.ReasoningMessageStartEvent(message_id="x", subagent_run_id="s1")
    assert "does not match the message 'x' opener's subagent 's1'" in rejects(
        started(), reasoning, value("message", "x", "s2")
    )


def test_messages_snapshot_seeds_owners_and_replaces_recorded_ones() -> None:
    snapshot = agui.MessagesSnapshotEvent(
        messages=(
            agui.AssistantMessage(
                id="m",
                subagent_run_id="s1",
                tool_calls=(
                    agui.ToolCall(id="t", function=agui.FunctionCall(name="f", arguments="")),
                ),
            ),
        )
    )
    assert "does not match the message 'm' opener's subagent 's1'" in rejects(
        started(), snapshot, text("start", "m", "s2")
    )
    assert "does not match the tool call 't' opener's subagent 's1'" in rejects(
        started(), snapshot, tool("start", "t", "s2")
    )
    # The input said the parent owns "m"; the snapshot, which is authoritative, says s1.
    history = agui.RunAgentInput(
        thread_id="t", run_id="r1", messages=(agui.AssistantMessage(id="m"),)
    )
    accepts(
        started(input=history), snapshot, text("start", "m", "s1"), text("end", "m"), finished()
    )


def test_run_started_input_seeds_only_unclaimed_owners() -> None:
    history = agui.RunAgentInput(
        thread_id="t",
        run_id="r1",
        messages=(
            agui.UserMessage(id="u", content="hi", subagent_run_id="s1"),
            agui.UserMessage(id="u", content="again", subagent_run_id="s2"),
        ),
    )
    assert "does not match the message 'u' opener's subagent 's1'" in rejects(
        started(input=history), text("start", "u", "s2")
    )


def test_seeded_reasoning_messages_are_owned_as_reasoning() -> None:
    history = agui.RunAgentInput(
        thread_id="t",
        run_id="r1",
        messages=(agui.ReasoningMessage(id="r", content="", subagent_run_id="s1"),),
    )
    assert "does not match the reasoning message 'r' opener's subagent 's1'" in rejects(
        started(input=history),
        agui.ReasoningMessageStartEvent(message_id="r", subagent_run_id="s2"),
    )


# ── protocol version (§3.9) ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("declared", [None, "1.0", "0.9", "01.0"])
def test_an_absent_equal_or_older_version_is_silent(declared: str | None) -> None:
    assert accepts(started(protocol_version=declared), finished()).warnings == []


def test_a_newer_version_is_warned_about_not_rejected() -> None:
    verifier = accepts(
        started(protocol_version="1.10"), finished(), verifier=Verifier(protocol_version="1.9")
    )
    assert [(w.kind, w.message, w.pointer, w.event) for w in verifier.warnings] == [
        (
            "version",
            "The producer speaks protocol 1.10; this client speaks 1.9. Unrecognised material "
            "will be stripped with warnings.",
            "/protocolVersion",
            1,
        )
    ]


@pytest.mark.parametrize("declared", ["1", "1.0.0", "v1.0", "1.x", "1.0\n", "١.٠"])
def test_an_uninterpretable_version_is_warned_about(declared: str) -> None:
    (warning,) = accepts(started(protocol_version=declared), finished()).warnings
    assert warning.kind == "version"
    assert warning.message == (
        f"The producer declared protocol version '{declared}', which this client cannot interpret."
    )


# ── pass-through ─────────────────────────────────────────────────────────────────────────────


def test_unknown_events_are_passed_on_and_ignored_by_every_rule() -> None:
    unknown = UnknownEvent(type="FUTURE", raw={"type": "FUTURE"})
    accepts(unknown, started(), finished(), unknown)
    assert rejects(unknown, step("start", "s")) == "First event must be 'RUN_STARTED'"


def test_the_error_names_the_number_of_the_offending_event() -> None:
    """Events are counted from 1, as fed (agui.errors has the numbering)."""
    verifier = Verifier()
    for event in (started(), text("start", "m")):
        verifier.feed(event)
    with pytest.raises(ProtocolError) as info:
        verifier.feed(finished())
    assert info.value.event == 3


# ── events a newer spec adds ─────────────────────────────────────────────────────────────────


class _NewType(enum.Enum):
    PROGRESS = "PROGRESS"


@attrs.frozen(kw_only=True)
class ProgressEvent:
    """Stands for an event class the generator made from a newer spec than the verifier knows."""

    type: ClassVar[_NewType] = _NewType.PROGRESS
    label: str
    subagent_run_id: str | None = None


def test_an_event_class_without_a_rule_passes_inside_a_run_untouched() -> None:
    verifier = Verifier()
    progress = ProgressEvent(label="half", subagent_run_id="nobody")
    for event in (started(), text("start", "m"), progress, text("end", "m"), progress):
        assert verifier.feed(event) == [event]
    assert verifier.feed(finished()) == [finished()]
    assert verifier.finish() == []
    assert verifier.warnings == []


def test_an_event_class_without_a_rule_still_obeys_the_run_lifecycle() -> None:
    with pytest.raises(ProtocolError, match="First event must be 'RUN_STARTED'"):
        Verifier().feed(ProgressEvent(label="early"))
    verifier = Verifier()
    verifier.feed(started())
    verifier.feed(finished())
    with pytest.raises(ProtocolError, match="Cannot send event type 'PROGRESS'"):
        verifier.feed(ProgressEvent(label="late"))


def test_no_rule_is_an_assert() -> None:
    import agui.stream.verify as verify

    assert not re.search(r"^\s*assert\b", inspect.getsource(verify), re.M)
