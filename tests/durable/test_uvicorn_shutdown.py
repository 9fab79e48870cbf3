"""SIGTERM under plain uvicorn (`uvicorn app:api --timeout-graceful-shutdown 3`, a real
subprocess on a free loopback port) while a hung agent streams: every client following the run
(its POST, and with a store a client resuming it) gets RUN_ERROR SERVER_SHUTDOWN.

* An AgentApp included in FastAPI with `include_in` (the serving page's recipe), on every backend
  and without a store, and an AgentApp served on its own: the app's lifespan chained onto
  uvicorn's signal handlers, so the run ends when the grace runs out (the window less a second),
  before uvicorn's window ends; nothing is cancelled or logged as an error, and the log stores
  the run's end.
* A route added by hand (`api.add_route`, no lifespan): nobody tells the app, so uvicorn cancels
  the request when its window ends, and the client still gets its RUN_ERROR then.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agui.store import open_log
from tests.usage.support import Server

from .support import Tail, body, types, wait_for

WINDOW = 3.0
"""uvicorn's --timeout-graceful-shutdown in these tests."""
GRACE = WINDOW - 1.0
"""How long runs may go on once the app is told (the window less a margin of a second)."""
HANG = 60.0
"""A hang bound: how long a test waits for a response or the process to end (about WINDOW)."""

AGENT = """
import asyncio

from fastapi import FastAPI

import agui


async def hung(run: agui.RunAgentInput):
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta="working")
    await asyncio.sleep(3600)


STORE = {store!r}
"""

FORMS = {
    "include_in": """
agent = agui.AgentApp(hung, store=STORE)
api = FastAPI()
agent.include_in(api, "/agent")
""",
    "own path": """
api = agui.AgentApp(hung, path="/agent", store=STORE)
""",
    "add_route": """
api = FastAPI()
api.add_route("/agent", agui.AgentApp(hung, store=STORE), methods=["POST"])
""",
}


def store_for(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    if backend == "none":
        return None
    if backend == "memory":
        return "memory://"
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url: str = request.getfixturevalue("redis_url")
    return url


def stored_end(url: str) -> tuple[str, str | None]:
    """The type and code of the last event the log holds for run r1."""

    async def last() -> dict[str, Any]:
        log = open_log(url)
        try:
            end: dict[str, Any] = [json.loads(e.data) async for e in log.read("r1")][-1]
            return end
        finally:
            await log.aclose()

    event = asyncio.run(last())
    return event["type"], event.get("code")


@pytest.mark.parametrize(
    ("form", "backend"),
    [
        ("include_in", "none"),
        ("include_in", "memory"),
        ("include_in", "sqlite"),
        ("include_in", "redis"),
        ("own path", "sqlite"),
        ("add_route", "sqlite"),
    ],
)
def test_sigterm_mid_run_ends_every_client_in_server_shutdown(
    form: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = store_for(backend, request, tmp_path)
    (tmp_path / "app.py").write_text(AGENT.format(store=store) + FORMS[form])
    words = ["uvicorn", "app:api", "--port", "{port}", "--timeout-graceful-shutdown", f"{WINDOW:g}"]
    server = Server(words, tmp_path, ["Uvicorn running on http://127.0.0.1:{port} "])
    try:
        server.wait_ready()
        url = server.base + "/agent"
        tails = [Tail("POST", url, body("r1"))]
        if store is not None and form != "add_route":  # a route by hand: the run's alone
            wait_for(lambda: "TEXT_MESSAGE_CONTENT" in types(tails[0].frames))
            tails.append(Tail("GET", url + "/runs/r1/events"))
        for tail in tails:
            wait_for(lambda tail=tail: "TEXT_MESSAGE_CONTENT" in types(tail.frames))
        signalled = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        ends = []
        for tail in tails:
            frames = tail.wait(HANG)
            assert types(frames) == [
                "RUN_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "RUN_ERROR",
            ], (types(frames), "".join(server.stderr))
            assert frames[-1].event["code"] == "SERVER_SHUTDOWN"
            ends.append(tail.times[-1] - signalled)
        code = server.proc.wait(HANG)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        server.reader.join(10)
    stderr = "".join(server.stderr)
    assert code in (0, -signal.SIGTERM), (code, stderr)
    assert "Traceback" not in stderr, stderr
    # Lower bounds only (slowness cannot break them); which of the two ended the run is shown by
    # what uvicorn logged: it logs each request it cancels at the end of its window.
    if form == "add_route":
        # uvicorn cancelled the request at the end of its window; the RUN_ERROR came then
        assert all(WINDOW <= end for end in ends), ends
        assert "Cancel 1 running task(s)" in stderr, stderr
    else:
        # told when the shutdown began: ended at the grace, so uvicorn had nothing to cancel
        assert all(GRACE - 0.2 <= end for end in ends), ends
        errors = [line for line in stderr.splitlines() if re.search(r"^ERROR|\bERROR\b ", line)]
        assert not errors, stderr  # nothing cancelled (uvicorn's "ERROR: Cancel 1 running task")
        if store is not None and backend != "memory":
            assert stored_end(store) == ("RUN_ERROR", "SERVER_SHUTDOWN")
