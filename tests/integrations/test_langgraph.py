"""LangGraph (ag-ui-langgraph) through agui: examples/langgraph_agent.py (docs/integrations/langgraph.md).

The example is a compiled LangGraph graph (a chat node on a scripted, offline chat model, a
ToolNode, an in-memory checkpointer) served by ag-ui-langgraph's `LangGraphAgent` and made an
agui agent by `agui.adapters.AgUiProtocolAgent`. Besides the shared checks of the matrix
(tests/integrations/matrix.py; the two turns with a store among them: agui once handed
ag-ui-langgraph the run's input by reference, and with a store every second turn failed):

* the approval: `book_trip` calls LangGraph's `interrupt()`; with `emit_interrupt_outcome=True`
  ag-ui-langgraph ends the run in RUN_FINISHED with an AG-UI interrupt outcome (after its own
  CUSTOM "on_interrupt" event); the client answers it in the next run's `resume`, which
  ag-ui-langgraph turns into `Command(resume=payload)`: the tool goes on from its interrupt();
  the older way CopilotKit-era clients answer, `forwardedProps.command.resume`, passes through
  agui too;
* the state update: `get_weather` returns a `Command` updating the graph's state, which
  ag-ui-langgraph sends as STATE_SNAPSHOT; the client's state holds it, and the count goes on;
* the native endpoint: ag-ui-langgraph's `add_langgraph_fastapi_endpoint` under uvicorn sends the
  same events as `agui serve` for the same input, but for the RUN_ERROR of a failing tool, whose
  message agui withholds.

Every run through ag-ui-langgraph warns (a Python warning) that LangGraph 1.x deprecates
`get_config_jsonschema`, which ag-ui-langgraph calls; ignored by name below (this suite turns
warnings into errors).

Needs ag-ui-langgraph with its fastapi extra, LangGraph and langchain-core (`nox -s integrations`
installs the pinned versions), node and the npm packages of tests/interop under .interop/;
skipped without them, unless AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("ag_ui", "ag_ui_langgraph", "langgraph", "langchain_core", "fastapi")

from ag_ui_langgraph import add_langgraph_fastapi_endpoint  # noqa: E402
from fastapi import FastAPI  # noqa: E402

import agui  # noqa: E402
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
    serving,
    texts,
)
from tests.usage.support import Server  # noqa: E402

pytestmark = [
    # ag-ui-langgraph calls graph.get_config_jsonschema() in every run (to read the graph's
    # config keys), which LangGraph 1.x deprecates in favour of get_context_jsonschema(): a
    # warning of ag-ui-langgraph's, in the runs this process serves itself.
    pytest.mark.filterwarnings(
        "ignore:`get_config_jsonschema` is deprecated:langgraph.warnings.LangGraphDeprecatedSinceV10"
    ),
]

FRAMEWORK = Framework(
    key="langgraph",
    name="LangGraph",
    packages=("ag-ui-langgraph", "langgraph", "langchain-core", "ag-ui-protocol"),
    question="What is the weather in Paris?",
    answer="It is sunny in Paris.",
    tool="get_weather",
    follow_up="Which city did I ask about?",
    follow_up_answer="You asked about Paris.",
    failing_question="What is the weather in Atlantis?",
    module="langgraph_agent",
    # LangGraphAgent.run logs the graph's exception with its traceback ("LangGraph run failed")
    # before it ends the run in RUN_ERROR.
    tool_tracebacks=True,
    capabilities={
        "identity": {"type": "langgraph"},
        "humanInTheLoop": {"supported": True, "interrupts": True, "approveWithEdits": True},
    },
    native_fails={
        "resume after a cut": "no frame ids",
        "tool exception withheld": "password=hunter2-db-password",
    },
)


class TestLangGraph(MatrixChecks, NativeChecks):
    framework = FRAMEWORK


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/langgraph_agent.py, imported here (for its graph and LangGraphAgent)."""
    return load_example(FRAMEWORK)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """The example under `agui serve`, one server for this module's own tests (each on a thread
    of its own): its start, importing LangGraph, is most of a test's time."""
    with serving(FRAMEWORK) as server:
        yield server


@pytest.fixture(scope="module")
def url(server: Server) -> str:
    return server.base + "/agent"


def run(conversation: agui.Conversation, url: str, message: str | None) -> agui.RunResult:
    async def go() -> agui.RunResult:
        async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
            result = await conversation.run(agent, message)
        assert result is not None
        return result

    return asyncio.run(go())


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return texts(messages, "tool")


def calls(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {c["id"]: c["function"] for m in messages for c in m.get("toolCalls", [])}


# ── what a client holds ────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("binary", [False, True], ids=["sse", "protobuf"])
def test_a_conversation_holds_the_run(server: Server, url: str, binary: bool) -> None:
    """Over SSE and protobuf alike: the question, the tool call with its arguments, the answer,
    and the tool's result last (TOOL_CALL_RESULT and the final MESSAGES_SNAPSHOT name the tool
    message differently, and the snapshot's comes after what the client holds); nothing of
    LangGraph's events needed repair (agui's adapter logs each event it had to)."""
    conversation = agui.Conversation(thread_id=f"thread-view-{binary}")

    async def go() -> agui.RunResult | None:
        async with agui.HttpAgent(url, timeout=TIMEOUT, binary=binary) as agent:
            return await conversation.run(agent, FRAMEWORK.question)

    result = asyncio.run(go())
    assert result is not None and result.outcome == "success", result
    view = [{k: v for k, v in m.items() if k != "id"} for m in conversation.messages_json()]
    assert view == [
        {"role": "user", "content": FRAMEWORK.question},
        {
            "role": "assistant",
            "content": "",
            "toolCalls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "assistant", "content": FRAMEWORK.answer},
        {"role": "tool", "content": FRAMEWORK.answer, "toolCallId": "call-1"},
    ]
    assert conversation.warnings == []
    assert "the agent's event" not in "".join(server.stderr)


# ── the approval ───────────────────────────────────────────────────────────────────────────────


@pytest.mark.matrix("approval")
def test_an_approval_round_trip(url: str) -> None:
    """book_trip's interrupt() pauses the run: an interrupt outcome naming the tool call, the
    tool's result not there yet; approved, the next run's resume lets the tool go on, and the
    model answers with its result."""
    conversation = agui.Conversation(thread_id="thread-approve")
    asked = run(conversation, url, "Book a trip to Rome")
    assert asked.outcome == "interrupt", (asked.error_code, asked.error_message)
    (interrupt,) = asked.interrupts
    assert (interrupt.reason, interrupt.message) == ("tool_call", "Book a trip to Rome?")
    assert interrupt.response_schema is not None
    assert interrupt.response_schema["required"] == ["approved"]
    before = conversation.messages_json()
    assert calls(before)[interrupt.tool_call_id] == {
        "name": "book_trip",
        "arguments": '{"city": "Rome"}',
    }
    assert tool_results(before) == []  # not booked yet
    conversation.resolve(interrupt.id, {"approved": True})
    done = run(conversation, url, None)
    assert done.outcome == "success", (done.error_code, done.error_message)
    messages = conversation.messages_json()
    assert tool_results(messages) == ["Your trip to Rome is booked."]
    assert [m["toolCallId"] for m in messages if m["role"] == "tool"] == [interrupt.tool_call_id]
    assert texts(messages, "assistant")[-1] == "Your trip to Rome is booked."
    assert conversation.pending_interrupts == ()
    assert conversation.warnings == []


@pytest.mark.matrix("approval")
@pytest.mark.parametrize("answer", ["deny", "cancel"])
def test_a_denied_approval_does_not_book(url: str, answer: str) -> None:
    """Denied ({"approved": false}) or cancelled (a resume entry of status "cancelled", which
    ag-ui-langgraph hands interrupt() as {"__agui_cancelled__": true, ...}): no booking."""
    conversation = agui.Conversation(thread_id=f"thread-{answer}")
    asked = run(conversation, url, "Book a trip to Rome")
    assert asked.outcome == "interrupt"
    if answer == "deny":
        conversation.resolve(asked.interrupts[0].id, {"approved": False})
    else:
        conversation.cancel(asked.interrupts[0].id)
    done = run(conversation, url, None)
    assert done.outcome == "success", (done.error_code, done.error_message)
    messages = conversation.messages_json()
    assert tool_results(messages) == ["The trip to Rome was not booked."]
    assert texts(messages, "assistant")[-1] == "The trip to Rome was not booked."


def test_the_legacy_resume_of_copilotkit_era_clients_passes_through(url: str) -> None:
    """ag-ui-langgraph's older interrupt channel: its CUSTOM "on_interrupt" event (sent besides
    the outcome) carries the interrupt's value as JSON text, and a client that answers with
    `forwardedProps.command.resume` instead of `resume` (as CopilotKit's LangGraph clients do)
    gets the tool run as well: agui hands forwardedProps to the agent as they are."""
    first = run_body("thread-legacy", "run-legacy-1", "Book a trip to Rome")
    events = events_of(url, first)
    (custom,) = [e for e in events if e["type"] == "CUSTOM"]
    assert custom["name"] == "on_interrupt"
    assert json.loads(custom["value"])["message"] == "Book a trip to Rome?"  # as JSON text
    assert events[-1]["outcome"]["type"] == "interrupt"
    snapshot = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    answer = first | {
        "runId": "run-legacy-2",
        "messages": snapshot["messages"],
        "forwardedProps": {"command": {"resume": {"approved": True}}},
    }
    events = events_of(url, answer)
    assert events[-1]["type"] == "RUN_FINISHED" and "outcome" not in events[-1], events[-1]
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["Your trip to Rome is booked."]


def test_an_approval_is_lost_with_the_checkpointer(example: Any) -> None:
    """The paused run waits in the graph's checkpointer, here an InMemorySaver: answered to a
    graph whose checkpointer does not have the thread (a restarted server, another worker), the
    resume starts the graph over from an empty state, and the run fails (the example's model is
    handed no messages); agui's store, which kept the thread's events, does not bring it back."""
    from ag_ui_langgraph import LangGraphAgent
    from langgraph.checkpoint.memory import InMemorySaver

    from agui.adapters import AgUiProtocolAgent

    elsewhere = AgUiProtocolAgent(
        LangGraphAgent(
            name="travel",
            graph=example.builder.compile(checkpointer=InMemorySaver()),
            emit_interrupt_outcome=True,
        )
    )

    async def go() -> agui.RunResult | None:
        conversation = agui.Conversation(thread_id="thread-lost")
        paused = await conversation.run(example.agent, "Book a trip to Rome")
        assert paused is not None and paused.outcome == "interrupt", paused
        conversation.resolve(paused.interrupts[0].id, {"approved": True})
        return await conversation.run(elsewhere)

    result = asyncio.run(go())
    assert result is not None and result.outcome == "error", result
    assert result.error_message == AGENT_FAILED


# ── the state update ───────────────────────────────────────────────────────────────────────────


def test_the_state_update_reaches_the_client_and_comes_back(url: str) -> None:
    """get_weather's Command updates the graph's state; ag-ui-langgraph sends the graph's state
    (its messages too, in LangChain's form) as STATE_SNAPSHOT, which the client's state holds;
    the next run goes on counting."""
    conversation = agui.Conversation(thread_id="thread-state")
    run(conversation, url, "What is the weather in Paris?")
    assert {k: conversation.state[k] for k in ("lookups", "last_city")} == {
        "lookups": 1,
        "last_city": "Paris",
    }
    run(conversation, url, "What is the weather in Oslo?")
    assert {k: conversation.state[k] for k in ("lookups", "last_city")} == {
        "lookups": 2,
        "last_city": "Oslo",
    }
    assert [m["type"] for m in conversation.state["messages"]] == ["human", "ai", "tool", "ai"] * 2
    assert conversation.warnings == []


# ── ag-ui-langgraph's own endpoint ─────────────────────────────────────────────────────────────


@pytest.fixture
def native_url(example: Any) -> Iterator[str]:
    """The example's LangGraphAgent served as ag-ui-langgraph serves it: its FastAPI endpoint
    (which runs each request on a clone of the agent), under uvicorn."""
    app = FastAPI()
    add_langgraph_fastapi_endpoint(app, example.travel, "/agent")
    with live_server(app) as base:
        yield base + "/agent"


def answered(body: dict[str, Any], events: list[dict[str, Any]], run: str) -> dict[str, Any]:
    """The request that approves the interrupt the run of `events` ended with."""
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    snapshot = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    return body | {
        "runId": run,
        "messages": snapshot["messages"],
        "resume": [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ],
    }


@pytest.mark.matrix("native endpoint parity")
@pytest.mark.parametrize(
    ("question", "end"),
    [
        (FRAMEWORK.question, "success"),
        ("Book a trip to Rome", "interrupt"),
        (FRAMEWORK.failing_question, "RUN_ERROR"),
    ],
    ids=["tool", "approval", "failing-tool"],
)
def test_the_native_endpoint_sends_the_same_events(
    url: str, native_url: str, question: str, end: str
) -> None:
    """The same input to both (for the approval, the answering run too): the same events, ids
    and timestamps aside. What agui adds on purpose: RUN_STARTED declares protocolVersion. The
    one difference is the failing tool's RUN_ERROR: ag-ui-langgraph sends the exception's text,
    agui its generic message (the text goes to agui's log)."""
    body = run_body(f"thread-parity-{end}", f"run-parity-{end}", question)
    native = [events_of(native_url, body)]
    through = [events_of(url, body)]
    if end == "interrupt":
        native.append(events_of(native_url, answered(body, native[0], "run-parity-answer")))
        through.append(events_of(url, answered(body, through[0], "run-parity-answer")))
    for theirs, ours in zip(native, through, strict=True):
        assert theirs[0]["type"] == "RUN_STARTED" and "protocolVersion" not in theirs[0]
        assert ours[0].pop("protocolVersion") == agui.PROTOCOL_VERSION
    native, through = [normalized(e) for e in native], [normalized(e) for e in through]
    if end == "RUN_ERROR":
        secret = f"database unavailable: password={FRAMEWORK.secret}"
        assert native[0][-1] == {"type": "RUN_ERROR", "message": secret}
        assert through[0][-1] == {"type": "RUN_ERROR", "message": AGENT_FAILED}
        native[0], through[0] = native[0][:-1], through[0][:-1]
    elif end == "interrupt":
        assert through[0][-1]["outcome"]["type"] == "interrupt", through[0][-1]
        results = [e["content"] for e in through[1] if e["type"] == "TOOL_CALL_RESULT"]
        assert results == ["Your trip to Rome is booked."]
    else:
        kinds = [e["type"] for e in through[0]]
        assert ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] == [
            k for k in kinds if k.startswith("TOOL_CALL_") and k != "TOOL_CALL_RESULT"
        ]
        assert "outcome" not in through[0][-1]
    assert through == native
    assert json.dumps(through).count(FRAMEWORK.secret) == 0
