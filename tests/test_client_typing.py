"""HttpAgent's streams are typed as generators, so an application closes them the standard ways
under `mypy --strict`: `contextlib.aclosing(agent.run(...))`, `await stream.aclose()`,
`contextlib.closing(agent.run_sync(...))`, `stream.close()`; and the agent is an async and a
sync context manager (its connection pools)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

USER_CODE = """
import contextlib
from typing import Any

import agui
from agui.http.client import HttpAgent


async def first(url: str, run_input: agui.RunAgentInput) -> agui.Event | agui.UnknownEvent | None:
    async with agui.HttpAgent(url) as agent:
        reveal_type(agent)
        async with contextlib.aclosing(agent.run(run_input)) as events:
            async for event in events:
                return event
        stream = agent.run(run_input)
        reveal_type(stream)
        await stream.aclose()
        frames = agent.frames(run_input)
        reveal_type(frames)
        await frames.aclose()
        await agent.rejoin("run-1").aclose()
        await agent.rejoin_frames("run-1").aclose()
        await agent.connect("thread-1").aclose()
        await agent.connect_frames("thread-1").aclose()
        await agent(run_input).aclose()
    await agent.aclose()
    return None


def first_sync(url: str, run_input: agui.RunAgentInput) -> agui.Event | agui.UnknownEvent | None:
    with HttpAgent(url, max_retries=0) as agent:
        reveal_type(agent)
        with contextlib.closing(agent.run_sync(run_input)) as events:
            for event in events:
                return event
        synced = agent.run_sync(run_input)
        reveal_type(synced)
        synced.close()
        agent.frames_sync(run_input).close()
        agent.rejoin_frames_sync("run-1").close()
        agent.connect_frames_sync("thread-1").close()
    agent.close()
    return None


def failed(error: agui.HttpError) -> tuple[str | None, int, str | None, bytes, int]:
    return error.url, error.status, error.headers.get("retry-after"), error.body, error.attempts


def transport(error: agui.TransportError) -> tuple[str, int, bool, bool]:
    return (
        error.url,
        error.attempts,
        isinstance(error, agui.ConnectError),
        isinstance(error, agui.Timeout),
    )
"""


def test_http_agent_streams_close_the_standard_ways_under_mypy_strict(tmp_path: Path) -> None:
    """mypy --strict on an application that closes every stream HttpAgent returns with
    aclosing / aclose / closing / close: no error, and the streams are revealed as generators."""
    (tmp_path / "app.py").write_text(textwrap.dedent(USER_CODE))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / ".cache"),
            "app.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    revealed = [
        line.split('Revealed type is "', 1)[1].rstrip('"')
        for line in done.stdout.splitlines()
        if "Revealed type is" in line
    ]
    agent, stream, frames, sync_agent, synced = revealed
    assert agent == sync_agent == "agui.http.client.HttpAgent"
    assert stream.startswith("typing.AsyncGenerator[") and "RunStartedEvent" in stream
    assert frames == "typing.AsyncGenerator[bytes | dict[str, Any], None]"
    assert synced.startswith("typing.Generator[") and "UnknownEvent" in synced
