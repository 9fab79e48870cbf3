"""Google ADK through agui: examples/adk_example.py (docs/integrations/adk.md), an ADK `LlmAgent` on
a scripted offline model, run by ag-ui-adk's `ADKAgent` and made an agui agent by
`agui.adapters.AgUiProtocolAgent`, served by `agui serve` and read by the clients users have: the
shared checks of the integration matrix (tests/integrations/matrix.py), and what ADK has of its
own:

* the approval: `book_trip` is a FunctionTool with require_confirmation=True; ADK asks for a
  confirmation (its `adk_request_confirmation` call), which ag-ui-adk (emit_interrupt_outcome)
  turns into RUN_FINISHED with an interrupt outcome, the tool not run; the client answers the
  interrupt, and the next run's `resume` runs the tool (approved) or not (refused);
* the state update: `get_weather` writes the city into the ADK session's state, which reaches
  the client (STATE_DELTA, then STATE_SNAPSHOT);
* the capabilities `ADKAgent(capabilities=...)` declares, forwarded by AgUiProtocolAgent and
  merged with agui's transport (before, GET /capabilities answered only the transport);
* the native endpoint: ag-ui-adk's `add_adk_fastapi_endpoint` sends the same events as agui for
  the same input, and the same capabilities, but for the RUN_ERROR of a failing tool, whose
  message agui withholds.

Needs ag-ui-adk, google-adk and ag-ui-protocol (`nox -s integrations` installs the pinned
versions), node and the npm packages of tests/interop under .interop/; skipped without them,
unless AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("ag_ui_adk", "google.adk", "ag_ui")

import httpx  # noqa: E402
from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint  # noqa: E402
from fastapi import FastAPI  # noqa: E402

import agui  # noqa: E402
from agui.adapters import AgUiProtocolAgent  # noqa: E402
from agui.stream.lifecycle import AGENT_FAILED  # noqa: E402
from tests.conftest import live_server  # noqa: E402
from tests.integrations.matrix import (  # noqa: E402
    TIMEOUT,
    Framework,
    MatrixChecks,
    NativeChecks,
    events_of,
    load_example,
    normalized,
    run_body,
    texts,
)
from tests.usage.support import Server  # noqa: E402

# ADKAgent builds ADK's InMemoryCredentialService by default, which ADK marks experimental with a
# UserWarning (once per process); the tests' warnings are errors.
pytestmark = pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\]:UserWarning")

CAPABILITIES = {
    "identity": {"name": "weather", "type": "google-adk"},
    "humanInTheLoop": {"supported": True, "approvals": True},
}
"""What the example's ADKAgent declares (wire JSON)."""

FRAMEWORK = Framework(
    key="adk",
    name="Google ADK",
    packages=("ag-ui-adk", "google-adk", "google-genai", "ag-ui-protocol"),
    question="What is the weather in Paris?",
    answer="It is sunny in Paris.",
    tool="get_weather",
    follow_up="Which city did I ask about?",
    follow_up_answer="You asked about Paris.",
    failing_question="What is the weather in Atlantis?",
    module="adk_example",
    # ADK logs a failing tool's exception with its traceback (google_adk's node runner and
    # ag-ui-adk's background execution), each a chain ending in the tool's exception.
    tool_tracebacks=True,
    capabilities=CAPABILITIES,
    native_fails={
        "resume after a cut": "no frame ids",
        "tool exception withheld": "password=hunter2-db-password",
    },
)


PENDING = '{"error": "This tool call requires confirmation, please approve or reject."}'
"""The result ADK gives a call held back for a confirmation, until it is answered."""


def example() -> ModuleType:
    """examples/adk_example.py, imported afresh (its ADKAgent keeps sessions in memory)."""
    return load_example(FRAMEWORK)


def run(agent: agui.HttpAgent, conversation: agui.Conversation, message: str | None) -> Any:
    result = asyncio.run(conversation.run(agent, message))
    assert result is not None
    return result


def tool_results(conversation: agui.Conversation) -> list[str]:
    return texts(conversation.messages_json(), "tool")


class TestADK(MatrixChecks, NativeChecks):
    framework = FRAMEWORK

    @pytest.fixture(scope="class")
    @classmethod
    def native_url(cls) -> Iterator[str]:
        """The example's ADKAgent served as ag-ui-adk serves it: its FastAPI endpoint."""
        app = FastAPI()
        add_adk_fastapi_endpoint(app, example().agent.agent, path="/agent")
        with live_server(app) as base:
            yield base + "/agent"

    @pytest.mark.matrix("approval")
    def test_an_approval_round_trip(self, shared: Server) -> None:
        """book_trip needs a person's confirmation: the first run ends in an interrupt for ADK's
        confirmation call, naming the call it holds back (not run: ADK's placeholder result);
        approved, the next run runs the tool and answers with its result."""
        agent = agui.HttpAgent(shared.base + "/agent", timeout=TIMEOUT)
        conversation = agui.Conversation(thread_id="thread-approve")
        asked = run(agent, conversation, "Book a trip to Rome")
        assert asked.outcome == "interrupt", (asked.error_code, asked.error_message)
        (interrupt,) = asked.interrupts
        assert interrupt.reason == "confirmation"
        held = interrupt.metadata["adk"]["originalFunctionCall"]
        assert (held["name"], held["args"]) == ("book_trip", {"city": "Rome"})
        calls = {
            c["id"]: c["function"]["name"]
            for m in conversation.messages_json()
            for c in m.get("toolCalls", [])
        }
        assert calls[interrupt.tool_call_id] == "adk_request_confirmation"
        assert calls[held["id"]] == "book_trip"
        # not run: ADK's placeholder result for the held call
        assert tool_results(conversation) == [PENDING]
        conversation.resolve(interrupt.id, {"approved": True})
        done = run(agent, conversation, None)
        assert done.outcome == "success", (done.error_code, done.error_message)
        # the held call's result, now the tool's, after the placeholder
        assert tool_results(conversation) == [PENDING, '{"result": "Your trip to Rome is booked."}']
        assert texts(conversation.messages_json(), "assistant")[-1] == (
            "Your trip to Rome is booked."
        )
        assert conversation.pending_interrupts == ()
        assert conversation.warnings == []

    @pytest.mark.matrix("approval")
    def test_a_refused_approval_does_not_run_the_tool(self, shared: Server) -> None:
        agent = agui.HttpAgent(shared.base + "/agent", timeout=TIMEOUT)
        conversation = agui.Conversation(thread_id="thread-refuse")
        asked = run(agent, conversation, "Book a trip to Rome")
        assert asked.outcome == "interrupt"
        conversation.resolve(asked.interrupts[0].id, {"approved": False})
        done = run(agent, conversation, None)
        assert done.outcome == "success", (done.error_code, done.error_message)
        assert "booked" not in " ".join(tool_results(conversation))
        assert "booked" not in " ".join(texts(conversation.messages_json(), "assistant"))
        assert conversation.pending_interrupts == ()

    def test_the_state_update_reaches_the_client(self, shared: Server) -> None:
        """The tool's write to the ADK session state is the client's state; the next lookup
        updates it."""
        agent = agui.HttpAgent(shared.base + "/agent", timeout=TIMEOUT)
        conversation = agui.Conversation(thread_id="thread-state")
        run(agent, conversation, "What is the weather in Paris?")
        assert conversation.state["last_city"] == "Paris", conversation.state
        run(agent, conversation, "What is the weather in Oslo?")
        assert conversation.state["last_city"] == "Oslo", conversation.state
        assert conversation.warnings == []

    @pytest.mark.matrix("native endpoint parity")
    def test_the_native_endpoint_sends_the_same_events(self, shared: Server) -> None:
        """ag-ui-adk's own FastAPI endpoint serving the example's ADKAgent, and agui serve
        serving the example: the same events for the same requests (ids and timestamps aside) —
        a tool run, an approval and its answer, a failing tool — except what agui adds on
        purpose (RUN_STARTED's input, recorded with a store) and the failing tool's RUN_ERROR
        message: ADK sends the exception's text, agui its generic message. Both answer the
        declared capabilities (agui adds its transport)."""
        app = FastAPI()
        add_adk_fastapi_endpoint(app, example().agent.agent, path="/agent")
        runs = {
            "weather": run_body("thread-parity-1", "run-1", FRAMEWORK.question),
            "approval": run_body("thread-parity-2", "run-2", "Book a trip to Rome"),
            "failing": run_body("thread-parity-3", "run-3", FRAMEWORK.failing_question),
        }
        url = shared.base + "/agent"
        with live_server(app) as base:
            native = {name: events_of(base + "/agent", body) for name, body in runs.items()}
            ours = {name: events_of(url, body) for name, body in runs.items()}
            native["approved"] = events_of(base + "/agent", approve(runs["approval"], native))
            ours["approved"] = events_of(url, approve(runs["approval"], ours))
            native_capabilities = httpx.get(base + "/agent/capabilities", timeout=TIMEOUT).json()
        our_capabilities = httpx.get(url + "/capabilities", timeout=TIMEOUT).json()
        secret = f"database unavailable: password={FRAMEWORK.secret}"
        assert native["failing"][-1]["message"] == secret
        assert ours["failing"][-1]["message"] == AGENT_FAILED
        for name in ("weather", "approval", "failing", "approved"):
            # With a store, agui's RUN_STARTED carries the run's input (what it keeps of the run).
            assert ours[name][0].pop("input")["threadId"] == native[name][0]["threadId"]
            mine, theirs = normalized(args_read(ours[name])), normalized(args_read(native[name]))
            if name == "failing":
                assert mine[-1]["type"] == theirs[-1]["type"] == "RUN_ERROR"
                assert mine[-1]["code"] == theirs[-1]["code"] == "BACKGROUND_EXECUTION_ERROR"
                mine, theirs = mine[:-1], theirs[:-1]
            assert mine == theirs, name
        assert native["approval"][-1]["outcome"]["type"] == "interrupt"
        assert [e["content"] for e in native["approved"] if e["type"] == "TOOL_CALL_RESULT"] == [
            '{"result": "Your trip to Rome is booked."}'
        ]
        assert native_capabilities == CAPABILITIES
        assert our_capabilities.pop("transport")["streaming"] is True
        assert our_capabilities == CAPABILITIES


def args_read(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with each TOOL_CALL_ARGS delta parsed (ADK sends a call's arguments in one delta),
    so that the id of the held call in a confirmation's arguments is normalized as ids are."""
    return [
        e | {"delta": json.loads(e["delta"])} if e["type"] == "TOOL_CALL_ARGS" else e
        for e in events
    ]


def approve(body: dict[str, Any], events: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The request that approves the interrupt the approval run of `events` ended with."""
    (interrupt,) = events["approval"][-1]["outcome"]["interrupts"]
    return body | {
        "runId": "run-4",
        "resume": [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ],
    }


# ── the adapter ────────────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def module() -> ModuleType:
    return example()


def test_capabilities_are_asked_of_the_agent_each_time(module: ModuleType) -> None:
    """AgUiProtocolAgent reads ADKAgent.get_capabilities() (a dict of wire JSON) on every
    request; an ADKAgent that declares none gives an empty declaration (only agui's transport
    is served)."""
    agent = AgUiProtocolAgent(
        ADKAgent(adk_agent=module.weather, app_name="caps", user_id="u", capabilities={})
    )
    adk: Any = agent.agent
    assert agui.to_json(asyncio.run(agent.capabilities())) == {}
    adk._capabilities = {"custom": {"predictiveChips": True}}
    assert agui.to_json(asyncio.run(agent.capabilities())) == {"custom": {"predictiveChips": True}}
    bare = AgUiProtocolAgent(ADKAgent(adk_agent=module.weather, app_name="bare", user_id="u"))
    assert bare.agent.get_capabilities() is None  # type: ignore[attr-defined]
    with live_server(agui.AgentApp(bare, path="/agent"), lifespan="off") as base:
        answer = httpx.get(base + "/agent/capabilities", timeout=TIMEOUT).json()
    assert set(answer) == {"transport"}, answer


def test_error_messages_passes_adk_s_run_error_on(module: ModuleType) -> None:
    """By default the failing tool's text stays out of the RUN_ERROR; error_messages=True (for
    development) passes it on."""
    withheld = asyncio.run(agui.Conversation().run(module.agent, FRAMEWORK.failing_question))
    assert withheld is not None and withheld.outcome == "error"
    assert withheld.error_message == AGENT_FAILED
    passed_on = AgUiProtocolAgent(module.agent.agent, error_messages=True)
    result = asyncio.run(agui.Conversation().run(passed_on, FRAMEWORK.failing_question))
    assert result is not None and result.outcome == "error"
    assert result.error_message == f"database unavailable: password={FRAMEWORK.secret}"
