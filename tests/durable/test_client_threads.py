"""HttpAgent's thread API against the real server with a store (uvicorn on loopback): `threads`,
`thread` and `delete_thread` and their `_sync` twins, the answers' models, the errors (a 404 as
HttpError, a refused query with its problems, an answer that is no ThreadPage), and the retries
the other small requests get (a 503 before the answer)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

import agui
from agui.http.client import HttpAgent
from agui.http.threads import DeletedThread, Thread, ThreadInfo, ThreadPage

from .agents import paced
from .support import body, post


@pytest.fixture
def base(live: Callable[[Any], str]) -> str:
    url = live(agui.AgentApp(paced, path="/agent", store="memory://"))
    for n in range(3):
        answer = post(f"{url}/agent", body(f"r{n}", f"t{n}", count=2, text=f"hello {n}"))
        assert answer.status == 200
    return url


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_list_read_and_delete(base: str, mode: str) -> None:
    agent = HttpAgent(f"{base}/agent")

    def call(name: str, *args: Any, **kwargs: Any) -> Any:
        if mode == "sync":
            return getattr(agent, f"{name}_sync")(*args, **kwargs)

        async def go() -> Any:
            async with agent:
                return await getattr(agent, name)(*args, **kwargs)

        return asyncio.run(go())

    page = call("threads", limit=2)
    assert isinstance(page, ThreadPage)
    assert [t.thread_id for t in page.threads] == ["t2", "t1"]
    assert page.next is not None
    rest = call("threads", limit=2, before=page.next)
    assert [t.thread_id for t in rest.threads] == ["t0"] and rest.next is None
    first = page.threads[0]
    assert isinstance(first, ThreadInfo)
    assert first.runs == 1 and first.last_run.run_id == "r2"
    assert first.last_run.outcome == "success" and first.last_run.status == "finished"
    assert first.updated_at.tzinfo is not None
    # a date of today, not a speed: an hour either way catches seconds read as milliseconds or a
    # wrong epoch
    assert abs((datetime.now(UTC) - first.updated_at).total_seconds()) < 3600
    thread = call("thread", "t1")
    assert isinstance(thread, Thread)
    assert [type(m).__name__ for m in thread.messages] == ["UserMessage", "AssistantMessage"]
    assert thread.messages[0].content == "hello 1"
    assert [r.run_id for r in thread.runs] == ["r1"]
    deleted = call("delete_thread", "t1")
    assert deleted == DeletedThread(thread_id="t1", deleted_runs=1, stopped_runs=0)
    with pytest.raises(agui.HttpError) as caught:
        call("thread", "t1")
    assert caught.value.status == 404
    with pytest.raises(agui.HttpError) as caught:
        call("delete_thread", "t1")
    assert caught.value.status == 404
    assert [t.thread_id for t in call("threads").threads] == ["t2", "t0"]
    agent.close()


def test_a_refused_query_names_the_parameter(base: str) -> None:
    with HttpAgent(f"{base}/agent") as agent:
        with pytest.raises(agui.HttpError) as caught:
            agent.threads_sync(limit=1000)
    assert caught.value.status == 400
    assert [p.pointer for p in caught.value.problems] == ["/limit"]


def test_the_models_round_trip_their_wire_form(base: str) -> None:
    with HttpAgent(f"{base}/agent") as agent:
        page = agent.threads_sync()
        thread = agent.thread_sync("t0")
    assert ThreadPage.from_wire(page.to_wire()) == page
    assert Thread.from_wire(thread.to_wire()) == thread


def test_an_answer_that_is_no_thread_page_is_a_stream_error(live: Callable[[Any], str]) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        answer = b'{"threads": [{"threadId": 7}]}'
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    with HttpAgent(live(app)) as agent:
        with pytest.raises(agui.StreamError) as caught:
            agent.threads_sync()
    assert [p.pointer for p in caught.value.problems] == ["/threads/0/threadId"]


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_the_thread_requests_are_retried(live: Callable[[Any], str], mode: str) -> None:
    """A 503 with Retry-After: 0 before each answer: every call still gets its answer."""
    inner = agui.AgentApp(paced, path="/agent", store="memory://")
    seen: list[tuple[str, str]] = []

    async def flaky(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/agent/threads"):
            seen.append((scope["method"], scope["path"]))
            if len(seen) % 2 == 1:
                headers = [(b"content-type", b"text/plain"), (b"retry-after", b"0")]
                await send({"type": "http.response.start", "status": 503, "headers": headers})
                await send({"type": "http.response.body", "body": b"busy"})
                return
        await inner(scope, receive, send)

    url = live(flaky)
    assert post(f"{url}/agent", body("r1", "t1", count=1)).status == 200
    agent = HttpAgent(f"{url}/agent")
    if mode == "sync":
        page = agent.threads_sync()
        agent.thread_sync("t1")
        agent.delete_thread_sync("t1")
    else:

        async def go() -> ThreadPage:
            async with agent:
                page = await agent.threads()
                await agent.thread("t1")
                await agent.delete_thread("t1")
                return page

        page = asyncio.run(go())
    agent.close()
    assert [t.thread_id for t in page.threads] == ["t1"]
    assert seen == [
        ("GET", "/agent/threads"),
        ("GET", "/agent/threads"),
        ("GET", "/agent/threads/t1"),
        ("GET", "/agent/threads/t1"),
        ("DELETE", "/agent/threads/t1"),
        ("DELETE", "/agent/threads/t1"),
    ]


def test_a_thread_that_waits_for_an_answer_picks_up_as_a_conversation(
    live: Callable[[Any], str],
) -> None:
    """The demo agent interrupts (forwardedProps {"interrupt": true}): the Thread carries the
    interrupt, and a Conversation made from it answers it; the next run completes."""
    from agui.cli.demo import DemoAgent
    from agui.stream.conversation import Conversation

    url = live(agui.AgentApp(DemoAgent(delay=0), path="/agent", store="memory://"))
    agent = HttpAgent(f"{url}/agent")
    first = Conversation("t-wait")
    asked = first.run_sync(agent, "hi", forwarded_props={"interrupt": True})
    assert asked.outcome == "interrupt"
    thread = agent.thread_sync("t-wait")
    assert [i.id for i in thread.interrupts] == [i.id for i in first.pending_interrupts]
    assert Thread.from_wire(thread.to_wire()) == thread
    again = Conversation(
        thread.thread_id,
        messages=thread.messages,
        state=thread.state,
        pending_interrupts=thread.interrupts,
    )
    for interrupt in again.pending_interrupts:
        again.resolve(interrupt.id, {"approved": True})
    done = again.run_sync(agent)
    assert done.outcome == "success", done
    assert agent.thread_sync("t-wait").interrupts == ()
    agent.close()
