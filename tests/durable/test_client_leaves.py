"""A Python client that leaves a run early stops it on the server, as @ag-ui/client's abortRun does.

HttpAgent asks a server with a store to keep its runs when their stream is cut (`Agui-Resume: 1`,
to resume them), so closing the connection no longer stopped a run it left on purpose: the run
went on and the next turn of the thread got 409 "has a run going". Now leaving a durable run's
stream early (breaking out of `conversation.stream`, `aclose()`, an exception in the loop body,
cancelling the task of `conversation.run`, an exception from on_event in `run_sync`) sends
`POST {url}/runs/{runId}/stop`: the run is stored cancelled and the next turn answers 200.
`HttpAgent(url, detach=True)` leaves the run going. Without a store the closed connection is the
stop, and no stop request is sent.

Real parts: AgentApp(store="memory://") under uvicorn on loopback, HttpAgent over httpx.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import agui
from agui.errors import HttpError

WAIT = 30.0  # seconds; a hang bound, never reached by a run that behaves
RUN = "/agent"


async def slow(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """A message started and one delta, then a long pause (the run a user leaves); with
    forwardedProps {"quick": true} the message ends at once."""
    message_id = f"{run.run_id}:m"
    yield agui.TextMessageStartEvent(message_id=message_id, role="assistant")
    yield agui.TextMessageContentEvent(message_id=message_id, delta="thinking")
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    if not props.get("quick"):
        try:
            await asyncio.sleep(WAIT)
        finally:
            ended.set()
    yield agui.TextMessageEndEvent(message_id=message_id)


ended = threading.Event()
"""Set when a paused run of `slow` ends (stopped, cancelled, or its pause over)."""


class Recorded:
    """The ASGI app in front of the AgentApp, noting each request's method and path."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[tuple[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.requests.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)


@pytest.fixture
def durable(live: Callable[[Any], str]) -> tuple[str, Recorded]:
    ended.clear()
    recorded = Recorded(agui.AgentApp(slow, path=RUN, store="memory://"))
    return live(recorded) + RUN, recorded


async def end_of(agent: agui.HttpAgent, run_id: str) -> Any:
    """The stored terminal event of a run (read back from its start)."""
    events = [event async for event in agent.rejoin(run_id)]
    return events[-1]


async def next_turn(agent: agui.HttpAgent, conversation: agui.Conversation) -> agui.RunResult:
    return await asyncio.wait_for(
        conversation.run(agent, "again", forwarded_props={"quick": True}), WAIT
    )


def is_delta(update: Any) -> bool:
    return update.event is not None and update.event.type == "TEXT_MESSAGE_CONTENT"


async def leave_by_break(agent: agui.HttpAgent, conversation: agui.Conversation) -> str:
    async with conversation.stream(agent, "hi") as updates:
        async for update in updates:
            if is_delta(update):
                break
    return updates.input.run_id


async def leave_by_aclose(agent: agui.HttpAgent, conversation: agui.Conversation) -> str:
    updates = conversation.stream(agent, "hi")
    async for update in updates:
        if is_delta(update):
            await updates.aclose()
            break
    return updates.input.run_id


async def leave_by_exception(agent: agui.HttpAgent, conversation: agui.Conversation) -> str:
    with pytest.raises(LookupError):
        async with conversation.stream(agent, "hi") as updates:
            async for update in updates:
                if is_delta(update):
                    raise LookupError("the loop body failed")
    return updates.input.run_id


async def leave_by_cancel(agent: agui.HttpAgent, conversation: agui.Conversation) -> str:
    seen = asyncio.Event()
    started: list[str] = []

    def on_event(event: Any) -> None:
        if event.type == "RUN_STARTED":
            started.append(event.run_id)
        if event.type == "TEXT_MESSAGE_CONTENT":
            seen.set()

    conversation.on_event = on_event
    task = asyncio.create_task(conversation.run(agent, "hi"))
    await asyncio.wait_for(seen.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    conversation.on_event = None
    return started[0]


LEAVES = {
    "break out of async with": leave_by_break,
    "aclose": leave_by_aclose,
    "exception in the loop body": leave_by_exception,
    "run task cancelled": leave_by_cancel,
}


@pytest.mark.parametrize("leave", list(LEAVES.values()), ids=list(LEAVES))
def test_leaving_a_durable_run_early_stops_it_and_frees_the_thread(
    durable: tuple[str, Recorded], leave: Any
) -> None:
    url, recorded = durable

    async def main() -> None:
        async with agui.HttpAgent(url) as agent:
            conversation = agui.Conversation()
            run_id = await leave(agent, conversation)
            assert conversation.runs[-1].outcome == "truncated"  # rolled back here
            assert ("POST", f"{RUN}/runs/{run_id}/stop") in recorded.requests
            result = await next_turn(agent, conversation)  # 200, not 409
            assert result.outcome == "success"
            end = await end_of(agent, run_id)
            assert end.type == "RUN_FINISHED" and end.outcome.type == "cancelled", end
            assert [m.content for m in conversation.messages if m.role == "user"] == ["again"]

    asyncio.run(main())
    assert ended.wait(WAIT)  # the agent's pause was cut short by the stop


def test_run_sync_left_by_an_on_event_exception_stops_the_run(
    durable: tuple[str, Recorded],
) -> None:
    url, recorded = durable

    def on_event(event: Any) -> None:
        if event.type == "TEXT_MESSAGE_CONTENT":
            raise LookupError("the application's handler failed")

    with agui.HttpAgent(url) as agent:
        conversation = agui.Conversation(on_event=on_event)
        with pytest.raises(LookupError):
            conversation.run_sync(agent, "hi")
        run_id = conversation.runs[-1].run_id
        assert run_id is not None
        conversation.on_event = None
        assert ("POST", f"{RUN}/runs/{run_id}/stop") in recorded.requests
        assert conversation.run_sync(agent, "again", forwarded_props={"quick": True}).completed
        end = asyncio.run(end_of(agent, run_id))
        assert end.outcome.type == "cancelled", end


def test_a_detached_agent_leaves_the_run_going(durable: tuple[str, Recorded]) -> None:
    url, recorded = durable

    async def main() -> None:
        async with agui.HttpAgent(url, detach=True) as agent:
            conversation = agui.Conversation()
            run_id = await leave_by_break(agent, conversation)
            assert not any(path.endswith("/stop") for _, path in recorded.requests)
            with pytest.raises(HttpError) as busy:
                await next_turn(agent, conversation)
            assert busy.value.status == 409, busy.value
            assert not ended.is_set()
            await agent.stop(run_id)  # 202: it was still going (409 once ended)
            end = await end_of(agent, run_id)
            assert end.outcome.type == "cancelled", end

    asyncio.run(main())


def test_a_run_that_ended_is_not_stopped(durable: tuple[str, Recorded]) -> None:
    """Leaving after the run's terminal event (before the stream's last update) sends nothing."""
    url, recorded = durable

    async def main() -> None:
        async with agui.HttpAgent(url) as agent:
            conversation = agui.Conversation()
            async with conversation.stream(agent, "hi", forwarded_props={"quick": True}) as updates:
                async for update in updates:
                    if update.event is not None and update.event.type == "RUN_FINISHED":
                        break
            assert not any(path.endswith("/stop") for _, path in recorded.requests)

    asyncio.run(main())


def test_without_a_store_closing_the_connection_is_the_stop(
    live: Callable[[Any], str],
) -> None:
    ended.clear()
    recorded = Recorded(agui.AgentApp(slow, path=RUN))
    url = live(recorded) + RUN

    async def main() -> None:
        async with agui.HttpAgent(url) as agent:
            conversation = agui.Conversation()
            await leave_by_break(agent, conversation)
            assert ended.wait(WAIT)  # the server cancelled the run when the connection closed
            assert (await next_turn(agent, conversation)).outcome == "success"
        assert [path for _, path in recorded.requests] == [RUN, RUN]  # no stop request

    asyncio.run(main())


def test_against_agui_serve_the_next_turn_answers_after_a_break(served: Any) -> None:
    """The issue's case as a user meets it: `agui serve --store memory://` and an agent that takes
    long (the paced agent: 1000 deltas 0.05 s apart)."""
    one = served("agents:paced", "--store", "memory://")

    async def main() -> None:
        async with agui.HttpAgent(one.url) as agent:
            conversation = agui.Conversation()
            async with conversation.stream(
                agent, "hi", forwarded_props={"count": 1000, "delay": 0.05}
            ) as updates:
                async for update in updates:
                    if is_delta(update):
                        break
            result = await asyncio.wait_for(
                conversation.run(agent, "again", forwarded_props={"count": 2}), WAIT
            )
            assert result.outcome == "success"
            end = await end_of(agent, updates.input.run_id)
            assert end.type == "RUN_FINISHED" and end.outcome.type == "cancelled", end

    asyncio.run(main())
