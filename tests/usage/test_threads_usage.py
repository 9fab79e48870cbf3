"""docs/threads.md, used as written: its Python block (threads_example.py) runs from a fresh
folder, as a user's script in a fresh interpreter, against a server with a store on loopback
(the page's 127.0.0.1:8000 moved to its port) that holds three threads, t-1 among them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx

import agui

from ..conftest import live_server
from ..durable.agents import paced
from ..durable.support import body, post
from .support import at_port, docs_block, module_name, user_env

PAGE = "threads.md"


def test_the_threads_example_runs(tmp_path: Path) -> None:
    with live_server(agui.AgentApp(paced, path="/agent", store="memory://")) as base:
        check(base, tmp_path)


def check(base: str, tmp_path: Path) -> None:
    for run_id, thread_id in [("r1", "t-1"), ("r2", "t-2"), ("r3", "t-1"), ("r4", "t-3")]:
        assert post(f"{base}/agent", body(run_id, thread_id, count=2)).status == 200
    block = docs_block(PAGE, "# threads_example.py")
    script = tmp_path / f"{module_name(block)}.py"
    script.write_text(at_port(block, urlsplit(base).port or 0), "utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "t-3 success",
        "t-1 success",
        "t-2 success",
        "2 messages",  # the second run's input held its own message only
        "2 runs deleted",
    ]
    assert httpx.get(f"{base}/agent/threads/t-1", timeout=30).status_code == 404
