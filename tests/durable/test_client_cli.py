"""The durable commands as a user runs them (real subprocesses), against AgentApp with
store="memory://" on loopback: `agui connect URL THREAD [--full] [--json | --summary]`,
`agui stop URL RUN_ID`, and `agui run URL --rejoin RUN_ID [--after CURSOR]` (re-attaching to a
run's stream; `--resume FILE` keeps answering interrupts). Exit codes and outcome words are
`agui run`'s: 0 for completed or interrupt, 1 for error or failed, 2 for a usage error.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

import agui
from agui.cli.demo import DemoAgent
from agui.http.client import HttpAgent, StreamPosition
from agui.http.server import AgentApp
from agui.stream.conversation import Conversation

from ..conftest import live_server

SUBPROCESS = 60.0
DEMO_LINES = [
    "reasoning: The user said 'hi'; I will count its characters, then echo it.",
    'tool call: count_characters({"text":"hi"})',
    "tool result: 2",
    "You said: hi (2 characters).",
]


@pytest.fixture(autouse=True)
def state_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The commands' state directory (an interrupted thread's file) is the test's, never the
    user's ~/.local/state."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`agui ARGS` as a user runs it (no NO_COLOR, no PYTHONUNBUFFERED); with `cwd`, temporary
    files go there too."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "NO_COLOR")}
    if cwd is not None:
        env["TMPDIR"] = str(cwd)
    done = subprocess.run(
        [sys.executable, "-m", "agui", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS,
        check=False,
        env=env,
        cwd=cwd,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


@contextmanager
def durable(agent: Any) -> Iterator[str]:
    with live_server(AgentApp(agent, store="memory://")) as base:
        yield base + "/agent"


def demo_run(url: str, text: str = "hi", **options: Any) -> Conversation:
    """A demo run on thread "thread-1" (run "run-1" unless given), through the client."""
    conversation = Conversation("thread-1")
    run_input = conversation.next_input(agui.UserMessage(id="user-1", content=text), **options)
    run_input = attrs.evolve(run_input, run_id="run-1")
    conversation.run_sync(HttpAgent(url), input=run_input)
    return conversation


# ── agui connect ──────────────────────────────────────────────────────────────────────────────


def test_connect_prints_the_thread_as_a_conversation() -> None:
    with durable(DemoAgent(delay=0)) as url:
        demo_run(url)
        done = cli("connect", url, "thread-1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["user: hi", *DEMO_LINES]
    assert done.stderr == "agui connect: completed\n"


def test_connect_full_replays_the_runs_events() -> None:
    with durable(DemoAgent(delay=0)) as url:
        demo_run(url)
        done = cli("connect", url, "thread-1", "--full")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-4:] == DEMO_LINES
    assert done.stderr == "agui connect: completed\n"


def test_connect_summary_holds_the_threads_messages_and_state() -> None:
    with durable(DemoAgent(delay=0)) as url:
        runner = demo_run(url)
        summary = json.loads(cli("connect", url, "thread-1", "--summary").stdout)
        full = json.loads(cli("connect", url, "thread-1", "--summary", "--full").stdout)
    assert summary["outcome"] == "completed" and summary["error"] is None
    assert summary["messages"] == runner.messages_json()
    assert summary["state"] == runner.state
    assert summary["eventTypes"] == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert full["outcome"] == "completed"
    assert full["eventTypes"][0] == "RUN_STARTED" and "TEXT_MESSAGE_CONTENT" in full["eventTypes"]
    assert full["state"] == runner.state


def test_connect_json_prints_every_event() -> None:
    with durable(DemoAgent(delay=0)) as url:
        demo_run(url)
        done = cli("connect", url, "thread-1", "--json")
    assert done.returncode == 0 and done.stderr == ""
    types = [json.loads(line)["type"] for line in done.stdout.splitlines()]
    assert types == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]


def test_connect_to_an_unknown_thread_fails() -> None:
    with durable(DemoAgent(delay=0)) as url:
        done = cli("connect", url, "nobody")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("agui connect: failed: HTTP 404: ")
    assert "nobody" in done.stderr


def test_connect_shows_a_pending_interrupt_with_the_command_that_answers_it(
    tmp_path: Path,
) -> None:
    """An interrupted thread: connect shows what it waits for and the `agui run` command (the
    thread so far saved to a file) that answers it; running it finishes the thread."""
    with durable(DemoAgent(delay=0)) as url:
        demo_run(url, forwarded_props={"interrupt": True})
        done = cli("connect", url, "thread-1", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stderr == "agui connect: interrupt: the run waits for 1 answer\n"
        lines = done.stdout.splitlines()
        assert lines[:3] == ["user: hi", *DEMO_LINES[:2]]
        assert lines[3] == "interrupt: the run waits for 1 answer(s)"
        example = json.loads(lines[lines.index(next(x for x in lines if "answers.json:" in x)) + 1])
        command = shlex.split(lines[-1])
        assert command[:3] == ["agui", "run", url]
        (tmp_path / "answers.json").write_text(json.dumps(example))
        answered = cli(*command[1:], cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.splitlines() == DEMO_LINES[2:]


def test_connect_follows_a_live_run_to_its_end() -> None:
    """Connected while a run is going: the history so far, then the rest of the run live."""
    gate = threading.Event()

    async def slow(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="a", role="assistant")
        yield agui.TextMessageContentEvent(message_id="a", delta="first half, ")
        while not gate.is_set():
            await asyncio.sleep(0.01)
        yield agui.TextMessageContentEvent(message_id="a", delta="second half")
        yield agui.TextMessageEndEvent(message_id="a")

    with durable(slow) as url:
        runner = threading.Thread(target=demo_run, args=(url, "go"))
        runner.start()
        time.sleep(0.3)
        with subprocess.Popen(
            [sys.executable, "-m", "agui", "connect", url, "thread-1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            time.sleep(0.5)
            gate.set()
            out, err = process.communicate(timeout=SUBPROCESS)
        runner.join(SUBPROCESS)
    assert process.returncode == 0, err
    assert out.splitlines() == ["user: go", "first half, second half"]
    assert err == "agui connect: completed\n"


# ── agui stop ─────────────────────────────────────────────────────────────────────────────────


def test_stop_ends_a_running_run_and_says_so() -> None:
    started = threading.Event()

    async def endless(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="a", role="assistant")
        while True:
            yield agui.TextMessageContentEvent(message_id="a", delta=".")
            started.set()
            await asyncio.sleep(0.01)

    with durable(endless) as url:
        runner_done: list[Conversation] = []
        runner = threading.Thread(target=lambda: runner_done.append(demo_run(url, "go")))
        runner.start()
        assert started.wait(SUBPROCESS)
        done = cli("stop", url, "run-1")
        runner.join(SUBPROCESS)
        again = cli("stop", url, "run-1")
        unknown = cli("stop", url, "no-such-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == "agui stop: run run-1 is stopping (it ends with the outcome cancelled)\n"
    assert [r.outcome for r in runner_done[0].runs] == ["cancelled"]
    assert again.returncode == 1
    assert again.stderr.startswith("agui stop: HTTP 409: ") and "run-1" in again.stderr
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("agui stop: HTTP 404: ")


def test_stop_without_a_server_fails_with_one_line() -> None:
    from agui.cli.demo import free_port

    done = cli("stop", f"http://127.0.0.1:{free_port()}/agent", "r1")
    assert done.returncode == 1
    assert done.stderr.startswith("agui stop: Cannot connect to http://127.0.0.1:")
    assert done.stderr.count("\n") == 1


# ── agui run --rejoin ─────────────────────────────────────────────────────────────────────────


def test_rejoin_shows_the_run_again() -> None:
    with durable(DemoAgent(delay=0)) as url:
        demo_run(url)
        done = cli("run", url, "--rejoin", "run-1")
        summary = json.loads(cli("run", url, "--rejoin", "run-1", "--summary").stdout)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == DEMO_LINES
    assert done.stderr == "agui run: completed\n"
    assert summary["outcome"] == "completed"
    assert summary["eventTypes"][0] == "RUN_STARTED" and summary["eventTypes"][-1] == "RUN_FINISHED"


def test_rejoin_after_a_cursor_shows_only_what_follows_it() -> None:
    with durable(DemoAgent(delay=0)) as url:
        demo_run(url)
        position = StreamPosition()
        cursors: list[str] = []
        types: list[str] = []
        for frame in HttpAgent(url).rejoin_frames_sync("run-1", position=position):
            cursors.append(position.last_event_id or "")
            types.append(json.loads(frame)["type"])
        # The cursor of the tool call's result: the answer's text comes after it.
        at = types.index("TOOL_CALL_RESULT")
        done = cli("run", url, "--rejoin", "run-1", "--after", cursors[at])
        summary = json.loads(
            cli("run", url, "--rejoin", "run-1", "--after", cursors[at], "--summary").stdout
        )
        last = cli("run", url, "--rejoin", "run-1", "--after", cursors[-1], "--json")
        wrong = cli("run", url, "--rejoin", "run-1", "--after", "no-such-cursor")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == DEMO_LINES[3:]
    assert summary["eventTypes"] == types[at + 1 :]
    assert summary["messages"][-1]["content"] == "You said: hi (2 characters)."
    assert last.returncode == 0 and last.stdout == "" and last.stderr == ""
    assert wrong.returncode == 1
    assert wrong.stderr == (
        "agui run: failed: Event id no-such-cursor is not in the stream of run run-1.\n"
    )


def test_rejoin_an_unknown_run_fails() -> None:
    with durable(DemoAgent(delay=0)) as url:
        done = cli("run", url, "--rejoin", "no-such-run")
    assert done.returncode == 1
    assert done.stderr.startswith("agui run: failed: HTTP 404: ")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--after", "3"], "agui run: --after goes with --rejoin RUN_ID\n"),
        (
            ["--rejoin", "r", "--message", "hi"],
            "agui run: --message cannot be used with --rejoin (it reads a run that exists)\n",
        ),
        (
            ["--rejoin", "r", "--resume", "answers.json"],
            "agui run: --resume cannot be used with --rejoin (it reads a run that exists)\n",
        ),
        (
            ["--rejoin", "r", "--timeout", "0"],
            "agui run: --timeout must be a positive number of seconds, not 0\n",
        ),
    ],
)
def test_rejoin_usage_errors_exit_2(args: list[str], said: str) -> None:
    done = cli("run", "http://127.0.0.1:9/agent", *args)
    assert done.returncode == 2
    assert done.stderr == said


def test_usage_errors_of_connect_and_stop_exit_2() -> None:
    for args in (["connect", "http://127.0.0.1:9/agent"], ["stop", "http://127.0.0.1:9/agent"]):
        done = cli(*args)
        assert done.returncode == 2
        assert "usage: agui" in done.stderr
    timeout = cli("connect", "http://127.0.0.1:9/agent", "t", "--timeout", "-1")
    assert timeout.returncode == 2
    assert (
        timeout.stderr == "agui connect: --timeout must be a positive number of seconds, not -1\n"
    )
