"""The official TypeScript client (@ag-ui/client 1.0.0) against two agents of one AgentServer on
a shared real redis-server: runAgent() on each agent's URL (/first, /second) on the same thread
id completes with no warning, each run reaches its own agent only, and connectAgent() on each
agent's thread (ts_connect.mjs) hydrates that agent's conversation, not the other's.

Runs under AGUI_INTEROP=1, like the rest of tests/interop (`nox -s interop`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.cli.demo import DemoAgent
from tests.conftest import live_server
from tests.interop.test_connect_ts import THREAD, script, ts_connect
from tests.interop.test_interop import TIMEOUT, WORK, Recorder, node
from tests.store.support import redis_server, skip_or_fail_without_redis

__all__ = ["node", "script"]  # the fixtures, used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

NAMES = ("first", "second")


@pytest.fixture
def two_agents(tmp_path: Path) -> Iterator[tuple[str, dict[str, Recorder]]]:
    """An AgentServer of two demo agents (each recorded apart) on a redis-server of its own,
    served by uvicorn; yields its base URL and the recorders by name."""
    skip_or_fail_without_redis()
    recorders = {name: Recorder(DemoAgent(delay=0)) for name in NAMES}
    with redis_server(tmp_path) as url:
        server = agui.AgentServer(dict(recorders), store=url)
        with live_server(server) as base:
            yield base, recorders


def ts_run(node: str, url: str, message: str) -> Any:
    """One runAgent() of ts_client.mjs on THREAD; its report."""
    command = [node, str(WORK / "ts_client.mjs"), url, "--message", message, "--thread", THREAD]
    env = {k: v for k, v in os.environ.items() if k != "SUPPRESS_TRANSFORMATION_WARNINGS"}
    done = subprocess.run(
        command, cwd=WORK, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, f"ts_client.mjs exited {done.returncode}: {done.stderr}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["error"] is None, report["error"]
    assert report["ok"] is True
    assert report["warnings"] == [], "the official client warned:\n" + "\n".join(report["warnings"])
    return report


def test_official_client_runs_and_connects_each_agent(
    node: str, script: str, two_agents: tuple[str, dict[str, Recorder]]
) -> None:
    base, recorders = two_agents
    reports = {name: ts_run(node, f"{base}/{name}", f"hello {name}") for name in NAMES}
    for name, report in reports.items():
        other = recorders[NAMES[1 - NAMES.index(name)]]
        assert report["runId"] in recorders[name].runs
        assert report["runId"] not in other.runs
        assert report["outcome"] == "success"
        answer = report["messages"][-1]["content"]
        assert answer == f"You said: hello {name} ({len(f'hello {name}')} characters)."
    listing = httpx.get(f"{base}/agents", timeout=TIMEOUT).json()["agents"]
    assert [a["name"] for a in listing] == list(NAMES)
    for name in NAMES:  # the same thread id on both agents: each holds its own conversation
        connected = ts_connect(node, script, f"{base}/{name}")
        assert connected["messages"] == reports[name]["messages"]
        assert connected["state"] == reports[name]["state"]
