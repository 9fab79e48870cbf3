"""Chunk expansion (agui.stream.chunks.ChunkExpander): one test per rule of protocol.md §3.4."""

from __future__ import annotations

import enum
import inspect
import re
from typing import Any, ClassVar

import attrs
import pytest

import agui
from agui.errors import ProtocolError
from agui.stream.chunks import ChunkExpander
from agui.wire.codec import UnknownEvent

TEXT = agui.TextMessageChunkEvent
TOOL = agui.ToolCallChunkEvent
REASONING = agui.ReasoningMessageChunkEvent


def expand(*events: Any) -> list[Any]:
    expander = ChunkExpander()
    out: list[Any] = []
    for event in events:
        out += expander.feed(event)
    out += expander.finish()
    assert expander.warnings == []
    return out


def types(events: list[Any]) -> list[str]:
    return [str(event.type) for event in events]


def rejects(*events: Any) -> str:
    """Feeds the events; the last one (only) must be rejected. Returns the message."""
    expander = ChunkExpander()
    for event in events[:-1]:
        expander.feed(event)
    with pytest.raises(ProtocolError) as info:
        expander.feed(events[-1])
    assert info.value.event == len(events)  # counted from 1
    return str(info.value)


# ── opening, continuing, closing ─────────────────────────────────────────────────────────────


def test_text_chunks_expand_to_start_content_and_end_before_the_closing_event() -> None:
    step = agui.StepStartedEvent(step_name="s")
    out = expand(TEXT(message_id="m", delta="Hel"), TEXT(delta="lo"), step)
    assert out == [
        agui.TextMessageStartEvent(message_id="m", role=agui.TextMessageRole.ASSISTANT),
        agui.TextMessageContentEvent(message_id="m", delta="Hel"),
        agui.TextMessageContentEvent(message_id="m", delta="lo"),
        agui.TextMessageEndEvent(message_id="m"),
        step,
    ]


def test_text_start_takes_role_and_name_from_the_chunk() -> None:
    out = expand(TEXT(message_id="m", role=agui.TextMessageRole.USER, name="Ada"))
    assert out == [
        agui.TextMessageStartEvent(message_id="m", role=agui.TextMessageRole.USER, name="Ada")
    ]


def test_tool_chunks_expand_to_start_args_and_end() -> None:
    out = expand(
        TOOL(tool_call_id="t", tool_call_name="search", parent_message_id="m", delta='{"q"'),
        TOOL(delta=':"x"}'),
        agui.RunFinishedEvent(thread_id="th", run_id="r"),
    )
    assert out[:4] == [
        agui.ToolCallStartEvent(tool_call_id="t", tool_call_name="search", parent_message_id="m"),
        agui.ToolCallArgsEvent(tool_call_id="t", delta='{"q"'),
        agui.ToolCallArgsEvent(tool_call_id="t", delta=':"x"}'),
        agui.ToolCallEndEvent(tool_call_id="t"),
    ]


def test_reasoning_chunks_expand_to_reasoning_message_start_content_and_end() -> None:
    out = expand(REASONING(message_id="r", delta="hm"), agui.ReasoningEndEvent(message_id="r"))
    assert out[:3] == [
        agui.ReasoningMessageStartEvent(message_id="r"),
        agui.ReasoningMessageContentEvent(message_id="r", delta="hm"),
        agui.ReasoningMessageEndEvent(message_id="r"),
    ]


@pytest.mark.parametrize(
    ("chunk", "message"),
    [
        (TEXT(delta="x"), "First TEXT_MESSAGE_CHUNK must have a messageId"),
        (REASONING(delta="x"), "First REASONING_MESSAGE_CHUNK must have a messageId"),
        (TOOL(tool_call_name="f", delta="x"), "First TOOL_CALL_CHUNK must have a toolCallId"),
        (TOOL(tool_call_id="t", delta="x"), "First TOOL_CALL_CHUNK must have a toolCallName"),
    ],
)
def test_the_first_chunk_must_carry_its_id_and_a_tool_chunk_its_name(
    chunk: Any, message: str
) -> None:
    assert rejects(chunk) == message


def test_a_chunk_after_its_stream_closed_cannot_continue_it_without_an_id() -> None:
    end = agui.CustomEvent(name="n", value=None)
    assert "First TEXT_MESSAGE_CHUNK must have a messageId" in rejects(
        TEXT(message_id="m", delta="a"), end, TEXT(delta="b")
    )


def test_repeating_the_open_id_continues_the_stream() -> None:
    out = expand(TEXT(message_id="m", delta="a"), TEXT(message_id="m", delta="b"))
    assert types(out) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT"]


def test_a_different_id_closes_the_stream_and_opens_another() -> None:
    out = expand(TEXT(message_id="m1", delta="a"), TEXT(message_id="m2", delta="b"))
    assert out[2:] == [
        agui.TextMessageEndEvent(message_id="m1"),
        agui.TextMessageStartEvent(message_id="m2", role=agui.TextMessageRole.ASSISTANT),
        agui.TextMessageContentEvent(message_id="m2", delta="b"),
    ]


def test_a_chunk_of_another_kind_closes_the_lane_before_opening() -> None:
    out = expand(TEXT(message_id="m", delta="a"), TOOL(tool_call_id="t", tool_call_name="f"))
    assert types(out) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
    ]


# ── conflicting repeats ──────────────────────────────────────────────────────────────────────


def test_a_conflicting_role_is_fatal() -> None:
    message = rejects(
        TEXT(message_id="m", role=agui.TextMessageRole.USER, delta="a"),
        TEXT(role=agui.TextMessageRole.ASSISTANT, delta="b"),
    )
    assert message == (
        "Cannot continue text message 'm': chunk role 'assistant' does not match the open "
        "stream's role 'user'."
    )


def test_a_role_repeated_with_the_defaulted_value_is_accepted() -> None:
    out = expand(TEXT(message_id="m"), TEXT(role=agui.TextMessageRole.ASSISTANT, delta="b"))
    assert types(out) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]


def test_a_name_the_opener_did_not_give_is_a_conflict() -> None:
    message = rejects(TEXT(message_id="m", delta="a"), TEXT(name="Bob", delta="b"))
    assert message == (
        "Cannot continue text message 'm': chunk name 'Bob' does not match the open stream's "
        "name (absent)."
    )


def test_a_conflicting_tool_call_name_is_fatal() -> None:
    message = rejects(
        TOOL(tool_call_id="t", tool_call_name="search"), TOOL(tool_call_name="delete", delta="")
    )
    assert message == (
        "Cannot continue tool call 't': chunk toolCallName 'delete' does not match the open "
        "stream's toolCallName 'search'."
    )


def test_a_conflicting_parent_message_id_is_fatal() -> None:
    message = rejects(
        TOOL(tool_call_id="t", tool_call_name="f", parent_message_id="m1"),
        TOOL(parent_message_id="m2"),
    )
    assert "chunk parentMessageId 'm2' does not match the open stream's parentMessageId 'm1'" in (
        message
    )


# ── metadata, rawEvent, delta ────────────────────────────────────────────────────────────────


def test_metadata_goes_on_start_and_content_and_raw_event_on_content_only() -> None:
    out = expand(TEXT(message_id="m", delta="a", metadata={"k": 1}, raw_event={"p": 1}))
    start, content = out
    assert start.metadata == {"k": 1} and start.raw_event is None
    assert content.metadata == {"k": 1} and content.raw_event == {"p": 1}


@pytest.mark.parametrize(
    ("opener", "continuation", "content"),
    [
        (
            TEXT(message_id="m"),
            TEXT(raw_event=[1]),
            agui.TextMessageContentEvent(message_id="m", delta="", raw_event=[1]),
        ),
        (
            TOOL(tool_call_id="t", tool_call_name="f"),
            TOOL(raw_event=[1]),
            agui.ToolCallArgsEvent(tool_call_id="t", delta="", raw_event=[1]),
        ),
        (
            REASONING(message_id="r"),
            REASONING(raw_event=[1]),
            agui.ReasoningMessageContentEvent(message_id="r", delta="", raw_event=[1]),
        ),
    ],
    ids=["text", "tool", "reasoning"],
)
def test_a_raw_event_without_delta_still_yields_an_empty_content_event(
    opener: Any, continuation: Any, content: Any
) -> None:
    assert expand(opener, continuation)[1:] == [content]
    assert expand(attrs.evolve(opener, raw_event=[1]))[1:] == [content]


def test_a_metadata_only_continuation_yields_an_empty_content_event() -> None:
    out = expand(REASONING(message_id="r", delta="a"), REASONING(metadata={"usage": None}))
    assert out[2] == agui.ReasoningMessageContentEvent(
        message_id="r", delta="", metadata={"usage": None}
    )
    out = expand(TEXT(message_id="m"), TEXT(metadata={}))  # empty metadata is still metadata
    assert out[1] == agui.TextMessageContentEvent(message_id="m", delta="", metadata={})


def test_an_empty_continuation_yields_nothing_and_an_opener_without_delta_only_a_start() -> None:
    out = expand(TEXT(message_id="m", metadata={}), TEXT())
    assert out == [
        agui.TextMessageStartEvent(message_id="m", role=agui.TextMessageRole.ASSISTANT, metadata={})
    ]


# ── lanes ────────────────────────────────────────────────────────────────────────────────────


def test_each_subagent_streams_in_its_own_lane() -> None:
    out = expand(
        TEXT(message_id="a", subagent_run_id="s1", delta="1"),
        TEXT(message_id="b", subagent_run_id="s2", delta="2"),
        TEXT(subagent_run_id="s1", delta="3"),
    )
    assert types(out) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"] * 2 + [
        "TEXT_MESSAGE_CONTENT"
    ]
    assert out[-1] == agui.TextMessageContentEvent(message_id="a", delta="3", subagent_run_id="s1")


def test_an_id_continues_the_lane_holding_it_and_content_keeps_the_owner() -> None:
    out = expand(TEXT(message_id="a", subagent_run_id="s1"), TEXT(message_id="a", delta="x"))
    assert out[-1] == agui.TextMessageContentEvent(message_id="a", delta="x", subagent_run_id="s1")


def test_a_different_tag_on_an_open_id_is_fatal() -> None:
    assert rejects(
        TEXT(message_id="a", subagent_run_id="s1"), TEXT(message_id="a", subagent_run_id="s2")
    ) == (
        "Cannot continue text message 'a': chunk subagentRunId 's2' does not match the open "
        "stream's subagent 's1'."
    )
    assert "does not match the open stream's subagent '(the parent agent)'." in rejects(
        TOOL(tool_call_id="t", tool_call_name="f"), TOOL(tool_call_id="t", subagent_run_id="s1")
    )


def test_an_untagged_idless_chunk_prefers_the_parent_lane() -> None:
    out = expand(
        TEXT(message_id="p", delta="1"),
        TEXT(message_id="c", subagent_run_id="s1", delta="2"),
        TEXT(delta="3"),
    )
    assert out[-1] == agui.TextMessageContentEvent(message_id="p", delta="3")


def test_an_untagged_idless_chunk_continues_the_sole_open_lane_of_its_kind() -> None:
    out = expand(
        TOOL(tool_call_id="p", tool_call_name="f"),  # the parent has a stream of another kind
        TEXT(message_id="c", subagent_run_id="s1", delta="1"),
        TEXT(delta="2"),
    )
    assert out[-1] == agui.TextMessageContentEvent(message_id="c", delta="2", subagent_run_id="s1")


def test_an_untagged_idless_chunk_with_several_candidate_lanes_is_ambiguous() -> None:
    message = rejects(
        TEXT(message_id="a", subagent_run_id="s1"),
        TEXT(message_id="b", subagent_run_id="s2"),
        TEXT(delta="x"),
    )
    assert message.startswith(
        "Ambiguous TEXT_MESSAGE_CHUNK: it carries neither a messageId nor a subagentRunId, "
        "but 2 lanes have an open text message."
    )


def test_the_synthetic_end_carries_the_opener_owner_and_nothing_else() -> None:
    out = expand(
        TEXT(message_id="m", subagent_run_id="s1", metadata={"k": 1}, delta="x"),
        TEXT(message_id="n", subagent_run_id="s1", metadata={"k": 2}),
    )
    assert out[2] == agui.TextMessageEndEvent(message_id="m", subagent_run_id="s1")


# ── which events close which lanes ───────────────────────────────────────────────────────────

OWN_LANE = [
    agui.TextMessageStartEvent(message_id="x"),
    agui.TextMessageContentEvent(message_id="x", delta=""),
    agui.TextMessageEndEvent(message_id="x"),
    agui.ToolCallStartEvent(tool_call_id="x", tool_call_name="f"),
    agui.ToolCallArgsEvent(tool_call_id="x", delta=""),
    agui.ToolCallEndEvent(tool_call_id="x"),
    agui.ToolCallResultEvent(message_id="x", tool_call_id="t", content="ok"),
    agui.StateSnapshotEvent(snapshot=None),
    agui.StateDeltaEvent(delta=()),
    agui.CustomEvent(name="n", value=1),
    agui.StepStartedEvent(step_name="s"),
    agui.StepFinishedEvent(step_name="s"),
    agui.ReasoningStartEvent(message_id="x"),
    agui.ReasoningMessageStartEvent(message_id="x"),
    agui.ReasoningMessageContentEvent(message_id="x", delta=""),
    agui.ReasoningMessageEndEvent(message_id="x"),
    agui.ReasoningEndEvent(message_id="x"),
]
ALL_LANES = [
    agui.RunStartedEvent(thread_id="t", run_id="r"),
    agui.RunFinishedEvent(thread_id="t", run_id="r"),
    agui.RunErrorEvent(message="boom"),
    agui.MessagesSnapshotEvent(messages=()),
]
NO_LANE: list[Any] = [
    agui.RawEvent(event={}),
    agui.ActivitySnapshotEvent(message_id="a", activity_type="plan", content={}),
    agui.ActivityDeltaEvent(message_id="a", activity_type="plan", patch=()),
    agui.ReasoningEncryptedValueEvent(
        subtype=agui.ReasoningEncryptedValueSubtype.MESSAGE, entity_id="m", encrypted_value="e"
    ),
    agui.SubagentStartedEvent(subagent_run_id="s9", name="n"),
    UnknownEvent(type="FUTURE", raw={"type": "FUTURE"}),
]


def _tagged(event: Any, tag: str) -> Any:
    return attrs.evolve(event, subagent_run_id=tag)


def _two_lanes() -> list[Any]:
    return [
        TEXT(message_id="p", delta="a"),
        TOOL(tool_call_id="c", subagent_run_id="s1", tool_call_name="f"),
    ]


@pytest.mark.parametrize("event", OWN_LANE, ids=lambda e: str(e.type))
def test_these_events_close_their_own_lane_only(event: Any) -> None:
    out = expand(*_two_lanes(), event)
    assert out[-2:] == [agui.TextMessageEndEvent(message_id="p"), event]
    tagged = expand(*_two_lanes(), _tagged(event, "s1"))
    assert tagged[-2] == agui.ToolCallEndEvent(tool_call_id="c", subagent_run_id="s1")


@pytest.mark.parametrize("event", ALL_LANES, ids=lambda e: str(e.type))
def test_run_events_and_messages_snapshot_close_every_lane_in_opening_order(event: Any) -> None:
    out = expand(*_two_lanes(), event)
    assert out[-3:] == [
        agui.TextMessageEndEvent(message_id="p"),
        agui.ToolCallEndEvent(tool_call_id="c", subagent_run_id="s1"),
        event,
    ]


@pytest.mark.parametrize(
    "event",
    [
        agui.SubagentFinishedEvent(subagent_run_id="s1"),
        agui.SubagentErrorEvent(subagent_run_id="s1", message="x"),
    ],
    ids=lambda e: str(e.type),
)
def test_a_subagent_terminal_closes_the_lane_it_names(event: Any) -> None:
    out = expand(*_two_lanes(), event)
    assert out[-2:] == [agui.ToolCallEndEvent(tool_call_id="c", subagent_run_id="s1"), event]


@pytest.mark.parametrize("event", NO_LANE, ids=lambda e: str(e.type))
def test_these_events_pass_through_without_closing(event: Any) -> None:
    out = expand(TEXT(message_id="p", delta="a"), event, TEXT(delta="b"))
    assert out == [
        agui.TextMessageStartEvent(message_id="p", role=agui.TextMessageRole.ASSISTANT),
        agui.TextMessageContentEvent(message_id="p", delta="a"),
        event,
        agui.TextMessageContentEvent(message_id="p", delta="b"),
    ]


def test_the_end_of_the_stream_discards_pending_lanes_without_an_end() -> None:
    expander = ChunkExpander()
    expander.feed(TEXT(message_id="m", delta="a"))
    assert expander.finish() == []
    assert types(expand(TEXT(message_id="m", delta="a"))) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]


def test_the_error_names_the_number_of_the_offending_event() -> None:
    """Events are counted from 1, as fed (agui.errors has the numbering)."""
    expander = ChunkExpander()
    expander.feed(agui.RunStartedEvent(thread_id="t", run_id="r"))
    expander.feed(TEXT(message_id="m"))
    with pytest.raises(ProtocolError) as info:
        expander.feed(TEXT(role=agui.TextMessageRole.USER))
    assert info.value.event == 3


# ── events a newer spec adds ─────────────────────────────────────────────────────────────────


class _NewType(enum.Enum):
    PROGRESS = "PROGRESS"


@attrs.frozen(kw_only=True)
class ProgressEvent:
    """Stands for an event class the generator made from a newer spec than this stage knows."""

    type: ClassVar[_NewType] = _NewType.PROGRESS
    label: str
    subagent_run_id: str | None = None


def test_an_event_class_the_stage_has_no_rule_for_passes_through_without_closing() -> None:
    for progress in (ProgressEvent(label="half"), ProgressEvent(label="x", subagent_run_id="p")):
        out = expand(TEXT(message_id="p", delta="a"), progress, TEXT(delta="b"))
        assert out == [
            agui.TextMessageStartEvent(message_id="p", role=agui.TextMessageRole.ASSISTANT),
            agui.TextMessageContentEvent(message_id="p", delta="a"),
            progress,
            agui.TextMessageContentEvent(message_id="p", delta="b"),
        ]


def test_the_messages_name_the_chunk_types_and_fields_the_models_define() -> None:
    from agui.stream import chunks

    assert chunks._CHUNK_TYPE == {
        "text": "TEXT_MESSAGE_CHUNK",
        "tool": "TOOL_CALL_CHUNK",
        "reasoning": "REASONING_MESSAGE_CHUNK",
    }
    assert chunks._ID_FIELD == {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}
    source = inspect.getsource(chunks)
    assert not re.search(r"^\s*assert\b", source, re.M)
