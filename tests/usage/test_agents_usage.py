"""docs/agents.md's examples, used as written, from a fresh folder.

The page's module (the block whose comment names `agents.py`) and its FastAPI application (the
block naming `api.py`) are written to those files; each server line of the page's command-line
block (`uvicorn agents:server ...`, `agui serve greet=agents:greet shout=agents:shout ...`) and
the command the FastAPI block's comment gives are started as written, on a free port. Each
serves both agents: `agui run URL/shout --message hi` prints `HI` as the page says, `GET /agents`
lists them with the paths the page says, `/healthz` and `/readyz` answer.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.durable.support import wait_for

from .support import (
    Server,
    docs_block,
    docs_text,
    module_name,
    run_all,
    servers,
    shell_lines,
)

PAGE = "agents.md"


def server_lines() -> list[str]:
    lines = [c for c, _ in shell_lines(docs_text(PAGE, "agui serve greet="))]
    assert len(lines) == 2, lines
    return lines


def on_a_free_port(line: str) -> list[str]:
    words = shlex.split(line)
    assert "--port" in words, f"{line!r} has no --port"
    words[words.index("--port") + 1] = "{port}"
    return words


def ready_line(words: list[str]) -> list[str]:
    if words[0] == "uvicorn":
        return ["Uvicorn running on http://127.0.0.1:{port} "]
    return ["serving ", "at http://127.0.0.1:{port}"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("agents")
    for needle in ("# agents.py", "# api.py"):
        block = docs_block(PAGE, needle)
        (folder / f"{module_name(block)}.py").write_text(block)
    return folder


@pytest.fixture(scope="module")
def deployed(project: Path) -> Iterator[dict[str, Server]]:
    """Every server line of the page, and the FastAPI block's command, at once."""
    commands = {}
    for line in server_lines():
        words = on_a_free_port(line)
        commands[line] = (words, ready_line(words))
    found = re.search(r"run it with `(uvicorn api:api[^`]*)`", docs_block(PAGE, "# api.py"))
    assert found, "the FastAPI block no longer says how to run it"
    words = [*shlex.split(found.group(1)), "--port", "{port}"]
    commands["fastapi"] = (words, ready_line(words))
    with servers(project, commands) as running:
        yield running


def test_each_line_serves_both_agents(
    deployed: dict[str, Server], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`agui run URL/shout --message hi` prints HI; URL/greet says hello; /agents lists both at
    the page's paths; the health checks are ok."""
    prefixes = {name: "/v1" if name == "fastapi" else "" for name in deployed}
    urls = {name: f"{server.base}{prefixes[name]}" for name, server in deployed.items()}
    folder = tmp_path_factory.mktemp("caller")
    commands = {}
    for name, url in urls.items():
        commands[(name, "shout")] = (["agui", "run", f"{url}/shout", "--message", "hi"], folder)
        commands[(name, "greet")] = (["agui", "run", f"{url}/greet"], folder)
    done = run_all(commands)
    for (name, agent), result in done.items():
        expected = "HI\n" if agent == "shout" else "hello\n"
        assert (result.returncode, result.stdout) == (0, expected), f"{name}: {result.stderr}"
    for name, url in urls.items():
        listing = httpx.get(f"{url}/agents", timeout=10).json()["agents"]
        paths = [(a["name"], a["path"]) for a in listing]
        assert paths == [("greet", f"{prefixes[name]}/greet"), ("shout", f"{prefixes[name]}/shout")]
        assert httpx.get(f"{url}/healthz", timeout=10).json() == {"status": "ok"}, name
        # the store's probe (SQLite writes) may miss its bound on a loaded machine: asked again
        wait_for(lambda u=url: httpx.get(f"{u}/readyz", timeout=10).json() == {"status": "ok"})
