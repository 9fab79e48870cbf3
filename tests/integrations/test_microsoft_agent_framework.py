"""Microsoft Agent Framework (agent-framework-ag-ui) through agui: examples/microsoft_agent_framework.py.

The example is an `agent_framework.Agent` on a scripted chat client (offline, deterministic),
wrapped by agent-framework-ag-ui's `AgentFrameworkAgent` and made an agui agent by
`agui.adapters.AgentFrameworkAgent`. Besides the shared checks of the matrix:

* the approval round trip: book_trip (approval_mode="always_require") pauses the run with an
  interrupt; the client approves it (`resume`), and the next run runs the tool and answers;
* the native endpoint: `add_agent_framework_fastapi_endpoint` serving the example's wrapper,
  against `agui serve` serving the example, the same requests;
* the dependency conflict this package brings: agent-framework-ag-ui requires
  ag-ui-protocol<0.2 (pip replaces 1.0 without a word, `pip check` is content), and
  `AgUiProtocolAgent` refuses the old release at once, naming who requires it;
* the adapter's own rules: what it wraps, what it refuses.

The example's module is not named agent_framework.py: `agui serve` puts examples/ first on
sys.path, and the module would then be imported in place of the agent_framework package.

Needs agent-framework-ag-ui (`nox -s integrations` installs the pinned releases); skipped
without it, unless AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("agent_framework", "agent_framework_ag_ui")

import agent_framework_ag_ui  # noqa: E402
from agent_framework import WorkflowBuilder  # noqa: E402
from fastapi import FastAPI  # noqa: E402

import agui  # noqa: E402
from agui.adapters import AgentFrameworkAgent, AgUiProtocolAgent  # noqa: E402
from agui.adapters.ag_ui_protocol import _rules_out_1  # noqa: E402
from agui.stream.lifecycle import AGENT_FAILED  # noqa: E402
from tests.conftest import ROOT, live_server  # noqa: E402
from tests.integrations.matrix import (  # noqa: E402
    EXAMPLES,
    TIMEOUT,
    Framework,
    MatrixChecks,
    NativeChecks,
    events_of,
    load_example,
    normalized,
    run_body,
    served,
    texts,
)
from tests.test_docs import block_containing  # noqa: E402

FRAMEWORK = Framework(
    key="microsoft_agent_framework",
    name="Microsoft Agent Framework",
    packages=("agent-framework-ag-ui", "agent-framework-core"),
    question="What is the weather in Paris?",
    answer="Sunny in Paris.",
    tool="get_weather",
    follow_up="Thanks! What did I ask first?",
    follow_up_answer="You first asked: What is the weather in Paris?",
    failing_question="What is the weather in Atlantis?",
    # Agent Framework's function invocation hands a tool's exception to the model as the
    # result "Error: Function failed." (include_detailed_errors=False, its default) and logs
    # the exception's type only; the run goes on.
    tool_errors="model",
    capabilities={"identity": {"name": "weather", "type": "agent-framework"}},
    native_fails={"resume after a cut": "no frame ids"},
)


def example() -> ModuleType:
    """examples/microsoft_agent_framework.py, imported afresh (its wrapper holds approval state)."""
    return load_example(FRAMEWORK)


class TestMicrosoftAgentFramework(MatrixChecks, NativeChecks):
    framework = FRAMEWORK

    @pytest.fixture(scope="class")
    @classmethod
    def native_url(cls) -> Iterator[str]:
        """The example's wrapper served as agent-framework-ag-ui serves it: its FastAPI
        endpoint (single_user: it requires one authorization mode to be named)."""
        app = FastAPI()
        agent_framework_ag_ui.add_agent_framework_fastapi_endpoint(
            app, example().agent.runner, "/agent", single_user=True
        )
        with live_server(app) as base:
            yield base + "/agent"

    @pytest.mark.matrix("approval")
    def test_an_approval_round_trip(self) -> None:
        """book_trip needs a person's approval: the first run ends in an interrupt naming the
        call (and the tool has not run: no result); the client approves it, and the next run
        runs the tool and answers with its result."""
        with served(FRAMEWORK) as url:

            async def go() -> tuple[agui.Conversation, Any, Any]:
                conversation = agui.Conversation(thread_id="thread-approval")
                async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
                    paused = await conversation.run(agent, "Please book a trip to Rome")
                    assert paused is not None and paused.outcome == "interrupt", paused
                    before = conversation.messages_json()
                    (interrupt,) = paused.interrupts
                    conversation.resolve(interrupt.id, {"approved": True})
                    done = await conversation.run(agent)
                return conversation, (paused, before), done

            conversation, (paused, before), done = asyncio.run(go())
        (interrupt,) = paused.interrupts
        assert interrupt.reason == "tool_call"
        calls = {c["id"]: c["function"] for m in before for c in m.get("toolCalls", [])}
        assert calls[interrupt.tool_call_id] == {
            "name": "book_trip",
            "arguments": json.dumps({"city": "Rome"}),
        }
        assert [m for m in before if m["role"] == "tool"] == []  # not run before the answer
        assert done is not None and done.outcome == "success", done
        messages = conversation.messages_json()
        results = [m for m in messages if m["role"] == "tool"]
        assert [(m["toolCallId"], m["content"]) for m in results] == [
            (interrupt.tool_call_id, "Booked a trip to Rome")
        ]
        assert texts(messages, "assistant")[-1] == "Booked a trip to Rome."
        assert conversation.pending_interrupts == ()
        assert conversation.warnings == []

    @pytest.mark.matrix("approval")
    def test_a_refused_approval_does_not_run_the_tool(self) -> None:
        """The client says no: the next run ends without the tool's result."""
        with served(FRAMEWORK) as url:

            async def go() -> agui.Conversation:
                conversation = agui.Conversation(thread_id="thread-refused")
                async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
                    paused = await conversation.run(agent, "Please book a trip to Rome")
                    assert paused is not None and paused.outcome == "interrupt", paused
                    conversation.resolve(paused.interrupts[0].id, {"approved": False})
                    done = await conversation.run(agent)
                    assert done is not None and done.outcome == "success", done
                return conversation

            conversation = asyncio.run(go())
        messages = conversation.messages_json()
        assert "Booked a trip to Rome" not in json.dumps(messages)
        assert conversation.pending_interrupts == ()

    @pytest.mark.matrix("native endpoint parity")
    def test_the_native_endpoint_sends_the_same_events(self) -> None:
        """agent-framework-ag-ui's own FastAPI endpoint serving the example's wrapper, and agui
        serve serving the example: the same events for the same requests (ids and timestamps
        aside), a tool run, an approval and its answer, except for what agui adds on purpose:
        RUN_STARTED declares protocolVersion (the endpoint's 0.1 models have no such member)."""
        app = FastAPI()
        # single_user: the endpoint requires one authorization mode to be named
        agent_framework_ag_ui.add_agent_framework_fastapi_endpoint(
            app, example().agent.runner, "/agent", single_user=True
        )
        runs = {
            "weather": run_body("thread-parity-1", "run-1", FRAMEWORK.question),
            "approval": run_body("thread-parity-2", "run-2", "Please book a trip to Rome"),
        }
        with live_server(app) as base, served(FRAMEWORK) as url:
            native = {name: events_of(base + "/agent", body) for name, body in runs.items()}
            ours = {name: events_of(url, body) for name, body in runs.items()}
            native["approved"] = events_of(base + "/agent", approve(runs["approval"], native))
            ours["approved"] = events_of(url, approve(runs["approval"], ours))
        for name in [*runs, "approved"]:
            assert native[name][0]["type"] == "RUN_STARTED", name
            assert "protocolVersion" not in native[name][0]
            assert ours[name][0].pop("protocolVersion") == agui.PROTOCOL_VERSION
            assert normalized(ours[name]) == normalized(native[name]), name
        assert native["approval"][-1]["outcome"]["type"] == "interrupt"
        assert [e for e in native["approved"] if e["type"] == "TOOL_CALL_RESULT"]


def approve(body: dict[str, Any], events: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The request that approves the interrupt the approval run of `events` ended with."""
    (interrupt,) = events["approval"][-1]["outcome"]["interrupts"]
    snapshot = [e for e in events["approval"] if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    return body | {
        "runId": "run-3",
        "messages": snapshot["messages"],
        "resume": [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ],
    }


# ── the adapter ────────────────────────────────────────────────────────────────────────────────


@pytest.fixture
def url() -> Iterator[str]:
    """The example's agent, imported here, behind an AgentApp in this process."""
    with live_server(agui.AgentApp(example().agent, path="/agent"), lifespan="off") as base:
        yield base + "/agent"


def test_ag_ui_protocol_0_1_is_refused_when_an_official_adapter_is_built() -> None:
    """agent-framework-ag-ui requires ag-ui-protocol<0.2, so pip installed 0.1 here (replacing
    1.0 if it was there, and `pip check` finds nothing wrong). AgUiProtocolAgent refuses it when
    built, naming the release, who requires it and what to do, rather than failing every run
    whose input leaves out what 0.1 requires."""
    installed = importlib.metadata.version("ag-ui-protocol")
    assert installed.startswith("0.1."), installed
    requires = importlib.metadata.requires("agent-framework-ag-ui") or []
    (pin,) = [r for r in requires if r.startswith("ag-ui-protocol")]
    assert "<0.2" in pin, pin
    with pytest.raises(ImportError) as raised:
        AgUiProtocolAgent(example().agent.runner)
    message = str(raised.value)
    maf = importlib.metadata.version("agent-framework-ag-ui")
    assert f"needs ag-ui-protocol 1.0 or newer, but {installed} is installed" in message
    assert f"agent-framework-ag-ui {maf} requires {pin}" in message
    assert "use agui.adapters.AgentFrameworkAgent" in message
    assert "pip install 'ag-ui-protocol>=1.0'" in message


@pytest.mark.parametrize(
    ("specifier", "rules_out"),
    [
        ("<0.2,>=0.1.19", True),  # agent-framework-ag-ui 1.7.0's
        ("<1", True),
        ("<=0.9", True),
        ("==0.1.22", True),
        ("~=0.1", True),
        (">=0.1.10", False),  # ag-ui-langgraph's kind: 1.0 satisfies it
        ("<1.0.1", False),
        ("<=1.0", False),
        (">=1.0,<2", False),
    ],
)
def test_which_requirements_hold_ag_ui_protocol_back(specifier: str, rules_out: bool) -> None:
    """The refusal names only the requirements that exclude 1.0."""
    assert _rules_out_1(specifier) is rules_out


def test_an_input_without_what_0_1_requires_runs(url: str) -> None:
    """A 1.0 client may leave out tools, context, forwardedProps and state; the adapter fills
    them in for agent-framework-ag-ui (its 0.1 models require them), and the tool's state
    update reaches the client."""
    body = {
        "threadId": "thread-bare",
        "runId": "run-bare",
        "messages": [{"id": "u1", "role": "user", "content": FRAMEWORK.question}],
    }
    events = events_of(url, body)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"] == [
        {"last_city": "Paris"}
    ]
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == [
        "Sunny ",
        "in ",
        "Paris.",
    ]


def test_a_failing_tool_gives_the_model_no_detail(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Beyond the matrix's check (no RUN_ERROR carries the secret): the secret is in no event at
    all, the tool's result is Agent Framework's generic text, and its log names only the
    exception's type (include_detailed_errors is off by default)."""
    events = events_of(url, run_body("thread-atlantis", "run-atlantis", FRAMEWORK.failing_question))
    assert FRAMEWORK.secret not in json.dumps(events)
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["Error: Function failed."]
    assert events[-1]["type"] == "RUN_FINISHED"
    logged = [r.getMessage() for r in caplog.records]
    assert "Function get_weather failed (ConnectionError)." in logged, logged
    assert not [line for line in logged if FRAMEWORK.secret in line]


def test_the_state_update_reaches_a_conversation(url: str) -> None:
    conversation = agui.Conversation(thread_id="thread-state")
    result = asyncio.run(conversation.run(agui.HttpAgent(url), FRAMEWORK.question))
    assert result is not None and result.outcome == "success"
    assert conversation.state == {"last_city": "Paris"}
    assert conversation.warnings == []


@pytest.mark.parametrize("error_messages", [False, True])
def test_a_run_error_of_the_agent_is_withheld(
    error_messages: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """agent-framework-ag-ui ends a run in RUN_ERROR itself when a resume names no pending
    approval; the client gets agui's generic message with the agent's code, the agent's message
    going to the log, unless error_messages=True (as AgUiProtocolAgent does)."""
    agent = AgentFrameworkAgent(example().agent.runner, error_messages=error_messages)
    body = run_body("thread-resume", "run-resume", "hi") | {
        "resume": [{"interruptId": "nope", "status": "resolved", "payload": {"approved": True}}]
    }
    with live_server(agui.AgentApp(agent, path="/agent"), lifespan="off") as base:
        events = events_of(base + "/agent", body)
    theirs = "No pending approval interrupt found for resume interruptId 'nope'."
    error = events[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "APPROVAL_RESUME_NOT_FOUND", error
    assert error["message"] == (theirs if error_messages else AGENT_FAILED)
    logged = [r.getMessage() for r in caplog.records if r.name == "agui.adapters"]
    assert any(theirs in line for line in logged) is not error_messages, logged


def test_what_it_wraps() -> None:
    """An agent is wrapped as the native endpoint wraps it, with the options given; a wrapper
    is used as it is (options for it are refused); a Workflow gets agent-framework-ag-ui's
    workflow wrapper; anything else is refused, saying what it takes."""
    served_agent = example().agent
    wrapper = served_agent.runner
    assert isinstance(wrapper, agent_framework_ag_ui.AgentFrameworkAgent)
    schema = {"last_city": {"type": "string"}}
    fresh = AgentFrameworkAgent(wrapper.agent, state_schema=schema, require_confirmation=False)
    assert isinstance(fresh.runner, agent_framework_ag_ui.AgentFrameworkAgent)
    assert fresh.runner.agent is wrapper.agent
    assert fresh.runner.config.state_schema == schema
    assert fresh.runner.config.require_confirmation is False
    assert AgentFrameworkAgent(wrapper).runner is wrapper
    with pytest.raises(TypeError, match=r"already wrapped; give its options \(state_schema\)"):
        AgentFrameworkAgent(wrapper, state_schema=schema)
    with pytest.raises(TypeError, match=r"^object is not an Agent Framework agent: expected"):
        AgentFrameworkAgent(object())

    workflow = WorkflowBuilder(start_executor=wrapper.agent, name="flow").build()
    flow = AgentFrameworkAgent(workflow)
    assert isinstance(flow.runner, agent_framework_ag_ui.AgentFrameworkWorkflow)
    conversation = agui.Conversation()
    result = asyncio.run(conversation.run(flow, "Hello"))
    assert result is not None and result.outcome == "success"
    assert texts(conversation.messages_json(), "assistant") == ["You first asked: Hello"]


def test_its_capabilities_say_who_it_is() -> None:
    capabilities = agui.to_json(example().agent.capabilities)
    assert capabilities == {
        "identity": {
            "name": "weather",
            "type": "agent-framework",
            "description": "Tells the weather and books trips.",
        }
    }


def test_an_approval_is_lost_with_the_process() -> None:
    """The wrapper keeps pending approvals in memory: answered to another one (a restarted
    server, another worker), the run ends in RUN_ERROR APPROVAL_RESUME_NOT_FOUND."""

    async def go() -> Any:
        conversation = agui.Conversation(thread_id="thread-lost")
        paused = await conversation.run(example().agent, "Please book a trip to Rome")
        assert paused is not None and paused.outcome == "interrupt", paused
        conversation.resolve(paused.interrupts[0].id, {"approved": True})
        return await conversation.run(example().agent)

    result = asyncio.run(go())
    assert result is not None and result.outcome == "error", result
    assert (result.error_code, result.error_message) == ("APPROVAL_RESUME_NOT_FOUND", AGENT_FAILED)


def test_the_page_holds_the_example() -> None:
    """docs/integrations/microsoft_agent_framework.md shows examples/microsoft_agent_framework.py
    as it is (the tests serve the file; the recipe test serves the page's copy)."""
    page = ROOT / "docs" / "integrations" / "microsoft_agent_framework.md"
    block = block_containing(page, "class ScriptedChatClient(")
    assert block == (EXAMPLES / "microsoft_agent_framework.py").read_text("utf-8")
