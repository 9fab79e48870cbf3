"""HttpAgent as a production client (issue 20), against real uvicorn servers on 127.0.0.1 (the
`serve` fixture; small ASGI apps written here record what they see):

* a run is over at its terminal event: `HttpAgent.run` and `Conversation.run` return with the
  outcome right after it, and the client closes the response, even when the server (a proxy)
  keeps it open, over SSE and protobuf;
* one connection pool per agent: runs of a default HttpAgent share its connections, `async with`
  / `aclose()` and `with` / `close()` close them, an event loop that ends closes its client, and
  an injected client is never closed;
* retries before the first frame (connection errors, 429/502/503/504, Retry-After honoured), none
  after it; HttpError's url, status, headers and body excerpt; ConnectError and Timeout;
* a cut stream is resumed only when the server said it can (`Agui-Resumable: 1` on the run's
  answer, or capabilities with transport.resumable): no request to a route the server lacks.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socketserver
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import aclosing, contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

import agui
from agui import AgentApp, HttpAgent
from agui.cli.demo import DemoAgent, free_port
from agui.http.client import (
    INITIAL_RETRY_DELAY,
    MAX_RETRY_AFTER,
    MAX_RETRY_DELAY,
    ORPHAN_GRACE,
    RESUMABLE_HEADER,
    retry_delay,
)
from agui.wire.proto import PROTO_MEDIA_TYPE, proto_frame

from .conftest import run_input

Serve = Callable[[Any], str]
HANG = 30.0
"""A hang bound: how long a server holds a response open after the terminal event, and how long
a test waits for what takes milliseconds."""

STARTED = agui.RunStartedEvent(thread_id="thread-1", run_id="run-1")
FINISHED = agui.RunFinishedEvent(thread_id="thread-1", run_id="run-1")
SSE = b"text/event-stream"


def sse(*events: Any, ids: bool = False) -> bytes:
    """The events as SSE frames (numbered from 1 with `id:` when `ids`)."""
    return b"".join(agui.sse_frame(e, id=str(n) if ids else None) for n, e in enumerate(events, 1))


def text_events(count: int) -> list[Any]:
    """A run of `count` deltas: RUN_STARTED, a message in `count` pieces, RUN_FINISHED."""
    return [
        STARTED,
        agui.TextMessageStartEvent(message_id="m"),
        *(agui.TextMessageContentEvent(message_id="m", delta=f"{n} ") for n in range(count)),
        agui.TextMessageEndEvent(message_id="m"),
        FINISHED,
    ]


async def read_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


class Recorder:
    """What a test server saw: every request as (method, path, headers), when it came, and
    whether a client closed a response the server held open."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.times: list[float] = []
        self.ports: list[int] = []
        self.closed_by_client = threading.Event()

    def saw(self, scope: Any) -> None:
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append((scope["method"], scope["path"], headers))
        self.times.append(time.monotonic())
        self.ports.append(scope["client"][1])

    @property
    def paths(self) -> list[tuple[str, str]]:
        return [(method, path) for method, path, _ in self.requests]


# ── 1. a run is over at its terminal event ───────────────────────────────────────────────────


def held_open(recorder: Recorder, body: bytes, content_type: bytes) -> Any:
    """An app that answers with `body` (a whole run) and then keeps the response open, as a
    proxy may, until the client closes it (recorded) or HANG seconds pass."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        recorder.saw(scope)
        await read_body(receive)
        headers = [(b"content-type", content_type)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        try:
            async with asyncio.timeout(HANG):  # hang bound
                while (await receive())["type"] != "http.disconnect":
                    pass
            recorder.closed_by_client.set()
        except TimeoutError:
            await send({"type": "http.response.body", "body": b""})

    return app


TRANSPORTS = {
    "sse": (sse(STARTED, FINISHED), SSE, False),
    "protobuf": (proto_frame(STARTED) + proto_frame(FINISHED), PROTO_MEDIA_TYPE.encode(), True),
}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("mode", ["conversation", "conversation-sync", "run", "run-sync"])
def test_a_run_returns_at_its_terminal_event_while_the_server_holds_the_answer_open(
    serve: Serve, transport: str, mode: str
) -> None:
    """The issue's case: HttpAgent(url, timeout=3.0) and a server that keeps the response open
    after RUN_FINISHED. The run returns with its outcome (no ReadTimeout at 3 s, no wait for the
    server to close), and it is the client that closed the response."""
    body, content_type, binary = TRANSPORTS[transport]
    recorder = Recorder()
    url = serve(held_open(recorder, body, content_type))
    agent = HttpAgent(url, timeout=3.0, binary=binary)
    started = time.monotonic()
    if mode.startswith("conversation"):
        conversation = agui.Conversation("thread-1")
        if mode == "conversation":
            result = asyncio.run(conversation.run(agent, input=run_input()))
        else:
            result = conversation.run_sync(agent, input=run_input())
        assert result is not None and result.outcome == "success"
        assert conversation.failures == [] and conversation.outcome() == ("completed", None)
    else:
        if mode == "run":

            async def read() -> list[Any]:
                async with agent:
                    return [event async for event in agent.run(run_input())]

            events = asyncio.run(read())
        else:
            with agent:
                events = list(agent.run_sync(run_input()))
        assert events == [STARTED, FINISHED]
    assert time.monotonic() - started < HANG  # hang bound
    assert recorder.closed_by_client.wait(HANG), "the server had to end the response"
    assert len(recorder.requests) == 1


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_what_comes_at_once_after_the_terminal_event_is_still_read(serve: Serve, mode: str) -> None:
    """A frame that arrives with the terminal event (here a broken one, in the same chunk) is
    still read, as @ag-ui/client reads it, so the pipeline reports it; then the client closes
    the answer the server holds open."""
    recorder = Recorder()
    url = serve(held_open(recorder, sse(STARTED, FINISHED) + b"data: {not json}\n\n", SSE))
    conversation = agui.Conversation("thread-1")
    agent = HttpAgent(url)
    with pytest.raises(agui.StreamError) as caught:
        if mode == "sync":
            conversation.run_sync(agent, input=run_input())
        else:
            asyncio.run(conversation.run(agent, input=run_input()))
    assert caught.value.frame == 3
    assert recorder.closed_by_client.wait(HANG)  # hang bound


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_second_run_right_after_the_first_is_read(serve: Serve, mode: str) -> None:
    """A stream may carry several runs: one that starts as the first ends is read, and the
    stream ends after its own terminal event, the answer still held open."""
    recorder = Recorder()
    second = [
        agui.RunStartedEvent(thread_id="thread-1", run_id="run-2"),
        agui.RunFinishedEvent(thread_id="thread-1", run_id="run-2"),
    ]
    url = serve(held_open(recorder, sse(STARTED, FINISHED, *second), SSE))
    agent = HttpAgent(url, timeout=3.0)
    if mode == "sync":
        events = list(agent.run_sync(run_input()))
    else:

        async def read() -> list[Any]:
            return [event async for event in agent.run(run_input())]

        events = asyncio.run(read())
    assert events == [STARTED, FINISHED, *second]
    assert recorder.closed_by_client.wait(HANG)  # hang bound


def test_a_thread_stream_goes_on_past_its_history_run(serve: Serve) -> None:
    """A thread's stream (connect) holds several runs: it is read until the server ends it, not
    to its first terminal event."""
    history = [
        agui.RunStartedEvent(thread_id="thread-1", run_id="thread-1:history"),
        agui.RunFinishedEvent(thread_id="thread-1", run_id="thread-1:history"),
    ]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await read_body(receive)
        headers = [(b"content-type", SSE)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = sse(*history) + sse(STARTED, FINISHED, ids=True)
        await send({"type": "http.response.body", "body": body})

    async def read() -> list[Any]:
        async with HttpAgent(serve(app)) as agent:
            return [event async for event in agent.connect("thread-1")]

    assert asyncio.run(read()) == [*history, STARTED, FINISHED]


# ── 2. one connection pool per agent ───────────────────────────────────────────────────────────


def recording(recorder: Recorder, app: Any) -> Any:
    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        recorder.saw(scope)
        await app(scope, receive, send)

    return wrapped


def test_the_runs_of_a_default_agent_share_its_connection(serve: Serve) -> None:
    """Without `client=`, the runs of one HttpAgent go over one pooled connection (the server
    sees one client port), a run's answer ending at its terminal event (AgentApp's) leaves it
    reusable, and `async with` closes the pool."""
    recorder = Recorder()
    url = serve(recording(recorder, AgentApp(DemoAgent(delay=0))))

    async def main() -> None:
        async with HttpAgent(url) as agent:
            for n in range(3):
                conversation = agui.Conversation()
                result = await conversation.run(agent, f"hi {n}")
                assert result is not None and result.outcome == "success"
            await agent.capabilities()

    asyncio.run(main())
    assert len(recorder.ports) == 4
    assert len(set(recorder.ports)) == 1, recorder.ports


def test_the_sync_requests_of_a_default_agent_share_its_connection(serve: Serve) -> None:
    """The same for the sync side (`with` closes it): runs, capabilities and stop, on one
    connection."""
    recorder = Recorder()
    url = serve(recording(recorder, AgentApp(DemoAgent(delay=0), store="memory://")))
    with HttpAgent(url) as agent:
        for n in range(3):
            result = agui.Conversation().run_sync(agent, f"hi {n}")
            assert result is not None and result.outcome == "success"
        agent.capabilities_sync()
        with pytest.raises(agui.HttpError) as caught:
            agent.stop_sync("no-such-run")
        assert caught.value.status == 404
    assert len(recorder.ports) == 5 and len(set(recorder.ports)) == 1, recorder.ports


def test_an_ended_event_loop_closes_the_agents_client(serve: Serve) -> None:
    """A default agent used in asyncio.run, then dropped, leaves no connection to the garbage
    collector (no ResourceWarning), and the same agent works in a later event loop."""
    url = serve(AgentApp(DemoAgent(delay=0)))

    async def one(agent: HttpAgent) -> str:
        result = await agui.Conversation().run(agent, "hi")
        assert result is not None
        return result.outcome

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = HttpAgent(url)
        assert asyncio.run(one(agent)) == "success"
        assert asyncio.run(one(agent)) == "success"  # a new loop: a new client
        capabilities = asyncio.run(agent.capabilities())
        assert capabilities.transport is not None
        agent.capabilities_sync()  # its sync client, kept
        del agent  # closed by the agent's finalizer
        for _ in range(3):
            gc.collect()

        for _ in range(10):  # agents dropped as their loop ends: its shutdown closes them
            asyncio.run(HttpAgent(url).capabilities())
            assert asyncio.run(one(HttpAgent(url))) == "success"
        for _ in range(3):
            gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_an_agent_dropped_while_its_loop_runs_has_its_client_closed(serve: Serve) -> None:
    """A server that makes an HttpAgent per request: each dropped agent's client is closed by
    the loop ORPHAN_GRACE seconds later (its connections do not pile up until the loop ends)."""
    url = serve(AgentApp(DemoAgent(delay=0)))

    async def main() -> None:
        agent = HttpAgent(url)
        await agent.capabilities()
        [watched] = agent._async_clients.by_loop.values()  # white box: the agent's own client
        client = watched.client
        del agent, watched
        gc.collect()
        assert not client.is_closed  # not at once: the loop may be ending (see the docstring)
        deadline = time.monotonic() + ORPHAN_GRACE + HANG
        while not client.is_closed and time.monotonic() < deadline:  # hang bound
            await asyncio.sleep(0.05)
        assert client.is_closed

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_aclose_and_close_close_the_pools_and_a_later_run_opens_new_ones(serve: Serve) -> None:
    recorder = Recorder()
    url = serve(recording(recorder, AgentApp(DemoAgent(delay=0))))

    async def main() -> None:
        agent = HttpAgent(url)
        await agent.capabilities()
        await agent.aclose()
        await agent.capabilities()  # a new connection
        await agent.aclose()

    asyncio.run(main())
    agent = HttpAgent(url)
    agent.capabilities_sync()
    agent.close()
    agent.capabilities_sync()
    agent.close()
    assert len(set(recorder.ports)) == 4, recorder.ports


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_an_injected_client_is_never_closed(serve: Serve, mode: str) -> None:
    url = serve(AgentApp(DemoAgent(delay=0)))
    if mode == "sync":
        with httpx.Client() as client:
            with HttpAgent(url, sync_client=client) as agent:
                list(agent.run_sync(run_input()))
            agent.close()
            assert not client.is_closed
        return

    async def main() -> None:
        async with httpx.AsyncClient() as client:
            async with HttpAgent(url, client=client) as agent:
                [event async for event in agent.run(run_input())]
            await agent.aclose()
            assert not client.is_closed

    asyncio.run(main())


# ── 3. retries ────────────────────────────────────────────────────────────────────────────────


def flaky(recorder: Recorder, failures: int, status: int = 503, **headers: str) -> Any:
    """An app that answers the first `failures` requests with `status` (and `headers`, e.g.
    Retry-After), then with a whole run (or capabilities, for GET)."""
    extra = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        recorder.saw(scope)
        await read_body(receive)
        if len(recorder.requests) <= failures:
            answer = [(b"content-type", b"text/plain"), *extra]
            await send({"type": "http.response.start", "status": status, "headers": answer})
            await send({"type": "http.response.body", "body": b"busy, try later"})
            return
        if scope["method"] == "GET":
            kind, body = b"application/json", b'{"transport": {"streaming": true}}'
        else:
            kind, body = SSE, sse(STARTED, FINISHED)
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]}
        )
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_503_with_retry_after_is_retried_after_the_wait_it_asks_for(
    serve: Serve, mode: str
) -> None:
    """503 + Retry-After: 1, twice, then the run: the default client completes it; the server saw
    three POSTs, each retry at least the Retry-After after the one before (the default backoff
    would have waited at most INITIAL_RETRY_DELAY the first time)."""
    recorder = Recorder()
    url = serve(flaky(recorder, 2, 503, retry_after="1"))
    conversation = agui.Conversation("thread-1")
    if mode == "sync":
        result = conversation.run_sync(HttpAgent(url), input=run_input())
    else:
        result = asyncio.run(conversation.run(HttpAgent(url), input=run_input()))
    assert result is not None and result.outcome == "success"
    assert recorder.paths == [("POST", "/")] * 3
    first, second, third = recorder.times
    assert second - first >= 0.95 and third - second >= 0.95
    assert INITIAL_RETRY_DELAY < 0.95


@pytest.mark.parametrize("status", [429, 502, 504])
def test_the_other_retried_statuses(serve: Serve, status: int) -> None:
    recorder = Recorder()
    url = serve(flaky(recorder, 1, status, retry_after="0"))
    assert list(HttpAgent(url).run_sync(run_input())) == [STARTED, FINISHED]
    assert len(recorder.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 500])
def test_other_errors_are_not_retried(serve: Serve, status: int) -> None:
    recorder = Recorder()
    url = serve(flaky(recorder, 5, status, retry_after="0"))
    with pytest.raises(agui.HttpError) as caught:
        list(HttpAgent(url).run_sync(run_input()))
    assert caught.value.status == status and caught.value.attempts == 1
    assert len(recorder.requests) == 1


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_without_retries_the_http_error_carries_url_status_headers_and_body(
    serve: Serve, mode: str
) -> None:
    recorder = Recorder()
    url = serve(flaky(recorder, 5, 503, retry_after="1"))
    agent = HttpAgent(url, max_retries=0)
    with pytest.raises(agui.HttpError) as caught:
        if mode == "sync":
            list(agent.run_sync(run_input()))
        else:
            asyncio.run(agui.Conversation().run(agent, "hi"))
    error = caught.value
    assert len(recorder.requests) == 1
    assert (error.url, error.status, error.attempts) == (url, 503, 1)
    assert error.headers["Retry-After"] == "1" and error.headers["retry-after"] == "1"
    assert error.body == b"busy, try later" and error.message == "busy, try later"
    assert str(error) == f"HTTP 503: busy, try later (from {url})"


def test_the_body_excerpt_is_capped(serve: Serve) -> None:
    """A large error page is kept as its first BODY_EXCERPT bytes, in `body` and the message."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await read_body(receive)
        headers = [(b"content-type", b"text/html")]
        await send({"type": "http.response.start", "status": 502, "headers": headers})
        await send({"type": "http.response.body", "body": b"<p>" + b"x" * 20_000})

    with pytest.raises(agui.HttpError) as caught:
        list(HttpAgent(serve(app), max_retries=0).run_sync(run_input()))
    error = caught.value
    assert len(error.body) == agui.errors.BODY_EXCERPT == 512
    assert error.body.startswith(b"<p>xxx")
    assert len(str(error)) < 700 and error.message.endswith(" ...")


def test_after_all_retries_the_error_says_how_many_attempts(serve: Serve) -> None:
    recorder = Recorder()
    url = serve(flaky(recorder, 5, 503, retry_after="0"))
    with pytest.raises(agui.HttpError) as caught:
        list(HttpAgent(url, max_retries=2).run_sync(run_input()))
    assert len(recorder.requests) == 3 and caught.value.attempts == 3
    assert str(caught.value) == f"HTTP 503: busy, try later (from {url}, after 3 attempts)"


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_refused_connection_is_a_connect_error_after_the_retries(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing listens: ConnectError (a TransportError) naming the URL after max_retries more
    attempts, each retry logged on agui.client; with max_retries=0, one attempt."""
    url = f"http://127.0.0.1:{free_port()}/agent"
    for retries in (2, 0):
        caplog.clear()
        agent = HttpAgent(url, max_retries=retries)
        with caplog.at_level(logging.INFO, logger="agui.client"):
            with pytest.raises(agui.ConnectError) as caught:
                if mode == "sync":
                    list(agent.run_sync(run_input()))
                else:
                    asyncio.run(agui.Conversation().run(agent, "hi"))
        error = caught.value
        assert isinstance(error, agui.TransportError) and isinstance(error, agui.AguiError)
        assert isinstance(error.__cause__, httpx.ConnectError)
        assert error.url == url and f"Cannot connect to {url}" in str(error)
        assert error.attempts == retries + 1
        retried = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retrying")]
        assert len(retried) == retries, retried
        assert all(f"retrying POST {url} in " in line for line in retried)
        if retries:
            assert str(error).endswith(f"(after {retries + 1} attempts)")


@contextmanager
def drops_first_connections(dropped: int) -> Iterator[tuple[str, list[str]]]:
    """A bare HTTP/1.1 server on 127.0.0.1 (a thread): it reads each request and closes the
    first `dropped` connections without answering (as a server closing an idle pooled
    connection does), then answers with a whole run. Yields its URL and the requests' first
    lines."""
    seen: list[str] = []
    body = sse(STARTED, FINISHED)
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
    )

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            head = b""
            while b"\r\n\r\n" not in head:
                data = self.request.recv(65536)
                if not data:
                    return
                head += data
            lines = head.split(b"\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in lines
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            rest = len(head.split(b"\r\n\r\n", 1)[1])
            while rest < length:
                rest += len(self.request.recv(65536))
            seen.append(lines[0].decode())
            if len(seen) > dropped:
                self.request.sendall(answer)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/agent", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(HANG)


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_connection_closed_before_the_answer_is_retried(mode: str) -> None:
    """The server drops the connection without answering, twice: the request is made again each
    time, and the run completes."""
    with drops_first_connections(2) as (url, seen):
        agent = HttpAgent(url)
        if mode == "sync":
            events = list(agent.run_sync(run_input()))
        else:

            async def read() -> list[Any]:
                async with agent:
                    return [event async for event in agent.run(run_input())]

            events = asyncio.run(read())
    assert events == [STARTED, FINISHED]
    assert seen == ["POST /agent HTTP/1.1"] * 3


def cut_after_first_frame(recorder: Recorder) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        recorder.saw(scope)
        await read_body(receive)
        headers = [(b"content-type", SSE)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": sse(STARTED), "more_body": True})
        await asyncio.sleep(0.05)
        raise RuntimeError("the stream is cut")  # uvicorn aborts the connection

    return app


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_nothing_is_retried_after_the_first_frame(serve: Serve, mode: str) -> None:
    recorder = Recorder()
    url = serve(cut_after_first_frame(recorder))
    conversation = agui.Conversation("thread-1")
    with pytest.raises(agui.TransportError) as caught:
        if mode == "sync":
            conversation.run_sync(HttpAgent(url), input=run_input())
        else:
            asyncio.run(conversation.run(HttpAgent(url), input=run_input()))
    assert recorder.paths == [("POST", "/")]
    assert caught.value.attempts == 1 and caught.value.url == url
    assert conversation.runs[0].outcome == "truncated"


def test_a_read_timeout_is_a_timeout_and_is_not_retried(serve: Serve) -> None:
    recorder = Recorder()

    async def silent(scope: Any, receive: Any, send: Any) -> None:
        recorder.saw(scope)
        await read_body(receive)
        await asyncio.sleep(2)

    url = serve(silent)
    with pytest.raises(agui.Timeout) as caught:
        list(HttpAgent(url, timeout=0.3).run_sync(run_input()))
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    assert str(caught.value) == f"Timed out waiting for data from {url} (ReadTimeout)"
    assert len(recorder.requests) == 1


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_capabilities_and_stop_are_retried_too(serve: Serve, mode: str) -> None:
    recorder = Recorder()
    agent = HttpAgent(serve(flaky(recorder, 1, 503, retry_after="0")))
    stopped = Recorder()
    stopper = HttpAgent(serve(flaky(stopped, 2, 429, retry_after="0")))
    if mode == "sync":
        capabilities = agent.capabilities_sync()
        stopper.stop_sync("run-1")
    else:
        capabilities = asyncio.run(agent.capabilities())
        asyncio.run(stopper.stop("run-1"))
    assert capabilities.transport == agui.TransportCapabilities(streaming=True)
    assert recorder.paths == [("GET", "/capabilities")] * 2
    assert stopped.paths == [("POST", "/runs/run-1/stop")] * 3


def test_the_backoff_and_retry_after() -> None:
    """openai-python's backoff without a Retry-After; the header's seconds or HTTP date, capped,
    when there is one."""
    for retry, full in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (9, 8.0)]:
        delays = [retry_delay(retry) for _ in range(200)]
        assert all(full * 0.75 <= d <= full for d in delays), retry
        assert len(set(delays)) > 1
    assert MAX_RETRY_DELAY == 8.0 and MAX_RETRY_AFTER == 60.0
    assert retry_delay(1, {"retry-after": "3"}) == 3.0
    assert retry_delay(1, {"retry-after": "1.5"}) == 1.5
    assert retry_delay(1, {"retry-after": "3600"}) == MAX_RETRY_AFTER
    assert retry_delay(1, {"retry-after": "-4"}) == 0.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=10), usegmt=True)
    assert 8.0 <= retry_delay(1, {"retry-after": later}) <= 10.0
    earlier = format_datetime(datetime.now(UTC) - timedelta(seconds=10), usegmt=True)
    assert retry_delay(1, {"retry-after": earlier}) == 0.0
    for unreadable in ("soon", "", "nan"):
        assert 0.375 <= retry_delay(1, {"retry-after": unreadable}) <= 0.5


def test_max_retries_is_checked() -> None:
    assert HttpAgent("http://x/agent").max_retries == 2
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="max_retries"):
            HttpAgent("http://x/agent", max_retries=bad)  # type: ignore[arg-type]


# ── 4. resume only where the server can ──────────────────────────────────────────────────────


def sends_ids(
    recorder: Recorder, *, header: bool = False, cut: bool = True, capabilities: Any = None
) -> Any:
    """A server that is not agui's: its run's answer carries SSE ids, then is cut (`cut`) or ends
    cleanly, before the terminal event. With `header`, it says it resumes (Agui-Resumable: 1)
    and serves GET /runs/{runId}/events after a Last-Event-ID; with `capabilities` (a JSON
    body), it serves GET /capabilities. Any other request gets 404. Every request is recorded."""
    events = text_events(6)
    frames = [agui.sse_frame(e, id=str(n)) for n, e in enumerate(events, 1)]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        recorder.saw(scope)
        await read_body(receive)
        method, path = scope["method"], scope["path"]
        headers = [(b"content-type", SSE)]
        if header:
            headers.append((RESUMABLE_HEADER.lower().encode(), b"1"))
        if method == "POST" and path == "/":
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send(
                {"type": "http.response.body", "body": b"".join(frames[:4]), "more_body": True}
            )
            await asyncio.sleep(0.05)
            if cut:
                raise RuntimeError("the stream is cut")
            await send({"type": "http.response.body", "body": b""})
        elif method == "GET" and path == "/runs/run-1/events" and (header or capabilities):
            after = int(recorder.requests[-1][2].get("last-event-id", "0"))
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"".join(frames[after:])})
        elif method == "GET" and path == "/capabilities" and capabilities is not None:
            answer = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": answer})
            await send({"type": "http.response.body", "body": capabilities})
        else:
            answer = [(b"content-type", b"text/plain")]
            await send({"type": "http.response.start", "status": 404, "headers": answer})
            await send({"type": "http.response.body", "body": b"no such route"})

    return app


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_cut_stream_of_a_server_that_cannot_resume_fails_without_asking_it(
    serve: Serve, mode: str
) -> None:
    """SSE ids, then the connection is cut: no GET of {url}/runs/{runId}/events (the server has
    no such route); a TransportError naming the agent's URL and why it was not resumed."""
    recorder = Recorder()
    url = serve(sends_ids(recorder))
    conversation = agui.Conversation("thread-1")
    with pytest.raises(agui.TransportError) as caught:
        if mode == "sync":
            conversation.run_sync(HttpAgent(url), input=run_input())
        else:
            asyncio.run(conversation.run(HttpAgent(url), input=run_input()))
    assert recorder.paths == [("POST", "/")]
    error = caught.value
    assert error.url == url
    assert f"The stream of run run-1 from {url} broke off after event id 4 (frame 4)" in str(error)
    assert "the server did not say it resumes streams (Agui-Resumable: 1" in str(error)
    assert conversation.runs[0].outcome == "truncated"


def test_an_answer_that_ends_early_from_a_server_that_cannot_resume_is_truncated(
    serve: Serve,
) -> None:
    recorder = Recorder()
    url = serve(sends_ids(recorder, cut=False))
    conversation = agui.Conversation("thread-1")
    with pytest.raises(agui.ProtocolError):
        conversation.run_sync(HttpAgent(url), input=run_input())
    assert recorder.paths == [("POST", "/")]
    assert conversation.runs[0].outcome == "truncated"


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("cut", [True, False], ids=["cut", "ended"])
def test_a_server_that_says_it_resumes_is_resumed(serve: Serve, mode: str, cut: bool) -> None:
    """The same server with Agui-Resumable: 1 on its answer: the client goes on at
    /runs/run-1/events after the last id, and the run completes whole."""
    recorder = Recorder()
    url = serve(sends_ids(recorder, header=True, cut=cut))
    conversation = agui.Conversation("thread-1")
    if mode == "sync":
        result = conversation.run_sync(HttpAgent(url), input=run_input())
    else:
        result = asyncio.run(conversation.run(HttpAgent(url), input=run_input()))
    assert result is not None and result.outcome == "success" and conversation.failures == []
    assert recorder.paths == [("POST", "/"), ("GET", "/runs/run-1/events")]
    assert recorder.requests[1][2]["last-event-id"] == "4"
    assert conversation.messages[-1].content == "".join(f"{n} " for n in range(6))


def test_capabilities_that_say_resumable_let_the_agent_resume(serve: Serve) -> None:
    """No header, but capabilities read with transport.resumable: the cut run is resumed. Read
    as not resumable, it is not."""
    for resumable, resumed in [(b"true", True), (b"false", False)]:
        recorder = Recorder()
        body = b'{"transport": {"streaming": true, "resumable": %s}}' % resumable
        url = serve(sends_ids(recorder, capabilities=body))
        agent = HttpAgent(url)
        assert agent.declared_resumable is False
        agent.capabilities_sync()
        assert agent.declared_resumable is resumed
        conversation = agui.Conversation("thread-1")
        if resumed:
            result = conversation.run_sync(agent, input=run_input())
            assert result is not None and result.outcome == "success"
            expected = [("GET", "/capabilities"), ("POST", "/"), ("GET", "/runs/run-1/events")]
        else:
            with pytest.raises(agui.TransportError):
                conversation.run_sync(agent, input=run_input())
            expected = [("GET", "/capabilities"), ("POST", "/")]
        assert recorder.paths == expected


def test_agui_durable_server_resume_still_works_through_rejoin(serve: Serve) -> None:
    """A rejoin reads the durable route itself: its stream is resumable without the header."""
    recorder = Recorder()
    url = serve(sends_ids(recorder, header=True))

    async def read() -> list[Any]:
        async with HttpAgent(url) as agent:
            async with aclosing(agent.rejoin("run-1")) as events:
                return [event async for event in events]

    assert asyncio.run(read()) == text_events(6)
    assert recorder.paths == [("GET", "/runs/run-1/events")]
