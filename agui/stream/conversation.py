"""A conversation: one thread's messages, state and pending interrupts, across runs.

    agent = agui.HttpAgent(url)
    conversation = agui.Conversation()
    result = await conversation.run(agent, "What is the weather?")
    if result.outcome == "interrupt":
        conversation.resolve(result.interrupts[0].id, {"approved": True})
        result = await conversation.run(agent)

`next_input()` builds the RunAgentInput of the next run (protocolVersion declared, a new runId,
the history without activity messages, the new message, the state, and `resume` answering the
pending interrupts in their order); it changes nothing. It refuses to start a run that leaves a
pending interrupt unanswered, and an interrupt past its `expiresAt` can only be cancelled; the
error wording is the TypeScript client's.

The new message joins the history when the run's stream starts: when its first frame arrives,
before that frame is applied. A run that fails before any frame arrives (a refused connection, an
HTTP error, an empty answer) leaves the history as it was, so the same call can be retried without
sending the message twice. `run_sync` does what `run` does, for code without an event loop.

A run stopped from outside (its task cancelled, Ctrl-C, the iteration closed) is recorded as
truncated with STOPPED as the reason, so the conversation is ready for the next run.

`connect(agent)` hydrates a conversation from its thread as a server with a store keeps it (an
HttpAgent: the thread's history, then its live run until that ends): its messages, state and
pending interrupts, as if it had run those runs itself.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from agui_generated import (
    PROTOCOL_VERSION,
    ActivityMessage,
    Context,
    Interrupt,
    Message,
    ResumeEntry,
    ResumeStatus,
    RunAgentInput,
    Tool,
    UserMessage,
)

from agui.agent.protocol import Agent, FrameSource, History, SyncThreadSource, ThreadSource
from agui.errors import ExpiredInterruptError, InterruptError, PendingInterruptsError
from agui.stream.lifecycle import run_lifecycle
from agui.stream.pipeline import Pipeline, StrictSource, describe
from agui.stream.reducer import TRUNCATED, Reducer, RunResult
from agui.stream.warning import StreamWarning, warning_json
from agui.wire.codec import to_json

__all__ = ["STOPPED", "Conversation", "SyncFrameSource", "expires"]

_DEFAULT_STATE: Any = object()

STOPPED = "The run was stopped by the client (cancelled) before its terminal event."
"""Why a run is recorded as truncated when its consumer stopped it: the task running
`Conversation.run` was cancelled, Ctrl-C, or the stream's iteration was closed."""


@runtime_checkable
class SyncFrameSource(Protocol):
    """An agent that can hand over its frames without an event loop (HttpAgent.frames_sync):
    what `Conversation.run_sync` reads."""

    def frames_sync(self, input: RunAgentInput, /) -> Iterator[bytes | dict[str, Any]]: ...


def _expired_message(interrupt: Interrupt) -> str:
    return (
        f"Interrupt {interrupt.id} expired at {interrupt.expires_at} and can no longer be "
        "answered. Cancel it to continue the thread."
    )


def expires(interrupt: Interrupt) -> datetime | None:
    """When the interrupt expires: expiresAt read as ISO 8601 (no offset = UTC); None when absent
    or unreadable, which means it never expires (as the TypeScript client reads it)."""
    if interrupt.expires_at is None:
        return None
    try:
        at = datetime.fromisoformat(interrupt.expires_at.strip())
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _strict(agent: object) -> bool:
    """Whether the agent's frames are to be decoded strictly (a StrictSource that says so)."""
    return isinstance(agent, StrictSource) and agent.strict


Outcome: TypeAlias = Literal["completed", "interrupt", "error", "failed"]
"""How a conversation's streams went, as `summary()` and the command line report it."""


class Conversation:
    """One thread across runs: its messages, state, pending interrupts and run results.

    thread_id: the thread (default: a new UUID). messages / state: where the thread starts (state
    defaults to {}). clock: returns the current time, for interrupt expiry (default: now, UTC).
    keep_events: keep every delivered event in `events` (off by default, so a long-lived
    conversation holds its messages and state, not its history of events). on_event: called with
    each event as it is applied (decoded, chunks expanded, verified; before a rejection, the
    events up to it), to watch runs live; an exception it raises stops the run like a rejection.
    """

    def __init__(
        self,
        thread_id: str | None = None,
        *,
        messages: Iterable[Message | Mapping[str, Any]] = (),
        state: Any = _DEFAULT_STATE,
        clock: Callable[[], datetime] | None = None,
        keep_events: bool = False,
        on_event: Callable[[Any], object] | None = None,
    ) -> None:
        self.thread_id = thread_id or str(uuid.uuid4())
        self.reducer = (
            Reducer(messages) if state is _DEFAULT_STATE else Reducer(messages, state=state)
        )
        self.keep_events = keep_events
        self.events: list[Any] = []
        """With keep_events: every event delivered (after chunk expansion and verification), in
        order. Empty otherwise."""
        self.on_event = on_event
        self.failures: list[str] = []
        """Client-side rejections: the stream broke a rule, or the transport failed."""
        self.clock = clock or (lambda: datetime.now(UTC))
        self._answers: dict[str, ResumeEntry] = {}
        self._answers_for = self.reducer.interrupt_generation

    # ── what it holds ─────────────────────────────────────────────────────────────────────────

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages as agui Message models (cached: reading again without a change in
        between returns the same tuple)."""
        return self.reducer.messages

    def messages_json(self) -> list[dict[str, Any]]:
        """The messages in wire form: JSON objects with the wire names (copies)."""
        return self.reducer.messages_json()

    @property
    def state(self) -> Any:
        """The state: any JSON value (a copy: changing it does not change the conversation)."""
        return self.reducer.state

    @property
    def pending_interrupts(self) -> tuple[Interrupt, ...]:
        """What the last finished run waits for (empty unless it ended with an interrupt)."""
        return self.reducer.pending_interrupts

    @property
    def warnings(self) -> list[StreamWarning]:
        """Every warning reported so far."""
        return self.reducer.warnings

    @property
    def runs(self) -> list[RunResult]:
        """One result per run, in order."""
        return self.reducer.runs

    # ── interrupts ───────────────────────────────────────────────────────────────────────────

    def resolve(
        self, interrupt_id: str, payload: Any = None, metadata: Mapping[str, Any] | None = None
    ) -> None:
        """Answer a pending interrupt; the next input's `resume` carries the answer. A payload of
        None is left out (the protocol has no null payload)."""
        interrupt = self._pending(interrupt_id)
        if self._expired(interrupt):
            raise ExpiredInterruptError(_expired_message(interrupt))
        self._record(
            ResumeEntry(
                interrupt_id=interrupt_id,
                status=ResumeStatus.RESOLVED,
                payload=copy.deepcopy(payload),
                metadata=None if metadata is None else copy.deepcopy(dict(metadata)),
            )
        )

    def cancel(self, interrupt_id: str, metadata: Mapping[str, Any] | None = None) -> None:
        """Give up on a pending interrupt (always allowed, expired or not)."""
        self._pending(interrupt_id)
        self._record(
            ResumeEntry(
                interrupt_id=interrupt_id,
                status=ResumeStatus.CANCELLED,
                metadata=None if metadata is None else copy.deepcopy(dict(metadata)),
            )
        )

    def _pending(self, interrupt_id: str) -> Interrupt:
        for interrupt in self.pending_interrupts:
            if interrupt.id == interrupt_id:
                return interrupt
        raise InterruptError(f"Interrupt {interrupt_id} is not pending on this thread.")

    def _expired(self, interrupt: Interrupt) -> bool:
        at = expires(interrupt)
        return at is not None and at <= self.clock()

    def _record(self, entry: ResumeEntry) -> None:
        self._fresh_answers()[entry.interrupt_id] = entry

    def _fresh_answers(self) -> dict[str, ResumeEntry]:
        """Answers recorded for the current pending interrupts (older ones are dropped)."""
        if self._answers_for != self.reducer.interrupt_generation:
            self._answers = {}
            self._answers_for = self.reducer.interrupt_generation
        return self._answers

    # ── the next run ─────────────────────────────────────────────────────────────────────────

    def next_input(
        self,
        message: str | Message | None = None,
        *,
        tools: Iterable[Tool] = (),
        context: Iterable[Context] = (),
        forwarded_props: Any = None,
        resume: Iterable[ResumeEntry] | None = None,
    ) -> RunAgentInput:
        """The RunAgentInput of the next run: the history (without activity messages) and then
        `message` (text becomes a user message; a message whose id the history holds is not
        repeated). `resume` defaults to the recorded answers, in the order of the interrupts.

        It changes nothing: the message joins the history only when a run of this input starts
        (`run`, `run_sync`, or `consume(..., input=)`: when the first frame arrives).

        Raises PendingInterruptsError when a pending interrupt is left unanswered and
        ExpiredInterruptError when an expired one is answered with anything but a cancellation.
        """
        pending = self.pending_interrupts
        if resume is None:
            answers = self._fresh_answers()
            entries = tuple(answers[i.id] for i in pending if i.id in answers)
        else:
            entries = tuple(resume)
        by_id = {entry.interrupt_id: entry for entry in entries}
        uncovered = [i.id for i in pending if i.id not in by_id]
        if uncovered:
            raise PendingInterruptsError(
                f"Thread has {len(uncovered)} pending interrupt(s) not addressed by resume: "
                + ", ".join(uncovered)
            )
        for interrupt in pending:
            if self._expired(interrupt) and by_id[interrupt.id].status != ResumeStatus.CANCELLED:
                raise ExpiredInterruptError(_expired_message(interrupt))
        held = self.messages
        history: list[Message] = [m for m in held if not isinstance(m, ActivityMessage)]
        if message is not None:
            if isinstance(message, str):
                message = UserMessage(id=str(uuid.uuid4()), content=message)
            if all(m.id != message.id for m in held):
                history.append(message)
        return RunAgentInput(
            thread_id=self.thread_id,
            run_id=str(uuid.uuid4()),
            protocol_version=PROTOCOL_VERSION,
            state=self.reducer.state,
            messages=tuple(history),
            tools=tuple(tools),
            context=tuple(context),
            forwarded_props={} if forwarded_props is None else copy.deepcopy(forwarded_props),
            resume=entries or None,
        )

    # ── feeding events ───────────────────────────────────────────────────────────────────────

    def apply(self, event: Any) -> list[Any]:
        """Apply one already processed event (decoded, chunks expanded, verified) directly."""
        delivered = self.reducer.feed(event)
        for applied in delivered:
            self._applied(applied)
        return delivered

    def pipeline(self, *, strict: bool = False) -> Pipeline:
        """A new pipeline for one stream, applying to this conversation (`strict`: decode
        exactly the contract, see Pipeline)."""
        return Pipeline(self.reducer, strict=strict, on_event=self._applied)

    def _applied(self, event: Any) -> None:
        if self.keep_events:
            self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def consume(
        self, items: Iterable[Any], *, input: RunAgentInput | None = None
    ) -> RunResult | None:
        """Process one recorded stream (JSON text or bytes, parsed objects or models, one event
        per item) through the whole pipeline. Returns the last run's result. `input`: the input
        the stream answers (from `next_input`); its messages join the history when the first
        item arrives, as in `run`.

        A client-side rejection (StreamError, ProtocolError among them) is recorded in
        `failures`, the open run becomes truncated, and the error is raised."""
        pipeline = self.pipeline()
        with self._stream(pipeline):
            for item in self._starting(items, input):
                pipeline.feed(item)
            pipeline.finish()
        return self.runs[-1] if self.runs else None

    async def follow(
        self,
        items: AsyncIterable[Any],
        *,
        input: RunAgentInput | None = None,
        strict: bool = False,
    ) -> RunResult | None:
        """`consume`, for a source read asynchronously: process one stream through the whole
        pipeline as its items arrive (`HttpAgent.rejoin_frames(run_id)`, say: a run's stream read
        again from its start). `input`: as in `consume`; `strict`: decode exactly the contract.
        Closes the source when it stops early. Returns the last run's result; raises as
        `consume` does."""
        pipeline = self.pipeline(strict=strict)
        with self._stream(pipeline):
            try:
                first = True
                async for item in items:
                    if first:
                        first = False
                        if input is not None:
                            self._join(input)
                    pipeline.feed(item)
            finally:
                if isinstance(items, AsyncGenerator):
                    await items.aclose()
            pipeline.finish()
        return self.runs[-1] if self.runs else None

    async def run(
        self,
        agent: Agent,
        message: str | Message | None = None,
        *,
        tools: Iterable[Tool] = (),
        context: Iterable[Context] = (),
        forwarded_props: Any = None,
        resume: Iterable[ResumeEntry] | None = None,
        input: RunAgentInput | None = None,
    ) -> RunResult | None:
        """Run `agent` on the next input (or on `input`, sent as given) and apply its stream.
        Returns the last run's result; raises as `consume` does, and on transport errors. The
        input's messages join the history when the first frame arrives.

        A local agent runs inside the same run lifecycle AgentApp gives it (RUN_STARTED and the
        terminal event added when missing, an exception turned into RUN_ERROR), so it yields the
        same messages here as behind a server. A FrameSource (HttpAgent) hands over its frames
        undecoded, and the pipeline's own decoding reports what it strips, strictly when the
        agent is a StrictSource that says so (`HttpAgent(url, strict=True)`).

        Cancelling the task that awaits it closes the stream (and so the connection) and records
        the open run as truncated (STOPPED); the conversation is ready for the next run."""
        if input is None:
            input = self.next_input(
                message,
                tools=tools,
                context=context,
                forwarded_props=forwarded_props,
                resume=resume,
            )
        stream: AsyncIterator[Any] = (
            agent.frames(input) if isinstance(agent, FrameSource) else run_lifecycle(agent, input)
        )
        return await self.follow(stream, input=input, strict=_strict(agent))

    def run_sync(
        self,
        agent: Agent,
        message: str | Message | None = None,
        *,
        tools: Iterable[Tool] = (),
        context: Iterable[Context] = (),
        forwarded_props: Any = None,
        resume: Iterable[ResumeEntry] | None = None,
        input: RunAgentInput | None = None,
    ) -> RunResult | None:
        """`run`, for code without an event loop. A SyncFrameSource (HttpAgent) is read with
        `frames_sync`, with no event loop at all; any other agent runs in a new one
        (`asyncio.run`), which is refused inside a running loop (await `run` there)."""
        if not isinstance(agent, SyncFrameSource):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:
                raise RuntimeError(
                    "Conversation.run_sync cannot run a local agent inside a running event "
                    "loop: await conversation.run(...) instead."
                )
            return asyncio.run(
                self.run(
                    agent,
                    message,
                    tools=tools,
                    context=context,
                    forwarded_props=forwarded_props,
                    resume=resume,
                    input=input,
                )
            )
        if input is None:
            input = self.next_input(
                message,
                tools=tools,
                context=context,
                forwarded_props=forwarded_props,
                resume=resume,
            )
        started = input
        return self._follow_sync(lambda: agent.frames_sync(started), started, _strict(agent))

    async def connect(
        self, agent: ThreadSource, *, history: History = "compact"
    ) -> RunResult | None:
        """Hydrate this conversation from its thread (`thread_id`) as the agent's server keeps it
        (an HttpAgent against an AgentApp with a store): the thread's history, "compact" (the
        server's snapshots of the messages and state) or "full" (every stored event), and then
        its live run, applied as it streams until it ends. Afterwards the conversation holds the
        thread's messages, state and pending interrupts, as one that ran those runs does, and
        `next_input` continues the thread. Returns the last run's result (the live run's, or the
        history's); raises as `run` does (HttpError 404 for a thread the server holds nothing
        of). Meant for a new Conversation(thread_id): a full history replays the runs' events,
        which a conversation that already holds them would see twice."""
        if not isinstance(agent, ThreadSource):
            raise TypeError(
                f"{type(agent).__name__} cannot connect to a thread: it has no connect_frames "
                "(agui.HttpAgent has, against a server with a store)"
            )
        frames = agent.connect_frames(self.thread_id, history=history)
        return await self.follow(frames, strict=_strict(agent))

    def connect_sync(
        self, agent: SyncThreadSource, *, history: History = "compact"
    ) -> RunResult | None:
        """`connect`, for code without an event loop (HttpAgent.connect_frames_sync)."""
        if not isinstance(agent, SyncThreadSource):
            raise TypeError(
                f"{type(agent).__name__} cannot connect to a thread: it has no "
                "connect_frames_sync (agui.HttpAgent has, against a server with a store)"
            )
        thread_id = self.thread_id
        return self._follow_sync(
            lambda: agent.connect_frames_sync(thread_id, history=history), None, _strict(agent)
        )

    def _follow_sync(
        self, source: Callable[[], Iterable[Any]], input: RunAgentInput | None, strict: bool
    ) -> RunResult | None:
        """`follow` without an event loop, for the source `source()` makes inside the stream (so a
        failure to open it is recorded as the stream's); closes the source when it stops
        early."""
        pipeline = self.pipeline(strict=strict)
        with self._stream(pipeline):
            frames = source()
            try:
                for item in self._starting(frames, input):
                    pipeline.feed(item)
            finally:
                if isinstance(frames, Generator):
                    frames.close()
            pipeline.finish()
        return self.runs[-1] if self.runs else None

    def _starting(self, items: Iterable[Any], input: RunAgentInput | None) -> Iterator[Any]:
        """The items, with the input's messages joining the history before the first."""
        first = True
        for item in items:
            if first:
                first = False
                if input is not None:
                    self._join(input)
            yield item

    def _join(self, input: RunAgentInput) -> None:
        """The run of `input` started: its messages join the history (those not held yet)."""
        self.reducer.add_messages(input.messages)

    @contextmanager
    def _stream(self, pipeline: Pipeline) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            reason = describe(exc)
            pipeline.abort(reason)
            self.failures.append(reason)
            raise
        except BaseException:  # cancelled, interrupted or closed from outside: not a rejection
            pipeline.abort(STOPPED)
            raise

    # ── summary ──────────────────────────────────────────────────────────────────────────────

    def outcome(self) -> tuple[Outcome, str | None]:
        """How the streams went, and why when not completed:

        * "failed": the client rejected a stream (a verification error, a frame that is not a
          valid event, a stream cut inside a run, a transport error), or no run was reported;
        * "error": the agent reported RUN_ERROR in a run (the stream itself was consumed, and
          runs after it were processed); the reason is that run's message;
        * "interrupt": the last run finished with an interrupt outcome and waits for answers;
        * "completed": every run ended with RUN_FINISHED.

        "interrupt" and "error" are also RunResult.outcome words, with the same meaning."""
        if self.failures:
            return "failed", self.failures[-1]
        if not self.runs:
            return "failed", "No run was reported."
        truncated = next((r for r in self.runs if r.outcome == "truncated"), None)
        if truncated is not None:
            return "failed", truncated.error_message or TRUNCATED
        errored = next((r for r in self.runs if r.outcome == "error"), None)
        if errored is not None:
            return "error", errored.error_message or "The agent reported an error."
        if self.runs[-1].outcome == "interrupt":
            return "interrupt", None
        return "completed", None

    def summary(self) -> dict[str, Any]:
        """Everything this conversation saw, as one JSON object: "outcome" and "error" (see
        `outcome()`; error is null unless the outcome is error or failed), the kept events
        ("events", "eventTypes": empty unless keep_events), the messages and state in wire form,
        the warnings and the pending interrupts."""
        outcome, error = self.outcome()
        return {
            "outcome": outcome,
            "error": error,
            "events": [to_json(e) for e in self.events],
            "eventTypes": [str(e.type) for e in self.events],
            "messages": self.messages_json(),
            "state": self.state,
            "warnings": [warning_json(w) for w in self.warnings],
            "pendingInterrupts": [to_json(i) for i in self.pending_interrupts],
        }
