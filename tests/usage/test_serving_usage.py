"""docs/serving.md's command lines, used as written, from a fresh folder.

"Deployment / uvicorn": the page's agent (the block defining `echo`, whose comment names its
module, `uvicorn mymodule:app`) is written to mymodule.py, and each server line of the block
after its install line (`uvicorn mymodule:app ...`, `agui serve mymodule:echo ... --path
/agent`, `agui serve mymodule:app ...`) is started as written but on 127.0.0.1 and a free port
(the page's `--host 0.0.0.0 --port 8000`). Each answers `POST /agent`: `agui run URL` prints the
agent's text, and a Conversation through HttpAgent holds it. `nox -s wheel` runs this module with
the commands of a fresh virtualenv holding only the block's install line, `pip install
'agui-spec[server]'`.

"Front ends on another origin": `agui serve --cors-origin http://localhost:3000` answers a
browser's preflight from that origin, and refuses one from another.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .support import (
    Server,
    docs_block,
    docs_text,
    python_view,
    run_all,
    servers,
    shell_lines,
)

PAGE = "serving.md"
ORIGIN = "http://localhost:3000"


def agent_block() -> str:
    return docs_block(PAGE, "async def echo(")


def module() -> str:
    """The module the agent block's comment names (`# uvicorn mymodule:app`)."""
    found = re.search(r"# uvicorn (\w+):app", agent_block())
    assert found, "the agent example no longer says which module it is"
    return found.group(1)


def deployment_lines() -> list[str]:
    """The server lines of the uvicorn deployment block (its install line is `nox -s wheel`'s)."""
    lines = [c for c, _ in shell_lines(docs_text(PAGE, "uvicorn mymodule:app --host"))]
    assert lines[0].startswith("pip install "), "the block no longer starts with its install line"
    assert len(lines) == 4, lines
    return lines[1:]


def on_a_free_port(line: str) -> list[str]:
    """A server line as written, but on 127.0.0.1 and a free port (`{port}`)."""
    words = shlex.split(line)
    for option, value in (("--host", "127.0.0.1"), ("--port", "{port}")):
        assert option in words, f"{line!r} has no {option}"
        words[words.index(option) + 1] = value
    return words


def ready_line(words: list[str]) -> list[str]:
    if words[0] == "uvicorn":
        return ["Uvicorn running on http://127.0.0.1:{port} "]
    return ["serving ", "at http://127.0.0.1:{port}"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh folder holding the page's agent in the file its comment names."""
    folder = tmp_path_factory.mktemp("serving")
    (folder / f"{module()}.py").write_text(agent_block())
    return folder


@pytest.fixture(scope="module")
def deployed(project: Path) -> Iterator[dict[str, Server]]:
    """Every server line of the deployment block, at once."""
    commands = {}
    for line in deployment_lines():
        words = on_a_free_port(line)
        commands[line] = (words, ready_line(words))
    with servers(project, commands) as running:
        yield running


def test_the_deployment_lines_serve_the_agent(
    deployed: dict[str, Server], project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each server line: `agui run URL/agent` prints hello, a Conversation holds it."""
    assert module() in " ".join(deployment_lines()), "the lines no longer serve the page's module"
    urls = {line: f"{server.base}/agent" for line, server in deployed.items()}
    folder = tmp_path_factory.mktemp("caller")
    done = run_all({line: (["agui", "run", url], folder) for line, url in urls.items()})
    for line, url in urls.items():
        assert (done[line].returncode, done[line].stdout) == (0, "hello\n"), (
            f"{line}: {done[line].stderr}"
        )
        outcome, messages = python_view(url, "Hi")
        assert outcome == "success", line
        assert messages[-1]["content"] == "hello", line


@pytest.fixture(scope="module")
def cors_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    (line, comment), *rest = shell_lines(docs_text(PAGE, "agui serve --cors-origin"))
    assert not rest and "repeatable" in comment
    words = [*shlex.split(line), "--port", "{port}"]
    assert ORIGIN in words, f"{line!r} no longer allows {ORIGIN}"
    folder = tmp_path_factory.mktemp("cors")
    with servers(folder, {"cors": (words, ["serving ", "127.0.0.1:{port}"])}) as running:
        yield running["cors"]


def test_the_cors_line_allows_the_origin(cors_server: Server) -> None:
    """A browser's preflight from the allowed origin is answered; one from another is refused."""

    def preflight(origin: str) -> httpx.Response:
        return httpx.options(
            f"{cors_server.base}/agent",
            headers={
                "origin": origin,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type",
            },
            timeout=10,
        )

    allowed = preflight(ORIGIN)
    assert allowed.status_code == 200, allowed.text
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    assert preflight("http://elsewhere.example").status_code == 400
    outcome, messages = python_view(f"{cors_server.base}/agent", "Hi")
    assert outcome == "success" and messages[-1]["role"] == "assistant"
