"""docs/getting-started.md, used as written, from a fresh folder.

"A first agent" is written to the file its comment names (echo.py) and served by each command of
the page's "Serve it" block (`uvicorn echo:app`, `agui serve echo:echo`; each given a free
`--port`). Against each: every `agui run` line of the page's "call it from another shell" block
(the port changed) with what its comment says it prints, "A first client" run as a script, and
the official TypeScript client (AGUI_INTEROP=1). And `agui demo` prints the transcript the page
shows (but for the port).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from ..test_docs import expected_prints
from .support import (
    Server,
    at_port,
    check_ts_agrees,
    docs_block,
    docs_text,
    find_node,
    interop,
    module_name,
    run_all,
    servers,
    shell_lines,
    ts_runs,
)

PAGE = "getting-started.md"
WAYS = ("uvicorn", "agui serve")
RUNS = ("plain", "--json", "--summary")
EVENTS = [
    "RUN_STARTED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "RUN_FINISHED",
]


def agent_block() -> str:
    return docs_block(PAGE, "AgentApp(")


def client_block() -> str:
    return docs_block(PAGE, "HttpAgent(")


def serve_lines() -> list[tuple[str, str]]:
    """The page's serve commands: [("uvicorn echo:app", "the ASGI app, at URL"), ...]."""
    lines = shell_lines(docs_text(PAGE, "uvicorn "))
    assert [c.split()[0] for c, _ in lines] == ["uvicorn", "agui"]
    return lines


def agent_url() -> str:
    """The URL the page says the server answers at (on 127.0.0.1:8000)."""
    found = re.search(r"http://\S+", serve_lines()[0][1])
    assert found, "the page no longer says where the server answers"
    return found.group(0)


def run_lines() -> list[tuple[str, str]]:
    """The page's `agui run` commands with their comments."""
    lines = shell_lines(docs_text(PAGE, "agui run "))
    assert lines and all(c.startswith("agui run ") for c, _ in lines)
    return lines


def run_line(mode: str) -> tuple[str, str]:
    """The page's `agui run` line of a mode (plain, --json or --summary) and its comment."""
    lines: dict[str, tuple[str, str]] = {}
    for line, comment in run_lines():
        words = line.split()
        lines[next((w for w in words if w in RUNS), "plain")] = (line, comment)
    assert sorted(lines) == sorted(RUNS), f"the page's agui run lines are {sorted(lines)}"
    return lines[mode]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("getting-started")
    block = agent_block()
    (folder / f"{module_name(block)}.py").write_text(block)
    return folder


@pytest.fixture(scope="module")
def served(project: Path) -> Iterator[dict[str, Server]]:
    """Each serve command of the page, as written plus `--port`, all at once."""
    path = agent_url().split("8000", 1)[1]
    ready = {
        "uvicorn": ["Uvicorn running on http://127.0.0.1:{port} "],
        "agui": ["serving ", f"at http://127.0.0.1:{{port}}{path}"],
    }
    commands: dict[str, tuple[list[str], list[str]]] = {}
    for (line, _), way in zip(serve_lines(), WAYS, strict=True):
        words = line.split()
        commands[way] = ([*words, "--port", "{port}"], ready[words[0]])
    with servers(project, commands) as running:
        yield running


@pytest.fixture(scope="module")
def ran(
    served: dict[str, Server], project: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, CompletedProcess[str]]:
    """Every command of this module's tests, run at once from fresh folders: each `agui run`
    line and "A first client" (as `python client.py`) against each server, and `agui demo`."""
    commands: dict[str, tuple[list[str] | str, Path]] = {}
    for way in WAYS:
        port = served[way].port
        for mode in RUNS:
            commands[f"{mode} {way}"] = (at_port(run_line(mode)[0], port), project)
        folder = tmp_path_factory.mktemp("client")
        (folder / "client.py").write_text(at_port(client_block(), port))
        commands[f"client {way}"] = (["python", "client.py"], folder)
    commands["demo"] = (["agui", "demo"], tmp_path_factory.mktemp("demo"))
    return run_all(commands)


@pytest.fixture(scope="module")
def ts(served: dict[str, Server]) -> dict[str, CompletedProcess[str]]:
    """The official client's run against each server, at once (only the interop tests ask)."""
    urls = {way: at_port(agent_url(), served[way].port) for way in WAYS}
    return ts_runs(find_node(), urls, "Hi")


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("mode", RUNS)
def test_the_agui_run_lines(ran: dict[str, CompletedProcess[str]], way: str, mode: str) -> None:
    """Each `agui run` line of the page: exit 0 and what its comment says."""
    comment = run_line(mode)[1]
    done = ran[f"{mode} {way}"]
    assert done.returncode == 0, done.stderr
    if mode == "plain":
        assert comment.startswith("prints: ")
        assert done.stdout == comment.removeprefix("prints: ") + "\n"
        assert done.stderr == "agui run: completed\n"
    elif mode == "--json":
        assert "every event, one JSON line each" in comment
        events = [json.loads(text) for text in done.stdout.splitlines()]
        assert [e["type"] for e in events] == EVENTS
        assert done.stderr == ""
    else:
        assert "messages, state, outcome as JSON" in comment
        summary = json.loads(done.stdout)
        assert summary["outcome"] == "completed" and summary["state"] == {}
        assert [(m["role"], m["content"]) for m in summary["messages"]] == [
            ("user", "Hi"),
            ("assistant", "hello"),
        ]
        assert done.stderr == ""


@pytest.mark.parametrize("way", WAYS)
def test_the_first_client_runs_as_written(ran: dict[str, CompletedProcess[str]], way: str) -> None:
    """`python client.py` ("A first client", its port changed) prints what its comments say:
    the outcome, then each message's role and content ("user Hi, then assistant hello")."""
    done = ran[f"client {way}"]
    assert done.returncode == 0, done.stderr
    outcome, messages = expected_prints(client_block())
    assert done.stdout.splitlines() == [outcome, *messages.split(", then ")]
    assert done.stderr == ""


@interop
@pytest.mark.parametrize("way", WAYS)
def test_the_typescript_client_completes_a_run(
    served: dict[str, Server], ts: dict[str, CompletedProcess[str]], way: str
) -> None:
    """@ag-ui/client against the page's agent: completed, no warning, the same messages."""
    reply = run_line("plain")[1].removeprefix("prints: ")  # the page's `# prints: hello`
    report = check_ts_agrees(ts[way], at_port(agent_url(), served[way].port), "Hi", reply)
    assert report["messages"][-1]["id"] == f"reply-{report['runId']}"


def test_agui_demo_prints_what_the_page_shows(ran: dict[str, CompletedProcess[str]]) -> None:
    """`agui demo`: exit 0, the transcript the page shows (its port is any free one)."""
    done = ran["demo"]
    assert done.returncode == 0, done.stderr

    def any_port(text: str) -> list[str]:
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text).splitlines()

    assert any_port(done.stdout) == any_port(docs_text(PAGE, "demo agent at", language="text"))
    assert done.stderr == ""
