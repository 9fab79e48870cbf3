"""Which durable runs go on when their request goes away (AgentApp's `detach`).

A client that knows only AG-UI 1.0 (@ag-ui/client, CopilotKit's runtime in front of it) stops a
run by aborting its request and never reads the rest; before `detach`, with a store, such a run
went on to its end and held its thread, so the user's next turn got 409. Now a run goes on
without its request only when its client said it resumes cut streams (`Agui-Resume: 1`, sent by
HttpAgent and the console), and a new run on a thread whose run is being stopped waits for that
end. `tests/interop/copilotkit` runs the same through CopilotKit's own runtime and client.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.store import open_log
from agui.wire.sse import SSEDecoder

from .agents import paced
from .support import Tail, body, deltas, post, stream, wait_for

WAIT = 30.0  # seconds; a hang bound


def _end(store: str, run_id: str) -> dict[str, Any] | None:
    """The stored terminal event of `run_id`, None while it runs."""
    import asyncio

    async def read() -> dict[str, Any] | None:
        log = open_log(store)
        try:
            record = await log.get_run(run_id)
            if record is None or record.status != "finished":
                return None
            events = [json.loads(e.data) async for e in log.read(run_id)]
            return events[-1]
        finally:
            await log.aclose()

    return asyncio.run(read())


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def test_a_run_whose_client_left_without_asking_to_resume_is_stopped(
    sqlite_url: str, live: Callable[[Any], str]
) -> None:
    base = live(agui.AgentApp(paced, path="/agent", store=sqlite_url))
    left = post(
        f"{base}/agent", body("r1", "t1", count=200, delay=0.05), resumes=False, stop_after=3
    )
    assert left.status == 200 and len(left.frames) == 3
    end = wait_for(lambda: _end(sqlite_url, "r1"), WAIT)  # hang bound
    assert end["type"] == "RUN_FINISHED" and end["outcome"] == {"type": "cancelled"}, end
    replay = stream(f"{base}/agent/runs/r1/events").frames
    assert len(deltas(replay)) < 200  # stopped, not run to its end
    # the thread is free: the next turn answers at once
    nxt = post(f"{base}/agent", body("r2", "t1", count=2), resumes=False)
    assert nxt.status == 200 and nxt.frames[-1].type == "RUN_FINISHED"


def test_the_next_turn_right_after_an_abort_waits_for_the_stop(
    store_url: str, live: Callable[[Any], str]
) -> None:
    """What CopilotKit does: abort the run's POST, then POST the next turn milliseconds later."""
    base = live(agui.AgentApp(paced, path="/agent", store=store_url))
    for turn in range(3):
        left = post(
            f"{base}/agent",
            body(f"cut-{turn}", "t1", count=400, delay=0.02),
            resumes=False,
            stop_after=2,
        )
        assert len(left.frames) == 2
        nxt = post(f"{base}/agent", body(f"next-{turn}", "t1", count=2), resumes=False)
        assert nxt.status == 200, nxt
        assert nxt.frames[-1].type == "RUN_FINISHED" and deltas(nxt.frames) == ["0,", "1,"]
        cut = stream(f"{base}/agent/runs/cut-{turn}/events").frames
        assert cut[-1].event.get("outcome") == {"type": "cancelled"}, cut[-1]


def test_a_client_that_resumes_keeps_its_run(sqlite_url: str, live: Callable[[Any], str]) -> None:
    base = live(agui.AgentApp(paced, path="/agent", store=sqlite_url))
    left = post(f"{base}/agent", body("r1", "t1", count=30, delay=0.02), stop_after=3)
    assert len(left.frames) == 3
    end = wait_for(lambda: _end(sqlite_url, "r1"), WAIT)  # hang bound
    assert end["type"] == "RUN_FINISHED" and "outcome" not in end
    resumed = stream(f"{base}/agent/runs/r1/events", headers={"last-event-id": left.frames[-1].id})
    assert deltas(left.frames + resumed.frames) == [f"{i}," for i in range(30)]


def test_a_reader_on_the_thread_keeps_the_run(sqlite_url: str, live: Callable[[Any], str]) -> None:
    """A connect on this worker follows the run: its starter leaving does not stop it. The
    starter leaves only once the reader is reading (under load the reader's request may come
    late: leaving before it would stop the run, rightly)."""
    base = live(agui.AgentApp(paced, path="/agent", store=sqlite_url))
    reading = threading.Event()
    left: list[Any] = []

    def start() -> None:
        decoder = SSEDecoder()
        content = body("r1", "t1", count=200, delay=0.05)
        headers = {"content-type": "application/json"}  # no Agui-Resume: a 1.0 client
        with (
            httpx.Client(timeout=WAIT) as client,
            client.stream("POST", f"{base}/agent", content=content, headers=headers) as answer,
        ):
            for chunk in answer.iter_raw():
                left.extend(decoder.feed(chunk))
                if len(left) >= 10:
                    reading.wait(WAIT)  # hang bound
                    return  # leaves mid-run

    starter = threading.Thread(target=start)
    starter.start()
    wait_for(lambda: stream(f"{base}/agent/runs/r1/events?after=x").status != 404, WAIT)
    follower = Tail("GET", f"{base}/agent/threads/t1/events")
    wait_for(lambda: follower.frames, WAIT)
    reading.set()
    starter.join(WAIT)  # hang bound
    assert 10 <= len(left) < 200  # the starter left mid-run
    assert follower.done.wait(WAIT)  # hang bound
    assert follower.frames[-1].type == "RUN_FINISHED", follower.frames[-1]
    assert "outcome" not in follower.frames[-1].event
    assert deltas(follower.frames)[-1] == "199,"


def test_detach_always_keeps_every_run(sqlite_url: str, live: Callable[[Any], str]) -> None:
    base = live(agui.AgentApp(paced, path="/agent", store=sqlite_url, detach="always"))
    left = post(
        f"{base}/agent", body("r1", "t1", count=20, delay=0.02), resumes=False, stop_after=2
    )
    assert len(left.frames) == 2
    end = wait_for(lambda: _end(sqlite_url, "r1"), WAIT)  # hang bound
    assert end["type"] == "RUN_FINISHED" and "outcome" not in end


def test_a_run_nobody_stops_still_holds_its_thread(
    sqlite_url: str, live: Callable[[Any], str]
) -> None:
    """A resuming client's run whose stream was cut is not superseded: the thread stays its."""
    base = live(agui.AgentApp(paced, path="/agent", store=sqlite_url))
    left = post(f"{base}/agent", body("r1", "t1", count=200, delay=0.05), stop_after=2)
    assert len(left.frames) == 2
    busy = post(f"{base}/agent", body("r2", "t1", count=2))
    assert busy.status == 409 and b"has a run going" in busy.body
    assert httpx.post(f"{base}/agent/runs/r1/stop").status_code == 202
    after = post(f"{base}/agent", body("r3", "t1", count=2))  # waits for the stop to end r1
    assert after.status == 200 and after.frames[-1].type == "RUN_FINISHED"


def test_the_stop_reaches_a_new_turn_on_another_worker(
    redis_url: str, served: Callable[..., Any]
) -> None:
    """Two `agui serve` workers on one Redis: the run's POST aborted on A, the next turn on B
    waits for A to stop it."""
    env = {"AGUI_TEST_STORE": redis_url}
    a = served("agents:app", env=env)
    b = served("agents:app", env=env)
    for turn in range(2):
        left = post(
            f"{a.url}/agent",
            body(f"cut-{turn}", "t1", count=400, delay=0.02),
            resumes=False,
            stop_after=2,
        )
        assert len(left.frames) == 2
        nxt = post(f"{b.url}/agent", body(f"next-{turn}", "t1", count=2), resumes=False)
        assert nxt.status == 200, nxt
        assert nxt.frames[-1].type == "RUN_FINISHED"


def test_a_thousand_abandoned_runs_end_and_free_their_memory(
    sqlite_url: str, served: Callable[..., Any]
) -> None:
    """1,000 POSTs, each dropped after its first frame, against `agui serve` with its defaults
    and a store: every run is stopped when its request goes away; the worker keeps serving and
    holds no more than docs/durable-runs.md says (the runs' records and logs are the store's)."""
    server = served("agents:app", env={"AGUI_TEST_STORE": sqlite_url})
    pid = server.proc.pid
    url = f"{server.url}/agent"

    def rss() -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    post(url, body("warm", "warm", count=2))
    before = rss()
    errors: list[Any] = []

    def abandon(start: int) -> None:
        for i in range(start, 1000, 20):
            try:
                answer = post(
                    url,
                    body(f"r{i}", f"t{i}", count=10_000, delay=0.01),
                    resumes=False,
                    stop_after=1,
                )
                if answer.status != 200:
                    errors.append((i, answer.status, answer.body[:200]))
            except httpx.HTTPError as exc:  # pragma: no cover - a failure to report
                errors.append((i, repr(exc)))

    threads = [threading.Thread(target=abandon, args=(k,)) for k in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)  # hang bound
    assert errors == []
    # every run ends (stopped), none left executing
    wait_for(lambda: all(_end(sqlite_url, f"r{i}") for i in range(0, 1000, 50)), 120)  # hang bound
    ends = [_end(sqlite_url, f"r{i}") for i in range(1000)]
    assert all(e is not None and e.get("outcome") == {"type": "cancelled"} for e in ends)
    grown = rss() - before
    print(f"1,000 abandoned runs: the worker grew by {grown / 2**20:.1f} MiB")
    assert grown < 64 * 1024 * 1024, f"the worker grew by {grown / 2**20:.1f} MiB"
    served_after = post(url, body("after", "after", count=2))
    assert served_after.status == 200 and served_after.frames[-1].type == "RUN_FINISHED"
    assert os.kill(pid, 0) is None  # still up


def test_every_stream_of_a_server_with_a_store_says_it_resumes(
    sqlite_url: str, live: Callable[[Any], str]
) -> None:
    """`Agui-Resumable: 1` on the run's answer, its rejoin and its thread's stream: what lets
    HttpAgent resume a cut stream at `/runs/{runId}/events` (a server without a store has no such
    route, and says nothing)."""
    base = live(agui.AgentApp(paced, path="/agent", store=sqlite_url))
    run = post(f"{base}/agent", body("r1", "t1", count=2))
    assert run.status == 200 and run.frames[-1].event["type"] == "RUN_FINISHED"
    assert run.headers.get("agui-resumable") == "1"
    rejoin = stream(f"{base}/agent/runs/r1/events")
    assert rejoin.status == 200 and rejoin.headers.get("agui-resumable") == "1"
    thread = stream(f"{base}/agent/threads/t1/events")
    assert thread.status == 200 and thread.headers.get("agui-resumable") == "1"
    plain = live(agui.AgentApp(paced, path="/agent"))
    answer = post(f"{plain}/agent", body("r2", "t2", count=2))
    assert answer.status == 200 and "agui-resumable" not in answer.headers
