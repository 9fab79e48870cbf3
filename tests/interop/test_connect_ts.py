"""The official TypeScript client's connectAgent() (@ag-ui/client 1.0.0) against this server with
a store: `ts_connect.mjs` subclasses its HttpAgent with a `connect(input)` that GETs the thread
endpoint (as CopilotKit's runtime client does) and returns the events as an Observable, read with
the package's own helpers. connectAgent() runs its pipeline over it (chunk expansion,
verification, apply), and must hydrate the same messages, state and pending interrupts as this
package's `Conversation.connect`, with no warning: for a finished thread (its compacted history,
and `?history=full`) and for a thread whose run is still going (the history, then the live run).

Runs under AGUI_INTEROP=1, like the rest of tests/interop (`nox -s interop`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import agui
from agui.cli.demo import DemoAgent
from agui.http.client import HttpAgent
from agui.http.server import AgentApp
from agui.stream.conversation import Conversation
from tests.conftest import live_server
from tests.interop.test_interop import HERE, TIMEOUT, WORK, node

__all__ = ["node"]  # the fixture, used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

THREAD = "thread-ts-connect"


@pytest.fixture(scope="module")
def script(node: str) -> str:
    """ts_connect.mjs beside the installed packages (ESM imports resolve from its folder)."""
    for script in ("ts_connect.mjs", "console_capture.mjs"):
        shutil.copy(HERE / script, WORK / script)
    return str(WORK / "ts_connect.mjs")


def ts_connect(node: str, script: str, url: str, *, full: bool = False) -> Any:
    command = [node, script, url, THREAD, *(["--full"] if full else [])]
    env = {k: v for k, v in os.environ.items() if k != "SUPPRESS_TRANSFORMATION_WARNINGS"}
    done = subprocess.run(
        command, cwd=WORK, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, f"ts_connect.mjs exited {done.returncode}: {done.stderr}"
    lines = done.stdout.strip().splitlines()
    assert lines, f"ts_connect.mjs printed nothing; stderr: {done.stderr}"
    report = json.loads(lines[-1])
    assert report["error"] is None, report["error"]
    assert report["ok"] is True
    assert report["warnings"] == [], "the official client warned:\n" + "\n".join(report["warnings"])
    return report


def ours(url: str, *, full: bool = False) -> Conversation:
    conversation = Conversation(THREAD, keep_events=True)
    conversation.connect_sync(HttpAgent(url), history="full" if full else "compact")
    assert conversation.failures == [] and conversation.warnings == []
    return conversation


def interrupts(conversation: Conversation) -> list[Any]:
    return [agui.to_json(i) for i in conversation.pending_interrupts]


@contextmanager
def durable(app: Any) -> Iterator[str]:
    with live_server(app) as base:
        yield base + "/agent"


@pytest.mark.parametrize("full", [False, True], ids=["compact", "full"])
def test_connect_agent_hydrates_what_conversation_connect_does(
    node: str, script: str, full: bool
) -> None:
    """Two runs of the demo agent, the second interrupted: the official client connected to the
    thread holds this package's connected conversation's messages, state and interrupts (and,
    from the compacted history, those of the conversation that ran the runs)."""
    with durable(AgentApp(DemoAgent(delay=0), store="memory://")) as url:
        runner = Conversation(THREAD)
        runner.run_sync(HttpAgent(url), "hi")
        runner.run_sync(HttpAgent(url), "again", forwarded_props={"interrupt": True})
        assert runner.runs[-1].outcome == "interrupt"
        report = ts_connect(node, script, url, full=full)
        connected = ours(url, full=full)
    assert report["events"] == [e.type.value for e in connected.events]
    assert report["messages"] == connected.messages_json()
    assert report["state"] == connected.state
    assert report["pendingInterrupts"] == interrupts(connected) == interrupts(runner)
    if not full:
        assert report["events"] == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED",
        ]
        assert report["messages"] == runner.messages_json()
        assert report["state"] == runner.state


class Gated:
    """The demo agent, holding its run after the first `hold` events until `gate` is set."""

    def __init__(self, hold: int = 6) -> None:
        self.demo = DemoAgent(delay=0)
        self.hold = hold
        self.gate = threading.Event()
        self.held = threading.Event()

    async def __call__(self, run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        import asyncio

        count = 0
        async for event in self.demo(run_input):
            count += 1
            if count == self.hold and run_input.messages[-1].content == "live":  # type: ignore[union-attr]
                self.held.set()
                while not self.gate.is_set():
                    await asyncio.sleep(0.01)
            yield event


class Connects:
    """An ASGI wrapper that counts the requests to a thread's events (connects) as they come."""

    def __init__(self, app: Any, expected: int) -> None:
        self.app = app
        self.seen = 0
        self.expected = expected
        self.all_in = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and "/threads/" in scope["path"]:
            self.seen += 1
            if self.seen >= self.expected:
                self.all_in.set()
        await self.app(scope, receive, send)


def test_connect_agent_follows_a_live_run_as_conversation_connect_does(
    node: str, script: str
) -> None:
    """A finished run, then a run held half way: the official client and this package's
    connect while it is held, it is released, and both end with the messages and state of the
    conversation that ran the runs."""
    agent = Gated()
    app = Connects(AgentApp(agent, store="memory://"), expected=2)
    with durable(app) as url:
        runner = Conversation(THREAD)
        runner.run_sync(HttpAgent(url), "hi")
        running = threading.Thread(target=lambda: runner.run_sync(HttpAgent(url), "live"))
        running.start()
        assert agent.held.wait(TIMEOUT)
        reports: list[Any] = []
        theirs = threading.Thread(target=lambda: reports.append(ts_connect(node, script, url)))
        theirs.start()
        connected: list[Conversation] = []
        mine = threading.Thread(target=lambda: connected.append(ours(url)))
        mine.start()
        assert app.all_in.wait(TIMEOUT), "the clients did not connect"
        agent.gate.set()
        for thread in (running, theirs, mine):
            thread.join(TIMEOUT)
    [report], [conversation] = reports, connected
    assert runner.failures == []
    history = ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert report["events"][:4] == history
    assert "TEXT_MESSAGE_CONTENT" in report["events"]  # the live run's remainder
    assert report["events"] == [e.type.value for e in conversation.events]
    assert report["messages"] == conversation.messages_json() == runner.messages_json()
    assert report["state"] == conversation.state == runner.state
