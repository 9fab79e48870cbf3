"""A STATE_DELTA must apply to the state the client holds by then: the run's input state, then
the snapshots and deltas already sent. One that does not (the TypeScript client logs
OPERATION_PATH_UNRESOLVABLE and keeps the old state) ends the run in RUN_ERROR INVALID_EVENT,
as any event a client cannot take; the input's state is never changed by the check."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

import agui
from agui.stream.lifecycle import run_lifecycle


def _input(state: Any) -> agui.RunAgentInput:
    return agui.RunAgentInput(thread_id="t", run_id="r", messages=(), state=state)


def _op(op: str, path: str, value: Any = None) -> Any:
    wire = {"op": op, "path": path} if op == "remove" else {"op": op, "path": path, "value": value}
    return agui.decode(json.dumps(wire).encode(), agui.JsonPatchOperation)


def _run(events: list[Any], state: Any) -> list[Any]:
    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        for event in events:
            yield event

    async def collect() -> list[Any]:
        return [e async for e in run_lifecycle(agent, _input(state))]

    return asyncio.run(collect())


def delta(*ops: Any) -> agui.StateDeltaEvent:
    return agui.StateDeltaEvent(delta=tuple(ops))


@pytest.mark.parametrize(
    ("state", "events"),
    [
        ({"count": 1}, [delta(_op("replace", "/count", 2))]),
        ({"count": 1}, [delta(_op("add", "/items", [])), delta(_op("add", "/items/-", "a"))]),
        (None, [agui.StateSnapshotEvent(snapshot={"a": {}}), delta(_op("add", "/a/b", 1))]),
        ({"a": 1}, [delta(_op("remove", "/a")), delta(_op("add", "/a", 2))]),
    ],
    ids=["input-state", "delta-on-delta", "snapshot-then-delta", "remove-then-add"],
)
def test_a_delta_that_applies_is_sent(state: Any, events: list[Any]) -> None:
    sent = _run(events, state)
    assert type(sent[-1]) is agui.RunFinishedEvent, sent[-1]
    assert [type(e) for e in sent[1:-1]] == [type(e) for e in events]


@pytest.mark.parametrize(
    ("state", "events"),
    [
        ({"count": 1}, [delta(_op("replace", "/missing", 2))]),
        ({"count": 1}, [delta(_op("remove", "/count")), delta(_op("remove", "/count"))]),
        ({"a": {}}, [agui.StateSnapshotEvent(snapshot={}), delta(_op("add", "/a/b", 1))]),
        (None, [delta(_op("add", "/x/y", 1))]),
    ],
    ids=["missing-path", "removed-by-an-earlier-delta", "gone-after-a-snapshot", "no-state"],
)
def test_a_delta_that_cannot_apply_ends_the_run(state: Any, events: list[Any]) -> None:
    sent = _run(events, state)
    error = sent[-1]
    assert type(error) is agui.RunErrorEvent, sent
    assert error.code == "INVALID_EVENT"
    assert "STATE_DELTA does not apply" in error.message
    # Nothing after the refused delta, and the delta itself is not sent.
    assert sum(type(e) is agui.StateDeltaEvent for e in sent) == len(events) - 1 - sum(
        type(e) is agui.StateSnapshotEvent for e in events
    )


def test_the_check_never_changes_the_input_state() -> None:
    state = {"items": [1]}
    snapshot = {"items": [1]}
    sent = _run(
        [
            delta(_op("add", "/items/-", 2)),
            agui.StateSnapshotEvent(snapshot=snapshot),
            delta(_op("add", "/items/-", 3)),
        ],
        state,
    )
    assert type(sent[-1]) is agui.RunFinishedEvent
    assert state == {"items": [1]} and snapshot == {"items": [1]}


def test_a_served_run_refuses_it_too() -> None:
    """Through AgentApp (in-process ASGI), what a client receives."""
    import httpx

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield delta(_op("replace", "/nope", 1))

    async def main() -> list[Any]:
        app = agui.AgentApp(agent, path="/agent")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            body = agui.encode(_input({"count": 1}))
            response = await client.post(
                "/agent", content=body, headers={"content-type": "application/json"}
            )
        return [agui.decode(m.data) for m in agui.SSEDecoder().feed(response.content)]

    events = asyncio.run(main())
    assert [e.type for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1].code == "INVALID_EVENT"
