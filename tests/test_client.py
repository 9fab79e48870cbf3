"""The httpx client HttpAgent and the client side of the command line (`agui run`, `agui demo`,
`agui serve`), against real uvicorn servers on 127.0.0.1 (see the `serve` fixture).

HttpAgent yields typed events as their frames arrive (async and sync), sends its headers, honours
its timeout, uses an injected httpx client without closing it, raises HttpError for a non-2xx
answer and StreamError naming the frame for a malformed one, closes the connection when the
iteration stops early, and is itself an Agent that the server can serve as a proxy.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import httpx
import pytest

import agui
from agui import AgentApp, HttpAgent, HttpError, StreamError
from agui.cli.demo import DemoAgent, free_port

from .conftest import run_input

Serve = Callable[[Any], str]
HANG = 30.0
"""A hang bound: how long a test waits for the server to cancel the agent of a client that left
(it takes milliseconds; the agents of these tests never end on their own)."""
SUBPROCESS = 60.0
"""Seconds a command line run may take (a couple of seconds in practice)."""


def demo_app() -> AgentApp:
    return AgentApp(DemoAgent(delay=0))


async def collect(agent: HttpAgent, input: agui.RunAgentInput | None = None) -> list[Any]:
    return [event async for event in agent.run(input or run_input())]


def drain(
    agent: HttpAgent, mode: str, into: list[Any], input: agui.RunAgentInput | None = None
) -> None:
    """Run `agent` to its end with `run` ("async") or `run_sync` ("sync"), appending each event
    to `into` as it arrives (so the events before an error are kept)."""
    if mode == "sync":
        into.extend(agent.run_sync(input or run_input()))
        return

    async def main() -> None:
        async for event in agent.run(input or run_input()):
            into.append(event)

    asyncio.run(main())


def text_of(events: list[Any]) -> str:
    return "".join(e.delta for e in events if isinstance(e, agui.TextMessageContentEvent))


def raw_app(
    chunks: list[bytes], status: int = 200, content_type: bytes | None = b"text/event-stream"
):
    """A tiny ASGI app that answers every request with `status` and the given body chunks (and
    no Content-Type when `content_type` is None)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [] if content_type is None else [(b"content-type", content_type)]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


class Stopped:
    """Whether a server-side agent was stopped (set from the server's thread)."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def set(self) -> None:
        self.event.set()


def forever(stopped: Stopped) -> Any:
    """An agent that streams until it is cancelled, and records when it was."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        try:
            yield agui.TextMessageStartEvent(message_id="m")
            while True:
                yield agui.TextMessageContentEvent(message_id="m", delta=".")
                await asyncio.sleep(0.01)
        finally:
            stopped.set()

    return agent


# ── streaming ──────────────────────────────────────────────────────────────────────────────────


def waits_for(seen: threading.Event) -> Any:
    """An agent that sends a message start, then waits (3 s at most) for the client to have
    received it before it says whether it was released."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        for _ in range(300):
            if seen.is_set():
                break
            await asyncio.sleep(0.01)
        yield agui.TextMessageContentEvent(
            message_id="m", delta="released" if seen.is_set() else "timed out"
        )
        yield agui.TextMessageEndEvent(message_id="m")

    return agent


def test_run_yields_typed_events_as_they_arrive(serve: Serve) -> None:
    """Client: `run` yields each event, as its model class, when its frame arrives (the agent
    only goes on once the client has the event)."""
    seen = threading.Event()
    url = serve(AgentApp(waits_for(seen)))

    async def main() -> list[Any]:
        events = []
        async for event in HttpAgent(url).run(run_input()):
            events.append(event)
            if isinstance(event, agui.TextMessageStartEvent):
                seen.set()
        return events

    events = asyncio.run(main())
    assert [type(e) for e in events] == [
        agui.RunStartedEvent,
        agui.TextMessageStartEvent,
        agui.TextMessageContentEvent,
        agui.TextMessageEndEvent,
        agui.RunFinishedEvent,
    ]
    assert events[0] == agui.RunStartedEvent(
        thread_id="thread-1", run_id="run-1", protocol_version="1.0"
    )
    assert text_of(events) == "released"


def test_run_sync_yields_typed_events_as_they_arrive(serve: Serve) -> None:
    """Client: `run_sync` streams the same way without an event loop."""
    seen = threading.Event()
    url = serve(AgentApp(waits_for(seen)))
    events = []
    for event in HttpAgent(url).run_sync(run_input()):
        events.append(event)
        if isinstance(event, agui.TextMessageStartEvent):
            seen.set()
    assert isinstance(events[0], agui.RunStartedEvent)
    assert isinstance(events[-1], agui.RunFinishedEvent)
    assert text_of(events) == "released"


def test_run_sync_and_run_give_the_same_demo_run(serve: Serve) -> None:
    """Client: `run_sync` and `run` decode the demo agent's whole run alike (every event typed,
    the run's ids kept, the answer text complete)."""
    url = serve(demo_app())
    synced = list(HttpAgent(url).run_sync(run_input(text="hi")))
    awaited = asyncio.run(collect(HttpAgent(url), run_input(text="hi")))
    assert [type(e) for e in synced] == [type(e) for e in awaited]
    assert not any(isinstance(e, agui.UnknownEvent) for e in synced)
    assert synced[-1].run_id == "run-1" and synced[-1].thread_id == "thread-1"
    assert text_of(synced) == text_of(awaited) == "You said: hi (2 characters)."


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_headers_are_sent(serve: Serve, mode: str) -> None:
    """Client: the configured headers go with the request, beside the JSON content type and the
    event-stream Accept."""
    seen: list[dict[str, str]] = []
    inner = demo_app()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await inner(scope, receive, send)

    agent = HttpAgent(serve(app), headers={"Authorization": "Bearer t0k", "X-Tenant": "acme"})
    events: list[Any] = []
    drain(agent, mode, events)
    assert isinstance(events[-1], agui.RunFinishedEvent)
    [headers] = seen
    assert headers["authorization"] == "Bearer t0k"
    assert headers["x-tenant"] == "acme"
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "text/event-stream"


def test_the_request_body_is_the_encoded_input(serve: Serve) -> None:
    """Client: the POST body is the RunAgentInput's canonical JSON (the agent receives it whole),
    with the protocolVersion of this 1.0 client when the input has none (the TypeScript client
    sends it too; without it a server sends the stream of a pre-1.0 client); a version the input
    carries is sent as it is."""
    received: list[agui.RunAgentInput] = []

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        received.append(input)
        yield agui.TextMessageStartEvent(message_id="m")

    sent = agui.RunAgentInput(
        thread_id="t",
        run_id="r",
        messages=(agui.UserMessage(id="u", content="hi \u2028 there"),),
        state={"n": 1},
        forwarded_props={"interrupt": False},
    )
    asyncio.run(collect(HttpAgent(serve(AgentApp(agent))), sent))
    assert received == [attrs.evolve(sent, protocol_version=agui.PROTOCOL_VERSION)]
    older = attrs.evolve(sent, protocol_version="0.0.59")
    asyncio.run(collect(HttpAgent(serve(AgentApp(agent))), older))
    assert received[-1] == older


# ── errors ─────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_non_2xx_raises_http_error_with_status_and_message(serve: Serve, mode: str) -> None:
    """Client: a non-2xx answer raises HttpError carrying the status and the server's message,
    and yields no event."""
    cases = [
        (serve(AgentApp(DemoAgent(), path="/agent")) + "/elsewhere", 404, "nothing is served at"),
        (serve(raw_app([b"overloaded, retry later"], 503, b"text/plain")), 503, "overloaded"),
    ]
    for url, status, message in cases:
        events: list[Any] = []
        with pytest.raises(HttpError) as caught:
            drain(HttpAgent(url), mode, events)
        assert caught.value.status == status
        assert message in caught.value.message
        assert str(status) in str(caught.value)
        assert events == []


def frame(doc: bytes) -> bytes:
    return b"data: " + doc + b"\n\n"


STARTED = frame(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}')
FINISHED = frame(b'{"type":"RUN_FINISHED","threadId":"t","runId":"r"}')


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_json_error_answer_gives_the_servers_problems(serve: Serve, mode: str) -> None:
    """Client: AgentApp's 400 answer `{"error", "problems": [...]}` is parsed: HttpError carries
    the error as its message and the problems as agui.Problem objects, and says both."""
    url = serve(AgentApp(DemoAgent(delay=0)))
    answer = agui.ResumeEntry(interrupt_id="nobody-asked", status=agui.ResumeStatus.RESOLVED)
    with pytest.raises(HttpError) as caught:
        drain(HttpAgent(url), mode, [], attrs.evolve(run_input(), resume=(answer,)))
    error = caught.value
    assert error.status == 400
    assert error.message == "the agent cannot run this input"
    assert [(p.pointer, p.kind) for p in error.problems] == [
        ("/resume/0/interruptId", "unknown_interrupt")
    ]
    assert isinstance(error.problems[0], agui.Problem)
    assert "/resume/0/interruptId" in str(error) and "HTTP 400" in str(error)


def test_a_non_json_error_answer_has_no_problems(serve: Serve) -> None:
    """Client: a JSON answer without "error", or JSON served as text, stays the server's text."""
    for body, media in [(b'{"detail": "nope"}', b"application/json"), (b'{"error": "x"}', None)]:
        with pytest.raises(HttpError) as caught:
            list(HttpAgent(serve(raw_app([body], 422, media))).run_sync(run_input()))
        assert caught.value.message == body.decode() and caught.value.problems == ()


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize(
    ("content_type", "named"),
    [
        (b"text/html; charset=utf-8", "got text/html"),
        (b"application/json", "got application/json"),
        (None, "got no content type"),
    ],
)
def test_an_answer_that_is_no_event_stream_is_an_error_naming_its_type(
    serve: Serve, mode: str, content_type: bytes | None, named: str
) -> None:
    """Client: a 200 whose content type is neither SSE nor the protobuf media type raises
    StreamError naming it (an HTML page is not read as an empty stream)."""
    url = serve(raw_app([b"<!doctype html><p>Sign in</p>"], 200, content_type))
    events: list[Any] = []
    with pytest.raises(StreamError) as caught:
        drain(HttpAgent(url), mode, events)
    assert f"expected text/event-stream, {named}" in str(caught.value)
    assert url in str(caught.value) and events == []
    with pytest.raises(StreamError) as caught:
        list(HttpAgent(url, binary=True).run_sync(run_input()))
    assert "expected application/vnd.ag-ui.event+proto or text/event-stream" in str(caught.value)


def redirecting(status: int, seen: list[tuple[str, bytes]]) -> Any:
    """An app that answers /old with `status` to /new, and /new with a whole run, recording the
    method and body /new got."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"] == "/old":
            headers = [(b"location", b"new")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        seen.append((scope["method"], body))
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": STARTED + FINISHED})

    return app


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize(("status", "method"), [(307, "POST"), (308, "POST"), (303, "GET")])
def test_redirects_are_followed_as_fetch_follows_them(
    serve: Serve, mode: str, status: int, method: str
) -> None:
    """Client: a redirect is followed; 307 and 308 repeat the POST with its body, 303 becomes a
    GET without one (as fetch does)."""
    seen: list[tuple[str, bytes]] = []
    url = serve(redirecting(status, seen)) + "/old"
    events: list[Any] = []
    drain(HttpAgent(url), mode, events)
    assert [type(e) for e in events] == [agui.RunStartedEvent, agui.RunFinishedEvent]
    body = agui.encode(attrs.evolve(run_input(), protocol_version=agui.PROTOCOL_VERSION))
    assert seen == [(method, body if method == "POST" else b"")]


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_refused_connection_is_a_transport_error_naming_the_url(mode: str) -> None:
    """Client: a connection failure is agui.TransportError (an AguiError) naming the URL, with
    httpx's exception as its cause."""
    url = f"http://127.0.0.1:{free_port()}/agent"
    with pytest.raises(agui.TransportError) as caught:
        drain(HttpAgent(url), mode, [])
    assert isinstance(caught.value, agui.AguiError)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert caught.value.url == url and f"Cannot connect to {url}" in str(caught.value)


def test_an_async_read_timeout_is_a_transport_error_naming_the_url(serve: Serve) -> None:
    """Client: `run` turns a silent server's ReadTimeout into TransportError too."""

    async def silent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        await asyncio.sleep(2)

    url = serve(AgentApp(silent, keepalive=None))
    with pytest.raises(agui.TransportError) as caught:
        asyncio.run(collect(HttpAgent(url, timeout=0.3)))
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    assert str(caught.value) == f"Timed out waiting for data from {url} (ReadTimeout)"


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize(
    "chunks",
    [
        [STARTED, frame(b"{not json}")],
        [STARTED + frame(b"{not json}")],
        [b": keep-alive\n\n", STARTED, b": keep-alive\n\n" + frame(b"{not json}")],
    ],
    ids=["separate-chunks", "one-chunk", "after-comments"],
)
def test_malformed_frame_raises_stream_error_naming_it(
    serve: Serve, mode: str, chunks: list[bytes]
) -> None:
    """Client: a frame that is not JSON raises StreamError naming its number (comments do not
    count), after the events before it were yielded."""
    url = serve(raw_app(chunks))
    events: list[Any] = []
    with pytest.raises(StreamError) as caught:
        drain(HttpAgent(url), mode, events)
    assert caught.value.frame == 2
    assert "frame 2" in str(caught.value)
    assert [type(e) for e in events] == [agui.RunStartedEvent]


def test_a_frame_that_is_no_valid_event_raises_stream_error_with_problems(serve: Serve) -> None:
    """Client: valid JSON that is not a valid event raises StreamError naming the frame and
    listing the problems with their pointers."""
    url = serve(raw_app([STARTED, frame(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}')]))
    with pytest.raises(StreamError) as caught:
        list(HttpAgent(url).run_sync(run_input()))
    assert caught.value.frame == 2
    assert ("/delta", "missing") in [(p.pointer, p.kind) for p in caught.value.problems]


def test_an_oversized_frame_raises_stream_error_naming_it(serve: Serve) -> None:
    """Client: a frame over max_frame_bytes raises StreamError naming that frame, even when it
    arrives in one network chunk with the frames before it (which are still yielded)."""
    big = frame(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"' + b"x" * 500 + b'"}')
    url = serve(raw_app([STARTED + STARTED + big]))
    events: list[Any] = []
    with pytest.raises(StreamError) as caught:
        events.extend(HttpAgent(url, max_frame_bytes=200).run_sync(run_input()))
    assert caught.value.frame == 3, caught.value
    assert "frame 3" in str(caught.value)
    assert len(events) == 2


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_final_frame_without_its_blank_line_is_still_an_event(serve: Serve, mode: str) -> None:
    """Client: a stream whose last frame lacks its blank line still yields that event."""
    url = serve(raw_app([STARTED, b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}']))
    events: list[Any] = []
    drain(HttpAgent(url), mode, events)
    assert [type(e) for e in events] == [agui.RunStartedEvent, agui.RunFinishedEvent]


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_content_encoded_stream_is_decoded(serve: Serve, mode: str) -> None:
    """Client: an answer with Content-Encoding (gzip) is read decoded; one without it is read as
    httpx's raw chunks (the frames are the same either way)."""
    import gzip

    frames = STARTED + b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
    body = gzip.compress(frames)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for at in range(0, len(body), 7):  # the compressed bytes in small pieces
            chunk = body[at : at + 7]
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    for url in (serve(app), serve(raw_app([frames]))):
        events: list[Any] = []
        drain(HttpAgent(url), mode, events)
        assert [type(e) for e in events] == [agui.RunStartedEvent, agui.RunFinishedEvent]


def test_timeout_applies_between_reads_and_keep_alives_reset_it(serve: Serve) -> None:
    """Client: the timeout bounds a silent read (a TransportError naming the URL, caused by
    httpx's ReadTimeout), and the server's keep-alive comments keep a quiet but healthy run
    within it."""

    async def slow(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        await asyncio.sleep(0.8)
        yield agui.TextMessageEndEvent(message_id="m")

    silent = serve(AgentApp(slow, keepalive=None))
    with pytest.raises(agui.TransportError) as caught:
        list(HttpAgent(silent, timeout=0.3).run_sync(run_input()))
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    assert caught.value.url == silent and silent in str(caught.value)
    chatty = serve(AgentApp(slow, keepalive=0.1))
    events = list(HttpAgent(chatty, timeout=0.3).run_sync(run_input()))
    assert isinstance(events[-1], agui.RunFinishedEvent)


# ── early close, injected clients ──────────────────────────────────────────────────────────────


def test_closing_the_async_iterator_early_closes_the_connection(serve: Serve) -> None:
    """Client: `aclose()` after the first event closes the connection, so the server cancels
    the agent (which would stream forever otherwise)."""
    stopped = Stopped()
    url = serve(AgentApp(forever(stopped)))

    async def main() -> Any:
        events = HttpAgent(url).run(run_input())
        first = await anext(events)
        assert not stopped.event.is_set()
        await events.aclose()  # type: ignore[attr-defined]
        return first

    assert isinstance(asyncio.run(main()), agui.RunStartedEvent)
    assert stopped.event.wait(HANG), "the server's agent ran on after the close"  # hang bound


def test_closing_the_sync_iterator_early_closes_the_connection(serve: Serve) -> None:
    """Client: closing the `run_sync` generator early closes the connection too."""
    stopped = Stopped()
    url = serve(AgentApp(forever(stopped)))
    events = HttpAgent(url).run_sync(run_input())
    assert isinstance(next(events), agui.RunStartedEvent)
    assert not stopped.event.is_set()
    events.close()  # type: ignore[attr-defined]
    assert stopped.event.wait(HANG), "the server's agent ran on after the close"  # hang bound


def test_an_injected_async_client_is_used_and_left_open(serve: Serve) -> None:
    """Client: an injected httpx.AsyncClient carries every run (its hooks see each request),
    also after an early close, and HttpAgent never closes it."""
    url = serve(demo_app())
    requests: list[str] = []

    async def hook(request: httpx.Request) -> None:
        requests.append(str(request.url))

    async def main() -> bool:
        async with httpx.AsyncClient(event_hooks={"request": [hook]}) as client:
            agent = HttpAgent(url, client=client)
            first = await collect(agent)
            second = await collect(agent)
            assert text_of(first) == text_of(second) == "You said: hi (2 characters)."
            stream = agent.run(run_input())
            await anext(stream)
            await stream.aclose()  # type: ignore[attr-defined]
            assert not client.is_closed
            third = await collect(agent)
            assert isinstance(third[-1], agui.RunFinishedEvent)
            return client.is_closed

    assert asyncio.run(main()) is False
    assert requests == [url] * 4


def test_an_injected_sync_client_is_used_and_left_open(serve: Serve) -> None:
    """Client: an injected httpx.Client carries `run_sync` runs and is not closed."""
    url = serve(demo_app())
    requests: list[str] = []
    with httpx.Client(event_hooks={"request": [lambda r: requests.append(str(r.url))]}) as client:
        agent = HttpAgent(url, sync_client=client)
        for _ in range(2):
            assert text_of(list(agent.run_sync(run_input()))) == "You said: hi (2 characters)."
        assert not client.is_closed
    assert requests == [url] * 2


# ── the client is an Agent ─────────────────────────────────────────────────────────────────────


def test_http_agent_is_an_agent_served_as_a_proxy(serve: Serve) -> None:
    """Agent: HttpAgent is an Agent; AgentApp(HttpAgent(upstream)) proxies the demo server and
    every event passes through unchanged (no second RUN_STARTED, no extra terminal event)."""
    upstream = serve(demo_app())
    upstream_agent = HttpAgent(upstream)
    assert isinstance(upstream_agent, agui.Agent)
    proxy = serve(AgentApp(upstream_agent))
    direct = list(HttpAgent(upstream).run_sync(run_input(text="via proxy")))
    proxied = list(HttpAgent(proxy).run_sync(run_input(text="via proxy")))
    assert [type(e) for e in proxied] == [type(e) for e in direct]
    assert proxied[0] == direct[0]  # RUN_STARTED with the same ids and version
    assert text_of(proxied) == "You said: via proxy (9 characters)."
    snapshots = [e for e in proxied if isinstance(e, agui.StateSnapshotEvent)]
    assert snapshots == [e for e in direct if isinstance(e, agui.StateSnapshotEvent)]
    assert proxied[-1].usage == direct[-1].usage
    assert [e.content for e in proxied if isinstance(e, agui.ToolCallResultEvent)] == ["9"]


def test_a_client_leaving_the_proxy_cancels_the_upstream_agent(serve: Serve) -> None:
    """Agent: when the client of a proxy leaves, the proxy stops its HttpAgent, which closes its
    upstream connection, so the upstream agent is cancelled too."""
    stopped = Stopped()
    upstream = serve(AgentApp(forever(stopped)))
    proxy = serve(AgentApp(HttpAgent(upstream)))
    events = HttpAgent(proxy).run_sync(run_input())
    assert isinstance(next(events), agui.RunStartedEvent)
    assert isinstance(next(events), agui.TextMessageStartEvent)
    events.close()  # type: ignore[attr-defined]
    assert stopped.event.wait(HANG), "the upstream agent ran on"  # hang bound


# ── the command line ───────────────────────────────────────────────────────────────────────────


def cli_env() -> dict[str, str]:
    """The environment for a command line run: stdout buffered as it is for users (a pipe is
    block-buffered unless the command flushes), whatever this test run's environment says."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def agui_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agui", *args],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS,
        check=False,
        env=cli_env(),
    )


def test_cli_run_prints_the_assistant_text(serve: Serve) -> None:
    """CLI: `agui run URL --message hi` prints the demo agent's run as a person reads it (its
    reasoning, its tool call and result, its answer), the outcome on stderr, exit 0."""
    url = serve(demo_app())
    done = agui_cli("run", url, "--message", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "reasoning: The user said 'hi'; I will count its characters, then echo it.",
        'tool call: count_characters({"text":"hi"})',
        "tool result: 2",
        "You said: hi (2 characters).",
    ]
    assert done.stderr == "agui run: completed\n"


def test_cli_run_json_prints_one_event_per_line(serve: Serve) -> None:
    """CLI: `agui run --json` prints every event as one JSON line, RUN_STARTED first and
    RUN_FINISHED last, each a valid event."""
    url = serve(demo_app())
    done = agui_cli("run", url, "--message", "hi", "--json")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    docs = [json.loads(line) for line in lines]
    assert docs[0]["type"] == "RUN_STARTED" and docs[-1]["type"] == "RUN_FINISHED"
    assert len(docs) > 10
    for line in lines:
        agui.decode(line, strict=True)
    deltas = "".join(d["delta"] for d in docs if d["type"] == "TEXT_MESSAGE_CONTENT")
    assert deltas == "You said: hi (2 characters)."


def test_cli_run_prints_text_as_it_streams(serve: Serve) -> None:
    """CLI: `agui run` writes each piece of text as it arrives (the agent only goes on once the
    first piece is on the command's standard output)."""
    seen = threading.Event()

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        yield agui.TextMessageContentEvent(message_id="m", delta="first")
        for _ in range(500):  # 5 s at most
            if seen.is_set():
                break
            await asyncio.sleep(0.01)
        yield agui.TextMessageContentEvent(
            message_id="m", delta=" then released" if seen.is_set() else " timed out"
        )
        yield agui.TextMessageEndEvent(message_id="m")

    url = serve(AgentApp(agent))
    with subprocess.Popen(
        [sys.executable, "-m", "agui", "run", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    ) as proc:
        assert proc.stdout is not None
        out = b""
        deadline = time.monotonic() + SUBPROCESS
        while b"first" not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.1)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                out += chunk
        seen.set()
        rest, err = proc.communicate(timeout=SUBPROCESS)
    assert out == b"first", err
    assert (out + rest).decode() == "first then released\n"
    assert proc.returncode == 0


def test_cli_run_reports_an_http_error(serve: Serve) -> None:
    """CLI: a non-2xx answer is reported on stderr with its status, exit 1, no traceback."""
    url = serve(AgentApp(DemoAgent(), path="/agent"))
    done = agui_cli("run", url + "/nowhere", "--message", "hi")
    assert done.returncode == 1
    assert "HTTP 404" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_cli_demo_converses_with_the_demo_agent() -> None:
    """CLI: `agui demo` serves the demo agent on a loopback port, runs a conversation against it
    over HTTP and prints the assistant's answer; exit 0."""
    done = agui_cli("demo", "--message", "hello there")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "user: hello there" in lines
    assert "assistant: You said: hello there (11 characters)." in lines
    assert 'tool: count_characters({"text":"hello there"}) -> 11' in lines
    assert any(
        line.startswith("events: ") and "RUN_STARTED ... RUN_FINISHED" in line for line in lines
    )
    assert "Traceback" not in done.stderr


def test_cli_serve_serves_the_demo_agent() -> None:
    """CLI: `agui serve --port N --path /agent` serves the demo agent under uvicorn: a run
    streams through HttpAgent, other methods are refused, and Ctrl-C (SIGINT) stops it cleanly
    (exit 0, or 130 for an interrupt, and no traceback)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/agent"
    with subprocess.Popen(
        [sys.executable, "-m", "agui", "serve", "--port", str(port), "--path", "/agent"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    ) as proc:
        try:
            deadline = time.monotonic() + SUBPROCESS
            while True:
                assert proc.poll() is None, "agui serve exited"
                assert time.monotonic() < deadline, "agui serve did not start listening"
                try:
                    with httpx.Client(timeout=1) as client:
                        response = client.get(url)
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            assert response.status_code == 405
            events = list(HttpAgent(url).run_sync(run_input(text="served")))
            assert isinstance(events[0], agui.RunStartedEvent)
            assert isinstance(events[-1], agui.RunFinishedEvent)
            assert text_of(events) == "You said: served (6 characters)."
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=SUBPROCESS)
    assert proc.returncode in (0, 130), err
    assert b"Traceback" not in err
