"""`agui serve --compat` with real releases of the official TypeScript client over real HTTP.

@ag-ui/client 0.0.35 and 0.0.59 send the same request (no protocolVersion), so the server cannot
tell them apart; the operator chooses. An agent that reasons, served as a user serves it (`agui
serve` in a subprocess, tests/usage/support.py's Server):

- `--compat 0.0.59` (and AGUI_COMPAT=0.0.59): @ag-ui/client 0.0.59 delivers the REASONING_*
  events and holds the reasoning message, with nothing on its console;
- the default (auto): 0.0.35 gets its era's stream (no reasoning, the run completes, nothing on
  its console), and so does 0.0.59, and the server's stderr holds one WARNING for both runs,
  naming what was dropped and `--compat 0.0.59` / AGUI_COMPAT=0.0.59;
- 0.0.35 cannot take the 0.0.59 stream (the price of the setting, as docs/compatibility.md says).

Runs only with AGUI_INTEROP=1 (`nox -s interop`), like the rest of tests/interop.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interop.test_compat_matrix import assistant_text, node, ts
from tests.usage.support import Server

__all__ = ["node"]  # the fixture (node, the aliased releases installed), used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

AGENT = """
import agui

SCRIPT = [
    {"type": "REASONING_START", "messageId": "span-1"},
    {"type": "REASONING_MESSAGE_START", "messageId": "thought-1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "thought-1", "delta": "Let me see."},
    {"type": "REASONING_MESSAGE_END", "messageId": "thought-1"},
    {"type": "REASONING_END", "messageId": "span-1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "answer-1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "answer-1", "delta": "It is 4."},
    {"type": "TEXT_MESSAGE_END", "messageId": "answer-1"},
]


async def agent(run):
    for event in SCRIPT:
        yield agui.decode_json(event, strict=True)
"""
REASONING = [
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_END",
]
READY = ["serving reasoner:agent at http://127.0.0.1:{port}/agent"]


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "reasoner.py").write_text(AGENT)
    return tmp_path


@pytest.fixture
def started() -> Iterator[list[Server]]:
    """The servers a test starts, each stopped (Ctrl-C) at its end if the test did not."""
    running: list[Server] = []
    yield running
    for server in running:
        server.stop()


def start(running: list[Server], app_dir: Path, *options: str) -> Server:
    server = Server(
        ["agui", "serve", "reasoner:agent", "--port", "{port}", *options], app_dir, READY
    )
    running.append(server)
    server.wait_ready()
    return server


def reasoning_of(report: Any) -> list[str]:
    return [e for e in report["events"] if e.startswith(("REASONING_", "THINKING_"))]


def check_ran(report: Any) -> None:
    assert report["error"] is None and report["ok"] is True, report["error"]
    assert report["warnings"] == [], report["warnings"]
    assert assistant_text(report) == "It is 4."


def test_compat_0_0_59_gives_0_0_59_its_reasoning(
    node: str, app_dir: Path, started: list[Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    by_option = start(started, app_dir, "--compat", "0.0.59")
    monkeypatch.setenv("AGUI_COMPAT", "0.0.59")
    by_variable = start(started, app_dir)
    for server in (by_option, by_variable):
        report = ts(node, "0.0.59", server.base + "/agent", "2 + 2?")
        check_ran(report)
        assert reasoning_of(report) == REASONING
        reasoning = [m for m in report["messages"] if m["role"] == "reasoning"]
        assert [m["content"] for m in reasoning] == ["Let me see."]
    # the price: the oldest release refuses the stream it does not know
    refused = ts(node, "0.0.35", by_option.base + "/agent", "2 + 2?")
    assert refused["ok"] is False and "invalid_union_discriminator" in refused["error"]
    for server in (by_option, by_variable):
        code, stderr = server.stop()
        assert code in (0, 130), stderr
        assert "WARNING" not in stderr, stderr  # the operator chose: nothing to warn about


def test_auto_keeps_0_0_35_working_and_warns_once(
    node: str, app_dir: Path, started: list[Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGUI_COMPAT", raising=False)
    server = start(started, app_dir)
    for release in ("0.0.35", "0.0.59"):
        report = ts(node, release, server.base + "/agent", "2 + 2?")
        check_ran(report)
        assert reasoning_of(report) == [], release  # the 0.0.35 era has no reasoning at all
        assert "reasoning" not in {m["role"] for m in report["messages"]}
    code, stderr = server.stop()
    assert code in (0, 130), stderr
    warnings = [line for line in stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, stderr  # two runs, one warning
    (warning,) = warnings
    for needle in (
        "dropped REASONING_* events (5x)",
        "0.0.35 and 0.0.59 clients cannot be told apart",
        "`agui serve --compat 0.0.59`",
        "AGUI_COMPAT=0.0.59",
    ):
        assert needle in warning, warning
