"""PydanticAI through agui: examples/pydantic_ai_example.py (docs/integrations/pydantic_ai.md),
a PydanticAI agent on its offline FunctionModel made an agui agent by
`agui.adapters.PydanticAIAgent` (PydanticAI's own AG-UI adapter, `AGUIAdapter`, per run), served
by `agui serve` and read by the clients users have: the shared checks of the integration matrix
(tests/integrations/matrix.py), and what PydanticAI has of its own:

* the approval: `book_trip` is declared `requires_approval=True`; PydanticAI ends the run in
  RUN_FINISHED with an interrupt outcome (AG-UI 1.0 interrupts), the tool not run; the client
  answers the interrupt, and the next run's `resume` runs the tool (approved) or not (denied);
* the state update: `get_weather` counts the lookup in the run's `StateDeps` and sends it as
  STATE_SNAPSHOT, which the client's state holds; the next run hands that state back;
* the native endpoint: `AGUIAdapter.dispatch_request` under Starlette (PydanticAI's way of
  serving an agent) sends the same events as agui for the same input, but for the RUN_ERROR of a
  failing tool, whose message agui withholds.

Needs pydantic-ai-slim with its ag-ui extra (ag-ui-protocol, starlette; `nox -s integrations`
installs the pinned versions), node and the npm packages of tests/interop under .interop/;
skipped without them, unless AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("pydantic_ai", "ag_ui", "starlette")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

import agui  # noqa: E402
from agui.adapters import PydanticAIAgent  # noqa: E402
from agui.stream.lifecycle import AGENT_FAILED  # noqa: E402
from tests.conftest import live_server  # noqa: E402
from tests.integrations.matrix import (  # noqa: E402
    ROOT,
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

FRAMEWORK = Framework(
    key="pydantic_ai",
    name="PydanticAI",
    packages=("pydantic-ai-slim", "ag-ui-protocol"),
    question="What is the weather in Paris?",
    answer="It is sunny in Paris.",
    tool="get_weather",
    follow_up="Which city did I ask about?",
    follow_up_answer="You asked about Paris.",
    failing_question="What is the weather in Atlantis?",
    module="pydantic_ai_example",
    native_fails={
        "resume after a cut": "no frame ids",
        "tool exception withheld": "password=hunter2-db-password",
    },
)


class TestPydanticAI(MatrixChecks, NativeChecks):
    framework = FRAMEWORK


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/pydantic_ai_example.py, imported here (for its PydanticAI agent)."""
    return load_example(FRAMEWORK)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The example under `agui serve`, one server for this module's own tests (each on a thread
    of its own): its start, importing PydanticAI, is most of a test's time."""
    with served(FRAMEWORK) as url:
        yield url


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
def test_an_approval_round_trip(url: str) -> None:
    """A tool that requires approval pauses the run (an interrupt for the tool call, the tool
    not run); approved, the next run runs it and answers."""
    conversation = agui.Conversation(thread_id="thread-approve")
    asked = run(conversation, url, "Book a trip to Rome")
    assert asked.outcome == "interrupt", (asked.error_code, asked.error_message)
    (interrupt,) = asked.interrupts
    assert interrupt.reason == "tool_call"
    calls = {
        c["id"]: c["function"] for m in conversation.messages_json() for c in m.get("toolCalls", [])
    }
    assert calls[interrupt.tool_call_id] == {"name": "book_trip", "arguments": '{"city": "Rome"}'}
    assert tool_results(conversation) == []  # not booked yet
    conversation.resolve(interrupt.id, {"approved": True})
    done = run(conversation, url, None)
    assert done.outcome == "success", (done.error_code, done.error_message)
    assert tool_results(conversation) == ["Your trip to Rome is booked."]
    assert texts(conversation.messages_json(), "assistant")[-1] == "Your trip to Rome is booked."
    assert conversation.pending_interrupts == ()


def test_a_denied_approval_does_not_run_the_tool(url: str) -> None:
    conversation = agui.Conversation(thread_id="thread-deny")
    asked = run(conversation, url, "Book a trip to Rome")
    assert asked.outcome == "interrupt"
    conversation.resolve(asked.interrupts[0].id, {"approved": False, "reason": "Not now."})
    done = run(conversation, url, None)
    assert done.outcome == "success", (done.error_code, done.error_message)
    assert tool_results(conversation) == ["Not now."]  # PydanticAI's result for a denied call
    assert "booked" not in texts(conversation.messages_json(), "assistant")[-1]


def test_the_state_update_reaches_the_client_and_comes_back(url: str) -> None:
    """The tool's STATE_SNAPSHOT is the client's state; the next run is given it (StateDeps),
    so the count goes on."""
    conversation = agui.Conversation(thread_id="thread-state")
    run(conversation, url, "What is the weather in Paris?")
    assert conversation.state == {"lookups": 1, "last_city": "Paris"}
    run(conversation, url, "What is the weather in Oslo?")
    assert conversation.state == {"lookups": 2, "last_city": "Oslo"}


# ── PydanticAI's own endpoint ──────────────────────────────────────────────────────────────────


@pytest.fixture
def native_url(example: Any) -> Iterator[str]:
    """The example's agent served as PydanticAI serves it: AGUIAdapter.dispatch_request in a
    Starlette route, with the same deps."""
    from pydantic_ai.ui import StateDeps
    from pydantic_ai.ui.ag_ui import AGUIAdapter

    async def endpoint(request: Request) -> Response:
        deps = StateDeps(example.Trip())
        response: Response = await AGUIAdapter.dispatch_request(
            request, agent=example.pydantic_agent, deps=deps
        )
        return response

    app = Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])
    with live_server(app) as base:
        yield base + "/agent"


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
    """The same input to both: the same events, ids and timestamps aside. The one difference is
    the failing tool's RUN_ERROR: PydanticAI sends the exception's text, agui its generic
    message (the text goes to agui's log)."""
    body = run_body(f"thread-parity-{end}", f"run-parity-{end}", question)
    native = normalized(events_of(native_url, body))
    through = normalized(events_of(url, body))
    assert [e["type"] for e in through] == [e["type"] for e in native]
    if end == "RUN_ERROR":
        secret = f"database unavailable: password={FRAMEWORK.secret}"
        assert native[-1] == {"type": "RUN_ERROR", "message": secret}
        assert through[-1] == {"type": "RUN_ERROR", "message": AGENT_FAILED}
        native, through = native[:-1], through[:-1]
    else:
        assert through[-1]["type"] == "RUN_FINISHED"
        assert through[-1]["outcome"]["type"] == end, through[-1]
    assert through == native


# ── the adapter itself ─────────────────────────────────────────────────────────────────────────


def local_run(agent: Any, message: str) -> agui.RunResult:
    result = asyncio.run(agui.Conversation().run(agent, message))
    assert result is not None
    return result


def test_error_messages_passes_pydantic_ai_s_run_error_on(example: Any) -> None:
    """By default the failing tool's text stays out of the RUN_ERROR; error_messages=True (for
    development) passes it on."""
    deps = example.agent.deps
    withheld = local_run(example.agent, FRAMEWORK.failing_question)
    assert withheld.outcome == "error" and withheld.error_message == AGENT_FAILED
    agent = PydanticAIAgent(example.pydantic_agent, deps=deps, error_messages=True)
    passed = local_run(agent, FRAMEWORK.failing_question)
    assert passed.outcome == "error"
    assert passed.error_message == f"database unavailable: password={FRAMEWORK.secret}"


def test_options_reach_the_adapter(example: Any) -> None:
    """`options` are AGUIAdapter's keyword arguments: include_usage puts the run's token usage
    on RUN_FINISHED."""
    body = run_body("thread-usage", "run-usage", FRAMEWORK.question)
    with_usage = PydanticAIAgent(
        example.pydantic_agent, deps=example.agent.deps, options={"include_usage": True}
    )
    events = {}
    for name, agent in (("plain", example.agent), ("usage", with_usage)):
        with live_server(agui.AgentApp(agent, path="/agent"), lifespan="off") as base:
            events[name] = events_of(base + "/agent", body)
    assert "usage" not in events["plain"][-1]
    assert events["usage"][-1]["type"] == "RUN_FINISHED" and events["usage"][-1]["usage"]


def test_deps_must_be_a_function(example: Any) -> None:
    with pytest.raises(TypeError, match="deps must be a function of the run's input"):
        PydanticAIAgent(example.pydantic_agent, deps=example.Trip())  # type: ignore[arg-type]


@pytest.mark.parametrize("missing", ["pydantic_ai", "ag_ui"])
def test_without_the_package_the_error_names_the_install_line(missing: str) -> None:
    """pydantic-ai or ag-ui-protocol missing: ModuleNotFoundError naming the install line, when
    the agent is built (in a fresh interpreter, where the package is made unimportable)."""
    code = (
        "import sys\n"
        f"sys.modules[{missing!r}] = None\n"
        "from agui.adapters import PydanticAIAgent\n"
        "try:\n"
        "    PydanticAIAgent(object())\n"
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
        "PydanticAIAgent needs pydantic-ai with its AG-UI extra: "
        "pip install 'pydantic-ai-slim[ag-ui]'"
    ), done.stderr


def test_importing_the_adapters_imports_no_pydantic_ai() -> None:
    code = "import sys, agui.adapters; print('pydantic_ai' in sys.modules, 'ag_ui' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,  # hang bound
        check=True,
    )
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_a_stopped_run_closes_pydantic_ai_s_stream() -> None:
    """Closing the agent's stream mid-run (a client gone, a stop) closes PydanticAI's run at
    once: the model's stream is closed before the close returns."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    closed: list[str] = []

    async def endless(messages: list[Any], info: AgentInfo) -> AsyncIterator[str]:
        try:
            while True:
                yield "more "
                await asyncio.sleep(0)
        finally:
            closed.append("model stream")

    agent = PydanticAIAgent(Agent(FunctionModel(stream_function=endless)))
    input = agui.Conversation().next_input("Talk")

    async def go() -> list[str]:
        kinds = []
        stream = agent(input)
        async for event in stream:
            kinds.append(event.type.value)
            if event.type.value == "TEXT_MESSAGE_CONTENT":
                break
        await stream.aclose()
        assert closed == ["model stream"]  # before anything else runs on the loop
        return kinds

    assert asyncio.run(go())[-1] == "TEXT_MESSAGE_CONTENT"
