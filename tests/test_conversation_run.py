"""Conversation.run and run_sync tell the truth about what happened to the history:

`next_input()` changes nothing, the new message joins the history when the run's stream starts
(so a retry after a failed connection does not send it twice), a cancelled run is recorded as
stopped and leaves the conversation ready for the next, `run_sync` needs no event loop, a strict
HttpAgent is decoded strictly, and every error and warning numbers events alike, from 1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import agui
from agui.cli.demo import DemoAgent, free_port
from agui.stream.conversation import STOPPED, Conversation
from agui.stream.pipeline import Pipeline

Serve = Callable[[Any], str]
RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


class Recorder:
    """A local agent that records its inputs and answers "ok"."""

    def __init__(self) -> None:
        self.inputs: list[agui.RunAgentInput] = []

    async def __call__(self, run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        self.inputs.append(run_input)
        yield agui.TextMessageChunkEvent(message_id=f"a-{run_input.run_id}", delta="ok")


def sse_app(frames: list[Any], status: int = 200) -> Any:
    """An ASGI app answering every POST with these frames as SSE (with `status`)."""
    body = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def user_texts(conversation: Conversation) -> list[str]:
    return [m.content for m in conversation.messages if isinstance(m, agui.UserMessage)]


# ── the new message joins the history when the run starts ──────────────────────────────────


def test_next_input_changes_nothing() -> None:
    """Two calls to next_input add no message to the history; each input holds its own."""
    conversation = Conversation("t", messages=[agui.SystemMessage(id="s", content="be nice")])
    first = conversation.next_input("one")
    second = conversation.next_input("two")
    assert [m.id for m in conversation.messages] == ["s"]
    assert [m.content for m in first.messages] == ["be nice", "one"]
    assert [m.content for m in second.messages] == ["be nice", "two"]


@pytest.mark.parametrize("failure", ["refused", "http-503", "empty-200"])
def test_a_retry_after_a_failure_before_the_stream_sends_the_message_once(
    serve: Serve, failure: str
) -> None:
    """A run that fails before any frame arrives (a refused connection, an HTTP error, an empty
    answer) leaves the history as it was: retrying the same call sends the message once."""
    broken = {
        "refused": f"http://127.0.0.1:{free_port()}/agent",
        "http-503": serve(sse_app([], status=503)),
        "empty-200": serve(sse_app([])),
    }[failure]
    agent = Recorder()
    working = serve(agui.AgentApp(agent))
    conversation = Conversation("t")
    with pytest.raises(agui.AguiError):
        conversation.run_sync(agui.HttpAgent(broken), "hello")
    assert conversation.messages == ()
    result = conversation.run_sync(agui.HttpAgent(working), "hello")
    assert result is not None and result.outcome == "success"
    assert [m.content for m in agent.inputs[0].messages] == ["hello"]
    assert user_texts(conversation) == ["hello"]


@pytest.mark.parametrize("keep_partial", [False, True])
def test_a_cut_run_is_rolled_back_unless_keep_partial(serve: Serve, keep_partial: bool) -> None:
    """The message joins when the stream starts, but a run that is cut (truncated) is rolled
    back: the history is as it was before the run, so the same call retries it. With
    keep_partial the message stays, and is not repeated by the next run."""
    cut = serve(sse_app([RUN]))
    conversation = Conversation("t", keep_partial=keep_partial)
    with pytest.raises(agui.ProtocolError):
        conversation.run_sync(agui.HttpAgent(cut), "hello")
    [truncated] = conversation.runs
    assert truncated.outcome == "truncated"
    if keep_partial:
        assert user_texts(conversation) == ["hello"]
        assert [m.content for m in conversation.next_input().messages] == ["hello"]
    else:
        assert conversation.messages == ()
        assert [m.content for m in conversation.next_input("hello").messages] == ["hello"]


# ── cancellation ──────────────────────────────────────────────────────────────────────────


async def endless(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
    """A local agent that streams one message until it is stopped."""
    yield agui.RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
    yield agui.TextMessageStartEvent(message_id=f"m-{run_input.run_id}")
    while True:
        yield agui.TextMessageContentEvent(message_id=f"m-{run_input.run_id}", delta=".")
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("keep_partial", [False, True])
@pytest.mark.parametrize("where", ["local", "http"])
def test_cancelling_a_run_leaves_a_consistent_conversation(
    serve: Serve, where: str, keep_partial: bool
) -> None:
    """task.cancel() in the middle of a stream: the run is recorded as truncated because it was
    stopped (not as cut by the next RUN_STARTED), nothing is counted as a rejection, and the next
    run starts cleanly: without the stopped run's message and output (rolled back), or with them
    (keep_partial)."""
    agent: Any = endless if where == "local" else agui.HttpAgent(serve(agui.AgentApp(endless)))

    async def main() -> Conversation:
        seen = asyncio.Event()
        conversation = Conversation(
            "t", on_event=lambda event: seen.set(), keep_partial=keep_partial
        )
        task = asyncio.create_task(conversation.run(agent, "first"))
        await asyncio.wait_for(seen.wait(), 10)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not conversation.reducer.run_open
        [stopped] = conversation.runs
        assert (stopped.outcome, stopped.error_message) == ("truncated", STOPPED)
        assert conversation.failures == []
        result = await conversation.run(Recorder(), "second")
        assert result is not None and result.outcome == "success"
        return conversation

    conversation = asyncio.run(main())
    assert [(r.outcome, r.error_message) for r in conversation.runs] == [
        ("truncated", STOPPED),
        ("success", None),
    ]
    assert user_texts(conversation) == (["first", "second"] if keep_partial else ["second"])


# ── run_sync ─────────────────────────────────────────────────────────────────────────────


def test_run_sync_runs_an_http_agent_without_an_event_loop(serve: Serve) -> None:
    """run_sync reads HttpAgent.frames_sync: the whole pipeline, no asyncio, same messages."""
    url = serve(agui.AgentApp(DemoAgent(delay=0)))
    conversation = Conversation("t")
    result = conversation.run_sync(agui.HttpAgent(url), "hi")
    assert result is not None and result.outcome == "success"
    assert conversation.messages_json()[0]["content"] == "hi"
    assert conversation.messages_json()[-1] == {
        "id": conversation.messages_json()[-1]["id"],
        "role": "assistant",
        "content": "You said: hi (2 characters).",
    }
    assert conversation.outcome() == ("completed", None)


def test_run_sync_runs_a_local_agent_and_refuses_inside_a_loop() -> None:
    """A local agent runs in a new event loop; inside a running loop run_sync says to await run."""
    agent = Recorder()
    conversation = Conversation("t")
    result = conversation.run_sync(agent, "hi")
    assert result is not None and result.outcome == "success"
    assert user_texts(conversation) == ["hi"]

    async def inside() -> None:
        conversation.run_sync(agent, "again")

    with pytest.raises(RuntimeError, match=r"await conversation\.run"):
        asyncio.run(inside())
    assert user_texts(conversation) == ["hi"]


# ── strict decoding ──────────────────────────────────────────────────────────────────────


FUTURE = [{**RUN, "futureProp": 1}, DONE]


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_strict_http_agent_is_decoded_strictly(serve: Serve, mode: str) -> None:
    """HttpAgent(strict=True) run by a Conversation rejects an unknown member; the tolerant one
    strips it with a warning."""
    url = serve(sse_app(FUTURE))

    def run(agent: agui.HttpAgent) -> Conversation:
        conversation = Conversation("t")
        try:
            if mode == "sync":
                conversation.run_sync(agent, "hi")
            else:
                asyncio.run(conversation.run(agent, "hi"))
        except agui.StreamError:
            pass
        return conversation

    strict = run(agui.HttpAgent(url, strict=True))
    outcome, reason = strict.outcome()
    assert outcome == "failed" and reason is not None and "futureProp" in reason
    tolerant = run(agui.HttpAgent(url))
    assert tolerant.outcome() == ("completed", None)
    assert [(w.kind, w.pointer) for w in tolerant.warnings] == [("stripped", "/futureProp")]


# ── one numbering ────────────────────────────────────────────────────────────────────────


def test_errors_and_warnings_number_events_from_one_as_received() -> None:
    """The event a ProtocolError names is the item as received, counted from 1 (the same as its
    frame), whatever the stages made of the items before it; warnings use the same numbers."""
    pipeline = Pipeline()
    pipeline.feed(RUN)  # 1
    pipeline.feed({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "a", "future": 1})
    with pytest.raises(agui.ProtocolError) as caught:  # 3: expands to END, then the bad content
        pipeline.feed({"type": "TEXT_MESSAGE_CONTENT", "messageId": "x", "delta": "b"})
    assert (caught.value.event, caught.value.frame) == (3, 3)
    assert [(w.pointer, w.event) for w in pipeline.warnings] == [("/future", 2)]
    with pytest.raises(agui.StreamError) as frame_error:
        Pipeline().run([RUN, DONE, b"{not json"])
    assert frame_error.value.frame == 3 and "frame 3" in str(frame_error.value)


# ── HttpAgent's frames in bulk (a list per network chunk) ─────────────────────────────────


TEXT = [
    RUN,
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": d} for d in "abc"),
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    DONE,
]


def test_run_reads_an_http_agents_frames_in_bulk_and_applies_each_in_order(serve: Serve) -> None:
    """Conversation.run takes HttpAgent's frames a chunk at a time (one chunk holds the whole run
    here): on_event still sees each event with the conversation as of that event, in order."""
    url = serve(sse_app(TEXT))
    seen: list[tuple[str, str]] = []

    def on_event(event: Any) -> None:
        text = [m.content for m in conversation.messages if isinstance(m, agui.AssistantMessage)]
        seen.append((event.type.value, "".join(t or "" for t in text)))

    conversation = Conversation("t", keep_events=True, on_event=on_event)
    result = asyncio.run(conversation.run(agui.HttpAgent(url), "hi"))
    assert result.outcome == "success"
    assert [s[0] for s in seen] == [e["type"] for e in TEXT]
    assert [s[1] for s in seen] == ["", "", "a", "ab", "abc", "abc", "abc"]
    assert [e.type.value for e in conversation.events] == [e["type"] for e in TEXT]
    assert user_texts(conversation) == ["hi"]


def test_a_frame_that_breaks_mid_chunk_is_rejected_after_those_before_it(serve: Serve) -> None:
    """A broken frame inside a chunk: the frames before it are applied (and seen by on_event),
    then the run is rejected naming it, as when each frame comes on its own."""
    body = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in TEXT[:3])
    body += b"data: {not json\n\n"

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    seen: list[str] = []
    conversation = Conversation(
        "t", keep_partial=True, on_event=lambda e: seen.append(e.type.value)
    )
    with pytest.raises(agui.StreamError) as caught:
        asyncio.run(conversation.run(agui.HttpAgent(serve(app)), "hi"))
    assert caught.value.frame == 4
    assert seen == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert conversation.runs[-1].outcome == "truncated"


def test_an_http_agent_whose_frames_are_overridden_is_read_through_them(serve: Serve) -> None:
    """A subclass of HttpAgent that overrides `frames` is read through its own `frames`."""
    url = serve(sse_app(TEXT))

    class Upper(agui.HttpAgent):
        async def frames(self, input: Any, *, position: Any = None) -> Any:  # type: ignore[override]
            async for data in super().frames(input, position=position):
                yield (
                    data.replace(b'"delta": "', b'"delta": "x') if isinstance(data, bytes) else data
                )

    conversation = Conversation("t")
    asyncio.run(conversation.run(Upper(url), "hi"))
    assert conversation.messages[-1].content == "xaxbxc"
