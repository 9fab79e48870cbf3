"""`agui serve --store URL` refuses what cannot work before it listens, and the durable-runs page's
examples run as written."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT
from tests.test_docs import block_containing

from .agents import paced
from .support import AGUI, HERE, Served, body, post, stream

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


def _authorize_example(folder: Path) -> Path:
    """The page's authorize example, written to the file its first comment names."""
    block = block_containing(PAGE, "async def authorize(")
    name = block.splitlines()[0].split(":")[0].removeprefix("# ")
    (folder / name).write_text(block)
    return folder / name


def _principals_hold(url: str) -> None:
    """Alice's run is hers: Bob's requests for it are answered as for an unknown id."""
    alice = {"authorization": "Bearer alice-token"}
    bob = {"authorization": "Bearer bob-token"}
    started = post(f"{url}/agent", body("run-1", "thread-1"), headers=alice)
    assert started.status == 200 and started.frames[-1].type == "RUN_FINISHED"
    assert post(f"{url}/agent", body("x-1", "t-x")).status == 403  # nobody
    assert stream(f"{url}/agent/threads/thread-1/events", headers=alice).status == 200
    assert stream(f"{url}/agent/runs/run-1/events", headers=alice).status == 200
    for who, status in ((bob, 404), ({}, 403)):
        assert stream(f"{url}/agent/threads/thread-1/events", headers=who).status == status
        assert stream(f"{url}/agent/runs/run-1/events", headers=who).status == status
        assert httpx.post(f"{url}/agent/runs/run-1/stop", headers=who).status_code == status
    assert httpx.post(f"{url}/agent/runs/run-1/stop", headers=alice).status_code == 409  # ended
    # Bob's run under the same ids is his own.
    mine = post(f"{url}/agent", body("run-1", "thread-1", text="bob"), headers=bob)
    assert mine.status == 200 and mine.frames[-1].type == "RUN_FINISHED"


def test_the_authorize_example_runs(tmp_path: Path) -> None:
    """As written: `agui serve app:app` from the folder holding it, and the command line's
    `agui serve app:agent --store ... --authorize app:authorize`."""
    module = _authorize_example(tmp_path)
    stem = module.stem
    for args in (
        (f"{stem}:app",),
        (
            f"{stem}:agent",
            "--store",
            f"sqlite:///{tmp_path / 'runs.db'}",
            "--authorize",
            f"{stem}:authorize",
        ),
    ):
        server = Served("--app-dir", str(tmp_path), *args, "--no-console")
        try:
            _principals_hold(server.url.removesuffix("/agent"))
        finally:
            server.stop()


def test_authorize_must_be_an_async_function() -> None:
    err = refused("agents:paced", "--authorize", "agents:paced_sync_hook")
    assert "--authorize: cannot load 'agents:paced_sync_hook'" in err
    err = refused("agents:paced", "--authorize", "agents:app")
    assert "not an async function" in err
    err = refused("agents:asgi", "--authorize", "agents:paced")
    assert "--authorize is for an agent" in err


def test_the_retention_example_runs(live: Callable[[Any], str]) -> None:
    namespace: dict[str, Any] = {"agent": paced}
    exec(compile(block_containing(PAGE, "Retention("), "durable-runs.md", "exec"), namespace)
    assert namespace["log"].retention.run_ttl_seconds == 24 * 3600
    assert namespace["app"].store is namespace["log"]
