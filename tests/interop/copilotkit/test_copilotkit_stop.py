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
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.http.server import AgentApp
from tests.conftest import live_server
from tests.interop.copilotkit.host import THREAD, Requests, copilotkit, install_host, summary
from tests.interop.test_interop import TIMEOUT, node

__all__ = ["node"]  # the fixture (node on PATH, the @ag-ui pins installed), used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)


QUICK = 4  # text deltas of an ordinary turn
SLOW = 40  # text deltas of the turn that is stopped, SLOW_DELAY apart: 4 s in all
SLOW_DELAY = 0.1
STOP_AFTER = 2  # the client stops the slow turn once this many deltas arrived


class ThreadStillLocked(AssertionError):
    """The turn after the stop got 409 "thread ... has a run going": the stopped run still holds
    the thread (what a store gave before AgentApp's detach)."""


@pytest.fixture(scope="module")
def host(node: str) -> str:
    return install_host()


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


@contextmanager
def agui_server(store: str | None) -> Iterator[tuple[str, SlowAgent, Requests]]:
    agent = SlowAgent()
    app = Requests(AgentApp(agent, path="/agent", store=store))
    with live_server(app) as base:
        yield base + "/agent", agent, app


TURNS = [
    {"send": "first"},
    {"send": "second"},
    {"send": "slow", "stopAfter": STOP_AFTER},
    {"send": "after the stop"},
]


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
        report = copilotkit(node, host, url, TURNS, client=client)
        seen = summary(report, requests)
        first, second, stopped, after = report["steps"]
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
