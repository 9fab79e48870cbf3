"""A resume sent with the runId of the run it answers (CopilotKit 1.75's useInterrupt does so).

The protocol's resume is a new run with a new runId; a store holds the interrupted run under
its id, so such a request answered 409 "run ... was already started" and the interrupt could
never be answered through CopilotKit with a store. Now a request with resume entries naming the
latest run of its thread, finished, starts as the new run it is, under `{runId}~{n}` (n: its
number in the thread); anything else that reuses a run id is still 409
(tests/interop/copilotkit runs CopilotKit itself against this)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import agui

from .support import post, stream, types

Live = Callable[[Any], str]


async def asks(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Interrupts a run with no answer; answers one whose resume it gets."""
    if not run.resume:
        yield agui.RunFinishedEvent(
            thread_id=run.thread_id,
            run_id=run.run_id,
            outcome=agui.RunFinishedInterruptOutcome(
                interrupts=(agui.Interrupt(id="ask-1", reason="input_required"),)
            ),
        )
        return
    (entry,) = run.resume
    yield agui.TextMessageStartEvent(message_id=f"m-{run.run_id}")
    yield agui.TextMessageContentEvent(
        message_id=f"m-{run.run_id}", delta=f"{entry.interrupt_id} {entry.status.value}"
    )
    yield agui.TextMessageEndEvent(message_id=f"m-{run.run_id}")


def body(run_id: str, *, resume: bool, thread: str = "t1") -> bytes:
    wire: dict[str, Any] = {
        "protocolVersion": agui.PROTOCOL_VERSION,  # a replay is sent in 1.0's form
        "threadId": thread,
        "runId": run_id,
        "messages": [{"id": f"u-{run_id}", "role": "user", "content": "go"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "state": {},
    }
    if resume:
        wire["resume"] = [{"interruptId": "ask-1", "status": "resolved", "payload": {"ok": 1}}]
    return json.dumps(wire).encode()


@pytest.fixture
def url(store_url: str, live: Live) -> str:
    """The agent on each backend (memory, SQLite, Redis: tests/durable/conftest.py)."""
    return live(agui.AgentApp(asks, path="/agent", store=store_url)) + "/agent"


def test_a_resume_on_the_interrupted_runs_id_starts_a_new_run(url: str) -> None:
    interrupted = post(url, body("r1", resume=False))
    assert interrupted.frames[-1].event["outcome"]["type"] == "interrupt"
    resumed = post(url, body("r1", resume=True))
    assert resumed.status == 200
    assert types(resumed.frames)[0] == "RUN_STARTED"
    assert resumed.frames[0].event["runId"] == "r1~2"
    assert resumed.frames[1].event["type"] == "TEXT_MESSAGE_START"
    assert [f.event.get("delta") for f in resumed.frames if f.type == "TEXT_MESSAGE_CONTENT"] == [
        "ask-1 resolved"
    ]
    assert resumed.frames[-1].type == "RUN_FINISHED"
    # the new run is the one its id names: its events replay, the thread holds both
    again = stream(f"{url}/runs/r1~2/events")
    assert [f.event for f in again.frames] == [f.event for f in resumed.frames]
    first = stream(f"{url}/runs/r1/events")
    assert first.frames[-1].event["outcome"]["type"] == "interrupt"


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(body("r1", resume=True), id="a-replay-of-the-resume"),
        pytest.param(body("r1", resume=False), id="no-resume-entries"),
    ],
)
def test_what_else_reuses_a_run_id_is_still_refused(url: str, second: bytes) -> None:
    post(url, body("r1", resume=False))
    post(url, body("r1", resume=True))  # r1~2, now the thread's latest run
    refused = post(url, second)
    assert refused.status == 409
    assert "was already started" in json.loads(refused.body)["error"]


def test_a_resume_naming_an_older_run_of_the_thread_is_refused(url: str) -> None:
    post(url, body("r1", resume=False))
    post(url, body("r2", resume=False))
    refused = post(url, body("r1", resume=True))
    assert refused.status == 409


def test_a_resume_naming_a_run_of_another_thread_is_refused(url: str) -> None:
    post(url, body("r1", resume=False))
    refused = post(url, body("r1", resume=True, thread="t2"))
    assert refused.status == 409
