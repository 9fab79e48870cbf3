"""Prometheus metrics without a store (issue 21, item 4): `GET /metrics` of an AgentApp served as
the whole app parses with prometheus-client's own text parser, and its counters match the runs
made over real uvicorn on loopback: a success, a RUN_ERROR, a cancelled outcome, an interrupt, a
client that leaves; the events and bytes counted are exactly those the clients read. Several AgentApps share one
registry under their names; metrics off serves no /metrics; labels never hold a run's ids.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

import agui
from agui import AgentApp, SSEDecoder

from .conftest import live_server, run_input

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def talk(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Success, cancelled, an interrupt or an error, as the user message says."""
    text = str(run.messages[-1].content)
    if text == "fail":
        raise RuntimeError("the agent broke")
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    for index in range(20):
        yield agui.TextMessageContentEvent(message_id="m", delta=f"{index} ")
    yield agui.TextMessageEndEvent(message_id="m")
    if text == "cancel":
        yield agui.RunFinishedEvent(
            thread_id=run.thread_id, run_id=run.run_id, outcome=agui.RunFinishedCancelledOutcome()
        )
    if text == "ask":
        asked = agui.Interrupt(id="i1", reason="confirmation")
        yield agui.RunFinishedEvent(
            thread_id=run.thread_id,
            run_id=run.run_id,
            outcome=agui.RunFinishedInterruptOutcome(interrupts=(asked,)),
        )
    if text == "hang":
        await asyncio.sleep(60)


def scrape(url: str, path: str = "/metrics") -> Samples:
    """GET /metrics, parsed by prometheus-client's parser: {(sample name, labels): value}."""
    answer = httpx.get(f"{url}{path}", timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain"), answer.headers
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def post(url: str, run_id: str, text: str) -> tuple[list[dict[str, Any]], int]:
    """Run to the end; (the events, the bytes of the body)."""
    body = agui.encode(run_input(run_id=run_id, thread_id=f"t-{run_id}", text=text))
    events: list[dict[str, Any]] = []
    size = 0
    decoder = SSEDecoder()
    with httpx.stream(
        "POST", f"{url}/agent", content=body, headers={"content-type": "application/json"}
    ) as answer:
        for chunk in answer.iter_raw():
            size += len(chunk)
            events += [json.loads(message.data) for message in decoder.feed(chunk)]
    return events, size


def leave_after_first_event(url: str, run_id: str) -> None:
    body = agui.encode(run_input(run_id=run_id, thread_id=f"t-{run_id}", text="hang"))
    with httpx.stream(
        "POST", f"{url}/agent", content=body, headers={"content-type": "application/json"}
    ) as answer:
        decoder = SSEDecoder()
        for chunk in answer.iter_raw():
            if list(decoder.feed(chunk)):
                return


def wait_for(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout  # hang bound
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)


def test_the_counters_match_the_runs_made() -> None:
    """Runs of each outcome are counted once each; events and bytes are those the clients read:
    exactly, less what the client that left did not read (a few writes at most)."""
    app = AgentApp(talk, path="/agent", metrics=CollectorRegistry(), name="talk")
    with live_server(app) as url:
        before = scrape(url)
        assert value(before, "agui_runs_started_total", agent="talk") == 0
        read_events = read_bytes = 0
        for run_id, text, last in [
            ("ok-1", "hi", "RUN_FINISHED"),
            ("ok-2", "hi", "RUN_FINISHED"),
            ("bad", "fail", "RUN_ERROR"),
            ("stop", "cancel", "RUN_FINISHED"),
            ("ask", "ask", "RUN_FINISHED"),
        ]:
            events, size = post(url, run_id, text)
            assert events[-1]["type"] == last, events[-1]
            read_events += len(events)
            read_bytes += size
        leave_after_first_event(url, "gone")
        wait_for(
            lambda: (
                value(scrape(url), "agui_runs_ended_total", agent="talk", outcome="disconnected")
                == 1
            )
        )
        samples = scrape(url)
    assert value(samples, "agui_runs_started_total", agent="talk") == 6
    ended = {
        outcome: value(samples, "agui_runs_ended_total", agent="talk", outcome=outcome)
        for outcome in ("success", "interrupt", "cancelled", "error", "disconnected")
    }
    assert ended == {"success": 2, "interrupt": 1, "cancelled": 1, "error": 1, "disconnected": 1}
    assert value(samples, "agui_runs_active", agent="talk") == 0
    assert value(samples, "agui_run_duration_seconds_count", agent="talk", outcome="success") == 2
    assert value(samples, "agui_time_to_first_event_seconds_count", agent="talk") == 6
    # The client that left read one event or more of what was written: at least what the five
    # complete runs' clients read, exactly, and no more than a few writes beyond.
    sent_events = value(samples, "agui_sent_events_total", agent="talk", transport="sse")
    sent_bytes = value(samples, "agui_sent_bytes_total", agent="talk", transport="sse")
    assert read_events < sent_events <= read_events + 24
    assert read_bytes < sent_bytes < read_bytes + 24 * 200


def test_events_and_bytes_are_exact_and_keepalives_are_not_events() -> None:
    """A run's events and bytes as the client read them; a keep-alive counts in bytes only."""

    async def slow(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m", role="assistant")
        await asyncio.sleep(0.35)  # keep-alives go out meanwhile (every 0.1 s)
        yield agui.TextMessageEndEvent(message_id="m")

    app = AgentApp(slow, path="/agent", metrics=CollectorRegistry(), keepalive=0.1)
    with live_server(app) as url:
        events, size = post(url, "r1", "hi")
        samples = scrape(url)
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert value(samples, "agui_sent_events_total", agent="agent", transport="sse") == 4
    assert value(samples, "agui_sent_bytes_total", agent="agent", transport="sse") == size
    assert size > sum(len(agui.encode(agui.decode(json.dumps(e)))) for e in events) + 3 * 8


def test_protobuf_responses_are_counted_under_their_transport() -> None:
    """A binary response's frames and bytes go under transport="protobuf"."""
    app = AgentApp(talk, path="/agent", metrics=CollectorRegistry())
    body = agui.encode(run_input(run_id="p1", text="hi"))
    with live_server(app) as url:
        answer = httpx.post(
            f"{url}/agent",
            content=body,
            headers={
                "content-type": "application/json",
                "accept": "application/vnd.ag-ui.event+proto",
            },
        )
        samples = scrape(url)
    assert answer.headers["content-type"] == "application/vnd.ag-ui.event+proto"
    assert value(samples, "agui_sent_bytes_total", agent="agent", transport="protobuf") == len(
        answer.content
    )
    assert (
        value(samples, "agui_sent_events_total", agent="agent", transport="protobuf") == 24
    )  # RUN_STARTED, 22, RUN_FINISHED
    assert value(samples, "agui_sent_events_total", agent="agent", transport="sse") == 0


def test_apps_sharing_a_registry_report_under_their_names() -> None:
    """Two AgentApps given one registry: one /metrics, one series per agent name."""
    registry = CollectorRegistry()
    first = AgentApp(talk, path="/agent", metrics=registry, name="first")
    second = AgentApp(talk, path="/agent", metrics=registry, name="second")
    with live_server(first) as url_1, live_server(second) as url_2:
        post(url_1, "a", "hi")
        post(url_2, "b", "hi")
        post(url_2, "c", "fail")
        samples = scrape(url_1)
        assert scrape(url_2) == samples  # the same registry, whichever app serves it
    assert value(samples, "agui_runs_ended_total", agent="first", outcome="success") == 1
    assert value(samples, "agui_runs_ended_total", agent="second", outcome="success") == 1
    assert value(samples, "agui_runs_ended_total", agent="second", outcome="error") == 1


def test_no_label_holds_a_thread_or_run_id() -> None:
    """The labels are the agent's name, the outcome and the transport, whatever the runs."""
    app = AgentApp(talk, path="/agent", metrics=CollectorRegistry())
    with live_server(app) as url:
        for index in range(3):
            post(url, f"run-{index}", "hi")
        samples = scrape(url)
    labels = {key for _, pairs in samples for key, _ in pairs}
    assert labels <= {"agent", "outcome", "transport", "le"}, labels
    values = {v for _, pairs in samples for _, v in pairs}
    assert not any("run-" in v or "t-run" in v for v in values), values


def test_metrics_off_serves_no_metrics_route() -> None:
    """Without metrics (the default), /metrics is a path like any other: 404."""
    with live_server(AgentApp(talk, path="/agent")) as url:
        answer = httpx.get(f"{url}/metrics")
    assert answer.status_code == 404, answer.text


def test_the_metrics_route_takes_get_only() -> None:
    app = AgentApp(talk, path="/agent", metrics=CollectorRegistry())
    with live_server(app) as url:
        answer = httpx.post(f"{url}/metrics")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET"


def test_authorize_is_asked_for_the_metrics() -> None:
    """With an authorize hook, /metrics is served only to whom it allows (action "metrics")."""
    asked: list[str] = []

    async def authorize(headers: Any, action: str, thread: Any, run: Any) -> str | None:
        asked.append(action)
        return "ops" if headers.get("authorization") == "Bearer scrape" else None

    app = AgentApp(talk, path="/agent", metrics=CollectorRegistry(), authorize=authorize)
    with live_server(app) as url:
        refused = httpx.get(f"{url}/metrics")
        allowed = httpx.get(f"{url}/metrics", headers={"authorization": "Bearer scrape"})
    assert refused.status_code == 403
    assert "agui_runs_started_total" not in refused.text
    assert allowed.status_code == 200
    assert asked == ["metrics", "metrics"]


def test_a_mounted_app_reports_into_the_registry_an_application_serves() -> None:
    """An app inside FastAPI leaves /metrics to the application: prometheus-client's ASGI app
    mounted on the same registry serves its counts."""
    fastapi = pytest.importorskip("fastapi")
    from prometheus_client import make_asgi_app

    registry = CollectorRegistry()
    api = fastapi.FastAPI()
    AgentApp(talk, metrics=registry, name="mounted").include_in(api, "/agent")
    api.mount("/metrics", make_asgi_app(registry))
    with live_server(api) as url:
        post(url, "m1", "hi")
        samples = scrape(url, "/metrics/")  # a mount's root (Prometheus follows the redirect)
    assert value(samples, "agui_runs_ended_total", agent="mounted", outcome="success") == 1


def test_the_metrics_route_is_served_under_a_root_path() -> None:
    """Behind a proxy that strips a prefix (uvicorn's root_path), /metrics is still answered."""
    app = AgentApp(talk, path="/agent", metrics=CollectorRegistry())
    with live_server(app, root_path="/prefix") as url:
        samples = scrape(url)
    assert value(samples, "agui_runs_started_total", agent="agent") == 0
    assert ("agui_runs_started_total", (("agent", "agent"),)) in samples
