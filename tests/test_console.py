"""The dev console's routes (agui.console), without a browser: AgentApp(console=True) answers
GET and HEAD under {path}/console with the page's files and a strict Content-Security-Policy;
an ETag makes a reload a 304; {path}/console/ redirects to {path}/console (the page's relative
links); an unknown file is 404; with path=None the console is at any path ending in /console;
and AgentApp's default is no console, so the route is the agent's own answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.console import CONTENT_SECURITY_POLICY, Console, event_members
from agui.http.server import AgentApp

FILES = Path(agui.__file__).parent / "console"


async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageStartEvent(message_id="m1")
    yield agui.TextMessageEndEvent(message_id="m1")


def call(
    app: Any, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request to the ASGI app: (status, headers, body)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


@pytest.fixture
def app() -> AgentApp:
    return AgentApp(agent, path="/agent", console=True)


def test_the_page_and_its_files_with_the_policy(app: AgentApp) -> None:
    status, headers, body = call(app, "/agent/console")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert (
        "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
        and "unsafe-eval" not in CONTENT_SECURITY_POLICY
    )
    assert headers["x-content-type-options"] == "nosniff"
    assert body == (FILES / "index.html").read_bytes()
    for file in FILES.iterdir():
        if file.suffix in (".js", ".css"):
            status, headers, body = call(app, f"/agent/console/{file.name}")
            assert status == 200, file.name
            assert headers["content-type"].startswith(
                "text/javascript" if file.suffix == ".js" else "text/css"
            )
            assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert body == file.read_bytes()
            assert int(headers["content-length"]) == len(body)


def test_events_json_lists_each_event_types_members(app: AgentApp) -> None:
    status, headers, body = call(app, "/agent/console/events.json")
    assert status == 200 and headers["content-type"] == "application/json"
    table = json.loads(body)
    assert table["protocolVersion"] == agui.PROTOCOL_VERSION
    assert table["events"] == event_members()
    start = table["events"]["TEXT_MESSAGE_START"]
    assert start["required"] == ["messageId"] and "role" in start["optional"]
    assert "role" in table["events"]["REASONING_MESSAGE_START"]["required"]  # a constant member


def test_an_etag_makes_a_reload_a_304(app: AgentApp) -> None:
    _, headers, _ = call(app, "/agent/console/main.js")
    etag = headers["etag"]
    status, again, body = call(
        app, "/agent/console/main.js", headers={"If-None-Match": f'"x", {etag}'}
    )
    assert status == 304 and body == b"" and again["etag"] == etag
    status, _, body = call(app, "/agent/console/main.js", headers={"If-None-Match": '"other"'})
    assert status == 200 and body


def test_head_has_the_headers_and_no_body(app: AgentApp) -> None:
    status, headers, body = call(app, "/agent/console", method="HEAD")
    assert status == 200 and body == b""
    assert int(headers["content-length"]) == len((FILES / "index.html").read_bytes())


def test_a_trailing_slash_redirects_and_an_unknown_file_is_404(app: AgentApp) -> None:
    status, headers, _ = call(app, "/agent/console/")
    assert status == 308 and headers["location"] == "../console"
    status, headers, body = call(app, "/agent/console/nope.js")
    assert status == 404 and "nope.js" in json.loads(body)["error"]
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert call(app, "/agent/console/a/b.js")[0] == 404  # no directories
    assert call(app, "/agent/consoles")[0] == 404  # not the console's: the agent's 404
    assert call(app, "/other/console")[0] == 404


def test_the_console_is_get_and_head_only(app: AgentApp) -> None:
    assert call(app, "/agent/console", method="POST")[0] == 404  # the agent's: not its path


def test_with_path_none_the_console_is_at_any_path_ending_in_console() -> None:
    app = AgentApp(agent, path=None, console=True)
    assert call(app, "/anything/console")[0] == 200
    assert call(app, "/console")[0] == 200
    assert call(app, "/x/console/main.js")[0] == 200
    assert call(app, "/x/console/nope.js")[0] == 405  # not a console file: the agent's answer
    assert call(app, "/x/console/console.css")[0] == 200
    assert call(app, "/console/console.css")[0] == 200
    assert call(app, "/x/consoles/main.js")[0] == 405  # not the console's folder
    assert call(app, "/x/console.css")[0] == 405


CONSOLE_FILES = sorted(
    f.name for f in FILES.iterdir() if f.suffix in (".html", ".css", ".js") and f.is_file()
)


@pytest.fixture(scope="module")
def fastapi_url(_shared_server: Any) -> Iterator[str]:
    """A FastAPI application with the console included at /agent, served by uvicorn."""
    from fastapi import FastAPI

    api = FastAPI()
    AgentApp(agent, console=True).include_in(api, "/agent")
    base, apps = _shared_server
    prefix = apps.add(api)
    yield base + prefix
    del apps.apps[prefix]


@pytest.mark.parametrize("name", CONSOLE_FILES)
def test_every_file_answers_under_fastapi_include_in(fastapi_url: str, name: str) -> None:
    """include_in gives the app no path of its own: the console is found from the request's
    path, and a file named like its folder (console.css) is one of its files, not the agent's
    POST-only route (405)."""
    answer = httpx.get(f"{fastapi_url}/agent/console/{name}")
    assert answer.status_code == 200, (name, answer.text)
    assert answer.content == (FILES / name).read_bytes()


@pytest.mark.parametrize("name", CONSOLE_FILES)
@pytest.mark.parametrize("path", ["/agent", None])
def test_every_file_answers_under_agentapp_alone(name: str, path: str | None) -> None:
    app = AgentApp(agent, path=path, console=True)
    status, _, body = call(app, f"/agent/console/{name}")
    assert status == 200, name
    assert body == (FILES / name).read_bytes()


def test_off_by_default() -> None:
    app = AgentApp(agent, path="/agent")
    assert app.console is False
    assert call(app, "/agent/console")[0] == 404
    assert call(app, "/agent/console/main.js")[0] == 404
    assert call(AgentApp(agent, path=None), "/x/console")[0] == 405


def test_the_files_are_read_once() -> None:
    console = Console()
    assert {"index.html", "console.css", "main.js", "events.json"} <= set(console.files)
    assert all(name == name.lower() for name in console.files)


def test_the_docs_show_the_console() -> None:
    root = FILES.parent.parent
    assert (root / "docs" / "images" / "console.png").stat().st_size > 10_000
    assert "![agui console](docs/images/console.png)" in (root / "README.md").read_text()
    assert "images/console.png" in (root / "docs" / "console.md").read_text()
