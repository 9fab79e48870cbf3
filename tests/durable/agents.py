"""The agents the durable-runs tests serve, in process and under `agui serve` (this folder is the
`--app-dir`, so this module is `agents` there and `tests.durable.agents` here).

`paced` is told by the run's forwardedProps what to do: `count` content events (the deltas "0,",
"1,", ...) in one assistant message whose id is `<runId>:m`, a pause of `delay` seconds after
every `every` of them, and a STATE_SNAPSHOT first with `state`. `app` serves it with the store and
lease and SSE keep-alive from the environment (AGUI_TEST_STORE, AGUI_TEST_LEASE,
AGUI_TEST_KEEPALIVE), for the tests that need a short lease in an `agui serve` process.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import agui


async def paced(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    count = int(props.get("count", 10))
    delay = float(props.get("delay", 0.0))
    every = max(1, int(props.get("every", 1)))
    if props.get("state"):
        yield agui.StateSnapshotEvent(snapshot={"run": run.run_id, "count": count})
    message_id = f"{run.run_id}:m"
    yield agui.TextMessageStartEvent(message_id=message_id, role="assistant")
    for index in range(count):
        yield agui.TextMessageContentEvent(message_id=message_id, delta=f"{index},")
        if delay and (index + 1) % every == 0:
            await asyncio.sleep(delay)
    yield agui.TextMessageEndEvent(message_id=message_id)


async def gated(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Text, then a wait until the file forwardedProps `gate` names exists (the client has seen
    the text), then `silence` seconds without an event, then more text: for a proxy in front."""
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    message_id = f"{run.run_id}:m"
    yield agui.TextMessageStartEvent(message_id=message_id, role="assistant")
    yield agui.TextMessageContentEvent(message_id=message_id, delta="before")
    gate = props.get("gate")
    while gate and not os.path.exists(gate):
        await asyncio.sleep(0.05)
    await asyncio.sleep(float(props.get("silence", 0.0)))
    yield agui.TextMessageContentEvent(message_id=message_id, delta=" after")
    yield agui.TextMessageEndEvent(message_id=message_id)


def _app() -> agui.AgentApp | None:
    store = os.environ.get("AGUI_TEST_STORE")
    if not store:
        return None
    return agui.AgentApp(
        paced,
        path="/agent",
        store=store,
        lease_seconds=float(os.environ.get("AGUI_TEST_LEASE", "10")),
        keepalive=float(os.environ.get("AGUI_TEST_KEEPALIVE", "15")),
    )


app = _app()


async def asgi(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app (for `agui serve`'s refusal of --store with one)."""
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})
