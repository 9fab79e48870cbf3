"""A conversation: one thread's messages, state and pending interrupts, across runs.

    from agui.stream.conversation import Conversation

    agent = agui.HttpAgent(url)
    conversation = Conversation()
    result = await conversation.run(agent, "What is the weather?")
    if result.outcome == "interrupt":
        conversation.resolve(result.interrupts[0].id, {"approved": True})
        result = await conversation.run(agent)

`next_input()` builds the RunAgentInput of the next run (protocolVersion declared, a new runId,
the history without activity messages, the state, and `resume` answering the pending interrupts in
their order). It refuses to start a run that leaves a pending interrupt unanswered, and an
interrupt past its `expiresAt` can only be cancelled; the error wording is the TypeScript client's.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

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

from agui.agent.protocol import Agent
from agui.errors import ExpiredInterruptError, InterruptError, PendingInterruptsError
from agui.stream.pipeline import Pipeline, describe
from agui.stream.reducer import Reducer, RunResult
from agui.stream.warning import StreamWarning, warning_json
from agui.wire.codec import to_json

__all__ = ["Conversation", "expires"]

_DEFAULT_STATE: Any = object()


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


class Conversation:
    """One thread across runs: its messages, state, pending interrupts and run results.

    thread_id: the thread (default: a new UUID). messages / state: where the thread starts (state
    defaults to {}). clock: returns the current time, for interrupt expiry (default: now, UTC).
    """

    def __init__(
        self,
        thread_id: str | None = None,
        *,
        messages: Iterable[Message | Mapping[str, Any]] = (),
        state: Any = _DEFAULT_STATE,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.thread_id = thread_id or str(uuid.uuid4())
        self.reducer = (
            Reducer(messages) if state is _DEFAULT_STATE else Reducer(messages, state=state)
        )
        self.events: list[Any] = []
        """Every event delivered (after chunk expansion and verification), in order."""
        self.failures: list[str] = []
        """Client-side rejections: the stream broke a rule, or the transport failed."""
        self.clock = clock or (lambda: datetime.now(UTC))
        self._answers: dict[str, ResumeEntry] = {}
        self._answers_for = self.reducer.interrupt_generation

    # ── what it holds ─────────────────────────────────────────────────────────────────────────

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages as wire JSON objects."""
        return self.reducer.messages

    def models(self) -> list[Message]:
        """The messages as agui Message models."""
        return self.reducer.models()

    @property
    def state(self) -> Any:
        """The state: any JSON value."""
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
        """The RunAgentInput of the next run. `message` (text becomes a user message) joins the
        history. `resume` defaults to the recorded answers, in the order of the interrupts.

        Raises PendingInterruptsError when a pending interrupt is left unanswered and
        ExpiredInterruptError when an expired one is answered with anything but a cancellation;
        the history is not changed then.
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
        if message is not None:
            if isinstance(message, str):
                message = UserMessage(id=str(uuid.uuid4()), content=message)
            self.reducer.add_messages([message])
        state = self.reducer.state
        return RunAgentInput(
            thread_id=self.thread_id,
            run_id=str(uuid.uuid4()),
            protocol_version=PROTOCOL_VERSION,
            state=state,
            messages=tuple(m for m in self.models() if not isinstance(m, ActivityMessage)),
            tools=tuple(tools),
            context=tuple(context),
            forwarded_props={} if forwarded_props is None else copy.deepcopy(forwarded_props),
            resume=entries or None,
        )

    # ── feeding events ───────────────────────────────────────────────────────────────────────

    def apply(self, event: Any) -> list[Any]:
        """Apply one already processed event (decoded, chunks expanded, verified) directly."""
        delivered = self.reducer.feed(event)
        self.events += delivered
        return delivered

    def pipeline(self) -> Pipeline:
        """A new pipeline for one stream, applying to this conversation."""
        return Pipeline(self.reducer)

    def consume(self, items: Iterable[Any]) -> RunResult | None:
        """Process one recorded stream (JSON text or bytes, parsed objects or models, one event
        per item) through the whole pipeline. Returns the last run's result.

        A client-side rejection (ProtocolError, DecodeError, ...) is recorded in `failures`, the
        open run becomes truncated, and the error is raised."""
        pipeline = self.pipeline()
        with self._stream(pipeline):
            for item in items:
                pipeline.feed(item)
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
        Returns the last run's result; raises as `consume` does, and on transport errors."""
        if input is None:
            input = self.next_input(
                message,
                tools=tools,
                context=context,
                forwarded_props=forwarded_props,
                resume=resume,
            )
        pipeline = self.pipeline()
        with self._stream(pipeline):
            # An HttpAgent can hand over undecoded frames: the pipeline's own tolerant decoding
            # then reports what it strips, as warnings of this stream.
            frames = getattr(agent, "frames", None)
            stream = frames(input) if callable(frames) else agent(input)
            try:
                async for item in stream:
                    pipeline.feed(item)
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            pipeline.finish()
        return self.runs[-1] if self.runs else None

    @contextmanager
    def _stream(self, pipeline: Pipeline) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            reason = describe(exc)
            pipeline.abort(reason)
            self.failures.append(reason)
            raise
        finally:
            self.events += pipeline.delivered

    # ── summary ──────────────────────────────────────────────────────────────────────────────

    def summary(self) -> dict[str, Any]:
        """Everything this conversation saw, as one JSON object.

        outcome is "completed" when no stream was rejected and every run ended with RUN_FINISHED
        (success, interrupt or cancelled); "failed" otherwise: a client-side rejection, a
        truncated stream, a producer RUN_ERROR, or no run at all. error says why (the rejection
        first, else the first run that did not complete), null when completed.
        """
        error: str | None = None
        if self.failures:
            error = self.failures[-1]
        elif not self.runs:
            error = "No run was reported."
        else:
            failed = next((r for r in self.runs if not r.completed), None)
            if failed is not None:
                error = failed.error_message or failed.outcome
        return {
            "outcome": "completed" if error is None else "failed",
            "error": error,
            "events": [to_json(e) for e in self.events],
            "eventTypes": [str(e.type) for e in self.events],
            "messages": self.messages,
            "state": self.state,
            "warnings": [warning_json(w) for w in self.warnings],
            "pendingInterrupts": [to_json(i) for i in self.pending_interrupts],
        }
