"""The reducer: the last pipeline stage, which applies events to a conversation's messages and state.

The rules are those of the official TypeScript client (apply/default.ts, @ag-ui/client 1.0.0):

* Text and reasoning messages are assembled by id. START creates the message when it is missing
  and otherwise continues it (a re-opened message appends); CONTENT appends its delta verbatim.
* TOOL_CALL_START attaches the call to the assistant message named by parentMessageId, or creates
  an assistant message (id = parentMessageId, else toolCallId); ARGS append to the arguments text.
* TOOL_CALL_RESULT mints a tool message, placed right after the assistant message that owns the
  call (after tool messages already there), or at the end when no message owns it.
* Event metadata is merged into the entity the event builds (the tool call for TOOL_CALL_*), key by
  key, last write wins, no recursion, null values kept.
* STATE_SNAPSHOT replaces the state with any JSON value, null and 0 included. STATE_DELTA is an
  RFC 6902 patch applied all or nothing: a patch that fails leaves the state as it was and warns.
  A patch that would take the state (or, for ACTIVITY_DELTA, an activity's content) past
  `max_state_nodes` nodes is refused before it builds anything, and rejects the stream
  (ProtocolError naming the operation, `/delta/19`): see agui.stream.patch.
* MESSAGES_SNAPSHOT is reconciled by id; ACTIVITY_SNAPSHOT / ACTIVITY_DELTA set and patch activity
  messages; REASONING_ENCRYPTED_VALUE is stored on its tool call or message.
* RUN_STARTED adds the messages of its input the conversation does not hold yet; RUN_FINISHED and
  RUN_ERROR close the run, recorded as a RunResult.

Messages are kept as mutable wire-form dicts, so appends are cheap and JSON Patch applies
directly; every key the reducer writes is read from the generated models (`wire_name`), and new
messages are built as models and encoded. `messages` is the typed view: the Message models,
decoded once per change of a message and cached, so reading it repeatedly costs nothing;
`messages_json()` gives copies of the wire form.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeAlias

import attrs
import orjson
from agui_generated import (
    ActivityDeltaEvent,
    ActivityMessage,
    ActivitySnapshotEvent,
    AssistantMessage,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEncryptedValueSubtype,
    ReasoningMessage,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    Role,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
)

from agui.errors import ProtocolError
from agui.stream.patch import DEFAULT_MAX_STATE_NODES, PatchLimitError, apply_patch
from agui.stream.warning import StreamWarning
from agui.wire.codec import DISCRIMINATORS, TAGS, decode_json, to_json, wire_name

__all__ = [
    "ACTIVITY_HISTORY_KEY",
    "TRUNCATED",
    "Checkpoint",
    "Reducer",
    "RunResult",
    "merge_metadata",
]

log = logging.getLogger("agui.stream")

Wire: TypeAlias = dict[str, Any]
Outcome: TypeAlias = Literal["success", "interrupt", "cancelled", "error", "truncated"]

ACTIVITY_HISTORY_KEY = "@ag-ui/client"
"""The MESSAGES_SNAPSHOT metadata key under which a producer declares, as
`{"authoritativeActivityTypes": [...] | null}`, which activity types its snapshot owns."""

TRUNCATED = (
    "The stream ended without a terminal event (RUN_FINISHED or RUN_ERROR): the run is truncated."
)
"""Why a run that never got its terminal event is recorded as truncated."""

_PATCH_ERRORS = (TypeError, ValueError, LookupError, AttributeError)
"""What a patch that cannot be applied raises (agui.stream.patch.apply_patch)."""


_UNDECLARED = object()
_DEFAULT_STATE: Any = object()
_PIECES = 1024
"""Streamed deltas are kept as pieces and joined when read; every this many pieces they are joined
into one block, so a long stream of small deltas holds its text, not a million small objects."""

# The wire keys the reducer reads and writes, read from the generated models.
_ID = wire_name(AssistantMessage, "id")
_ROLE = DISCRIMINATORS["Message"]
_CONTENT = wire_name(AssistantMessage, "content")
_METADATA = wire_name(AssistantMessage, "metadata")
_SUBAGENT = wire_name(AssistantMessage, "subagent_run_id")
_ENCRYPTED = wire_name(AssistantMessage, "encrypted_value")
_TOOL_CALLS = wire_name(AssistantMessage, "tool_calls")
_FUNCTION = wire_name(ToolCall, "function")
_FUNCTION_NAME = wire_name(FunctionCall, "name")
_ARGUMENTS = wire_name(FunctionCall, "arguments")
_ACTIVITY_TYPE = wire_name(ActivityMessage, "activity_type")
_ASSISTANT = Role.ASSISTANT.value
_ACTIVITY = Role.ACTIVITY.value
_MESSAGE_CLASSES: Mapping[str, Any] = TAGS["Message"]
_STREAMED: frozenset[type] = frozenset(
    (TextMessageContentEvent, ReasoningMessageContentEvent, ToolCallArgsEvent)
)
"""The events that append to a text (their pieces are joined when read, not on every event)."""


@attrs.frozen(kw_only=True)
class RunResult:
    """How one run of the conversation ended, and what it left behind."""

    outcome: Outcome
    """success, interrupt or cancelled (RUN_FINISHED), error (the producer's RUN_ERROR), or
    truncated (no terminal event arrived: the stream ended or was rejected inside the run)."""
    thread_id: str | None = None
    """The thread RUN_STARTED named; None for a RUN_ERROR outside any run."""
    run_id: str | None = None
    """The run RUN_STARTED named; None for a RUN_ERROR outside any run."""
    result: Any = None
    """RUN_FINISHED.result of a successful run (None when absent)."""
    pending_tool_call_ids: tuple[str, ...] = ()
    """Tool calls of a successful run left for the application to answer: the outcome's list,
    else the calls the run started that got no TOOL_CALL_RESULT, in start order."""
    usage: tuple[TokenUsage, ...] | None = None
    """Token usage reported by RUN_FINISHED or RUN_ERROR."""
    error_message: str | None = None
    """RUN_ERROR.message, or why the run is truncated."""
    error_code: str | None = None
    """RUN_ERROR.code."""
    interrupts: tuple[Interrupt, ...] = ()
    """What an interrupted run waits for."""
    warnings: tuple[StreamWarning, ...] = ()
    """The warnings reported since the previous run ended, up to this run's end."""

    @property
    def completed(self) -> bool:
        """True when the run ended with RUN_FINISHED (success, interrupt or cancelled)."""
        return self.outcome in ("success", "interrupt", "cancelled")


@attrs.frozen(kw_only=True)
class Checkpoint:
    """What `Reducer.checkpoint` saves and `Reducer.restore` puts back (copies of the wire-form
    messages and of the state, and the pending interrupts)."""

    messages: list[Wire]
    state: Any
    pending_interrupts: tuple[Interrupt, ...]


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (through orjson, several times faster than copy.deepcopy;
    deepcopy for what orjson cannot write)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(value)


def merge_metadata(existing: Any, incoming: Mapping[str, Any] | None) -> Any:
    """Shallow, key by key, last write wins; values (null included) are taken as they are."""
    if incoming is None:
        return existing
    merged = dict(existing) if isinstance(existing, Mapping) else {}
    merged.update(copy.deepcopy(dict(incoming)))
    return merged


def _authority(metadata: Mapping[str, Any] | None) -> Any:
    """The activity types a MESSAGES_SNAPSHOT owns: _UNDECLARED, None (all of them) or a list
    (an invalid declaration owns none, so it deletes nothing)."""
    if not metadata or ACTIVITY_HISTORY_KEY not in metadata:
        return _UNDECLARED
    value = metadata[ACTIVITY_HISTORY_KEY]
    if not isinstance(value, Mapping):
        return []
    if "authoritativeActivityTypes" not in value:
        return _UNDECLARED
    types = value["authoritativeActivityTypes"]
    if types is None:
        return None
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return types
    return []


class Reducer:
    """Applies processed events to messages and state (the pipeline's last stage).

    feed(event) applies one event and returns [event]; finish() ends the stream, recording a run
    left open as truncated. Chunk events must have been expanded before: one that arrives raises
    ProtocolError. `warnings` collects what could not be applied (a Pipeline also adds its other
    stages' warnings there, so the list is the stream's, in order).
    """

    def __init__(
        self,
        messages: Iterable[Message | Mapping[str, Any]] = (),
        state: Any = _DEFAULT_STATE,
        *,
        max_state_nodes: int | None = DEFAULT_MAX_STATE_NODES,
    ) -> None:
        if max_state_nodes is not None and max_state_nodes < 1:
            raise ValueError("max_state_nodes must be at least 1 (None: no limit)")
        self.max_state_nodes = max_state_nodes
        """The most nodes a STATE_DELTA or ACTIVITY_DELTA may take the state or an activity's
        content to (agui.stream.patch; None: no limit)."""
        self.warnings: list[StreamWarning] = []
        self.runs: list[RunResult] = []
        self.pending_interrupts: tuple[Interrupt, ...] = ()
        """The interrupts of the last RUN_FINISHED (empty unless its outcome was interrupt)."""
        self.interrupt_generation = 0
        """Counts RUN_FINISHED events, so a holder of answers knows when they went stale."""
        self._state: Any = {} if state is _DEFAULT_STATE else copy.deepcopy(state)
        self._messages: list[Wire] = []
        # The typed view. Every wire dict in _models is alive in _messages (a message leaves only
        # through _reindex, which prunes), so an id() is never mistaken for another dict's.
        self._models: dict[int, Message] = {}  # id(wire dict) -> its model, while unchanged
        self._view: tuple[Message, ...] | None = None  # all the models, while nothing changed
        self._by_id: dict[str, Wire] = {}
        self._calls: dict[str, tuple[Wire, Wire]] = {}  # toolCallId -> (tool call, its message)
        # (id(target), key) -> (target, key, joined blocks, pieces since the last block)
        self._buffers: dict[tuple[int, str], tuple[Wire, str, list[str], list[str]]] = {}
        self._last: tuple[Wire, str, list[str], list[str]] | None = None  # the last one extended
        self._index = -1
        self._at: int | None = None
        self._run: tuple[str, str] | None = None
        self._run_tool_calls: dict[str, None] = {}
        self._answered: set[str] = set()
        self._warnings_from = 0
        self._handlers: dict[type, Callable[[Any], None]] = {
            TextMessageStartEvent: self._text_start,
            TextMessageContentEvent: self._text_content,
            TextMessageEndEvent: self._text_end,
            ReasoningMessageStartEvent: self._reasoning_start,
            ReasoningMessageContentEvent: self._text_content,
            ReasoningMessageEndEvent: self._text_end,
            ToolCallStartEvent: self._tool_start,
            ToolCallArgsEvent: self._tool_args,
            ToolCallEndEvent: self._tool_end,
            ToolCallResultEvent: self._tool_result,
            StateSnapshotEvent: self._state_snapshot,
            StateDeltaEvent: self._state_delta,
            MessagesSnapshotEvent: self._messages_snapshot,
            ActivitySnapshotEvent: self._activity_snapshot,
            ActivityDeltaEvent: self._activity_delta,
            ReasoningEncryptedValueEvent: self._encrypted_value,
            RunStartedEvent: self._run_started,
            RunFinishedEvent: self._run_finished,
            RunErrorEvent: self._run_error,
        }
        self.add_messages(messages)

    # ── what it holds ─────────────────────────────────────────────────────────────────────────

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation's messages as agui Message models. Each message is decoded once per
        change and the tuple is kept until something changes, so repeated reads are free."""
        view = self._view
        if view is None:
            self._flush()
            cache = self._models
            models: list[Message] = []
            for wire in self._messages:
                model = cache.get(id(wire))
                if model is None:
                    model = cache[id(wire)] = decode_json(wire, Message, strict=True)
                models.append(model)
            view = self._view = tuple(models)
        return view

    def messages_json(self) -> list[Wire]:
        """The conversation's messages as wire JSON objects (copies the caller may change)."""
        self._flush()
        return copy.deepcopy(self._messages)

    @property
    def state(self) -> Any:
        """The state (a copy the caller may change): any JSON value; {} until the producer says
        otherwise."""
        return copy.deepcopy(self._state)

    def set_state(self, state: Any) -> None:
        """Replace the state with `state` (a copy: changing it afterwards changes nothing here)."""
        self._state = _copy_json(state)

    @property
    def run_open(self) -> bool:
        """True between RUN_STARTED and its terminal event."""
        return self._run is not None

    def add_messages(self, messages: Iterable[Message | Mapping[str, Any]]) -> None:
        """Append messages (models or wire JSON) whose ids the conversation does not hold yet."""
        self._flush()
        for message in messages:
            wire = copy.deepcopy(
                dict(message) if isinstance(message, Mapping) else to_json(message)
            )
            if wire[_ID] not in self._by_id:
                self._append(wire)

    def checkpoint(self) -> Checkpoint:
        """The messages, the state and the pending interrupts as they are now (copies), for
        `restore`: what a conversation rolls back to when a run fails."""
        self._flush()
        return Checkpoint(
            messages=_copy_json(self._messages),
            state=_copy_json(self._state),
            pending_interrupts=self.pending_interrupts,
        )

    def restore(self, checkpoint: Checkpoint) -> None:
        """Put the messages, the state and the pending interrupts back as they were at
        `checkpoint`; the runs and the warnings recorded since stay. A run still open is
        forgotten (abort it first to record it)."""
        self._flush()
        self._run = None
        self._models = {}
        self._reindex(_copy_json(checkpoint.messages))
        self._state = _copy_json(checkpoint.state)
        self.pending_interrupts = checkpoint.pending_interrupts

    # ── the stage interface ──────────────────────────────────────────────────────────────────

    def feed(self, event: Any, *, at: int | None = None) -> list[Any]:
        """Apply one event; returns [event]. `at` is the event's number in the stream as received
        (from 1; a Pipeline passes it), used in warnings; else events are counted as fed."""
        self._index += 1
        self._at = self._index + 1 if at is None else at
        kind = type(event)
        handler = self._handlers.get(kind)
        if handler is not None:
            if kind not in _STREAMED:
                self._flush()
            handler(event)
        elif isinstance(
            event, TextMessageChunkEvent | ToolCallChunkEvent | ReasoningMessageChunkEvent
        ):
            raise ProtocolError(
                f"{event.type.value} must be transformed before being applied", event=self._at
            )
        return [event]

    def finish(self) -> list[Any]:
        """End of stream: a run still open is recorded as truncated."""
        self.abort(TRUNCATED)
        return []

    def abort(self, reason: str) -> None:
        """Record the open run, if any, as truncated for `reason` (the stream stopped inside it)."""
        self._flush()
        if self._run is not None:
            self._close_run(RunResult(outcome="truncated", error_message=reason))

    # ── text and reasoning messages ──────────────────────────────────────────────────────────

    def _text_start(self, event: TextMessageStartEvent) -> None:
        message = self._by_id.get(event.message_id)
        if message is not None and message[_ROLE] == _ACTIVITY:
            self._warn(
                "activity",
                f"TEXT_MESSAGE_START: message '{event.message_id}' is an activity message; "
                "its text is dropped (message ids must be unique across activity and text "
                "messages)",
                "/messageId",
            )
            return
        if message is None:
            role = event.role.value if event.role else _ASSISTANT
            message = self._new(
                _MESSAGE_CLASSES[role](
                    id=event.message_id,
                    content="",
                    name=event.name,
                    subagent_run_id=event.subagent_run_id,
                )
            )
        self._merge(message, message, event.metadata)

    def _reasoning_start(self, event: ReasoningMessageStartEvent) -> None:
        message = self._by_id.get(event.message_id)
        if message is not None and message[_ROLE] == _ACTIVITY:
            self._warn(
                "activity",
                f"REASONING_MESSAGE_START: message '{event.message_id}' is an activity message; "
                "its reasoning is dropped (message ids must be unique across activity and "
                "reasoning messages)",
                "/messageId",
            )
            return
        if message is None:
            message = self._new(
                ReasoningMessage(
                    id=event.message_id, content="", subagent_run_id=event.subagent_run_id
                )
            )
        self._merge(message, message, event.metadata)

    def _text_content(self, event: TextMessageContentEvent | ReasoningMessageContentEvent) -> None:
        message = self._by_id.get(event.message_id)
        if message is None or message[_ROLE] == _ACTIVITY:
            message = self._target(event.type.value, event.message_id)
        if message is not None:
            self._extend(message, _CONTENT, event.delta, message)
            if event.metadata is not None:
                self._merge(message, message, event.metadata)

    def _text_end(self, event: TextMessageEndEvent | ReasoningMessageEndEvent) -> None:
        message = self._target(event.type.value, event.message_id)
        if message is not None:
            self._merge(message, message, event.metadata)

    def _target(self, kind: str, message_id: str) -> Wire | None:
        """The message an event continues; None (with a warning) when there is none, or it is
        an activity message."""
        message = self._by_id.get(message_id)
        if message is None:
            self._warn("missing", f"{kind}: no message found with ID '{message_id}'", "/messageId")
        elif message[_ROLE] == _ACTIVITY:
            self._warn(
                "activity",
                f"{kind}: message '{message_id}' is an activity message; the event is dropped",
                "/messageId",
            )
            return None
        return message

    # ── tool calls ───────────────────────────────────────────────────────────────────────────

    def _tool_start(self, event: ToolCallStartEvent) -> None:
        call_id = event.tool_call_id
        self._run_tool_calls.setdefault(call_id, None)
        held = self._calls.get(call_id)
        if held is not None:
            call, owner = held
            function = call[_FUNCTION]
            if function[_FUNCTION_NAME] != event.tool_call_name:
                self._warn(
                    "tool_call",
                    f"TOOL_CALL_START: tool call '{call_id}' already exists with name "
                    f"'{function[_FUNCTION_NAME]}'; renamed to '{event.tool_call_name}'",
                    "/toolCallName",
                )
                function[_FUNCTION_NAME] = event.tool_call_name
                self._touch(owner)
            self._merge(call, owner, event.metadata)
            return
        owner = self._assistant_for(event.parent_message_id, call_id, event.subagent_run_id)
        call = to_json(
            ToolCall(id=call_id, function=FunctionCall(name=event.tool_call_name, arguments=""))
        )
        owner.setdefault(_TOOL_CALLS, []).append(call)
        self._touch(owner)
        self._calls[call_id] = (call, owner)
        self._merge(call, owner, event.metadata)

    def _assistant_for(self, parent_id: str | None, call_id: str, subagent: str | None) -> Wire:
        """The assistant message a new tool call joins, created when there is none."""
        new_id = call_id
        if parent_id is not None:
            parent = self._by_id.get(parent_id)
            if parent is not None and parent[_ROLE] == _ASSISTANT:
                return parent
            if parent is None:
                new_id = parent_id
            else:
                self._warn(
                    "tool_call",
                    f"TOOL_CALL_START: parentMessageId '{parent_id}' names a '{parent[_ROLE]}' "
                    f"message, not an assistant message; the call gets a new message '{call_id}'",
                    "/parentMessageId",
                )
        return self._new(AssistantMessage(id=new_id, tool_calls=(), subagent_run_id=subagent))

    def _tool_args(self, event: ToolCallArgsEvent) -> None:
        held = self._calls.get(event.tool_call_id)
        if held is None:
            self._warn(
                "missing",
                f"TOOL_CALL_ARGS: no tool call found with ID '{event.tool_call_id}'",
                "/toolCallId",
            )
            return
        call, owner = held
        self._extend(call[_FUNCTION], _ARGUMENTS, event.delta, owner)
        self._merge(call, owner, event.metadata)

    def _tool_end(self, event: ToolCallEndEvent) -> None:
        held = self._calls.get(event.tool_call_id)
        if held is None:
            self._warn(
                "missing",
                f"TOOL_CALL_END: no tool call found with ID '{event.tool_call_id}'",
                "/toolCallId",
            )
            return
        self._merge(held[0], held[1], event.metadata)

    def _tool_result(self, event: ToolCallResultEvent) -> None:
        self._answered.add(event.tool_call_id)
        message = copy.deepcopy(
            to_json(
                ToolMessage(
                    id=event.message_id,
                    content=event.content,
                    tool_call_id=event.tool_call_id,
                    subagent_run_id=event.subagent_run_id,
                )
            )
        )
        self._merge(message, message, event.metadata)
        held = self._calls.get(event.tool_call_id)
        position = len(self._messages)
        if held is not None and held[1][_ROLE] == _ASSISTANT:
            owner = held[1]
            # From the end: the owner is almost always among the last messages, and a scan from
            # the start made every result cost the length of the conversation.
            messages = self._messages
            at = next((i for i in range(len(messages) - 1, -1, -1) if messages[i] is owner), None)
            if at is not None:
                position = at + 1
                while (
                    position < len(self._messages)
                    and self._messages[position][_ROLE] == Role.TOOL.value
                ):
                    position += 1
        self._messages.insert(position, message)
        self._view = None
        self._by_id.setdefault(message[_ID], message)

    # ── state ────────────────────────────────────────────────────────────────────────────────

    def _state_snapshot(self, event: StateSnapshotEvent) -> None:
        self._state = copy.deepcopy(event.snapshot)

    def _state_delta(self, event: StateDeltaEvent) -> None:
        patch = [to_json(op) for op in event.delta]
        try:
            # on a copy (counted as it is made), so a patch that fails changes nothing
            patched = apply_patch(
                self._state, patch, max_nodes=self.max_state_nodes, pointer="/delta"
            )
        except PatchLimitError as exc:
            # Not a patch to skip with a warning: a stream whose state outgrows what the client
            # will hold is rejected, so the run is reported failed rather than going on without it.
            raise ProtocolError(f"STATE_DELTA {exc}", event=self._at) from None
        except _PATCH_ERRORS as exc:
            self._warn(
                "patch_failed",
                f"Failed to apply state patch; the state is unchanged: {exc}",
                "/delta",
            )
            return
        self._state = patched.document

    # ── messages snapshot ────────────────────────────────────────────────────────────────────

    def _messages_snapshot(self, event: MessagesSnapshotEvent) -> None:
        incoming = [copy.deepcopy(to_json(m)) for m in event.messages]
        by_id = {m[_ID]: m for m in incoming}
        owned = _authority(event.metadata)
        has_activity = any(m[_ROLE] == _ACTIVITY for m in incoming)
        has_reasoning = any(m[_ROLE] == Role.REASONING.value for m in incoming)

        def kept_client_side(message: Wire) -> bool:
            if message[_ROLE] == _ACTIVITY:
                if isinstance(owned, list):
                    return message.get(_ACTIVITY_TYPE) not in owned
                return owned is _UNDECLARED and not has_activity
            return message[_ROLE] == Role.REASONING.value and not has_reasoning

        messages = [
            by_id.get(m[_ID], m) for m in self._messages if m[_ID] in by_id or kept_client_side(m)
        ]
        held = {m[_ID] for m in messages}
        messages.extend(m for m in incoming if m[_ID] not in held)
        self._reindex(messages)

    # ── activity ─────────────────────────────────────────────────────────────────────────────

    def _activity_snapshot(self, event: ActivitySnapshotEvent) -> None:
        replace = event.replace is None or event.replace
        existing = self._by_id.get(event.message_id)
        fresh = copy.deepcopy(
            to_json(
                ActivityMessage(
                    id=event.message_id,
                    activity_type=event.activity_type,
                    content=event.content,
                    subagent_run_id=event.subagent_run_id,
                )
            )
        )
        if existing is None:
            self._append(fresh)
            self._merge(fresh, fresh, event.metadata)
        elif existing[_ROLE] == _ACTIVITY:
            if replace:
                existing[_ACTIVITY_TYPE] = event.activity_type
                existing[_CONTENT] = fresh[_CONTENT]
                existing.pop(_SUBAGENT, None)
                if event.subagent_run_id is not None:
                    existing[_SUBAGENT] = event.subagent_run_id
                self._touch(existing)
            self._merge(existing, existing, event.metadata)
        elif replace:
            self._reindex([fresh if m is existing else m for m in self._messages])
            self._merge(fresh, fresh, event.metadata)

    def _activity_delta(self, event: ActivityDeltaEvent) -> None:
        message = self._by_id.get(event.message_id)
        if message is None:
            self._warn(
                "activity",
                f"ACTIVITY_DELTA: no activity message '{event.message_id}'; the patch is skipped",
                "/messageId",
            )
            return
        if message[_ROLE] != _ACTIVITY:
            self._warn(
                "activity",
                f"ACTIVITY_DELTA: message '{event.message_id}' is not an activity message",
                "/messageId",
            )
            return
        self._merge(message, message, event.metadata)
        patch = [to_json(op) for op in event.patch]
        try:
            content = apply_patch(
                message[_CONTENT], patch, max_nodes=self.max_state_nodes, pointer="/patch"
            ).document
            if not isinstance(content, dict):
                raise TypeError("the patched content is not an object")
        except PatchLimitError as exc:
            raise ProtocolError(f"ACTIVITY_DELTA {exc}", event=self._at) from None
        except _PATCH_ERRORS as exc:
            self._warn(
                "patch_failed",
                f"Failed to apply activity patch for '{event.message_id}': {exc}",
                "/patch",
            )
            return
        message[_CONTENT] = content
        message[_ACTIVITY_TYPE] = event.activity_type
        self._touch(message)

    # ── encrypted values ─────────────────────────────────────────────────────────────────────

    def _encrypted_value(self, event: ReasoningEncryptedValueEvent) -> None:
        if event.subtype == ReasoningEncryptedValueSubtype.TOOL_CALL:
            held = self._calls.get(event.entity_id)
            if held is not None:
                held[0][_ENCRYPTED] = event.encrypted_value
                self._touch(held[1])
            return
        message = self._by_id.get(event.entity_id)
        if message is not None and message[_ROLE] != _ACTIVITY:
            message[_ENCRYPTED] = event.encrypted_value
            self._touch(message)

    # ── runs ─────────────────────────────────────────────────────────────────────────────────

    def _run_started(self, event: RunStartedEvent) -> None:
        self.abort("A new RUN_STARTED arrived before this run's terminal event.")
        self._run = (event.thread_id, event.run_id)
        self._run_tool_calls = {}
        self._answered = set()
        if event.input is not None:
            self.add_messages(event.input.messages)

    def _run_finished(self, event: RunFinishedEvent) -> None:
        outcome = event.outcome
        self.interrupt_generation += 1
        if isinstance(outcome, RunFinishedInterruptOutcome):
            self.pending_interrupts = outcome.interrupts
            result = RunResult(
                outcome="interrupt", interrupts=outcome.interrupts, usage=event.usage
            )
        elif isinstance(outcome, RunFinishedCancelledOutcome):
            self.pending_interrupts = ()
            result = RunResult(outcome="cancelled", usage=event.usage)
        else:
            self.pending_interrupts = ()
            named = (
                outcome.pending_tool_call_ids
                if isinstance(outcome, RunFinishedSuccessOutcome)
                else None
            )
            pending = named or tuple(c for c in self._run_tool_calls if c not in self._answered)
            result = RunResult(
                outcome="success",
                result=copy.deepcopy(event.result),
                pending_tool_call_ids=tuple(pending),
                usage=event.usage,
            )
        self._close_run(result, event.thread_id, event.run_id)

    def _run_error(self, event: RunErrorEvent) -> None:
        self._close_run(
            RunResult(
                outcome="error",
                error_message=event.message,
                error_code=event.code,
                usage=event.usage,
            )
        )

    def _close_run(
        self, result: RunResult, thread_id: str | None = None, run_id: str | None = None
    ) -> None:
        if self._run is not None:
            thread_id, run_id = self._run
        self.runs.append(
            attrs.evolve(
                result,
                thread_id=thread_id,
                run_id=run_id,
                warnings=tuple(self.warnings[self._warnings_from :]),
            )
        )
        self._warnings_from = len(self.warnings)
        self._run = None

    # ── plumbing ─────────────────────────────────────────────────────────────────────────────

    def _new(self, model: Any) -> Wire:
        """Append a new message built as a model (so its wire form is the generated encoder's)."""
        wire: Wire = to_json(model)
        self._append(wire)
        return wire

    def _append(self, message: Wire) -> None:
        self._messages.append(message)
        self._view = None
        self._by_id.setdefault(message[_ID], message)
        for call in message.get(_TOOL_CALLS) or ():
            if isinstance(call, dict):
                self._calls.setdefault(call[_ID], (call, message))

    def _reindex(self, messages: list[Wire]) -> None:
        kept = {id(m) for m in messages}
        self._models = {key: model for key, model in self._models.items() if key in kept}
        self._messages, self._by_id, self._calls = [], {}, {}
        for message in messages:
            self._append(message)

    def _touch(self, message: Wire) -> None:
        """`message` changed: its model is decoded again on the next read."""
        self._models.pop(id(message), None)
        self._view = None

    def _merge(self, target: Wire, owner: Wire, metadata: Mapping[str, Any] | None) -> None:
        """Merge metadata into `target` (a message, or a tool call inside `owner`)."""
        if metadata is not None:
            target[_METADATA] = merge_metadata(target.get(_METADATA), metadata)
            self._touch(owner)

    def _extend(self, target: Wire, key: str, delta: str, owner: Wire) -> None:
        """Append to a string member of `target` (inside the message `owner`); pieces are joined
        lazily, so long streams stay linear, and in blocks, so they stay compact."""
        buffer = self._last
        if buffer is None or buffer[0] is not target or buffer[1] != key:
            slot = (id(target), key)
            buffer = self._buffers.get(slot)
            if buffer is None:
                base = target.get(key)
                buffer = (target, key, [base if isinstance(base, str) else ""], [delta])
                self._buffers[slot] = self._last = buffer
                self._touch(owner)
                return
            self._last = buffer
        pieces = buffer[3]
        pieces.append(delta)
        if len(pieces) >= _PIECES:
            buffer[2].append("".join(pieces))
            pieces.clear()
        if self._view is not None:
            self._touch(owner)

    def _flush(self) -> None:
        self._last = None
        for target, key, blocks, pieces in self._buffers.values():
            blocks += pieces
            target[key] = "".join(blocks)
        self._buffers.clear()

    def _warn(self, kind: str, message: str, pointer: str = "") -> None:
        warning = StreamWarning(kind, message, pointer, self._at)
        self.warnings.append(warning)
        log.warning("%s", message)
