"""Prometheus metrics with a store (issue 21, item 4): runs that execute detached are counted at
their start and their end, whatever their requests do: a success, a RUN_ERROR, a run stopped on
request (after a client left and resumed it), a run stopped because its client left without
asking to resume it; resumes and connects are counted; a failing event log counts as store errors
and ends its run in outcome error. Each on real uvicorn on loopback, on each backend (memory,
SQLite, a real redis-server), scraped at `GET /metrics` and parsed by prometheus-client's parser.
Each run's end is logged once at INFO with its fields.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

import agui
from tests.conftest import live_server

from .agents import paced
from .disks import writer_pragma
from .support import body, post, stream

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """The paced agent, or a failure when the message says "fail"."""
    if run.messages[-1].content == "fail":
        raise RuntimeError("the agent broke")
    async for event in paced(run):
        yield event


def scrape(url: str) -> Samples:
    answer = httpx.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200, answer.text
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def ended(url: str, outcome: str) -> float:
    return value(scrape(url), "agui_runs_ended_total", agent="durable", outcome=outcome)


def wait_for(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout  # hang bound
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.05)


def run_lines(caplog: pytest.LogCaptureFixture) -> dict[str, dict[str, Any]]:
    """The per-run lines logged, by run id (each run's once: a second would fail here)."""
    lines: dict[str, dict[str, Any]] = {}
    for record in caplog.records:
        fields = getattr(record, "agui", None)
        if fields is not None and record.getMessage().startswith("run ended:"):
            assert fields["run"] not in lines, record.getMessage()
            lines[fields["run"]] = fields
    return lines


def test_durable_runs_are_counted_by_outcome(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Success, RUN_ERROR, stopped on request after a resume, stopped as its client left."""
    caplog.set_level(logging.INFO, logger="agui.server")
    app = agui.AgentApp(
        agent, path="/agent", store=store_url, metrics=CollectorRegistry(), name="durable"
    )
    with live_server(app) as url:
        done = post(f"{url}/agent", body("ok", "t-ok"))
        assert done.frames[-1].type == "RUN_FINISHED"
        failed = post(f"{url}/agent", body("bad", "t-bad", text="fail"))
        assert failed.frames[-1].type == "RUN_ERROR"
        # a client that resumes cut streams leaves; it resumes, then stops the run
        long = body("long", "t-long", count=100_000, delay=0.02)
        assert len(post(f"{url}/agent", long, stop_after=3).frames) == 3
        resumed = stream(f"{url}/agent/runs/long/events", stop_after=3)
        assert resumed.status == 200 and len(resumed.frames) == 3
        assert httpx.post(f"{url}/agent/runs/long/stop").status_code in (200, 202)
        wait_for(lambda: ended(url, "cancelled") == 1)
        # a client that does not resume leaves: its run is stopped
        gone = body("gone", "t-gone", count=100_000, delay=0.02)
        assert len(post(f"{url}/agent", gone, resumes=False, stop_after=3).frames) == 3
        wait_for(lambda: ended(url, "cancelled") == 2)
        connected = stream(f"{url}/agent/threads/t-ok/events")
        assert connected.frames[-1].type == "RUN_FINISHED"
        samples = scrape(url)
    assert value(samples, "agui_runs_started_total", agent="durable") == 4
    outcomes = {
        outcome: value(samples, "agui_runs_ended_total", agent="durable", outcome=outcome)
        for outcome in ("success", "interrupt", "cancelled", "error", "disconnected")
    }
    assert outcomes == {"success": 1, "interrupt": 0, "cancelled": 2, "error": 1, "disconnected": 0}
    assert value(samples, "agui_runs_active", agent="durable") == 0
    assert value(samples, "agui_resumes_total", agent="durable") == 1
    assert value(samples, "agui_connects_total", agent="durable") == 1
    assert value(samples, "agui_store_errors_total", agent="durable") == 0
    assert value(samples, "agui_time_to_first_event_seconds_count", agent="durable") == 4
    # The complete responses' events at least: the two POSTs read to the end, and the connect.
    read = len(done.frames) + len(failed.frames) + len(connected.frames)
    assert value(samples, "agui_sent_events_total", agent="durable", transport="sse") >= read + 9
    lines = run_lines(caplog)
    assert {run: fields["outcome"] for run, fields in lines.items()} == {
        "ok": "success",
        "bad": "error",
        "long": "cancelled",
        "gone": "cancelled",
    }
    assert lines["bad"]["code"] == "AGENT_ERROR"
    assert lines["ok"]["thread"] == "t-ok" and lines["ok"]["agent"] == "durable"
    assert lines["ok"]["events"] == 14  # RUN_STARTED, the message's 12, RUN_FINISHED: stored
    assert lines["ok"]["client"].startswith("127.0.0.1:")


def test_a_resume_counts_the_events_and_bytes_its_client_reads(store_url: str) -> None:
    """A stored run resumed from its start, read to the end: the events and bytes counted for
    that response are exactly what its client read (a batch read from the log is one write of
    many events)."""
    app = agui.AgentApp(
        agent, path="/agent", store=store_url, metrics=CollectorRegistry(), name="durable"
    )
    with live_server(app) as url:
        assert post(f"{url}/agent", body("big", "t1", count=500)).frames[-1].type == "RUN_FINISHED"
        before = scrape(url)
        size = 0
        frames = 0
        with httpx.stream("GET", f"{url}/agent/runs/big/events", timeout=30) as answer:
            for chunk in answer.iter_raw():
                size += len(chunk)
                frames += chunk.count(b"\n\n")
        after = scrape(url)
    assert frames == 504  # RUN_STARTED, the message's 502, RUN_FINISHED

    def grew(name: str) -> float:
        key = {"agent": "durable", "transport": "sse"}
        return value(after, name, **key) - value(before, name, **key)

    assert grew("agui_sent_events_total") == frames
    assert grew("agui_sent_bytes_total") == size


def test_a_failing_store_counts_store_errors_and_ends_the_run_in_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite turned read-only mid-run: agui_store_errors_total grows, the run ends in error
    (STORE_ERROR), and nothing stays active."""
    caplog.set_level(logging.INFO, logger="agui.server")
    app = agui.AgentApp(
        agent,
        path="/agent",
        store=f"sqlite:///{tmp_path / 'runs.db'}",
        metrics=CollectorRegistry(),
        name="durable",
        lease_seconds=2.0,
    )
    with live_server(app) as url:
        long = body("doomed", "t1", count=100_000, delay=0.02)
        with httpx.Client(timeout=30) as client:
            with client.stream(
                "POST",
                f"{url}/agent",
                content=long,
                headers={"content-type": "application/json", "agui-resume": "1"},
            ) as answer:
                seen = b""
                broken = False
                for chunk in answer.iter_raw():
                    seen += chunk
                    if seen.count(b"\n\n") >= 3 and not broken:
                        writer_pragma(app.store, "query_only = 1")
                        broken = True
                last = [line for line in seen.split(b"\n") if line.startswith(b"data: ")][-1]
        assert json.loads(last[6:])["code"] == "STORE_ERROR"
        wait_for(lambda: ended(url, "error") == 1)
        samples = scrape(url)
        writer_pragma(app.store, "query_only = 0")
    assert value(samples, "agui_store_errors_total", agent="durable") >= 1
    assert value(samples, "agui_runs_active", agent="durable") == 0
    assert run_lines(caplog)["doomed"]["code"] == "STORE_ERROR"
