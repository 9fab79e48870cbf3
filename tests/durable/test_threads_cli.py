"""`agui threads URL [--limit N] [--before CURSOR] [--json]` and `agui threads URL --delete
THREAD` as a user runs them (real subprocesses) against AgentApp with a store and an authorize
hook on loopback, with --header as `agui stop` takes it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agui

from .agents import paced
from .support import body, post

SUBPROCESS = 60.0
TOKEN = ("--header", "Authorization: Bearer s3cret")


async def by_token(headers: Any, action: str, thread_id: Any, run_id: Any) -> str | None:
    return "alice" if headers.get("authorization") == "Bearer s3cret" else None


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agui", *args],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.fixture
def url(live: Callable[[Any], str]) -> str:
    base = live(agui.AgentApp(paced, path="/agent", store="memory://", authorize=by_token))
    for n in range(3):
        headers = {"authorization": "Bearer s3cret"}
        assert post(f"{base}/agent", body(f"r{n}", f"t{n}", count=1), headers=headers).status == 200
    return f"{base}/agent"


def test_list_page_by_page_then_delete(url: str, tmp_path: Path) -> None:
    listed = cli("threads", url, "--limit", "2", *TOKEN, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [row[0] for row in rows] == ["t2", "t1"]
    assert [row[2:] for row in rows] == [["success", "1 run", "r2"], ["success", "1 run", "r1"]]
    more = listed.stderr.strip().rsplit("more: ", 1)[1]
    command = shlex.split(more)
    assert command[:5] == ["agui", "threads", url, "--limit", "2"] and command[5] == "--before"
    rest = cli(*command[1:], *TOKEN, cwd=tmp_path)  # the command it printed, as given
    assert rest.returncode == 0, rest.stderr
    assert [line.split("\t")[0] for line in rest.stdout.splitlines()] == ["t0"]
    assert "more:" not in rest.stderr
    as_json = cli("threads", url, "--json", *TOKEN, cwd=tmp_path)
    page = json.loads(as_json.stdout)
    assert [t["threadId"] for t in page["threads"]] == ["t2", "t1", "t0"]
    deleted = cli("threads", url, "--delete", "t1", *TOKEN, cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    assert "deleted thread t1 (1 runs)" in deleted.stderr
    again = cli("threads", url, "--delete", "t1", *TOKEN, cwd=tmp_path)
    assert again.returncode == 1 and "HTTP 404" in again.stderr, again.stderr
    after = cli("threads", url, "--json", *TOKEN, cwd=tmp_path)
    assert [t["threadId"] for t in json.loads(after.stdout)["threads"]] == ["t2", "t0"]


def test_refusals_and_usage_errors(url: str, tmp_path: Path) -> None:
    refused = cli("threads", url, cwd=tmp_path)  # no token
    assert refused.returncode == 1 and "HTTP 403" in refused.stderr, refused.stderr
    bad = cli("threads", url, "--limit", "500", *TOKEN, cwd=tmp_path)
    assert bad.returncode == 1 and "HTTP 400" in bad.stderr and "/limit" in bad.stderr, bad.stderr
    for args in (["--limit", "0"], ["--delete", "t1", "--limit", "3"], ["--header", "nocolon"]):
        usage = cli("threads", url, *args, cwd=tmp_path)
        assert usage.returncode == 2, (args, usage.stderr)
