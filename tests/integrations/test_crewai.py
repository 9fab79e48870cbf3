"""CrewAI (ag-ui-crewai) through agui: examples/crewai_example.py.

The example is a CrewAI `Flow` on LiteLLM's offline mock (scripted), made an agui agent by
`agui.adapters.CrewAIFlowAgent`, which runs it through ag-ui-crewai's flow endpoint (its request
handler, in-process). Besides the shared checks of the matrix:

* the approval: book_trip waits for the user: the flow's `@human_feedback` step ends the run
  with an AG-UI interrupt; the client answers it (`resume`), and the next run resumes the flow
  from CrewAI's persisted pending state and books the trip (or not);
* the state update: get_weather sets the flow state's last_city (STATE_SNAPSHOT);
* the native endpoint: `add_crewai_flow_fastapi_endpoint` serving the example's flow, against
  `agui serve` serving the example, the same requests;
* the adapter's own rules.

Needs ag-ui-crewai (`nox -s integrations` installs the pinned releases); skipped without it,
unless AGUI_REQUIRE_INTEGRATIONS=1.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.integrations import require

require("ag_ui_crewai", "crewai", "litellm", "fastapi")

# Offline, as the example is (LiteLLM fetches its price list when imported, CrewAI sends
# telemetry), and CrewAI's store of paused flows (CREWAI_STORAGE_DIR, also read by the servers
# this module starts) in a folder of this run's, not the user's home.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ["CREWAI_STORAGE_DIR"] = tempfile.mkdtemp(prefix="agui-crewai-")
atexit.register(shutil.rmtree, os.environ["CREWAI_STORAGE_DIR"], ignore_errors=True)

with warnings.catch_warnings():
    # CrewAI's import warns "Cannot set an attribute on 'crewai.rag' for child module
    # 'embeddings'" (ImportWarning), which the project's filterwarnings=error would make fatal
    warnings.simplefilter("ignore", ImportWarning)
    import crewai  # noqa: F401
from ag_ui_crewai import add_crewai_flow_fastapi_endpoint  # noqa: E402
from fastapi import FastAPI  # noqa: E402

import agui  # noqa: E402
from agui.adapters import CrewAIFlowAgent  # noqa: E402
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

# LiteLLM's TypedDicts, validated by pydantic when a flow runs in this process: "Item 'index' on
# TypedDict class 'ChatCompletionThinkingBlock' is using the `ReadOnly` qualifier. Pydantic will
# not protect items from any mutation" (the project's filterwarnings=error would make it fatal)
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* (is|are) using the `ReadOnly` qualifier")

FRAMEWORK = Framework(
    key="crewai",
    name="CrewAI",
    packages=("ag-ui-crewai", "crewai", "litellm"),
    question="What is the weather in Paris?",
    answer="Sunny in Paris.",
    tool="get_weather",
    follow_up="Thanks! What did I ask first?",
    follow_up_answer="You first asked: What is the weather in Paris?",
    failing_question="What is the weather in Atlantis?",
    capabilities={"identity": {"name": "WeatherFlow", "type": "crewai"}},
    module="crewai_example",
    # hang bound: importing CrewAI and LiteLLM takes about 14 s of CPU, far longer on a busy
    # machine
    startup=180.0,
    # ag-ui-crewai logs a failing flow ("CrewAI flow failed ...") with its traceback
    tool_tracebacks=True,
    native_fails={"resume after a cut": "no frame ids"},
)


class TestCrewAI(MatrixChecks, NativeChecks):
    framework = FRAMEWORK


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/crewai_example.py, imported here (for its flow)."""
    return load_example(FRAMEWORK)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The example under `agui serve`, one server for this module's own tests (each on a thread
    of its own)."""
    with served(FRAMEWORK) as url:
        yield url


def run(conversation: agui.Conversation, url: str, message: str | None) -> agui.RunResult:
    async def go() -> agui.RunResult:
        async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
            result = await conversation.run(agent, message)
        assert result is not None
        return result

    return asyncio.run(go())


@pytest.mark.matrix("approval")
@pytest.mark.parametrize("approved", [True, False], ids=["approved", "refused"])
def test_an_approval_round_trip(url: str, approved: bool) -> None:
    """Asked for a trip, the flow pauses for human feedback: the run ends with an interrupt (the
    trip not booked); the client answers it, and the next run resumes the flow, which books the
    trip (approved) or not (refused), and the model says so."""
    conversation = agui.Conversation(thread_id=f"thread-approval-{approved}")
    paused = run(conversation, url, "Please book a trip to Rome")
    assert paused.outcome == "interrupt", (paused.error_code, paused.error_message)
    (interrupt,) = paused.interrupts
    assert (interrupt.reason, interrupt.message) == ("crewai:human_feedback", "Book this trip?")
    calls = [c["function"] for m in conversation.messages_json() for c in m.get("toolCalls", [])]
    assert calls == [{"name": "book_trip", "arguments": '{"city": "Rome"}'}]
    assert texts(conversation.messages_json(), "tool") == []
    conversation.resolve(interrupt.id, {"approved": approved})
    done = run(conversation, url, None)
    assert done.outcome == "success", (done.error_code, done.error_message)
    said = "Booked a trip to Rome." if approved else "No trip to Rome."
    assert texts(conversation.messages_json(), "tool") == [said]
    assert texts(conversation.messages_json(), "assistant")[-1] == said
    assert conversation.pending_interrupts == ()


def test_the_state_update_reaches_the_client(url: str) -> None:
    """get_weather's write to the flow's state is in the client's state (the STATE_SNAPSHOT of
    the whole flow state), and a second lookup replaces it."""
    conversation = agui.Conversation(thread_id="thread-state")
    assert run(conversation, url, "What is the weather in Paris?").outcome == "success"
    assert conversation.state["last_city"] == "Paris"
    assert run(conversation, url, "What is the weather in Oslo?").outcome == "success"
    assert conversation.state["last_city"] == "Oslo"
    assert conversation.warnings == []


# ── the native endpoint ────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def native_url(example: Any) -> Iterator[str]:
    """The example's flow served as ag-ui-crewai serves it: its FastAPI endpoint, with the
    example's option (the interrupt outcome)."""
    app = FastAPI()
    add_crewai_flow_fastapi_endpoint(
        app, example.WeatherFlow(), "/agent", emit_interrupt_outcome=True
    )
    with live_server(app) as base:
        yield base + "/agent"


@pytest.mark.matrix("native endpoint parity")
def test_the_native_endpoint_sends_the_same_events(url: str, native_url: str) -> None:
    """ag-ui-crewai's endpoint serving the example's flow with the example's option, and agui
    serve serving the example: the same events for the same requests (ids and timestamps aside)
    — a tool run, a failing tool, an approval and its answer — but for the failing run's
    RUN_ERROR, whose message agui withholds (and whose threadId and runId, members AG-UI's
    RUN_ERROR does not have, agui's decoder drops)."""
    runs = {
        "weather": run_body("thread-parity-1", "run-1", FRAMEWORK.question),
        "failing": run_body("thread-parity-2", "run-2", FRAMEWORK.failing_question),
    }
    native = {name: events_of(native_url, body) for name, body in runs.items()}
    ours = {name: events_of(url, body) for name, body in runs.items()}
    # the approval on a thread of each's own: the paused flow is kept by thread
    for name, where in (("native", native_url), ("ours", url)):
        body = run_body(f"thread-parity-{name}", "run-3", "Please book a trip to Rome")
        paused = events_of(where, body)
        done = events_of(where, approve(body, paused))
        (native if name == "native" else ours).update(approval=paused, approved=done)
    error = native["failing"][-1]
    assert error["type"] == "RUN_ERROR", error
    assert error["code"] == "AGUI_CREWAI_FLOW_ERROR_CONNECTIONERROR"
    assert FRAMEWORK.secret not in json.dumps(native["failing"])
    withheld = {"type": "RUN_ERROR", "message": AGENT_FAILED, "code": error["code"]}
    assert normalized(ours["failing"])[-1] == withheld
    native["failing"][-1] = withheld
    assert native["approval"][-1]["outcome"]["type"] == "interrupt"
    for name in ("weather", "failing", "approval", "approved"):
        assert normalized(ours[name]) == normalized(native[name]), name
    results = [e["content"] for e in native["approved"] if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["Booked a trip to Rome."]


def approve(body: dict[str, Any], paused: list[dict[str, Any]]) -> dict[str, Any]:
    """The request that approves the interrupt the run `paused` ended with."""
    (interrupt,) = paused[-1]["outcome"]["interrupts"]
    snapshot = [e for e in paused if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    return body | {
        "runId": "run-4",
        "messages": snapshot["messages"],
        "resume": [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ],
    }


# ── the adapter ────────────────────────────────────────────────────────────────────────────────


def test_endpoint_options_reach_the_endpoint(example: Any) -> None:
    """The adapter's options are the endpoint's: emission_shape="chunks" streams the answer and
    the tool call as CHUNK events, and an option the endpoint refuses is refused when the
    agent is built."""
    agent = CrewAIFlowAgent(example.WeatherFlow(), emission_shape="chunks")
    with live_server(agui.AgentApp(agent, path="/agent"), lifespan="off") as base:
        events = events_of(base + "/agent", run_body("thread-chunks", "run-c", FRAMEWORK.question))
    kinds = {e["type"] for e in events}
    assert {"TOOL_CALL_CHUNK", "TEXT_MESSAGE_CHUNK"} <= kinds, kinds
    assert "TEXT_MESSAGE_START" not in kinds
    with pytest.raises(ValueError, match="emission_shape"):
        CrewAIFlowAgent(example.WeatherFlow(), emission_shape="sideways")


def test_error_messages_passes_the_endpoint_s_message_on(example: Any) -> None:
    """By default the endpoint's RUN_ERROR message is replaced by agui's; error_messages=True
    passes it on (it names the thread and run, never the exception's text)."""
    agent = CrewAIFlowAgent(example.WeatherFlow(), emit_interrupt_outcome=True, error_messages=True)
    conversation = agui.Conversation(thread_id="thread-messages")
    result = asyncio.run(conversation.run(agent, FRAMEWORK.failing_question))
    assert result is not None and result.outcome == "error"
    assert result.error_code == "AGUI_CREWAI_FLOW_ERROR_CONNECTIONERROR"
    assert result.error_message is not None
    assert "CrewAI flow failed; see server logs" in result.error_message
    assert FRAMEWORK.secret not in result.error_message


def test_its_capabilities_say_who_it_is(example: Any) -> None:
    assert agui.to_json(example.agent.capabilities) == {
        "identity": {"name": "WeatherFlow", "type": "crewai"}
    }


def test_the_page_holds_the_example() -> None:
    """docs/integrations/crewai.md shows examples/crewai_example.py as it is (the tests serve
    the file; the recipe test serves the page's copy)."""
    page = ROOT / "docs" / "integrations" / "crewai.md"
    block = block_containing(page, "class WeatherFlow(")
    assert block == (EXAMPLES / "crewai_example.py").read_text("utf-8")
