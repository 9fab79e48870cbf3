"""docs/serving.md's FastAPI example, used as written, from a fresh folder.

The page's agent (the block defining `echo`, whose comment names the module: `uvicorn
mymodule:app`) and its FastAPI block (`api.add_route("/agent", ...)`) are written together to
mymodule.py, and `api` is served by `agui serve mymodule:api` and by `uvicorn mymodule:api`, each
on a free port. `POST /agent` is answered directly (no redirect), read by HttpAgent and by a
Conversation, and by the official TypeScript client (AGUI_INTEROP=1): completed, the same
messages.
"""

from __future__ import annotations

import json
import re
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
    python_view,
    servers,
    ts_runs,
)

PAGE = "serving.md"
WAYS = ("agui serve", "uvicorn")


def agent_block() -> str:
    return docs_block(PAGE, "async def echo(")


def fastapi_block() -> str:
    return docs_block(PAGE, "api = FastAPI()")


def module() -> str:
    """The module name the agent block's comment gives (`# uvicorn mymodule:app`)."""
    found = re.search(r"# uvicorn (\w+):app", agent_block())
    assert found, "the agent example no longer says which module it is"
    return found.group(1)


def route() -> str:
    """The path the FastAPI example gives the agent (`api.add_route("/agent", ...)`)."""
    found = re.search(r'^api\.\w+\("(/[^"]*)"', fastapi_block(), re.M)
    assert found, "the FastAPI example no longer gives the agent a path"
    return found.group(1)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    folder = tmp_path_factory.mktemp("fastapi")
    name = module()
    (folder / f"{name}.py").write_text(agent_block() + "\n\n" + fastapi_block())
    with servers(
        folder,
        {
            "agui serve": (
                ["agui", "serve", f"{name}:api", "--port", "{port}"],
                [f"serving {name}:api (an ASGI app) at http://127.0.0.1:{{port}}"],
            ),
            "uvicorn": (
                ["uvicorn", f"{name}:api", "--port", "{port}"],
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
            content=agui.encode(run_input()),
            headers={"content-type": "application/json"},
        )
    assert answer.status_code == 200, answer.status_code
    assert answer.headers["content-type"] == "text/event-stream"


@pytest.mark.parametrize("way", WAYS)
def test_httpagent_and_conversation_read_it(served: dict[str, Server], way: str) -> None:
    """HttpAgent reads the run's events; a Conversation completes it with the agent's reply."""
    events = list(agui.HttpAgent(url(served[way])).run_sync(run_input()))
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
