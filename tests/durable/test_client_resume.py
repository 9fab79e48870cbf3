"""HttpAgent resumes a dropped stream by itself, so `Conversation.run` sees one unbroken, verified
stream: no event lost, none twice.

Over real uvicorn on loopback, through a TCP proxy (tests/durable/client_support.CuttingProxy)
that cuts the connection after a number of bytes of the answer, as a dropped link does: mid-frame
or between frames, once or several times, on the first answer and on the resumed ones. Against
TinyLog (a durable server in miniature) and against AgentApp with store="memory://".

A server that sends no ids is not resumed (a cut is a TransportError, as without a store); when
the reconnects bring nothing, the error names the run and the last event id; the frames after a
reconnect are numbered on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import attrs
import pytest

import agui
from agui.http.client import HttpAgent, ResumePolicy, StreamPosition, endpoint
from agui.stream.conversation import Conversation

from ..conftest import run_input
from .client_support import TinyLog, long_script, proxied

Serve = Callable[[Any], str]
QUICK = ResumePolicy(attempts=5, base=0.01, cap=0.05)
"""Reconnect fast in the tests."""


def converse(url: str, mode: str, **options: Any) -> tuple[Conversation, StreamPosition]:
    """One run of a new conversation against `url`, with run ("async") or run_sync ("sync");
    returns the conversation and the stream's position."""
    conversation = Conversation("thread-1")
    agent = HttpAgent(url, **({"resume": QUICK} | options))
    position = StreamPosition()
    run_input = attrs.evolve(
        conversation.next_input(agui.UserMessage(id="user-1", content="hi")), run_id="run-1"
    )

    class Watched:
        """The agent, its frames watched through `position`."""

        strict = False

        def frames(self, input: agui.RunAgentInput) -> Any:
            return agent.frames(input, position=position)

        def frames_sync(self, input: agui.RunAgentInput) -> Any:
            return agent.frames_sync(input, position=position)

        def __call__(self, input: agui.RunAgentInput) -> Any:
            return agent(input)

    if mode == "sync":
        conversation.run_sync(Watched(), input=run_input)
    else:
        asyncio.run(conversation.run(Watched(), input=run_input))
    return conversation, position


def reference(serve: Serve, app: Any) -> Conversation:
    """The conversation of the same run, uncut."""
    conversation, position = converse(serve(app) + "/agent", "async")
    assert position.reconnects == 0
    return conversation


def assert_same(cut: Conversation, whole: Conversation) -> None:
    assert cut.failures == []
    assert cut.warnings == []
    assert cut.messages_json() == whole.messages_json()
    assert cut.state == whole.state
    assert [r.outcome for r in cut.runs] == ["success"]


@pytest.fixture(params=["async", "sync"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# ── transparent resume ────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("cut", [900, 5000, 12345])
def test_a_cut_stream_is_resumed_with_nothing_lost_or_repeated(
    serve: Serve, mode: str, cut: int
) -> None:
    """The connection is cut once (between frames or inside one); the conversation ends with the
    same messages and state as an uncut run, no warning, one reconnect with Last-Event-ID."""
    whole = reference(serve, TinyLog())
    app = TinyLog()
    with proxied(serve(app) + "/agent", [cut]) as (url, proxy):
        conversation, position = converse(url, mode)
    assert_same(conversation, whole)
    assert position.reconnects == 1
    assert position.finished
    assert proxy.connections == 2
    (method, path, after), (again, resumed, cursor) = app.requests
    assert (method, path, after) == ("POST", "/agent", None)
    run_id = conversation.runs[0].run_id
    assert (again, resumed) == ("GET", f"/agent/runs/{run_id}/events")
    assert cursor is not None and 0 < int(cursor) < position.frames
    assert position.frames == len(app.logs[run_id]) == int(position.last_event_id or 0)


def test_several_cuts_are_each_resumed(serve: Serve, mode: str) -> None:
    """Every answer is cut, the resumed ones too (some inside a frame); the reconnects go on from
    each one's last event id, and the run still ends whole."""
    whole = reference(serve, TinyLog())
    app = TinyLog(pace=0.0005)
    cuts = [700, 1500, 1501, 333, 2048, 4000]
    with proxied(serve(app) + "/agent", cuts) as (url, _proxy):
        conversation, position = converse(url, mode)
    assert_same(conversation, whole)
    assert position.reconnects == len(cuts)
    cursors = [int(after) for method, _, after in app.requests if method == "GET" and after]
    assert len(cursors) == len(cuts)
    assert cursors == sorted(cursors)


def test_an_answer_ending_before_the_terminal_event_is_resumed(serve: Serve, mode: str) -> None:
    """No cut, but the POST's answer ends cleanly inside the run (a server handing the tail
    over): the client goes on with the run's events after the last id."""
    whole = reference(serve, TinyLog())
    app = TinyLog(end_after=17)
    conversation, position = converse(serve(app) + "/agent", mode)
    assert_same(conversation, whole)
    assert position.reconnects == 1
    assert [after for _, _, after in app.requests] == [None, "17"]


def test_a_server_without_ids_is_not_resumed(serve: Serve, mode: str) -> None:
    """Without ids (a server without a store) a cut is a TransportError, as it always was: no
    reconnect, the run recorded as truncated."""
    app = TinyLog(ids=False)
    with proxied(serve(app) + "/agent", [3000]) as (url, proxy):
        with pytest.raises(agui.TransportError) as caught:
            converse(url, mode)
    assert proxy.connections == 1
    assert [method for method, _, _ in app.requests] == ["POST"]
    assert caught.value.url == url


@pytest.mark.parametrize("off", [{"resume": None}, {"resume_attempts": 0}])
def test_resuming_can_be_turned_off(serve: Serve, off: dict[str, Any]) -> None:
    app = TinyLog()
    with proxied(serve(app) + "/agent", [3000]) as (url, proxy):
        with pytest.raises(agui.TransportError):
            converse(url, "async", **off)
    assert proxy.connections == 1


def test_reconnects_that_bring_nothing_give_up_naming_the_run_and_cursor(
    serve: Serve, mode: str
) -> None:
    """The first answer is cut, then every reconnect is refused at once: after `attempts`
    reconnects in a row, a TransportError naming the run, the last event id and the frame."""
    app = TinyLog()
    with proxied(serve(app) + "/agent", [3000, 0, 0, 0, 0, 0, 0]) as (url, proxy):
        conversation = Conversation("thread-1")
        agent = HttpAgent(url, resume=ResumePolicy(attempts=3, base=0.001, cap=0.002))
        position = StreamPosition()
        run_input = conversation.next_input("hi")
        with pytest.raises(agui.TransportError) as caught:
            if mode == "sync":
                for _ in agent.frames_sync(run_input, position=position):
                    pass
            else:

                async def read() -> None:
                    async for _ in agent.frames(run_input, position=position):
                        pass

                asyncio.run(read())
    assert proxy.connections == 1 + 3
    message = str(caught.value)
    assert f"run {run_input.run_id}" in message
    assert f"after event id {position.last_event_id} (frame {position.frames})" in message
    assert "3 reconnect(s) in a row brought nothing" in message
    assert caught.value.url == str(endpoint(url, "runs", run_input.run_id, "events"))
    assert isinstance(caught.value.__cause__, Exception)


def test_a_run_the_server_does_not_hold_is_not_retried(serve: Serve) -> None:
    """A reconnect answered 404 (the run is unknown there) ends the resuming at once."""
    app = TinyLog()
    url = serve(app) + "/agent"
    with proxied(url, [3000]) as (cut_url, proxy):
        agent = HttpAgent(cut_url, resume=QUICK)
        run_input = run_input_for("r-404")

        async def read() -> None:
            async for _ in agent.frames(run_input):
                app.logs.pop("r-404", None)  # the server forgets the run

        with pytest.raises(agui.TransportError) as caught:
            asyncio.run(read())
    assert proxy.connections == 2
    assert "cannot be resumed: HTTP 404: Unknown run r-404" in str(caught.value)
    assert isinstance(caught.value.__cause__, agui.HttpError)


def run_input_for(run_id: str) -> agui.RunAgentInput:
    return run_input(run_id=run_id)


def test_frames_after_a_reconnect_are_numbered_on(serve: Serve, mode: str) -> None:
    """A malformed frame after the reconnect is named by its number in the whole stream."""

    def script(input: agui.RunAgentInput) -> list[Any]:
        events = long_script(input)
        events.insert(60, {"type": "TEXT_MESSAGE_CONTENT", "delta": "no message id"})
        return events

    app = TinyLog(script)
    with proxied(serve(app) + "/agent", [2000]) as (url, proxy):
        agent = HttpAgent(url, resume=QUICK, strict=True)
        with pytest.raises(agui.StreamError) as caught:
            if mode == "sync":
                list(agent.run_sync(run_input()))
            else:

                async def read() -> None:
                    async for _ in agent.run(run_input()):
                        pass

                asyncio.run(read())
    # the run, its resume, and the stop of the run the client rejected (HttpAgent's detach)
    assert proxy.connections == 3
    assert caught.value.frame == 61
    assert str(caught.value).startswith("frame 61 ")


def test_http_agent_run_yields_each_event_once_across_a_cut(serve: Serve, mode: str) -> None:
    app = TinyLog()
    with proxied(serve(app) + "/agent", [4321]) as (url, _proxy):
        agent = HttpAgent(url, resume=QUICK)
        if mode == "sync":
            events = list(agent.run_sync(run_input()))
        else:

            async def read() -> list[Any]:
                return [event async for event in agent.run(run_input())]

            events = asyncio.run(read())
    assert [agui.encode(e) for e in events] == app.logs["run-1"]


def test_resuming_is_logged_not_printed(
    serve: Serve, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    app = TinyLog()
    with caplog.at_level(logging.INFO, logger="agui.client"):
        with proxied(serve(app) + "/agent", [3000]) as (url, _proxy):
            converse(url, "async")
    assert any("resuming run" in r.getMessage() for r in caplog.records)
    assert capsys.readouterr() == ("", "")


# ── the policy ────────────────────────────────────────────────────────────────────────────────


def test_the_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    policy = ResumePolicy(attempts=10, base=0.1, cap=1.0, jitter=0.5)
    assert policy.delay(1) == 0.0  # the first reconnect is made at once
    for attempt, full in [(2, 0.1), (3, 0.2), (4, 0.4), (5, 0.8), (6, 1.0), (9, 1.0)]:
        delays = [policy.delay(attempt) for _ in range(200)]
        assert all(full * 0.5 <= d <= full for d in delays)
        assert len(set(delays)) > 1
    steady = ResumePolicy(base=0.1, cap=1.0, jitter=0.0)
    assert [steady.delay(n) for n in (2, 3, 4)] == [0.1, 0.2, 0.4]
    assert steady.delay(10_000) == 1.0


@pytest.mark.parametrize(
    "bad", [{"attempts": -1}, {"base": -0.1}, {"cap": -1.0}, {"jitter": 1.5}, {"jitter": -0.1}]
)
def test_a_policy_out_of_bounds_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ResumePolicy(**bad)


def test_resume_attempts_is_a_shorthand() -> None:
    assert HttpAgent("http://x/agent").resume == ResumePolicy()
    assert HttpAgent("http://x/agent", resume_attempts=9).resume == ResumePolicy(attempts=9)
    assert HttpAgent("http://x/agent", resume=None).resume is None
    custom = ResumePolicy(base=1.0)
    assert HttpAgent("http://x/agent", resume=custom, resume_attempts=2).resume == ResumePolicy(
        attempts=2, base=1.0
    )


def test_endpoints_hang_under_the_agent_url() -> None:
    assert str(endpoint("http://h:1/agent", "runs", "r1", "events")) == (
        "http://h:1/agent/runs/r1/events"
    )
    assert str(endpoint("http://h:1/a/agent/?key=k", "runs", "a/b c", "stop")) == (
        "http://h:1/a/agent/runs/a%2Fb%20c/stop?key=k"
    )


def test_a_position_given_again_starts_again(serve: Serve) -> None:
    """A StreamPosition handed to a second stream describes that stream, from its start."""
    app = TinyLog(lambda i: long_script(i, texts=1, deltas=3))
    agent = HttpAgent(serve(app) + "/agent")
    position = StreamPosition()
    first = list(agent.frames_sync(run_input("run-1"), position=position))
    assert (position.run_id, position.frames, position.finished) == ("run-1", len(first), True)
    frames = agent.frames_sync(run_input("run-2"), position=position)
    assert (position.run_id, position.frames, position.last_event_id) == ("run-2", 0, None)
    assert not position.finished
    assert len(list(frames)) == position.frames == len(first)
