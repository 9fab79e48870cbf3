"""`agui serve` the way uvicorn users expect, each case a real subprocess:

- MODULE:ATTR is found from the working directory (the `agui` script, not `python -m`, which
  puts it on sys.path by itself) or from `--app-dir`;
- an ASGI app (an AgentApp, FastAPI) is served as it is, an agent wrapped in AgentApp, anything
  else refused before the server starts;
- `--workers`, `--log-level`, `--root-path` reach uvicorn; the "serving" line comes once the
  server listens; a busy port is one line and exit status 1;
- SIGTERM while a hung agent streams: the client gets RUN_ERROR SERVER_SHUTDOWN, the process
  exits within `--timeout-graceful-shutdown`, nothing on stderr looks like a traceback.

And the docs' FastAPI example, run as written, serves `POST /agent`.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.cli.serve import serving_kind

from .conftest import ROOT, run_input
from .test_docs import block_containing

STARTUP = 20.0
"""Seconds `agui serve` may take to print its line (well under one in practice)."""
AGUI = Path(sys.executable).parent / "agui"

MODULE = """
import asyncio
import os

import agui


async def echo(run):
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta="hello")
    yield agui.TextMessageEndEvent(message_id="m")


async def whoami(run):
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta=str(os.getpid()))
    yield agui.TextMessageEndEvent(message_id="m")


async def hung(run):
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta="working")
    await asyncio.sleep(3600)


app = agui.AgentApp(echo, path="/run")


async def scope_echo(scope, receive, send):
    if scope["type"] != "http":
        return
    body = f'{{"root_path": "{scope.get("root_path", "")}", "path": "{scope["path"]}"}}'
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body.encode()})


def sync_agent(run):
    yield agui.TextMessageStartEvent(message_id="m")


answer = 42
"""

FASTAPI_MODULE = """
from fastapi import FastAPI

import agui


async def echo(run):
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageEndEvent(message_id="m")


api = FastAPI()
api.add_route("/agent", agui.AgentApp(echo), methods=["POST"])


@api.get("/health")
async def health():
    return {"ok": True}
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """A folder holding mymod.py and fastmod.py, as a user's project would."""
    (tmp_path / "mymod.py").write_text(MODULE)
    (tmp_path / "fastmod.py").write_text(FASTAPI_MODULE)
    return tmp_path


class Served:
    """`agui serve ...` in a subprocess; its stderr is read line by line in a thread."""

    def __init__(self, *args: str, cwd: Path, command: list[str] | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        env["PYTHONUNBUFFERED"] = "1"
        base = command if command is not None else [str(AGUI)]
        self.proc = subprocess.Popen(
            [*base, "serve", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self.serving = ""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.stderr.append(line)
                self.lines.put(line)
        self.lines.put(None)

    def line(self, timeout: float = STARTUP) -> str | None:
        """The next line of stderr (None at its end)."""
        return self.lines.get(timeout=timeout)

    def url(self) -> str:
        """The URL of the "serving" line (waits for it)."""
        while True:
            line = self.line()
            assert line is not None, "agui serve exited: " + "".join(self.stderr)
            found = re.search(r"http://\S+", line)
            if line.startswith("serving ") and found:
                self.serving = line
                return found.group(0)

    def wait(self, timeout: float = STARTUP) -> int:
        """Wait for the process to exit and its stderr to be read; its exit status."""
        code = self.proc.wait(timeout)
        self.reader.join(timeout)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(STARTUP)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(STARTUP)


@pytest.fixture
def served() -> Iterator[Any]:
    running: list[Served] = []

    def start(*args: str, cwd: Path, command: list[str] | None = None) -> Served:
        running.append(Served(*args, cwd=cwd, command=command))
        return running[-1]

    yield start
    for one in running:
        one.stop()


def run_text(url: str) -> tuple[list[str], str]:
    """One run through HttpAgent: the event types and the text."""
    events = list(agui.HttpAgent(url).run_sync(run_input()))
    text = "".join(e.delta for e in events if isinstance(e, agui.TextMessageContentEvent))
    return [e.type.value for e in events], text


# ── finding the module ────────────────────────────────────────────────────────────────────────


def test_the_module_is_found_in_the_working_directory(served: Any, app_dir: Path) -> None:
    """`agui serve mymod:echo` run from the folder holding mymod.py serves it (the `agui`
    script, whose sys.path does not hold the working directory by itself)."""
    assert AGUI.exists()
    url = served("mymod:echo", "--port", "0", cwd=app_dir).url()
    assert url.endswith("/agent")
    assert run_text(url) == (
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ],
        "hello",
    )


def test_app_dir_names_the_folder(served: Any, app_dir: Path, tmp_path_factory: Any) -> None:
    """--app-dir DIR: the module is looked for in DIR, from any working directory."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    url = served("mymod:echo", "--port", "0", "--app-dir", str(app_dir), cwd=elsewhere).url()
    assert run_text(url)[1] == "hello"


# ── what is served ────────────────────────────────────────────────────────────────────────────


def test_an_agentapp_is_served_as_it_is(served: Any, app_dir: Path) -> None:
    """MODULE:ATTR naming an AgentApp serves it with its own path (not wrapped again)."""
    one = served("mymod:app", "--port", "0", cwd=app_dir)
    url = one.url()
    assert "(an ASGI app)" in one.serving
    assert run_text(url + "/run")[1] == "hello"
    assert httpx.post(url + "/agent", json={}).status_code == 404


def test_a_fastapi_app_is_served_as_it_is(served: Any, app_dir: Path) -> None:
    """MODULE:ATTR naming a FastAPI app serves it: its routes, the AgentApp at /agent too."""
    url = served("fastmod:api", "--port", "0", cwd=app_dir).url()
    assert httpx.get(url + "/health").json() == {"ok": True}
    assert run_text(url + "/agent")[0][-1] == "RUN_FINISHED"


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("mymod:answer", "is neither an agent"),
        ("mymod:sync_agent", "is a generator function, not an async one"),
        ("mymod:missing", "has no attribute 'missing'"),
        ("nomod:echo", "No module named 'nomod'"),
    ],
)
def test_what_cannot_be_served_is_refused_at_start(
    served: Any, app_dir: Path, target: str, says: str
) -> None:
    """Neither an agent nor an ASGI app (or a broken agent, or nothing at all): refused before
    the server starts, with one line and exit status 2."""
    one = served(target, "--port", "0", cwd=app_dir)
    assert one.wait() == 2
    err = "".join(one.stderr)
    assert says in err and err.startswith("agui serve: ") and err.count("\n") == 1, err
    assert "serving" not in err and "Traceback" not in err


def test_path_is_for_agents_only(served: Any, app_dir: Path) -> None:
    """--path with an ASGI app (which decides its own paths) is refused."""
    one = served("mymod:app", "--path", "/x", "--port", "0", cwd=app_dir)
    assert one.wait() == 2
    assert "--path is for an agent" in "".join(one.stderr)


def test_serving_kind_reads_the_signature() -> None:
    """An async generator function or an object whose call takes the input alone is an agent;
    (scope, receive, send) is an ASGI app; an AgentApp is an ASGI app; a class, a number and a
    call of two arguments are neither."""
    from fastapi import FastAPI

    from agui.cli.demo import DemoAgent

    async def agent(run: Any) -> Any:
        yield None

    async def asgi(scope: Any, receive: Any, send: Any) -> None: ...

    def two(a: Any, b: Any) -> None: ...

    for target, kind in [
        (agent, "agent"),
        (DemoAgent(), "agent"),
        (agui.HttpAgent("http://127.0.0.1:9"), "agent"),
        (asgi, "asgi"),
        (FastAPI(), "asgi"),
        (agui.AgentApp(agent), "asgi"),
    ]:
        assert serving_kind(target) == kind, target
    for target in (DemoAgent, 42, two):
        with pytest.raises(TypeError):
            serving_kind(target)


# ── uvicorn's options ─────────────────────────────────────────────────────────────────────────


def test_workers_serve_runs(served: Any, app_dir: Path) -> None:
    """--workers 2: the runs are served by worker processes (each built the agent itself from
    the import string; the pid in the answer is not the supervisor's)."""
    one = served("mymod:whoami", "--port", "0", "--workers", "2", cwd=app_dir)
    url = one.url()
    assert "(2 workers)" in one.serving
    pids = {run_text(url)[1] for _ in range(4)}
    assert pids and str(one.proc.pid) not in pids and all(p.isdigit() for p in pids)


def test_log_level_reaches_uvicorn(served: Any, app_dir: Path) -> None:
    """--log-level info shows uvicorn's info lines; the default (warning) does not."""
    quiet = served("mymod:echo", "--port", "0", cwd=app_dir)
    chatty = served("mymod:echo", "--port", "0", "--log-level", "info", cwd=app_dir)
    for one in (quiet, chatty):
        run_text(one.url())
        one.stop()
        one.wait()
    assert "INFO:     Application startup complete." in "".join(chatty.stderr)
    assert "INFO:" not in "".join(quiet.stderr)


def test_root_path_reaches_the_app(served: Any, app_dir: Path) -> None:
    """--root-path /api is the ASGI root_path the app sees (a proxy serving it under /api)."""
    one = served("mymod:scope_echo", "--port", "0", "--root-path", "/api", cwd=app_dir)
    url = one.url()
    assert "(root path /api)" in one.serving
    assert httpx.get(url + "/x").json()["root_path"] == "/api"


def test_the_console_url_follows_the_serving_line(served: Any, app_dir: Path) -> None:
    """An agent gets the dev console at {path}/console, whose URL is the line after "serving";
    --no-console leaves it out (the route is then the agent's own 404); an ASGI app has none."""
    one = served("mymod:echo", "--port", "0", "--path", "/x", "--root-path", "/api", cwd=app_dir)
    url = one.url()
    assert one.line() == f"console: {url}/console\n"
    page = httpx.get(url + "/console")
    assert page.status_code == 200 and "content-security-policy" in page.headers
    assert '<script type="module" src="console/main.js"></script>' in page.text
    off = served("mymod:echo", "--port", "0", "--no-console", cwd=app_dir)
    url = off.url()
    assert httpx.get(url + "/console").status_code == 404
    asgi = served("mymod:app", "--port", "0", cwd=app_dir)
    asgi.url()
    assert asgi.stop() is None and not any(line.startswith("console:") for line in asgi.stderr)
    assert not any(line.startswith("console:") for line in off.stderr)


def test_the_line_comes_once_the_server_listens(served: Any, app_dir: Path) -> None:
    """The "serving" line is printed once the server has started: a request sent the moment it
    appears is answered (no connection refused)."""
    url = served("mymod:echo", "--port", "0", cwd=app_dir).url()
    with httpx.Client(timeout=5) as client:
        assert client.get(url).status_code == 405


def test_a_busy_port_is_one_line_and_exit_1(served: Any, app_dir: Path) -> None:
    """A port in use: exit status 1, one line saying so, no "serving" line, no traceback."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        one = served("mymod:echo", "--port", str(port), cwd=app_dir)
        assert one.wait() == 1
    err = "".join(one.stderr)
    assert err.count("\n") == 1, err
    assert err.startswith(f"agui serve: cannot listen on 127.0.0.1:{port}: ")
    assert "in use" in err and "Traceback" not in err


# ── shutdown ──────────────────────────────────────────────────────────────────────────────────


SHUTDOWN_HANG = 60.0
"""A hang bound: how long a process told to stop (SIGTERM, a 2 s graceful window) may take to exit
before the test fails (it takes about the window)."""


def sigterm_mid_run(one: Served, url: str) -> tuple[list[dict[str, Any]], int | None]:
    """Stream a run; at its first content send SIGTERM; return the events and the process's exit
    status (None: still running SHUTDOWN_HANG seconds later)."""
    events: list[dict[str, Any]] = []
    signalled = False
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST",
            url,
            content=agui.encode(run_input()),
            headers={"content-type": "application/json"},
        ) as response,
    ):
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["type"] == "TEXT_MESSAGE_CONTENT" and not signalled:
                    signalled = True
                    one.proc.send_signal(signal.SIGTERM)
    try:
        return events, one.wait(SHUTDOWN_HANG)
    except subprocess.TimeoutExpired:
        return events, None


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_ends_a_hung_run_with_server_shutdown(
    served: Any, app_dir: Path, workers: str
) -> None:
    """SIGTERM while a hung agent streams: the client receives RUN_ERROR SERVER_SHUTDOWN (only
    the shutdown ends that agent's run), the process exits (its graceful window is 2 s; the test
    waits SHUTDOWN_HANG), and stderr holds no traceback."""
    one = served(
        "mymod:hung",
        "--port",
        "0",
        "--timeout-graceful-shutdown",
        "2",
        "--workers",
        workers,
        cwd=app_dir,
    )
    events, code = sigterm_mid_run(one, one.url())
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "RUN_ERROR",
    ]
    assert events[-1]["code"] == "SERVER_SHUTDOWN"
    assert code is not None, "agui serve did not exit after SIGTERM"  # hang bound
    assert code in (0, -signal.SIGTERM), code
    err = "".join(one.stderr)
    assert "Traceback" not in err and "Exception" not in err, err


# ── the docs' FastAPI example ─────────────────────────────────────────────────────────────────


def docs_fastapi_app() -> Any:
    """The FastAPI app of docs/serving.md, as written (with the page's echo agent)."""
    page = ROOT / "docs" / "serving.md"
    namespace: dict[str, Any] = {}
    exec(compile(block_containing(page, "async def echo("), "serving.md", "exec"), namespace)
    exec(compile(block_containing(page, "api = FastAPI()"), "serving.md", "exec"), namespace)
    return namespace["api"]


def test_the_docs_fastapi_example_serves_post_agent(serve: Any) -> None:
    """docs/serving.md's FastAPI example, run as written: POST /agent (no trailing slash) is
    served to HttpAgent and Conversation, with no redirect."""
    url = serve(docs_fastapi_app()) + "/agent"
    with httpx.Client(timeout=10) as client:
        answer = client.post(
            url, content=agui.encode(run_input()), headers={"content-type": "application/json"}
        )
    assert answer.status_code == 200 and answer.headers["content-type"] == "text/event-stream"
    conversation = agui.Conversation("thread-1")
    asyncio.run(conversation.run(agui.HttpAgent(url), "hi"))
    assert conversation.outcome() == ("completed", None)
    assert conversation.messages_json()[-1]["content"] == "hello"


def test_the_listening_socket_gives_its_connections_tcp_nodelay() -> None:
    """agui serve binds its own socket (to report a busy port itself): asyncio sets TCP_NODELAY
    on a connection only when that socket names IPPROTO_TCP, and without it every small answer
    on a reused keep-alive connection waits for the client's delayed ACK (~40 ms)."""
    from agui.cli.serve import _bind

    host = "127.0.0.1"
    sock = _bind(host, 0)

    async def check() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Accept(asyncio.Protocol):
            def connection_made(self, transport: Any) -> None:
                conn = transport.get_extra_info("socket")
                accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Accept, sock=sock)
        async with server:
            port = sock.getsockname()[1]
            _, writer = await asyncio.open_connection(host, port)
            try:
                return await asyncio.wait_for(accepted, 30)  # hang bound
            finally:
                writer.close()

    assert asyncio.run(check()) != 0
