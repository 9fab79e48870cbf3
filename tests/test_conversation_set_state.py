"""The state a conversation sends: `set_state` (the TypeScript client's setState) and a run's
explicit input.

Before, a conversation had no way to change its state but through a run's events: an input
built with another state (`attrs.evolve(conversation.next_input("hi"), state=...)`) was sent as
it was, but `conversation.state` kept the old value and the next turn sent that back, so the
thread's state on the server silently reverted. The server here is a real AgentApp under uvicorn,
whose agent notes the state each run received and changes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pytest

import agui

received: list[Any] = []


async def notes_state(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    received.append(run.state)
    yield agui.TextMessageChunkEvent(message_id=f"{run.run_id}:m", delta="ok")


@pytest.fixture
def agent(serve: Callable[[Any], str]) -> agui.HttpAgent:
    received.clear()
    return agui.HttpAgent(serve(agui.AgentApp(notes_state)))


def test_set_state_is_what_the_next_runs_send(agent: agui.HttpAgent) -> None:
    conversation = agui.Conversation(state={"step": 0})
    conversation.set_state({"step": 1, "cart": ["tea"]})
    assert conversation.state == {"step": 1, "cart": ["tea"]}
    conversation.run_sync(agent, "hi")
    conversation.run_sync(agent, "again")
    assert received == [{"step": 1, "cart": ["tea"]}] * 2
    assert conversation.state == {"step": 1, "cart": ["tea"]}


def test_set_state_copies_the_value() -> None:
    state = {"cart": ["tea"]}
    conversation = agui.Conversation()
    conversation.set_state(state)
    state["cart"].append("cake")
    assert conversation.state == {"cart": ["tea"]}
    assert conversation.next_input("hi").state == {"cart": ["tea"]}


def test_an_explicit_inputs_state_becomes_the_conversations(agent: agui.HttpAgent) -> None:
    conversation = agui.Conversation(state={"step": 0})
    changed = attrs.evolve(conversation.next_input("hi"), state={"step": 5})
    conversation.run_sync(agent, input=changed)
    assert conversation.state == {"step": 5}
    conversation.run_sync(agent, "again")  # sends the state the first run sent, not the older
    assert received == [{"step": 5}, {"step": 5}]


def test_an_explicit_input_without_a_state_keeps_the_conversations(
    agent: agui.HttpAgent,
) -> None:
    """An input that carries no state (absent on the wire) changes nothing: the conversation's
    state stays {} (or what it was), as the official client's does (the conformance cases)."""
    conversation = agui.Conversation()
    bare = attrs.evolve(conversation.next_input("hi"), state=None)
    conversation.run_sync(agent, input=bare)
    assert conversation.state == {}
    conversation.set_state({"step": 2})
    conversation.run_sync(agent, input=attrs.evolve(conversation.next_input("hi"), state=None))
    assert conversation.state == {"step": 2}
    assert received == [None, None]


def test_a_run_that_fails_before_it_starts_keeps_the_state_before_it() -> None:
    """As its message, the input's state joins the conversation when the run starts."""
    conversation = agui.Conversation(state={"step": 0})
    changed = attrs.evolve(conversation.next_input("hi"), state={"step": 5})
    with pytest.raises(agui.TransportError):
        conversation.run_sync(agui.HttpAgent("http://127.0.0.1:9", max_retries=0), input=changed)
    assert conversation.state == {"step": 0}


def test_set_state_is_refused_while_a_stream_is_applied(agent: agui.HttpAgent) -> None:
    def on_event(event: Any) -> None:
        conversation.set_state({"mid": "run"})

    conversation = agui.Conversation(on_event=on_event)
    with pytest.raises(agui.ConversationBusyError, match="set_state"):
        conversation.run_sync(agent, "hi")
    assert conversation.state == {}
