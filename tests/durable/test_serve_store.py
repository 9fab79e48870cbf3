"""`agui serve --store URL` refuses what cannot work before it listens, and the durable-runs page's
examples run as written."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import agui
from tests.conftest import ROOT
from tests.test_docs import block_containing

from .agents import paced
from .support import AGUI, HERE, body, post, stream

PAGE = ROOT / "docs" / "durable-runs.md"


def refused(*args: str) -> str:
    """Run `agui serve ARGS`, which must exit with status 2 before listening; its stderr."""
    done = subprocess.run(
        [str(AGUI), "serve", "--app-dir", str(HERE), "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "serving" not in done.stderr
    return done.stderr


def test_memory_with_workers_is_refused() -> None:
    err = refused("agents:paced", "--store", "memory://", "--workers", "2")
    assert "memory:// keeps runs in one process" in err


def test_an_unknown_store_url_is_refused() -> None:
    err = refused("agents:paced", "--store", "postgres://x/y")
    assert err.startswith("agui serve: --store postgres://x/y: unknown store URL scheme"), err


def test_store_is_for_an_agent_not_an_asgi_app() -> None:
    err = refused("agents:asgi", "--store", "memory://")
    assert "--store is for an agent" in err


@pytest.mark.parametrize("url", ["redis://:secret@127.0.0.1:1/0", "rediss://u:pw@h:6380/2"])
def test_the_serving_line_hides_the_store_password(url: str) -> None:
    from agui.cli.serve import _redacted

    shown = _redacted(url)
    assert "secret" not in shown and "pw" not in shown
    assert "***" in shown


def test_the_authorize_example_runs(live: Callable[[Any], str]) -> None:
    """The page's authorize hook, with an application's lookups filled in."""
    users = {"Bearer alice": "alice", "Bearer bob": "bob"}
    threads: dict[str, str] = {}

    async def user_of(authorization: str | None) -> str | None:
        return users.get(authorization or "")

    async def owns_thread(user: str, thread_id: str) -> bool:
        return threads.setdefault(thread_id, user) == user

    async def owns_run(user: str, run_id: str) -> bool:
        return run_id.startswith(user + "-")

    namespace: dict[str, Any] = {
        "agent": paced,
        "user_of": user_of,
        "owns_thread": owns_thread,
        "owns_run": owns_run,
    }
    exec(
        compile(block_containing(PAGE, "async def authorize("), "durable-runs.md", "exec"),
        namespace,
    )
    example: agui.AgentApp = namespace["app"]
    assert example.store is not None
    url = live(
        agui.AgentApp(paced, path="/agent", store="memory://", authorize=namespace["authorize"])
    )
    alice = {"authorization": "Bearer alice"}
    bob = {"authorization": "Bearer bob"}
    assert post(f"{url}/agent", body("alice-1", "t-alice"), headers=alice).status == 200
    assert post(f"{url}/agent", body("bob-1", "t-alice"), headers=bob).status == 403
    assert post(f"{url}/agent", body("x-1", "t-x")).status == 403  # nobody
    assert stream(f"{url}/agent/threads/t-alice/events", headers=alice).status == 200
    assert stream(f"{url}/agent/threads/t-alice/events", headers=bob).status == 403
    assert stream(f"{url}/agent/runs/alice-1/events", headers=alice).status == 200
    assert stream(f"{url}/agent/runs/alice-1/events", headers=bob).status == 403
    assert httpx.post(f"{url}/agent/runs/alice-1/stop", headers=bob).status_code == 403
    assert httpx.post(f"{url}/agent/runs/alice-1/stop", headers=alice).status_code == 409


def test_the_retention_example_runs(live: Callable[[Any], str]) -> None:
    namespace: dict[str, Any] = {"agent": paced}
    exec(compile(block_containing(PAGE, "Retention("), "durable-runs.md", "exec"), namespace)
    assert namespace["log"].retention.run_ttl_seconds == 24 * 3600
    assert namespace["app"].store is namespace["log"]
