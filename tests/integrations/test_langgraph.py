"""A LangGraph agent, as ag-ui-langgraph serves it, behind AgentApp through AgUiProtocolAgent.

The graph is a chat model and a tool node: the model is langchain-core's GenericFakeChatModel,
playing scripted replies (a call of the `get_weather` tool, then the answer), so the run is
offline and the same every time. ag-ui-langgraph's `LangGraphAgent` wraps the graph, and
`agui.adapters.AgUiProtocolAgent` makes it an agui agent, served by `AgentApp` under uvicorn on
127.0.0.1 and read by:

* the official TypeScript client (@ag-ui/client 1.0.0, tests/interop/ts_client.mjs): the run
  completes, with no console warning; so it does for the pre-1.0 releases 0.0.35 and 0.0.59
  (tests/interop/ts_era_client.mjs), which send no protocolVersion;
* `agui.Conversation` through `HttpAgent`, over SSE and over protobuf, and on an AgentApp with a
  store (the thread then hydrated by `Conversation.connect`);

each holding the user's question, the assistant's tool call with its arguments, the tool's
result and the assistant's answer, the same for every client, with nothing logged at WARNING or
above. docs/serving.md's example runs as written on the same graph.

The one warning seen is a Python warning of ag-ui-langgraph's, in every run: it calls LangGraph
1.x's deprecated `get_config_jsonschema` (LangGraphDeprecatedSinceV10), ignored by name below (this
suite turns warnings into errors). What ag-ui-langgraph sends, seen through the adapter (none of it
a warning):

* the tool call comes as TOOL_CALL_START and TOOL_CALL_END with no TOOL_CALL_ARGS: the fake
  model streams the whole call in one chunk, and ag-ui-langgraph emits arguments only from the
  chunks after the one that names the tool. The arguments arrive in the MESSAGES_SNAPSHOT that
  ends the run.
* TOOL_CALL_RESULT names the tool message `messageId` = the call's id, while that snapshot gives
  the tool message another id (a UUID): clients replace the streamed tool message by the
  snapshot's, which they put after the messages they already hold, so the tool message comes
  last (after the answer). Every client does the same.
* RAW events (ag-ui-langgraph's default `emit_raw_events=True`) carry LangGraph's own events,
  and most events carry a `rawEvent`; they pass through as they are.

Needs ag-ui-protocol, ag-ui-langgraph, langgraph and langchain-core (`nox -s integrations`
installs the pinned versions), node and the npm packages of tests/interop under .interop/ (the
session installs them); skipped without them, unless AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import REQUIRED, require

require("ag_ui", "ag_ui_langgraph", "langgraph", "langchain_core")

from ag_ui_langgraph import LangGraphAgent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402

import agui  # noqa: E402
from agui.adapters import AgUiProtocolAgent  # noqa: E402
from tests.conftest import live_server  # noqa: E402
from tests.test_docs import block_containing, run_example  # noqa: E402

pytestmark = [
    # ag-ui-langgraph calls graph.get_config_jsonschema() in every run (to read the graph's
    # config keys), which LangGraph 1.x deprecates in favour of get_context_jsonschema(); a
    # warning of ag-ui-langgraph's, not of the adapter's (this suite turns warnings into errors).
    pytest.mark.filterwarnings(
        "ignore:`get_config_jsonschema` is deprecated:langgraph.warnings.LangGraphDeprecatedSinceV10"
    ),
]

ROOT = Path(__file__).resolve().parent.parent.parent
INTEROP = ROOT / "tests" / "interop"
WORK = ROOT / ".interop"
TIMEOUT = 60.0

QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
RESULT = "Sunny in Paris"


# ── the agent ───────────────────────────────────────────────────────────────────────────────────


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def weather_graph() -> Any:
    """model -> tools -> model, on a fake chat model that calls get_weather, then answers (and
    again for every run: each run takes two replies); compiled, with an in-memory checkpointer."""
    call = AIMessage(
        content="",
        id="ai-call",
        # OpenAI's form, which the fake model streams as a tool-call chunk (its `tool_calls`
        # argument is not streamed).
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "index": 0,
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ]
        },
    )
    model = GenericFakeChatModel(
        messages=itertools.cycle([call, AIMessage(ANSWER, id="ai-answer")])
    )

    async def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", chat)
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver())


def langgraph_agent() -> LangGraphAgent:
    """The graph as ag-ui-langgraph serves it."""
    return LangGraphAgent(name="weather", graph=weather_graph())


@pytest.fixture
def url() -> Iterator[str]:
    app = agui.AgentApp(AgUiProtocolAgent(langgraph_agent()), path="/agent")
    with live_server(app, lifespan="off") as base:
        yield base + "/agent"


@pytest.fixture
def no_warnings(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Nothing at WARNING or above logged during the test, by agui or anyone else (the server
    runs in this process)."""
    caplog.set_level(logging.INFO)
    yield
    logged = [
        f"{r.levelname} {r.name}: {r.getMessage()}"
        for phase in ("setup", "call")  # caplog.records would be the teardown's
        for r in caplog.get_records(phase)
        if r.levelno >= logging.WARNING
    ]
    assert logged == []


# ── what a client should hold ───────────────────────────────────────────────────────────────────


def view(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages as wire JSON without their ids (the user message's and the tool message's differ
    from run to run)."""
    out = []
    for message in messages:
        wire = dict(message if isinstance(message, dict) else agui.to_json(message))
        wire.pop("id")
        out.append(wire)
    return out


EXPECTED = [
    {"role": "user", "content": QUESTION},
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
    {"role": "assistant", "content": ANSWER},
    {"role": "tool", "content": RESULT, "toolCallId": "call-1"},
]


# ── the official TypeScript client ──────────────────────────────────────────────────────────────


RELEASES = {"1.0.0": "@ag-ui/client", "0.0.35": "client-0-0-35", "0.0.59": "client-0-0-59"}
"""The releases of the official client run here, by their names under .interop/node_modules (the
older ones are npm aliases of tests/interop/package.json)."""


def _node() -> str:
    """node, with the pinned npm packages installed under .interop/ and the scripts beside them."""
    found = shutil.which("node")
    missing = "node is not on PATH" if found is None else None
    for release, package in RELEASES.items():
        manifest = WORK / "node_modules" / package / "package.json"
        if missing is None and not manifest.is_file():
            missing = f"{package} is not under {WORK}"
        elif missing is None:
            assert json.loads(manifest.read_text())["version"] == release, package
    if found is None or missing is not None:
        if REQUIRED:
            pytest.fail(f"AGUI_REQUIRE_INTEGRATIONS=1, but {missing}")
        pytest.skip(f"{missing} (`nox -s integrations` installs it)")
    for script in ("ts_client.mjs", "ts_era_client.mjs", "console_capture.mjs"):
        shutil.copy(INTEROP / script, WORK / script)
    return found


def _run_node(*args: str) -> Any:
    """One run of a client script under .interop/; the report it prints."""
    # This variable would silence the client's compatibility warnings, which must all be seen.
    env = {k: v for k, v in os.environ.items() if k != "SUPPRESS_TRANSFORMATION_WARNINGS"}
    done = subprocess.run(
        [_node(), *args], cwd=WORK, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_official_typescript_client_runs_it(url: str, no_warnings: None) -> None:
    report = _run_node("ts_client.mjs", url, "--message", QUESTION, "--thread", "thread-ts")
    assert report["error"] is None and report["ok"] is True
    assert report["warnings"] == []
    assert report["outcome"] == "success"
    assert view(report["messages"]) == EXPECTED
    kinds = [kind for kind in report["events"] if kind != "RAW"]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    streamed = [k for k in kinds if k.startswith(("TOOL_CALL", "TEXT_MESSAGE_START"))]
    assert streamed == [
        "TOOL_CALL_START",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
    ]
    assert kinds.count("TEXT_MESSAGE_CONTENT") > 1  # streamed word by word
    assert "MESSAGES_SNAPSHOT" in kinds
    assert "RAW" in report["events"]


@pytest.mark.parametrize("release", ["0.0.35", "0.0.59"])
def test_a_pre_1_0_client_runs_it(url: str, release: str, no_warnings: None) -> None:
    """A request without protocolVersion: AgentApp sends the stream the client's era accepts
    (compat="auto"); LangGraph's events need nothing translated. Releases before 0.0.59 take the
    final MESSAGES_SNAPSHOT as it is, so the tool's result comes before the answer there."""
    report = _run_node(
        "ts_era_client.mjs", RELEASES[release], url, "--message", QUESTION, "--thread", release
    )
    assert report["error"] is None and report["ok"] is True
    assert report["warnings"] == []
    expected = EXPECTED if release == "0.0.59" else [EXPECTED[i] for i in (0, 1, 3, 2)]
    assert view(report["messages"]) == expected
    assert report["events"][-1] == "RUN_FINISHED"


# ── agui.Conversation ───────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("binary", [False, True], ids=["sse", "protobuf"])
def test_a_conversation_runs_it(url: str, binary: bool, no_warnings: None) -> None:
    conversation = agui.Conversation(thread_id=f"thread-py-{binary}")
    result = asyncio.run(conversation.run(agui.HttpAgent(url, binary=binary), QUESTION))
    assert result is not None and result.outcome == "success"
    assert result.warnings == ()
    assert conversation.warnings == []
    assert view(list(conversation.messages)) == EXPECTED


def test_a_durable_run_is_kept_and_its_thread_hydrated(no_warnings: None) -> None:
    app = agui.AgentApp(AgUiProtocolAgent(langgraph_agent()), path="/agent", store="memory://")
    with live_server(app) as base:
        agent = agui.HttpAgent(base + "/agent")
        ran = agui.Conversation(thread_id="thread-durable")
        result = asyncio.run(ran.run(agent, QUESTION))
        assert result is not None and result.outcome == "success"
        kept = agui.Conversation(thread_id="thread-durable")
        asyncio.run(kept.connect(agent))
    assert view(list(ran.messages)) == view(list(kept.messages)) == EXPECTED
    assert ran.warnings == kept.warnings == []


def test_the_serving_page_example_serves_it(
    no_warnings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/serving.md's example, as written (its own graph, on a fake chat model), at the
    pinned versions (test_langgraph_recipe.py runs it with what its install line brings)."""
    code = block_containing(ROOT / "docs" / "serving.md", "AgUiProtocolAgent(agent)")
    app = run_example(code, "serving.md", capsys)["app"]
    with live_server(app, lifespan="off") as base:
        conversation = agui.Conversation(thread_id="thread-docs")
        result = asyncio.run(conversation.run(agui.HttpAgent(base + "/agent"), QUESTION))
    assert result is not None and result.outcome == "success"
    assert view(list(conversation.messages)) == [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Hello from LangGraph!"},
    ]
