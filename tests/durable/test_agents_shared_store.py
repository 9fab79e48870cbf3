"""Several agents on one real redis-server: `agui serve a=MODULE:ATTR b=MODULE:ATTR --store
redis://...` and a FastAPI app with `AgentServer.include_in`, the same thread and run ids on both
agents run, resume, connect and stop apart (each agent's keys in a namespace of its own); and the
health checks against a redis-server that is stopped and started again on the same port, or was
never there when the worker started.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.store import RunRecord, open_log
from agui.wire.codec import encode
from tests.conftest import live_server
from tests.store.support import free_port, ping, skip_or_fail_without_redis

from .support import JSON, Tail, body, deltas, post, stream, wait_for
from .two_agents import alpha, beta

UNAVAILABLE = {"status": "unavailable", "reason": "the event log does not answer"}
DOWN_FOR = 30.0  # hang bound: seconds the server may take to see Redis gone, or back


class RedisOnPort:
    """A redis-server of the test's own on a fixed free port, stopped (SIGTERM, as an operator
    stops it) and started again on the same port; `start=False`: nothing listens there yet."""

    def __init__(self, directory: Path, *, start: bool = True) -> None:
        skip_or_fail_without_redis()
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        if start:
            self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(lambda: ping(self.port), timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(10)
        wait_for(lambda: not ping(self.port), timeout=10)


@contextmanager
def redis_on_port(directory: Path, *, start: bool = True) -> Iterator[RedisOnPort]:
    server = RedisOnPort(directory, start=start)
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.kill()
            server.process.wait(10)


def keys(url: str) -> list[str]:
    """Every key of the Redis at `url` (redis-py, as an operator would list them)."""
    import redis

    client = redis.Redis.from_url(url.split("?")[0], decode_responses=True)
    try:
        return sorted(str(key) for key in client.keys("*"))
    finally:
        client.close()


def check_two_agents_apart(base: str, url: str) -> None:
    """On the server at `base` (agents a and b on the Redis at `url`): the same thread and run
    ids on both, run, resumed, connected to and stopped apart."""
    for name in ("a", "b"):  # the same ids on both: two runs, no 409
        started = post(
            f"{base}/{name}", body("run-1", "thread-1", count=60, delay=0.05), stop_after=3
        )
        assert started.status == 200, started.body
    stopped = httpx.post(f"{base}/a/runs/run-1/stop", timeout=30)
    assert stopped.status_code == 202
    a = stream(f"{base}/a/runs/run-1/events")
    b = stream(f"{base}/b/runs/run-1/events")
    assert a.frames[-1].event["outcome"]["type"] == "cancelled"
    assert len(deltas(a.frames)) < 60
    assert b.frames[-1].type == "RUN_FINISHED" and "outcome" not in b.frames[-1].event
    assert deltas(b.frames) == [f"{i}," for i in range(60)]
    a_thread = stream(f"{base}/a/threads/thread-1/events?history=full")
    b_thread = stream(f"{base}/b/threads/thread-1/events?history=full")
    assert deltas(a_thread.frames) == deltas(a.frames)
    assert deltas(b_thread.frames) == deltas(b.frames)
    # a run only b has is unknown to a, as an id never used is
    assert post(f"{base}/b", body("only-b", "thread-b", count=1)).status == 200
    theirs = stream(f"{base}/a/runs/only-b/events")
    never = stream(f"{base}/a/runs/never-used/events")
    assert theirs.status == never.status == 404
    assert httpx.post(f"{base}/a/runs/only-b/stop", timeout=30).status_code == 404
    assert stream(f"{base}/a/threads/thread-b/events").status == 404
    stored = keys(url)
    for name in ("a", "b"):
        assert any(key.endswith(f"run:{name}/run-1") for key in stored), stored
    assert not any(key.endswith("run:run-1") for key in stored), stored


def test_agui_serve_two_agents_on_one_redis(served: Any, redis_url: str) -> None:
    """`agui serve a=two_agents:alpha b=two_agents:beta --store redis://...`: /agents lists both
    with their own declarations, and their runs with the same ids stay apart."""
    server = served("a=two_agents:alpha", "b=two_agents:beta", "--store", redis_url)
    base = server.url
    assert "2 agents: a (two_agents:alpha), b (two_agents:beta)" in server.stderr[0]
    listing = httpx.get(f"{base}/agents", timeout=30).json()["agents"]
    assert [(a["name"], a["path"]) for a in listing] == [("a", "/a"), ("b", "/b")]
    assert [a["capabilities"]["identity"]["name"] for a in listing] == ["alpha", "beta"]
    assert all(a["capabilities"]["transport"]["resumable"] is True for a in listing)
    check_two_agents_apart(base, redis_url)
    # a probe slower than PROBE_TIMEOUT (a loaded machine) is not-ready: asked again until ok
    wait_for(lambda: httpx.get(f"{base}/readyz", timeout=30).status_code == 200, timeout=DOWN_FOR)
    assert server.stop() == 130  # the exit status after Ctrl-C (SIGINT)
    assert not any("Traceback" in line for line in server.stderr), server.stderr


def test_fastapi_two_agents_on_one_redis(redis_url: str) -> None:
    """The same with a FastAPI application (`AgentServer(...).include_in(api)`) under uvicorn."""
    pytest.importorskip("fastapi")
    from fastapi import FastAPI

    api = FastAPI()
    server = agui.AgentServer({"a": alpha, "b": beta}, store=redis_url)
    server.include_in(api)
    with live_server(api) as base:
        names = [a["name"] for a in httpx.get(f"{base}/agents", timeout=30).json()["agents"]]
        assert names == ["a", "b"]
        check_two_agents_apart(base, redis_url)


def test_each_agent_sweeps_its_own_lost_runs(redis_url: str) -> None:
    """On a shared log, an agent's sweep closes the lost runs of its own namespace only (the
    other agent's are its sweep's: a run of its executing on this worker is not lost)."""
    server = agui.AgentServer({"a": alpha, "b": beta}, store=redis_url)
    run_input = agui.RunAgentInput(
        thread_id="t", run_id="r", state={}, messages=[], tools=[], context=[], forwarded_props={}
    )

    async def scenario() -> tuple[str, str]:
        log = server.store
        assert log is not None
        record = RunRecord(
            thread_id="b/t", run_id="b/r", status="running", owner="gone", started_at=1.0,
            lease_until=2.0,
        )  # fmt: skip
        await log.start_run(record, encode(run_input), exclusive=True)
        durable_a, durable_b = server.apps["a"]._durable, server.apps["b"]._durable
        assert durable_a is not None and durable_b is not None
        await durable_a.sweep()
        after_a = await log.get_run("b/r")
        await durable_b.sweep()
        after_b = await log.get_run("b/r")
        await log.aclose()
        assert after_a is not None and after_b is not None
        return after_a.status, after_b.status

    assert asyncio.run(scenario()) == ("running", "finished")


# ── health against a real redis-server ───────────────────────────────────────────────────────


def ready(base: str) -> httpx.Response:
    return httpx.get(f"{base}/readyz", timeout=30)


@pytest.mark.parametrize("several", [False, True], ids=["one-agent", "two-agents"])
def test_readyz_follows_redis_stopped_and_started(
    tmp_path: Path, served: Any, several: bool
) -> None:
    """`agui serve` on a redis-server that is stopped, then started again on the same port:
    /readyz 200, then 503 with a fixed reason while it is down (/healthz stays 200, a run gets a
    clean 503), then 200 again without a restart, and runs work."""
    with redis_on_port(tmp_path) as redis:
        targets = ["a=agents:paced", "b=agents:paced"] if several else ["agents:paced"]
        server = served(*targets, "--store", redis.url)
        base = server.url.removesuffix("/agent")
        agent = f"{base}/a" if several else f"{base}/agent"
        wait_for(lambda: ready(base).status_code == 200, timeout=DOWN_FOR)
        redis.stop()
        down = wait_for(lambda: (r := ready(base)).status_code == 503 and r, timeout=DOWN_FOR)
        assert down.json() == UNAVAILABLE
        assert str(redis.port) not in down.text and "127.0.0.1" not in down.text
        assert httpx.get(f"{base}/healthz", timeout=30).json() == {"status": "ok"}
        refused = httpx.post(agent, content=body("while-down"), headers=JSON, timeout=30)
        assert refused.status_code == 503
        assert refused.json() == {"error": "the event log failed"}
        redis.start()
        wait_for(lambda: ready(base).status_code == 200, timeout=DOWN_FOR)
        assert deltas(post(agent, body("after", count=3)).frames) == ["0,", "1,", "2,"]
    stderr = "".join(server.stderr)
    assert "the event log failed" in stderr
    assert "Traceback" not in stderr, stderr


def test_a_worker_started_against_a_dead_redis(tmp_path: Path, served: Any) -> None:
    """`agui serve --store redis://...` with no Redis listening: it serves, each run gets a
    clean 503 JSON (no traceback in the answer or on stderr, the failure logged there) and
    /readyz is 503, so a load balancer keeps traffic away; once Redis is up, ready and runs."""
    with redis_on_port(tmp_path, start=False) as redis:
        server = served("agents:paced", "--store", redis.url)
        for _ in range(2):
            refused = httpx.post(server.url, content=body("r1"), headers=JSON, timeout=30)
            assert refused.status_code == 503
            assert refused.headers["content-type"] == "application/json"
            assert refused.headers["retry-after"] == "1"
            assert refused.json() == {"error": "the event log failed"}
        base = server.url.removesuffix("/agent")
        not_ready = ready(base)
        assert not_ready.status_code == 503 and not_ready.json() == UNAVAILABLE
        redis.start()
        wait_for(lambda: ready(base).status_code == 200, timeout=DOWN_FOR)
        assert deltas(post(server.url, body("r2", count=2)).frames) == ["0,", "1,"]
    assert server.stop() == 130  # the exit status after Ctrl-C (SIGINT)
    stderr = "".join(server.stderr)
    assert "the event log failed: Redis store" in stderr
    assert stderr.count("the event log failed") == 1, stderr  # once per outage
    assert "Traceback" not in stderr, stderr


def test_readyz_in_process_follows_redis(tmp_path: Path) -> None:
    """An AgentServer under uvicorn in this process: the agents' store health follows /readyz's
    probe of the shared log (both agents unhealthy while Redis is down, healthy once it is
    back)."""
    with redis_on_port(tmp_path) as redis:
        server = agui.AgentServer({"a": alpha, "b": beta}, store=redis.url)
        durables = [app._durable for app in server.apps.values()]
        with live_server(server) as base:
            wait_for(lambda: ready(base).status_code == 200, timeout=DOWN_FOR)
            redis.stop()
            wait_for(lambda: ready(base).status_code == 503, timeout=DOWN_FOR)
            assert all(d is not None and not d.healthy for d in durables)
            redis.start()
            wait_for(lambda: ready(base).status_code == 200, timeout=DOWN_FOR)
            assert all(d is not None and d.healthy for d in durables)


def test_sigterm_ends_both_agents_runs_and_stores_their_ends(tmp_path: Path, served: Any) -> None:
    """SIGTERM while a run streams on each agent (the same ids, one SQLite store): each client
    gets RUN_ERROR SERVER_SHUTDOWN, each agent's run is finished in the store under its own
    namespace, and the process exits with no traceback and nothing cancelled by uvicorn."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    server = served(
        "a=two_agents:alpha", "b=two_agents:beta", "--store", store,
        "--timeout-graceful-shutdown", "3",
    )  # fmt: skip
    tails = {
        name: Tail("POST", f"{server.url}/{name}", body("long", "t", count=1000, delay=0.05))
        for name in ("a", "b")
    }
    wait_for(lambda: all(len(t.frames) >= 3 for t in tails.values()), timeout=DOWN_FOR)
    server.stop(signal.SIGTERM)
    for tail in tails.values():
        frames = tail.wait(DOWN_FOR)
        assert frames[-1].type == "RUN_ERROR"
        assert frames[-1].event["code"] == "SERVER_SHUTDOWN"

    async def statuses() -> list[str | None]:
        log = open_log(store)
        try:
            records = [await log.get_run(key) for key in ("a/long", "b/long")]
            return [None if r is None else r.status for r in records]
        finally:
            await log.aclose()

    assert asyncio.run(statuses()) == ["finished", "finished"]
    stderr = "".join(server.stderr)
    assert "Traceback" not in stderr and "Cancel" not in stderr, stderr
