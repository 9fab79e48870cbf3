"""The server never sends what a client must reject, and stops runs the way a client can read.

- Agents that break a client's rules (tests/misbehaving_agents.py: open messages, tool calls and
  reasoning at the end, a second RUN_STARTED, a RUN_FINISHED naming other ids, an event the
  Verifier refuses) are repaired or ended by the run lifecycle; this package's client completes
  every run (or reports the RUN_ERROR) without rejecting anything, over HTTP and locally, with the
  same messages both ways. (tests/interop/test_server_lifecycle_ts.py runs the same agents through
  the TypeScript client.)
- Work after RUN_FINISHED: the response ends at the terminal event; the agent finishes its work
  (within finish_grace), and a hung one is cancelled after it.
- Shutdown and limits: AgentApp.shutdown ends runs in RUN_ERROR SERVER_SHUTDOWN (and refuses new
  ones with 503); a server that cancels the request (uvicorn at the end of its graceful window)
  still gets RUN_ERROR SERVER_SHUTDOWN to the client; max_run_seconds ends a run in RUN_ERROR
  TIMEOUT; a frame over the client's 10 MiB limit is refused with RUN_ERROR INVALID_EVENT.
- Mistakes found when AgentApp is built (a sync generator, an `async def` without yield), and a
  body that is not UTF-8 named by its byte offset.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import attrs
import httpx
import pytest

import agui
from agui import AgentApp, SSEDecoder
from agui.stream.lifecycle import run_lifecycle

from .conftest import run_input
from .misbehaving_agents import CASES

JSON = {"content-type": "application/json"}
# A 1.0 client's request (it declares its protocolVersion): the stream is the agent's, untranslated.
BODY = agui.encode(attrs.evolve(run_input(), protocol_version=agui.PROTOCOL_VERSION))
Serve = Callable[[Any], str]
HANG = 60.0
"""A hang bound: how long a test waits for what takes a fraction of a second before failing."""


def events_of(raw: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    return [json.loads(m.data) for m in decoder.feed(raw) + decoder.close()]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def post(url: str, body: bytes = BODY, timeout: float = 10) -> httpx.Response:
    with httpx.Client(timeout=timeout) as client:
        return client.post(url, content=body, headers=JSON)


# ── misbehaving agents, through this package's client ─────────────────────────────────────────


@pytest.mark.parametrize("name", list(CASES))
def test_the_server_sends_nothing_a_client_rejects(name: str, serve: Serve) -> None:
    """Each misbehaving agent behind AgentApp: the server sends the repaired stream; Conversation
    over HttpAgent consumes it without a client-side rejection (completed, or the agent's
    RUN_ERROR reported); Conversation.run(agent) locally gives the same messages and outcome."""
    agent, expected, ending = CASES[name]
    url = serve(AgentApp(agent))
    sent = events_of(post(url).content)
    assert types(sent) == ["RUN_STARTED", *expected]
    assert sent[-1].get("threadId", "thread-1") == "thread-1"
    assert sent[-1].get("runId", "run-1") == "run-1"

    local = agui.Conversation("thread-1")
    the_input = local.next_input("hi")
    remote = agui.Conversation("thread-1", messages=the_input.messages)
    asyncio.run(remote.run(agui.HttpAgent(url), input=the_input))
    asyncio.run(local.run(agent, input=the_input))
    for conversation in (remote, local):
        assert conversation.failures == []
        (result,) = conversation.runs
        if ending == "completed":
            assert conversation.outcome() == ("completed", None)
        else:
            assert conversation.outcome()[0] == "error"
            assert result.error_code == ending
    assert local.messages_json() == remote.messages_json()


def test_a_refused_event_is_named_in_the_run_error(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """The RUN_ERROR of an event the Verifier refuses says which rule it broke (the client's
    wording); the event itself is not sent, the agent is closed there, and the refusal is
    logged."""
    caplog.set_level(logging.INFO, logger="agui.agent")
    agent, _, _ = CASES["refused_mid_run"]
    sent = events_of(post(serve(AgentApp(agent))).content)
    assert "ghost" not in json.dumps(sent[:-1])
    assert sent[-1]["code"] == "INVALID_EVENT"
    assert "No active text message found with ID 'ghost'" in sent[-1]["message"]
    assert "a client must reject" in caplog.text


def test_repairs_are_logged(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    """A dropped second RUN_STARTED, a RUN_FINISHED given the run's ids and the events that
    close what was open are each logged."""
    caplog.set_level(logging.INFO, logger="agui.agent")
    for name in ("second_run_started", "mismatched_finish", "open_text"):
        post(serve(AgentApp(CASES[name][0])))
    assert "dropped a second RUN_STARTED" in caplog.text
    assert "named thread 'thread-elsewhere', run 'run-elsewhere'" in caplog.text
    assert "closed before RUN_FINISHED: TEXT_MESSAGE_END m1" in caplog.text


def test_the_lifecycle_follows_the_agents_own_run_started_ids() -> None:
    """An agent whose RUN_STARTED names other ids than the input gets a RUN_FINISHED with the ids
    of that RUN_STARTED (the client checks the two agree)."""

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.RunStartedEvent(thread_id="t-own", run_id="r-own")

    async def collect() -> list[Any]:
        return [e async for e in run_lifecycle(agent, run_input())]

    events = asyncio.run(collect())
    assert [(type(e), e.thread_id, e.run_id) for e in events] == [
        (agui.RunStartedEvent, "t-own", "r-own"),
        (agui.RunFinishedEvent, "t-own", "r-own"),
    ]


def test_an_agent_returning_no_async_iterator_ends_in_run_error(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """An object whose __call__ returns a list (it passes the build-time check, which cannot see
    the return value) ends in RUN_STARTED + RUN_ERROR AGENT_ERROR, with the reason logged."""

    class Lister:
        def __call__(self, input: agui.RunAgentInput) -> Any:
            return [agui.TextMessageStartEvent(message_id="m")]

    caplog.set_level(logging.INFO, logger="agui.agent")
    sent = events_of(post(serve(AgentApp(Lister()))).content)
    assert types(sent) == ["RUN_STARTED", "RUN_ERROR"]
    assert sent[-1]["code"] == "AGENT_ERROR"
    assert "returned list, not an async iterator" in caplog.text


# ── work after RUN_FINISHED ────────────────────────────────────────────────────────────────────


def test_work_after_run_finished_completes_after_the_response(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """An agent that yields RUN_FINISHED and then saves: the client has its whole response while
    the save is still going, the save completes, and what the agent yields afterwards is dropped
    and logged."""
    saving = threading.Event()
    saved = threading.Event()

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        yield agui.TextMessageEndEvent(message_id="m")
        yield agui.RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id)
        saving.set()
        await asyncio.sleep(1.0)  # await save(...)
        saved.set()
        yield agui.CustomEvent(name="saved", value=True)

    caplog.set_level(logging.INFO, logger="agui.agent")
    response = post(serve(AgentApp(agent)))
    assert types(events_of(response.content))[-1] == "RUN_FINISHED"
    assert saving.is_set() and not saved.is_set()
    assert saved.wait(HANG), "the agent's work after RUN_FINISHED was cut short"  # hang bound
    deadline = time.monotonic() + HANG
    while "dropped CUSTOM" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "dropped CUSTOM sent after the terminal event" in caplog.text


def test_work_after_run_finished_completes_locally() -> None:
    """Conversation.run(agent) of a local agent waits for its work after RUN_FINISHED too."""
    saved: list[str] = []

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id)
        await asyncio.sleep(0.05)
        saved.append(run.run_id)

    conversation = agui.Conversation("thread-1")
    asyncio.run(conversation.run(agent, "hi"))
    assert conversation.outcome() == ("completed", None)
    assert saved == [conversation.runs[0].run_id]


def test_a_hung_agent_after_run_finished_is_cancelled_after_the_grace(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """finish_grace: an agent still busy that long after its RUN_FINISHED is cancelled (the
    client already had its response), and that is logged."""
    cancelled = threading.Event()

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    caplog.set_level(logging.INFO, logger="agui.agent")
    started = time.monotonic()
    response = post(serve(AgentApp(agent, finish_grace=0.3)))
    assert types(events_of(response.content)) == ["RUN_STARTED", "RUN_FINISHED"]
    assert cancelled.wait(HANG), "the agent was not cancelled"  # hang bound
    assert 0.25 < time.monotonic() - started  # not before the grace (a lower bound)
    # The lifecycle logs once the cancelled agent has finished, in the server's thread: wait for
    # it. The line names the grace that ran out: 0.3 s, not the default (10 s).
    logged = time.monotonic() + HANG
    while "still working" not in caplog.text and time.monotonic() < logged:
        time.sleep(0.01)
    assert "still working 0.3 s after its terminal event" in caplog.text


# ── shutdown, time limits, frame limits ────────────────────────────────────────────────────────


def hung(first: threading.Event | None = None) -> Any:
    """An agent that starts a message and then waits forever (until cancelled)."""

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        yield agui.TextMessageContentEvent(message_id="m", delta="working")
        await asyncio.sleep(3600)

    return agent


def stream_until_first_content(url: str, then: Callable[[], None]) -> list[dict[str, Any]]:
    """POST a run; once TEXT_MESSAGE_CONTENT arrives call `then`; return every event."""
    decoder = SSEDecoder()
    events: list[dict[str, Any]] = []
    called = False
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, content=BODY, headers=JSON) as response,
    ):
        for chunk in response.iter_bytes():
            events += [json.loads(m.data) for m in decoder.feed(chunk)]
            if not called and "TEXT_MESSAGE_CONTENT" in types(events):
                called = True
                then()
    return events + [json.loads(m.data) for m in decoder.close()]


def test_shutdown_ends_runs_with_server_shutdown(serve: Serve) -> None:
    """AgentApp.shutdown(grace) (here from another thread, as from a signal handler): a run
    still going after the grace ends in RUN_ERROR SERVER_SHUTDOWN, and a new request is 503."""
    app = AgentApp(hung())
    url = serve(app)
    asked: list[float] = []

    def shut() -> None:
        asked.append(time.monotonic())
        app.shutdown(grace=0.2)

    events = stream_until_first_content(url, shut)
    waited = time.monotonic() - asked[0]
    # The agent hangs for an hour: only the shutdown ends its run (the client's read timeout,
    # 10 s, bounds a hang).
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "RUN_ERROR",
    ]
    assert events[-1]["code"] == "SERVER_SHUTDOWN"
    assert 0.15 < waited  # after the grace (a lower bound)
    refused = post(url)
    assert refused.status_code == 503 and "shutting down" in refused.json()["error"]


def test_shutdown_lets_a_short_run_finish(serve: Serve) -> None:
    """A run that ends within the shutdown's grace finishes normally."""

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        yield agui.TextMessageContentEvent(message_id="m", delta="almost")
        await asyncio.sleep(0.2)
        yield agui.TextMessageEndEvent(message_id="m")

    app = AgentApp(agent)
    events = stream_until_first_content(serve(app), lambda: app.shutdown(grace=5))
    assert types(events)[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]


@pytest.fixture
def own_server() -> Iterator[Callable[..., tuple[str, Any, threading.Thread]]]:
    """A uvicorn of the test's own (not the shared one), in a thread, for shutdown tests;
    `start(app, **config)` returns (base URL, uvicorn.Server, the thread running it)."""
    import uvicorn

    running: list[tuple[Any, threading.Thread, socket.socket]] = []

    def start(app: Any, **config: Any) -> tuple[str, Any, threading.Thread]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        options = {"log_level": "critical", "log_config": None, "lifespan": "off"}
        server = uvicorn.Server(uvicorn.Config(app, **(options | config)))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive()
            time.sleep(0.005)
        running.append((server, thread, sock))
        return f"http://127.0.0.1:{port}", server, thread

    yield start
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_a_cancelled_request_still_ends_in_server_shutdown(
    own_server: Callable[..., tuple[str, Any, threading.Thread]],
) -> None:
    """Plain uvicorn (not told of the shutdown) cancels the request when its graceful window
    (--timeout-graceful-shutdown) ends: the client still gets RUN_ERROR SERVER_SHUTDOWN, and the
    server stops (at the end of the window; the test bounds a hang)."""
    base, server, thread = own_server(AgentApp(hung()), timeout_graceful_shutdown=0.5)

    def stop() -> None:
        server.should_exit = True

    # The agent hangs for an hour: only the cancellation ends its run (the client's read
    # timeout, 10 s, bounds a hang).
    events = stream_until_first_content(base, stop)
    assert types(events)[-1] == "RUN_ERROR" and events[-1]["code"] == "SERVER_SHUTDOWN"
    thread.join(HANG)
    assert not thread.is_alive(), "the server did not stop"  # hang bound


def test_max_run_seconds_ends_a_run_with_timeout(serve: Serve) -> None:
    """max_run_seconds: a run still going after it ends in RUN_ERROR TIMEOUT (the agent is
    cancelled); a run that ends in time is untouched; the default is no limit."""
    assert AgentApp(hung()).max_run_seconds is None
    cancelled = threading.Event()

    async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = time.monotonic()
    # The agent waits an hour: only the limit ends its run (post's read timeout, 10 s, bounds a
    # hang), and the error names the limit that did (0.3 s).
    events = events_of(post(serve(AgentApp(agent, max_run_seconds=0.3))).content)
    assert 0.25 < time.monotonic() - started  # not before the limit (a lower bound)
    assert types(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    assert events[-1]["code"] == "TIMEOUT" and "0.3 seconds" in events[-1]["message"]
    assert cancelled.wait(HANG), "the agent was not cancelled"  # hang bound
    quick = CASES["open_text"][0]
    assert types(events_of(post(serve(AgentApp(quick, max_run_seconds=5))).content))[-1] == (
        "RUN_FINISHED"
    )


def huge(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    async def agent() -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        yield agui.TextMessageContentEvent(message_id="m", delta="x" * (10 * 1024 * 1024 + 1))
        yield agui.TextMessageEndEvent(message_id="m")

    return agent()


@pytest.mark.parametrize("binary", [False, True], ids=["sse", "protobuf"])
def test_a_frame_over_the_clients_limit_is_refused_at_the_server(
    binary: bool, serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """An event whose frame exceeds the client's 10 MiB frame limit is not sent: the run ends in
    RUN_ERROR INVALID_EVENT (logged), which HttpAgent reads like any event, over SSE and
    protobuf."""
    caplog.set_level(logging.INFO, logger="agui.server")
    url = serve(AgentApp(huge))

    async def collect() -> list[Any]:
        return [e async for e in agui.HttpAgent(url, binary=binary).run(run_input())]

    events = asyncio.run(collect())
    assert [type(e) for e in events] == [
        agui.RunStartedEvent,
        agui.TextMessageStartEvent,
        agui.RunErrorEvent,
    ]
    assert events[-1].code == "INVALID_EVENT" and "too large" in events[-1].message
    assert "clients refuse frames over" in caplog.text


# ── mistakes found early ───────────────────────────────────────────────────────────────────────


def sync_generator(run: agui.RunAgentInput) -> Iterator[Any]:
    yield agui.TextMessageStartEvent(message_id="m")


async def returns_a_list(run: agui.RunAgentInput) -> list[Any]:
    return [agui.TextMessageStartEvent(message_id="m")]


class SyncCall:
    def __call__(self, run: agui.RunAgentInput) -> Iterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        (sync_generator, "is a generator function, not an async one"),
        (returns_a_list, "is an async function without yield"),
        (SyncCall(), "is a generator function, not an async one"),
        (lambda: None, "cannot be called with the run's input alone"),
        ("echo", "is not callable"),
    ],
    ids=["sync-generator", "async-def-returning-a-list", "sync-call", "no-argument", "a-string"],
)
def test_agentapp_refuses_what_cannot_be_an_agent(agent: Any, says: str) -> None:
    """AgentApp refuses, when it is built, what can never be an agent: TypeError with a sentence
    saying what an agent must be."""
    with pytest.raises(TypeError) as raised:
        AgentApp(agent)
    assert says in str(raised.value)
    assert "an agent is called with a RunAgentInput and returns an async iterator" in str(
        raised.value
    )


def test_agentapp_takes_every_kind_of_agent() -> None:
    """Async generator functions, objects whose __call__ is one or returns an async iterator
    (ModelAgent, HttpAgent), functools.partial of an agent."""
    import functools

    from agui.cli.demo import DemoAgent

    async def with_option(run: agui.RunAgentInput, greeting: str = "hi") -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id=greeting)

    for agent in (
        CASES["open_text"][0],
        DemoAgent(),
        agui.HttpAgent("http://127.0.0.1:9/agent"),
        functools.partial(with_option, greeting="hello"),
    ):
        AgentApp(agent)


def test_a_body_that_is_not_utf8_names_the_byte_offset(serve: Serve) -> None:
    """A body with bytes that are not UTF-8 is a 400 whose problem says where."""
    body = BODY.replace(b'"hi"', b'"h\xffi"')
    response = post(serve(AgentApp(CASES["open_text"][0])), body)
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    offset = body.index(b"\xff")
    assert problem["kind"] == "encoding"
    assert f"byte 0xff at offset {offset}" in problem["message"]
