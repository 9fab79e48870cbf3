"""Shared test helpers."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# ── a real uvicorn on 127.0.0.1, for the transport tests ────────────────────────────────────────
# httpx's ASGITransport buffers whole responses, so streaming is only observable over a socket.

STARTUP_SECONDS = 10.0
"""How long a test server may take to start or stop (well under a second in practice)."""


@contextmanager
def live_server(app: Any, **config: Any) -> Iterator[str]:
    """Serve the ASGI `app` with uvicorn on a free loopback port in a background thread; yield
    its base URL ("http://127.0.0.1:PORT"); stop it on exit. `config` goes to uvicorn.Config."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    options: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": port,
        "log_level": "warning",
        "log_config": None,  # leave the test run's logging (and caplog) alone
        "ws": "none",
        "timeout_graceful_shutdown": 1,
    }
    server = uvicorn.Server(uvicorn.Config(app, **(options | config)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not server.started:
            assert thread.is_alive(), "the test server failed to start"
            assert time.monotonic() < deadline, "the test server did not start in time"
            time.sleep(0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(STARTUP_SECONDS)
        sock.close()
        assert not thread.is_alive(), "the test server did not stop"


class _Apps:
    """The ASGI app of the shared test server: each registered app gets a path prefix ("/app7"),
    which is removed from the scope's path before the app sees the request, so it runs exactly
    as if it were served at the root of its own server."""

    def __init__(self) -> None:
        self.apps: dict[str, Any] = {}
        self.count = 0

    def add(self, app: Any) -> str:
        self.count += 1
        prefix = f"/app{self.count}"
        self.apps[prefix] = app
        return prefix

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        head, _, rest = scope["path"][1:].partition("/")
        app = self.apps.get("/" + head)
        if app is None:
            await send({"type": "http.response.start", "status": 599, "headers": []})
            await send({"type": "http.response.body", "body": b"no test app at this prefix"})
            return
        path = "/" + rest
        await app({**scope, "path": path, "raw_path": path.encode()}, receive, send)


@pytest.fixture(scope="session")
def _shared_server() -> Iterator[tuple[str, _Apps]]:
    apps = _Apps()
    with live_server(apps) as base:
        yield base, apps


@pytest.fixture
def serve(_shared_server: tuple[str, _Apps]) -> Iterator[Callable[[Any], str]]:
    """`serve(app)` serves the ASGI `app` over real HTTP (one uvicorn on 127.0.0.1 shared by the
    session) until the end of the test, and returns the URL of its root (no trailing slash)."""
    base, apps = _shared_server
    prefixes: list[str] = []

    def add(app: Any) -> str:
        prefixes.append(apps.add(app))
        return base + prefixes[-1]

    yield add
    for prefix in prefixes:
        del apps.apps[prefix]


def run_input(run_id: str = "run-1", thread_id: str = "thread-1", text: str = "hi") -> Any:
    """A RunAgentInput with one user message."""
    import agui

    return agui.RunAgentInput(
        thread_id=thread_id,
        run_id=run_id,
        messages=(agui.UserMessage(id=f"user-{run_id}", content=text),),
    )
