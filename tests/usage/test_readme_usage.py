"""The README, used as written, from a fresh folder.

Its "Serve an agent" block is written to the file its first comment names (echo.py) and served
the three ways a user would: `uvicorn echo:app` (the command in that comment), `agui serve
echo:app` and `agui serve echo:echo --path /agent`, each on a free port. Against each, the "Call
an agent" block runs as a script (only the port of its URL changed) and must print what its
comments say, and the official TypeScript client (AGUI_INTEROP=1) must complete a run with no
warning and hold the same messages as this package's client. Then `agui run URL`, plain and with
`--summary`, as the README's command table describes them, and against no server at all.
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
    find_node,
    free_port,
    interop,
    module_name,
    readme_block,
    run_all,
    servers,
    ts_runs,
)

WAYS = ("uvicorn", "agui serve app", "agui serve agent")


def serve_block() -> str:
    return readme_block("AgentApp(")


def call_block() -> str:
    return readme_block("HttpAgent(")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh folder holding the README's server example, in the file its comment names."""
    folder = tmp_path_factory.mktemp("readme")
    block = serve_block()
    (folder / f"{module_name(block)}.py").write_text(block)
    return folder


@pytest.fixture(scope="module")
def served(project: Path) -> Iterator[dict[str, Server]]:
    """The README's server, served the three ways at once (each on its own free port)."""
    block = serve_block()
    name = module_name(block)
    found = re.search(r"`(uvicorn [^`]+)`", block)
    assert found, "the server example no longer says how to run it with uvicorn"
    uvicorn = found.group(1).split()  # as the comment says, given a free --port
    at = "at http://127.0.0.1:{port}"
    with servers(
        project,
        {
            "uvicorn": (
                [*uvicorn, "--port", "{port}"],
                ["Uvicorn running on http://127.0.0.1:{port} "],
            ),
            "agui serve app": (
                ["agui", "serve", f"{name}:app", "--port", "{port}"],
                [f"serving {name}:app (an ASGI app) {at}"],
            ),
            "agui serve agent": (
                ["agui", "serve", f"{name}:echo", "--port", "{port}", "--path", "/agent"],
                [f"serving {name}:echo {at}/agent"],
            ),
        },
    ) as running:
        yield running


def agent_url(server: Server) -> str:
    """The URL of the README's client example, at the server's port."""
    found = re.search(r'"(http://127\.0\.0\.1:8000/[^"]*)"', call_block())
    assert found, "the client example no longer names a URL on 127.0.0.1:8000"
    return at_port(found.group(1), server.port)


@pytest.fixture(scope="module")
def nowhere() -> str:
    """An agent URL where nothing listens."""
    return f"http://127.0.0.1:{free_port()}/agent"


@pytest.fixture(scope="module")
def ran(
    served: dict[str, Server], project: Path, nowhere: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, CompletedProcess[str]]:
    """Every command of this module's tests, run at once from fresh folders: the README's client
    as `python client.py` against each server, `agui run URL` against each, `agui run URL
    --summary`, and both against no server."""
    commands: dict[str, tuple[list[str], Path]] = {}
    for way in WAYS:
        folder = tmp_path_factory.mktemp("client")
        (folder / "client.py").write_text(at_port(call_block(), served[way].port))
        commands[f"client {way}"] = (["python", "client.py"], folder)
        commands[f"run {way}"] = (["agui", "run", agent_url(served[way])], project)
    summary = ["agui", "run", agent_url(served["agui serve agent"]), "--summary"]
    commands["run --summary"] = (summary, project)
    commands["run nowhere"] = (["agui", "run", nowhere], project)
    commands["run nowhere --summary"] = (["agui", "run", nowhere, "--summary"], project)
    return run_all(commands)


@pytest.fixture(scope="module")
def ts(served: dict[str, Server]) -> dict[str, CompletedProcess[str]]:
    """The official client's run against each server, at once (only the interop tests ask)."""
    return ts_runs(find_node(), {way: agent_url(served[way]) for way in WAYS}, "Hi")


@pytest.mark.parametrize("way", WAYS)
def test_the_call_example_runs_as_written(ran: dict[str, CompletedProcess[str]], way: str) -> None:
    """`python client.py` (the README's client, its port changed) prints what its comments say."""
    done = ran[f"client {way}"]
    assert done.returncode == 0, done.stderr
    assert expected_prints(call_block()), "the client example no longer says what it prints"
    assert done.stdout.splitlines() == expected_prints(call_block())
    assert done.stderr == ""


@interop
@pytest.mark.parametrize("way", WAYS)
def test_the_typescript_client_completes_a_run(
    served: dict[str, Server], ts: dict[str, CompletedProcess[str]], way: str
) -> None:
    """@ag-ui/client's HttpAgent.runAgent against the README's server: completed, no warning, the
    messages this package's Conversation holds (the reply's id is the README agent's)."""
    reply = expected_prints(call_block())[1]  # the client's `# hello` (after `# success`)
    report = check_ts_agrees(ts[way], agent_url(served[way]), "Hi", reply)
    assert report["messages"][-1]["id"] == f"reply-{report['runId']}"


@pytest.mark.parametrize("way", WAYS)
def test_agui_run_prints_the_reply(ran: dict[str, CompletedProcess[str]], way: str) -> None:
    """`agui run URL`: the assistant's text on stdout, the outcome on stderr, exit 0."""
    done = ran[f"run {way}"]
    assert (done.returncode, done.stdout, done.stderr) == (0, "hello\n", "agui run: completed\n")


def test_agui_run_summary_is_one_json_object(ran: dict[str, CompletedProcess[str]]) -> None:
    """`agui run URL --summary`: one JSON object, outcome completed, the messages (the default
    message "hello" and the echo's reply), exit 0, nothing on stderr."""
    done = ran["run --summary"]
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (line,) = done.stdout.splitlines()
    summary = json.loads(line)
    assert (summary["outcome"], summary["error"], summary["warnings"]) == ("completed", None, [])
    assert summary["eventTypes"] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert [(m["role"], m["content"]) for m in summary["messages"]] == [
        ("user", "hello"),
        ("assistant", "hello"),
    ]
    run_id = summary["events"][0]["runId"]
    assert summary["messages"][-1]["id"] == f"reply-{run_id}"


def test_agui_run_without_a_server_fails(
    ran: dict[str, CompletedProcess[str]], nowhere: str
) -> None:
    """Nothing listening: exit 1 and one line saying why (plain), outcome failed (summary)."""
    done = ran["run nowhere"]
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"agui run: failed: Cannot connect to {nowhere}: ")
    assert done.stderr.count("\n") == 1, done.stderr
    done = ran["run nowhere --summary"]
    assert done.returncode == 1
    summary = json.loads(done.stdout)
    assert summary["outcome"] == "failed" and nowhere in summary["error"]
