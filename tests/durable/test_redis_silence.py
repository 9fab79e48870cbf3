"""A silent agent on Redis (issue 19): a run that sends nothing for longer than every timeout of
the stack (the Redis client's socket timeout, XREAD BLOCK, the health-check interval, TCP and SSE
keep-alives, the lease) still reaches every client whole, on two `agui serve` processes sharing
one redis-server:

(a) the client that POSTed the run, on worker A;
(b) a client cut after the last event before the silence, resuming with Last-Event-ID on B;
(c) a follower connected on worker B from the run's start.

Twice: with the real defaults (`store="redis://..."`, a 6 s silence, just over redis-py 8's 5 s
default socket timeout that cut these streams), and with every timeout at 1 s (`silent:app`,
XREAD BLOCK 1 s, so the blocking read waits 2 s at most; SSE keep-alive 1 s, lease 2 s) and a
silence three times the longest. A worker killed with SIGKILL during the silence still ends the
followers on the other worker with RUN_ERROR RUN_LOST within the lease.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from .support import Frame, Tail, body, stream, types, wait_for

SILENCE = 6.0
"""Seconds the agent is silent: over 5 s (redis-py 8's default socket timeout, agui's former
XREAD BLOCK 5000), and three times the 2 s of the short configuration's longest timeout."""

SHORT = 1.0
"""Every timeout of the short configuration (AGUI_TEST_TIMEOUT of `silent:app`)."""

CONFIGS = {
    # the real defaults: agents:app opens store="redis://..." (lease 10 s, SSE keep-alive 15 s)
    "defaults": ("agents:app", 10.0, {}),
    # every timeout at SHORT: connect, socket, XREAD BLOCK, health check, TCP keep-alive idle,
    # SSE keep-alive; the lease twice that
    "short": ("silent:app", 2 * SHORT, {"AGUI_TEST_TIMEOUT": str(SHORT)}),
}

BEFORE = ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
"""What the silent run sends before its silence."""


def workers(served: Any, url: str, config: str) -> tuple[Any, Any, float]:
    """Two `agui serve` processes on the store `url` in the configuration; and its lease."""
    app, lease, env = CONFIGS[config]
    env = {"AGUI_TEST_STORE": url, "AGUI_TEST_LEASE": str(lease), **env}
    return served(app, env=env), served(app, env=env), lease


def silent(run_id: str, silence: float = SILENCE) -> bytes:
    """A run that sends one content event, then nothing for `silence` seconds, then ends."""
    return body(run_id, count=1, delay=silence)


def check_whole(frames: list[Frame], run_id: str) -> None:
    assert types(frames) == [*BEFORE, "TEXT_MESSAGE_END", "RUN_FINISHED"], frames[-2:]
    assert frames[-1].event == {"type": "RUN_FINISHED", "threadId": "t1", "runId": run_id}
    assert all(frame.id for frame in frames)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_silent_run_reaches_every_client(redis_url: str, served: Any, config: str) -> None:
    a, b, _ = workers(served, redis_url, config)
    started = time.monotonic()
    direct = Tail("POST", f"{a.url}/agent", silent("r1"))  # (a)
    wait_for(lambda: len(direct.frames) >= len(BEFORE))
    follower = Tail("GET", f"{b.url}/agent/runs/r1/events")  # (c)
    # (b): a client whose stream is cut after the last event before the silence ...
    cut = stream(f"{a.url}/agent/runs/r1/events", stop_after=len(BEFORE))
    assert types(cut.frames) == BEFORE
    last = cut.frames[-1].id
    assert last is not None
    # ... resumes on the other worker and waits there through the silence
    resumed = stream(
        f"{b.url}/agent/runs/r1/events", headers={"last-event-id": last}, timeout=4 * SILENCE
    )
    assert types(resumed.frames) == ["TEXT_MESSAGE_END", "RUN_FINISHED"], b.stderr[-3:]
    assert not resumed.broken
    assert time.monotonic() - started >= SILENCE
    whole = direct.wait(2 * SILENCE)
    check_whole(whole, "r1")
    assert not direct.broken
    assert follower.wait(2 * SILENCE) == whole
    assert not follower.broken
    assert cut.frames + resumed.frames == whole
    for worker in (a, b):
        assert "Timeout" not in "".join(worker.stderr), worker.stderr


@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_worker_killed_in_the_silence_ends_in_run_lost(
    redis_url: str, served: Any, config: str
) -> None:
    a, b, lease = workers(served, redis_url, config)
    running = Tail("POST", f"{a.url}/agent", silent("r1", 100.0))
    wait_for(lambda: len(running.frames) >= len(BEFORE))
    following = Tail("GET", f"{b.url}/agent/runs/r1/events")
    wait_for(lambda: len(following.frames) >= len(BEFORE))
    # past the client's timeouts (socket, XREAD BLOCK) on the short configuration
    time.sleep(3 * SHORT)
    a.kill()
    frames = following.wait(3 * lease)  # hang bound: the agent's silence lasts 100 s
    running.wait()
    assert running.broken
    assert not following.broken
    # RUN_LOST came from the lease running out (the agent's silence lasts 100 s, the wait above
    # 3 leases at most), not from the run: no speed figure
    assert types(frames) == [*BEFORE, "RUN_ERROR"]
    assert frames[-1].event["code"] == "RUN_LOST"
    assert stream(f"{b.url}/agent/runs/r1/events").frames == frames
