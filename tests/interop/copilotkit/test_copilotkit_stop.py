"""CopilotKit's runtime as the host in front of this server, and its stop button.

`copilotkit_host.mjs` starts @copilotkit/runtime 1.75.0 (its v2 node listener, the default
InMemoryAgentRunner) on a free loopback port with one agent, an @ag-ui/client HttpAgent whose URL
is the AgentApp served here, and drives it with CopilotKit's own headless client
(@copilotkit/core's CopilotKitCore, a `window` shim being all it needs in node) as its React chat
does: connect to the thread, then four turns on it: one that completes, a second, a third that
is stopped midway with `copilotkit.stopAgent({agent})` (what CopilotChat's stop button calls),
and a fourth sent as soon as the third has ended, which must answer normally.

CopilotKit's stop never reaches `POST {path}/runs/{runId}/stop`: the client posts
`{runtime}/agent/default/stop/{threadId}` to the runtime, whose runner aborts the HttpAgent's
fetch, so this server sees the run's POST disconnect and nothing else. Without a store that
cancels the agent and the next turn runs. With a store (durable runs), before AgentApp's
`detach`, the run went on detached and the next turn got 409 "thread ... has a run going",
shown as RUN_ERROR INCOMPLETE_STREAM (ThreadStillLocked below). Now a run whose client did not
ask to resume it (no Agui-Resume header) is stopped when its request goes away, and the next turn
waits the moment that stop takes.

Runs under AGUI_INTEROP=1, like the rest of tests/interop (`nox -s interop`), with the packages
of tests/interop/package.json installed under .interop/.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.http.server import AgentApp
from tests.conftest import live_server
from tests.interop.test_interop import TIMEOUT, WORK, node

__all__ = ["node"]  # the fixture (node on PATH, the @ag-ui pins installed), used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

HERE = Path(__file__).resolve().parent
SCRIPT = "copilotkit_host.mjs"
PINNED = {"@copilotkit/runtime": "1.75.0", "@copilotkit/core": "1.75.0"}
THREAD = "thread-copilotkit"

QUICK = 4  # text deltas of an ordinary turn
SLOW = 40  # text deltas of the turn that is stopped, SLOW_DELAY apart: 4 s in all
SLOW_DELAY = 0.1
STOP_AFTER = 2  # the client stops the slow turn once this many deltas arrived


class ThreadStillLocked(AssertionError):
    """The turn after the stop got 409 "thread ... has a run going": the stopped run still holds
    the thread (what a store gave before AgentApp's detach)."""


@pytest.fixture(scope="module")
def host(node: str) -> str:
    """copilotkit_host.mjs beside the installed packages (ESM imports resolve from its folder)."""
    for name, version in PINNED.items():
        manifest = WORK / "node_modules" / name / "package.json"
        if not manifest.is_file():
            pytest.fail(
                f"{name} is not installed under {WORK}: copy tests/interop/package*.json there "
                "and run `npm ci --prefix .interop` (or `nox -s interop`)"
            )
        installed = json.loads(manifest.read_text())["version"]
        if installed != version:
            pytest.fail(f"{name} {installed} is installed under {WORK}; the pin is {version}")
    shutil.copy(HERE / SCRIPT, WORK / SCRIPT)
    return str(WORK / SCRIPT)


def reply(text: str, count: int) -> str:
    return "".join(f"{text}-{i} " for i in range(count))


class SlowAgent:
    """Streams a reply of QUICK deltas, or of SLOW deltas SLOW_DELAY apart when the user says
    "slow"; keeps, per run id, whether the run was cancelled or came to its end."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.texts: dict[str, str] = {}

    async def __call__(self, run: agui.RunAgentInput) -> AsyncIterator[Any]:
        text = run.messages[-1].content  # type: ignore[union-attr]
        assert isinstance(text, str)
        self.texts[run.run_id] = text
        count, delay = (SLOW, SLOW_DELAY) if text == "slow" else (QUICK, 0.02)
        message = f"reply-{run.run_id}"
        self.outcomes[run.run_id] = "running"
        try:
            yield agui.TextMessageStartEvent(message_id=message)
            for i in range(count):
                await asyncio.sleep(delay)
                yield agui.TextMessageContentEvent(message_id=message, delta=f"{text}-{i} ")
            yield agui.TextMessageEndEvent(message_id=message)
            self.outcomes[run.run_id] = "ended"
        except BaseException:
            self.outcomes[run.run_id] = "cancelled"
            raise


class Requests:
    """An ASGI wrapper keeping, for each HTTP request, its method and path (and a POSTed run's
    runId), its status, when the client left (http.disconnect) and when the response ended
    (monotonic seconds)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry: dict[str, Any] = {
            "method": scope["method"],
            "path": scope["path"],
            "runId": None,
            "at": time.monotonic(),
            "status": None,
            "disconnect": None,
            "ended": None,
        }
        self.seen.append(entry)
        body = bytearray()

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body") and body.startswith(b"{"):
                    entry["runId"] = json.loads(body).get("runId")
            elif message["type"] == "http.disconnect" and entry["disconnect"] is None:
                entry["disconnect"] = time.monotonic()
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                entry["ended"] = time.monotonic()
            await send(message)

        await self.app(scope, receiving, sending)


@contextmanager
def agui_server(store: str | None) -> Iterator[tuple[str, SlowAgent, Requests]]:
    agent = SlowAgent()
    app = Requests(AgentApp(agent, path="/agent", store=store))
    with live_server(app) as base:
        yield base + "/agent", agent, app


def copilotkit(node: str, host: str, url: str, client: str) -> Any:
    """Run copilotkit_host.mjs against `url`; its report."""
    turns = [
        {"text": "first"},
        {"text": "second"},
        {"text": "slow", "stopAfter": STOP_AFTER},
        {"text": "after the stop"},
    ]
    command = [
        node,
        host,
        url,
        "--thread",
        THREAD,
        "--client",
        client,
        "--turns",
        json.dumps(turns),
    ]
    done = subprocess.run(
        command, cwd=WORK, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"{SCRIPT} printed nothing (exit {done.returncode}); stderr: {done.stderr}"
    report = json.loads(lines[-1])
    assert done.returncode == 0 and report["ok"], report.get("error") or done.stderr
    report["stderr"] = done.stderr
    return report


def stored_end(url: str, run_id: str) -> dict[str, Any]:
    """The terminal event of a run in the log (the resume endpoint, read to the run's end)."""
    response = httpx.get(f"{url}/runs/{run_id}/events", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    events = [
        json.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    assert events, f"run {run_id}: nothing stored"
    return events[-1]  # type: ignore[no-any-return]


def summary(report: Any, requests: Requests) -> str:
    """What each side saw, for an assertion's message."""
    lines = [f"versions: {report['versions']}"]
    for turn in report["turns"]:
        lines.append(
            f"turn {turn['index']} {turn['text']!r}: events {turn['events']}, errors "
            f"{turn['errors']}, reply {turn['reply']!r}"
        )
    lines.append(
        "client -> runtime: "
        + ", ".join(
            f"{r['method']} {r['path']} {r['status']}" for r in report["traffic"]["runtime"]
        )
    )
    lines.append(
        "runtime -> agui: "
        + ", ".join(
            f"{r['method']} {r['path']} {r['status']}{' aborted' if r['aborted'] else ''}"
            for r in report["traffic"]["agent"]
        )
    )
    lines.append(
        "agui saw: "
        + ", ".join(
            f"{r['method']} {r['path']} {r['status']}"
            f"{' disconnect' if r['disconnect'] and not r['ended'] else ''}"
            for r in requests.seen
        )
    )
    return "\n".join(lines)


CASES = [
    pytest.param(None, "top", id="no-store"),
    pytest.param("memory://", "top", id="memory"),
    pytest.param("sqlite", "top", id="sqlite"),
    pytest.param("memory://", "runtime", id="memory-client-0.0.59"),
]


@pytest.mark.parametrize(("store", "client"), CASES)
def test_a_turn_after_a_copilotkit_stop_answers(
    node: str, host: str, tmp_path: Path, store: str | None, client: str
) -> None:
    """Two turns, a third stopped by CopilotKit midway, a fourth at once: every turn but the
    stopped one gets its whole reply; the stopped run is cancelled here, not left to run on
    (with a store: ended in the log with RUN_FINISHED, outcome cancelled).

    `client` is the runtime agent's @ag-ui/client: "top" the 1.0.0 pinned beside it (an app's
    own `npm install @ag-ui/client`), "runtime" the 0.0.59 @copilotkit/runtime depends on."""
    if store == "sqlite":
        store = f"sqlite:///{tmp_path / 'runs.db'}"
    with agui_server(store) as (url, agent, requests):
        report = copilotkit(node, host, url, client)
        seen = summary(report, requests)
        first, second, stopped, after = report["turns"]
        upstream = report["traffic"]["agent"]
        stop_calls = [r for r in report["traffic"]["runtime"] if "/stop/" in r["path"]]

        # What CopilotKit does, with or without a store: the stop goes to the runtime, which
        # aborts the run's POST to this server; nothing reaches this server's stop endpoint.
        assert [r["path"] for r in stop_calls] == [f"/api/copilotkit/agent/default/stop/{THREAD}"]
        assert stopped["stoppedAt"] is not None, seen
        slow_post = next(r for r in upstream if r["runId"] == stopped["runId"])
        assert slow_post["aborted"] is not None, seen
        assert not any(r["path"].endswith("/stop") for r in requests.seen), seen
        slow_request = next(r for r in requests.seen if r["runId"] == stopped["runId"])
        assert slow_request["disconnect"] is not None, seen  # the client left mid-response

        assert first["reply"] == reply("first", QUICK) and first["errors"] == [], seen
        assert second["reply"] == reply("second", QUICK) and second["errors"] == [], seen
        assert reply("slow", SLOW).startswith(stopped["reply"]), seen
        assert len(stopped["reply"]) < len(reply("slow", SLOW)), seen

        # The turn after the stop: 409 (the stopped run still holding the thread, shown as
        # RUN_ERROR INCOMPLETE_STREAM) was what a store gave before detach.
        if any("has a run going" in error["message"] for error in after["errors"]):
            raise ThreadStillLocked(seen)
        assert after["errors"] == [] and after["coreErrors"] == [], seen
        assert after["reply"] == reply("after the stop", QUICK), seen
        assert after["events"][0] == "RUN_STARTED" and after["events"][-1] == "RUN_FINISHED", seen

        # The stopped run ended here instead of running on to its end.
        assert agent.outcomes[stopped["runId"]] == "cancelled", seen
        if store is not None:
            end = stored_end(url, stopped["runId"])
            assert end["type"] == "RUN_FINISHED", (end, seen)
            assert end.get("outcome") == {"type": "cancelled"}, (end, seen)
