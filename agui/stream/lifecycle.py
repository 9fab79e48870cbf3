"""The run lifecycle: one wrapper that makes any agent's stream a run no client rejects.

`run_lifecycle(agent, input)` iterates the agent and yields its events with:

* RUN_STARTED first: inserted (threadId, runId and protocolVersion from the input) when the agent
  does not send one, and given protocolVersion when the agent's own lacks it. A second
  RUN_STARTED is dropped (and logged).
* Exactly one terminal event last: RUN_FINISHED added when the agent just returns; an agent that
  raises ends in RUN_ERROR `AGENT_ERROR` (logged with its traceback; the exception text never
  reaches the client). A RUN_FINISHED naming another threadId or runId than the run's RUN_STARTED
  is given the run's ids (logged).
* Before a RUN_FINISHED (the agent's own or the one added), whatever is still open is closed, as
  the clients require: TEXT_MESSAGE_END, TOOL_CALL_END, REASONING_MESSAGE_END, REASONING_END,
  STEP_FINISHED, and SUBAGENT_ERROR for a subagent that never finished, each attributed to
  whoever opened it. A RUN_ERROR needs nothing closed (neither client requires it), and nothing
  is: an END would present a cut message as complete.
* Every event is checked as a client checks it (`agui.stream.verify.Verifier`, after chunk
  expansion, as the TypeScript client does): an event a client would reject, or an item that is
  not an event model, is not sent; the run ends in RUN_ERROR `INVALID_EVENT` saying which rule
  it broke, and the agent is closed. So is a STATE_DELTA that does not apply to the state the
  client holds by then (the input's state, then the snapshots and deltas sent): clients would log
  it and keep the old state, going on out of step with the agent. So is a STATE_DELTA that would
  take the state past `max_state_nodes` nodes (agui.stream.patch), refused before it builds
  anything, as the client's Reducer refuses it.
* The agent is handed a copy of the input that shares nothing with it (`agents_copy`): what it
  changes in place never reaches the run's RUN_STARTED or the stored run.
* After the terminal event nothing more: what the agent still yields is dropped and logged, while
  the agent is left to finish its work (saving, say) for up to `finish_grace` seconds; then it is
  cancelled. A consumer that stops iterating at the terminal event cuts that work short.

AgentApp serves every agent through it, and `Conversation.run` runs a local agent through it, so
a local agent and the same agent behind a server give the same events.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Container, Mapping
from typing import Any, get_args

import attrs
from agui_generated import (
    PROTOCOL_VERSION,
    Event,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    UnknownEvent,
)

from agui.agent.protocol import Agent
from agui.errors import ProtocolError
from agui.observe.runlog import about_run
from agui.stream.chunks import ChunkExpander
from agui.stream.patch import DEFAULT_MAX_STATE_NODES, PatchLimitError, apply_patch
from agui.stream.verify import Verifier
from agui.wire.codec import decode, encode, to_json

__all__ = [
    "AGENT_ERROR",
    "AGENT_FAILED",
    "DEFAULT_FINISH_GRACE",
    "INVALID_EVENT",
    "RunTracker",
    "check_agent",
    "run_error",
    "run_lifecycle",
    "run_started",
]

log = logging.getLogger("agui.agent")

AGENT_ERROR = "AGENT_ERROR"
"""The RUN_ERROR code of a run whose agent raised."""
AGENT_FAILED = "The agent failed while running."
"""The RUN_ERROR message a client gets for a failure whose own text stays in the log."""
INVALID_EVENT = "INVALID_EVENT"
"""The RUN_ERROR code of a run whose agent produced something that cannot be sent."""
DEFAULT_FINISH_GRACE = 10.0
"""Seconds an agent may go on working after its terminal event before it is cancelled."""

_EVENT_TYPES: frozenset[type] = frozenset((*get_args(Event), UnknownEvent))
_CHUNKS: frozenset[type] = frozenset(
    (TextMessageChunkEvent, ToolCallChunkEvent, ReasoningMessageChunkEvent)
)
_AGENT = (
    "an agent is called with a RunAgentInput and returns an async iterator of events: an async "
    "generator function (`async def agent(input): ... yield event`), or an object whose "
    "__call__ is one"
)


def run_started(run_input: RunAgentInput) -> RunStartedEvent:
    """The RUN_STARTED inserted for an agent that sends none."""
    return RunStartedEvent(
        thread_id=run_input.thread_id, run_id=run_input.run_id, protocol_version=PROTOCOL_VERSION
    )


def run_error(message: str, code: str) -> RunErrorEvent:
    """A RUN_ERROR with a message for the client (never an exception's text) and a code."""
    return RunErrorEvent(message=message, code=code)


def check_agent(agent: object) -> None:
    """Raise TypeError when `agent` cannot be an agent, so that the mistake shows where the agent
    is handed over (AgentApp, `agui serve`) rather than in every run.

    Refused: something not callable, a callable that cannot take the input as its one argument,
    a (sync) generator function, and an `async def` without `yield` (a coroutine function: its
    call returns a coroutine, not an async iterator). What the call returns is only known when
    it runs; the run lifecycle ends a run whose agent returns something else in RUN_ERROR."""
    if not callable(agent):
        raise TypeError(f"{agent!r} is not callable; {_AGENT}")
    call: Any = agent
    plain = inspect.isfunction(agent) or inspect.ismethod(agent)
    if not (plain or isinstance(agent, functools.partial | type)):
        call = call.__call__  # an instance: its (bound) __call__ says what a call returns
    name = getattr(agent, "__qualname__", None) or type(agent).__qualname__
    if inspect.isasyncgenfunction(call):
        pass
    elif inspect.isgeneratorfunction(call):
        raise TypeError(f"{name} is a generator function, not an async one; {_AGENT}")
    elif inspect.iscoroutinefunction(call):
        raise TypeError(
            f"{name} is an async function without yield: its call returns a coroutine, not an "
            f"async iterator; {_AGENT}"
        )
    try:
        signature = inspect.signature(agent)
    except (TypeError, ValueError):  # no signature to read (a builtin): nothing more to say
        return
    try:
        signature.bind(None)
    except TypeError:
        raise TypeError(
            f"{name}{signature} cannot be called with the run's input alone; {_AGENT}"
        ) from None


class RunTracker(Verifier):
    """What a client makes of a run so far: chunk expansion (once a chunk appears) and the
    Verifier, fed every event the lifecycle sends (content of open streams excepted: it opens and
    closes nothing). A producer that ends a run itself (a stop, a shutdown) passes one to
    `run_lifecycle` and asks it what to close (`finishing`)."""

    def __init__(
        self, state: Any = None, *, max_state_nodes: int | None = DEFAULT_MAX_STATE_NODES
    ) -> None:
        super().__init__()
        self.max_state_nodes = max_state_nodes
        """The most nodes a STATE_DELTA may take the state to, as the client's Reducer checks it
        (agui.stream.patch; None: no limit): past it the delta is refused."""
        self.expander: ChunkExpander | None = None
        self.started: RunStartedEvent | None = None
        """The run's RUN_STARTED, once sent."""
        self.state: Any = state
        """The state the client holds by now: the input's, then the snapshots and deltas sent.
        Shared with the input or the last snapshot until a delta applies (`_owned`)."""
        self._owned = False
        self._nodes: int | None = None  # the owned state's node count, once a delta counted it
        self.open_text: Container[str] = self._messages
        """The text messages open (read-only: the Verifier's own record)."""

    def start(self, started: RunStartedEvent) -> None:
        """The run's RUN_STARTED is sent: check what follows against it (and against its own
        protocol version: the client's version check is not the producer's business)."""
        self.started = started
        self.protocol_version = started.protocol_version or PROTOCOL_VERSION
        self.feed(started)

    def admit(self, event: Any) -> None:
        """Take one event a client will receive; raises ProtocolError when it would reject it,
        or when it is a STATE_DELTA that does not apply to the state the client holds (the
        clients then keep the old state with a warning: the run would go on out of step)."""
        kind = type(event)
        if kind is StateDeltaEvent:
            self._apply(event)
        elif kind is StateSnapshotEvent:
            self.state, self._owned, self._nodes = event.snapshot, False, None
        if self.expander is None:
            if type(event) not in _CHUNKS:
                self.feed(event)
                return
            self.expander = ChunkExpander()  # with no stream pending it is a pass-through
        for expanded in self.expander.feed(event):
            self.feed(expanded)

    def _apply(self, event: StateDeltaEvent) -> None:
        nodes, self._nodes = self._nodes, None  # unknown again if the patch fails half-way
        try:
            patched = apply_patch(
                self.state,
                [to_json(op) for op in event.delta],
                max_nodes=self.max_state_nodes,
                nodes=nodes,
                in_place=self._owned,  # else a private copy, patched in place from now on
                pointer="/delta",
            )
        except PatchLimitError as exc:
            raise ProtocolError(f"STATE_DELTA {exc}") from None
        # The reducer's list (jsonpatch's and jsonpointer's errors are ValueErrors; a patch into
        # a scalar, say, a TypeError): what the client would not apply is refused here.
        except (TypeError, ValueError, LookupError, AttributeError) as exc:
            raise ProtocolError(
                f"STATE_DELTA does not apply to the state the client holds: {exc}"
            ) from None
        self.state, self._nodes, self._owned = patched.document, patched.nodes, True

    def finishing(self, finished: RunFinishedEvent) -> list[Any]:
        """The events that close what is open, to send before `finished`, already checked; then
        `finished` itself is checked (raises ProtocolError if a client would still reject it)."""
        if self.expander is not None:
            # The client ends pending chunk streams itself at RUN_FINISHED (no END to send).
            for expanded in self.expander.feed(finished)[:-1]:
                self.feed(expanded)
            self.expander = None
        closing = self.closing_events()
        for event in closing:
            self.feed(event)
        self.feed(finished)
        return closing


_QUICK: frozenset[type] = frozenset(
    (TextMessageContentEvent, ToolCallArgsEvent, ReasoningMessageContentEvent)
)


def _describe(item: Any) -> str:
    return str(getattr(item, "type", type(item).__name__))


def _closed(events: list[Any]) -> str:
    """The closing events as a list for the log: `TEXT_MESSAGE_END m1, STEP_FINISHED plan`."""
    named = []
    for event in events:
        ident = next(
            getattr(event, field)
            for field in ("message_id", "tool_call_id", "step_name", "subagent_run_id")
            if getattr(event, field, None) is not None
        )
        named.append(f"{_describe(event)} {ident}")
    return ", ".join(named)


def agents_copy(run_input: RunAgentInput) -> RunAgentInput:
    """A copy of the input that shares no value with it. The models are frozen, but the JSON
    values in them (state, forwardedProps, tool schemas, ...) are plain dicts and lists, and agents
    change them in place (ag-ui-langgraph rewrites state["messages"] with its own objects): what
    the run records and sends (RUN_STARTED.input, the stored run) must stay what the client sent.
    Through the wire form: a third of a millisecond for a 200-message history, where
    copy.deepcopy takes five times that."""
    return decode(encode(run_input), RunAgentInput)


async def run_lifecycle(
    agent: Agent,
    run_input: RunAgentInput,
    *,
    finish_grace: float | None = DEFAULT_FINISH_GRACE,
    tracker: RunTracker | None = None,
    sink: Callable[[Any], bool] | None = None,
    max_state_nodes: int | None = DEFAULT_MAX_STATE_NODES,
    log_fields: Mapping[str, object] | None = None,
) -> AsyncGenerator[Event | UnknownEvent, None]:
    """The agent's events for `run_input`, inside a correct run lifecycle (see the module).

    finish_grace: seconds the agent may go on after its own terminal event (its later events
    are dropped), before it is cancelled; None waits for it however long it takes. tracker: the
    RunTracker to keep (a new one by default), for a producer that may have to end the run
    itself. sink: the producer's fast path for the bulk of a run, in the same pass: each
    content event of an open stream (checked as every event is, and changing nothing) is
    offered to `sink(event)` first, and yielded only when it returns False (it could not take
    the event now: a full queue, an event it leaves to the producer's own handling). Only such
    events: everything else is yielded. max_state_nodes: the most nodes a STATE_DELTA may take
    the state to (RunTracker's; a tracker given keeps its own). log_fields: what each line logged
    about the run carries (agui.observe.runlog.about_run; the server's: agent, thread, run); by default
    the input's thread and run."""
    fields = (
        {"thread": run_input.thread_id, "run": run_input.run_id}
        if log_fields is None
        else log_fields
    )
    started: RunStartedEvent | None = None
    terminal = False  # a terminal event was yielded
    returned = False  # the agent's stream ended by itself
    check = RunTracker(max_state_nodes=max_state_nodes) if tracker is None else tracker
    check.state = run_input.state
    quick = False  # content events may take the fast path (check.quick)
    stream: AsyncIterator[Any] | None = None
    try:
        # Inside the try: an agent whose call itself raises ends in RUN_ERROR too.
        stream = agent(agents_copy(run_input))
        if not isinstance(stream, AsyncIterator):
            about_run(
                log,
                logging.ERROR,
                _coded(fields, AGENT_ERROR),
                "the agent returned %s, not an async iterator; %s",
                type(stream).__name__,
                _AGENT,
            )
            if inspect.iscoroutine(stream):
                stream.close()
            stream = None
            started = run_started(run_input)
            check.start(started)
            yield started
            terminal = True
            yield run_error(AGENT_FAILED, AGENT_ERROR)
            return
        open_text = check.open_text
        async for event in stream:
            kind = type(event)
            if (
                quick
                and check.expander is None
                and (
                    # a text delta (the most frequent event), as continues_open_stream checks it
                    (
                        kind is TextMessageContentEvent
                        and event.subagent_run_id is None
                        and event.message_id in open_text
                    )
                    or (kind in _QUICK and check.continues_open_stream(event))
                )
            ):
                # the bulk of a run: a delta of an open message or call
                if sink is None or not sink(event):
                    yield event
                continue
            if kind not in _EVENT_TYPES:
                about_run(
                    log,
                    logging.ERROR,
                    _coded(fields, INVALID_EVENT),
                    "the agent yielded %s, which is not an AG-UI event; yield the event model "
                    "classes (agui.TextMessageContentEvent, ...)",
                    kind.__name__,
                )
                if started is None:
                    started = run_started(run_input)
                    check.start(started)
                    yield started
                terminal = True
                yield run_error("The agent produced an invalid event.", INVALID_EVENT)
                return
            if started is None:
                if kind is RunStartedEvent:
                    if event.protocol_version is None:
                        event = attrs.evolve(event, protocol_version=PROTOCOL_VERSION)
                    started = event
                else:
                    started = run_started(run_input)
                check.start(started)
                quick = True
                yield started
                if kind is RunStartedEvent:
                    continue
            elif kind is RunStartedEvent:
                about_run(
                    log,
                    logging.WARNING,
                    fields,
                    "dropped a second RUN_STARTED (the run is already started)",
                )
                continue
            try:
                if kind is RunFinishedEvent:
                    if (event.thread_id, event.run_id) != (started.thread_id, started.run_id):
                        about_run(
                            log,
                            logging.WARNING,
                            fields,
                            "the agent's RUN_FINISHED named thread %r, run %r; it is sent with "
                            "the run's (thread %r, run %r)",
                            event.thread_id,
                            event.run_id,
                            started.thread_id,
                            started.run_id,
                        )
                        event = attrs.evolve(
                            event, thread_id=started.thread_id, run_id=started.run_id
                        )
                    closing = check.finishing(event)
                    if closing:
                        about_run(
                            log,
                            logging.INFO,
                            fields,
                            "closed before RUN_FINISHED: %s",
                            _closed(closing),
                        )
                    for closer in closing:
                        yield closer
                    terminal = True
                    yield event
                    break
                if kind is RunErrorEvent:
                    terminal = True
                    yield event
                    break
                check.admit(event)
                quick = check.expander is None
            except ProtocolError as exc:
                about_run(
                    log,
                    logging.ERROR,
                    _coded(fields, INVALID_EVENT),
                    "the agent sent an event a client must reject (%s): %s",
                    _describe(event),
                    exc,
                )
                terminal = True
                yield run_error(f"The agent sent an invalid event: {exc}", INVALID_EVENT)
                return
            yield event
        else:
            returned = True
        if terminal and not returned:
            await _finish(stream, fields, finish_grace)
    except Exception:
        about_run(
            log, logging.ERROR, _coded(fields, AGENT_ERROR), "the agent failed", exc_info=True
        )
        if started is None:
            started = run_started(run_input)
            check.start(started)
            yield started
        if not terminal:
            terminal = True
            yield run_error(AGENT_FAILED, AGENT_ERROR)
    finally:
        if isinstance(stream, AsyncGenerator):
            try:
                await stream.aclose()
            except Exception:  # the run still needs its end
                about_run(log, logging.ERROR, fields, "closing the agent failed", exc_info=True)
    if started is None:
        started = run_started(run_input)
        check.start(started)
        yield started
    if not terminal:
        finished = RunFinishedEvent(thread_id=started.thread_id, run_id=started.run_id)
        try:
            closing = check.finishing(finished)
        except ProtocolError as exc:  # pragma: no cover - what is open is what gets closed
            about_run(
                log,
                logging.ERROR,
                _coded(fields, INVALID_EVENT),
                "the run cannot be finished: %s",
                exc,
            )
            yield run_error(f"The agent sent an invalid event: {exc}", INVALID_EVENT)
            return
        if closing:
            about_run(log, logging.INFO, fields, "closed before RUN_FINISHED: %s", _closed(closing))
        for closer in closing:
            yield closer
        yield finished


def _coded(fields: Mapping[str, object], code: str) -> dict[str, object]:
    return {**fields, "code": code}


async def _finish(
    stream: AsyncIterator[Any], fields: Mapping[str, object], grace: float | None
) -> None:
    """Let the agent finish after its terminal event: drop (and log) what it still yields, for at
    most `grace` seconds; then cancel it."""
    loop = asyncio.get_running_loop()
    deadline = None if grace is None else loop.time() + grace
    while True:
        limit = asyncio.timeout_at(deadline)
        try:
            async with limit:
                event = await anext(stream)
        except StopAsyncIteration:
            return
        except TimeoutError:
            if not limit.expired():
                raise  # the agent's own
            about_run(
                log,
                logging.WARNING,
                fields,
                "the agent was still working %s s after its terminal event; it is cancelled",
                grace,
            )
            return
        about_run(
            log,
            logging.WARNING,
            fields,
            "dropped %s sent after the terminal event",
            _describe(event),
        )
        if deadline is not None and loop.time() >= deadline:
            about_run(
                log,
                logging.WARNING,
                fields,
                "the agent was still yielding %s s after its terminal event; it is closed",
                grace,
            )
            return
