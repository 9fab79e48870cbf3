"""ModelAgent: an AG-UI agent that answers each run with a language model and tools.

    agent = ModelAgent(model, system="Be brief.", tools=[get_weather, book_table], max_steps=5)
    app = agui.AgentApp(agent)

A run goes like this:

1. The prompt is the agent's system prompt followed by the run's conversation (`to_prompt`, which
   leaves the client's own instructions out). Answers to earlier approval requests (`resume`) are
   applied first: an approved call is run (with the edited arguments, if any), a declined or
   cancelled one is reported to the model as declined.
2. Rounds: the model gets the prompt and the tools (the server tools, and the run's own tools as
   frontend tools the application executes). What it streams is forwarded as it comes: text,
   reasoning, tool calls. Server tools then run (concurrently; a sync one in a worker thread) and
   each gives a TOOL_CALL_RESULT; a tool that raises, or gets arguments that do not fit its schema,
   gives the model an error result instead of failing the run. Their results go back to the model
   in the next round.
3. The run ends when a round calls no server tool, when a call waits for the application (a
   frontend tool: listed in `pendingToolCallIds`), when a call waits for the user's approval (an
   interrupt outcome, reason "tool_call"). RUN_FINISHED carries the token usage summed per
   provider and model over every round. A run whose model is still calling server tools after
   `max_steps` rounds ends in RUN_ERROR `MAX_STEPS` instead: the model never saw the last
   results and gave no answer.

The agent declares what it can do (`capabilities()`, served by AgentApp at
`GET {path}/capabilities`): its server tools (and that it takes the run's own tools and runs
calls concurrently), streamed reasoning, approvals by interrupt when a tool may need one, and
max_steps as its iteration limit.

A provider failure (`ModelError`) ends the run with RUN_ERROR carrying the error's code. A run
whose tools clash with a server tool's name or are malformed, or whose resume entries answer
nothing this agent asked, is refused by `validate` — with 400 before the stream opens when served
by AgentApp.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import typing
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import orjson
from agui_generated import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    AssistantMessage,
    ExecutionCapabilities,
    HumanInTheLoopCapabilities,
    Interrupt,
    Problem,
    ReasoningCapabilities,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    ResumeEntry,
    ResumeStatus,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    Tool,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    ToolsCapabilities,
)

from agui.model.interface import (
    AssistantPrompt,
    Finish,
    InstructionPrompt,
    LanguageModel,
    ModelError,
    PromptMessage,
    PromptToolCall,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultPrompt,
    ToolSpec,
)
from agui.model.prompt import to_prompt
from agui.model.tools import (
    TOOL_NAME,
    ServerTool,
    ToolContext,
    ToolError,
    check_arguments,
    result_content,
    thread_safe_sink,
    tool,
)
from agui.observe.runlog import about_run, run_fields

if TYPE_CHECKING:
    from agui.http.tracing import ChatSpan, ToolSpan

__all__ = ["APPROVAL_SCHEMA", "MAX_STEPS", "ModelAgent", "approval_interrupt_id"]

log = logging.getLogger("agui.model")

MAX_STEPS = "MAX_STEPS"
"""The RUN_ERROR code of a run stopped after max_steps model rounds without an answer."""

APPROVAL_PREFIX = "approve-"
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "Run the tool call (true) or not."},
        "editedArgs": {
            "type": "object",
            "description": "Arguments to run the call with instead of the model's.",
        },
    },
    "required": ["approved"],
    "additionalProperties": False,
}
"""The answer an approval interrupt asks for (its responseSchema)."""

DECLINED = "The user declined this tool call; it was not run."
NO_RESULT = "This tool call got no result."


def approval_interrupt_id(tool_call_id: str) -> str:
    """The id of the interrupt asking to approve the call `tool_call_id`."""
    return APPROVAL_PREFIX + tool_call_id


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


class ModelAgent:
    """An Agent serving `model` with server tools (see the module docstring).

    system: the system prompt. tools: server tools (`agui.model.tool(fn)`, or plain functions,
    wrapped with the defaults). max_steps: the most model rounds in one run (a model still
    calling server tools then ends the run in RUN_ERROR `MAX_STEPS`). keep_instructions:
    pass the client's system and developer messages to the model (dropped by default).
    steps: wrap each round in STEP_STARTED / STEP_FINISHED ("round 1", "round 2", ...).
    """

    def __init__(
        self,
        model: LanguageModel,
        *,
        system: str | None = None,
        tools: Iterable[ServerTool | Callable[..., Any]] = (),
        max_steps: int = 10,
        keep_instructions: bool = False,
        steps: bool = False,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.model = model
        self.system = system
        self.max_steps = max_steps
        self.keep_instructions = keep_instructions
        self.steps = steps
        self.tools: dict[str, ServerTool] = {}
        for item in tools:
            server = item if isinstance(item, ServerTool) else tool(item)
            if server.name in self.tools:
                raise ValueError(f"two server tools are named {server.name!r}")
            self.tools[server.name] = server

    # ── what it declares ─────────────────────────────────────────────────────────────────────

    def capabilities(self) -> AgentCapabilities:
        """What this agent can do, from its configuration as it is now (AgentApp asks on every
        `GET {path}/capabilities`): its server tools (with their schemas) and that it takes the
        run's own tools as well and runs a round's calls concurrently; reasoning, streamed as
        the model produces it; approvals through the interrupt protocol (with edited arguments)
        when a server tool may need one, and none otherwise; `max_steps` as the most rounds.
        What depends on the model (the media it takes, whether it reasons at all) is left out,
        that is, unknown. A subclass can add to it, an identity say:
        `attrs.evolve(super().capabilities(), identity=agui.IdentityCapabilities(name=...))`."""
        approvals = any(
            callable(t.requires_approval) or t.requires_approval for t in self.tools.values()
        )
        return AgentCapabilities(
            tools=ToolsCapabilities(
                supported=True,
                items=tuple(
                    Tool(name=t.name, description=t.description, parameters=t.parameters)
                    for t in self.tools.values()
                ),
                parallel_calls=True,
                client_provided=True,
            ),
            reasoning=ReasoningCapabilities(supported=True, streaming=True),
            human_in_the_loop=HumanInTheLoopCapabilities(
                supported=True, approvals=True, interrupts=True, approve_with_edits=True
            )
            if approvals
            else HumanInTheLoopCapabilities(approvals=False, interrupts=False),
            execution=ExecutionCapabilities(max_iterations=self.max_steps),
        )

    # ── before the stream opens ───────────────────────────────────────────────────────────────

    def validate(self, input: RunAgentInput) -> list[Problem]:
        """What is wrong with the run for this agent (empty: nothing). AgentApp answers 400 with
        these problems, before any event is sent."""
        problems: list[Problem] = []
        first: dict[str, int] = {}
        for index, run_tool in enumerate(input.tools or ()):
            at = f"/tools/{index}"
            name = run_tool.name
            if name in self.tools:
                problems.append(
                    Problem(
                        f"{at}/name",
                        "conflict",
                        f"the run's tool {name!r} has the name of a server tool of this agent",
                    )
                )
            elif name in first:
                problems.append(
                    Problem(
                        f"{at}/name", "duplicate", f"tool {name!r} is also at /tools/{first[name]}"
                    )
                )
            elif not TOOL_NAME.fullmatch(name):
                problems.append(
                    Problem(
                        f"{at}/name",
                        "pattern",
                        "a tool name is 1 to 64 letters, digits, '_' or '-'",
                    )
                )
            first.setdefault(name, index)
            parameters = run_tool.parameters
            if parameters is not None and (
                not isinstance(parameters, dict)
                or parameters.get("type", "object") != "object"
                or not isinstance(parameters.get("properties", {}), dict)
            ):
                problems.append(
                    Problem(
                        f"{at}/parameters",
                        "type",
                        "a tool's parameters must be a JSON Schema of an object",
                    )
                )
        history = _History(input)
        answered: set[str] = set()
        for index, entry in enumerate(input.resume or ()):
            at = f"/resume/{index}"
            call_id = _approval_call_id(entry.interrupt_id)
            call = history.calls.get(call_id) if call_id is not None else None
            if call is None or call.name not in self.tools:
                problems.append(
                    Problem(
                        f"{at}/interruptId",
                        "unknown_interrupt",
                        "this agent asked for no approval with this id in this conversation",
                    )
                )
                continue
            echoed = all(_echoes(c, entry) for c in history.contents.get(call.id, ()))
            if (call.id in history.answered and not echoed) or call.id in answered:
                problems.append(
                    Problem(
                        f"{at}/interruptId",
                        "answered",
                        f"tool call {call.id!r} already has a result",
                    )
                )
            answered.add(call.id)
            if entry.status is ResumeStatus.RESOLVED and _approval(entry.payload) is None:
                problems.append(
                    Problem(
                        f"{at}/payload",
                        "type",
                        'the answer to an approval is {"approved": true or false, '
                        '"editedArgs": {...} (optional)}',
                    )
                )
        return problems

    # ── the run ──────────────────────────────────────────────────────────────────────────────

    async def __call__(self, input: RunAgentInput, /) -> AsyncIterator[Any]:
        yield RunStartedEvent(
            thread_id=input.thread_id, run_id=input.run_id, protocol_version=PROTOCOL_VERSION
        )
        problems = self.validate(input)
        if problems:  # only when called directly: AgentApp refuses such a run with 400
            listed = "; ".join(str(p) for p in problems[:5])
            yield RunErrorEvent(message=f"The run was refused: {listed}", code="INVALID_INPUT")
            return
        async for event in _Run(self, input).events():
            yield event


@attrs.define
class _Call:
    id: str
    name: str
    arguments: str = ""


class _History:
    """The tool calls of the run's conversation, and which of them have results."""

    def __init__(self, input: RunAgentInput) -> None:
        self.calls: dict[str, _Call] = {}
        self.answered: set[str] = set()
        self.contents: dict[str, list[Any]] = {}  # each call's tool messages' contents
        for message in input.messages:
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls or ():
                    self.calls[call.id] = _Call(
                        call.id, call.function.name, call.function.arguments
                    )
            elif isinstance(message, ToolMessage):
                self.answered.add(message.tool_call_id)
                self.contents.setdefault(message.tool_call_id, []).append(message.content)


def _echoes(content: Any, entry: ResumeEntry) -> bool:
    """Whether a tool message is the client's record of its own answer to the approval: beside
    the resume entry, CopilotKit's useInterrupt adds a tool message for the call holding the
    answer as JSON (the payload, or {"status": ...} without one). The entry decides: the call
    runs (or is declined) and its result takes that message's place in the prompt."""
    if not isinstance(content, str):
        return False
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return False
    if entry.status is ResumeStatus.RESOLVED and entry.payload is not None:
        return bool(value == entry.payload)
    return bool(value == {"status": entry.status.value})


def _approval_call_id(interrupt_id: str) -> str | None:
    if interrupt_id.startswith(APPROVAL_PREFIX) and len(interrupt_id) > len(APPROVAL_PREFIX):
        return interrupt_id[len(APPROVAL_PREFIX) :]
    return None


def _approval(payload: Any) -> tuple[bool, dict[str, Any] | None] | None:
    """(approved, edited arguments) from an approval answer; None when it is not one."""
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        return None
    if set(payload) - {"approved", "editedArgs"}:
        return None
    edited = payload.get("editedArgs")
    if edited is not None and not isinstance(edited, dict):
        return None
    return payload["approved"], edited


@attrs.define
class _Round:
    """What one model round produced."""

    text: list[str] = attrs.field(factory=list)
    calls: list[_Call] = attrs.field(factory=list)
    finish: Finish | None = None


class _Run:
    """One run of a ModelAgent."""

    def _log_fields(self) -> Mapping[str, object]:
        """What a line about this run carries (the server's agent name when it serves it)."""
        return run_fields(self.input.thread_id, self.input.run_id)

    def __init__(self, agent: ModelAgent, input: RunAgentInput) -> None:
        self.agent = agent
        self.input = input
        self.history = _History(input)
        self.usage: dict[tuple[str | None, str | None], TokenUsage] = {}
        self.frontend = {
            t.name: ToolSpec(
                name=t.name,
                description=t.description,
                parameters=t.parameters
                if isinstance(t.parameters, dict)
                else {"type": "object", "properties": {}},
            )
            for t in input.tools or ()
        }
        self.specs = (*(t.spec for t in agent.tools.values()), *self.frontend.values())
        self.used_ids = set(self.history.calls)

    def _finished(self, **outcome: Any) -> RunFinishedEvent:
        return RunFinishedEvent(
            thread_id=self.input.thread_id,
            run_id=self.input.run_id,
            usage=tuple(self.usage.values()) or None,
            **outcome,
        )

    async def events(self) -> AsyncIterator[Any]:
        agent = self.agent
        prompt: list[PromptMessage] = []
        if agent.system:
            prompt.append(InstructionPrompt(content=agent.system))
        prompt += to_prompt(self.input, keep_instructions=agent.keep_instructions)

        results: dict[str, str | tuple[Any, ...]] = {}
        edited: dict[str, str] = {}
        async for event in self._resume(results, edited):
            yield event
        prompt = _arrange(prompt, results, edited)

        for step in range(1, agent.max_steps + 1):
            name = f"round {step}"
            if agent.steps:
                yield StepStartedEvent(step_name=name)
            produced = _Round()
            try:
                async for event in self._model_round(prompt, produced):
                    yield event
            except ModelError as exc:
                about_run(
                    log,
                    logging.WARNING,
                    self._log_fields(),
                    "the model failed (%s): %s",
                    exc.code,
                    exc.message,
                )
                yield RunErrorEvent(
                    message=exc.message, code=exc.code, usage=tuple(self.usage.values()) or None
                )
                return
            prompt.append(
                AssistantPrompt(
                    text="".join(produced.text),
                    tool_calls=tuple(
                        PromptToolCall(id=c.id, name=c.name, arguments=c.arguments)
                        for c in produced.calls
                    ),
                )
            )

            pending: list[str] = []
            interrupts: list[Interrupt] = []
            jobs: list[tuple[_Call, ServerTool, dict[str, Any]]] = []
            round_results: dict[str, str | tuple[Any, ...]] = {}
            for call in produced.calls:
                server = agent.tools.get(call.name)
                if server is None:
                    if call.name in self.frontend:
                        pending.append(call.id)
                    else:
                        round_results[call.id] = f"Error: there is no tool named {call.name!r}."
                    continue
                arguments, problems = check_arguments(call.arguments, server.parameters)
                if problems:
                    round_results[call.id] = _invalid(server.name, problems)
                    continue
                try:
                    ask = server.needs_approval(self.input, arguments)
                except Exception as exc:
                    about_run(
                        log,
                        logging.ERROR,
                        self._log_fields(),
                        "approval rule of %s failed",
                        call.name,
                        exc_info=True,
                    )
                    round_results[call.id] = _failed(server.name, exc)
                    continue
                if ask:
                    interrupts.append(_approval_interrupt(call, arguments))
                else:
                    jobs.append((call, server, arguments))
            for call_id, content in round_results.items():
                yield _result(call_id, content)
            async for event in self._execute(jobs, round_results):
                yield event
            for call in produced.calls:
                if call.id in round_results:
                    prompt.append(
                        ToolResultPrompt(tool_call_id=call.id, content=round_results[call.id])
                    )
            if agent.steps:
                yield StepFinishedEvent(step_name=name)

            if interrupts:
                yield self._finished(
                    outcome=RunFinishedInterruptOutcome(interrupts=tuple(interrupts))
                )
                return
            if produced.calls and not pending and step == agent.max_steps:
                # The model saw none of this round's results and has not answered.
                about_run(
                    log, logging.WARNING, self._log_fields(), "stopped after max_steps=%d", step
                )
                yield RunErrorEvent(
                    message=f"The agent stopped after {step} model rounds without an answer "
                    "(max_steps).",
                    code=MAX_STEPS,
                    usage=tuple(self.usage.values()) or None,
                )
                return
            if pending or not produced.calls:
                yield self._finished(
                    outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=tuple(pending) or None)
                )
                return

    # ── resuming ──────────────────────────────────────────────────────────────────────────────

    async def _resume(
        self, results: dict[str, str | tuple[Any, ...]], edited: dict[str, str]
    ) -> AsyncIterator[Any]:
        """Apply the answers to earlier approval requests (already validated)."""
        jobs: list[tuple[_Call, ServerTool, dict[str, Any]]] = []
        immediate: dict[str, str | tuple[Any, ...]] = {}
        for entry in self.input.resume or ():
            call_id = _approval_call_id(entry.interrupt_id)
            call = self.history.calls[call_id or ""]
            server = self.agent.tools[call.name]
            answer = _approval(entry.payload) if entry.status is ResumeStatus.RESOLVED else None
            if answer is None or not answer[0]:
                immediate[call.id] = DECLINED
                continue
            text = call.arguments
            if answer[1] is not None:
                text = edited[call.id] = orjson.dumps(answer[1]).decode()
            arguments, problems = check_arguments(text, server.parameters)
            if problems:
                immediate[call.id] = _invalid(server.name, problems)
            else:
                jobs.append((call, server, arguments))
        for call_id, content in immediate.items():
            yield _result(call_id, content)
        results.update(immediate)
        async for event in self._execute(jobs, results):
            yield event

    # ── one model round ──────────────────────────────────────────────────────────────────────

    async def _model_round(
        self, prompt: list[PromptMessage], produced: _Round
    ) -> AsyncIterator[Any]:
        message_id = _new_id("msg")
        message_used = False  # the id already names a text message or a tool call's parent
        text_open = False
        reasoning: tuple[str, str] | None = None  # (span id, message id)
        calls: dict[str, tuple[_Call, bool]] = {}  # the model's id -> (call, ended)

        def close_text() -> list[Any]:
            nonlocal text_open
            if not text_open:
                return []
            text_open = False
            return [TextMessageEndEvent(message_id=message_id)]

        def close_reasoning() -> list[Any]:
            nonlocal reasoning
            if reasoning is None:
                return []
            span, thought = reasoning
            reasoning = None
            return [
                ReasoningMessageEndEvent(message_id=thought),
                ReasoningEndEvent(message_id=span),
            ]

        chat = _chat_span(self.agent.model)
        stream = self.agent.model.stream(tuple(prompt), self.specs)
        try:
            async for part in stream:
                if isinstance(part, TextDelta):
                    if not part.text:
                        continue
                    for event in close_reasoning():
                        yield event
                    if not text_open:
                        if message_used:
                            message_id = _new_id("msg")
                        message_used = text_open = True
                        yield TextMessageStartEvent(message_id=message_id)
                    produced.text.append(part.text)
                    yield TextMessageContentEvent(message_id=message_id, delta=part.text)
                elif isinstance(part, ReasoningDelta):
                    if not part.text:
                        continue
                    if reasoning is None:
                        for event in close_text():
                            yield event
                        reasoning = (_new_id("reasoning"), _new_id("thought"))
                        yield ReasoningStartEvent(message_id=reasoning[0])
                        yield ReasoningMessageStartEvent(message_id=reasoning[1])
                    yield ReasoningMessageContentEvent(message_id=reasoning[1], delta=part.text)
                elif isinstance(part, ToolCallStart):
                    if part.id in calls:
                        raise ModelError(
                            "MODEL_STREAM_ERROR", "The model started the same tool call twice."
                        )
                    for event in [*close_reasoning(), *close_text()]:
                        yield event
                    call = _Call(self._fresh_call_id(part.id), part.name)
                    calls[part.id] = (call, False)
                    produced.calls.append(call)
                    message_used = True
                    yield ToolCallStartEvent(
                        tool_call_id=call.id, tool_call_name=call.name, parent_message_id=message_id
                    )
                elif isinstance(part, ToolCallDelta):
                    call, ended = self._open_call(calls, part.id)
                    if part.arguments:
                        call.arguments += part.arguments
                        yield ToolCallArgsEvent(tool_call_id=call.id, delta=part.arguments)
                elif isinstance(part, ToolCallEnd):
                    call, _ = self._open_call(calls, part.id)
                    calls[part.id] = (call, True)
                    yield ToolCallEndEvent(tool_call_id=call.id)
                elif isinstance(part, Finish):
                    produced.finish = part
                    self._add_usage(part.usage)
                    if chat is not None:
                        chat.finished(part)
                else:
                    raise ModelError(
                        "MODEL_STREAM_ERROR",
                        f"The model produced an unknown part ({type(part).__name__}).",
                    )
        except Exception as exc:
            if chat is not None:
                chat.failed(exc)
            raise
        finally:
            try:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            finally:
                if chat is not None:
                    chat.end()
        for event in [*close_reasoning(), *close_text()]:
            yield event
        for call, ended in calls.values():
            if not ended:
                yield ToolCallEndEvent(tool_call_id=call.id)

    def _open_call(self, calls: dict[str, tuple[_Call, bool]], model_id: str) -> tuple[_Call, bool]:
        held = calls.get(model_id)
        if held is None or held[1]:
            raise ModelError(
                "MODEL_STREAM_ERROR", "The model continued a tool call that is not open."
            )
        return held

    def _fresh_call_id(self, proposed: str) -> str:
        """The model's call id, unless the conversation already uses it (some servers number
        calls from 0 in every response): then a new one."""
        call_id = proposed if proposed and proposed not in self.used_ids else _new_id("call")
        self.used_ids.add(call_id)
        return call_id

    def _add_usage(self, usage: TokenUsage | None) -> None:
        if usage is None:
            return
        key = (usage.provider, usage.model)
        held = self.usage.get(key)
        self.usage[key] = usage if held is None else _sum_usage(held, usage)

    # ── server tools ─────────────────────────────────────────────────────────────────────────

    async def _execute(
        self,
        jobs: list[tuple[_Call, ServerTool, dict[str, Any]]],
        results: dict[str, str | tuple[Any, ...]],
    ) -> AsyncIterator[Any]:
        """Run the calls concurrently; yield the events their tools emit and each result as it
        comes; record the results."""
        if not jobs:
            return
        queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()

        async def run(call: _Call, server: ServerTool, arguments: dict[str, Any]) -> None:
            live = True

            def put(event: Any) -> None:
                if live:
                    queue.put_nowait(("event", event))
                else:
                    log.warning("tool %s emitted %s after it returned; dropped", call.name, event)

            context = ToolContext(
                input=self.input,
                tool_call_id=call.id,
                tool_name=call.name,
                sink=thread_safe_sink(put),
            )
            try:
                content = await self._invoke(call, server, arguments, context)
            finally:
                live = False
            queue.put_nowait(("done", call.id, content))

        tasks = [asyncio.create_task(run(*job)) for job in jobs]
        try:
            remaining = len(tasks)
            while remaining:
                item = await queue.get()
                if item[0] == "event":
                    yield item[1]
                else:
                    remaining -= 1
                    results[item[1]] = item[2]
                    yield _result(item[1], item[2])
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _invoke(
        self, call: _Call, server: ServerTool, arguments: dict[str, Any], context: ToolContext
    ) -> str | tuple[Any, ...]:
        if _TRACING not in sys.modules:  # no run is traced in this process
            return await self._run_tool(call, server, arguments, context, None)
        from agui.http.tracing import tool_span

        with tool_span(call.name, call.id, server.description) as span:
            return await self._run_tool(call, server, arguments, context, span)

    async def _run_tool(
        self,
        call: _Call,
        server: ServerTool,
        arguments: dict[str, Any],
        context: ToolContext,
        span: ToolSpan | None,
    ) -> str | tuple[Any, ...]:
        try:
            value = await server.invoke(arguments, context)
        except ToolError as exc:
            if span is not None:
                span.failed(exc)
            return f"Error: {exc}"
        except Exception as exc:
            about_run(
                log, logging.ERROR, self._log_fields(), "tool %s failed", call.name, exc_info=True
            )
            if span is not None:
                span.failed(exc)
            return _failed(server.name, exc)
        try:
            return result_content(value)
        except TypeError:
            if span is not None:
                span.failed(kind="not_json")
            about_run(
                log,
                logging.ERROR,
                self._log_fields(),
                "tool %s returned a %s, which is not JSON",
                call.name,
                type(value).__name__,
            )
            return f"Error: the tool {server.name} returned a value that is not JSON."


_TRACING = "agui.http.tracing"
"""The tracing module: loaded once an AgentApp traces its runs (it imports OpenTelemetry)."""


def _chat_span(model: LanguageModel) -> ChatSpan | None:
    """The trace span of a model request starting now; None unless the run is traced."""
    if _TRACING not in sys.modules:
        return None
    from agui.http.tracing import chat_span

    return chat_span(model)


def _result(call_id: str, content: str | tuple[Any, ...]) -> ToolCallResultEvent:
    return ToolCallResultEvent(message_id=_new_id("result"), tool_call_id=call_id, content=content)


def _invalid(name: str, problems: list[str]) -> str:
    return f"Error: invalid arguments for {name}: " + "; ".join(problems[:10])


def _failed(name: str, exc: BaseException) -> str:
    return f"Error: the tool {name} failed ({type(exc).__name__})."


def _approval_interrupt(call: _Call, arguments: dict[str, Any]) -> Interrupt:
    return Interrupt(
        id=approval_interrupt_id(call.id),
        reason="tool_call",
        message=f"Allow the assistant to call {call.name}?",
        tool_call_id=call.id,
        response_schema=APPROVAL_SCHEMA,
        metadata={"toolName": call.name, "arguments": arguments},
    )


def _arrange(
    prompt: list[PromptMessage],
    results: Mapping[str, str | tuple[Any, ...]],
    edited: Mapping[str, str],
) -> list[PromptMessage]:
    """Put every tool result right after the assistant turn that made the call, as chat APIs
    require: results found anywhere in the history or given in `results` (from resumed
    approvals), NO_RESULT for a call nobody answered; a result for no known call is left out.
    Calls in `edited` get the arguments they were run with."""
    found: dict[str, PromptMessage] = {}
    for message in prompt:
        if isinstance(message, ToolResultPrompt):
            found.setdefault(message.tool_call_id, message)
    for call_id, content in results.items():
        found[call_id] = ToolResultPrompt(tool_call_id=call_id, content=content)
    arranged: list[PromptMessage] = []
    for message in prompt:
        if isinstance(message, ToolResultPrompt):
            continue
        if isinstance(message, AssistantPrompt) and message.tool_calls:
            calls = tuple(
                attrs.evolve(c, arguments=edited[c.id]) if c.id in edited else c
                for c in message.tool_calls
            )
            arranged.append(attrs.evolve(message, tool_calls=calls))
            for call in calls:
                result = found.pop(call.id, None)
                arranged.append(result or ToolResultPrompt(tool_call_id=call.id, content=NO_RESULT))
            continue
        arranged.append(message)
    return arranged


def _counters(cls: type) -> tuple[str, ...]:
    """The attributes of a usage class that are token counters: every integer-typed field
    (`int`, or `int | None` for an optional one), read from the generated class so a counter the
    spec adds is summed without an edit here."""
    hints = typing.get_type_hints(cls)
    counters = []
    for field in attrs.fields(cls):
        hint = hints.get(field.name, field.type)
        options = [o for o in typing.get_args(hint) if o is not type(None)] or [hint]
        if options == [int]:
            counters.append(field.name)
    return tuple(counters)


_COUNTERS = _counters(TokenUsage)
"""input_tokens, output_tokens, ...: TokenUsage's integer fields, in spec order."""


def _sum_usage(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    """Two usage entries of one provider and model as one: each counter is the sum when both
    report it, the one reported when only one does, absent when neither does; every other
    field (provider, model) is `a`'s."""
    summed: dict[str, Any] = {}
    for name in _COUNTERS:
        x, y = getattr(a, name), getattr(b, name)
        summed[name] = None if x is None and y is None else (x or 0) + (y or 0)
    return attrs.evolve(a, **summed)
