"""`AgentApp.include_in(api, "/agent")`: every route of an AgentApp in a FastAPI or Starlette
application (or a router) under one path, and the app's lifespan inside the application's.

Over real HTTP (uvicorn on loopback, the application's lifespan run), on every backend: the run
is answered at the path itself (no redirect), and the durable routes (resume with Last-Event-ID,
stop, connect), the capabilities and the console answer through the mount as they do at an
AgentApp of its own. The lifespan starts and closes the store once, inside a lifespan of the
application's own; a response the server cancels (its graceful window over, nobody told it of
the shutdown) still ends in RUN_ERROR SERVER_SHUTDOWN, sent and stored.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Router

import agui
from agui.store import open_log
from tests.conftest import live_server

from .agents import paced
from .support import JSON, Tail, body, post, stream, types, wait_for


async def hung(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta="working")
    await asyncio.sleep(3600)


def fastapi(agent: agui.AgentApp) -> FastAPI:
    api = FastAPI()
    agent.include_in(api, "/agent")
    return api


# ── the routes ───────────────────────────────────────────────────────────────────────────────


def in_fastapi(agent: agui.AgentApp) -> tuple[Any, str]:
    return fastapi(agent), "/agent"


def in_starlette(agent: agui.AgentApp) -> tuple[Any, str]:
    app = Starlette()
    agent.include_in(app, "/agent")
    return app, "/agent"


def in_an_apirouter(agent: agui.AgentApp) -> tuple[Any, str]:
    router = APIRouter()
    agent.include_in(router, "/agent")
    api = FastAPI()
    api.include_router(router, prefix="/v1")
    return api, "/v1/agent"


def in_a_router(agent: agui.AgentApp) -> tuple[Any, str]:
    router = Router()
    agent.include_in(router, "/agent")
    return router, "/agent"


@pytest.mark.parametrize("mount", [in_fastapi, in_starlette, in_an_apirouter, in_a_router])
def test_the_run_is_answered_at_the_path_itself(
    mount: Callable[[agui.AgentApp], tuple[Any, str]], live: Callable[[Any], str]
) -> None:
    """POST /agent is the run's stream, not a redirect to /agent/ (which a client that does not
    follow redirects for a POST would fail on), in each kind of application or router."""
    app, path = mount(agui.AgentApp(paced, store="memory://"))
    url = live(app) + path
    with httpx.Client(timeout=10, follow_redirects=False) as client:
        answer = client.post(url, content=body("r1", count=2), headers=JSON)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/event-stream"
    assert '"type":"RUN_FINISHED"' in answer.text
    capabilities = httpx.get(url + "/capabilities").json()
    assert capabilities["transport"]["resumable"] is True


def test_the_durable_routes_answer_through_the_mount(
    store_url: str, live: Callable[[Any], str]
) -> None:
    """Resume after Last-Event-ID, connect to the thread, stop a run going, the capabilities:
    each through the FastAPI routes, exactly as the AgentApp answers them on its own."""
    url = live(fastapi(agui.AgentApp(paced, store=store_url))) + "/agent"
    capabilities = httpx.get(url + "/capabilities")
    assert capabilities.status_code == 200
    assert capabilities.json()["transport"] == {
        "streaming": True,
        "httpBinary": True,
        "resumable": True,
    }

    started = post(url, body("r1", count=5))
    assert types(started.frames)[0] == "RUN_STARTED" and started.frames[-1].type == "RUN_FINISHED"
    assert all(frame.id for frame in started.frames)
    resumed = stream(url + "/runs/r1/events", headers={"Last-Event-ID": started.frames[2].id or ""})
    assert resumed.frames == started.frames[3:]

    connected = stream(url + "/threads/t1/events")
    assert types(connected.frames) == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert connected.frames[0].event["runId"] == "t1:history"
    messages = connected.frames[1].event["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]

    going = Tail("POST", url, body("r2", count=200, delay=0.05))
    wait_for(lambda: "TEXT_MESSAGE_CONTENT" in types(going.frames))
    stop = httpx.post(url + "/runs/r2/stop")
    assert stop.status_code == 202, stop.text
    assert stop.json() == {"runId": "r2", "threadId": "t1", "status": "stopping"}
    ended = going.wait()
    assert ended[-1].type == "RUN_FINISHED"
    assert ended[-1].event["outcome"] == {"type": "cancelled"}

    unknown = httpx.post(url + "/runs/nobody/stop")
    assert unknown.status_code == 404 and "nobody" in unknown.json()["error"]


def test_ids_with_a_slash_reach_the_app(live: Callable[[Any], str]) -> None:
    """A run id holding a slash, percent-encoded in the URL, is the app's to decode."""
    url = live(fastapi(agui.AgentApp(paced, store="memory://"))) + "/agent"
    started = post(url, body("a/b", thread_id="t/1", count=2))
    assert started.frames[-1].type == "RUN_FINISHED"
    assert stream(url + "/runs/a%2Fb/events").frames == started.frames
    assert types(stream(url + "/threads/t%2F1/events").frames)[0] == "RUN_STARTED"


def test_the_app_answers_every_method_itself(live: Callable[[Any], str]) -> None:
    """A wrong method gets the AgentApp's own 405 (JSON, with Allow), not the router's."""
    url = live(fastapi(agui.AgentApp(paced, store="memory://"))) + "/agent"
    run = httpx.get(url)
    assert run.status_code == 405 and run.headers["allow"] == "POST"
    assert "POST" in run.json()["error"]
    capabilities = httpx.post(url + "/capabilities")
    assert capabilities.status_code == 405 and capabilities.headers["allow"] == "GET"
    resume = httpx.post(url + "/runs/r1/events")
    assert resume.status_code == 405 and resume.headers["allow"] == "GET"


def test_the_console_is_served_through_the_mount(live: Callable[[Any], str]) -> None:
    """console=True: {path}/console and its files; without it, no such route."""
    base = live(fastapi(agui.AgentApp(paced, console=True)))
    page = httpx.get(base + "/agent/console")
    assert page.status_code == 200 and "content-security-policy" in page.headers
    assert '<script type="module" src="console/main.js"></script>' in page.text
    assert httpx.get(base + "/agent/console/main.js").status_code == 200
    plain = live(fastapi(agui.AgentApp(paced)))
    assert httpx.get(plain + "/agent/console").status_code == 404
    # without a store, no durable routes either: the router's own 404
    assert httpx.get(plain + "/agent/runs/r1/events").status_code == 404


def test_include_in_takes_the_apps_own_path_or_none() -> None:
    with pytest.raises(ValueError, match="give the path"):
        agui.AgentApp(paced).include_in(FastAPI())
    with pytest.raises(ValueError, match="serves /run only"):
        agui.AgentApp(paced, path="/run").include_in(FastAPI(), "/agent")
    with pytest.raises(ValueError, match="must start with '/'"):
        agui.AgentApp(paced).include_in(FastAPI(), "agent")
    own = FastAPI()
    agui.AgentApp(paced, path="/run").include_in(own)  # its own path
    assert "/run" in [getattr(route, "path", None) for route in own.routes]


# ── the lifespan ─────────────────────────────────────────────────────────────────────────────


class Closes:
    """Counts the closes of an AgentApp's log (the app opened it from a URL)."""

    def __init__(self, agent: agui.AgentApp, said: list[str]) -> None:
        log = agent.store
        assert log is not None
        self.count = 0
        close = log.aclose

        async def aclose() -> None:
            self.count += 1
            said.append("store closed")
            await close()

        log.aclose = aclose  # type: ignore[method-assign]


def test_the_lifespan_closes_the_store_inside_the_applications_own(
    store_url: str, live: Callable[[Any], str]
) -> None:
    """include_in puts the agent's lifespan inside the application's: the application's
    startup runs first, its shutdown code after the agent's runs ended and its store closed;
    the state its lifespan yields still reaches the requests."""
    said: list[str] = []

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[dict[str, Any]]:
        said.append("app started")
        yield {"greeting": "hello"}
        said.append("app ends")

    api = FastAPI(lifespan=lifespan)

    @api.get("/greeting")
    async def greeting(request: Request) -> JSONResponse:
        return JSONResponse({"greeting": request.state.greeting})

    agent = agui.AgentApp(paced, store=store_url)
    agent.include_in(api, "/agent")
    closes = Closes(agent, said)
    with live_server(api) as base:
        assert httpx.get(base + "/greeting").json() == {"greeting": "hello"}
        assert post(base + "/agent", body("r1", count=2)).frames[-1].type == "RUN_FINISHED"
    assert said == ["app started", "store closed", "app ends"]
    assert closes.count == 1


def test_a_lifespan_given_twice_runs_once(live: Callable[[Any], str]) -> None:
    """FastAPI(lifespan=agent.lifespan) and include_in too: the store is closed once."""
    agent = agui.AgentApp(paced, store="memory://")
    api = FastAPI(lifespan=agent.lifespan)
    agent.include_in(api, "/agent")
    closes = Closes(agent, [])
    with live_server(api) as base:
        assert post(base + "/agent", body("r1", count=2)).frames[-1].type == "RUN_FINISHED"
    assert closes.count == 1


def test_the_lifespan_ends_the_runs_executing_here(tmp_path: Any) -> None:
    """At the application's shutdown a run still executing ends in RUN_ERROR SERVER_SHUTDOWN,
    stored (the log is the test's, so the app leaves it open)."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    log = open_log(url)
    agent = agui.AgentApp(hung, store=log)
    with live_server(fastapi(agent), timeout_graceful_shutdown=0.2) as base:
        started = post(base + "/agent", body("r1"), stop_after=3)
        assert types(started.frames)[-1] == "TEXT_MESSAGE_CONTENT"
        # the client left; the run goes on until the shutdown

    assert stored_end(url) == ("RUN_ERROR", "SERVER_SHUTDOWN")


def stored_end(url: str, run_id: str = "r1") -> tuple[str, str | None]:
    """The type and code of the last event the log at `url` holds for the run, read with a log
    of the test's own once the server's has stored it (within 5 s)."""

    async def last() -> dict[str, Any]:
        log = open_log(url)
        try:
            deadline = time.monotonic() + 5
            while True:
                events = [json.loads(e.data) async for e in log.read(run_id)]
                end: dict[str, Any] = events[-1]
                if end["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                    return end
                assert time.monotonic() < deadline, events[-3:]
                await asyncio.sleep(0.05)
        finally:
            await log.aclose()

    event = asyncio.run(last())
    return event["type"], event.get("code")


# ── a response the server cancels ────────────────────────────────────────────────────────────


@pytest.fixture
def cancelling_server() -> Iterator[Callable[[Any, str], tuple[str, Any]]]:
    """uvicorn in a thread, which nobody tells of its shutdown (off the main thread there is no
    signal handler to chain onto), with a graceful window of half a second: it cancels the
    requests still going when the window ends. `start(app, lifespan)`: "on" or "off"."""
    import uvicorn

    running: list[tuple[Any, threading.Thread, socket.socket]] = []

    def start(app: Any, lifespan: str) -> tuple[str, Any]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        options: dict[str, Any] = {"lifespan": lifespan, "timeout_graceful_shutdown": 0.5}
        config = uvicorn.Config(app, log_level="critical", log_config=None, **options)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        wait_for(lambda: server.started)
        running.append((server, thread, sock))
        return f"http://127.0.0.1:{sock.getsockname()[1]}", server

    yield start
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.mark.parametrize(
    ("mounted", "lifespan"),
    [(True, "on"), (False, "on"), (True, "off")],
    ids=["include_in", "own path", "include_in, no lifespan"],
)
def test_a_cancelled_response_still_ends_in_server_shutdown(
    cancelling_server: Callable[[Any, str], tuple[str, Any]],
    tmp_path: Any,
    mounted: bool,
    lifespan: str,
) -> None:
    """The window ends and uvicorn cancels the requests: the run's POST and a client resuming
    it each get RUN_ERROR SERVER_SHUTDOWN (written directly, no cursor). With the lifespan, the
    log stores the same end (the shutdown waits for it); without, the server's loop ends first
    and the lease is left to close the run."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    log = open_log(url)
    if mounted:
        app: Any = fastapi(agui.AgentApp(hung, store=log))
    else:
        app = agui.AgentApp(hung, path="/agent", store=log)
    base, server = cancelling_server(app, lifespan)
    first = Tail("POST", base + "/agent", body("r1"))
    wait_for(lambda: "TEXT_MESSAGE_CONTENT" in types(first.frames))
    second = Tail("GET", base + "/agent/runs/r1/events")
    wait_for(lambda: "TEXT_MESSAGE_CONTENT" in types(second.frames))
    server.should_exit = True
    # The agent hangs for an hour: only the cancellation at the window's end (0.5 s) can end the
    # responses (Tail.wait's bound is a hang bound).
    for tail in (first, second):
        frames = tail.wait(60)
        assert types(frames) == [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "RUN_ERROR",
        ], types(frames)
        assert frames[-1].event["code"] == "SERVER_SHUTDOWN"
        assert frames[-1].id is None
    if lifespan == "on":
        assert stored_end(url) == ("RUN_ERROR", "SERVER_SHUTDOWN")
