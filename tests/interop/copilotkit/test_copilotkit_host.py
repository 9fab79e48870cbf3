"""CopilotKit's runtime as the host in front of this server: text, tools, state, two turns,
reasoning by `compat`, interrupts and connect, each through @copilotkit/runtime 1.75.0 and its
headless client @copilotkit/core 1.75.0 (copilotkit_host.mjs, see host.py), without a store and
with one (memory://, SQLite).

The runtime's agent is the @ag-ui/client 0.0.59 HttpAgent @copilotkit/runtime depends on (it sends
no protocolVersion), so `compat` decides the stream: the default ("auto") gives the 0.0.35 era's
(no reasoning), `AgentApp(compat="0.0.59")` that release's own.

What CopilotKit 1.75 does, read from its source under .interop/node_modules/@copilotkit/ and
checked below:

* Interrupts: a RUN_FINISHED with outcome interrupt reaches the client as
  `agent.pendingInterrupts`; react-core's `useInterrupt` answers with `copilotkit.runAgent({agent,
  resume, runId})`, whose runId is the interrupted run's own, and for an interrupt of reason
  "tool_call" it first adds a tool message (the answer as JSON) for that call. A plain turn
  while an interrupt is pending is refused by the client itself (no request is made).
* Connect: the client's connectAgent goes to the runtime (`POST {runtime}/agent/default/connect`),
  whose InMemoryAgentRunner replays its own in-process history of the thread; it never calls the
  agent's connect, so nothing reaches this server (neither `GET {path}/threads/{id}/events` nor
  anything else), and a restarted runtime shows an empty thread even when this server's store
  holds it.

Runs under AGUI_INTEROP=1 (`nox -s interop`), the packages of tests/interop/package.json installed
under .interop/.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.cli.demo import DemoAgent
from agui.http.server import AgentApp
from tests.conftest import live_server
from tests.interop.copilotkit.host import (
    THREAD,
    Requests,
    copilotkit,
    install_host,
    sse_events,
    summary,
)
from tests.interop.test_interop import TIMEOUT, node

__all__ = ["node"]  # the fixture (node on PATH, the @ag-ui pins installed), used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

STATE = {"count": 2, "items": ["a", "b"]}  # after the "state" turn's snapshot and delta
INTERRUPT = agui.Interrupt(id="ask-1", reason="confirm", message="Go on?")
FRONTEND_TOOL = {"name": "pick_color", "description": "Pick a color", "result": "blue"}


@pytest.fixture(scope="module")
def host(node: str) -> str:
    return install_host()


def text(message_id: str, *deltas: str) -> list[Any]:
    return [
        agui.TextMessageStartEvent(message_id=message_id),
        *(agui.TextMessageContentEvent(message_id=message_id, delta=d) for d in deltas),
        agui.TextMessageEndEvent(message_id=message_id),
    ]


class HostAgent:
    """Answers by the last message: a resume, a tool result, or the user's word ("tool",
    "frontend", "state", "think", "interrupt"; anything else is echoed). Keeps every input."""

    def __init__(self) -> None:
        self.inputs: list[agui.RunAgentInput] = []

    async def __call__(self, run: agui.RunAgentInput) -> AsyncIterator[Any]:
        self.inputs.append(run)
        for event in self.answer(run):
            await asyncio.sleep(0)
            yield event

    def answer(self, run: agui.RunAgentInput) -> list[Any]:
        # ids by the run's number: a resume comes with the interrupted run's runId
        number = len(self.inputs)
        reply = f"reply-{number}"
        if run.resume:
            entry = run.resume[0]
            payload = json.dumps(entry.payload)
            return text(reply, f"resumed {entry.interrupt_id} ", f"{entry.status.value} {payload}")
        last = run.messages[-1]
        if isinstance(last, agui.ToolMessage):
            return text(reply, "the tool said ", str(last.content))
        said = last.content
        if said == "tool":
            call = f"call-{number}"
            return [
                agui.ToolCallStartEvent(tool_call_id=call, tool_call_name="lookup"),
                agui.ToolCallArgsEvent(tool_call_id=call, delta='{"q": '),
                agui.ToolCallArgsEvent(tool_call_id=call, delta='"answer"}'),
                agui.ToolCallEndEvent(tool_call_id=call),
                agui.ToolCallResultEvent(
                    message_id=f"result-{call}", tool_call_id=call, content="42"
                ),
                *text(reply, "the answer ", "is 42"),
            ]
        if said == "frontend":
            if not any(tool.name == FRONTEND_TOOL["name"] for tool in run.tools):
                return text(reply, "no frontend tool")
            call = f"call-{number}"
            return [
                agui.ToolCallStartEvent(tool_call_id=call, tool_call_name=FRONTEND_TOOL["name"]),
                agui.ToolCallArgsEvent(tool_call_id=call, delta='{"color": "red"}'),
                agui.ToolCallEndEvent(tool_call_id=call),
            ]
        if said == "state":
            return [
                agui.StateSnapshotEvent(snapshot={"count": 1, "items": ["a"]}),
                agui.StateDeltaEvent(
                    delta=[
                        agui.ReplaceOperation(path="/count", value=2),
                        agui.AddOperation(path="/items/-", value="b"),
                    ]
                ),
                *text(reply, "state ", "set"),
            ]
        if said == "think":
            thought = f"thought-{number}"
            return [
                agui.ReasoningStartEvent(message_id=thought),
                agui.ReasoningMessageStartEvent(message_id=thought),
                agui.ReasoningMessageContentEvent(message_id=thought, delta="pondering"),
                agui.ReasoningMessageEndEvent(message_id=thought),
                agui.ReasoningEndEvent(message_id=thought),
                *text(reply, "thought ", "done"),
            ]
        if said == "interrupt":
            return [
                *text(reply, "need ", "approval"),
                agui.RunFinishedEvent(
                    thread_id=run.thread_id,
                    run_id=run.run_id,
                    outcome=agui.RunFinishedInterruptOutcome(interrupts=(INTERRUPT,)),
                ),
            ]
        return text(reply, "echo: ", str(said))


@contextmanager
def agui_server(
    store: str | None, compat: str = "auto", agent: Any = None
) -> Iterator[tuple[str, Any, Requests]]:
    agent = agent or HostAgent()
    app = Requests(AgentApp(agent, path="/agent", store=store, compat=compat))
    with live_server(app) as base:
        yield base + "/agent", agent, app


class ResumeRunIdTaken(AssertionError):
    """The resume request got 409 "run ... was already started" (as it did before agui started
    such a resume as a new run): useInterrupt sends the resume
    with the interrupted run's runId, and a server with a store keeps one run per id (a run id
    already used answers 409, docs/durable-runs.md). CopilotKit shows RUN_ERROR INCOMPLETE_STREAM
    and the interrupt stays pending."""


def refuse_reused_run_id(report: Any, seen: str) -> None:
    """Raise ResumeRunIdTaken when the last request to this server was that 409."""
    if posts(report)[-1]["status"] != 409:
        return
    step = report["steps"][-1]
    (error,) = step["errors"]
    assert error["code"] == "INCOMPLETE_STREAM", seen
    assert "HTTP 409" in error["message"] and "was already started" in error["message"], seen
    assert step["pendingInterrupts"] == report["steps"][-2]["pendingInterrupts"], seen
    raise ResumeRunIdTaken(seen)


def store_url(store: str | None, tmp_path: Path) -> str | None:
    return f"sqlite:///{tmp_path / 'runs.db'}" if store == "sqlite" else store


def roles(step: dict[str, Any]) -> list[str]:
    return [message["role"] for message in step["messages"]]


def posts(report: Any) -> list[dict[str, Any]]:
    return [r for r in report["traffic"]["agent"] if r["method"] == "POST"]


STORES = [
    pytest.param(None, id="no-store"),
    pytest.param("memory://", id="memory"),
    pytest.param("sqlite", id="sqlite"),
]
RESUME_STORES = [
    pytest.param(None, id="no-store"),
    pytest.param("memory://", id="memory"),
    pytest.param("sqlite", id="sqlite"),
]
CASES = [
    pytest.param(None, "auto", id="no-store"),
    pytest.param("memory://", "auto", id="memory"),
    pytest.param("sqlite", "auto", id="sqlite"),
    pytest.param(None, "0.0.59", id="no-store-compat-0.0.59"),
    pytest.param("memory://", "0.0.59", id="memory-compat-0.0.59"),
]


@pytest.mark.parametrize(("store", "compat"), CASES)
def test_two_turns_of_text_on_one_thread(
    node: str, host: str, tmp_path: Path, store: str | None, compat: str
) -> None:
    """Two turns on one thread: each reply reaches the client's messages, and the second
    request carries the first turn's history (the runtime sends the client's messages)."""
    with agui_server(store_url(store, tmp_path), compat) as (url, agent, requests):
        report = copilotkit(node, host, url, [{"send": "hello"}, {"send": "again"}])
        seen = summary(report, requests)
        first, second = report["steps"]
        assert first["reply"] == "echo: hello" and first["errors"] == [], seen
        assert second["reply"] == "echo: again" and second["errors"] == [], seen
        assert second["coreErrors"] == [] and second["thrown"] is None, seen
        assert [m["text"] for m in second["messages"]] == [
            "hello",
            "echo: hello",
            "again",
            "echo: again",
        ], seen
        # what this server got: the 0.0.59 client names no protocol version; the second run's
        # input is the whole conversation so far
        assert [r["protocolVersion"] for r in posts(report)] == [None, None], seen
        assert len(agent.inputs) == 2, seen
        history = [(m.role.value, m.content) for m in agent.inputs[1].messages]
        assert history == [("user", "hello"), ("assistant", "echo: hello"), ("user", "again")]
        assert agent.inputs[0].thread_id == agent.inputs[1].thread_id == THREAD


@pytest.mark.parametrize(("store", "compat"), CASES)
def test_a_backend_tool_call_reaches_the_client(
    node: str, host: str, tmp_path: Path, store: str | None, compat: str
) -> None:
    """The agent's TOOL_CALL_* and TOOL_CALL_RESULT events become, in CopilotKit's messages, an
    assistant message with the call and a tool message with its result, then the text."""
    with agui_server(store_url(store, tmp_path), compat) as (url, _agent, requests):
        report = copilotkit(node, host, url, [{"send": "tool"}])
        seen = summary(report, requests)
        (step,) = report["steps"]
        assert step["errors"] == [] and step["coreErrors"] == [], seen
        for kind in ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"):
            assert kind in step["events"], seen
        call = next(m for m in step["messages"] if m.get("toolCalls"))
        assert [(c["name"], json.loads(c["arguments"])) for c in call["toolCalls"]] == [
            ("lookup", {"q": "answer"})
        ], seen
        result = next(m for m in step["messages"] if m["role"] == "tool")
        assert result["toolCallId"] == call["toolCalls"][0]["id"] and result["text"] == "42"
        assert step["reply"] == "the answer is 42", seen
        assert report["toolCalls"] == [], seen  # a backend tool: CopilotKit runs nothing


@pytest.mark.parametrize(("store", "compat"), CASES)
def test_a_frontend_tool_declared_by_copilotkit_is_called_and_answered(
    node: str, host: str, tmp_path: Path, store: str | None, compat: str
) -> None:
    """A tool registered with `copilotkit.addTool` is declared in the run's tools; the agent
    calls it, CopilotKit runs its handler and sends the result in a follow-up run on the same
    thread, which this server answers."""
    with agui_server(store_url(store, tmp_path), compat) as (url, agent, requests):
        report = copilotkit(node, host, url, [{"send": "frontend"}], tools=[FRONTEND_TOOL])
        seen = summary(report, requests)
        (step,) = report["steps"]
        assert step["errors"] == [] and step["coreErrors"] == [], seen
        assert [(c["name"], c["args"]) for c in report["toolCalls"]] == [
            ("pick_color", {"color": "red"})
        ], seen
        assert len(agent.inputs) == 2 and len(step["runIds"]) == 2, seen  # the follow-up
        _first, follow_up = agent.inputs
        for run in agent.inputs:
            (tool,) = run.tools
            assert tool.name == "pick_color", seen
            assert tool.parameters["properties"] == {"color": {"type": "string"}}, seen
        answer = follow_up.messages[-1]
        assert isinstance(answer, agui.ToolMessage) and answer.content == "blue", seen
        assert answer.tool_call_id == "call-1", seen
        assert step["reply"] == "the tool said blue", seen


@pytest.mark.parametrize(("store", "compat"), CASES)
def test_state_snapshot_and_delta_reach_the_copilotkit_agent(
    node: str, host: str, tmp_path: Path, store: str | None, compat: str
) -> None:
    """STATE_SNAPSHOT then STATE_DELTA give the CopilotKit agent's state, and the next turn
    sends that state back to this server."""
    with agui_server(store_url(store, tmp_path), compat) as (url, agent, requests):
        report = copilotkit(node, host, url, [{"send": "state"}, {"send": "hello"}])
        seen = summary(report, requests)
        first, second = report["steps"]
        assert "STATE_SNAPSHOT" in first["events"] and "STATE_DELTA" in first["events"], seen
        assert first["state"] == STATE and first["errors"] == [], seen
        assert first["coreErrors"] == [], seen
        assert "Failed to apply state patch" not in report["stderr"], seen
        assert agent.inputs[1].state == STATE, seen
        assert second["reply"] == "echo: hello" and second["state"] == STATE, seen


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("compat", ["auto", "0.0.59"])
def test_reasoning_reaches_copilotkit_with_compat_0_0_59_only(
    node: str, host: str, tmp_path: Path, store: str | None, compat: str
) -> None:
    """REASONING_* events: the default compat gives the 0.0.59 client (which names no protocol
    version) the 0.0.35 era's stream, without them; compat="0.0.59" keeps them, and CopilotKit
    holds the reasoning message."""
    with agui_server(store_url(store, tmp_path), compat) as (url, _agent, requests):
        report = copilotkit(node, host, url, [{"send": "think"}])
        seen = summary(report, requests)
        (step,) = report["steps"]
        assert step["errors"] == [] and step["coreErrors"] == [], seen
        assert step["reply"] == "thought done", seen
        reasoning = [m["text"] for m in step["messages"] if m["role"] == "reasoning"]
        if compat == "0.0.59":
            assert "REASONING_MESSAGE_CONTENT" in step["events"], seen
            assert reasoning == ["pondering"], seen
        else:
            assert not any(e.startswith("REASONING") for e in step["events"]), seen
            assert reasoning == [], seen


@pytest.mark.parametrize(
    ("store", "compat"),
    [
        pytest.param(None, "auto", id="no-store"),
        pytest.param("memory://", "auto", id="memory"),
        pytest.param("sqlite", "auto", id="sqlite"),
        pytest.param(None, "0.0.59", id="no-store-compat-0.0.59"),
    ],
)
def test_an_interrupt_and_its_resume_through_copilotkit(
    node: str, host: str, tmp_path: Path, store: str | None, compat: str
) -> None:
    """RUN_FINISHED with outcome interrupt: CopilotKit's agent holds the pending interrupt;
    the answer useInterrupt sends (`resume`, and the interrupted run's runId) reaches this
    server, which answers the resume (with a store, as a new run); nothing is pending after
    it."""
    with agui_server(store_url(store, tmp_path), compat) as (url, agent, requests):
        steps = [{"send": "interrupt"}, {"resume": {"ok": True}}]
        report = copilotkit(node, host, url, steps)
        seen = summary(report, requests)
        interrupted, resumed = report["steps"]
        assert interrupted["errors"] == [] and interrupted["coreErrors"] == [], seen
        assert interrupted["reply"] == "need approval", seen
        assert [i["id"] for i in interrupted["interrupts"]] == ["ask-1"], seen
        assert interrupted["interrupts"][0]["message"] == "Go on?", seen
        assert interrupted["pendingInterrupts"] == ["ask-1"], seen

        assert resumed["decision"] == "resume" and resumed["thrown"] is None, seen
        refuse_reused_run_id(report, seen)
        assert resumed["errors"] == [] and resumed["coreErrors"] == [], seen
        run = agent.inputs[-1]
        assert [(e.interrupt_id, e.status.value, e.payload) for e in run.resume or ()] == [
            ("ask-1", "resolved", {"ok": True})
        ], seen
        # useInterrupt pins the resume on the interrupted run's id; a store, which holds that
        # run, starts the resume as the new run it is (the thread's second: `~2`)
        first = agent.inputs[0].run_id
        assert run.run_id == (first if store is None else f"{first}~2"), seen
        assert resumed["reply"] == 'resumed ask-1 resolved {"ok": true}', seen
        assert resumed["pendingInterrupts"] == [], seen


def test_a_turn_while_an_interrupt_is_pending_is_refused_by_copilotkit(
    node: str, host: str
) -> None:
    """CopilotKit's own client refuses a plain turn while an interrupt is pending (its 0.0.59
    AbstractAgent: "Thread has 1 pending interrupt(s) not addressed by resume"): no request."""
    with agui_server(None) as (url, agent, requests):
        report = copilotkit(node, host, url, [{"send": "interrupt"}, {"send": "hello"}])
        seen = summary(report, requests)
        interrupted, refused = report["steps"]
        assert interrupted["pendingInterrupts"] == ["ask-1"], seen
        assert len(agent.inputs) == 1 and len(posts(report)) == 1, seen
        messages = [e["message"] for e in refused["coreErrors"]]
        assert any("pending interrupt(s) not addressed by resume: ask-1" in m for m in messages)
        assert refused["pendingInterrupts"] == ["ask-1"], seen


@pytest.mark.parametrize("tool_results", [True, False], ids=["with-tool-message", "resume-only"])
@pytest.mark.parametrize("store", RESUME_STORES)
def test_a_model_agent_approval_through_copilotkit(
    node: str, host: str, tmp_path: Path, store: str | None, tool_results: bool
) -> None:
    """The demo agent (a ModelAgent whose tool asks for approval when forwardedProps say
    {"interrupt": true}) interrupts with reason "tool_call". useInterrupt answers it with a
    resume entry AND a tool message for the call holding the answer as JSON; ModelAgent takes
    that message for the client's record of its answer (it refused it with 400 "tool call ...
    already has a result" before), runs the approved call and answers. The same without the
    tool message."""
    steps: list[dict[str, Any]] = [
        {"send": "hi", "forwardedProps": {"interrupt": True}},
        {"resume": {"approved": True}, "toolResults": tool_results},
    ]
    with agui_server(store_url(store, tmp_path), agent=DemoAgent(delay=0)) as (url, _, requests):
        report = copilotkit(node, host, url, steps)
        seen = summary(report, requests)
        interrupted, resumed = report["steps"]
        (interrupt,) = interrupted["interrupts"]
        assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"], seen
        assert resumed["decision"] == "resume", seen
        if tool_results:
            tool_message = next(m for m in resumed["messages"] if m["role"] == "tool")
            assert json.loads(tool_message["text"]) == {"approved": True}, seen
        refuse_reused_run_id(report, seen)
        assert posts(report)[-1]["status"] == 200, seen
        assert resumed["errors"] == [] and resumed["coreErrors"] == [], seen
        assert resumed["reply"] == "You said: hi (2 characters).", seen
        assert resumed["pendingInterrupts"] == [], seen


@pytest.mark.parametrize("store", STORES)
def test_copilotkit_connect_is_served_by_the_runtime_not_by_agui(
    node: str, host: str, tmp_path: Path, store: str | None
) -> None:
    """A reloaded page connects to its thread: the runtime's InMemoryAgentRunner replays its
    own history, and this server sees no request; after the runtime forgets its threads (a
    restart) the connect shows an empty thread, even when this server's store holds it."""
    steps = [{"send": "hello"}, {"reload": True}, {"reload": True, "clearRuntime": True}]
    with agui_server(store_url(store, tmp_path)) as (url, _agent, requests):
        report = copilotkit(node, host, url, steps)
        seen = summary(report, requests)
        sent, reloaded, restarted = report["steps"]
        assert sent["reply"] == "echo: hello", seen
        connects = [r for r in report["traffic"]["runtime"] if r["path"].endswith("/connect")]
        assert len(connects) == 3 and all(r["status"] == 200 for r in connects), seen
        assert [m["text"] for m in reloaded["messages"]] == ["hello", "echo: hello"], seen
        assert reloaded["errors"] == [] and reloaded["coreErrors"] == [], seen
        assert restarted["messages"] == [], seen
        assert [(r["method"], r["path"]) for r in requests.seen] == [("POST", "/agent")], seen
        if store is not None:  # what a connect to this server would have had
            response = httpx.get(f"{url}/threads/{THREAD}/events", timeout=TIMEOUT)
            assert response.status_code == 200, response.text
            snapshot = next(e for e in sse_events(response) if e["type"] == "MESSAGES_SNAPSHOT")
            texts = [m.get("content") for m in snapshot["messages"]]
            assert texts == ["hello", "echo: hello"], (snapshot, seen)
