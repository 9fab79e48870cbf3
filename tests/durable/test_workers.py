"""Several workers on one store, each a real `agui serve` process: connect on another worker
mid-run, a stop that reaches the worker running the run, a worker killed with SIGKILL, a SQLite
server restarted, and 200 concurrent runs on one worker over Redis."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx

import agui

from .support import JSON, Frame, Tail, body, deltas, post, stream, types, wait_for

LEASE = 2.0
"""The lease of the workers started from `agents:app` (AGUI_TEST_LEASE)."""


def workers(served: Any, url: str, count: int = 2) -> list[Any]:
    """`count` processes serving agents:app (the paced agent at /agent) on the store `url`."""
    env = {"AGUI_TEST_STORE": url, "AGUI_TEST_LEASE": str(LEASE)}
    return [served("agents:app", env=env) for _ in range(count)]


def user(run_id: str) -> dict[str, Any]:
    return {"id": f"user-{run_id}", "role": "user", "content": "hi"}


def assistant(run_id: str, count: int) -> dict[str, Any]:
    text = "".join(f"{i}," for i in range(count))
    return {"id": f"{run_id}:m", "role": "assistant", "content": text}


def hydrate(frames: list[Frame]) -> agui.Reducer:
    pipeline = agui.Pipeline()
    pipeline.run([json.dumps(f.event).encode() for f in frames])
    assert not pipeline.warnings, pipeline.warnings
    return pipeline.reducer


def test_connect_mid_run_on_the_other_worker(redis_url: str, served: Any) -> None:
    a, b = workers(served, redis_url)
    one = post(f"{a.url}/agent", body("r1", count=3, state=True)).frames
    history = [user("r1"), assistant("r1", 3)]
    running = Tail("POST", f"{a.url}/agent", body("r2", count=60, delay=0.03, history=history))
    wait_for(lambda: len(running.frames) >= 10)
    connected = stream(f"{b.url}/agent/threads/t1/events")
    two = running.wait()
    frames = connected.frames
    # the history, compacted: the finished run's messages and state, and the live run's input
    assert types(frames[:4]) == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert frames[1].event["messages"] == [*history, user("r2")]
    assert frames[2].event["snapshot"] == {}  # what r2's input started from
    # then the live run from its start: what worker A streamed, cursors included
    assert frames[4:] == two
    reducer = hydrate(frames)
    messages = [m.id for m in reducer.messages]
    assert messages == ["user-r1", "r1:m", "user-r2", "r2:m"]
    assert reducer.messages[-1].content == assistant("r2", 60)["content"]
    # every stored event, run after run
    full = stream(f"{b.url}/agent/threads/t1/events?history=full").frames
    assert [f.event for f in full] == [f.event for f in one + two]


def test_a_stop_on_worker_b_reaches_the_run_on_worker_a(redis_url: str, served: Any) -> None:
    a, b = workers(served, redis_url)
    running = Tail("POST", f"{a.url}/agent", body("r1", count=10_000, delay=0.01))
    wait_for(lambda: len(running.frames) >= 5)
    asked = time.monotonic()
    stopped = httpx.post(f"{b.url}/agent/runs/r1/stop")
    assert stopped.status_code == 202
    frames = running.wait(10)
    assert running.times[-1] - asked < 1.0
    assert types(frames)[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert frames[-1].event == {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "outcome": {"type": "cancelled"},
    }
    assert len(deltas(frames)) < 10_000
    assert httpx.post(f"{b.url}/agent/runs/r1/stop").status_code == 409
    assert stream(f"{b.url}/agent/runs/r1/events").frames == frames


def test_a_killed_worker_s_run_ends_in_run_lost_on_the_other(redis_url: str, served: Any) -> None:
    a, b = workers(served, redis_url)
    running = Tail("POST", f"{a.url}/agent", body("r1", count=10_000, delay=0.01))
    wait_for(lambda: len(running.frames) >= 5)
    following = Tail("GET", f"{b.url}/agent/runs/r1/events")
    wait_for(lambda: len(following.frames) >= 5)
    a.kill()
    killed = time.monotonic()
    frames = following.wait(3 * LEASE)
    running.wait()
    assert running.broken
    assert following.times[-1] - killed < LEASE + 0.5
    assert frames[-1].event["type"] == "RUN_ERROR"
    assert frames[-1].event["code"] == "RUN_LOST"
    # the log holds the end for everyone: a resume on B, a connect on B
    assert stream(f"{b.url}/agent/runs/r1/events").frames == frames
    connected = stream(f"{b.url}/agent/threads/t1/events").frames
    assert types(connected) == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    # the thread is free again
    assert post(f"{b.url}/agent", body("r2", count=1)).status == 200


def test_sqlite_keeps_the_threads_across_a_restart(tmp_path: Path, served: Any) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    first = served("agents:paced", "--store", store, "--timeout-graceful-shutdown", "2")
    one = post(f"{first.url}", body("r1", count=3, state=True)).frames
    history = [user("r1"), assistant("r1", 3)]
    two = post(f"{first.url}", body("r2", count=5, history=history)).frames
    hung = Tail("POST", first.url, body("r3", "t2", count=10_000, delay=0.01))
    wait_for(lambda: len(hung.frames) >= 3)
    before = stream(f"{first.url}/threads/t1/events").frames
    # SIGTERM: the hung run ends in RUN_ERROR SERVER_SHUTDOWN, stored
    assert first.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert hung.wait()[-1].event["code"] == "SERVER_SHUTDOWN"

    second = served("agents:paced", "--store", store)
    after = stream(f"{second.url}/threads/t1/events").frames
    assert after == before
    assert hydrate(after).messages[-1].content == assistant("r2", 5)["content"]
    full = stream(f"{second.url}/threads/t1/events?history=full").frames
    assert [f.event for f in full] == [f.event for f in one + two]
    assert stream(f"{second.url}/runs/r3/events").frames == hung.frames
    assert post(second.url, body("r4", "t2", count=1)).status == 200


def test_200_concurrent_runs_on_one_worker(redis_url: str, served: Any) -> None:
    (worker,) = workers(served, redis_url, 1)
    count = 50

    async def one(client: httpx.AsyncClient, index: int) -> list[dict[str, Any]]:
        content = body(f"run-{index}", f"thread-{index}", count=count, delay=0.01, every=10)
        events: list[dict[str, Any]] = []
        decoder = agui.SSEDecoder()
        async with client.stream("POST", f"{worker.url}/agent", content=content, headers=JSON) as r:
            assert r.status_code == 200
            async for chunk in r.aiter_raw():
                events += [json.loads(m.data) for m in decoder.feed(chunk)]
        return events

    async def main() -> list[list[dict[str, Any]]]:
        limits = httpx.Limits(max_connections=250)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            return await asyncio.gather(*(one(client, i) for i in range(200)))

    results = asyncio.run(main())
    for index, events in enumerate(results):
        run_id = f"run-{index}"
        assert events[0] == {
            "type": "RUN_STARTED",
            "threadId": f"thread-{index}",
            "runId": run_id,
            "protocolVersion": events[0]["protocolVersion"],
            "input": json.loads(
                body(f"run-{index}", f"thread-{index}", count=count, delay=0.01, every=10)
            ),
        }
        assert events[-1] == {
            "type": "RUN_FINISHED",
            "threadId": f"thread-{index}",
            "runId": run_id,
        }
        ids = {e["messageId"] for e in events if "messageId" in e}
        assert ids == {f"{run_id}:m"}
        assert [e["delta"] for e in events if "delta" in e] == [f"{i}," for i in range(count)]
