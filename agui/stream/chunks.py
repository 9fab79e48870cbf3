"""Chunk expansion: TEXT_MESSAGE_CHUNK, TOOL_CALL_CHUNK and REASONING_MESSAGE_CHUNK become the
start/content/end events they abbreviate, so every later stage sees only bracketed streams.

Behaviour follows the official TypeScript client (chunks/transform.ts, @ag-ui/client 1.0.0):

* A lane is the subagent a chunk stream is attributed to (None = the parent agent). Each lane
  assembles at most one stream at a time; several subagents may stream side by side.
* The first chunk of a stream names its id (and a tool chunk its toolCallName); nothing is
  invented. A later chunk may omit the id, or repeat it; a different id ends the lane's stream
  and starts another. Repeating role, name, toolCallName or parentMessageId with another value
  is fatal, since the synthesized content event could not carry the disagreement.
* The synthesized start and content both carry the chunk's metadata; its rawEvent rides on the
  content event only. A continuation with nothing but metadata yields an empty-delta content
  event so the metadata is not lost.
* Other events end open streams before they are passed on: the bracket, state, step, custom,
  TOOL_CALL_RESULT and reasoning-span events end their own lane, the run events and
  MESSAGES_SNAPSHOT end every lane, SUBAGENT_FINISHED/SUBAGENT_ERROR end the lane they name.
  Every other event ends nothing and is passed on as it is: RAW, ACTIVITY_*,
  REASONING_ENCRYPTED_VALUE, SUBAGENT_STARTED, unknown events, and any event a later spec adds
  (the reference transform's `default` case does the same).
* At the end of the stream pending lanes are dropped without an END; a stream that stops mid
  message is for verification to judge, not for this stage to repair.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs
from agui_generated import (
    CustomEvent,
    Event,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageRole,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agui.errors import ProtocolError
from agui.stream.warning import StreamWarning
from agui.wire.codec import UnknownEvent, wire_name

__all__ = ["ChunkExpander"]

Item: TypeAlias = Event | UnknownEvent
Kind: TypeAlias = Literal["text", "tool", "reasoning"]

_CLOSES_OWN_LANE = (
    TextMessageStartEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    ToolCallStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    StateSnapshotEvent,
    StateDeltaEvent,
    CustomEvent,
    StepStartedEvent,
    StepFinishedEvent,
    ReasoningStartEvent,
    ReasoningMessageStartEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningEndEvent,
)
_CLOSES_ALL_LANES = (RunStartedEvent, RunFinishedEvent, RunErrorEvent, MessagesSnapshotEvent)
_CLOSES_NAMED_LANE = (SubagentFinishedEvent, SubagentErrorEvent)
# Every other event (and UnknownEvent) passes through: no list of them, so an event a later spec
# adds flows on untouched.

_ENTITY: dict[Kind, str] = {
    "text": "text message",
    "tool": "tool call",
    "reasoning": "reasoning message",
}
# What the messages say about the chunk kinds is read from the generated models.
_CHUNK_TYPE: dict[Kind, str] = {
    "text": TextMessageChunkEvent.type.value,
    "tool": ToolCallChunkEvent.type.value,
    "reasoning": ReasoningMessageChunkEvent.type.value,
}
"""The wire type of each chunk kind: TEXT_MESSAGE_CHUNK, ..."""
_ID_FIELD: dict[Kind, str] = {
    "text": wire_name(TextMessageChunkEvent, "message_id"),
    "tool": wire_name(ToolCallChunkEvent, "tool_call_id"),
    "reasoning": wire_name(ReasoningMessageChunkEvent, "message_id"),
}
"""The wire name of the member a chunk kind names its stream by: messageId, toolCallId."""
_ROLE = wire_name(TextMessageChunkEvent, "role")
_NAME = wire_name(TextMessageChunkEvent, "name")
_TOOL_CALL_NAME = wire_name(ToolCallChunkEvent, "tool_call_name")
_PARENT_MESSAGE_ID = wire_name(ToolCallChunkEvent, "parent_message_id")
_SUBAGENT_RUN_ID = wire_name(TextMessageChunkEvent, "subagent_run_id")


@attrs.define
class _Pending:
    """The stream a lane is assembling, with what its opener established."""

    kind: Kind
    id: str
    owner: str | None
    role: str | None = None
    name: str | None = None
    tool_call_name: str | None = None
    parent_message_id: str | None = None


_Chunk: TypeAlias = TextMessageChunkEvent | ToolCallChunkEvent | ReasoningMessageChunkEvent


def _owner(pending: _Pending, chunk: _Chunk) -> str | None:
    """The subagent a continuation belongs to: its own tag, else its stream's."""
    return pending.owner if chunk.subagent_run_id is None else chunk.subagent_run_id


def _carries_content(chunk: _Chunk, out: list[Item]) -> bool:
    """Whether a chunk yields a content (or args) event: a delta, a raw event, or only metadata."""
    return chunk.delta is not None or chunk.raw_event is not None or _metadata_only(chunk, out)


def _metadata_only(chunk: _Chunk, out: list[Item]) -> bool:
    """A continuation that carries metadata and nothing else still becomes a content event."""
    return not out and chunk.metadata is not None


def _show(value: str | None) -> str:
    return "(absent)" if value is None else f"'{value}'"


class ChunkExpander:
    """Turns chunk events into start/content/end triads (one pipeline stage).

    feed(event) returns the events to pass on, in order, and raises ProtocolError (with the
    event's number as fed, from 1) when a chunk cannot be expanded; finish() ends the stream. Nothing is
    warned about today, but the stage keeps `warnings` like every other stage."""

    def __init__(self) -> None:
        self.warnings: list[StreamWarning] = []
        self._lanes: dict[str | None, _Pending] = {}
        self._index = -1

    def feed(self, event: Item) -> list[Item]:
        """Expand one event; returns what to deliver in its place."""
        self._index += 1
        if isinstance(event, TextMessageChunkEvent):
            return self._text(event)
        if isinstance(event, ToolCallChunkEvent):
            return self._tool(event)
        if isinstance(event, ReasoningMessageChunkEvent):
            return self._reasoning(event)
        if isinstance(event, _CLOSES_OWN_LANE):
            return [*self._close(event.subagent_run_id), event]
        if isinstance(event, _CLOSES_ALL_LANES):
            return [*self._close_all(), event]
        if isinstance(event, _CLOSES_NAMED_LANE):
            return [*self._close(event.subagent_run_id), event]
        return [event]  # ends nothing: RAW, ACTIVITY_*, ..., unknown and newer events

    def passes(
        self, event: TextMessageContentEvent | ToolCallArgsEvent | ReasoningMessageContentEvent
    ) -> bool:
        """Whether `feed(event)`, for a delta (TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS,
        REASONING_MESSAGE_CONTENT), would pass it on alone: no chunk stream is open in its lane.
        If so, the event counts as fed (a pipeline's fast path for the bulk of a run)."""
        if event.subagent_run_id in self._lanes:
            return False
        self._index += 1
        return True

    def finish(self) -> list[Item]:
        """End of stream: pending lanes are dropped, no END is synthesized."""
        self._lanes.clear()
        return []

    # ── lanes ────────────────────────────────────────────────────────────────────────────────

    def _fail(self, message: str) -> ProtocolError:
        return ProtocolError(message, event=self._index + 1)

    def _close(self, lane: str | None) -> list[Item]:
        pending = self._lanes.pop(lane, None)
        if pending is None:
            return []
        if pending.kind == "text":
            return [TextMessageEndEvent(message_id=pending.id, subagent_run_id=pending.owner)]
        if pending.kind == "tool":
            return [ToolCallEndEvent(tool_call_id=pending.id, subagent_run_id=pending.owner)]
        return [ReasoningMessageEndEvent(message_id=pending.id, subagent_run_id=pending.owner)]

    def _close_all(self) -> list[Item]:
        closed: list[Item] = []
        for lane in list(self._lanes):  # in the order the lanes opened
            closed += self._close(lane)
        return closed

    def _lane_for(self, kind: Kind, entity_id: str | None, tag: str | None) -> str | None:
        """Which lane a chunk belongs to: the lane already holding its id, else the lane its tag
        names, else (untagged, id-less) the parent's stream of this kind or the only one."""
        if entity_id is not None:
            for lane, pending in self._lanes.items():
                if pending.kind == kind and pending.id == entity_id:
                    if tag is not None and tag != lane:
                        held = "(the parent agent)" if lane is None else lane
                        raise self._fail(
                            f"Cannot continue {_ENTITY[kind]} '{entity_id}': chunk "
                            f"{_SUBAGENT_RUN_ID} '{tag}' does not match the open stream's subagent '{held}'."
                        )
                    return lane
            return tag
        if tag is not None:
            return tag
        parent = self._lanes.get(None)
        if parent is not None and parent.kind == kind:
            return None
        candidates = [lane for lane, pending in self._lanes.items() if pending.kind == kind]
        if len(candidates) > 1:
            raise self._fail(
                f"Ambiguous {_CHUNK_TYPE[kind]}: it carries neither a {_ID_FIELD[kind]} nor a "
                f"{_SUBAGENT_RUN_ID}, but {len(candidates)} lanes have an open {_ENTITY[kind]}. "
                "Attribute the chunk to the subagent it belongs to."
            )
        return candidates[0] if candidates else None

    def _continuing(
        self, kind: Kind, lane: str | None, entity_id: str | None
    ) -> tuple[_Pending | str, list[Item]]:
        """(the lane's stream, []) when the chunk continues it; otherwise (the id of the stream
        the chunk opens, the END of whatever the lane held), after checking that it has an id."""
        pending = self._lanes.get(lane)
        if pending is not None and pending.kind == kind and entity_id in (None, pending.id):
            return pending, []
        closed = self._close(lane)
        if entity_id is None:
            raise self._fail(f"First {_CHUNK_TYPE[kind]} must have a {_ID_FIELD[kind]}")
        return entity_id, closed

    def _agree(self, pending: _Pending, field: str, incoming: str | None, held: str | None) -> None:
        if incoming is not None and incoming != held:
            raise self._fail(
                f"Cannot continue {_ENTITY[pending.kind]} '{pending.id}': chunk {field} "
                f"'{incoming}' does not match the open stream's {field} {_show(held)}."
            )

    # ── the three chunk kinds ────────────────────────────────────────────────────────────────

    def _text(self, chunk: TextMessageChunkEvent) -> list[Item]:
        lane = self._lane_for("text", chunk.message_id, chunk.subagent_run_id)
        pending, out = self._continuing("text", lane, chunk.message_id)
        role = None if chunk.role is None else chunk.role.value
        if isinstance(pending, _Pending):
            self._agree(pending, _ROLE, role, pending.role)
            self._agree(pending, _NAME, chunk.name, pending.name)
        else:
            message_id = pending
            start_role = TextMessageRole.ASSISTANT if chunk.role is None else chunk.role
            pending = self._lanes[lane] = _Pending(
                "text", message_id, chunk.subagent_run_id, start_role.value, chunk.name
            )
            out.append(
                TextMessageStartEvent(
                    message_id=message_id,
                    role=start_role,
                    name=chunk.name,
                    subagent_run_id=chunk.subagent_run_id,
                    metadata=chunk.metadata,
                )
            )
        if _carries_content(chunk, out):
            out.append(
                TextMessageContentEvent(
                    message_id=pending.id,
                    delta=chunk.delta or "",
                    subagent_run_id=_owner(pending, chunk),
                    metadata=chunk.metadata,
                    raw_event=chunk.raw_event,
                )
            )
        return out

    def _tool(self, chunk: ToolCallChunkEvent) -> list[Item]:
        lane = self._lane_for("tool", chunk.tool_call_id, chunk.subagent_run_id)
        pending, out = self._continuing("tool", lane, chunk.tool_call_id)
        if isinstance(pending, _Pending):
            self._agree(pending, _TOOL_CALL_NAME, chunk.tool_call_name, pending.tool_call_name)
            self._agree(
                pending, _PARENT_MESSAGE_ID, chunk.parent_message_id, pending.parent_message_id
            )
        else:
            tool_call_id = pending
            if chunk.tool_call_name is None:
                raise self._fail(f"First {_CHUNK_TYPE['tool']} must have a {_TOOL_CALL_NAME}")
            pending = self._lanes[lane] = _Pending(
                "tool",
                tool_call_id,
                chunk.subagent_run_id,
                tool_call_name=chunk.tool_call_name,
                parent_message_id=chunk.parent_message_id,
            )
            out.append(
                ToolCallStartEvent(
                    tool_call_id=tool_call_id,
                    tool_call_name=chunk.tool_call_name,
                    parent_message_id=chunk.parent_message_id,
                    subagent_run_id=chunk.subagent_run_id,
                    metadata=chunk.metadata,
                )
            )
        if _carries_content(chunk, out):
            out.append(
                ToolCallArgsEvent(
                    tool_call_id=pending.id,
                    delta=chunk.delta or "",
                    subagent_run_id=_owner(pending, chunk),
                    metadata=chunk.metadata,
                    raw_event=chunk.raw_event,
                )
            )
        return out

    def _reasoning(self, chunk: ReasoningMessageChunkEvent) -> list[Item]:
        lane = self._lane_for("reasoning", chunk.message_id, chunk.subagent_run_id)
        pending, out = self._continuing("reasoning", lane, chunk.message_id)
        if not isinstance(pending, _Pending):
            message_id = pending
            pending = self._lanes[lane] = _Pending("reasoning", message_id, chunk.subagent_run_id)
            out.append(
                ReasoningMessageStartEvent(
                    message_id=message_id,
                    subagent_run_id=chunk.subagent_run_id,
                    metadata=chunk.metadata,
                )
            )
        if _carries_content(chunk, out):
            out.append(
                ReasoningMessageContentEvent(
                    message_id=pending.id,
                    delta=chunk.delta or "",
                    subagent_run_id=_owner(pending, chunk),
                    metadata=chunk.metadata,
                    raw_event=chunk.raw_event,
                )
            )
        return out
