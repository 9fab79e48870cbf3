"""`agui serve NAME=MODULE:ATTR ...`: several agents on one server (agui.AgentServer), each at
/NAME, listed at /agents, with the health checks; one MODULE:ATTR served as before, and what
cannot be served together refused before the server starts (exit status 2, one line). Each case
a real subprocess (tests/test_cli_serve.py's fixtures)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from .test_cli_serve import AGUI, STARTUP, app_dir, run_text, served

__all__ = ["app_dir", "served"]  # the fixtures, used by name


def test_two_agents_each_at_its_name(served: Any, app_dir: Path) -> None:
    """The "serving" line names both, then the list's URL and each agent's console; each agent
    answers at /NAME, /agents lists them, /healthz and /readyz answer."""
    server = served("a=mymod:echo", "b=mymod:whoami", "--port", "0", cwd=app_dir)
    base = server.url()
    assert server.serving.startswith("serving 2 agents: a (mymod:echo), b (mymod:whoami) at ")
    following = [server.line() for _ in range(4)]
    assert following == [
        f"agents: {base}/agents\n",
        f"console: {base}/a/console (a)\n",
        f"console: {base}/b/console (b)\n",
        f"metrics: {base}/metrics\n",
    ]
    assert run_text(f"{base}/a")[1] == "hello"
    assert run_text(f"{base}/b")[1] == str(server.proc.pid)
    listing = httpx.get(f"{base}/agents", timeout=STARTUP).json()["agents"]
    assert [(a["name"], a["path"]) for a in listing] == [("a", "/a"), ("b", "/b")]
    assert httpx.get(f"{base}/a/console", timeout=STARTUP).status_code == 200
    assert httpx.get(f"{base}/healthz", timeout=STARTUP).json() == {"status": "ok"}
    assert httpx.get(f"{base}/readyz", timeout=STARTUP).json() == {"status": "ok"}
    scraped = httpx.get(f"{base}/metrics", timeout=STARTUP).text
    assert 'agui_runs_ended_total{agent="a",outcome="success"} 1.0' in scraped
    assert 'agui_runs_ended_total{agent="b",outcome="success"} 1.0' in scraped


def test_the_settings_apply_to_each_agent(served: Any, app_dir: Path, tmp_path: Path) -> None:
    """--store, --no-console and a limit reach every agent's AgentApp; one SQLite file holds
    both agents' runs, each in its namespace; the "serving" line names the store."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    server = served(
        "a=mymod:echo", "b=mymod:echo", "--store", store, "--no-console", "--port", "0",
        "--max-active-runs", "5", cwd=app_dir,
    )  # fmt: skip
    base = server.url()
    assert f"runs kept in {store}" in server.serving
    assert server.line() == f"agents: {base}/agents\n"
    for name in ("a", "b"):
        assert run_text(f"{base}/{name}")[1] == "hello"
        capabilities = httpx.get(f"{base}/{name}/capabilities", timeout=STARTUP).json()
        assert capabilities["transport"]["resumable"] is True
        assert httpx.get(f"{base}/{name}/console", timeout=STARTUP).status_code == 404


def test_several_workers_serve_several_agents(served: Any, app_dir: Path) -> None:
    """--workers 2: each worker builds the same AgentServer (the factory gets the names)."""
    server = served("a=mymod:echo", "b=mymod:whoami", "--workers", "2", "--port", "0", cwd=app_dir)
    base = server.url()
    assert "(2 workers)" in server.serving
    assert run_text(f"{base}/a")[1] == "hello"
    assert run_text(f"{base}/b")[1].isdigit()


def test_one_agent_is_served_as_before_with_health(served: Any, app_dir: Path) -> None:
    """One MODULE:ATTR: at --path as before, /agents not served, /healthz and /readyz answered."""
    server = served("mymod:echo", "--port", "0", cwd=app_dir)
    url = server.url()
    assert url.endswith("/agent")
    base = url.removesuffix("/agent")
    assert run_text(url)[1] == "hello"
    assert httpx.get(f"{base}/healthz", timeout=STARTUP).json() == {"status": "ok"}
    assert httpx.get(f"{base}/readyz", timeout=STARTUP).json() == {"status": "ok"}
    assert httpx.get(f"{base}/agents", timeout=STARTUP).status_code == 404


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a=mymod:echo", "mymod:whoami"], "give every agent a name"),
        (["mymod:echo", "mymod:whoami"], "serve one MODULE:ATTR, or name each agent"),
        (["a=mymod:echo", "a=mymod:whoami"], "the name 'a' is given twice"),
        (["=mymod:echo"], "expected NAME=MODULE:ATTR"),
        (["a="], "expected NAME=MODULE:ATTR"),
        (["agents=mymod:echo"], "is a path of the server itself"),
        (["a/b=mymod:echo"], "is not an agent name"),
        (["a=mymod:app"], "a=mymod:app is an ASGI app"),
        (["a=mymod:answer"], "a=mymod:answer is not an agent"),
        (["a=mymod:nothing"], "cannot load 'mymod:nothing'"),
        (["a=mymod:echo", "--path", "/x"], "--path is for one agent"),
        (["a=mymod:echo", "--model", "gpt"], "give NAME=MODULE:ATTR or --model, not both"),
    ],
)
def test_what_cannot_be_served_together_is_refused(
    app_dir: Path, args: list[str], message: str
) -> None:
    done = subprocess.run(
        [str(AGUI), "serve", *args, "--port", "0"],
        cwd=app_dir,
        capture_output=True,
        text=True,
        timeout=STARTUP,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("agui serve: ") and message in lines[0], lines[0]
