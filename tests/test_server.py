"""The ASGI server, over real HTTP: uvicorn on 127.0.0.1 (see the `serve` fixture).

A bad request is refused with a 4xx JSON problem list before any stream opens and without calling
the agent; a good one streams the agent's events as SSE inside a correct run lifecycle (RUN_STARTED
first, exactly one RUN_FINISHED or RUN_ERROR last), with keep-alives while the agent is quiet, and
the agent is cancelled when the client leaves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

import agui
from agui import AgentApp, SSEDecoder

from .conftest import live_server, run_input

JSON = {"content-type": "application/json"}
BODY = agui.encode(run_input())
HANG = 30.0
"""A hang bound: how long a test waits for a disconnected client's agent to be cancelled (it takes
milliseconds; the agents of these tests never end on their own within it)."""

Serve = Callable[[Any], str]


class Recorder:
    """An agent that records its calls and yields the given events."""

    def __init__(self, *events: Any) -> None:
        self.events = events
        self.calls: list[agui.RunAgentInput] = []

    async def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
        self.calls.append(input)
        for event in self.events:
            yield event


def events_of(raw: bytes) -> list[dict[str, Any]]:
    """The JSON of every SSE message in `raw` (keep-alive comments skipped)."""
    decoder = SSEDecoder()
    return [json.loads(m.data) for m in decoder.feed(raw) + decoder.close()]


def post(url: str, body: bytes = BODY, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(timeout=10) as client:
        return client.post(url, content=body, headers=JSON if headers is None else headers)


def run(url: str, body: bytes = BODY) -> list[dict[str, Any]]:
    """POST a run; check it streamed successfully; return its events."""
    response = post(url, body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/event-stream"
    return events_of(response.content)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


# ── request validation ─────────────────────────────────────────────────────────────────────────


def rejected(response: httpx.Response, status: int, agent: Recorder) -> dict[str, Any]:
    """The response is `status` with a JSON error body, no event stream, and the agent was never
    called; return the body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert "text/event-stream" not in response.headers.get("content-type", "")
    assert b"data:" not in response.content
    body: dict[str, Any] = response.json()
    assert isinstance(body["error"], str) and body["error"]
    assert agent.calls == []
    return body


def test_get_is_405_with_allow_post(serve: Serve) -> None:
    """Request: only POST is served; GET gets 405 with `Allow: POST`."""
    agent = Recorder()
    url = serve(AgentApp(agent))
    with httpx.Client(timeout=10) as client:
        response = client.get(url + "/")
    rejected(response, 405, agent)
    assert response.headers["allow"] == "POST"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_wrong_content_type_is_415(serve: Serve, content_type: str | None) -> None:
    """Request: a body that is not declared JSON gets 415."""
    agent = Recorder()
    url = serve(AgentApp(agent))
    headers = {} if content_type is None else {"content-type": content_type}
    rejected(post(url, BODY, headers), 415, agent)


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/ld+json"]
)
def test_json_media_types_are_accepted(serve: Serve, content_type: str) -> None:
    """Request: any JSON media type (parameters, any case, +json) is accepted."""
    agent = Recorder()
    url = serve(AgentApp(agent))
    response = post(url, BODY, {"content-type": content_type})
    assert response.status_code == 200
    assert len(agent.calls) == 1


def test_not_json_is_400_with_a_problem_at_the_root(serve: Serve) -> None:
    """Request: a body that is not JSON gets 400 listing a problem at pointer ""."""
    agent = Recorder()
    url = serve(AgentApp(agent))
    body = rejected(post(url, b"{not json"), 400, agent)
    assert [p["pointer"] for p in body["problems"]] == [""]
    assert all(p["kind"] and p["message"] for p in body["problems"])


def test_wrong_shape_is_400_with_pointers(serve: Serve) -> None:
    """Request: valid JSON that is no RunAgentInput gets 400 listing each problem with its
    pointer (a missing threadId at /threadId, a wrong message list at /messages)."""
    agent = Recorder()
    url = serve(AgentApp(agent))
    doc = json.loads(BODY)
    del doc["threadId"]
    body = rejected(post(url, json.dumps(doc).encode()), 400, agent)
    assert ("/threadId", "missing") in [(p["pointer"], p["kind"]) for p in body["problems"]]
    doc["messages"] = "not a list"
    body = rejected(post(url, json.dumps(doc).encode()), 400, agent)
    pointers = [p["pointer"] for p in body["problems"]]
    assert "/threadId" in pointers and "/messages" in pointers


def test_too_large_is_413(serve: Serve) -> None:
    """Request: a body over max_body_bytes gets 413, whether its Content-Length says so or it
    arrives chunked without one."""
    agent = Recorder()
    url = serve(AgentApp(agent, max_body_bytes=len(BODY) - 1))
    rejected(post(url, BODY), 413, agent)

    def chunked() -> Any:
        yield BODY[:10]
        yield BODY[10:]

    with httpx.Client(timeout=10) as client:
        response = client.post(url, content=chunked(), headers=JSON)
    assert "content-length" not in response.request.headers
    rejected(response, 413, agent)
    # exactly at the limit is fine
    url = serve(AgentApp(agent, max_body_bytes=len(BODY)))
    assert post(url).status_code == 200


def test_a_declared_oversized_body_is_refused_before_it_is_sent(serve: Serve) -> None:
    """Request: a Content-Length over max_body_bytes gets 413 at once, without waiting for (or
    reading) a body that may never come."""
    agent = Recorder()
    url = serve(AgentApp(agent, max_body_bytes=1000))
    host, port = httpx.URL(url).host, httpx.URL(url).port
    assert port is not None
    head = (
        f"POST {httpx.URL(url).path}/ HTTP/1.1\r\nHost: {host}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=3) as sock:
        sock.sendall(head.encode())
        answer = sock.recv(65536)  # times out (failing the test) if the server waits for the body
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    assert b"application/json" in answer
    assert agent.calls == []


class Refusing(Recorder):
    """A Recorder with a validate(input) method that refuses runs whose text is "refuse"."""

    def __init__(self, *events: Any) -> None:
        super().__init__(*events)
        self.checked: list[str] = []

    def validate(self, input: agui.RunAgentInput) -> list[agui.Problem]:
        self.checked.append(input.run_id)
        text = input.messages[0].content if input.messages else ""
        if text != "refuse":
            return []
        return [
            agui.Problem("/messages/0/content", "refused", "this agent does not take that"),
            agui.Problem("/tools", "missing", "and it needs tools"),
        ]


def test_an_agent_validate_refusal_is_400_before_the_stream(serve: Serve) -> None:
    """Request: an agent's validate(input) is asked once the body is decoded; problems it returns
    are answered 400 with their pointers, kinds and messages, no stream and no agent call; an
    empty list lets the run stream."""
    agent = Refusing(
        agui.TextMessageStartEvent(message_id="m"), agui.TextMessageEndEvent(message_id="m")
    )
    url = serve(AgentApp(agent))
    body = rejected(post(url, agui.encode(run_input(text="refuse"))), 400, agent)
    assert body["problems"] == [
        {
            "pointer": "/messages/0/content",
            "kind": "refused",
            "message": "this agent does not take that",
        },
        {"pointer": "/tools", "kind": "missing", "message": "and it needs tools"},
    ]
    assert agent.checked == ["run-1"]
    assert types(run(url, agui.encode(run_input(run_id="run-2")))) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert agent.checked == ["run-1", "run-2"] and len(agent.calls) == 1


def test_path_mismatch_is_404(serve: Serve) -> None:
    """Request: with a configured path, any other path gets 404 (and the path is served)."""
    agent = Recorder()
    url = serve(AgentApp(agent, path="/agent"))
    body = rejected(post(url + "/other"), 404, agent)
    assert "/agent" in body["error"]
    rejected(post(url + "/"), 404, agent)
    assert post(url + "/agent").status_code == 200
    assert len(agent.calls) == 1


# ── the response ───────────────────────────────────────────────────────────────────────────────


def test_stream_headers(serve: Serve) -> None:
    """Response: Content-Type text/event-stream and Cache-Control no-cache."""
    url = serve(AgentApp(Recorder()))
    response = post(url)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"


def test_every_frame_is_data_json_lf_only(serve: Serve) -> None:
    """Response: the raw body is nothing but `data: <JSON>\\n\\n` frames (LF only, no CR)."""
    agent = Recorder(
        agui.TextMessageStartEvent(message_id="m"),
        agui.TextMessageContentEvent(message_id="m", delta="a\r\nb"),
        agui.TextMessageEndEvent(message_id="m"),
    )
    raw = post(serve(AgentApp(agent))).content
    assert b"\r" not in raw
    frames = raw.split(b"\n\n")
    assert frames[-1] == b"" and len(frames) == 6
    assert all(f.startswith(b"data: {") and b"\n" not in f for f in frames[:-1])


def test_frames_arrive_as_they_are_produced(serve: Serve) -> None:
    """Response: each frame is flushed when produced; the client gets the first event while the
    agent is still waiting (it waits for the client to have seen it)."""
    seen_first = threading.Event()

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        for _ in range(300):  # 3 s at most
            if seen_first.is_set():
                break
            await asyncio.sleep(0.01)
        yield agui.TextMessageContentEvent(
            message_id="m", delta="released" if seen_first.is_set() else "timed out"
        )

    url = serve(AgentApp(agent))
    decoder = SSEDecoder()
    events: list[dict[str, Any]] = []
    start = time.monotonic()
    first_at = None
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, content=BODY, headers=JSON) as r,
    ):
        for chunk in r.iter_bytes():
            events += [json.loads(m.data) for m in decoder.feed(chunk)]
            if first_at is None and "TEXT_MESSAGE_START" in types(events):
                first_at = time.monotonic() - start
                seen_first.set()
    assert first_at is not None and first_at < 1.0
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[2]["delta"] == "released"


def test_run_started_is_inserted_first(serve: Serve) -> None:
    """Lifecycle: when the agent sends no RUN_STARTED, one carrying the input's threadId and
    runId and protocolVersion "1.0" comes first."""
    url = serve(AgentApp(Recorder(agui.TextMessageStartEvent(message_id="m"))))
    events = run(url, agui.encode(run_input(run_id="r-7", thread_id="t-7")))
    assert events[0] == {
        "type": "RUN_STARTED",
        "threadId": "t-7",
        "runId": "r-7",
        "protocolVersion": "1.0",
    }
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


def test_agents_run_started_gets_the_protocol_version(serve: Serve) -> None:
    """Lifecycle: the agent's own RUN_STARTED is kept (not doubled); protocolVersion is filled in
    when it lacks one, and its other members pass through."""
    own = agui.RunStartedEvent(thread_id="t", run_id="r", parent_run_id="p")
    url = serve(AgentApp(Recorder(own)))
    events = run(url)
    assert types(events) == ["RUN_STARTED", "RUN_FINISHED"]
    assert events[0] == {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "r",
        "parentRunId": "p",
        "protocolVersion": "1.0",
    }


def test_run_started_is_inserted_even_for_an_empty_run(serve: Serve) -> None:
    """Lifecycle: an agent that yields nothing still gives RUN_STARTED then RUN_FINISHED."""
    url = serve(AgentApp(Recorder()))
    events = run(url, agui.encode(run_input(run_id="r-0", thread_id="t-0")))
    assert types(events) == ["RUN_STARTED", "RUN_FINISHED"]
    assert events[1] == {"type": "RUN_FINISHED", "threadId": "t-0", "runId": "r-0"}


def test_run_finished_is_appended_when_the_agent_returns(serve: Serve) -> None:
    """Lifecycle: an agent that just returns gets RUN_FINISHED (with the input's ids) last."""
    url = serve(
        AgentApp(
            Recorder(
                agui.TextMessageStartEvent(message_id="m"),
                agui.TextMessageContentEvent(message_id="m", delta="hi"),
                agui.TextMessageEndEvent(message_id="m"),
            )
        )
    )
    events = run(url, agui.encode(run_input(run_id="r-2", thread_id="t-2")))
    assert types(events)[-1] == "RUN_FINISHED"
    assert types(events).count("RUN_FINISHED") == 1
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t-2", "runId": "r-2"}


def test_agents_own_terminal_event_is_not_doubled(serve: Serve) -> None:
    """Lifecycle: an agent that ends with its own RUN_FINISHED or RUN_ERROR gets nothing added."""
    finished = agui.RunFinishedEvent(thread_id="thread-1", run_id="run-1", result={"ok": 1})
    error = agui.RunErrorEvent(message="no quota", code="QUOTA")
    start, end = (
        agui.TextMessageStartEvent(message_id="m"),
        agui.TextMessageEndEvent(message_id="m"),
    )
    for terminal, wire in ((finished, "RUN_FINISHED"), (error, "RUN_ERROR")):
        url = serve(AgentApp(Recorder(start, end, terminal)))
        events = run(url)
        assert types(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", wire]
        assert events[-1] == json.loads(agui.encode(terminal))


def _terminals(events: list[dict[str, Any]]) -> list[str]:
    return [t for t in types(events) if t in ("RUN_FINISHED", "RUN_ERROR")]


def test_agent_raising_mid_run_ends_in_exactly_one_run_error(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Lifecycle: an exception in the agent ends the stream in exactly one RUN_ERROR (no
    RUN_FINISHED) that does not reveal the exception; the traceback is logged."""
    secret = "db-password-hunter2"

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        yield agui.TextMessageContentEvent(message_id="m", delta="partial")
        raise RuntimeError(f"connection failed: {secret}")

    caplog.set_level(logging.INFO, logger="agui.agent")
    url = serve(AgentApp(agent))
    response = post(url)
    events = events_of(response.content)
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "RUN_ERROR",
    ]
    assert _terminals(events) == ["RUN_ERROR"]
    assert events[-1]["message"]
    assert secret not in response.text and "RuntimeError" not in response.text
    # the run lifecycle (shared with client-side runs of local agents) logs it
    logged = [r for r in caplog.records if r.name == "agui.agent" and r.exc_info]
    assert logged, "the failure was not logged"
    assert secret in caplog.text  # the details go to the log, not to the client
    assert "Traceback" in caplog.text and "RuntimeError" in caplog.text


def test_agent_raising_before_its_first_event(serve: Serve) -> None:
    """Lifecycle: an agent that fails before yielding anything still gives RUN_STARTED, then
    exactly one RUN_ERROR."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        raise ValueError("early")
        yield  # pragma: no cover - makes this an async generator

    url = serve(AgentApp(agent))
    events = run(url)
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert events[0]["runId"] == "run-1"


def test_agent_whose_call_raises_ends_in_run_error(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Lifecycle: an agent whose call raises before returning a stream (not an async generator)
    gives RUN_STARTED and RUN_ERROR, and the response ends (it used to hang forever)."""

    class Picky:
        def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
            raise LookupError("no such model")

    caplog.set_level(logging.INFO, logger="agui.server")
    url = serve(AgentApp(Picky(), keepalive=None))
    with httpx.Client(timeout=3) as client:  # a hang fails as a read timeout
        response = client.post(url, content=BODY, headers=JSON)
    assert types(events_of(response.content)) == ["RUN_STARTED", "RUN_ERROR"]
    assert "LookupError" in caplog.text


def test_an_event_that_cannot_be_encoded_ends_in_run_error(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Lifecycle: an event that cannot be encoded (a set inside a RawEvent) ends the run in one
    RUN_ERROR (no RUN_FINISHED); it is logged with its traceback; the agent is stopped there."""
    closed = threading.Event()
    resumed = threading.Event()

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        try:
            yield agui.TextMessageStartEvent(message_id="m")
            yield agui.RawEvent(event={1, 2})
            resumed.set()
            yield agui.TextMessageEndEvent(message_id="m")
        finally:
            closed.set()

    caplog.set_level(logging.INFO, logger="agui.server")
    url = serve(AgentApp(agent))
    events = run(url)
    assert types(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    assert "set" not in events[-1]["message"]
    assert closed.is_set() and not resumed.is_set()  # the agent is stopped at the bad event
    assert any(r.name == "agui.server" and r.exc_info for r in caplog.records)
    assert "Traceback" in caplog.text


def test_a_failing_cleanup_after_a_bad_event_still_ends_the_stream(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Lifecycle: when closing the agent after an unencodable event raises too, the stream still
    ends with its one RUN_ERROR (and the cleanup failure is logged), instead of hanging."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        try:
            yield agui.RawEvent(event={1, 2})
        finally:
            raise OSError("cleanup failed")

    caplog.set_level(logging.INFO, logger="agui.server")
    url = serve(AgentApp(agent, keepalive=None))
    with httpx.Client(timeout=3) as client:  # a hang fails as a read timeout
        response = client.post(url, content=BODY, headers=JSON)
    assert types(events_of(response.content)) == ["RUN_STARTED", "RUN_ERROR"]
    assert "cleanup failed" in caplog.text


def test_events_after_the_terminal_event_are_dropped_and_logged(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Lifecycle: whatever the agent yields after its RUN_FINISHED is not sent (so exactly one
    terminal event ends the stream) and each dropped event is logged."""
    caplog.set_level(logging.INFO, logger="agui.server")
    agent = Recorder(
        agui.RunFinishedEvent(thread_id="t", run_id="r"),
        agui.TextMessageStartEvent(message_id="late"),
        agui.RunErrorEvent(message="late error"),
    )
    url = serve(AgentApp(agent))
    events = run(url)
    assert types(events) == ["RUN_STARTED", "RUN_FINISHED"]
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 2
    assert "TEXT_MESSAGE_START" in dropped[0] and "RUN_ERROR" in dropped[1]


# ── disconnects, keep-alives, concurrency ──────────────────────────────────────────────────────


def test_client_disconnect_cancels_a_streaming_agent(serve: Serve) -> None:
    """Disconnect: a client that leaves mid-stream gets the agent cancelled (the agent streams
    forever otherwise)."""
    cancelled = threading.Event()
    produced = 0

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        nonlocal produced
        yield agui.TextMessageStartEvent(message_id="m")
        try:
            while True:
                produced += 1
                yield agui.TextMessageContentEvent(message_id="m", delta=str(produced))
                await asyncio.sleep(0.01)
        finally:
            cancelled.set()

    url = serve(AgentApp(agent))
    decoder = SSEDecoder()
    got: list[Any] = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, content=BODY, headers=JSON) as r,
    ):
        for chunk in r.iter_bytes():
            got += decoder.feed(chunk)
            assert not cancelled.is_set()  # still streaming while the client reads
            if len(got) >= 2:
                break  # leaving iter_bytes early closes the connection
    assert cancelled.wait(HANG), "the agent was not cancelled after the client left"  # hang bound
    after = produced
    time.sleep(0.1)
    assert produced == after, "the agent kept running"


def test_client_disconnect_cancels_a_silent_agent(serve: Serve) -> None:
    """Disconnect: an agent awaiting something slow (an hour) when the client leaves is
    cancelled, not left until its await finishes."""
    cancelled = threading.Event()

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        yield agui.TextMessageEndEvent(message_id="m")

    url = serve(AgentApp(agent))
    decoder = SSEDecoder()
    got: list[Any] = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, content=BODY, headers=JSON) as r,
    ):
        for chunk in r.iter_bytes():
            got += decoder.feed(chunk)
            if len(got) >= 2:
                break
    assert cancelled.wait(HANG), "the agent was not cancelled after the client left"  # hang bound


def test_an_agent_that_swallows_its_cancellation_is_closed_at_its_next_event(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Disconnect: an agent that lets the cancellation pass (asyncio.wait_for on Python 3.11
    does when what it awaits completes as the cancellation arrives) and streams on is closed at
    its next event (its finally runs), not left blocked on a queue nobody reads any more until
    it is garbage ("Task was destroyed but it is pending!")."""
    swallowed = threading.Event()
    closed = threading.Event()

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        try:
            while True:
                try:
                    await asyncio.sleep(0.01)
                except asyncio.CancelledError:
                    if swallowed.is_set():
                        raise
                    swallowed.set()
                yield agui.TextMessageContentEvent(message_id="m", delta="x")
        finally:
            closed.set()

    caplog.set_level(logging.INFO, logger="agui.server")
    url = serve(AgentApp(agent, queue_size=2))
    decoder = SSEDecoder()
    got: list[Any] = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, content=BODY, headers=JSON) as r,
    ):
        for chunk in r.iter_bytes():
            got += decoder.feed(chunk)
            if len(got) >= 2:
                break
    assert swallowed.wait(HANG), "the agent was not cancelled after the client left"  # hang bound
    assert closed.wait(HANG), "the agent was left behind after the client left"  # hang bound
    assert "did not stop" not in caplog.text


def test_keep_alive_comments_while_the_agent_is_silent(serve: Serve) -> None:
    """Keep-alive: a `: keep-alive` comment goes out every `keepalive` seconds of silence, and
    none while events flow."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        await asyncio.sleep(0.5)
        for _ in range(20):
            yield agui.TextMessageContentEvent(message_id="m", delta="x")
            await asyncio.sleep(0.01)
        yield agui.TextMessageEndEvent(message_id="m")

    url = serve(AgentApp(agent, keepalive=0.1))
    raw = b""
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, content=BODY, headers=JSON) as r,
    ):
        for chunk in r.iter_bytes():
            raw += chunk
    count = raw.count(b": keep-alive\n\n")
    assert 3 <= count <= 6, raw
    # all of them fall in the silence between the start and the first content
    silence = raw[raw.index(b"TEXT_MESSAGE_START") : raw.index(b"TEXT_MESSAGE_CONTENT")]
    assert silence.count(b": keep-alive\n\n") == count
    assert types(events_of(raw)) == ["RUN_STARTED", "TEXT_MESSAGE_START"] + [
        "TEXT_MESSAGE_CONTENT"
    ] * 20 + ["TEXT_MESSAGE_END", "RUN_FINISHED"]


def test_no_keep_alive_when_disabled(serve: Serve) -> None:
    """Keep-alive: keepalive=None sends no comments at all."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        await asyncio.sleep(0.3)
        yield agui.TextMessageStartEvent(message_id="m")

    url = serve(AgentApp(agent, keepalive=None))
    raw = post(url).content
    assert not [line for line in raw.split(b"\n") if line.startswith(b":")]
    assert types(events_of(raw)) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


def test_concurrent_runs_each_get_their_own_stream(serve: Serve) -> None:
    """Concurrency: ten runs at once are served together (each waits until all ten have
    started), each with its own complete and correct stream."""
    n = 10
    started = 0

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        nonlocal started
        started += 1
        message = f"m-{input.run_id}"
        yield agui.TextMessageStartEvent(message_id=message)
        for _ in range(200):  # 2 s at most
            if started >= n:
                break
            await asyncio.sleep(0.01)
        together = "together" if started >= n else "alone"
        yield agui.TextMessageContentEvent(message_id=message, delta=together)
        for char in input.run_id:
            yield agui.TextMessageContentEvent(message_id=message, delta=char)
            await asyncio.sleep(0)
        yield agui.TextMessageEndEvent(message_id=message)

    url = serve(AgentApp(agent))

    async def one(client: httpx.AsyncClient, i: int) -> list[dict[str, Any]]:
        body = agui.encode(run_input(run_id=f"run-{i}", thread_id=f"thread-{i}"))
        decoder = SSEDecoder()
        events: list[dict[str, Any]] = []
        async with client.stream("POST", url, content=body, headers=JSON) as r:
            assert r.status_code == 200
            async for chunk in r.aiter_bytes():
                events += [json.loads(m.data) for m in decoder.feed(chunk)]
        return events + [json.loads(m.data) for m in decoder.close()]

    async def main() -> list[list[dict[str, Any]]]:
        async with httpx.AsyncClient(timeout=10) as client:
            return await asyncio.gather(*(one(client, i) for i in range(n)))

    results = asyncio.run(main())
    for i, events in enumerate(results):
        run_id = f"run-{i}"
        assert events[0] == {
            "type": "RUN_STARTED",
            "threadId": f"thread-{i}",
            "runId": run_id,
            "protocolVersion": "1.0",
        }
        assert events[-1] == {"type": "RUN_FINISHED", "threadId": f"thread-{i}", "runId": run_id}
        assert {e["messageId"] for e in events[1:-1]} == {f"m-{run_id}"}
        deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
        assert deltas[0] == "together"
        assert "".join(deltas[1:]) == run_id


# ── mounting ───────────────────────────────────────────────────────────────────────────────────


def test_mounts_in_starlette(serve: Serve) -> None:
    """Mounting: AgentApp under a Starlette Mount streams the run; a configured path is matched
    relative to the mount; the host app's other routes still work."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    agent = Recorder(agui.TextMessageStartEvent(message_id="m"))
    app = Starlette(
        routes=[
            Route("/health", health),
            Mount("/agent", app=AgentApp(agent)),
            Mount("/v1", app=AgentApp(agent, path="/run")),
        ]
    )
    url = serve(app)
    closed = ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert types(run(url + "/agent/")) == closed
    assert types(run(url + "/v1/run")) == closed
    assert post(url + "/v1/other").status_code == 404
    with httpx.Client(timeout=10) as client:
        assert client.get(url + "/health").text == "ok"
    assert len(agent.calls) == 2


def test_mounts_in_fastapi(serve: Serve) -> None:
    """Mounting: AgentApp mounted in a FastAPI app streams the run, validates as usual, and the
    FastAPI routes still work."""
    from fastapi import FastAPI

    api = FastAPI()

    @api.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    agent = Recorder(agui.TextMessageStartEvent(message_id="m"))
    api.mount("/agent", AgentApp(agent))
    url = serve(api)
    response = post(url + "/agent/")
    assert response.headers["content-type"] == "text/event-stream"
    assert types(events_of(response.content)) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    rejected_body = post(url + "/agent/", b"[]")
    assert rejected_body.status_code == 400
    with httpx.Client(timeout=10) as client:
        assert client.get(url + "/health").json() == {"status": "ok"}
    assert len(agent.calls) == 1


def test_runs_on_its_own_under_uvicorn_with_lifespan() -> None:
    """Standalone: AgentApp is a complete ASGI app on its own: it answers the lifespan protocol
    (startup and shutdown complete) and serves a run at its path under uvicorn."""
    sent: list[dict[str, Any]] = []
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> dict[str, Any]:
        return next(incoming)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(asyncio.wait_for(AgentApp(Recorder())({"type": "lifespan"}, receive, send), 5))
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}]

    agent = Recorder(agui.TextMessageStartEvent(message_id="m"))
    with live_server(AgentApp(agent, path="/agent"), lifespan="on") as base:
        assert types(run(base + "/agent")) == [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
