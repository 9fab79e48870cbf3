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

`stream()` runs as `run()` does and hands over each event as it is applied (`RunUpdate`: the event
and the conversation as of that event), then the run's result; closing it stops the run.

`set_state(state)` replaces the state the next run sends (as the TypeScript client's
`setState`). The new message joins the history, and the input's state becomes the conversation's
(an input given to `run` with a state of its own included), when the run's stream starts: when
its first frame arrives, before that frame is applied. What a run that does not end leaves behind: a run the client did
not see end (its stream cut, rejected or stopped: a run recorded as truncated), and a stream that
failed before its run started, are rolled back: the messages, the state and the pending
interrupts are as they were before the run, the new message included, so the same call can be
retried as it is. `Conversation(keep_partial=True)` keeps what such a run applied instead. A run
that ended (RUN_FINISHED, or the agent's own RUN_ERROR) keeps what it produced. Either way the
run is recorded in `runs` (as truncated, with the reason) and a rejection in `failures`.

One stream at a time: a run, stream, follow, consume or connect started while another is being
applied raises ConversationBusyError (two streams would interleave one thread's history).

`to_json()` / `from_json()` save and restore a conversation: its thread, messages, state,
pending interrupts and the answers recorded for them.

`connect(agent)` hydrates a conversation from its thread as a server with a store keeps it (an
HttpAgent: the thread's history, then its live run until that ends): its messages, state and
pending interrupts, as if it had run those runs itself.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
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
from contextlib import aclosing, contextmanager
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs
import orjson
from agui_generated import (
    PROTOCOL_VERSION,
    ActivityMessage,
    Context,
    Event,
    Interrupt,
    Message,
    ResumeEntry,
    ResumeStatus,
    RunAgentInput,
    Tool,
    UnknownEvent,
    UserMessage,
)

from agui.agent.protocol import Agent, FrameSource, History, SyncThreadSource, ThreadSource
from agui.errors import (
    ConversationBusyError,
    ExpiredInterruptError,
    InterruptError,
    PendingInterruptsError,
    ProtocolError,
)
from agui.stream.lifecycle import run_lifecycle
from agui.stream.patch import DEFAULT_MAX_STATE_NODES
from agui.stream.pipeline import Pipeline, StrictSource, describe
from agui.stream.reducer import TRUNCATED, Checkpoint, Reducer, RunResult
from agui.stream.warning import StreamWarning, warning_json
from agui.wire.codec import decode_json, encode, to_json

__all__ = [
    "NO_RUN",
    "STOPPED",
    "Conversation",
    "ConversationBusyError",
    "OnEvent",
    "OnFrame",
    "RunStream",
    "RunUpdate",
    "SyncFrameSource",
    "expires",
]

_DEFAULT_STATE: Any = object()

STOPPED = "The run was stopped by the client (cancelled) before its terminal event."
"""Why a run is recorded as truncated when its consumer stopped it: the task running
`Conversation.run` was cancelled, Ctrl-C, or the stream's iteration was closed."""

NO_RUN = "The stream reported no run: none of its events was a RUN_STARTED or a RUN_ERROR."
"""Why a stream whose events were all dropped (unknown types) is rejected: there is no run result
to return."""

OnEvent: TypeAlias = Callable[[Event], object]
"""`on_event`: called with each event as it is applied. It may be an async function: the async
methods (run, stream, follow, connect) await what it returns before the next event; the sync ones
(run_sync, consume, connect_sync) refuse it with TypeError."""

OnFrame: TypeAlias = Callable[[bytes], object]
"""`on_frame`: called with each frame as it is received, before it is processed, as the JSON text
of one event on one line (a tee, to record a stream for `agui replay`)."""


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


def _is_async(function: object) -> bool:
    """Whether calling `function` gives an awaitable by its definition (an async function, or an
    object whose __call__ is one)."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004 - a callable object's method
    )


def _frame_bytes(item: Any) -> bytes:
    """A received item as the JSON text of one event, on one line (what on_frame gets)."""
    if isinstance(item, bytes):
        data = item
    elif isinstance(item, bytearray | memoryview):
        data = bytes(item)
    elif isinstance(item, str):
        data = item.encode()
    elif isinstance(item, dict):
        return orjson.dumps(item)
    elif isinstance(item, UnknownEvent):
        return orjson.dumps(item.raw)
    else:
        return encode(item)
    if b"\n" in data or b"\r" in data:  # JSON's line ends are whitespace: keep it one line
        data = data.replace(b"\r", b" ").replace(b"\n", b" ")
    return data


Outcome: TypeAlias = Literal["completed", "interrupt", "error", "failed"]
"""How a conversation's streams went, as `summary()` and the command line report it."""


@attrs.frozen(kw_only=True)
class RunUpdate:
    """One item of `Conversation.stream`: an event just applied (`event`), or, last, the run's
    result (`result`, with `event` None).

    `messages` and `state` read the conversation as it stands: right after this item's event as
    long as the next item has not been asked for (the conversation moves on with the stream; an
    update kept for later shows the conversation of later)."""

    conversation: Conversation = attrs.field(repr=False)
    event: Event | None = None
    """The event just applied (decoded, chunks expanded, verified); None on the last item."""
    result: RunResult | None = None
    """The run's result, on the last item only (what `run` returns)."""

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation's messages now (`Conversation.messages`)."""
        return self.conversation.messages

    @property
    def state(self) -> Any:
        """The conversation's state now (a copy, as `Conversation.state`)."""
        return self.conversation.state

    @property
    def done(self) -> bool:
        """True on the last item, the one carrying the result."""
        return self.result is not None


class RunStream(AsyncIterator[RunUpdate]):
    """What `Conversation.stream` returns: an async iterator of RunUpdate, and an async context
    manager that closes it on the way out, as httpx's `client.stream(...)`:

        async with conversation.stream(agent, "Hi") as updates:
            async for update in updates:
                ...

    `input` is the RunAgentInput it runs (its `run_id` names the run, to stop it say); `result`
    is the run's result once the last item was handed over (None before). `aclose()` (or leaving
    the `async with`) stops the run: the source is closed, the open run recorded as truncated
    (STOPPED) and rolled back unless keep_partial, and an HttpAgent stops it on a server with a
    store too, unless it detaches. A stream neither exhausted nor closed holds the conversation
    (ConversationBusyError for the next run) until it is garbage-collected."""

    def __init__(self, input: RunAgentInput, updates: AsyncGenerator[RunUpdate]) -> None:
        self.input = input
        self.result: RunResult | None = None
        self._updates = updates

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> RunUpdate:
        update = await self._updates.__anext__()
        if update.result is not None:
            self.result = update.result
        return update

    async def aclose(self) -> None:
        """Stop the run, if it is still going (nothing happens once it ended)."""
        await self._updates.aclose()

    async def __aenter__(self) -> RunStream:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Attempt:
    """One stream applied to a conversation, and what a failure rolls back to: the conversation
    before the stream, or as the stream's last finished run left it."""

    def __init__(self, reducer: Reducer, keep_partial: bool) -> None:
        self.reducer = reducer
        self.runs = len(reducer.runs)
        self.started = self.runs
        self.saved: Checkpoint | None = None if keep_partial else reducer.checkpoint()

    def _ended(self) -> bool:
        """Whether a run ended (not truncated) since the checkpoint."""
        runs = self.reducer.runs
        return len(runs) > self.runs and runs[-1].outcome != "truncated"

    def item(self) -> None:
        """Before each item: after a run ended, that is the point to roll back to."""
        if self.saved is not None and len(self.reducer.runs) != self.runs and self._ended():
            self.saved = self.reducer.checkpoint()
            self.runs = len(self.reducer.runs)

    def open(self) -> bool:
        """Whether what was applied since the checkpoint is the part of a run that did not end
        (no ended run covers it)."""
        return not self._ended()

    def roll_back(self, was_open: bool) -> None:
        if self.saved is not None and was_open:
            self.reducer.restore(self.saved)

    def result(self) -> RunResult:
        """The stream's last run; ProtocolError NO_RUN when it recorded none."""
        if len(self.reducer.runs) == self.started:
            raise ProtocolError(NO_RUN)
        return self.reducer.runs[-1]


class Conversation:
    """One thread across runs: its messages, state, pending interrupts and run results.

    thread_id: the thread (default: a new UUID). messages / state / pending_interrupts: where the
    thread starts (state defaults to {}; the pending interrupts are what its last run waits for,
    as `from_json` restores them). clock: returns the current time, for interrupt expiry
    (default: now, UTC). keep_events: keep every delivered event in `events` (off by default, so
    a long-lived conversation holds its messages and state, not its history of events).
    keep_partial: keep what a run that did not end applied (see the module docstring; default:
    roll it back). on_event: called with each event as it is applied (decoded, chunks expanded,
    verified; before a rejection, the events up to it), to watch runs live; an async function is
    awaited by the async methods (see OnEvent); an exception it raises stops the run like a
    rejection. on_frame: called with each frame as received, before it is processed (see OnFrame).
    max_state_nodes: the most nodes a STATE_DELTA or ACTIVITY_DELTA may take the state or an
    activity's content to (default 500,000; None: no limit): a patch past it is refused before it
    builds anything and the run fails (ProtocolError naming the operation; agui.stream.patch).
    """

    def __init__(
        self,
        thread_id: str | None = None,
        *,
        messages: Iterable[Message | Mapping[str, Any]] = (),
        state: Any = _DEFAULT_STATE,
        pending_interrupts: Iterable[Interrupt] = (),
        clock: Callable[[], datetime] | None = None,
        keep_events: bool = False,
        keep_partial: bool = False,
        on_event: OnEvent | None = None,
        on_frame: OnFrame | None = None,
        max_state_nodes: int | None = DEFAULT_MAX_STATE_NODES,
    ) -> None:
        self.thread_id = thread_id or str(uuid.uuid4())
        self.reducer = (
            Reducer(messages, max_state_nodes=max_state_nodes)
            if state is _DEFAULT_STATE
            else Reducer(messages, state=state, max_state_nodes=max_state_nodes)
        )
        self.reducer.pending_interrupts = tuple(pending_interrupts)
        self.keep_events = keep_events
        self.keep_partial = keep_partial
        """Keep what a run that did not end applied, instead of rolling it back."""
        self.events: list[Any] = []
        """With keep_events: every event delivered (after chunk expansion and verification), in
        order. Empty otherwise."""
        self.on_event = on_event
        self.on_frame = on_frame
        self.failures: list[str] = []
        """Client-side rejections: the stream broke a rule, or the transport failed."""
        self.clock = clock or (lambda: datetime.now(UTC))
        self._answers: dict[str, ResumeEntry] = {}
        self._answers_for = self.reducer.interrupt_generation
        self._applying: str | None = None  # the method applying a stream now, if any

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

    def set_state(self, state: Any) -> None:
        """Replace the state (any JSON value, copied): what the next run sends (`next_input`),
        and what `state` reads until a run changes it. Refused while a stream is being applied
        (ConversationBusyError): that run's events apply to the state it sent."""
        self._refuse_if_busy("set_state")
        self.reducer.set_state(state)

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

    # ── saving and restoring ─────────────────────────────────────────────────────────────────

    def to_json(self) -> dict[str, Any]:
        """The thread as one JSON object, to save and give back to `from_json`: "threadId",
        "messages" and "state" (wire form), "pendingInterrupts" (what the last run waits for)
        and "answers" (the ResumeEntry objects recorded for them with resolve or cancel, not yet
        sent). The runs, warnings, failures and events are not part of it."""
        answers = self._fresh_answers()
        return {
            "threadId": self.thread_id,
            "messages": self.messages_json(),
            "state": self.state,
            "pendingInterrupts": [to_json(i) for i in self.pending_interrupts],
            "answers": [to_json(answers[i.id]) for i in self.pending_interrupts if i.id in answers],
        }

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Any] | bytes | str,
        *,
        clock: Callable[[], datetime] | None = None,
        keep_events: bool = False,
        keep_partial: bool = False,
        on_event: OnEvent | None = None,
        on_frame: OnFrame | None = None,
        max_state_nodes: int | None = DEFAULT_MAX_STATE_NODES,
    ) -> Conversation:
        """A conversation restored from `to_json()`'s object (or its JSON text): the same thread,
        messages, state, pending interrupts and recorded answers, so the next run continues the
        thread and answers what it waits for. The messages, interrupts and answers are decoded
        strictly (agui.DecodeError names what is wrong); a missing "state" is {}, a missing list
        empty. The other arguments are the constructor's."""
        value: Any = orjson.loads(data) if isinstance(data, bytes | str) else data
        if not isinstance(value, Mapping) or not isinstance(value.get("threadId"), str):
            raise TypeError(
                "Conversation.from_json takes the object Conversation.to_json() gives, with a "
                '"threadId" string'
            )
        messages = [decode_json(m, Message, strict=True) for m in value.get("messages") or ()]
        pending = [
            decode_json(i, Interrupt, strict=True) for i in value.get("pendingInterrupts") or ()
        ]
        answers = [decode_json(a, ResumeEntry, strict=True) for a in value.get("answers") or ()]
        conversation = cls(
            value["threadId"],
            messages=messages,
            state=copy.deepcopy(value.get("state", {})),
            pending_interrupts=pending,
            clock=clock,
            keep_events=keep_events,
            keep_partial=keep_partial,
            on_event=on_event,
            on_frame=on_frame,
            max_state_nodes=max_state_nodes,
        )
        held = {i.id for i in pending}
        for entry in answers:
            if entry.interrupt_id in held:
                conversation._record(entry)
        return conversation

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
        (`run`, `run_sync`, `stream`, or `consume(..., input=)`: when the first frame arrives).

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
        """An event was applied, in code without an event loop: keep it, tell on_event (an
        awaitable it returns cannot be awaited here: TypeError)."""
        if self.keep_events:
            self.events.append(event)
        if self.on_event is not None:
            answer = self.on_event(event)
            if answer is not None and inspect.isawaitable(answer):
                if inspect.iscoroutine(answer):
                    answer.close()  # never started: no "never awaited" warning
                raise TypeError(
                    "on_event returned an awaitable, which the synchronous methods cannot await: "
                    "use the async ones (await conversation.run(...)), or a plain function"
                )

    def _refuse_async_on_event(self, method: str) -> None:
        if self.on_event is not None and _is_async(self.on_event):
            raise TypeError(
                f"Conversation.{method} cannot await on_event, an async function: await "
                "conversation.run(...) (or stream, follow, connect) instead, or pass a plain "
                "function"
            )

    def _refuse_if_busy(self, method: str) -> None:
        if self._applying is not None:
            raise ConversationBusyError(
                f"Conversation.{method}: this conversation (thread {self.thread_id}) is already "
                f"applying a stream ({self._applying}); one thread's runs go one after another: "
                "await the first (close a stream() left open), or use another Conversation."
            )

    @contextmanager
    def _only(self, method: str) -> Iterator[None]:
        """While `method` applies a stream: refuse another (ConversationBusyError)."""
        self._refuse_if_busy(method)
        self._applying = f"Conversation.{method}"
        try:
            yield
        finally:
            self._applying = None

    def consume(self, items: Iterable[Any], *, input: RunAgentInput | None = None) -> RunResult:
        """Process one recorded stream (JSON text or bytes, parsed objects or models, one event
        per item) through the whole pipeline. Returns the last run's result. `input`: the input
        the stream answers (from `next_input`); its messages join the history when the first
        item arrives, as in `run`.

        A client-side rejection (StreamError, ProtocolError among them) is recorded in
        `failures`, the open run becomes truncated (and is rolled back unless keep_partial), and
        the error is raised; so is ProtocolError NO_RUN for a stream that held no run."""
        self._refuse_async_on_event("consume")
        with self._only("consume"):
            return self._apply_sync(lambda: items, input, strict=False)

    async def follow(
        self,
        items: AsyncIterable[Any],
        *,
        input: RunAgentInput | None = None,
        strict: bool = False,
    ) -> RunResult:
        """`consume`, for a source read asynchronously: process one stream through the whole
        pipeline as its items arrive (`HttpAgent.rejoin_frames(run_id)`, say: a run's stream read
        again from its start). `input`: as in `consume`; `strict`: decode exactly the contract.
        Closes the source when it stops early. Returns the last run's result; raises as
        `consume` does."""
        with self._only("follow"):
            return await self._apply(items, input, strict)

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
    ) -> RunResult:
        """Run `agent` on the next input (or on `input`, sent as given) and apply its stream.
        Returns the run's result; raises as `consume` does, and on transport errors. The
        input's messages join the history when the first frame arrives.

        A local agent runs inside the same run lifecycle AgentApp gives it (RUN_STARTED and the
        terminal event added when missing, an exception turned into RUN_ERROR), so it yields the
        same messages here as behind a server. A FrameSource (HttpAgent) hands over its frames
        undecoded, and the pipeline's own decoding reports what it strips, strictly when the
        agent is a StrictSource that says so (`HttpAgent(url, strict=True)`).

        Cancelling the task that awaits it closes the stream (and so the connection) and records
        the open run as truncated (STOPPED), rolled back unless keep_partial; the conversation is
        ready for the next run. An HttpAgent then stops the run on a server with a store too,
        unless it detaches (`HttpAgent(url, detach=True)`)."""
        with self._only("run"):
            return await self._run(agent, message, tools, context, forwarded_props, resume, input)

    async def _run(
        self,
        agent: Agent,
        message: str | Message | None,
        tools: Iterable[Tool],
        context: Iterable[Context],
        forwarded_props: Any,
        resume: Iterable[ResumeEntry] | None,
        input: RunAgentInput | None,
    ) -> RunResult:
        if input is None:
            input = self.next_input(
                message,
                tools=tools,
                context=context,
                forwarded_props=forwarded_props,
                resume=resume,
            )
        batches = _batches(agent, input)
        if batches is not None:
            return await self._apply(batches, input, _strict(agent), batched=True)
        return await self._apply(
            _source(agent, input, self.reducer.max_state_nodes), input, _strict(agent)
        )

    def stream(
        self,
        agent: Agent,
        message: str | Message | None = None,
        *,
        tools: Iterable[Tool] = (),
        context: Iterable[Context] = (),
        forwarded_props: Any = None,
        resume: Iterable[ResumeEntry] | None = None,
        input: RunAgentInput | None = None,
    ) -> RunStream:
        """`run`, handing over each event as it is applied: a RunStream of RunUpdate items, one
        per delivered event (`.event`, and `.messages` / `.state`: the conversation as of that
        event), then one carrying the run's result (`.result`, the RunResult `run` returns).

            async with conversation.stream(agent, "Hi") as updates:
                async for update in updates:
                    if update.event is not None:
                        show(update.messages)

        The input is built now (PendingInterruptsError and the like are raised here; the
        stream's `input` is it); the run starts with the first item asked for. Closing the
        stream early (`aclose()`, leaving the `async with`, cancelling the task) stops the run
        as cancelling `run` does. A rejection or a transport error is raised from the iteration,
        after the events before it, as `run` raises it."""
        self._refuse_if_busy("stream")
        if input is None:
            input = self.next_input(
                message,
                tools=tools,
                context=context,
                forwarded_props=forwarded_props,
                resume=resume,
            )
        return RunStream(input, self._updates(agent, input))

    async def _updates(self, agent: Agent, input: RunAgentInput) -> AsyncGenerator[RunUpdate]:
        with self._only("stream"):
            attempt = _Attempt(self.reducer, self.keep_partial)
            events = self._events(
                _source(agent, input, self.reducer.max_state_nodes), input, _strict(agent), attempt
            )
            async with aclosing(events):
                async for event in events:
                    yield RunUpdate(conversation=self, event=event)
            result = self.runs[-1]
        yield RunUpdate(conversation=self, result=result)

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
    ) -> RunResult:
        """`run`, for code without an event loop. A SyncFrameSource (HttpAgent) is read with
        `frames_sync`, with no event loop at all; any other agent runs in a new one
        (`asyncio.run`), which is refused inside a running loop (await `run` there). An async
        on_event is refused (TypeError): await `run` instead."""
        self._refuse_async_on_event("run_sync")
        with self._only("run_sync"):
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
                    self._run(agent, message, tools, context, forwarded_props, resume, input)
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
            return self._apply_sync(lambda: agent.frames_sync(started), started, _strict(agent))

    async def connect(self, agent: ThreadSource, *, history: History = "compact") -> RunResult:
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
        with self._only("connect"):
            frames = agent.connect_frames(self.thread_id, history=history)
            return await self._apply(frames, None, _strict(agent))

    def connect_sync(self, agent: SyncThreadSource, *, history: History = "compact") -> RunResult:
        """`connect`, for code without an event loop (HttpAgent.connect_frames_sync)."""
        if not isinstance(agent, SyncThreadSource):
            raise TypeError(
                f"{type(agent).__name__} cannot connect to a thread: it has no "
                "connect_frames_sync (agui.HttpAgent has, against a server with a store)"
            )
        self._refuse_async_on_event("connect_sync")
        with self._only("connect_sync"):
            thread_id = self.thread_id
            return self._apply_sync(
                lambda: agent.connect_frames_sync(thread_id, history=history), None, _strict(agent)
            )

    # ── applying one stream ──────────────────────────────────────────────────────────────────

    async def _apply(
        self,
        items: AsyncIterable[Any],
        input: RunAgentInput | None,
        strict: bool,
        *,
        batched: bool = False,
    ) -> RunResult:
        """Apply one stream read asynchronously; its last run's result. (`_events` without an
        async generator of its own between the source and the pipeline: one less step per
        event; `batched`: the source yields lists of items, one async step per list.)"""
        attempt = _Attempt(self.reducer, self.keep_partial)
        pipeline = Pipeline(self.reducer, strict=strict)
        steps = pipeline.steps
        kept = self.events if self.keep_events else None
        on_event, on_frame = self.on_event, self.on_frame  # as they are when the stream starts
        with self._stream(pipeline, attempt):
            try:
                first = True
                runs = self.reducer.runs
                async for got in items:
                    for item in got if batched else (got,):
                        if len(runs) != attempt.runs:  # a run ended (attempt.item's own test)
                            attempt.item()
                        if first:
                            first = False
                            if input is not None:
                                self._join(input)
                        if on_frame is not None:
                            on_frame(_frame_bytes(item))
                        for event in steps(item):
                            if kept is not None:
                                kept.append(event)
                            if on_event is not None:
                                answer = on_event(event)
                                if answer is not None and inspect.isawaitable(answer):
                                    await answer
            finally:
                if isinstance(items, AsyncGenerator):
                    await items.aclose()
            for event in pipeline.finish():  # what the stages add at the end (by default none)
                self._applied(event)
            attempt.result()
        return self.runs[-1]

    async def _events(
        self,
        items: AsyncIterable[Any],
        input: RunAgentInput | None,
        strict: bool,
        attempt: _Attempt,
    ) -> AsyncGenerator[Any]:
        """Apply one stream read asynchronously, yielding each event right after it is applied
        (and on_event told, its awaitable awaited). Closes the source when it stops early."""
        pipeline = Pipeline(self.reducer, strict=strict)
        steps = pipeline.steps
        kept = self.events if self.keep_events else None
        on_event, on_frame = self.on_event, self.on_frame  # as they are when the stream starts
        with self._stream(pipeline, attempt):
            try:
                first = True
                async for item in items:
                    attempt.item()
                    if first:
                        first = False
                        if input is not None:
                            self._join(input)
                    if on_frame is not None:
                        on_frame(_frame_bytes(item))
                    for event in steps(item):
                        if kept is not None:
                            kept.append(event)
                        if on_event is not None:
                            answer = on_event(event)
                            if answer is not None and inspect.isawaitable(answer):
                                await answer
                        yield event
            finally:
                if isinstance(items, AsyncGenerator):
                    await items.aclose()
            for event in pipeline.finish():  # what the stages add at the end (by default none)
                self._applied(event)
                yield event
            attempt.result()

    def _apply_sync(
        self, source: Callable[[], Iterable[Any]], input: RunAgentInput | None, strict: bool
    ) -> RunResult:
        """Apply one stream without an event loop, from the source `source()` makes inside the
        stream (so a failure to open it is recorded as the stream's); closes the source when it
        stops early. Its last run's result."""
        pipeline = Pipeline(self.reducer, strict=strict)
        attempt = _Attempt(self.reducer, self.keep_partial)
        steps, applied, on_frame = pipeline.steps, self._applied, self.on_frame
        with self._stream(pipeline, attempt):
            frames = source()
            try:
                first = True
                for item in frames:
                    attempt.item()
                    if first:
                        first = False
                        if input is not None:
                            self._join(input)
                    if on_frame is not None:
                        on_frame(_frame_bytes(item))
                    for event in steps(item):
                        applied(event)
            finally:
                if isinstance(frames, Generator):
                    frames.close()
            for event in pipeline.finish():
                self._applied(event)
            return attempt.result()

    def _join(self, input: RunAgentInput) -> None:
        """The run of `input` started: its messages join the history (those not held yet), and
        its state, when it has one, is the conversation's (an input given to `run` may carry
        another than `next_input` put in; the next run must send that one, not the older). An
        input without a state leaves the conversation's as it is ({} until a run changes it),
        as the official client's state is {} whatever the input."""
        self.reducer.add_messages(input.messages)
        if input.state is not None:
            self.reducer.set_state(input.state)

    @contextmanager
    def _stream(self, pipeline: Pipeline, attempt: _Attempt) -> Iterator[None]:
        """One stream: a failure records the open run as truncated and rolls back what no
        finished run covers (unless keep_partial); a rejection is recorded in `failures`."""
        try:
            yield
        except Exception as exc:
            reason = describe(exc)
            was_open = attempt.open()
            pipeline.abort(reason)
            attempt.roll_back(was_open)
            self.failures.append(reason)
            raise
        except BaseException:  # cancelled, interrupted or closed from outside: not a rejection
            was_open = attempt.open()
            pipeline.abort(STOPPED)
            attempt.roll_back(was_open)
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


def _batches(agent: Agent, input: RunAgentInput) -> AsyncIterator[list[Any]] | None:
    """The frames of a run of `agent` a list per network chunk, when it offers them so (an
    HttpAgent whose `frames` is its own); else None."""
    batches = getattr(agent, "_frame_batches", None)
    if batches is None or not isinstance(agent, FrameSource):
        return None
    got: AsyncIterator[list[Any]] | None = batches(input)
    return got


def _source(agent: Agent, input: RunAgentInput, max_state_nodes: int | None) -> AsyncIterator[Any]:
    """What a run of `agent` reads: a FrameSource's frames, else the local agent inside the run
    lifecycle (refusing the deltas the conversation would refuse)."""
    if isinstance(agent, FrameSource):
        return agent.frames(input)
    return run_lifecycle(agent, input, max_state_nodes=max_state_nodes)
