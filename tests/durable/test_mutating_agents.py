"""Agents that change their input in place (ag-ui-langgraph rewrites `state["messages"]` with
LangChain objects) complete two turns per thread with a store, on every backend, and what the log
keeps and sends (RUN_STARTED.input) is what the client sent.

The agents put objects that are not JSON into the input's values: before the lifecycle handed
agents a copy, encoding RUN_STARTED.input after the agent ran failed (RUN_ERROR INVALID_EVENT,
`/input/state/messages/0: object is not JSON`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import agui

from .support import post, stream


class Opaque:
    """Not JSON, like a LangChain message object."""


def _mutate(run: agui.RunAgentInput) -> None:
    """Every JSON value of the input an agent can reach, changed in place."""
    as_json = agui.to_json(run)  # what adapters hand their SDK: it shares the input's values
    as_json["state"]["also"] = Opaque()
    as_json["forwardedProps"]["also"] = Opaque()
    assert isinstance(run.state, dict)
    run.state["messages"] = [Opaque()]
    run.state.pop("keep", None)
    assert isinstance(run.forwarded_props, dict)
    run.forwarded_props["injected"] = Opaque()
    run.tools[0].parameters["properties"]["q"] = Opaque()  # type: ignore[index]


async def mutating(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    _mutate(run)
    yield agui.StateSnapshotEvent(snapshot={"turn": len(run.messages)})
    yield agui.TextMessageChunkEvent(message_id=f"reply-{run.run_id}", delta="ok")


async def mutating_late(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Changes the input only after its first event (once RUN_STARTED is on its way)."""
    yield agui.TextMessageChunkEvent(message_id=f"reply-{run.run_id}", delta="ok")
    _mutate(run)
    yield agui.StateSnapshotEvent(snapshot={"turn": len(run.messages)})


def _input(run_id: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "threadId": "t-mutating",
        "runId": run_id,
        "messages": [*history, {"id": f"user-{run_id}", "role": "user", "content": "hi"}],
        "state": {"keep": [1, 2, 3], "nested": {"a": {"b": "c"}}},
        "tools": [
            {
                "name": "search",
                "description": "searches",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ],
        "context": [{"description": "where", "value": "here"}],
        "forwardedProps": {"user": "u1"},
    }


@pytest.mark.parametrize("agent", [mutating, mutating_late], ids=["before", "after-first-event"])
def test_two_turns_with_a_store_keep_what_the_client_sent(
    store_url: str, live: Callable[[Any], str], agent: Any
) -> None:
    base = live(agui.AgentApp(agent, path="/agent", store=store_url))
    history: list[dict[str, Any]] = []
    for turn in ("run-1", "run-2"):
        sent = _input(turn, history)
        answer = post(f"{base}/agent", json.dumps(sent).encode())
        assert answer.status == 200, answer
        events = [frame.event for frame in answer.frames]
        assert events[0]["type"] == "RUN_STARTED"
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        # What the log keeps for the run, read back: its RUN_STARTED holds the input as sent.
        replay = stream(f"{base}/agent/runs/{turn}/events").frames
        started = next(f.event for f in replay if f.type == "RUN_STARTED")
        assert started["input"] == sent
        assert replay[-1].type == "RUN_FINISHED"
        history = [*sent["messages"], {"id": f"reply-{turn}", "role": "assistant", "content": "ok"}]


def test_a_local_run_leaves_the_conversation_as_it_was() -> None:
    """Conversation.run hands a local agent the same kind of copy: its history and state stay
    the conversation's."""
    import asyncio

    async def main() -> agui.Conversation:
        conversation = agui.Conversation(state={"keep": [1, 2, 3], "nested": {"a": {}}})
        tools = [
            agui.Tool(
                name="search",
                description="searches",
                parameters={"type": "object", "properties": {"q": {"type": "string"}}},
            )
        ]
        for _ in range(2):
            result = await conversation.run(
                mutating, "hi", tools=tools, forwarded_props={"user": "u1"}
            )
            assert result is not None and result.outcome == "success", result
        assert tools[0].parameters == {"type": "object", "properties": {"q": {"type": "string"}}}
        return conversation

    conversation = asyncio.run(main())
    assert conversation.state == {"turn": 3}
    assert [m.role for m in conversation.messages] == ["user", "assistant", "user", "assistant"]
