"""What the server meets after its own shutdown closed the event log is no outage: nothing is
logged, on every backend.

The lifespan's shutdown closes the log (Durable.close); a sweep for lost runs or a request that
the shutdown overtook can still reach it. CI once saw `agui serve --workers 4 --store redis://...`
log "ERROR: the event log failed: Redis store: the Redis store was closed" on Ctrl-C, which an
operator would read as a broken Redis. Here the ASGI app is driven directly, so the order is
certain: startup, shutdown, then a request that reads the log (SQLite refuses it once closed; the
memory and Redis logs still answer one): it gets 503 and no line is logged. On every backend the
log says it is closed, and a failure met then (what the Redis sweep met) is not logged.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

import agui
from agui.store import StoreError


async def agent(run: agui.RunAgentInput) -> Any:
    yield agui.TextMessageChunkEvent(message_id="m", delta="hi")


async def lifespan(app: Any, *phases: str) -> list[str]:
    incoming = iter([{"type": f"lifespan.{phase}"} for phase in phases])
    said: list[str] = []

    async def receive() -> dict[str, Any]:
        message = next(incoming, None)
        if message is None:
            await asyncio.Event().wait()  # no more phases: the lifespan task is cancelled
        assert message is not None
        return message

    async def send(message: dict[str, Any]) -> None:
        said.append(message["type"])
        if message["type"] == "lifespan.shutdown.complete":
            raise asyncio.CancelledError

    try:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    except asyncio.CancelledError:
        pass
    return said


async def get(app: Any, path: str) -> int:
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"accept", b"text/event-stream")],
        "client": ("127.0.0.1", 1234),
        "server": ("127.0.0.1", 80),
    }
    await asyncio.wait_for(app(scope, receive, send), timeout=60)  # a hang bound
    return status[0]


def test_a_request_after_the_shutdown_closed_the_log_logs_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = agui.AgentApp(agent, path="/agent", store=f"sqlite:///{tmp_path / 'runs.db'}")

    async def scenario() -> int:
        said = await lifespan(app, "startup", "shutdown")
        assert said == ["lifespan.startup.complete", "lifespan.shutdown.complete"], said
        return await get(app, "/agent/threads/t1/events")

    with caplog.at_level(logging.DEBUG, logger="agui"):
        status = asyncio.run(scenario())
    assert status == 503
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not loud, [f"{r.levelname}: {r.getMessage()}" for r in loud]
    assert any("the event log is closed" in r.getMessage() for r in caplog.records)


def test_a_failure_of_the_log_its_server_closed_is_no_outage(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = agui.AgentApp(agent, path="/agent", store=store_url)
    asyncio.run(lifespan(app, "startup", "shutdown"))
    durable = app._durable
    assert durable is not None and durable.log.closed
    with caplog.at_level(logging.DEBUG, logger="agui"):
        # what the sweep does with what it meets (Durable._sweep_forever)
        durable._store_failed(StoreError("Redis store: the Redis store was closed"))
    assert durable.healthy
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
