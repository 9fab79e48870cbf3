"""Strands Agents (ag-ui-strands) through agui: examples/strands_example.py
(docs/integrations/strands.md).

The example is a `strands.Agent` on a scripted Strands model (offline, deterministic), wrapped by
ag-ui-strands' `StrandsAgent` and made an agui agent by the plain `agui.adapters.AgUiProtocolAgent`
(StrandsAgent.run takes an `ag_ui.core.RunAgentInput` and yields `ag_ui.core` events). Besides the
shared checks of the matrix (tests/integrations/matrix.py):

* the approval: `book_trip` has `ToolBehavior(interrupt_on_call=True)`; the run ends in
  RUN_FINISHED with an interrupt outcome before the tool runs; the client answers the interrupt
  and the next run's `resume` runs the tool (approved) or not (denied);
* the state update: `get_weather`'s `state_from_result` counts the lookup in the run's state and
  sends it as STATE_SNAPSHOT, which the client's state holds; the next run is handed that state;
* the failing tool: Strands hands the exception's text to the model as the tool's result, which
  ag-ui-strands sends to the client; the example's hook logs it and gives a generic text, so the
  secret is nowhere in the stream, and in the server's log;
* the native endpoint: ag-ui-strands' `create_strands_app` (FastAPI) under uvicorn sends the same
  events as agui for the same input.

Needs ag-ui-strands and strands-agents (`nox -s integrations` installs the pinned releases), node
and the npm packages of tests/interop under .interop/; skipped without them, unless
AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("strands", "ag_ui_strands", "ag_ui")

import agui  # noqa: E402
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
    serving,
    texts,
)
from tests.usage.support import Server  # noqa: E402

FRAMEWORK = Framework(
    key="strands",
    name="Strands Agents",
    packages=("ag-ui-strands", "strands-agents", "ag-ui-protocol"),
    question="What is the weather in Paris?",
    answer="It is sunny in Paris.",
    tool="get_weather",
    follow_up="Which city did I ask about?",
    follow_up_answer="You asked about Paris.",
    failing_question="What is the weather in Atlantis?",
    # Strands turns a tool's exception into the tool's error result and the run goes on (the
    # example's hook makes that result generic and logs the exception).
    tool_errors="model",
    module="strands_example",
    native_fails={"resume after a cut": "no frame ids"},
)


class TestStrands(MatrixChecks, NativeChecks):
    framework = FRAMEWORK

    @pytest.fixture(scope="class")
    @classmethod
    def native_url(cls) -> Iterator[str]:
        """The example's StrandsAgent served as ag-ui-strands serves it: create_strands_app."""
        from ag_ui_strands import create_strands_app

        app = create_strands_app(example().strands_agui, path="/agent", cors_enabled=False)
        with live_server(app) as base:
            yield base + "/agent"


def example() -> ModuleType:
    """examples/strands_example.py, imported afresh (its StrandsAgent caches a Strands agent per
    thread, an approval's checkpoint included)."""
    return load_example(FRAMEWORK)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """The example under `agui serve`, one server for this module's own tests (each on a thread
    of its own): its start, importing Strands, is most of a test's time."""
    with serving(FRAMEWORK) as server:
        yield server


def run(conversation: agui.Conversation, url: str, message: str | None) -> agui.RunResult:
    async def go() -> agui.RunResult:
        async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
            result = await conversation.run(agent, message)
        assert result is not None
        return result

    return asyncio.run(go())


def tool_results(conversation: agui.Conversation) -> list[str]:
    return texts(conversation.messages_json(), "tool")


@pytest.mark.matrix("approval")
def test_an_approval_round_trip(server: Server) -> None:
    """A tool with interrupt_on_call pauses the run (an interrupt for the tool call, the tool
    not run); approved, the next run runs it and answers."""
    url = server.base + "/agent"
    conversation = agui.Conversation(thread_id="thread-approve")
    asked = run(conversation, url, "Book a trip to Rome")
    assert asked.outcome == "interrupt", (asked.error_code, asked.error_message)
    (interrupt,) = asked.interrupts
    assert interrupt.reason == "tool_call"
    assert interrupt.message == "Approve call to book_trip?"
    calls = {
        c["id"]: c["function"] for m in conversation.messages_json() for c in m.get("toolCalls", [])
    }
    assert calls[interrupt.tool_call_id] == {"name": "book_trip", "arguments": '{"city":"Rome"}'}
    assert tool_results(conversation) == []  # not booked yet
    conversation.resolve(interrupt.id, {"approved": True})
    done = run(conversation, url, None)
    assert done.outcome == "success", (done.error_code, done.error_message)
    assert tool_results(conversation) == ['"Your trip to Rome is booked."']
    assert texts(conversation.messages_json(), "assistant")[-1] == "Your trip to Rome is booked."
    assert conversation.pending_interrupts == ()
    assert conversation.warnings == []


def test_a_denied_approval_does_not_run_the_tool(server: Server) -> None:
    url = server.base + "/agent"
    conversation = agui.Conversation(thread_id="thread-deny")
    asked = run(conversation, url, "Book a trip to Rome")
    assert asked.outcome == "interrupt"
    conversation.resolve(asked.interrupts[0].id, {"approved": False})
    done = run(conversation, url, None)
    assert done.outcome == "success", (done.error_code, done.error_message)
    assert "booked" not in json.dumps(conversation.messages_json())
    assert conversation.pending_interrupts == ()


def test_the_state_update_reaches_the_client_and_comes_back(server: Server) -> None:
    """The tool's STATE_SNAPSHOT is the client's state; the next run is given it (the run's
    state, read by state_from_result), so the count goes on."""
    url = server.base + "/agent"
    conversation = agui.Conversation(thread_id="thread-state")
    run(conversation, url, "What is the weather in Paris?")
    assert conversation.state == {"lookups": 1, "last_city": "Paris"}
    run(conversation, url, "What is the weather in Oslo?")
    assert conversation.state == {"lookups": 2, "last_city": "Oslo"}


def test_the_failing_tool_s_text_reaches_only_the_log(server: Server) -> None:
    """Strands gives a failing tool's exception text to the model as the tool's result, and
    ag-ui-strands sends it on (TOOL_CALL_RESULT, MESSAGES_SNAPSHOT): the example's hook makes it
    generic, so the secret is nowhere in the stream, and logs it for the operator."""
    url = server.base + "/agent"
    events = events_of(url, run_body("thread-secret", "run-secret", FRAMEWORK.failing_question))
    assert FRAMEWORK.secret not in json.dumps(events)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == '"Error: the tool failed."'
    assert events[-1]["type"] == "RUN_FINISHED"
    assert not any(e["type"] == "STATE_SNAPSHOT" and e["snapshot"] for e in events)  # no count
    line = f"tool get_weather failed: database unavailable: password={FRAMEWORK.secret}"
    assert server.logged(line), "".join(server.stderr)


# ── ag-ui-strands' own endpoint ────────────────────────────────────────────────────────────────


def approve(body: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """The request that approves the interrupt the run of `events` ended with."""
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    snapshot = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    return body | {
        "runId": body["runId"] + "-approved",
        "messages": snapshot["messages"],
        "resume": [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ],
    }


@pytest.mark.matrix("native endpoint parity")
def test_the_native_endpoint_sends_the_same_events(server: Server) -> None:
    """ag-ui-strands' `create_strands_app` serving the example's StrandsAgent under uvicorn, and
    `agui serve` serving the example: the same events for the same requests (ids and timestamps
    aside): a tool call with its state update, an approval and its answer, a failing tool."""
    from ag_ui_strands import create_strands_app

    app = create_strands_app(example().strands_agui, path="/agent", cors_enabled=False)
    runs = {
        "weather": run_body("thread-parity-1", "run-1", FRAMEWORK.question),
        "approval": run_body("thread-parity-2", "run-2", "Book a trip to Rome"),
        "failing": run_body("thread-parity-3", "run-3", FRAMEWORK.failing_question),
    }
    url = server.base + "/agent"
    with live_server(app) as base:
        native = {name: events_of(base + "/agent", body) for name, body in runs.items()}
        ours = {name: events_of(url, body) for name, body in runs.items()}
        native["approved"] = events_of(
            base + "/agent", approve(runs["approval"], native["approval"])
        )
        ours["approved"] = events_of(url, approve(runs["approval"], ours["approval"]))
    for name in [*runs, "approved"]:
        assert normalized(ours[name]) == normalized(native[name]), name
    assert native["approval"][-1]["outcome"]["type"] == "interrupt"
    assert {"lookups": 1, "last_city": "Paris"} in [
        e["snapshot"] for e in native["weather"] if e["type"] == "STATE_SNAPSHOT"
    ]
    booked = [e["content"] for e in native["approved"] if e["type"] == "TOOL_CALL_RESULT"]
    assert booked == ['"Your trip to Rome is booked."']
