"""A silent agent on memory:// and SQLite (test_redis_silence.py does Redis): a run that sends
nothing for longer than every timeout of the stack still reaches every client whole.

The stack's timeouts, each made shorter than the silence: the client's read timeout
(`HttpAgent(timeout=...)`, which only the SSE keep-alive comments keep from firing), the lease
(renewed while the agent is silent, or the run would be closed as lost), a follower's lease check
after a second of silence, and SQLite's cross-process poll. The clients: agui's own
(Conversation over HttpAgent, POSTing the run), a client cut after the last event before the
silence that resumes with Last-Event-ID, and a follower of the run, on another `agui serve`
process where the store is shared (SQLite), on the same one for memory://. kill -9 of the
worker during the silence still gives a follower on the other worker RUN_ERROR RUN_LOST.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import agui

from .support import Tail, body, stream, types, wait_for

SILENCE = 6.0
"""Seconds of silence: three times every timeout below."""
TIMEOUT = 2.0
"""The client's read timeout and the lease (seconds); SSE keep-alive comments every second."""
BEFORE = ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]


def _workers(served: Any, store: str, count: int) -> list[Any]:
    env = {
        "AGUI_TEST_STORE": store,
        "AGUI_TEST_LEASE": str(TIMEOUT),
        "AGUI_TEST_KEEPALIVE": str(TIMEOUT / 2),
    }
    return [served("agents:app", env=env) for _ in range(count)]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_silent_run_reaches_every_client(backend: str, served: Any, tmp_path: Path) -> None:
    store = "memory://" if backend == "memory" else f"sqlite:///{tmp_path / 'runs.db'}"
    workers = _workers(served, store, 1 if backend == "memory" else 2)
    a, b = workers[0], workers[-1]
    url = f"{a.url}/agent"

    done: dict[str, Any] = {}

    async def direct() -> None:
        conversation = agui.Conversation()
        agent = agui.HttpAgent(url, timeout=TIMEOUT)  # kept alive by the comments alone
        run_input = agui.decode(body("r1", count=1, delay=SILENCE), agui.RunAgentInput)
        done["result"] = await conversation.run(agent, input=run_input)
        done["conversation"] = conversation

    running = threading.Thread(target=lambda: asyncio.run(direct()))
    running.start()
    wait_for(
        lambda: stream(f"{a.url}/agent/runs/r1/events?after=x").status != 404, 30
    )  # hang bound
    follower = Tail("GET", f"{b.url}/agent/threads/t1/events")  # from before the silence
    cut = stream(f"{a.url}/agent/runs/r1/events", stop_after=len(BEFORE))
    assert types(cut.frames) == BEFORE
    resumed = stream(
        f"{b.url}/agent/runs/r1/events",
        headers={"last-event-id": cut.frames[-1].id or ""},
        timeout=TIMEOUT,  # kept alive by the comments alone
    )
    assert types(resumed.frames) == ["TEXT_MESSAGE_END", "RUN_FINISHED"], b.stderr[-5:]
    assert not resumed.broken
    running.join(60)  # hang bound
    assert done["result"] is not None and done["result"].outcome == "success", done
    assert done["conversation"].messages[-1].content == "0,"
    assert follower.done.wait(30)  # hang bound
    assert follower.frames[-1].type == "RUN_FINISHED" and not follower.broken
    assert "RUN_LOST" not in "".join(a.stderr + b.stderr)


def test_a_follower_on_another_worker_gets_run_lost(served: Any, tmp_path: Path) -> None:
    """The worker executing a silent run dies (kill -9): the follower elsewhere gets RUN_LOST
    once the lease runs out, instead of waiting for ever."""
    a, b = _workers(served, f"sqlite:///{tmp_path / 'runs.db'}", 2)
    starter = Tail("POST", f"{a.url}/agent", body("r1", count=1, delay=60))
    wait_for(lambda: len(starter.frames) >= len(BEFORE), 30)  # hang bound
    follower = Tail("GET", f"{b.url}/agent/runs/r1/events")
    wait_for(lambda: len(follower.frames) >= len(BEFORE), 30)  # hang bound
    a.kill()
    assert follower.done.wait(30)  # hang bound: the lease is 2 s
    assert follower.frames[-1].type == "RUN_ERROR"
    assert follower.frames[-1].event["code"] == "RUN_LOST"
