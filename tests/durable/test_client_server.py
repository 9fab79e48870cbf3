"""The client against the real server with a store: `AgentApp(agent, store="memory://")` under
uvicorn on loopback.

* Transparent resume: a run of a few thousand events, its connection cut once or several times
  by a TCP proxy, on each backend; `Conversation.run` ends with the same messages and state as an uncut run, no
  warning; without a store nothing is resumed.
* `Conversation.connect` mid-run: the compacted history and the live remainder give the
  messages, state and pending interrupts of the conversation that ran the runs; a cut in the live
  part is resumed too. `?history=full` gives the stored events, as the runs sent them.
* `rejoin` from the start and after a cursor; `stop` ends a running run cancelled, 409 once it
  ended, 404 for an unknown run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import orjson
import pytest

import agui
from agui.cli.demo import DemoAgent
from agui.http.client import HttpAgent, ResumePolicy, StreamPosition
from agui.http.server import AgentApp
from agui.stream.conversation import Conversation

from ..conftest import live_server
from .client_support import proxied

QUICK = ResumePolicy(attempts=5, base=0.01, cap=0.05)
WAIT = 10.0
"""Seconds a test waits for something that takes milliseconds."""


class Paced:
    """A local agent: a state snapshot, then one assistant message in `words` deltas (a state
    delta every tenth), one every `pace` seconds; its ids come from the run id. `halfway[runId]`
    is set once half of the deltas are sent, `began[runId]` after the first; `gate`, when given, holds the second half until
    it is set."""

    def __init__(self, words: int = 1500, pace: float = 0.0) -> None:
        self.words = words
        self.pace = pace
        self.halfway: dict[str, threading.Event] = {}
        self.began: dict[str, threading.Event] = {}
        self.gate: threading.Event | None = None

    def began_of(self, run_id: str) -> threading.Event:
        return self.began.setdefault(run_id, threading.Event())

    def halfway_of(self, run_id: str) -> threading.Event:
        return self.halfway.setdefault(run_id, threading.Event())

    async def __call__(self, run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        run = run_input.run_id
        said = len(run_input.messages)
        yield agui.StateSnapshotEvent(snapshot={"run": run, "said": said, "count": 0})
        yield agui.TextMessageStartEvent(message_id=f"{run}-answer", role="assistant")
        for i in range(self.words):
            yield agui.TextMessageContentEvent(message_id=f"{run}-answer", delta=f"{i} ")
            if i == 0:
                self.began_of(run).set()
            if i % 10 == 0:
                yield agui.StateDeltaEvent(delta=[agui.ReplaceOperation(path="/count", value=i)])
            if i == self.words // 2:
                self.halfway_of(run).set()
                while self.gate is not None and not self.gate.is_set():
                    await asyncio.sleep(0.005)
            if self.pace:
                await asyncio.sleep(self.pace)
            elif i % 100 == 0:
                await asyncio.sleep(0)
        yield agui.TextMessageEndEvent(message_id=f"{run}-answer")


@contextmanager
def durable(agent: Any, store: str = "memory://", **options: Any) -> Iterator[str]:
    """AgentApp(agent, store=store) under uvicorn; yields the agent's URL."""
    with live_server(AgentApp(agent, store=store, **options)) as base:
        yield base + "/agent"


def fixed_input(
    conversation: Conversation, text: str, run_id: str, message_id: str
) -> agui.RunAgentInput:
    """The conversation's next input, with ids fixed so that two servers see the same run."""
    run_input = conversation.next_input(agui.UserMessage(id=message_id, content=text))
    return attrs.evolve(run_input, run_id=run_id)


def run_through(url: str, *, mode: str = "async", cuts: list[int] | None = None) -> Any:
    """One run of a new conversation ("thread-1", run "run-1"), through a cutting proxy when
    `cuts` is given; returns the conversation and the stream's position."""
    conversation = Conversation("thread-1")
    run_input = fixed_input(conversation, "count", "run-1", "user-1")
    position = StreamPosition()

    class Watched:
        strict = False

        def __init__(self, agent: HttpAgent) -> None:
            self.agent = agent

        def __call__(self, input: agui.RunAgentInput) -> Any:
            return self.agent(input)

        def frames(self, input: agui.RunAgentInput) -> Any:
            return self.agent.frames(input, position=position)

        def frames_sync(self, input: agui.RunAgentInput) -> Any:
            return self.agent.frames_sync(input, position=position)

    def go(target: str) -> None:
        agent = Watched(HttpAgent(target, resume=QUICK))
        if mode == "sync":
            conversation.run_sync(agent, input=run_input)
        else:
            asyncio.run(conversation.run(agent, input=run_input))

    if cuts is None:
        go(url)
    else:
        with proxied(url, cuts) as (through, _):
            go(through)
    return conversation, position


# ── transparent resume ────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("cuts", [[20_000], [3000, 9000, 400, 15_000, 15_001]])
def test_a_cut_run_resumes_on_the_server_with_a_store(
    mode: str, cuts: list[int], store_url: str
) -> None:
    """A few thousand events, the connection cut once or several times (inside frames too): the
    conversation ends exactly as an uncut one, with no warning about gaps or duplicates; on each
    backend (memory, SQLite, Redis)."""
    with durable(Paced()) as url:
        whole, _ = run_through(url)
    with durable(Paced(pace=0.0002), store=store_url) as url:
        cut, position = run_through(url, mode=mode, cuts=cuts)
    assert cut.failures == whole.failures == []
    assert cut.warnings == whole.warnings == []
    assert cut.messages_json() == whole.messages_json()
    assert cut.state == whole.state
    assert [r.outcome for r in cut.runs] == ["success"]
    assert position.reconnects == len(cuts)
    assert position.finished
    assert position.frames > 1600


def test_without_a_store_a_cut_is_a_failure_as_before() -> None:
    with live_server(AgentApp(Paced(pace=0.0002))) as base:
        with pytest.raises(agui.TransportError):
            run_through(base + "/agent", cuts=[5000])


# ── rejoin ────────────────────────────────────────────────────────────────────────────────────


def test_rejoin_reads_the_run_again_from_its_start_or_after_a_cursor() -> None:
    with durable(Paced(words=200)) as url:
        agent = HttpAgent(url)
        run_input = fixed_input(Conversation("thread-1"), "hi", "run-1", "user-1")
        sent = list(agent.frames_sync(run_input))

        async def rejoin(after: str | None) -> tuple[list[Any], StreamPosition]:
            position = StreamPosition()
            frames = [f async for f in agent.rejoin_frames("run-1", after=after, position=position)]
            return frames, position

        again, position = asyncio.run(rejoin(None))
        assert again == sent
        assert position.finished and position.last_event_id is not None
        cursors: list[str] = []
        for _ in HttpAgent(url).rejoin_frames_sync("run-1", position=(seen := StreamPosition())):
            cursors.append(seen.last_event_id or "")
        rest, _ = asyncio.run(rejoin(cursors[99]))
        assert rest == sent[100:]
        nothing, _ = asyncio.run(rejoin(cursors[-1]))
        assert nothing == []
        with pytest.raises(agui.HttpError) as caught:
            asyncio.run(rejoin("no-such-cursor"))
        assert caught.value.status == 400
        with pytest.raises(agui.HttpError) as unknown:
            list(agent.rejoin_frames_sync("no-such-run"))
        assert unknown.value.status == 404


# ── connect ───────────────────────────────────────────────────────────────────────────────────


def test_connect_mid_run_hydrates_what_the_runs_gave() -> None:
    """Run 1 finished, run 2 half way: a new conversation connects and follows the thread (the
    compacted history, then run 2 live) and ends with the messages and state of the one that
    ran both runs."""
    agent_impl = Paced(words=400, pace=0.001)
    with durable(agent_impl) as url:
        agent = HttpAgent(url)
        runner = Conversation("thread-1")
        asyncio.run(runner.run(agent, input=fixed_input(runner, "one", "run-1", "user-1")))
        agent_impl.gate = threading.Event()
        second = fixed_input(runner, "two", "run-2", "user-2")
        done = threading.Thread(target=lambda: runner.run_sync(agent, input=second))
        done.start()
        assert agent_impl.halfway_of("run-2").wait(WAIT)
        watcher = Conversation("thread-1", keep_events=True)

        async def connect() -> None:
            task = asyncio.create_task(watcher.connect(HttpAgent(url)))
            await asyncio.sleep(0.1)
            agent_impl.gate.set()  # type: ignore[union-attr]
            await task

        asyncio.run(connect())
        done.join(WAIT)
    assert runner.failures == watcher.failures == []
    assert watcher.warnings == []
    assert watcher.messages_json() == runner.messages_json()
    assert watcher.state == runner.state
    run_ids = [r.run_id for r in watcher.runs]
    assert run_ids == ["thread-1:history", "run-2"]
    types = [str(e.type) for e in watcher.events]
    assert types[:4] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert types.count("TEXT_MESSAGE_CONTENT") >= 400 // 2  # the live half at least


def test_connect_hydrates_pending_interrupts() -> None:
    """The demo agent interrupted: a conversation connected afterwards waits for the same
    answers, and its next input answers them."""
    with durable(DemoAgent(delay=0)) as url:
        agent = HttpAgent(url)
        runner = Conversation("thread-1")
        asyncio.run(runner.run(agent, "hi", forwarded_props={"interrupt": True}))
        assert runner.runs[-1].outcome == "interrupt"
        for history in ("full", "compact"):
            watcher = Conversation("thread-1")
            result = watcher.connect_sync(agent, history=history)
            assert result is not None and result.outcome == "interrupt"
            assert watcher.pending_interrupts == runner.pending_interrupts
        assert watcher.messages_json() == runner.messages_json()
        interrupt = watcher.pending_interrupts[0]
        watcher.resolve(interrupt.id, {"approved": True})
        answered = asyncio.run(watcher.run(agent, forwarded_props={"interrupt": True}))
        assert answered is not None and answered.outcome == "success"
        assert watcher.messages[-1].content == "You said: hi (2 characters)."  # type: ignore[union-attr]


def test_connect_full_history_hydrates_the_same_messages() -> None:
    """Each stored RUN_STARTED carries its run's input, so the full history holds the user's
    messages as well as the agent's."""
    with durable(DemoAgent(delay=0)) as url:
        agent = HttpAgent(url)
        runner = Conversation("thread-1")
        runner.run_sync(agent, "hi")
        runner.run_sync(agent, "again")
        watcher = Conversation("thread-1")
        watcher.connect_sync(agent, history="full")
        assert watcher.messages_json() == runner.messages_json()
        assert watcher.state == runner.state


def test_connect_full_history_gives_the_stored_events() -> None:
    """?history=full: every run's events, as the runs' own streams sent them."""
    with durable(Paced(words=50)) as url:
        agent = HttpAgent(url)
        conversation = Conversation("thread-1")
        sent: list[Any] = []
        for n in (1, 2, 3):
            run_input = fixed_input(conversation, f"say {n}", f"run-{n}", f"user-{n}")
            sent += [orjson.loads(f) for f in agent.frames_sync(run_input)]

        async def full() -> list[Any]:
            return [orjson.loads(f) async for f in agent.connect_frames("thread-1", history="full")]

        assert asyncio.run(full()) == sent
        assert [orjson.loads(agui.encode(e)) for e in _events(agent)] == sent


def _events(agent: HttpAgent) -> list[Any]:
    async def read() -> list[Any]:
        return [e async for e in agent.connect("thread-1", history="full")]

    return asyncio.run(read())


def test_connect_to_an_unknown_thread_is_a_404() -> None:
    with durable(Paced(words=5)) as url:
        conversation = Conversation("nobody")
        with pytest.raises(agui.HttpError) as caught:
            asyncio.run(conversation.connect(HttpAgent(url)))
        assert caught.value.status == 404
        assert conversation.failures and "404" in conversation.failures[0]
        assert conversation.messages == ()


def test_a_cut_in_the_live_part_of_a_connect_is_resumed() -> None:
    agent_impl = Paced(words=1500, pace=0.0005)
    with durable(agent_impl) as url:
        runner = Conversation("thread-1")
        run_input = fixed_input(runner, "go", "run-1", "user-1")
        done = threading.Thread(target=lambda: runner.run_sync(HttpAgent(url), input=run_input))
        done.start()
        assert agent_impl.halfway_of("run-1").wait(WAIT)
        watcher = Conversation("thread-1")
        position = StreamPosition()

        class Watched:
            strict = False

            def __init__(self, agent: HttpAgent) -> None:
                self.agent = agent

            def connect_frames(self, thread_id: str, /, *, history: Any = "compact") -> Any:
                return self.agent.connect_frames(thread_id, history=history, position=position)

        with proxied(url, [6000, 3000]) as (through, _proxy):
            asyncio.run(watcher.connect(Watched(HttpAgent(through, resume=QUICK))))
        done.join(WAIT)
    assert watcher.failures == [] and watcher.warnings == []
    assert position.reconnects == 2
    assert watcher.messages_json() == runner.messages_json()
    assert watcher.state == runner.state


# ── stop ──────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_stop_ends_a_running_run_cancelled(mode: str) -> None:
    agent_impl = Paced(words=100_000, pace=0.001)
    with durable(agent_impl) as url:
        runner = Conversation("thread-1")
        run_input = fixed_input(runner, "go on", "run-1", "user-1")
        done = threading.Thread(target=lambda: runner.run_sync(HttpAgent(url), input=run_input))
        done.start()
        assert agent_impl.began_of("run-1").wait(WAIT)
        time.sleep(0.2)
        stopper = HttpAgent(url)
        if mode == "sync":
            stopper.stop_sync("run-1")
        else:
            asyncio.run(stopper.stop("run-1"))
        # Left alone the run takes over 100 s (100,000 words, 1 ms apart): ending at all within
        # the bound, and cancelled rather than completed, is the stop's doing.
        done.join(WAIT)
        assert not done.is_alive(), "the stopped run did not end"  # hang bound
        assert runner.failures == []
        assert [r.outcome for r in runner.runs] == ["cancelled"]
        with pytest.raises(agui.HttpError) as finished:
            stopper.stop_sync("run-1")
        assert finished.value.status == 409
        assert "run-1" in finished.value.message
        with pytest.raises(agui.HttpError) as unknown:
            asyncio.run(stopper.stop("no-such-run"))
        assert unknown.value.status == 404


def test_stop_names_an_unreachable_server() -> None:
    from agui.cli.demo import free_port

    url = f"http://127.0.0.1:{free_port()}/agent"
    with pytest.raises(agui.TransportError) as caught:
        HttpAgent(url).stop_sync("r1")
    assert caught.value.url == url + "/runs/r1/stop"
