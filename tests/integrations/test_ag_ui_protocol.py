"""agui.adapters.AgUiProtocolAgent with a hand-written agent shaped like the official Python SDK's
(`run(input)` yielding ag_ui.core events, or their encodings): the input crosses in wire form,
every form of event comes back as the same agui events, warnings are logged, an invalid event
ends the run in RUN_ERROR INVALID_EVENT and an exception in RUN_ERROR AGENT_ERROR.

Needs ag-ui-protocol (`nox -s integrations` installs 1.0.0); skipped without it, unless
AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.integrations import require

require("ag_ui")

from ag_ui import core  # noqa: E402
from ag_ui.encoder import EventEncoder  # noqa: E402

import agui  # noqa: E402
from agui.adapters import AgUiProtocolAgent, SdkAgent  # noqa: E402
from agui.stream.lifecycle import AGENT_ERROR, INVALID_EVENT, run_lifecycle  # noqa: E402
from tests.conftest import live_server  # noqa: E402

Script = Callable[[Any], list[Any]]


class Official:
    """An agent written for the official SDK: `run(input)` iterates what `script(input)` lists (an
    exception in the list is raised there). Keeps what it was given and how its runs ended."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.inputs: list[Any] = []
        self.finished = 0  # runs that went through the whole script
        self.closed = 0  # runs whose iterator was closed (aclose), ended or not

    def run(self, input: core.RunAgentInput) -> AsyncIterator[Any]:
        self.inputs.append(input)
        return _Items(self, self.script(input))


class _Items:
    """The async iterator of one run: an object rather than an async generator, so that nothing
    but the adapter closes it (an async generator left open is closed by the event loop)."""

    def __init__(self, agent: Official, items: list[Any]) -> None:
        self.agent = agent
        self.items = iter(items)

    def __aiter__(self) -> _Items:
        return self

    async def __anext__(self) -> Any:
        await asyncio.sleep(0)
        item = next(self.items, StopAsyncIteration)
        if item is StopAsyncIteration:
            self.agent.finished += 1
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item

    async def aclose(self) -> None:
        self.agent.closed += 1


def events(input: Any) -> list[Any]:
    """A run of the official SDK's events: text, a tool call, state."""
    return [
        core.RunStartedEvent(thread_id=input.thread_id, run_id=input.run_id),
        core.TextMessageStartEvent(message_id="m1", role="assistant"),
        core.TextMessageContentEvent(message_id="m1", delta="Hello"),
        core.TextMessageContentEvent(message_id="m1", delta=", world"),
        core.TextMessageEndEvent(message_id="m1"),
        core.ToolCallStartEvent(tool_call_id="c1", tool_call_name="lookup", parent_message_id="m1"),
        core.ToolCallArgsEvent(tool_call_id="c1", delta='{"q": '),
        core.ToolCallArgsEvent(tool_call_id="c1", delta='"x"}'),
        core.ToolCallEndEvent(tool_call_id="c1"),
        core.StateSnapshotEvent(snapshot={"n": 1, "none": None}),
        core.CustomEvent(name="progress", value=None),
        core.RunFinishedEvent(thread_id=input.thread_id, run_id=input.run_id),
    ]


def _sse(event: Any) -> str:
    return EventEncoder().encode(event)


def _split(script: Script, size: int = 7) -> Script:
    """The script's SSE text cut every `size` characters, across frames and inside them."""

    def split(input: Any) -> list[Any]:
        text = "".join(_sse(event) for event in script(input))
        return [text[i : i + size] for i in range(0, len(text), size)]

    return split


def _mixed(script: Script) -> Script:
    """Pydantic events and SSE frames in turn, each frame without its blank line (ended by the
    next item, or by the end of the stream: the last one has no line end at all)."""

    def mixed(input: Any) -> list[Any]:
        items: list[Any] = list(script(input))
        for i in range(1, len(items), 2):
            items[i] = _sse(items[i]).rstrip("\n") + ("\n" if i < len(items) - 1 else "")
        assert isinstance(items[-1], str) and not items[-1].endswith("\n")
        return items

    return mixed


FORMS: dict[str, Callable[[Script], Script]] = {
    "pydantic": lambda script: script,
    "sse": lambda script: lambda input: [_sse(e) for e in script(input)],
    "sse-bytes": lambda script: lambda input: [_sse(e).encode() for e in script(input)],
    "sse-split": _split,
    "sse-mixed": _mixed,
    "json": lambda script: lambda input: [e.model_dump_json(by_alias=True) for e in script(input)],
    "dict": lambda script: (
        lambda input: [e.model_dump(mode="json", by_alias=True) for e in script(input)]
    ),
}
"""Each way an official agent can hand over its events, made from a script of pydantic events."""


def wire(event: Any) -> Any:
    """An official event as the official EventEncoder puts it on the wire (parsed)."""
    return json.loads(event.model_dump_json(by_alias=True))


def run_input(**members: Any) -> agui.RunAgentInput:
    members.setdefault("messages", (agui.UserMessage(id="u1", content="hi"),))
    return agui.RunAgentInput(thread_id="thread-1", run_id="run-1", **members)


async def collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in stream]


def agui_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.name.startswith("agui") and r.levelno >= logging.WARNING
    ]


# ── the events come back ────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_of_event_comes_back_as_the_same_agui_events(
    form: str, caplog: pytest.LogCaptureFixture
) -> None:
    agent = Official(FORMS[form](events))
    got = asyncio.run(collect(AgUiProtocolAgent(agent)(run_input())))
    expected = [wire(e) for e in events(agent.inputs[0])]
    assert [agui.to_json(e) for e in got] == expected
    assert [type(e).__name__ for e in got][:3] == [
        "RunStartedEvent",
        "TextMessageStartEvent",
        "TextMessageContentEvent",
    ]
    assert agent.finished == 1 and agent.closed == 1
    assert agui_warnings(caplog) == []


def test_the_input_crosses_in_wire_form() -> None:
    agent = Official(events)
    input = run_input(
        state={"a": [1, None]},
        tools=(agui.Tool(name="f", description="d", parameters={"type": "object"}),),
        context=(agui.Context(description="d", value="v"),),
        forwarded_props={"x": {"y": 1}},
        messages=(
            agui.UserMessage(id="u1", content="hi"),
            agui.AssistantMessage(
                id="a1",
                tool_calls=(
                    agui.ToolCall(id="c0", function=agui.FunctionCall(name="f", arguments="{}")),
                ),
            ),
            agui.ToolMessage(id="t1", content="ok", tool_call_id="c0"),
        ),
    )
    asyncio.run(collect(AgUiProtocolAgent(agent)(input)))
    (received,) = agent.inputs
    assert type(received) is core.RunAgentInput
    assert type(received.messages[1]) is core.AssistantMessage
    assert received.model_dump(mode="json", by_alias=True) == agui.to_json(input)


def test_a_conversation_runs_it_with_the_messages_and_state_the_events_describe(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conversation = agui.Conversation(thread_id="thread-1")
    result = asyncio.run(conversation.run(AgUiProtocolAgent(Official(FORMS["sse"](events))), "hi"))
    assert result is not None and result.outcome == "success"
    _user, assistant = conversation.messages
    assert isinstance(assistant, agui.AssistantMessage)
    assert (assistant.id, assistant.content) == ("m1", "Hello, world")
    assert assistant.tool_calls is not None
    (call,) = assistant.tool_calls
    assert (call.id, call.function.name, call.function.arguments) == ("c1", "lookup", '{"q": "x"}')
    assert conversation.state == {"n": 1, "none": None}
    assert conversation.warnings == []
    assert agui_warnings(caplog) == []


# ── warnings ────────────────────────────────────────────────────────────────────────────────────


def test_what_the_tolerant_decoder_removes_is_logged_per_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def script(input: Any) -> list[Any]:
        return [
            core.RunStartedEvent(thread_id=input.thread_id, run_id=input.run_id),
            core.TextMessageStartEvent(message_id="m1", role="assistant", bogus=1),
            'data: {"type":"FUTURE_EVENT","x":1}\n\n',
            {"type": "TEXT_MESSAGE_END", "messageId": "m1", "timestamp": None},
        ]

    caplog.set_level(logging.WARNING, logger="agui")
    got = asyncio.run(collect(AgUiProtocolAgent(Official(script))(run_input())))
    assert [agui.to_json(e) for e in got] == [
        {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "FUTURE_EVENT", "x": 1},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    ]
    assert isinstance(got[2], agui.UnknownEvent)
    assert agui_warnings(caplog) == [
        "agui.adapters: the agent's event 2 (TEXT_MESSAGE_START): /bogus: removed "
        "unknown member 'bogus': thread=thread-1 run=run-1",
        "agui.adapters: the agent's event 3 (FUTURE_EVENT): /type: unknown event type "
        "'FUTURE_EVENT'; passed on as UnknownEvent: thread=thread-1 run=run-1",
        "agui.adapters: the agent's event 4 (TEXT_MESSAGE_END): /timestamp: removed "
        "null from an optional member: thread=thread-1 run=run-1",
    ]


# ── an invalid event, an exception ──────────────────────────────────────────────────────────────

INVALID: dict[str, tuple[Any, str]] = {
    "wrong type": (
        '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":5}',
        "is not a valid AG-UI event: /delta: expected a string, got a number",
    ),
    "missing member": (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1"},
        "is not a valid AG-UI event: /delta:",
    ),
    "not JSON": ("data: {not json}\n\n", "is not a valid AG-UI event: (document): not valid JSON"),
    "no event": (42, "is a int, not an ag_ui.core event"),
    "frame too large": (
        "data: " + "x" * (10 * 1024 * 1024) + "\n\n",
        "is not valid SSE: an SSE frame exceeds 10485760 bytes",
    ),
    "pydantic, not an event": (
        core.Tool(name="f", description="d", parameters={}),
        "is not a valid AG-UI event: /type: required member 'type' is missing",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_an_invalid_event_ends_the_run_in_invalid_event(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    item, problem = INVALID[case]

    def script(input: Any) -> list[Any]:
        return [
            core.TextMessageStartEvent(message_id="m1", role="assistant"),
            core.TextMessageContentEvent(message_id="m1", delta="a"),
            item,
            core.TextMessageContentEvent(message_id="m1", delta="never sent"),
        ]

    agent = Official(script)
    got = asyncio.run(collect(run_lifecycle(AgUiProtocolAgent(agent), run_input())))
    assert [e.type for e in got] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "RUN_ERROR",
    ]
    assert (got[-1].code, got[-1].message) == (
        INVALID_EVENT,
        "The agent produced an invalid event.",
    )
    assert (agent.finished, agent.closed) == (0, 1)  # closed where it stood
    (logged,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged.name == "agui.adapters"
    message = logged.getMessage()
    assert message.startswith("the agent's event 3 ")
    assert problem in message
    assert message.endswith("; the run ends in RUN_ERROR INVALID_EVENT: thread=thread-1 run=run-1")


def test_an_exception_in_the_agent_ends_the_run_in_agent_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def script(input: Any) -> list[Any]:
        return [
            core.TextMessageStartEvent(message_id="m1", role="assistant"),
            RuntimeError("the model's secret detail"),
        ]

    agent = Official(script)
    got = asyncio.run(collect(run_lifecycle(AgUiProtocolAgent(agent), run_input())))
    assert [e.type for e in got] == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    assert got[-1].code == AGENT_ERROR
    assert "secret" not in got[-1].message
    (logged,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged.exc_info is not None and "the model's secret detail" in str(logged.exc_info[1])
    assert agent.closed == 1


def test_an_input_the_official_model_refuses_ends_the_run_in_agent_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Refusing:
        @staticmethod
        def model_validate(value: Any) -> Any:
            return core.RunAgentInput.model_validate({**value, "runId": 5.5})

    agent = Official(events)
    adapter = AgUiProtocolAgent(agent)
    adapter._input_type = Refusing  # what ag_ui would refuse, agui never sends
    got = asyncio.run(collect(run_lifecycle(adapter, run_input())))
    assert [e.type for e in got] == ["RUN_STARTED", "RUN_ERROR"]
    assert got[-1].code == AGENT_ERROR
    assert agent.inputs == []
    (logged,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "validation error for RunAgentInput" in str(logged.exc_info[1])  # type: ignore[index]


# ── building one ────────────────────────────────────────────────────────────────────────────────


class Cloning(Official):
    """An official agent with clone(), as ag-ui-langgraph's LangGraphAgent has."""

    def __init__(self, script: Script, clones: list[Cloning] | None = None) -> None:
        super().__init__(script)
        self.clones: list[Cloning] = [] if clones is None else clones

    def clone(self) -> Cloning:
        copy = Cloning(self.script, self.clones)
        self.clones.append(copy)
        return copy


def test_each_run_runs_on_a_clone_when_the_agent_has_clone() -> None:
    agent = Cloning(events)
    adapter = AgUiProtocolAgent(agent)
    assert adapter.clone is True
    for _ in range(2):
        asyncio.run(collect(adapter(run_input())))
    assert agent.inputs == []
    assert [len(c.inputs) for c in agent.clones] == [1, 1]

    itself = AgUiProtocolAgent(agent, clone=False)
    asyncio.run(collect(itself(run_input())))
    assert len(agent.inputs) == 1 and len(agent.clones) == 2


def test_what_cannot_be_adapted_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match="has no run method"):
        AgUiProtocolAgent(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="clone=True, but Official has no clone method"):
        AgUiProtocolAgent(Official(events), clone=True)
    assert AgUiProtocolAgent(Official(events)).clone is False
    assert isinstance(Official(events), SdkAgent)
    # An AgentApp takes it as it takes any agent.
    assert agui.AgentApp(AgUiProtocolAgent(Official(events))).agent is not None


@pytest.mark.parametrize("passed_on", [False, True], ids=["default", "error_messages"])
def test_the_agents_own_run_error_keeps_its_text_in_the_log(
    passed_on: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The integrations report an exception as RUN_ERROR with its text (ag-ui-langgraph,
    PydanticAI, ADK): the client gets a generic message and the agent's code, the text goes to
    the log; `error_messages=True` passes it on."""

    def script(input: Any) -> list[Any]:
        return [
            core.TextMessageStartEvent(message_id="m1", role="assistant"),
            core.RunErrorEvent(message="db password is hunter2", code="ValueError"),
        ]

    adapter = AgUiProtocolAgent(Official(script), error_messages=passed_on)
    got = asyncio.run(collect(run_lifecycle(adapter, run_input())))
    assert [e.type for e in got] == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    assert got[-1].code == "ValueError"
    if passed_on:
        assert got[-1].message == "db password is hunter2"
        assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    else:
        assert got[-1].message == "The agent failed while running."
        (logged,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert "hunter2" in logged.getMessage() and "error_messages=True" in logged.getMessage()


class Declaring(Official):
    """An official agent that declares its capabilities as ag-ui-adk's ADKAgent does: a
    get_capabilities() method, here returning ag_ui.core's pydantic model or its JSON."""

    def __init__(self, declared: Any) -> None:
        super().__init__(events)
        self.declared = declared

    def get_capabilities(self) -> Any:
        return self.declared


@pytest.mark.parametrize("form", ["model", "dict"])
def test_the_agents_capabilities_are_served_with_agui_s_transport(form: str) -> None:
    """GET {path}/capabilities answers what the agent declares (before, only the transport),
    with the transport AgentApp serves in place of the agent's own streaming."""
    declared = core.AgentCapabilities(
        identity=core.IdentityCapabilities(name="weather", type="google-adk"),
        human_in_the_loop=core.HumanInTheLoopCapabilities(approvals=True),
        transport=core.TransportCapabilities(streaming=False, websocket=True),
    )
    wire = declared.model_dump(mode="json", by_alias=True, exclude_none=True)
    adapter = AgUiProtocolAgent(Declaring(declared if form == "model" else wire))
    with live_server(agui.AgentApp(adapter, path="/agent"), lifespan="off") as base:
        answer = asyncio.run(agui.HttpAgent(base + "/agent").capabilities())
    assert agui.to_json(answer) == {
        "identity": {"name": "weather", "type": "google-adk"},
        "humanInTheLoop": {"approvals": True},
        "transport": {"streaming": True, "websocket": True, "httpBinary": True},
    }
    assert agui.to_json(asyncio.run(AgUiProtocolAgent(Official(events)).capabilities())) == {}
