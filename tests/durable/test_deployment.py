"""docs/deployment.md as written: its nginx configuration (the page's `nginx` block, with the
ports it names replaced by free ones) in front of two `agui serve` processes sharing one SQLite
store, run by a real nginx (the Debian package, which .ci/run installs).

What each line of the configuration is for, as the page says: a run streams frame by frame (the
agent waits until the client has seen its first text, so a buffering proxy never delivers it), a
silence longer than nginx's default read timeout (65 s, the workers sending no keep-alive
comments) is survived, a 6 MiB conversation is
accepted (nginx's default limit is 1 MiB), and a rollout: SIGTERM to the worker executing a run
streaming through nginx ends it with RUN_ERROR SERVER_SHUTDOWN, and the thread is read, and the
next turn served, through nginx by the other worker.

Without nginx the tests are skipped with the reason, unless AGUI_REQUIRE_NGINX=1 (as .ci/run sets).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.store import open_log

from ..conftest import ROOT
from .support import Served, served_processes

PAGE = ROOT / "docs" / "deployment.md"
WAIT = 120.0  # seconds; a hang bound (the run's silence is 65 s)
SILENCE = 65.0
"""Longer than nginx's default proxy_read_timeout (60 s)."""


def _require_nginx() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None
    )
    if found is None:
        reason = "nginx is not installed (Debian package nginx)"
        if os.environ.get("AGUI_REQUIRE_NGINX") == "1":
            pytest.fail(f"{reason}, and AGUI_REQUIRE_NGINX=1 requires the deployment tests")
        pytest.skip(reason)
    return found


def page_config() -> str:
    """The page's one `nginx` block."""
    blocks = re.findall(r"^```nginx\n(.*?)^```$", PAGE.read_text(), re.S | re.M)
    assert len(blocks) == 1, "docs/deployment.md has one nginx block"
    return str(blocks[0])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Nginx:
    """nginx in the foreground with the page's server block, its upstream ports replaced."""

    def __init__(self, binary: str, folder: Path, upstreams: list[int]) -> None:
        config = page_config()
        for named, port in zip(("127.0.0.1:8000", "127.0.0.1:8001"), upstreams, strict=True):
            assert named in config
            config = config.replace(named, f"127.0.0.1:{port}")
        self.port = free_port()
        assert "listen 8080;" in config
        config = config.replace("listen 8080;", f"listen 127.0.0.1:{self.port};")
        (folder / "agui.conf").write_text(config)
        # The test's own main configuration around it: everything in the test's folder (run as
        # root, the workers keep root, which can write there).
        user = "user root;\n" if os.geteuid() == 0 else ""
        temp = " ".join(
            f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi")
        )
        (folder / "nginx.conf").write_text(
            f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'error.log'} info;\n"
            "events { worker_connections 256; }\n"
            f"http {{ access_log off; {temp} uwsgi_temp_path {folder / 'uwsgi'}; "
            f"scgi_temp_path {folder / 'scgi'}; include {folder / 'agui.conf'}; }}\n"
        )
        self.folder = folder
        self.proc = subprocess.Popen(
            [binary, "-p", str(folder), "-c", str(folder / "nginx.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # its errors go to error.log
        )
        self._wait_listening()

    def _wait_listening(self) -> None:
        for _ in range(200):  # hang bound: 10 s
            if self.proc.poll() is not None:
                raise AssertionError(f"nginx exited: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                threading.Event().wait(0.05)
        raise AssertionError(f"nginx does not listen: {self.log()}")

    def log(self) -> str:
        path = self.folder / "error.log"
        return path.read_text() if path.exists() else ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/agent"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[Nginx, list[Served], str]]:
    binary = _require_nginx()
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    starting = served_processes()
    start: Callable[..., Served] = next(starting)
    # No keep-alive comments: the proxy's read timeout is then the only thing that lets a run be
    # silent for long (with them, nginx's default would do too).
    args = ("--store", store, "--no-console", "--keepalive", "none")
    workers = [start("agents:gated", *args) for _ in range(2)]
    ports = [int(re.search(r":(\d+)/", w.url).group(1)) for w in workers]  # type: ignore[union-attr]
    folder = tmp_path / "nginx"
    folder.mkdir()
    nginx = Nginx(binary, folder, ports)
    try:
        yield nginx, workers, store
    finally:
        nginx.stop()
        next(starting, None)


def run_body(run_id: str, thread_id: str, **props: Any) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [{"id": f"u-{run_id}", "role": "user", "content": "hi"}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": props,
    }


def events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The events of an SSE answer's lines, as they come."""
    for line in lines:
        if line.startswith("data: "):
            yield json.loads(line[len("data: ") :])


def test_a_run_streams_frame_by_frame_and_outlasts_the_proxys_read_timeout(
    deployment: tuple[Nginx, list[Served], str], tmp_path: Path
) -> None:
    nginx, _, _ = deployment
    gate = tmp_path / "gate"
    body = run_body("r1", "t1", gate=str(gate), silence=SILENCE)
    seen: list[dict[str, Any]] = []
    with httpx.stream("POST", nginx.url, json=body, timeout=WAIT) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"] == "text/event-stream"
        for event in events(answer.iter_lines()):
            seen.append(event)
            if event.get("delta") == "before":
                gate.touch()  # the agent goes on only once this text has passed the proxy
    assert [e["type"] for e in seen] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ], nginx.log()
    assert "upstream timed out" not in nginx.log()


def test_a_long_conversation_passes_the_proxy(
    deployment: tuple[Nginx, list[Served], str],
) -> None:
    nginx, _, _ = deployment
    history = [
        {"id": f"m{i}", "role": "user" if i % 2 else "assistant", "content": "x" * 60_000}
        for i in range(100)
    ]
    body = run_body("r-long", "t-long")
    body["messages"] = [*history, *body["messages"]]
    content = json.dumps(body).encode()
    assert 6 * 1024 * 1024 > len(content) > 5 * 1024 * 1024
    answer = httpx.post(
        nginx.url, content=content, headers={"content-type": "application/json"}, timeout=WAIT
    )
    assert answer.status_code == 200, answer.text[:300]
    assert [e["type"] for e in events(iter(answer.text.splitlines()))][-1] == "RUN_FINISHED"


def test_health_and_metrics_pass_the_proxy(deployment: tuple[Nginx, list[Served], str]) -> None:
    nginx, _, _ = deployment
    root = nginx.url.removesuffix("/agent")
    assert httpx.get(f"{root}/healthz", timeout=WAIT).json() == {"status": "ok"}
    assert httpx.get(f"{root}/readyz", timeout=WAIT).json() == {"status": "ok"}
    run = httpx.post(nginx.url, json=run_body("r-m", "t-m"), timeout=WAIT)
    assert run.status_code == 200
    scraped = httpx.get(f"{root}/metrics", timeout=WAIT)
    assert scraped.status_code == 200 and "agui_runs_started_total" in scraped.text


def _owner_pid(store: str, run_id: str) -> int:
    async def read() -> int:
        log = open_log(store)
        try:
            record = await log.get_run(run_id)
            assert record is not None
            return int(record.owner.split(":")[1])
        finally:
            await log.aclose()

    return asyncio.run(read())


def test_a_rollout_ends_the_run_cleanly_and_the_other_worker_goes_on(
    deployment: tuple[Nginx, list[Served], str], tmp_path: Path
) -> None:
    nginx, workers, store = deployment
    gate = tmp_path / "never"  # the run waits until its worker shuts down
    seen: list[dict[str, Any]] = []
    with httpx.stream(
        "POST", nginx.url, json=run_body("r-roll", "t-roll", gate=str(gate)), timeout=WAIT
    ) as answer:
        assert answer.status_code == 200
        for event in events(answer.iter_lines()):
            seen.append(event)
            if event.get("delta") == "before":
                pid = _owner_pid(store, "r-roll")
                [executing] = [w for w in workers if w.proc.pid == pid]
                executing.proc.send_signal(signal.SIGTERM)
    assert seen[-1]["type"] == "RUN_ERROR" and seen[-1]["code"] == "SERVER_SHUTDOWN", seen[-1]
    # hang bound; uvicorn ends by re-raising the signal once its shutdown is done
    assert executing.proc.wait(WAIT) in (0, -signal.SIGTERM)
    assert "Cancel" not in "".join(executing.stderr)  # nothing was left for uvicorn to cancel
    [other] = [w for w in workers if w is not executing]
    assert other.proc.poll() is None

    # The thread, read through the proxy: the other worker answers it from the store.
    conversation = agui.Conversation("t-roll")
    agent = agui.HttpAgent(nginx.url, timeout=WAIT)
    conversation.connect_sync(agent)
    [assistant] = [m for m in conversation.messages if m.role == "assistant"]
    assert assistant.content == "before"
    # The next turn, through the proxy, on the worker left (nginx passes the POST on when the
    # stopped worker refuses the connection).
    result = conversation.run_sync(agent, "again")
    assert result.outcome == "success", conversation.failures
    assert [m.content for m in conversation.messages if m.role == "assistant"][-1] == (
        "before after"
    )
    agent.close()
