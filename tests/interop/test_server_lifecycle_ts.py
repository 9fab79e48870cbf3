"""The official TypeScript client (@ag-ui/client 1.0.0) against agents that break its rules,
served by AgentApp: the run lifecycle repairs or ends each stream (tests/misbehaving_agents.py),
so the client never rejects a run and warns about nothing.

For each agent the client's delivered events and messages are compared with this package's
client (Conversation over HttpAgent) on the very input the TypeScript client sent. The same
client also runs docs/serving.md's FastAPI example at /agent. Runs under AGUI_INTEROP=1, like the
rest of tests/interop.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

import agui
from agui.http.server import AgentApp
from tests.interop.test_interop import Recorder, node, serving, ts_run
from tests.misbehaving_agents import CASES

__all__ = ["node"]  # the fixture, used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)


@pytest.mark.parametrize("name", list(CASES))
def test_official_client_accepts_what_the_server_sends(node: str, name: str) -> None:
    agent, _, ending = CASES[name]
    recorder = Recorder(agent)
    with serving(AgentApp(recorder, path="/agent")) as url:
        report = ts_run(node, url, f"case {name}")
        assert report["error"] is None, report["error"]
        assert report["ok"] is True
        assert report["warnings"] == [], "the official client warned:\n" + "\n".join(
            report["warnings"]
        )
        # this package's client, on the input the official client sent
        (run_id,) = recorder.inputs
        sent = recorder.inputs[run_id]
        ours = agui.Conversation(sent.thread_id, messages=sent.messages, keep_events=True)
        asyncio.run(ours.run(agui.HttpAgent(url), input=sent))

    assert ours.failures == []
    assert report["events"] == [e.type.value for e in ours.events]
    if ending == "completed":
        assert report["events"][-1] == "RUN_FINISHED"
        assert report["outcome"] == "success"
    else:
        assert report["events"][-1] == "RUN_ERROR"
        assert ours.runs[-1].error_code == ending
    assert _comparable(report["messages"]) == _comparable(ours.messages_json())


def _comparable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with the members that only say "nothing yet" removed (an empty toolCalls list),
    so the two clients' shapes compare."""
    return [{k: v for k, v in m.items() if v != []} for m in messages]


def test_official_client_runs_the_docs_fastapi_example(node: str) -> None:
    """docs/serving.md's FastAPI example, as written: the official client posts to /agent (no
    trailing slash) and completes the run (a mount would answer 307, which it does not follow)."""
    from tests.test_cli_serve import docs_fastapi_app

    with serving(docs_fastapi_app()) as url:
        assert url.endswith("/agent")
        report = ts_run(node, url, "hi")
    assert report["error"] is None, report["error"]
    assert report["ok"] is True and report["warnings"] == []
    assert report["events"][-1] == "RUN_FINISHED"
    assert report["messages"][-1]["content"] == "hello"
