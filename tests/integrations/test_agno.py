"""Agno through agui: examples/agno_example.py (docs/integrations/agno.md).

The example is an `agno.agent.Agent` on a scripted Agno model (offline, deterministic) made an
agui agent by `agui.adapters.AgnoAgent`, which runs it through Agno's AG-UI interface (the body of
AgentOS' AGUI route). Besides the shared checks of the matrix (tests/integrations/matrix.py):

* the approval: `book_trip` has `requires_confirmation=True`; Agno pauses the run with the call
  (RUN_FINISHED, the call without a result: Agno's AG-UI interface has no interrupts), and the
  client's tool message `{"accepted": true}` for that call makes the next run run the tool;
* the state update: `get_weather` counts the lookup in the run's session state, which the client
  gets (STATE_DELTA, then STATE_SNAPSHOT) and hands to the next run;
* the failing tool: Agno hands the exception's text to the model as the tool's result, which its
  AG-UI interface sends to the client; the example's tool hook logs it and gives a generic text,
  so the secret is nowhere in the stream, and in the server's log;
* the native endpoint: AgentOS with the AGUI interface under uvicorn sends the same events as agui
  for the same input;
* the adapter's own rules.

Needs agno with its agui and os extras (`nox -s integrations` installs the pinned releases),
node and the npm packages of tests/interop under .interop/; skipped without them, unless
AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("agno", "ag_ui", "fastapi")

import agui  # noqa: E402
from agui.adapters import AgnoAgent  # noqa: E402
from agui.stream.lifecycle import AGENT_FAILED  # noqa: E402
from tests.conftest import ROOT, live_server  # noqa: E402
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
    key="agno",
    name="Agno",
    packages=("agno", "ag-ui-protocol"),
    question="What is the weather in Paris?",
    answer="It is sunny in Paris.",
    tool="get_weather",
    follow_up="Which city did I ask about?",
    follow_up_answer="You asked about Paris.",
    failing_question="What is the weather in Atlantis?",
    # Agno turns a tool's exception into the tool's result and the run goes on (the example's
    # tool hook makes that result generic and logs the exception).
    tool_errors="model",
    module="agno_example",
    native_fails={"resume after a cut": "no frame ids"},
)


class TestAgno(MatrixChecks, NativeChecks):
    framework = FRAMEWORK

    @pytest.fixture(scope="class")
    @classmethod
    def native_url(cls) -> Iterator[str]:
        """The example's agent served as Agno serves it: AgentOS with the AGUI interface."""
        from agno.os import AgentOS
        from agno.os.interfaces.agui import AGUI

        agno_agent = example().agno_agent
        app = AgentOS(agents=[agno_agent], interfaces=[AGUI(agent=agno_agent)], telemetry=False)
        with live_server(app.get_app()) as base:
            yield base + "/agui"


def example() -> ModuleType:
    """examples/agno_example.py, imported afresh (its agent keeps sessions in an InMemoryDb),
    and in sys.modules: Agno reads a tool's annotations (strings, `from __future__ import
    annotations`) in its module's namespace."""
    return load_example(FRAMEWORK)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """The example under `agui serve`, one server for this module's own tests (each on a thread
    of its own): its start, importing Agno, is most of a test's time."""
    with serving(FRAMEWORK) as server:
        yield server


def run(
    conversation: agui.Conversation, url: str, message: str | agui.Message | None
) -> agui.RunResult:
    async def go() -> agui.RunResult:
        async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
            result = await conversation.run(agent, message)
        assert result is not None
        assert result.outcome == "success", (result.error_code, result.error_message)
        return result

    return asyncio.run(go())


def answer(call_id: str, accepted: bool) -> agui.ToolMessage:
    """The client's answer to a call that waits for confirmation."""
    content = json.dumps({"accepted": accepted})
    return agui.ToolMessage(id=f"answer-{call_id}", tool_call_id=call_id, content=content)


def calls(conversation: agui.Conversation) -> dict[str, dict[str, Any]]:
    return {
        c["id"]: c["function"] for m in conversation.messages_json() for c in m.get("toolCalls", [])
    }


@pytest.mark.matrix("approval")
def test_an_approval_round_trip(server: Server) -> None:
    """A tool that requires confirmation pauses the run: it finishes with the call and no result
    (the tool not run); the client's tool message accepting it makes the next run run the tool
    and answer. Agno's continued run sends the call's TOOL_CALL_START/ARGS again (same id), so
    the client's history holds its arguments twice, as @ag-ui/client's does."""
    url = server.base + "/agent"
    conversation = agui.Conversation(thread_id="thread-approve")
    run(conversation, url, "Book a trip to Rome")
    ((call_id, call),) = calls(conversation).items()
    assert conversation.messages[-1].tool_calls[0].id == call_id  # as the page finds it
    assert call == {"name": "book_trip", "arguments": '{"city": "Rome"}'}
    assert texts(conversation.messages_json(), "tool") == []  # not booked yet
    assert conversation.pending_interrupts == ()  # a paused call, not an interrupt
    run(conversation, url, answer(call_id, accepted=True))
    results = [m for m in conversation.messages_json() if m["role"] == "tool"]
    assert [(m["toolCallId"], m["content"]) for m in results] == [
        (call_id, '{"accepted": true}'),
        (call_id, '"Your trip to Rome is booked."'),
    ]
    assert texts(conversation.messages_json(), "assistant")[-1] == "Your trip to Rome is booked."
    assert calls(conversation)[call_id]["arguments"] == '{"city": "Rome"}{"city": "Rome"}'
    assert conversation.warnings == []


def test_a_refused_approval_does_not_run_the_tool(server: Server) -> None:
    url = server.base + "/agent"
    conversation = agui.Conversation(thread_id="thread-refuse")
    run(conversation, url, "Book a trip to Rome")
    (call_id,) = calls(conversation)
    run(conversation, url, answer(call_id, accepted=False))
    assert "booked" not in json.dumps(conversation.messages_json())


def test_the_state_update_reaches_the_client_and_comes_back(server: Server) -> None:
    """The tool's change to the session state is the client's state (Agno's STATE_DELTA, then
    its STATE_SNAPSHOT); the next run is given it, so the count goes on."""
    url = server.base + "/agent"
    conversation = agui.Conversation(thread_id="thread-state")
    run(conversation, url, "What is the weather in Paris?")
    assert conversation.state == {"lookups": 1, "last_city": "Paris"}
    run(conversation, url, "What is the weather in Oslo?")
    assert conversation.state == {"lookups": 2, "last_city": "Oslo"}


def test_the_failing_tool_s_text_reaches_only_the_log(server: Server) -> None:
    """Agno gives a failing tool's exception text to the model as the tool's result, and its
    AG-UI interface sends it on (TOOL_CALL_RESULT): the example's tool hook makes it generic, so
    the secret is nowhere in the stream, and logs it for the operator."""
    url = server.base + "/agent"
    events = events_of(url, run_body("thread-secret", "run-secret", FRAMEWORK.failing_question))
    assert FRAMEWORK.secret not in json.dumps(events)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == '"Error: the tool failed."'
    assert events[-1]["type"] == "RUN_FINISHED"
    line = f"tool get_weather failed: database unavailable: password={FRAMEWORK.secret}"
    assert server.logged(line), "".join(server.stderr)


# ── AgentOS' own endpoint ──────────────────────────────────────────────────────────────────────


def approve(body: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """The request that accepts the call the run of `events` paused on: the history as a client
    holds it (the question, the call) and the answer."""
    (start,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
    (args,) = [e for e in events if e["type"] == "TOOL_CALL_ARGS"]
    call = {
        "id": start["toolCallId"],
        "type": "function",
        "function": {"name": start["toolCallName"], "arguments": args["delta"]},
    }
    reply = {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]}
    accepted = {
        "id": "answer",
        "role": "tool",
        "toolCallId": start["toolCallId"],
        "content": json.dumps({"accepted": True}),
    }
    return body | {
        "runId": body["runId"] + "-approved",
        "messages": [*body["messages"], reply, accepted],
    }


@pytest.mark.matrix("native endpoint parity")
def test_the_native_endpoint_sends_the_same_events(server: Server) -> None:
    """AgentOS with the AGUI interface (POST /agui) serving the example's agent under uvicorn,
    and `agui serve` serving the example: the same events for the same requests (ids and
    timestamps aside): a tool call with its state update, a paused call and its acceptance, a
    failing tool. agui adds protocolVersion to RUN_STARTED (Agno's has none)."""
    from agno.os import AgentOS
    from agno.os.interfaces.agui import AGUI

    agno_agent = example().agno_agent
    app = AgentOS(agents=[agno_agent], interfaces=[AGUI(agent=agno_agent)], telemetry=False)
    runs = {
        "weather": run_body("thread-parity-1", "run-1", FRAMEWORK.question),
        "approval": run_body("thread-parity-2", "run-2", "Book a trip to Rome"),
        "failing": run_body("thread-parity-3", "run-3", FRAMEWORK.failing_question),
    }
    url = server.base + "/agent"
    with live_server(app.get_app()) as base:
        native = {name: events_of(base + "/agui", body) for name, body in runs.items()}
        ours = {name: events_of(url, body) for name, body in runs.items()}
        native["approved"] = events_of(
            base + "/agui", approve(runs["approval"], native["approval"])
        )
        ours["approved"] = events_of(url, approve(runs["approval"], ours["approval"]))
    for name in [*runs, "approved"]:
        assert "protocolVersion" not in native[name][0]
        assert ours[name][0].pop("protocolVersion") == agui.PROTOCOL_VERSION
        assert normalized(ours[name]) == normalized(native[name]), name
    assert native["weather"][-2] == {
        "type": "STATE_SNAPSHOT",
        "snapshot": {"lookups": 1, "last_city": "Paris"},
    }
    booked = [e["content"] for e in native["approved"] if e["type"] == "TOOL_CALL_RESULT"]
    assert booked == ['"Your trip to Rome is booked."']


# ── the adapter ────────────────────────────────────────────────────────────────────────────────


def local_run(agent: Any, message: str) -> agui.RunResult:
    result = asyncio.run(agui.Conversation().run(agent, message))
    assert result is not None
    return result


def test_error_messages_passes_agno_s_run_error_on() -> None:
    """An exception outside a tool (here the model's) makes Agno's AG-UI interface end the run
    in RUN_ERROR with the exception's text: by default agui withholds it; error_messages=True
    (for development) passes it on."""
    module = example()

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"model unreachable: token={FRAMEWORK.secret}")
        yield  # an async generator, as the model's stream is

    module.agno_agent.model.ainvoke_stream = broken
    withheld = local_run(AgnoAgent(module.agno_agent), "Hello")
    assert withheld.outcome == "error" and withheld.error_message == AGENT_FAILED
    passed = local_run(AgnoAgent(module.agno_agent, error_messages=True), "Hello")
    assert passed.outcome == "error"
    assert FRAMEWORK.secret in (passed.error_message or "")


@pytest.mark.parametrize("missing", ["agno", "ag_ui", "fastapi"])
def test_without_the_package_the_error_names_the_install_line(missing: str) -> None:
    """agno, ag-ui-protocol or FastAPI missing: ModuleNotFoundError naming the install line,
    when the agent is built (in a fresh interpreter, where the package is made unimportable)."""
    code = (
        "import sys\n"
        f"sys.modules[{missing!r}] = None\n"
        "from agui.adapters import AgnoAgent\n"
        "try:\n"
        "    AgnoAgent(object())\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,  # hang bound
        check=True,
    )
    assert done.stdout.strip() == (
        "AgnoAgent needs agno with its AG-UI and AgentOS extras: pip install 'agno[agui,os]'"
    ), done.stderr


def test_importing_the_adapters_imports_no_agno() -> None:
    code = "import sys, agui.adapters; print('agno' in sys.modules, 'ag_ui' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,  # hang bound
        check=True,
    )
    assert done.stdout.split() == ["False", "False"], done.stderr
