"""Runs the event log loses, and runs a killed worker leaves (issue 31, items 4 and 5).

* Redis shut down without saving (`SHUTDOWN NOSAVE`) and started again on its port mid-run: the
  log then answers that it has no such run. Every live stream of the run (the POST, a resume, a
  connect; on the worker executing it and on another one) ends with RUN_ERROR STORE_ERROR instead
  of going silent and closing without a terminal event; the run's line on the worker executing it
  has outcome error and that code; a resume afterwards is 404 (the run's data is gone).
* A worker killed with SIGKILL during N runs: the survivor closes each with RUN_ERROR RUN_LOST,
  counts each (agui_runs_ended_total{outcome="error"} up by N) and logs N run lines with the
  agent, thread, run and code fields (parsed from `--log-format json`).

Real redis-server, real `agui serve` processes and uvicorn on loopback, real httpx clients.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import agui
from agui.http.durable import STOP_POLL, STORE_ERROR
from tests.conftest import live_server

from .agents import paced
from .support import Tail, body, post, wait_for
from .test_store_faults import OwnRedis, own_redis

LEASE = 2.0
"""The servers' lease."""

HANG = 30.0
"""A hang guard only: how long a test waits for a stream to end. The bound itself (10 s) is
checked on the settings that make it (below), and the times measured are printed."""

RUN = "lost-run-1"
LONG = body(RUN, count=100_000, delay=0.02)  # still going when Redis restarts


def restart_empty(redis: OwnRedis) -> float:
    """`SHUTDOWN NOSAVE`, then redis-server again on the same port, empty (no persistence);
    returns when the shutdown was sent (the monotonic clock)."""
    assert redis.process is not None
    with socket.create_connection(("127.0.0.1", redis.port), timeout=5) as sock:
        sock.sendall(b"SHUTDOWN NOSAVE\r\n")
        sent = time.monotonic()
        sock.recv(64)  # the server closes the connection as it exits
    redis.process.wait(10)
    redis.start()
    return sent


def follow(url: str, where: str) -> list[Tail]:
    """A resume from the start and a follower connected to the thread, on `where`; the POST on
    `url` first (returned first)."""
    tails = [Tail("POST", f"{url}/agent", LONG)]
    wait_for(lambda: len(tails[0].frames) >= 5)
    tails.append(Tail("GET", f"{where}/agent/runs/{RUN}/events"))
    tails.append(Tail("GET", f"{where}/agent/threads/t1/events"))
    wait_for(lambda: all(len(t.frames) >= 5 for t in tails))
    return tails


def check_ended(request: pytest.FixtureRequest, tails: list[Tail], broke: float) -> None:
    """Each stream ended (no cut connection) with RUN_ERROR STORE_ERROR; prints how long after
    the shutdown each did."""
    took = []
    for tail in tails:
        assert tail.done.wait(HANG), f"{tail.method} {tail.url}: {tail.frames[-2:]}"  # hang bound
        assert not tail.broken, tail.url
        last = tail.frames[-1]
        assert last.type == "RUN_ERROR", (tail.url, tail.frames[-3:])
        assert last.event["code"] == STORE_ERROR, last
        # the run's events in order up to the loss, then its end, once
        deltas = [f.event["delta"] for f in tail.frames if f.type == "TEXT_MESSAGE_CONTENT"]
        assert deltas == [f"{i}," for i in range(len(deltas))]
        took.append(f"{tail.method} {tail.url.split('/agent')[1] or '/'}: "
                    f"{tail.times[-1] - broke:.2f} s")  # fmt: skip
    what = "; ".join(took)
    print(f"\n{request.node.name}: ended after {what}")
    request.node.add_report_section("call", "ended after", what)


def test_the_bound_is_in_the_settings(tmp_path: Path) -> None:
    """What ends a stream of a run the log lost, within 10 s of Redis answering again: the
    executing worker polls the run's record every STOP_POLL seconds, a follower checks it after
    `idle` seconds of silence, and a follower's blocked XREAD gives up after `block` seconds."""
    app = agui.AgentApp(paced, path="/agent", store="memory://")
    assert app._durable is not None
    assert STOP_POLL <= 1.0
    assert app._durable.idle <= 1.0
    from agui.store.redis import BLOCK_MS

    assert BLOCK_MS <= 10_000


def test_redis_restarted_empty_ends_every_stream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest
) -> None:
    caplog.set_level(logging.INFO, logger="agui.server")
    with own_redis(tmp_path) as redis:
        app = agui.AgentApp(paced, path="/agent", store=redis.url, lease_seconds=LEASE)
        with live_server(app) as url:
            tails = follow(url, url)
            broke = restart_empty(redis)
            check_ended(request, tails, broke)
            # the run line: the worker that executed the run ended it with STORE_ERROR
            wait_for(lambda: [r for r in caplog.records if r.getMessage().startswith("run ended")])
            (line,) = [r for r in caplog.records if r.getMessage().startswith("run ended")]
            fields = line.agui  # type: ignore[attr-defined]
            assert fields["run"] == RUN and fields["thread"] == "t1"
            assert fields["outcome"] == "error" and fields["code"] == STORE_ERROR
            assert "code=STORE_ERROR" in line.getMessage()
            # said once, with the run's fields; no traceback
            lost = [r for r in caplog.records if "no longer has the run" in r.getMessage()]
            assert len(lost) == 1, [r.getMessage() for r in lost]
            assert lost[0].agui == {  # type: ignore[attr-defined]
                "agent": "agent",
                "thread": "t1",
                "run": RUN,
                "code": STORE_ERROR,
            }
            assert [r.getMessage() for r in caplog.records if r.exc_info] == []
            # the run's data is gone: a resume is 404, and the server serves new runs
            assert httpx.get(f"{url}/agent/runs/{RUN}/events").status_code == 404
            answer = post(f"{url}/agent", body("after", thread_id="t2", count=2))
            assert answer.status == 200, answer
            assert answer.frames[-1].type == "RUN_FINISHED"


def base(worker: Any) -> str:
    """The worker's URL without the agent's path (`agui serve`'s line names the agent's)."""
    url: str = worker.url
    return url.removesuffix("/agent")


def json_lines(worker: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in worker.stderr if line.startswith("{")]


def run_lines(worker: Any) -> list[dict[str, Any]]:
    return [o for o in json_lines(worker) if o["message"].startswith("run ended:")]


def test_redis_restarted_empty_ends_the_streams_on_both_workers(
    tmp_path: Path, served: Any, request: pytest.FixtureRequest
) -> None:
    """Two `agui serve` processes on one redis-server: the run executes on A, is followed on B
    (a resume and a connect), and every stream ends with RUN_ERROR STORE_ERROR; A's run line has
    the code."""
    with own_redis(tmp_path) as redis:
        args = ("agents:paced", "--store", redis.url, "--lease-seconds", str(LEASE))
        logs = ("--log-level", "info", "--log-format", "json")
        a, b = served(*args, *logs), served(*args, *logs)
        try:
            tails = follow(base(a), base(b))
            broke = restart_empty(redis)
            check_ended(request, tails, broke)
            wait_for(lambda: run_lines(a))
            (line,) = run_lines(a)
            assert line["run"] == RUN and line["thread"] == "t1"
            assert line["outcome"] == "error" and line["code"] == STORE_ERROR
            # B said it once, with the run's fields
            lost = [o for o in json_lines(b) if "no longer has the run" in o["message"]]
            assert len(lost) == 1, lost
            assert (lost[0]["run"], lost[0]["code"]) == (RUN, STORE_ERROR)
            assert lost[0]["thread"] == "t1"
            assert httpx.get(f"{base(b)}/agent/runs/{RUN}/events").status_code == 404
        finally:
            a.stop()
            b.stop()


def ended_in_error(url: str) -> float:
    """agui_runs_ended_total{outcome="error"} of the worker at `url`."""
    text = httpx.get(f"{url}/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "agui_runs_ended_total" and sample.labels["outcome"] == "error":
                return float(sample.value)
    raise AssertionError("no agui_runs_ended_total{outcome=error} series")


def test_the_survivor_counts_and_logs_the_runs_of_a_killed_worker(
    redis_url: str, served: Any
) -> None:
    runs = 3
    args = ("agents:paced", "--store", redis_url, "--lease-seconds", str(LEASE), "--metrics")
    logs = ("--log-level", "info", "--log-format", "json")
    a, b = served(*args, *logs), served(*args, *logs)
    before = ended_in_error(base(b))
    tails = [
        Tail(
            "POST", f"{base(a)}/agent", body(f"k{i}", thread_id=f"kt{i}", count=10_000, delay=0.01)
        )
        for i in range(runs)
    ]
    wait_for(lambda: all(len(t.frames) >= 3 for t in tails))
    a.kill()
    # nobody follows them: the survivor's sweep closes each (within about two leases)
    wait_for(lambda: ended_in_error(base(b)) - before >= runs, timeout=HANG)  # hang bound
    assert ended_in_error(base(b)) - before == runs
    lines = run_lines(b)
    assert sorted((o["thread"], o["run"]) for o in lines) == [
        (f"kt{i}", f"k{i}") for i in range(runs)
    ]
    for line in lines:
        assert line["agent"] == "agent"
        assert line["outcome"] == "error" and line["code"] == "RUN_LOST"
        assert line["client"] is None  # the request came to the worker that died
    # the warning about each carries the same fields, not the store's key
    warned = [o for o in json_lines(b) if o["message"].startswith("its worker is gone")]
    assert sorted(o["run"] for o in warned) == [f"k{i}" for i in range(runs)]
    assert all(o["code"] == "RUN_LOST" and o["thread"].startswith("kt") for o in warned)
