"""A local agent and the same agent behind a server are interchangeable: Conversation.run gives
the same messages, state and run results both ways, and a bad frame raises the same exception
type whichever way the stream is consumed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import agui

from .conftest import ROOT
from .test_docs import block_containing


def readme_echo() -> Any:
    """The README's echo agent, as written there (text only: no RUN_STARTED, no RUN_FINISHED)."""
    block = block_containing(ROOT / "README.md", "async def echo(")
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    return namespace["echo"]


echo = readme_echo()


async def stateful(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """An agent with its own RUN_STARTED, state, a tool call and a result, and no RUN_FINISHED."""
    yield agui.RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id)
    yield agui.StateSnapshotEvent(snapshot={"count": 1})
    yield agui.ToolCallStartEvent(tool_call_id="c1", tool_call_name="lookup")
    yield agui.ToolCallArgsEvent(tool_call_id="c1", delta='{"q": "x"}')
    yield agui.ToolCallEndEvent(tool_call_id="c1")
    yield agui.ToolCallResultEvent(message_id="t1", tool_call_id="c1", content="found")
    yield agui.TextMessageChunkEvent(message_id="m2", delta="done")


async def failing(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """An agent that raises after its first event."""
    yield agui.TextMessageStartEvent(message_id="m1")
    raise RuntimeError("secret detail")


def both_ways(agent: Any, serve: Callable[[Any], str]) -> tuple[Any, Any]:
    """The same agent run locally and behind AgentApp + HttpAgent, from the same input."""
    local = agui.Conversation("thread-1")
    run_input = local.next_input("hi")  # the message joins local's history as the run starts
    remote = agui.Conversation("thread-1", messages=run_input.messages)
    url = serve(agui.AgentApp(agent))
    asyncio.run(local.run(agent, input=run_input))
    asyncio.run(remote.run(agui.HttpAgent(url), input=run_input))
    return local, remote


@pytest.mark.parametrize("agent", [echo, stateful, failing], ids=lambda a: a.__name__)
def test_same_messages_locally_and_behind_a_server(agent: Any, serve: Callable[[Any], str]) -> None:
    """Conversation.run(agent) and Conversation.run(HttpAgent(url of AgentApp(agent))) end with
    equal messages, state and run results (outcome, error code)."""
    local, remote = both_ways(agent, serve)
    assert local.messages_json() == remote.messages_json()
    assert local.state == remote.state
    assert [(r.outcome, r.error_code) for r in local.runs] == [
        (r.outcome, r.error_code) for r in remote.runs
    ]
    assert local.outcome() == remote.outcome()


def test_the_echo_agent_completes_locally(serve: Callable[[Any], str]) -> None:
    """The echo agent (no lifecycle events of its own) completes through Conversation.run, with
    its one message; it used to fail with "First event must be 'RUN_STARTED'"."""
    local, _ = both_ways(echo, serve)
    assert local.outcome() == ("completed", None)
    assert [(type(m), m.content) for m in local.messages] == [
        (agui.UserMessage, "hi"),
        (agui.AssistantMessage, "hello"),
    ]
    assert local.messages[1].id == f"reply-{local.runs[0].run_id}"


BAD_FRAME = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":42}'


def raw_sse(*frames: bytes) -> Any:
    """An ASGI app answering every POST with these SSE frames, verbatim."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        body = b"".join(b"data: " + f + b"\n\n" for f in frames)
        await send({"type": "http.response.body", "body": body})

    return app


def test_a_bad_frame_is_the_same_error_every_way(serve: Callable[[Any], str]) -> None:
    """The same malformed frame raises agui.StreamError, naming frame 2 and the pointer, through
    HttpAgent.run, Conversation.run (HTTP) and Conversation.consume (a recording)."""
    started = b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}'
    url = serve(raw_sse(started, BAD_FRAME))
    run_input = agui.RunAgentInput(thread_id="t", run_id="r", messages=())

    async def through_http_agent() -> None:
        async for _ in agui.HttpAgent(url).run(run_input):
            pass

    errors: list[BaseException] = []
    for attempt in (
        lambda: asyncio.run(through_http_agent()),
        lambda: asyncio.run(agui.Conversation("t").run(agui.HttpAgent(url), input=run_input)),
        lambda: agui.Conversation("t").consume([started, BAD_FRAME]),
    ):
        with pytest.raises(agui.StreamError) as caught:
            attempt()
        errors.append(caught.value)
    assert {type(e) for e in errors} == {agui.StreamError}
    assert all(e.frame == 2 and e.problems[0].pointer == "/delta" for e in errors)
    assert len({str(e) for e in errors}) == 1
