"""Conversation.stream, what a failed run leaves in the history, one stream at a time, async
callbacks, a tee of the raw frames, and saving a conversation with its pending interrupts.

* `stream()` yields each event as it is applied, with the conversation as of that event (a
  TEXT_MESSAGE_CHUNK that opens a message is two events: the message is empty at its START),
  then the run's result; closing it early stops the run (the local agent is closed, the
  connection of an HttpAgent too).
* A run that did not end (rejected, cut, stopped) is rolled back: the messages, the state and
  the pending interrupts are as before the run, its user message included; `keep_partial=True`
  keeps what it applied. A run that ended, with RUN_FINISHED or the agent's RUN_ERROR, keeps its
  output.
* A second run started while one is applied is refused (ConversationBusyError).
* An async on_event is awaited, before the next event is applied; the sync methods refuse it.
* on_frame receives each frame as received, as one line of JSON: a recording `consume` replays.
* to_json / from_json keep the pending interrupts and the recorded answers.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest

import agui
from agui.stream.conversation import (
    NO_RUN,
    STOPPED,
    Conversation,
    ConversationBusyError,
    RunUpdate,
)

Serve = Callable[[Any], str]
RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def sse(*frames: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames)


def body_app(body: bytes, *, then_fail: bool = False) -> Any:
    """An ASGI app answering every POST with `body` as SSE; with then_fail, the connection is
    then broken (the app raises before the end of the answer)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": then_fail})
        if then_fail:
            raise RuntimeError("the connection breaks")

    return app


async def hello(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
    """A local agent answering "Hello" in two chunks (the first opens the message)."""
    yield agui.TextMessageChunkEvent(message_id="a", delta="Hel")
    yield agui.TextMessageChunkEvent(message_id="a", delta="lo")


def content(messages: tuple[agui.Message, ...], message_id: str) -> Any:
    return next((m.content for m in messages if m.id == message_id), None)


def user_texts(conversation: Conversation) -> list[Any]:
    return [m.content for m in conversation.messages if isinstance(m, agui.UserMessage)]


# ── stream ────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("where", ["local", "http"])
def test_stream_yields_each_event_with_the_conversation_as_of_it(serve: Serve, where: str) -> None:
    agent: Any = hello if where == "local" else agui.HttpAgent(serve(agui.AgentApp(hello)))

    async def main() -> tuple[list[tuple[str, Any]], RunUpdate, Any, Conversation]:
        conversation = Conversation("t")
        seen: list[tuple[str, Any]] = []
        last: RunUpdate | None = None
        async with conversation.stream(agent, "Hi") as updates:
            async for update in updates:
                last = update
                if update.event is not None:
                    seen.append((str(update.event.type), content(update.messages, "a")))
        assert last is not None
        return seen, last, updates, conversation

    seen, last, updates, conversation = asyncio.run(main())
    assert seen == [
        ("RUN_STARTED", None),
        ("TEXT_MESSAGE_START", ""),  # the first chunk's START, before its CONTENT is applied
        ("TEXT_MESSAGE_CONTENT", "Hel"),
        ("TEXT_MESSAGE_CONTENT", "Hello"),
        ("TEXT_MESSAGE_END", "Hello"),
        ("RUN_FINISHED", "Hello"),
    ]
    assert last.event is None and last.done
    assert last.result is conversation.runs[-1] is updates.result
    assert last.result.outcome == "success"
    assert last.result.run_id == updates.input.run_id
    assert [m.content for m in conversation.messages] == ["Hi", "Hello"]


class Endless:
    """A local agent that streams one message until it is stopped; `closed` is set when its
    generator is closed."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.started = 0

    async def __call__(self, run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        self.started += 1
        try:
            yield agui.StateSnapshotEvent(snapshot={"busy": True})
            yield agui.TextMessageStartEvent(message_id=f"m-{run_input.run_id}")
            while True:
                yield agui.TextMessageContentEvent(message_id=f"m-{run_input.run_id}", delta=".")
                await asyncio.sleep(0.005)
        finally:
            self.closed.set()


@pytest.mark.parametrize("how", ["async with", "aclose"])
def test_closing_a_stream_early_stops_the_run(how: str) -> None:
    agent = Endless()

    async def main() -> Conversation:
        conversation = Conversation("t", state={"busy": False})
        updates = conversation.stream(agent, "go")
        if how == "async with":
            async with updates:
                async for update in updates:
                    if isinstance(update.event, agui.TextMessageContentEvent):
                        break
        else:
            count = 0
            async for _ in updates:
                count += 1
                if count == 5:
                    await updates.aclose()
                    break
        await asyncio.wait_for(agent.closed.wait(), 5)
        [stopped] = conversation.runs
        assert (stopped.outcome, stopped.error_message) == ("truncated", STOPPED)
        assert conversation.failures == []
        assert conversation.messages == () and conversation.state == {"busy": False}
        assert updates.result is None
        result = await conversation.run(hello, "again")  # the conversation is free again
        assert result.outcome == "success"
        return conversation

    conversation = asyncio.run(main())
    assert user_texts(conversation) == ["again"]


def test_closing_a_stream_closes_the_connection(serve: Serve) -> None:
    """Over HTTP (a server without a store) closing the stream closes the connection, which
    stops the agent on the server."""
    agent = Endless()
    remote = agui.HttpAgent(serve(agui.AgentApp(agent)))

    async def main() -> None:
        conversation = Conversation("t")
        async with conversation.stream(remote, "go") as updates:
            async for update in updates:
                if isinstance(update.event, agui.TextMessageContentEvent):
                    break
        [stopped] = conversation.runs
        assert stopped.error_message == STOPPED and conversation.messages == ()

    asyncio.run(main())
    deadline = time.monotonic() + 10
    while not agent.closed.is_set():  # set on the server's loop, in its thread
        assert time.monotonic() < deadline, "the server's agent was not stopped"
        time.sleep(0.01)


def test_a_stream_raises_a_rejection_after_the_events_before_it(serve: Serve) -> None:
    url = serve(
        body_app(
            sse(
                RUN,
                {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": "other", "delta": "?"},
                DONE,
            )
        )
    )

    async def main() -> list[str]:
        conversation = Conversation("t")
        seen: list[str] = []
        with pytest.raises(agui.ProtocolError, match="other"):
            async with conversation.stream(agui.HttpAgent(url), "Hi") as updates:
                async for update in updates:
                    assert update.event is not None
                    seen.append(str(update.event.type))
        assert conversation.messages == ()
        assert len(conversation.failures) == 1
        return seen

    assert asyncio.run(main()) == ["RUN_STARTED", "TEXT_MESSAGE_START"]


# ── what a failed run leaves ──────────────────────────────────────────────────────────────────

BROKEN = {
    "invalid-event": body_app(
        sse(
            RUN,
            {"type": "STATE_SNAPSHOT", "snapshot": {"during": 1}},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "nowhere", "delta": "{"},
            DONE,
        )
    ),
    "malformed-frame": body_app(
        sse(
            RUN,
            {"type": "STATE_SNAPSHOT", "snapshot": {"during": 1}},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": 42},
        )
    ),
    "cut": body_app(
        sse(
            RUN,
            {"type": "STATE_SNAPSHOT", "snapshot": {"during": 1}},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        )
    ),
    "connection-broken": body_app(
        sse(
            RUN,
            {"type": "STATE_SNAPSHOT", "snapshot": {"during": 1}},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        ),
        then_fail=True,
    ),
}


@pytest.mark.parametrize("keep_partial", [False, True])
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_run_that_did_not_end_is_rolled_back(serve: Serve, case: str, keep_partial: bool) -> None:
    """The issue's case: after a stream with one invalid event the next input carried the
    partial message {"id":"m1","role":"assistant","content":""}. Now the history, the state and
    the pending interrupts are as before the run (its user message too), unless keep_partial."""
    working = agui.HttpAgent(serve(agui.AgentApp(hello)))
    broken = agui.HttpAgent(serve(BROKEN[case]))
    conversation = Conversation("t", state={"before": True}, keep_partial=keep_partial)
    conversation.run_sync(working, "first")
    before = conversation.messages_json()
    with pytest.raises(agui.AguiError):
        conversation.run_sync(broken, "second")
    assert conversation.runs[-1].outcome == "truncated"
    assert len(conversation.failures) == 1
    sent = [agui.to_json(m) for m in conversation.next_input().messages]
    if keep_partial:
        assert {"id": "m1", "role": "assistant", "content": ""} in sent
        assert user_texts(conversation) == ["first", "second"]
        assert conversation.state == {"during": 1}
    else:
        assert sent == before == conversation.messages_json()
        assert conversation.state == {"before": True}
    retried = conversation.run_sync(working, "second")  # the same call, as it was
    assert retried.outcome == "success"
    assert user_texts(conversation) == ["first", "second", "second"][: 2 + keep_partial]


def test_a_run_that_ended_keeps_its_output() -> None:
    """RUN_ERROR is the agent's own end of its run: what it sent before stays (as the server's
    compacted history keeps it). In a stream of several runs, a later run that is cut is rolled
    back to where the runs before it left the conversation."""
    conversation = Conversation("t")
    result = conversation.consume(
        [
            RUN,
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "half"},
            {"type": "RUN_ERROR", "message": "overloaded"},
        ]
    )
    assert result.outcome == "error"
    assert content(conversation.messages, "m1") == "half"
    with pytest.raises(agui.ProtocolError):
        conversation.consume(
            [
                {**RUN, "runId": "r2"},
                {"type": "STATE_SNAPSHOT", "snapshot": {"after": "r2"}},
                {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"},
                {**RUN, "runId": "r3"},
                {"type": "STATE_SNAPSHOT", "snapshot": {"after": "r3"}},
                {"type": "TEXT_MESSAGE_START", "messageId": "m3"},
            ]
        )
    assert [r.outcome for r in conversation.runs] == ["error", "success", "truncated"]
    assert conversation.state == {"after": "r2"}
    assert [m.id for m in conversation.messages] == ["m1"]


async def interrupting(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
    """A local agent whose first run waits for an approval, and whose next run answers with the
    status of the answer it got."""
    if not run_input.resume:
        yield agui.RunFinishedEvent(
            thread_id=run_input.thread_id,
            run_id=run_input.run_id,
            outcome=agui.RunFinishedInterruptOutcome(
                interrupts=(agui.Interrupt(id="approve-1", reason="tool_call"),)
            ),
        )
        return
    [entry] = run_input.resume
    yield agui.TextMessageChunkEvent(message_id="done", delta=f"answer: {entry.status}")


def test_pending_interrupts_survive_a_failed_resume(serve: Serve) -> None:
    conversation = Conversation("t")
    first = conversation.run_sync(interrupting, "book it")
    assert first.outcome == "interrupt"
    conversation.resolve("approve-1", {"approved": True})
    cut = agui.HttpAgent(
        serve(body_app(sse(RUN, {"type": "TEXT_MESSAGE_START", "messageId": "x"})))
    )
    with pytest.raises(agui.ProtocolError):
        conversation.run_sync(cut)
    assert [i.id for i in conversation.pending_interrupts] == ["approve-1"]
    resumed = conversation.run_sync(interrupting)  # the recorded answer goes with it again
    assert resumed.outcome == "success"
    assert content(conversation.messages, "done") == "answer: resolved"


# ── one stream at a time ──────────────────────────────────────────────────────────────────────


def test_a_second_concurrent_run_is_refused() -> None:
    agent = Endless()

    async def main() -> Conversation:
        conversation = Conversation("t")
        first = asyncio.create_task(conversation.run(agent, "first"))
        while agent.started == 0:
            await asyncio.sleep(0.005)
        with pytest.raises(ConversationBusyError, match=r"Conversation\.run"):
            await conversation.run(hello, "second")
        with pytest.raises(ConversationBusyError):
            conversation.stream(hello, "second")
        with pytest.raises(ConversationBusyError):
            conversation.consume([RUN, DONE])
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert (await conversation.run(hello, "third")).outcome == "success"
        return conversation

    conversation = asyncio.run(main())
    assert user_texts(conversation) == ["third"]  # the first was stopped: rolled back
    assert issubclass(agui.ConversationBusyError, agui.AguiError)
    assert agui.ConversationBusyError is ConversationBusyError


def test_a_stream_left_open_holds_the_conversation() -> None:
    async def main() -> None:
        conversation = Conversation("t")
        updates = conversation.stream(hello, "Hi")
        first = await updates.__anext__()
        assert isinstance(first.event, agui.RunStartedEvent)
        with pytest.raises(ConversationBusyError, match="close a stream"):
            await conversation.run(hello, "other")
        await updates.aclose()
        assert (await conversation.run(hello, "other")).outcome == "success"

    asyncio.run(main())


# ── callbacks ─────────────────────────────────────────────────────────────────────────────────


def test_an_async_on_event_is_awaited_before_the_next_event() -> None:
    seen: list[tuple[str, Any]] = []
    holder: list[Conversation] = []

    async def show(event: agui.Event) -> None:
        await asyncio.sleep(0)
        seen.append((str(event.type), content(holder[0].messages, "a")))

    conversation = Conversation("t", on_event=show)
    holder.append(conversation)
    assert asyncio.run(conversation.run(hello, "Hi")).outcome == "success"
    assert seen[1:4] == [
        ("TEXT_MESSAGE_START", ""),
        ("TEXT_MESSAGE_CONTENT", "Hel"),
        ("TEXT_MESSAGE_CONTENT", "Hello"),
    ]
    assert len(seen) == 6


def test_the_sync_methods_refuse_an_async_on_event(serve: Serve) -> None:
    async def show(event: agui.Event) -> None:
        pass

    class Shower:
        async def __call__(self, event: agui.Event) -> None:
            pass

    url = serve(agui.AgentApp(hello))
    for callback in (show, Shower()):
        conversation = Conversation("t", on_event=callback)
        with pytest.raises(TypeError, match="on_event"):
            conversation.consume([RUN, DONE])
        with pytest.raises(TypeError, match="on_event"):
            conversation.run_sync(agui.HttpAgent(url), "Hi")
        with pytest.raises(TypeError, match="on_event"):
            conversation.connect_sync(agui.HttpAgent(url))
        assert conversation.runs == [] and conversation.failures == []
    # a plain function that returns a coroutine: refused at the first event, the coroutine
    # closed (no "never awaited" warning, which this suite turns into an error)
    sneaky = Conversation("t", on_event=lambda event: show(event))
    with pytest.raises(TypeError, match="awaitable"):
        sneaky.consume([RUN, DONE])


# ── the frames tee ────────────────────────────────────────────────────────────────────────────


def test_on_frame_records_a_stream_that_replays_the_same(serve: Serve) -> None:
    frames: list[bytes] = []
    conversation = Conversation("t", on_frame=frames.append)
    conversation.run_sync(agui.HttpAgent(serve(agui.AgentApp(hello))), "Hi")
    assert all(isinstance(f, bytes) and b"\n" not in f for f in frames)
    assert [json.loads(f)["type"] for f in frames] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_CHUNK",
        "TEXT_MESSAGE_CHUNK",
        "RUN_FINISHED",
    ]
    replayed = Conversation("t")
    assert replayed.consume(frames).outcome == "success"
    assert replayed.messages_json() == conversation.messages_json()[1:]  # all but "Hi", the input's
    # a local agent's events are tee'd as their JSON
    local: list[bytes] = []
    asyncio.run(Conversation("t", on_frame=local.append).run(hello, "Hi"))
    assert [json.loads(f)["type"] for f in local] == [json.loads(f)["type"] for f in frames]


def test_on_frame_gets_a_frame_of_several_data_lines_on_one_line(serve: Serve) -> None:
    body = b'data: {"type":"RUN_STARTED",\ndata: "threadId":"t","runId":"r"}\n\n' + sse(
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    )
    frames: list[bytes] = []
    Conversation("t", on_frame=frames.append).run_sync(agui.HttpAgent(serve(body_app(body))))
    assert frames[0] == b'{"type":"RUN_STARTED", "threadId":"t","runId":"r"}'
    assert json.loads(frames[0]) == RUN


# ── types ─────────────────────────────────────────────────────────────────────────────────────


def test_a_stream_without_a_run_is_rejected_not_a_stale_result() -> None:
    """run/consume return the run of their stream: one whose events were all dropped (unknown
    types) has none, and is rejected (it no longer returns None, or the previous run's result)."""
    conversation = Conversation("t")
    assert conversation.consume([RUN, DONE]).outcome == "success"
    with pytest.raises(agui.ProtocolError, match="no run"):
        conversation.consume([{"type": "SOMETHING_NEW"}])
    assert conversation.failures == [NO_RUN]


def test_to_json_and_from_json_keep_the_pending_interrupts() -> None:
    """A pending interrupt could not be restored into a conversation rebuilt from
    messages_json(): from_json(to_json()) holds it, and the answers recorded for it."""
    conversation = Conversation("t", state={"n": 1})
    assert conversation.run_sync(interrupting, "book it").outcome == "interrupt"
    saved = orjson.dumps(conversation.to_json())
    assert set(json.loads(saved)) == {
        "threadId",
        "messages",
        "state",
        "pendingInterrupts",
        "answers",
    }
    restored = Conversation.from_json(saved)
    assert restored.thread_id == "t" and restored.state == {"n": 1}
    assert restored.messages == conversation.messages
    assert restored.pending_interrupts == conversation.pending_interrupts
    with pytest.raises(agui.PendingInterruptsError):
        restored.next_input()
    restored.resolve("approve-1", {"approved": True})
    again = Conversation.from_json(restored.to_json())  # the recorded answer is kept too
    [entry] = again.next_input().resume or ()
    assert entry == agui.ResumeEntry(
        interrupt_id="approve-1", status="resolved", payload={"approved": True}
    )
    assert again.run_sync(interrupting).outcome == "success"
    assert content(again.messages, "done") == "answer: resolved"


def test_from_json_refuses_what_is_not_a_saved_conversation() -> None:
    with pytest.raises(TypeError, match="threadId"):
        Conversation.from_json({"messages": []})
    with pytest.raises(agui.DecodeError):
        Conversation.from_json({"threadId": "t", "messages": [{"id": "m", "role": "wizard"}]})


def test_a_pipeline_refuses_an_async_on_event() -> None:
    async def show(event: agui.Event) -> None:
        pass

    with pytest.raises(TypeError, match="on_event"):
        agui.Pipeline(on_event=show)
