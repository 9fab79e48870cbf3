"""Logs an operator can use (issue 21, item 5): one line per run at INFO (agent, thread, run,
outcome, events, duration, client address), an agent's failure with its traceback, and
`--log-format json`: every line on stderr one JSON object. Each with a real `agui serve` process,
and with plain `uvicorn module:app --log-config FILE` (agui.http.logs.log_config written as JSON).
The same processes' metrics (issue 21, item 4): on by default under `agui serve`, counting its
runs; `--no-metrics` leaves /metrics out; `--metrics` with an ASGI app is refused.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import agui
from agui.http.logs import JsonFormatter, log_config

from .conftest import live_server, run_input

AGUI = Path(sys.executable).parent / "agui"
STARTUP = 20.0  # hang bound: seconds a server may take to start or stop
SERVE = [str(AGUI), "serve", "logged_agent:agent", "--port", "0", "--log-level", "info"]
UVICORN = [sys.executable, "-m", "uvicorn", "logged_agent:app", "--port", "0"]

AGENT = """
import agui


async def agent(run):
    if run.messages[-1].content == "fail":
        raise RuntimeError("the agent broke")
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    yield agui.TextMessageContentEvent(message_id="m", delta="hello")
    yield agui.TextMessageEndEvent(message_id="m")


app = agui.AgentApp(agent, path="/agent", name="logged")
"""


class Process:
    """A server in a subprocess; its stderr read line by line in a thread."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self.stdout: list[str] = []  # uvicorn's access lines (its handler writes them there)
        threading.Thread(target=self._read, daemon=True).start()
        self.out = threading.Thread(target=self._read_stdout, daemon=True)
        self.out.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            self.stdout.extend(self.proc.stdout)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.stderr.append(line)
                self.lines.put(line)
        self.lines.put(None)

    def url(self, pattern: str) -> str:
        """The first http:// URL on a line matching `pattern` (waits for it)."""
        while True:
            line = self.lines.get(timeout=STARTUP)
            assert line is not None, "the server exited: " + "".join(self.stderr)
            found = re.search(r"http://[0-9.]+:\d+", line)
            if re.search(pattern, line) and found:
                return found.group(0)

    def stop(self) -> list[str]:
        """SIGINT, then every line of stderr."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(STARTUP)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        while self.lines.get(timeout=STARTUP) is not None:
            pass
        self.out.join(STARTUP)
        return self.stderr


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "logged_agent.py").write_text(AGENT)
    return tmp_path


def two_runs(url: str) -> None:
    """A run that succeeds (ok-run, thread t-ok) and one whose agent fails (bad-run)."""
    for run_id, text in (("ok-run", "hi"), ("bad-run", "fail")):
        body = agui.encode(run_input(run_id=run_id, thread_id=f"t-{run_id}", text=text))
        answer = httpx.post(
            f"{url}/agent", content=body, headers={"content-type": "application/json"}
        )
        assert answer.status_code == 200


def check_json_lines(lines: list[str]) -> list[dict[str, Any]]:
    """Every line one JSON object with time, level, logger and message."""
    assert lines
    objects = []
    for line in lines:
        value = json.loads(line)
        assert isinstance(value, dict), line
        assert {"time", "level", "logger", "message"} <= value.keys(), line
        objects.append(value)
    return objects


def check_run_objects(objects: list[dict[str, Any]], agent: str) -> None:
    """One object per run's end with its fields; the failure's traceback in another."""
    ends = {o["run"]: o for o in objects if o["message"].startswith("run ended:")}
    assert set(ends) == {"ok-run", "bad-run"}, objects
    ok = ends["ok-run"]
    assert ok["level"] == "INFO" and ok["logger"] == "agui.server"
    assert (ok["agent"], ok["thread"], ok["outcome"], ok["events"]) == (
        agent,
        "t-ok-run",
        "success",
        5,
    )
    # the field is there and a number of seconds (no speed is asserted: any non-negative value)
    assert ok["duration"] >= 0 and ok["client"].startswith("127.0.0.1:")
    assert (ends["bad-run"]["outcome"], ends["bad-run"]["code"]) == ("error", "AGENT_ERROR")
    failures = [o for o in objects if "exception" in o]
    assert len(failures) == 1, failures
    assert failures[0]["level"] == "ERROR"
    assert "Traceback (most recent call last)" in failures[0]["exception"]
    assert "RuntimeError: the agent broke" in failures[0]["exception"]


def test_agui_serve_json_writes_one_object_per_line(folder: Path) -> None:
    """`agui serve --log-format json`: the serving lines, uvicorn's, the runs' ends, the
    traceback: all JSON, one object a line."""
    server = Process(
        [*SERVE, "--log-format", "json"],
        folder,
    )
    url = server.url(r'"serving ')
    two_runs(url)
    scraped = httpx.get(f"{url}/metrics").text  # agui serve's metrics, on by default
    objects = check_json_lines(server.stop())
    ended = {
        sample.labels["outcome"]: sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
        if sample.name == "agui_runs_ended_total"
    }
    assert (ended["success"], ended["error"], ended["disconnected"]) == (1, 1, 0), ended
    check_run_objects(objects, "agent")
    assert objects[3]["logger"] == "agui.serve"
    assert objects[3]["message"].startswith("serving logged_agent:agent at http://127.0.0.1:")
    # uvicorn's access lines (on stdout, where its handler writes them) are objects too
    access = check_json_lines(server.stdout)
    assert [(o["method"], o["path"], o["status"]) for o in access] == [
        ("POST", "/agent", 200),
        ("POST", "/agent", 200),
        ("GET", "/metrics", 200),
    ]


def test_agui_serve_text_has_the_run_line_and_the_traceback(folder: Path) -> None:
    """`agui serve --log-level info` (text): a key=value line per run, the traceback as lines."""
    server = Process(SERVE, folder)
    two_runs(server.url(r"^serving "))
    text = "".join(server.stop())
    found = re.findall(r"run ended: (.*)", text)
    assert len(found) == 2, text
    assert re.fullmatch(
        r"agent=agent thread=t-ok-run run=ok-run outcome=success events=5 "
        r"duration=[0-9.]+ client=127\.0\.0\.1:\d+",
        found[0],
    ), found
    assert "outcome=error code=AGENT_ERROR" in found[1]
    assert "Traceback (most recent call last)" in text
    assert "RuntimeError: the agent broke" in text


def test_plain_uvicorn_with_the_log_config_writes_json(folder: Path) -> None:
    """`uvicorn logged_agent:app --log-config logging.json` (agui.http.logs.log_config("json")): the
    same objects as agui serve writes, the AgentApp's name as the agent."""
    (folder / "logging.json").write_text(json.dumps(log_config("json", "info")))
    server = Process(
        [*UVICORN, "--log-config", "logging.json", "--log-level", "info"],
        folder,
    )
    two_runs(server.url("Uvicorn running on"))
    check_run_objects(check_json_lines(server.stop()), "logged")


def test_no_metrics_leaves_the_route_out(folder: Path) -> None:
    """`agui serve --no-metrics`: /metrics is 404, and no "metrics:" line is printed."""
    server = Process([*SERVE, "--no-metrics"], folder)
    url = server.url(r"^serving ")
    answer = httpx.get(f"{url}/metrics")
    text = "".join(server.stop())
    assert answer.status_code == 404
    assert "metrics: http" not in text


def test_metrics_with_an_asgi_app_are_refused(folder: Path) -> None:
    """--metrics names an AgentApp setting: with an ASGI app it is refused before the start."""
    done = subprocess.run(
        [str(AGUI), "serve", "logged_agent:app", "--port", "0", "--metrics"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=STARTUP,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("agui serve: logged_agent:app is an ASGI app: --metrics is for")


def test_client_ids_cannot_forge_a_field_or_a_line(caplog: pytest.LogCaptureFixture) -> None:
    """A run id with a space, an equals sign and a newline is quoted in the text line."""
    from agui.http.server import _log_run

    caplog.set_level(logging.INFO, logger="agui.server")
    evil = agui.RunAgentInput(
        thread_id="t", run_id="r outcome=success\nrun ended: forged", messages=()
    )
    _log_run("a", evil.thread_id, evil.run_id, "error", None, 1, 0.5, ("127.0.0.1", 5), None)
    (record,) = caplog.records
    message = record.getMessage()
    assert "\n" not in message
    assert 'run="r outcome=success\\nrun ended: forged" outcome=error' in message
    assert record.agui["run"] == evil.run_id  # type: ignore[attr-defined]
    assert json.loads(JsonFormatter().format(record))["run"] == evil.run_id


# ── the fields of every line about a run (issue 31, item 5) ──────────────────────────────────


def about(caplog: pytest.LogCaptureFixture, start: str) -> logging.LogRecord:
    (record,) = [r for r in caplog.records if r.getMessage().startswith(start)]
    return record


def check_fields(record: logging.LogRecord, fields: dict[str, Any]) -> None:
    """The record has the run's fields: in its `agui` attribute, as members of its JSON object,
    and at the end of its text as key=value (an id with a space quoted)."""
    assert record.agui == fields  # type: ignore[attr-defined]
    line = json.loads(JsonFormatter().format(record))
    assert {key: line[key] for key in fields} == fields
    pairs = " ".join(
        f"{key}={json.dumps(value) if ' ' in str(value) else value}"
        for key, value in fields.items()
    )
    assert record.getMessage().endswith(": " + pairs), record.getMessage()


async def failing(run: agui.RunAgentInput) -> Any:
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    raise RuntimeError("the agent broke")


async def slow(run: agui.RunAgentInput) -> Any:
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    while True:
        yield agui.TextMessageContentEvent(message_id="m", delta="x")
        await asyncio.sleep(0.02)


def start(url: str, run_id: str, thread_id: str = "t 1") -> httpx.Response:
    content = agui.encode(run_input(run_id, thread_id))
    headers = {"content-type": "application/json", "Agui-Resume": "1"}
    return httpx.post(f"{url}/agent", content=content, headers=headers, timeout=30)


def test_a_streamed_run_s_lines_carry_its_fields(caplog: pytest.LogCaptureFixture) -> None:
    """Without a store: the agent's failure (agui.agent) and a time limit (agui.server)."""
    caplog.set_level(logging.INFO, logger="agui")
    with live_server(agui.AgentApp(failing, path="/agent", name="named")) as url:
        assert "AGENT_ERROR" in start(url, "r-fail").text
    check_fields(
        about(caplog, "the agent failed"),
        {"agent": "named", "thread": "t 1", "run": "r-fail", "code": "AGENT_ERROR"},
    )
    caplog.clear()
    with live_server(agui.AgentApp(slow, path="/agent", max_run_seconds=0.2)) as url:
        assert "TIMEOUT" in start(url, "r-slow").text
    check_fields(
        about(caplog, "ended with RUN_ERROR"),
        {"agent": "agent", "thread": "t 1", "run": "r-slow", "code": "TIMEOUT"},
    )


def test_a_durable_run_s_lines_carry_its_fields(caplog: pytest.LogCaptureFixture) -> None:
    """With a store: a time limit, a stop on request; the ids are the client's, never the
    store's key (with an authorize hook, the key has the principal's prefix)."""
    caplog.set_level(logging.INFO, logger="agui")

    async def everyone(headers: Any, action: str, thread: Any, run: Any) -> str:
        return "someone"

    app = agui.AgentApp(
        slow, path="/agent", store="memory://", max_run_seconds=0.2, authorize=everyone
    )
    with live_server(app) as url:
        assert "TIMEOUT" in start(url, "r-limit").text
        check_fields(
            about(caplog, "ended with RUN_ERROR"),
            {"agent": "agent", "thread": "t 1", "run": "r-limit", "code": "TIMEOUT"},
        )
        caplog.clear()
        stopping = threading.Thread(target=start, args=(url, "r-stop", "t2"))
        stopping.start()
        deadline = time.monotonic() + STARTUP
        while httpx.post(f"{url}/agent/runs/r-stop/stop").status_code != 202:
            assert time.monotonic() < deadline  # hang bound
            time.sleep(0.02)
        stopping.join(STARTUP)
    check_fields(
        about(caplog, "stopped on request"), {"agent": "agent", "thread": "t2", "run": "r-stop"}
    )


def test_the_run_line_of_a_proxied_request_has_the_forwarded_host_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """uvicorn --proxy-headers puts X-Forwarded-For's address with port 0 in the scope: the
    run line writes the host, not a fake `:0`; a direct request keeps its port."""
    from agui.http.server import client_address

    assert client_address(("203.0.113.7", 0)) == "203.0.113.7"
    assert client_address(("203.0.113.7", None)) == "203.0.113.7"
    assert client_address(("::1", 5001)) == "::1:5001"
    assert client_address(None) is None
    caplog.set_level(logging.INFO, logger="agui.server")
    app = agui.AgentApp(failing, path="/agent")
    config = {"proxy_headers": True, "forwarded_allow_ips": "127.0.0.1"}
    with live_server(app, **config) as url:
        content = agui.encode(run_input("r-proxied"))
        headers = {"content-type": "application/json", "x-forwarded-for": "203.0.113.7"}
        httpx.post(f"{url}/agent", content=content, headers=headers, timeout=30)
        start(url, "r-direct")
    lines = {r.agui["run"]: r for r in caplog.records if r.getMessage().startswith("run ended")}  # type: ignore[attr-defined]
    assert lines["r-proxied"].agui["client"] == "203.0.113.7"  # type: ignore[attr-defined]
    assert "client=203.0.113.7" in lines["r-proxied"].getMessage()
    assert re.fullmatch(r"127\.0\.0\.1:[1-9]\d*", lines["r-direct"].agui["client"])  # type: ignore[attr-defined]


def test_the_run_line_has_the_trace_id_when_tracing_is_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The run's span continues the caller's trace (traceparent): the line's trace is its id."""
    from opentelemetry.sdk.trace import TracerProvider

    caplog.set_level(logging.INFO, logger="agui.server")
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = f"00-{trace_id}-00f067aa0ba902b7-01"
    for store in (None, "memory://"):
        caplog.clear()
        app = agui.AgentApp(failing, path="/agent", store=store, tracing=TracerProvider())
        with live_server(app) as url:
            content = agui.encode(run_input("r-traced"))
            headers = {"content-type": "application/json", "traceparent": parent}
            httpx.post(f"{url}/agent", content=content, headers=headers, timeout=30)
        line = about(caplog, "run ended")
        assert line.agui["trace"] == trace_id  # type: ignore[attr-defined]
        assert f"trace={trace_id}" in line.getMessage()
    caplog.clear()
    with live_server(agui.AgentApp(failing, path="/agent")) as url:
        start(url, "r-untraced")
    assert "trace" not in about(caplog, "run ended").agui  # type: ignore[attr-defined]


@pytest.mark.parametrize("store", [None, "memory://"])
def test_a_served_model_agent_s_lines_carry_the_server_s_fields(
    caplog: pytest.LogCaptureFixture, store: str | None
) -> None:
    """A line the model agent logs inside a served run (a tool that failed) carries the server's
    fields for the run, its agent name included (agui.observe.runlog.RUN_FIELDS); run alone,
    without a server, the input's thread and run."""
    from agui.model import ModelAgent, ScriptedModel, tool
    from agui.model.scripted import call, say

    def explode() -> str:
        raise RuntimeError("the tool broke")

    def agent() -> ModelAgent:
        model = ScriptedModel([call("explode", {}, id="c1"), say("sorry")])
        return ModelAgent(model, tools=[tool(explode)])

    caplog.set_level(logging.INFO, logger="agui")
    with live_server(agui.AgentApp(agent(), path="/agent", name="shop", store=store)) as url:
        assert "RUN_FINISHED" in start(url, "r-tool").text
    check_fields(
        about(caplog, "tool explode failed"), {"agent": "shop", "thread": "t 1", "run": "r-tool"}
    )
    caplog.clear()
    asyncio.run(agui.Conversation().run(agent(), "hi"))
    record = about(caplog, "tool explode failed")
    assert record.agui["thread"] and record.agui["run"]  # type: ignore[attr-defined]
    assert "agent" not in record.agui  # type: ignore[attr-defined]
