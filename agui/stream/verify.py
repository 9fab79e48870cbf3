"""Verification: the run lifecycle and bracket state machine, applied after chunk expansion.

The rules and their wording are those of the official TypeScript client (verify/verify.ts,
@ag-ui/client 1.0.0), so a stream is rejected here exactly when it is rejected there, with the same
message. On top of those, rules of the newer draft that 1.0.0 does not check:

* RUN_FINISHED names the threadId and runId its RUN_STARTED named;
* a stream carries one thread: every RUN_STARTED names the same threadId;
* an interrupt outcome lists each interrupt id once;
* a stream that ends inside a run (no RUN_FINISHED or RUN_ERROR) is truncated, never a success.

RUN_STARTED.protocolVersion is compared with the version this package speaks: a newer or
uninterpretable declaration is warned about (never rejected), an older or absent one is silent.

Unknown events (UnknownEvent from tolerant decoding) pass through without touching the state: the
reference client drops them before verification, so they can neither break nor satisfy a rule.
An event this module has no rule for (one a newer spec adds, say) is checked only against the run
lifecycle (it must come inside a run) and then passes untouched.
"""

from __future__ import annotations

import logging
import re
from typing import Literal, TypeAlias

from agui_generated import (
    PROTOCOL_VERSION,
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    AssistantMessage,
    Event,
    Message,
    MessagesSnapshotEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEncryptedValueSubtype,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    Role,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agui.errors import ProtocolError
from agui.stream.warning import StreamWarning
from agui.wire.codec import UnknownEvent

__all__ = ["TRUNCATED", "Verifier"]

log = logging.getLogger("agui.stream")

Item: TypeAlias = Event | UnknownEvent
OwnerKind: TypeAlias = Literal["message", "toolCall", "activity", "reasoning"]

TRUNCATED = (
    "The stream ended without a terminal event (RUN_FINISHED or RUN_ERROR): the run is truncated."
)
"""The error finish() raises when the stream stops inside a run."""

PARENT = "(the parent agent)"
_VERSION = re.compile(r"[0-9]+\.[0-9]+")


def _who(owner: str | None) -> str:
    return PARENT if owner is None else owner


class Verifier:
    """Checks the run lifecycle and every bracket of a stream (one pipeline stage).

    feed(event) returns [event] when the event is legal where it stands and raises ProtocolError
    (with the event's number as fed, from 1) when it is not; finish() raises when the stream ended inside a
    run. `warnings` collects the protocol-version warnings.

    `protocol_version` is the version this client speaks, compared with RUN_STARTED's."""

    def __init__(self, *, protocol_version: str = PROTOCOL_VERSION) -> None:
        self.warnings: list[StreamWarning] = []
        self.protocol_version = protocol_version
        self._index = -1
        self._seen_first = False
        self._started = False
        self._finished = False
        self._errored = False
        self._thread_id: str | None = None
        """The stream's thread, from its first RUN_STARTED."""
        self._run: tuple[str, str] | None = None
        """(threadId, runId) of the current run's RUN_STARTED."""
        self._reset()

    def _reset(self) -> None:
        """Forget everything scoped to one run."""
        # Open entities, as ordered sets (dict keys) so errors list them in opening order.
        self._messages: dict[str, None] = {}
        self._tool_calls: dict[str, None] = {}
        self._spans: dict[str, None] = {}
        self._reasoning: dict[str, None] = {}
        # Who opened (or was seeded with) each id, per kind; None = the parent agent. Kept after
        # the entity closes: a later event naming the id must still agree with its owner.
        self._owners: dict[OwnerKind, dict[str, str | None]] = {
            "message": {},
            "toolCall": {},
            "activity": {},
            "reasoning": {},
        }
        self._steps: dict[str | None, dict[str, None]] = {}
        self._subagents: dict[str, None] = {}
        self._closed_subagents: set[str] = set()

    # ── the stage interface ──────────────────────────────────────────────────────────────────

    def feed(self, event: Item) -> list[Item]:
        """Check one event; returns [event] or raises ProtocolError."""
        self._index += 1
        if isinstance(event, UnknownEvent):
            return [event]
        kind = event.type.value
        if self._errored and not isinstance(event, RunStartedEvent):
            raise self._fail(
                f"Cannot send event type '{kind}': The run has already errored with 'RUN_ERROR'. "
                "No further events can be sent."
            )
        if self._finished and not isinstance(event, RunStartedEvent | RunErrorEvent):
            raise self._fail(
                f"Cannot send event type '{kind}': The run has already finished with "
                "'RUN_FINISHED'. Start a new run with 'RUN_STARTED'."
            )
        if not self._seen_first:
            self._seen_first = True
            if not isinstance(event, RunStartedEvent | RunErrorEvent):
                raise self._fail("First event must be 'RUN_STARTED'")
        self._check(event)
        return [event]

    def finish(self) -> list[Item]:
        """End of stream: a run that was started must have ended."""
        if self._started and not (self._finished or self._errored):
            raise ProtocolError(TRUNCATED)
        return []

    # ── what is open ─────────────────────────────────────────────────────────────────────────

    def continues_open_stream(self, event: Item) -> bool:
        """Whether `event` is content (TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS,
        REASONING_MESSAGE_CONTENT) of the parent agent for a stream that is open, which `feed`
        admits without changing anything: a producer's fast path for the bulk of a run."""
        if isinstance(event, TextMessageContentEvent):
            return event.subagent_run_id is None and event.message_id in self._messages
        if isinstance(event, ToolCallArgsEvent):
            return event.subagent_run_id is None and event.tool_call_id in self._tool_calls
        if isinstance(event, ReasoningMessageContentEvent):
            return event.subagent_run_id is None and event.message_id in self._reasoning
        return False

    def admits(
        self, event: TextMessageContentEvent | ToolCallArgsEvent | ReasoningMessageContentEvent
    ) -> bool:
        """Whether `feed(event)` would admit the delta without changing anything: the run has
        not errored and `continues_open_stream(event)`. If so, the event counts as fed (a
        pipeline's fast path for the bulk of a run); if not, `feed` decides."""
        if self._errored or event.subagent_run_id is not None:
            return False
        if type(event) is TextMessageContentEvent:
            open_ = event.message_id in self._messages
        elif type(event) is ToolCallArgsEvent:
            open_ = event.tool_call_id in self._tool_calls
        else:
            open_ = self.continues_open_stream(event)
        if not open_:
            return False
        self._index += 1
        return True

    def closing_events(self) -> list[Event]:
        """The events that close everything open, in an order `feed` admits, each attributed to
        the subagent that opened it: REASONING_MESSAGE_END, REASONING_END, TEXT_MESSAGE_END,
        TOOL_CALL_END, STEP_FINISHED, and SUBAGENT_ERROR for a subagent that never finished. A
        producer sends them before its RUN_FINISHED (agui.stream.lifecycle); nothing is fed."""
        owner = self._owners
        closing: list[Event] = []
        for mid in reversed(self._reasoning):
            owned = owner["reasoning"].get(mid)
            closing.append(ReasoningMessageEndEvent(message_id=mid, subagent_run_id=owned))
        for mid in reversed(self._spans):
            owned = owner["reasoning"].get(mid)
            closing.append(ReasoningEndEvent(message_id=mid, subagent_run_id=owned))
        for mid in reversed(self._messages):
            owned = owner["message"].get(mid)
            closing.append(TextMessageEndEvent(message_id=mid, subagent_run_id=owned))
        for tid in reversed(self._tool_calls):
            owned = owner["toolCall"].get(tid)
            closing.append(ToolCallEndEvent(tool_call_id=tid, subagent_run_id=owned))
        for tag, names in self._steps.items():
            for name in reversed(names):
                closing.append(StepFinishedEvent(step_name=name, subagent_run_id=tag))
        for sid in reversed(self._subagents):
            closing.append(
                SubagentErrorEvent(
                    subagent_run_id=sid, message="The run ended before this subagent finished."
                )
            )
        return closing

    # ── helpers ──────────────────────────────────────────────────────────────────────────────

    def _fail(self, message: str) -> ProtocolError:
        return ProtocolError(message, event=self._index + 1)

    def _warn(self, message: str, pointer: str) -> None:
        warning = StreamWarning("version", message, pointer, self._index + 1)
        self.warnings.append(warning)
        log.warning("event %d: %s", self._index + 1, message)

    def _agrees(
        self, kind: str, tag: str | None, owners: dict[str, str | None], label: str, entity: str
    ) -> None:
        """An attributed continuation must name the subagent that opened its entity; an absent
        tag always agrees, and an entity with no recorded owner has nothing to disagree with."""
        if tag is None or entity not in owners:
            return
        owner = owners[entity]
        if owner != tag:
            raise self._fail(
                f"Cannot send '{kind}': subagentRunId '{tag}' does not match the {label} "
                f"'{entity}' opener's subagent '{_who(owner)}'."
            )

    def _seed(self, messages: tuple[Message, ...], authoritative: bool) -> None:
        """Record the owners of replayed history. A snapshot replaces what is on record; the
        RUN_STARTED input only fills ids nobody has claimed."""
        for message in messages:
            owners = self._owners[
                "reasoning"
                if message.role is Role.REASONING
                else "activity"
                if message.role is Role.ACTIVITY
                else "message"
            ]
            owner = message.subagent_run_id
            if authoritative or message.id not in owners:
                owners[message.id] = owner
            if isinstance(message, AssistantMessage):
                calls = self._owners["toolCall"]
                for call in message.tool_calls or ():
                    if authoritative or call.id not in calls:
                        calls[call.id] = owner

    # ── the rules ────────────────────────────────────────────────────────────────────────────

    def _check(self, event: Event) -> None:
        kind = event.type.value
        tag: str | None = getattr(event, "subagent_run_id", None)
        owners = self._owners

        if isinstance(event, RunStartedEvent):
            self._run_started(event)
        elif isinstance(event, RunFinishedEvent):
            self._run_finished(event)
        elif isinstance(event, RunErrorEvent):
            self._errored = True

        elif isinstance(event, TextMessageStartEvent):
            mid = event.message_id
            if mid in self._messages:
                raise self._fail(
                    f"Cannot send 'TEXT_MESSAGE_START' event: A text message with ID '{mid}' is "
                    "already in progress. Complete it with 'TEXT_MESSAGE_END' first."
                )
            self._agrees(kind, tag, owners["message"], "message", mid)
            self._messages[mid] = None
            owners["message"].setdefault(mid, tag)
        elif isinstance(event, TextMessageContentEvent | TextMessageEndEvent):
            mid = event.message_id
            if mid not in self._messages:
                advice = (
                    "Start a text message with 'TEXT_MESSAGE_START' first."
                    if isinstance(event, TextMessageContentEvent)
                    else "A 'TEXT_MESSAGE_START' event must be sent first."
                )
                raise self._fail(
                    f"Cannot send '{kind}' event: No active text message found with ID "
                    f"'{mid}'. {advice}"
                )
            self._agrees(kind, tag, owners["message"], "message", mid)
            if isinstance(event, TextMessageEndEvent):
                del self._messages[mid]

        elif isinstance(event, ToolCallStartEvent):
            self._tool_call_started(event)
        elif isinstance(event, ToolCallArgsEvent | ToolCallEndEvent):
            tid = event.tool_call_id
            if tid not in self._tool_calls:
                advice = (
                    "Start a tool call with 'TOOL_CALL_START' first."
                    if isinstance(event, ToolCallArgsEvent)
                    else "A 'TOOL_CALL_START' event must be sent first."
                )
                raise self._fail(
                    f"Cannot send '{kind}' event: No active tool call found with ID '{tid}'. "
                    f"{advice}"
                )
            self._agrees(kind, tag, owners["toolCall"], "tool call", tid)
            if isinstance(event, ToolCallEndEvent):
                del self._tool_calls[tid]
        elif isinstance(event, ToolCallResultEvent):
            # It mints a tool message; the newest mint owns the id.
            owners["message"][event.message_id] = tag

        elif isinstance(event, StepStartedEvent):
            steps = self._steps.setdefault(tag, {})
            if event.step_name in steps:
                where = "" if tag is None else f" in subagent '{tag}'"
                raise self._fail(
                    f"Step \"{event.step_name}\" is already active for 'STEP_STARTED'{where}"
                )
            steps[event.step_name] = None
        elif isinstance(event, StepFinishedEvent):
            self._step_finished(event.step_name, tag)

        elif isinstance(event, ReasoningStartEvent | ReasoningMessageStartEvent):
            mid = event.message_id
            span = isinstance(event, ReasoningStartEvent)
            open_ = self._spans if span else self._reasoning
            if mid in open_:
                raise self._fail(
                    "Cannot send 'REASONING_START' event: A reasoning span with ID "
                    f"'{mid}' is already in progress. Complete it with 'REASONING_END' first."
                    if span
                    else "Cannot send 'REASONING_MESSAGE_START' event: A reasoning message with "
                    f"ID '{mid}' is already in progress. Complete it with "
                    "'REASONING_MESSAGE_END' first."
                )
            self._agrees(kind, tag, owners["reasoning"], "reasoning message", mid)
            open_[mid] = None
            owners["reasoning"].setdefault(mid, tag)
        elif isinstance(
            event, ReasoningMessageContentEvent | ReasoningMessageEndEvent | ReasoningEndEvent
        ):
            mid = event.message_id
            span = isinstance(event, ReasoningEndEvent)
            open_ = self._spans if span else self._reasoning
            if mid not in open_:
                raise self._fail(
                    "Cannot send 'REASONING_END' event: No active reasoning span found with ID "
                    f"'{mid}'. A 'REASONING_START' event must be sent first."
                    if span
                    else f"Cannot send '{kind}' event: No active reasoning message found with ID "
                    f"'{mid}'. Start a reasoning message with 'REASONING_MESSAGE_START' first."
                )
            self._agrees(kind, tag, owners["reasoning"], "reasoning message", mid)
            if not isinstance(event, ReasoningMessageContentEvent):
                del open_[mid]
        elif isinstance(event, ReasoningEncryptedValueEvent):
            eid = event.entity_id
            if event.subtype is ReasoningEncryptedValueSubtype.TOOL_CALL:
                self._agrees(kind, tag, owners["toolCall"], "tool call", eid)
            else:  # a message: text and reasoning ids live in separate books, check both
                book = owners["message"] if eid in owners["message"] else owners["reasoning"]
                self._agrees(kind, tag, book, "message", eid)

        elif isinstance(event, ActivitySnapshotEvent):
            # Only a replacing snapshot (or a first one) takes ownership.
            if event.message_id not in owners["activity"] or event.replace is not False:
                owners["activity"][event.message_id] = tag
        elif isinstance(event, ActivityDeltaEvent):
            self._agrees(kind, tag, owners["activity"], "activity", event.message_id)
        elif isinstance(event, MessagesSnapshotEvent):
            self._seed(event.messages, authoritative=True)

        elif isinstance(event, SubagentStartedEvent):
            self._subagent_started(event)
        elif isinstance(event, SubagentFinishedEvent | SubagentErrorEvent):
            sid = event.subagent_run_id
            if sid not in self._subagents:
                raise self._fail(
                    f"Cannot send '{kind}': no active subagent found with ID '{sid}'. "
                    "A 'SUBAGENT_STARTED' event must be sent first."
                )
            del self._subagents[sid]
            self._closed_subagents.add(sid)
        # STATE_*, RAW, CUSTOM and any event without a branch above (an event a newer spec adds):
        # no rule beyond the lifecycle checks in feed().

    def _run_started(self, event: RunStartedEvent) -> None:
        if self._started and not (self._finished or self._errored):
            raise self._fail(
                "Cannot send 'RUN_STARTED' while a run is still active. The previous run must be "
                "finished with 'RUN_FINISHED' before starting a new run."
            )
        if self._thread_id is not None and event.thread_id != self._thread_id:
            raise self._fail(
                f"RUN_STARTED threadId '{event.thread_id}' does not match the stream's threadId "
                f"'{self._thread_id}': one stream carries one thread."
            )
        if self._finished or self._errored:
            self._reset()
        self._started, self._finished, self._errored = True, False, False
        self._thread_id = event.thread_id
        self._run = (event.thread_id, event.run_id)
        if event.input is not None:
            self._seed(event.input.messages, authoritative=False)
        self._check_version(event.protocol_version)

    def _check_version(self, declared: str | None) -> None:
        if declared is None or declared == self.protocol_version:
            return
        if not _VERSION.fullmatch(declared):
            self._warn(
                f"The producer declared protocol version '{declared}', which this client cannot "
                "interpret.",
                "/protocolVersion",
            )
        elif _numbers(declared) > _numbers(self.protocol_version):
            self._warn(
                f"The producer speaks protocol {declared}; this client speaks "
                f"{self.protocol_version}. Unrecognised material will be stripped with warnings.",
                "/protocolVersion",
            )

    def _run_finished(self, event: RunFinishedEvent) -> None:
        if self._run is None:  # feed() admits RUN_FINISHED only after a RUN_STARTED
            raise self._fail("Cannot send 'RUN_FINISHED': no run has been started.")
        thread_id, run_id = self._run
        for field, got, want in (
            ("threadId", event.thread_id, thread_id),
            ("runId", event.run_id, run_id),
        ):
            if got != want:
                raise self._fail(
                    f"RUN_FINISHED {field} '{got}' does not match RUN_STARTED {field} '{want}'."
                )
        if isinstance(event.outcome, RunFinishedInterruptOutcome):
            seen: set[str] = set()
            for interrupt in event.outcome.interrupts:
                if interrupt.id in seen:
                    raise self._fail(
                        f"RUN_FINISHED lists interrupt id '{interrupt.id}' more than once: "
                        "interrupt ids are unique within an outcome."
                    )
                seen.add(interrupt.id)

        steps = [
            name if owner is None else f"{name} (subagent '{owner}')"
            for owner, names in self._steps.items()
            for name in names
        ]
        for what, open_ in (
            ("steps", steps),
            ("text messages", list(self._messages)),
            ("reasoning messages", list(self._reasoning)),
            ("reasoning spans", list(self._spans)),
            ("tool calls", list(self._tool_calls)),
            ("subagents", list(self._subagents)),
        ):
            if open_:
                raise self._fail(
                    f"Cannot send 'RUN_FINISHED' while {what} are still active: " + ", ".join(open_)
                )
        self._finished = True

    def _tool_call_started(self, event: ToolCallStartEvent) -> None:
        tid, tag, parent = event.tool_call_id, event.subagent_run_id, event.parent_message_id
        if tid in self._tool_calls:
            raise self._fail(
                f"Cannot send 'TOOL_CALL_START' event: A tool call with ID '{tid}' is already in "
                "progress. Complete it with 'TOOL_CALL_END' first."
            )
        messages, calls = self._owners["message"], self._owners["toolCall"]
        # A tool call lives inside its parent message, so it has that message's owner.
        inherited = parent is not None and parent in messages
        parent_owner = messages[parent] if parent is not None and inherited else None
        if inherited and tag is not None and tag != parent_owner:
            raise self._fail(
                f"Cannot send 'TOOL_CALL_START': subagentRunId '{tag}' does not match its parent "
                f"message '{parent}' owner '{_who(parent_owner)}'. A tool call belongs to the "
                "message that carries it."
            )
        if tid in calls:
            self._agrees("TOOL_CALL_START", tag, calls, "tool call", tid)
            if tag is None and inherited and parent_owner != calls[tid]:
                raise self._fail(
                    f"Cannot send 'TOOL_CALL_START': tool call '{tid}' is owned by "
                    f"'{_who(calls[tid])}' but its parent message '{parent}' is owned by "
                    f"'{_who(parent_owner)}'. A tool call belongs to the message that carries it."
                )
        else:
            calls[tid] = tag if tag is not None else parent_owner
        self._tool_calls[tid] = None

    def _step_finished(self, name: str, tag: str | None) -> None:
        steps = self._steps.setdefault(tag, {})
        if name in steps:
            del steps[name]
            return
        for owner, names in self._steps.items():
            if owner != tag and name in names:
                mine = "the parent agent" if tag is None else f"subagent '{tag}'"
                theirs = "the parent agent" if owner is None else f"subagent '{owner}'"
                raise self._fail(
                    f"Cannot send 'STEP_FINISHED' for step \"{name}\" attributed to {mine}: "
                    f"that step is open under {theirs}. A step must be finished by whoever "
                    "started it."
                )
        raise self._fail(f"Cannot send 'STEP_FINISHED' for step \"{name}\" that was not started")

    def _subagent_started(self, event: SubagentStartedEvent) -> None:
        sid, parent = event.subagent_run_id, event.parent_subagent_run_id
        if sid in self._subagents:
            raise self._fail(
                f"Cannot send 'SUBAGENT_STARTED': subagent '{sid}' is already active. Finish it "
                "with 'SUBAGENT_FINISHED' first."
            )
        if sid in self._closed_subagents:
            raise self._fail(
                f"Cannot send 'SUBAGENT_STARTED': subagent '{sid}' has already finished in this "
                "run. Subagent IDs are per-invocation and cannot be reused."
            )
        if (
            parent is not None
            and parent not in self._subagents
            and parent not in self._closed_subagents
        ):
            raise self._fail(
                f"Cannot send 'SUBAGENT_STARTED': parentSubagentRunId '{parent}' has not been "
                "started in this run."
            )
        self._subagents[sid] = None


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
