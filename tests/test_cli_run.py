"""`agui run`, run as a real subprocess against real servers on 127.0.0.1 (the `serve` fixture).

Every mode (plain, --json, --summary) goes through the client pipeline and exits with the
outcome: 0 for completed or interrupt, 1 for error or failed, 2 for a usage error. The plain mode
shows what a person needs (text, chunks included; reasoning; tool calls and results; an interrupt
and the exact command answering it), styled only on a terminal; a closed stdout pipe ends it
quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import select
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

import agui
from agui.cli.demo import DemoAgent

Serve = Callable[[Any], str]
SUBPROCESS = 60.0
RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
DEMO_LINES = [
    "reasoning: The user said 'hi'; I will count its characters, then echo it.",
    'tool call: count_characters({"text":"hi"})',
    "tool result: 2",
    "You said: hi (2 characters).",
]


def cli_env() -> dict[str, str]:
    """The environment of a user's run: no PYTHONUNBUFFERED, no NO_COLOR."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "NO_COLOR")}


def agui_run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`agui run ARGS`; with `cwd`, temporary files go there too, and the state directory (an
    interrupted thread's file) is cwd/state."""
    env = cli_env()
    if cwd is not None:
        env |= {"TMPDIR": str(cwd), "XDG_STATE_HOME": str(cwd / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "agui", "run", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS,
        check=False,
        env=env,
        cwd=cwd,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def body_app(body: bytes, content_type: bytes = b"text/event-stream") -> Any:
    """An ASGI app answering every POST with `body` (200) as it is."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", content_type)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def sse(*events: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


# ── what the plain mode shows ──────────────────────────────────────────────────────────────


def test_plain_shows_reasoning_tool_calls_results_and_text(serve: Serve) -> None:
    """The demo run as a person reads it, unstyled when piped; the outcome on stderr; exit 0."""
    url = serve(agui.AgentApp(DemoAgent(delay=0)))
    done = agui_run(url, "--message", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == DEMO_LINES
    assert "\x1b" not in done.stdout
    assert done.stderr == "agui run: completed\n"


def test_plain_prints_text_sent_as_chunks(serve: Serve) -> None:
    """TEXT_MESSAGE_CHUNK text is printed (after chunk expansion), and a chunked tool call too."""
    url = serve(
        body_app(
            sse(
                RUN,
                {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "Hel"},
                {"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"},
                {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "delta": "{}"},
                {"type": "TOOL_CALL_RESULT", "messageId": "r", "toolCallId": "c", "content": "ok"},
                DONE,
            )
        )
    )
    done = agui_run(url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Hello", "tool call: f({})", "tool result: ok"]


def test_plain_is_styled_only_on_a_terminal(serve: Serve) -> None:
    """On a terminal, reasoning is dimmed and tool lines coloured (ANSI); piped, plain text (the
    test above)."""
    url = serve(agui.AgentApp(DemoAgent(delay=0)))
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "agui", "run", url, "--message", "hi"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=cli_env(),
    ) as proc:
        os.close(follower)
        out = b""
        while True:
            ready, _, _ = select.select([leader], [], [], SUBPROCESS)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            out += chunk
        proc.wait(SUBPROCESS)
    os.close(leader)
    text = out.decode()
    assert proc.returncode == 0
    assert "\x1b[2mreasoning: \x1b[0m" in text
    assert '\x1b[36mtool call: count_characters({"text":"hi"})\x1b[0m' in text
    assert "You said: hi (2 characters)." in text


# ── every mode tells the truth ─────────────────────────────────────────────────────────────

BROKEN = {
    "cut-mid-message": (
        sse(RUN, {"type": "TEXT_MESSAGE_START", "messageId": "m"}),
        b"text/event-stream",
        "without a terminal event",
    ),
    "empty-200": (b"", b"text/event-stream", "without any event"),
    "html-200": (
        b"<!doctype html><title>Sign in</title>",
        b"text/html; charset=utf-8",
        "expected text/event-stream, got text/html",
    ),
    "after-run-finished": (
        sse(RUN, DONE, {"type": "TEXT_MESSAGE_START", "messageId": "m"}),
        b"text/event-stream",
        "has already finished",
    ),
}


@pytest.mark.parametrize("mode", ["plain", "json", "summary"])
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_every_mode_fails_a_rejected_stream(serve: Serve, mode: str, case: str) -> None:
    """A stream cut mid-message, an empty 200, an HTML page, content after RUN_FINISHED: exit 1
    and outcome failed in every mode, with the reason (stderr, or the summary)."""
    body, media, reason = BROKEN[case]
    url = serve(body_app(body, media))
    flags = {"plain": [], "json": ["--json"], "summary": ["--summary"]}[mode]
    done = agui_run(url, *flags)
    assert done.returncode == 1, (done.stdout, done.stderr)
    if mode == "summary":
        summary = json.loads(done.stdout)
        assert summary["outcome"] == "failed" and reason in summary["error"]
    else:
        [line] = [x for x in done.stderr.splitlines() if not x.startswith("agui run: warning")]
        assert line.startswith("agui run: failed: ") and reason in line


@pytest.mark.parametrize("mode", ["plain", "json"])
def test_a_run_error_exits_1_with_the_error_outcome(serve: Serve, mode: str) -> None:
    """The agent's RUN_ERROR: outcome error, exit 1, its message on stderr; --json still prints
    every event."""
    url = serve(body_app(sse(RUN, {"type": "RUN_ERROR", "message": "overloaded", "code": "BUSY"})))
    done = agui_run(url, *(["--json"] if mode == "json" else []))
    assert done.returncode == 1
    assert done.stderr == "agui run: error: overloaded\n"
    if mode == "json":
        assert [json.loads(x)["type"] for x in done.stdout.splitlines()] == [
            "RUN_STARTED",
            "RUN_ERROR",
        ]


def test_json_prints_the_delivered_events_and_nothing_on_stderr(serve: Serve) -> None:
    """--json prints the events as delivered (chunks expanded, unknown events dropped); a
    completed run says nothing on stderr, not even its warnings."""
    url = serve(
        body_app(
            sse(
                {**RUN, "futureProp": 1},
                {"type": "FUTURE_EVENT"},
                {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"},
                DONE,
            )
        )
    )
    done = agui_run(url, "--json")
    assert done.returncode == 0 and done.stderr == ""
    assert [json.loads(x) for x in done.stdout.splitlines()] == [
        RUN,
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        DONE,
    ]
    plain = agui_run(url)
    assert plain.stdout == "hi\n"
    first, *rest = plain.stderr.splitlines()
    assert first.startswith("agui run: warning: event 1: ") and "futureProp" in first
    assert rest == [
        "agui run: warning: event 2: Dropping unrecognised event 'FUTURE_EVENT': the protocol "
        "does not describe it.",
        "agui run: completed",
    ]


# ── interrupts ─────────────────────────────────────────────────────────────────────────────


def test_an_interrupt_is_shown_with_the_command_that_answers_it(
    serve: Serve, tmp_path: Path
) -> None:
    """An interrupted run prints the interrupt, the resume file's shape and the exact command;
    writing that file and running that command resumes the thread to its answer."""
    url = serve(agui.AgentApp(DemoAgent(delay=0)))
    done = agui_run(
        url, "--message", "hi", "--forwarded-props", '{"interrupt": true}', cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "agui run: interrupt: the run waits for 1 answer\n"
    lines = done.stdout.splitlines()
    assert lines[:2] == DEMO_LINES[:2]
    assert lines[2] == "interrupt: the run waits for 1 answer(s)"
    assert lines[3].startswith("  approve-call-") and lines[3].endswith(
        " (tool_call): Allow the assistant to call count_characters?"
    )
    example = json.loads(
        lines[
            lines.index(
                "To answer, write a JSON file with one entry per interrupt, e.g. answers.json:"
            )
            + 1
        ]
    )
    [entry] = example
    assert entry == {
        "interruptId": lines[3].split()[0],
        "status": "resolved",
        "payload": {"approved": True},
    }
    command = shlex.split(lines[-1])
    assert command[:3] == ["agui", "run", url] and command[-2:] == ["--resume", "answers.json"]
    thread = Path(command[4])  # the thread so far, in the state directory
    assert thread.parent == tmp_path / "state" / "agui" / "threads" and thread.is_file()
    (tmp_path / "answers.json").write_text(json.dumps(example))
    resumed = agui_run(*command[2:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == DEMO_LINES[2:]
    assert resumed.stderr == "agui run: completed\n"
    assert not thread.exists()  # done with: removed


def test_state_forwarded_props_and_resume_reach_the_agent(serve: Serve, tmp_path: Path) -> None:
    """--state, --forwarded-props and --resume (a list, or one object) go into the input, over
    the --input file's own."""
    received: list[agui.RunAgentInput] = []

    async def agent(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        received.append(run_input)
        yield agui.StateSnapshotEvent(snapshot=run_input.state)

    url = serve(agui.AgentApp(agent))
    entry = {"interruptId": "i", "status": "resolved", "payload": {"ok": True}}
    (tmp_path / "one.json").write_text(json.dumps(entry))
    (tmp_path / "list.json").write_text(json.dumps([entry, {**entry, "interruptId": "j"}]))
    (tmp_path / "input.json").write_bytes(
        agui.encode(
            agui.RunAgentInput(
                thread_id="t", run_id="r", messages=(), state={"old": 1}, forwarded_props={"x": 1}
            )
        )
    )
    flags = ["--state", '{"n": 1}', "--forwarded-props", '{"interrupt": true}']
    assert agui_run(url, *flags, "--resume", tmp_path / "one.json").returncode == 0
    assert (
        agui_run(
            url, "--input", tmp_path / "input.json", *flags, "--resume", tmp_path / "list.json"
        ).returncode
        == 0
    )
    first, second = received
    for run_input in received:
        assert run_input.state == {"n": 1}
        assert run_input.forwarded_props == {"interrupt": True}
    assert first.resume == (agui.decode_json(entry, agui.ResumeEntry),)
    assert [e.interrupt_id for e in second.resume or ()] == ["i", "j"]
    assert second.thread_id == "t"


# ── usage errors, timeouts, pipes ──────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--message", "hi", "--input", "{input}"], "--message cannot be used with --input"),
        (["--input", "{missing}"], "cannot read --input"),
        (["--state", "{nope"], "--state is not valid JSON"),
        (["--state", "null"], "--state cannot be null"),
        (["--forwarded-props", "[1,"], "--forwarded-props is not valid JSON"),
        (["--resume", "{missing}"], "cannot read --resume"),
        (["--resume", "{bad_entry}"], "is not a ResumeEntry"),
        (["--timeout", "0"], "--timeout must be a positive number"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], said: str) -> None:
    """Each usage error is one line on stderr, exit 2, nothing on stdout, no request made."""
    (tmp_path / "input.json").write_text('{"threadId": "t", "runId": "r", "messages": []}')
    (tmp_path / "bad.json").write_text('[{"interruptId": "i", "status": "maybe"}]')
    paths = {
        "input": tmp_path / "input.json",
        "missing": tmp_path / "missing.json",
        "bad_entry": tmp_path / "bad.json",
    }
    done = agui_run("http://127.0.0.1:9/agent", *(paths.get(a.strip("{}"), a) for a in args))
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("agui run: ") and said in line


def test_timeout_gives_up_on_a_silent_server(serve: Serve) -> None:
    """--timeout SECONDS bounds the wait for data: failed, exit 1, the URL named. The agent is
    silent for an hour (it is cancelled when the client leaves) and the default read timeout is
    60 s: a ReadTimeout within the test's bound is the --timeout's."""

    async def silent(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageStartEvent(message_id="m")
        await asyncio.sleep(3600)

    url = serve(agui.AgentApp(silent, keepalive=None))
    started = time.monotonic()
    done = agui_run(url, "--timeout", "0.5")
    assert done.returncode == 1
    assert done.stderr == f"agui run: failed: Timed out waiting for data from {url} (ReadTimeout)\n"
    assert time.monotonic() - started < 30  # hang bound: under the default read timeout (60 s)


@pytest.mark.parametrize("mode", ["plain", "json"])
def test_a_closed_stdout_pipe_ends_quietly(serve: Serve, mode: str) -> None:
    """`agui run URL | head -1` with a real pipe: head prints one line, agui stops without a
    traceback or any "Exception ignored" noise, and the server's agent is stopped."""
    stopped = threading.Event()

    async def chatty(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
        try:
            for n in range(100_000):
                yield agui.TextMessageStartEvent(message_id=f"m{n}")
                yield agui.TextMessageContentEvent(message_id=f"m{n}", delta=f"line {n}")
                yield agui.TextMessageEndEvent(message_id=f"m{n}")
                await asyncio.sleep(0.001)
        finally:
            stopped.set()

    url = serve(agui.AgentApp(chatty))
    flags = ["--json"] if mode == "json" else []
    with subprocess.Popen(
        [sys.executable, "-m", "agui", "run", url, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    ) as producer:
        assert producer.stdout is not None
        head = subprocess.run(
            ["head", "-1"], stdin=producer.stdout, capture_output=True, timeout=SUBPROCESS
        )
        producer.stdout.close()
        _, err = producer.communicate(timeout=SUBPROCESS)
    assert len(head.stdout.splitlines()) == 1
    assert err == b"", err.decode()
    assert producer.returncode == 0
    assert stopped.wait(10), "the agent ran on after the client left"


def test_a_run_ends_at_its_terminal_event_while_the_server_keeps_the_answer_open(
    serve: Serve,
) -> None:
    """A server (or a proxy) that holds the response open after RUN_FINISHED: `agui run` ends with
    the run's outcome, exit 0, where it used to wait for the --timeout and fail."""
    started_event = agui.RunStartedEvent(thread_id="t", run_id="r")
    text = agui.TextMessageChunkEvent(message_id="m", delta="done")
    finished = agui.RunFinishedEvent(thread_id="t", run_id="r")
    frames = b"".join(b"data: " + agui.encode(e) + b"\n\n" for e in (started_event, text, finished))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": frames, "more_body": True})
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SUBPROCESS):  # hang bound
                while (await receive())["type"] != "http.disconnect":
                    pass

    url = serve(app)
    done = agui_run(url, "--timeout", "3", "--json")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["type"] for line in done.stdout.splitlines()][-1] == "RUN_FINISHED"
