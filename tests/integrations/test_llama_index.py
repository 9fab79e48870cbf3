"""LlamaIndex (llama-index-protocols-ag-ui) through agui: examples/llama_index_example.py.

The example is llama-index-protocols-ag-ui's `AGUIChatWorkflow` on LlamaIndex's offline
MockFunctionCallingLLM (scripted), made an agui agent by `agui.adapters.LlamaIndexAgent`, which
runs the workflow as the package's AG-UI router does. Besides the shared checks of the matrix:

* the approval: the workflow has no interrupts; its human-in-the-loop is a frontend tool, whose
  call ends the run open for the client to answer: approve_trip, answered {"approved": true},
  and the next run books the trip (false: it does not);
* the state update: get_weather writes the workflow's "state" (STATE_SNAPSHOT), and the next run
  is handed the client's state back;
* the native endpoint: `get_ag_ui_workflow_router(workflow_factory=...)` under FastAPI with the
  example's factory, against `agui serve` serving the example, the same requests;
* the adapter's own rules, and what the workflow does with a failing tool's exception.

Needs llama-index-protocols-ag-ui and FastAPI (`nox -s integrations` installs the pinned
releases); skipped without them, unless AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("llama_index", "fastapi")  # first: find_spec of a submodule imports its parents
require("llama_index.protocols.ag_ui")

from fastapi import FastAPI  # noqa: E402
from llama_index.protocols.ag_ui import router as llama_router  # noqa: E402
from workflows.errors import WorkflowCancelledByUser  # noqa: E402

import agui  # noqa: E402
from agui.adapters import LlamaIndexAgent  # noqa: E402
from agui.adapters.llama_index import FORWARDED  # noqa: E402
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
    key="llama_index",
    name="LlamaIndex",
    packages=("llama-index-protocols-ag-ui", "llama-index-core", "llama-index-workflows"),
    question="What is the weather in Paris?",
    answer="Sunny in Paris.",
    tool="get_weather",
    follow_up="Thanks! What did I ask first?",
    follow_up_answer="You first asked: What is the weather in Paris?",
    failing_question="What is the weather in Atlantis?",
    # AGUIChatWorkflow catches a tool's exception and hands its text to the model as the tool's
    # result; the run goes on, and the text reaches the client (test_a_failing_tool_s_text_...).
    tool_errors="model",
    known_failures={
        "tool exception withheld": (
            "AGUIChatWorkflow (llama-index-protocols-ag-ui 0.6.0) hands a failing tool's "
            "exception text to the model as the tool's result, and its MESSAGES_SNAPSHOT carries "
            "that result to the client; agui passes a snapshot on as it is"
        )
    },
    native_fails={
        "resume after a cut": "no frame ids",
        "tool exception withheld": "password=hunter2-db-password",
    },
    capabilities={"identity": {"type": "llama-index"}},
    module="llama_index_example",
    # hang bound: importing llama-index-core takes about 5 s of CPU, far longer on a busy machine
    startup=120.0,
)


class TestLlamaIndex(MatrixChecks, NativeChecks):
    framework = FRAMEWORK


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/llama_index_example.py, imported here (for its workflow factory)."""
    return load_example(FRAMEWORK)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The example under `agui serve`, one server for this module's own tests (each on a thread
    of its own)."""
    with served(FRAMEWORK) as url:
        yield url


def run(conversation: agui.Conversation, url: str, message: str | agui.Message) -> agui.RunResult:
    async def go() -> agui.RunResult:
        async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
            result = await conversation.run(agent, message)
        assert result is not None
        assert result.outcome == "success", (result.error_code, result.error_message)
        return result

    return asyncio.run(go())


def open_call(conversation: agui.Conversation) -> dict[str, Any]:
    """The last tool call of the conversation, which has no result yet."""
    messages = conversation.messages_json()
    answered = {m["toolCallId"] for m in messages if m["role"] == "tool"}
    (call,) = [c for m in messages for c in m.get("toolCalls", []) if c["id"] not in answered]
    return call


def answer(call: dict[str, Any], approved: bool) -> agui.ToolMessage:
    return agui.ToolMessage(
        id=f"answer-{call['id']}",
        content=json.dumps({"approved": approved}),
        tool_call_id=call["id"],
    )


@pytest.mark.matrix("approval")
@pytest.mark.parametrize("approved", [True, False], ids=["approved", "refused"])
def test_an_approval_round_trip(url: str, approved: bool) -> None:
    """Asked for a trip, the model calls approve_trip, a frontend tool: the run ends with the
    call open (no result, the trip not booked). The client's answer comes with the next run:
    approved, the model calls book_trip and answers with its result; refused, it books nothing."""
    conversation = agui.Conversation(thread_id=f"thread-approval-{approved}")
    run(conversation, url, "Please book a trip to Rome")
    call = open_call(conversation)
    assert call["function"] == {"name": "approve_trip", "arguments": '{"city": "Rome"}'}
    assert texts(conversation.messages_json(), "tool") == []
    run(conversation, url, answer(call, approved))
    messages = conversation.messages_json()
    booked = [m["content"] for m in messages if m["role"] == "tool" and "Booked" in m["content"]]
    if approved:
        assert booked == ["Booked a trip to Rome."]
        assert texts(messages, "assistant")[-1] == "Booked a trip to Rome."
    else:
        assert booked == []
        assert texts(messages, "assistant")[-1] == "No trip to Rome."
    assert conversation.warnings == []


def test_the_state_update_reaches_the_client_and_comes_back(url: str) -> None:
    """get_weather's write to the workflow's state is the client's state; the next run is handed
    it (the workflow starts from the input's state), and a second lookup keeps the first's
    members."""
    conversation = agui.Conversation(thread_id="thread-state", state={"visits": 2})
    run(conversation, url, "What is the weather in Paris?")
    assert conversation.state == {"visits": 2, "last_city": "Paris"}
    run(conversation, url, "What is the weather in Oslo?")
    assert conversation.state == {"visits": 2, "last_city": "Oslo"}


def test_a_failing_tool_s_text_reaches_the_client(url: str) -> None:
    """What the matrix's check does not show: AGUIChatWorkflow hands the failing tool's exception
    text to the model as the tool's result, and its MESSAGES_SNAPSHOT carries that result to the
    client (the page says so, and how to keep it in). The run itself finishes."""
    events = events_of(url, run_body("thread-atlantis", "run-atlantis", FRAMEWORK.failing_question))
    assert events[-1]["type"] == "RUN_FINISHED"
    snapshot = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    results = [m["content"] for m in snapshot["messages"] if m["role"] == "tool"]
    assert results == [f"database unavailable: password={FRAMEWORK.secret}"]
    assert snapshot["messages"][-1]["content"] == "I could not get the weather."


# ── the native endpoint ────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def native_url(example: Any) -> Iterator[str]:
    """The example's factory served as llama-index-protocols-ag-ui serves it: its router
    (`get_ag_ui_workflow_router`) under FastAPI, `POST /agent/run`."""
    app = FastAPI()
    app.include_router(llama_router.get_ag_ui_workflow_router(example.workflow), prefix="/agent")
    with live_server(app) as base:
        yield base + "/agent/run"


@pytest.mark.matrix("native endpoint parity")
def test_the_native_endpoint_sends_the_same_events(url: str, native_url: str) -> None:
    """The package's router (`get_ag_ui_workflow_router` with the example's factory) under
    FastAPI, and agui serve serving the example: the same events for the same requests (ids
    and timestamps aside): a tool run, a failing tool, the approval's frontend tool call, and
    the run that answers it."""
    runs = {
        "weather": run_body("thread-parity-1", "run-1", FRAMEWORK.question),
        "failing": run_body("thread-parity-2", "run-2", FRAMEWORK.failing_question),
        "approval": run_body("thread-parity-3", "run-3", "Please book a trip to Rome"),
    }
    native = {name: events_of(native_url, body) for name, body in runs.items()}
    ours = {name: events_of(url, body) for name, body in runs.items()}
    native["approved"] = events_of(native_url, approve(runs["approval"], native))
    ours["approved"] = events_of(url, approve(runs["approval"], ours))
    for name in [*runs, "approved"]:
        assert native[name][0]["type"] == "RUN_STARTED", name
        assert native[name][-1]["type"] == "RUN_FINISHED", name
        assert normalized(ours[name]) == normalized(native[name]), name
    results = [e for e in native["approved"] if e["type"] == "MESSAGES_SNAPSHOT"][-1]["messages"]
    assert "Booked a trip to Rome." in [m.get("content") for m in results]


def approve(body: dict[str, Any], events: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The request that answers the approval run's open approve_trip call with a yes."""
    snapshot = [e for e in events["approval"] if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    messages = snapshot["messages"]
    (call,) = messages[-1]["toolCalls"]
    result = {
        "id": "answer",
        "role": "tool",
        "toolCallId": call["id"],
        "content": json.dumps({"approved": True}),
    }
    return body | {"runId": "run-4", "messages": [*messages, result]}


# ── the adapter ────────────────────────────────────────────────────────────────────────────────


def test_it_forwards_what_the_router_forwards() -> None:
    """The adapter names the router's AG_UI_EVENTS (it does not import the router, which needs
    FastAPI): the same classes, in the same order."""
    from llama_index.protocols.ag_ui import events

    assert tuple(getattr(events, name) for name in FORWARDED) == llama_router.AG_UI_EVENTS


def test_an_exception_in_the_workflow_is_withheld(
    example: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A workflow that raises (here its model): the router's RUN_ERROR would carry the text;
    through agui the client gets AGENT_ERROR with agui's message, and the text is logged."""

    async def failing() -> Any:
        def broken(*_: Any, **__: Any) -> Any:
            raise RuntimeError(f"model down: {FRAMEWORK.secret}")

        workflow = await example.workflow()
        workflow.llm = type(workflow.llm)(response_generator=broken)
        return workflow

    conversation = agui.Conversation()
    result = asyncio.run(conversation.run(LlamaIndexAgent(failing), "Hello"))
    assert result is not None and result.outcome == "error", result
    assert (result.error_code, result.error_message) == ("AGENT_ERROR", AGENT_FAILED)
    assert any(FRAMEWORK.secret in r.getMessage() + str(r.exc_info) for r in caplog.records)


def test_a_run_closed_early_cancels_the_workflow(example: Any) -> None:
    """A run stopped after its first event (the client gone, a stop request) cancels the
    workflow's run, not left running to its end as the router leaves it: awaiting its handler
    raises the workflow's cancellation, not the run's result."""
    handlers: list[Any] = []

    async def watched() -> Any:
        workflow = await example.workflow()
        run_workflow = workflow.run

        def run_and_keep(**kwargs: Any) -> Any:
            handler = run_workflow(**kwargs)
            handlers.append(handler)
            return handler

        workflow.run = run_and_keep
        return workflow

    async def go() -> None:
        agent = LlamaIndexAgent(watched)
        stream = agent(agui.Conversation().next_input(FRAMEWORK.question))
        first = await anext(stream)
        assert first.type == "RUN_STARTED"
        await stream.aclose()
        (handler,) = handlers
        with pytest.raises(WorkflowCancelledByUser):
            await handler

    asyncio.run(go())


def test_a_factory_is_required() -> None:
    with pytest.raises(TypeError, match="workflow_factory must be an async function"):
        LlamaIndexAgent(object())  # type: ignore[arg-type]


def test_the_page_holds_the_example() -> None:
    """docs/integrations/llama_index.md shows examples/llama_index_example.py as it is (the
    tests serve the file; the recipe test serves the page's copy)."""
    page = ROOT / "docs" / "integrations" / "llama_index.md"
    block = block_containing(page, "def reply(")
    assert block == (EXAMPLES / "llama_index_example.py").read_text("utf-8")
