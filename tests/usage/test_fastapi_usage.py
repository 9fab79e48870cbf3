"""docs/serving.md's FastAPI recipe ("Inside FastAPI or Starlette"), used as written, from a fresh
folder.

The recipe is one module whose first line names its file and the command that runs it
(`# mymodule.py: run it with `uvicorn mymodule:api --timeout-graceful-shutdown 10``): it is
written to that file, and `api` is served by that command (on a free port) and by `agui serve
mymodule:api`. `POST /agent` is answered directly (no redirect), read by HttpAgent and by a
Conversation, and by the official TypeScript client (AGUI_INTEROP=1): completed, the same
messages. Through the same routes the store's endpoints answer: the capabilities say resumable,
a run resumes after its Last-Event-ID, a client connects to its thread, a stop names the run.
Both servers stop on Ctrl-C cleanly (the recipe's lifespan closes the store).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from subprocess import CompletedProcess

import httpx
import pytest

import agui

from ..conftest import run_input
from .support import (
    Server,
    check_ts_agrees,
    docs_block,
    find_node,
    interop,
    module_name,
    python_view,
    servers,
    ts_runs,
)

PAGE = "serving.md"
WAYS = ("agui serve", "uvicorn")
JSON = {"content-type": "application/json"}


def recipe() -> str:
    return docs_block(PAGE, "api = FastAPI()")


def command() -> list[str]:
    """The command the recipe's first line gives (`run it with `uvicorn mymodule:api ...``)."""
    found = re.search(r"run it with `([^`]+)`", recipe().splitlines()[0])
    assert found, "the recipe no longer says how to run it"
    words = shlex.split(found.group(1))
    assert words[:2] == ["uvicorn", f"{module_name(recipe())}:api"], words
    return words


def route() -> str:
    """The path the recipe gives the agent (`agent.include_in(api, "/agent")`)."""
    found = re.search(r'\.include_in\(api, "(/[^"]*)"\)', recipe())
    assert found, "the recipe no longer gives the agent a path"
    return found.group(1)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    folder = tmp_path_factory.mktemp("fastapi")
    name = module_name(recipe())
    (folder / f"{name}.py").write_text(recipe())
    with servers(
        folder,
        {
            "agui serve": (
                ["agui", "serve", f"{name}:api", "--port", "{port}"],
                [f"serving {name}:api (an ASGI app) at http://127.0.0.1:{{port}}"],
            ),
            "uvicorn": (
                [*command(), "--port", "{port}"],
                ["Uvicorn running on http://127.0.0.1:{port} "],
            ),
        },
    ) as running:
        yield running


def url(server: Server) -> str:
    return server.base + route()


@pytest.mark.parametrize("way", WAYS)
def test_post_agent_is_answered_without_a_redirect(served: dict[str, Server], way: str) -> None:
    """The URL a client is given answers the POST itself (a redirect, which neither client
    follows for a POST, would fail here: redirects are not followed)."""
    with httpx.Client(timeout=10, follow_redirects=False) as client:
        answer = client.post(
            url(served[way]),
            content=agui.encode(run_input(run_id=f"redirect-{way}", thread_id=f"redirect-{way}")),
            headers=JSON,
        )
    assert answer.status_code == 200, answer.status_code
    assert answer.headers["content-type"] == "text/event-stream"


@pytest.mark.parametrize("way", WAYS)
def test_httpagent_and_conversation_read_it(served: dict[str, Server], way: str) -> None:
    """HttpAgent reads the run's events; a Conversation completes it with the agent's reply."""
    events = list(agui.HttpAgent(url(served[way])).run_sync(run_input(thread_id=f"t-{way}")))
    assert [json.loads(agui.encode(e))["type"] for e in events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    outcome, messages = python_view(url(served[way]), "Hi")
    assert outcome == "success"
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "Hi"),
        ("assistant", "hello"),
    ]


def frames_of(answer: httpx.Response) -> list[tuple[str | None, dict[str, object]]]:
    """(id, event) of each frame of an SSE answer."""
    frames = []
    for message in agui.SSEDecoder().feed(answer.content):
        frames.append((message.id, json.loads(message.data)))
    return frames


@pytest.mark.parametrize("way", WAYS)
def test_the_stores_routes_answer_through_the_mount(served: dict[str, Server], way: str) -> None:
    """The recipe's store serves its routes under the agent's path: capabilities (resumable),
    resume after Last-Event-ID, connect to the thread, stop (a finished run: 409)."""
    base = url(served[way])
    thread, run = f"durable-{way}", f"durable-run-{way}"
    with httpx.Client(timeout=10, follow_redirects=False) as client:
        capabilities = client.get(base + "/capabilities")
        assert capabilities.status_code == 200
        assert capabilities.json()["transport"]["resumable"] is True
        started = client.post(
            base, content=agui.encode(run_input(run_id=run, thread_id=thread)), headers=JSON
        )
        frames = frames_of(started)
        assert [e["type"] for _, e in frames][-1] == "RUN_FINISHED"
        assert all(cursor for cursor, _ in frames)
        after = frames[1][0] or ""
        resumed = client.get(f"{base}/runs/{run}/events", headers={"Last-Event-ID": after})
        assert resumed.status_code == 200
        assert frames_of(resumed) == frames[2:]
        connected = client.get(f"{base}/threads/{thread}/events")
        assert [e["type"] for _, e in frames_of(connected)] == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED",
        ]
        stop = client.post(f"{base}/runs/{run}/stop")
        assert stop.status_code == 409 and "already ended" in stop.json()["error"]


@pytest.fixture(scope="module")
def ts(served: dict[str, Server]) -> dict[str, CompletedProcess[str]]:
    """The official client's run against each server, at once (only the interop tests ask)."""
    return ts_runs(find_node(), {way: url(served[way]) for way in WAYS}, "Hi")


@interop
@pytest.mark.parametrize("way", WAYS)
def test_the_typescript_client_completes_a_run(
    served: dict[str, Server], ts: dict[str, CompletedProcess[str]], way: str
) -> None:
    """@ag-ui/client against the FastAPI route: completed, no warning, the same messages."""
    check_ts_agrees(ts[way], url(served[way]), "Hi", "hello")
