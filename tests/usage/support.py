"""What the usage tests share: the pages the examples come from, the installed commands, servers
started the way a user starts them, and the official TypeScript client.

The pages are read when a test runs (README and DOCS are looked up at call time), so pointing
them at a modified copy shows that a broken example fails its test.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

import agui

from ..conftest import ROOT
from ..test_docs import block_containing

K = TypeVar("K")

README = ROOT / "README.md"
DOCS = ROOT / "docs"

VENV_BIN = os.environ.get("AGUI_USAGE_BIN")
"""A virtualenv's bin folder whose commands the tests run instead of this interpreter's: `nox -s
wheel` (tests/wheel/check.py) points it at a fresh virtualenv holding only what a page's install
line brings."""
BIN = Path(VENV_BIN) if VENV_BIN else Path(sys.executable).parent
COMMANDS = {
    "agui": BIN / "agui",
    "uvicorn": BIN / "uvicorn",
    "python": BIN / "python" if VENV_BIN else Path(sys.executable),
}
"""The installed commands a user types, by the name they type."""

EXAMPLE_ADDRESS = "127.0.0.1:8000"
"""Where the examples expect their server; the tests substitute a free port."""

STARTUP = 20.0
"""Seconds a server may take to say it is listening (a fraction of one in practice)."""
TIMEOUT = 60.0
"""Seconds any one command may take (about half of one in practice)."""

INTEROP = os.environ.get("AGUI_INTEROP") == "1"
interop = pytest.mark.skipif(
    not INTEROP, reason="the TypeScript client runs under `nox -s interop` (AGUI_INTEROP=1)"
)
"""The mark of the tests that drive the official TypeScript client."""

WORK = ROOT / ".interop"
PINNED = {"@ag-ui/client": "1.0.0", "@ag-ui/core": "1.0.0"}
TS_CLIENT = ROOT / "tests" / "interop" / "ts_client.mjs"


# ── the pages ─────────────────────────────────────────────────────────────────────────────────


def readme_block(needle: str) -> str:
    """The README's one ```python block containing `needle`."""
    return block_containing(README, needle)


def docs_block(page: str, needle: str) -> str:
    """The one ```python block of docs/`page` containing `needle`."""
    return block_containing(DOCS / page, needle)


def docs_text(page: str, needle: str, language: str = "sh") -> str:
    """The one ````language` block of docs/`page` containing `needle`."""
    fence = re.compile(rf"^```{language}\n(.*?)^```", re.S | re.M)
    found: list[str] = [b for b in fence.findall((DOCS / page).read_text("utf-8")) if needle in b]
    assert len(found) == 1, f"{page}: {len(found)} {language} blocks contain {needle!r}"
    return found[0]


def shell_lines(block: str) -> list[tuple[str, str]]:
    """The commands of a ```sh block with their comments: `cmd  # comment` -> (cmd, comment)."""
    lines = []
    for line in block.splitlines():
        if line.strip():
            command, _, comment = line.partition(" #")
            lines.append((command.strip(), comment.strip()))
    return lines


def at_port(text: str, port: int) -> str:
    """`text` with the examples' address (127.0.0.1:8000) moved to `port`."""
    assert EXAMPLE_ADDRESS in text, f"{EXAMPLE_ADDRESS} is not in {text!r}"
    return text.replace(EXAMPLE_ADDRESS, f"127.0.0.1:{port}")


def module_name(block: str) -> str:
    """The file name a block's first comment gives it (`# echo.py: ...` -> "echo")."""
    found = re.match(r"# (\w+)\.py\b", block)
    assert found, f"the block does not name its file: {block.splitlines()[0]!r}"
    return found.group(1)


# ── the commands ──────────────────────────────────────────────────────────────────────────────


def user_env() -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH (the working directory is found by the
    commands themselves), nothing that silences the TypeScript client's warnings."""
    drop = ("PYTHONPATH", "SUPPRESS_TRANSFORMATION_WARNINGS")
    return {k: v for k, v in os.environ.items() if k not in drop}


def command(words: Sequence[str]) -> list[str]:
    """`words` as typed (`agui run URL`), with the command name resolved to the installed one."""
    head, *rest = words
    return [str(COMMANDS[head]), *rest]


def run(words: Sequence[str] | str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a command line in `cwd` (a string is split as a shell would) and wait for it."""
    argv = shlex.split(words) if isinstance(words, str) else list(words)
    return subprocess.run(
        command(argv),
        cwd=cwd,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def run_all(
    commands: Mapping[K, tuple[Sequence[str] | str, Path]],
) -> dict[K, subprocess.CompletedProcess[str]]:
    """Run every `key: (command line, cwd)` at once, each as `run` does; wait for all. (The
    commands are independent, like a user's shells; at once, a module's take a second or two.)"""
    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        futures = {key: pool.submit(run, words, cwd) for key, (words, cwd) in commands.items()}
    return {key: future.result() for key, future in futures.items()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A server command (`uvicorn echo:app --port {port}`) run in `cwd` on a free port; ready
    when a line of its stderr holds every one of `ready` (formatted with the port)."""

    def __init__(
        self, words: Sequence[str], cwd: Path, ready: Sequence[str], startup: float = STARTUP
    ) -> None:
        self.words = list(words)
        self.cwd = cwd
        self.ready = list(ready)
        self.startup = startup
        self.stderr: list[str] = []
        self._launch()

    def _launch(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            command([w.format(port=self.port) for w in self.words]),
            cwd=self.cwd,
            env=user_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, as a command typed in a shell
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr = []
        self.interrupted = False
        self.reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self.reader.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        with proc.stderr:
            for line in proc.stderr:
                self.stderr.append(line)
                self.lines.put(line)
        self.lines.put(None)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, attempts: int = 3) -> None:
        """Wait for the ready line; start again on another port if this one was taken meanwhile."""
        for attempt in range(attempts):
            wanted = [r.format(port=self.port) for r in self.ready]
            while True:
                try:
                    line = self.lines.get(timeout=self.startup)
                except queue.Empty:
                    raise AssertionError(
                        f"`{shlex.join(self.words)}` said nothing like {wanted} in "
                        f"{self.startup:g} s:\n" + "".join(self.stderr)
                    ) from None
                if line is None or all(w in line for w in wanted):
                    break
            if line is not None:
                return
            self.proc.wait(self.startup)
            text = "".join(self.stderr)
            if "in use" not in text or attempt == attempts - 1:
                raise AssertionError(f"`{shlex.join(self.words)}` did not start:\n{text}")
            self._launch()

    def logged(self, text: str, within: float = STARTUP) -> bool:
        """Whether `text` reaches stderr within `within` seconds (a hang bound): the server writes
        its log line after the response's last byte, and the reader thread copies it later."""
        deadline = time.monotonic() + within
        while text not in "".join(self.stderr):
            if time.monotonic() > deadline or not self.reader.is_alive():
                return text in "".join(self.stderr)
            time.sleep(0.05)
        return True

    def interrupt(self) -> None:
        """Ctrl-C, once (a second one would tell the server to hurry), as a user stops it: SIGINT
        to the command's process group, as a terminal sends it."""
        if self.proc.poll() is None and not self.interrupted:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.interrupted = True

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, then wait: its exit status and everything it wrote on stderr."""
        if self.proc.poll() is None:
            self.interrupt()
            try:
                self.proc.wait(STARTUP)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(STARTUP)
        return self.proc.returncode, "".join(self.stderr)


@contextmanager
def servers(
    cwd: Path, commands: Mapping[str, tuple[Sequence[str], Sequence[str]]]
) -> Iterator[dict[str, Server]]:
    """Start every `name: (words, ready)` server at once in `cwd`, wait until all listen, yield
    them by name; stop them with Ctrl-C at the end. Each must exit cleanly, having logged
    nothing worse than INFO (a user would see it in their server's console)."""
    running: dict[str, Server] = {}
    with ExitStack() as stack:
        for name, (words, ready) in commands.items():
            running[name] = Server(words, cwd, ready)
            stack.callback(running[name].stop)
        for server in running.values():
            server.wait_ready()
        yield running
        for server in running.values():  # all at once: each takes a moment to shut down
            server.interrupt()
        stopped = {name: server.stop() for name, server in running.items()}
    for name, (code, stderr) in stopped.items():
        # 130: the exit status of a command stopped by Ctrl-C (agui serve); uvicorn exits 0.
        assert code in (0, 130), f"{name} exited {code} on Ctrl-C:\n{stderr}"
        for bad in ("Traceback", "ERROR", "WARNING", "Exception"):
            assert bad not in stderr, f"{name} logged {bad}:\n{stderr}"


# ── this package's client ─────────────────────────────────────────────────────────────────────


def python_view(url: str, message: str) -> tuple[str | None, list[dict[str, Any]]]:
    """One run of a new Conversation through HttpAgent: the outcome and the messages."""
    conversation = agui.Conversation()
    result = asyncio.run(conversation.run(agui.HttpAgent(url), message))
    return (None if result is None else result.outcome), conversation.messages_json()


def without_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without their ids (each client makes its own)."""
    return [{k: v for k, v in m.items() if k != "id"} for m in messages]


# ── the official TypeScript client ────────────────────────────────────────────────────────────


def find_node() -> str:
    """The node executable with the pinned packages under .interop/ (a failure, not a skip, when
    anything is missing: only tests marked `interop` call this)."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH, and AGUI_INTEROP=1 requires it")
    for name, version in PINNED.items():
        manifest = WORK / "node_modules" / name / "package.json"
        if not manifest.is_file():
            pytest.fail(
                f"{name} is not installed under {WORK}: copy tests/interop/package*.json there "
                "and run `npm ci --prefix .interop` (or `nox -s interop`)"
            )
        installed = json.loads(manifest.read_text())["version"]
        if installed != version:
            pytest.fail(f"{name} {installed} is installed under {WORK}; the pin is {version}")
    return found


def ts_runs(
    node: str, urls: Mapping[K, str], message: str
) -> dict[K, subprocess.CompletedProcess[str]]:
    """One run of the official client (tests/interop/ts_client.mjs) at each URL, all at once.
    The script runs from beside the packages, since ES modules resolve from the script's
    folder; `check_ts_agrees` reads what it printed."""
    script = WORK / "usage_ts_client.mjs"
    shutil.copy(TS_CLIENT, script)
    shutil.copy(TS_CLIENT.with_name("console_capture.mjs"), WORK / "console_capture.mjs")

    def one(url: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [node, str(script), url, "--message", message],
            cwd=WORK,
            env=user_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        futures = {key: pool.submit(one, url) for key, url in urls.items()}
    return {key: future.result() for key, future in futures.items()}


def check_ts_agrees(
    done: subprocess.CompletedProcess[str], url: str, message: str, reply: str
) -> dict[str, Any]:
    """The official client's run at `url` completed with no warning, its messages are `message`
    and the assistant's `reply`, and they are the messages this package's Conversation holds
    after the same run; returns the client's report."""
    assert done.returncode == 0, f"ts_client.mjs exited {done.returncode}: {done.stderr}"
    lines = done.stdout.strip().splitlines()
    assert lines, f"ts_client.mjs printed nothing; stderr: {done.stderr}"
    report: dict[str, Any] = json.loads(lines[-1])
    assert report["error"] is None and report["ok"] is True, report["error"]
    assert report["warnings"] == [], "the official client warned:\n" + "\n".join(report["warnings"])
    assert report["outcome"] == "success"
    assert report["events"][0] == "RUN_STARTED" and report["events"][-1] == "RUN_FINISHED"
    assert report["messages"][0] == {"id": "user-ts-1", "role": "user", "content": message}
    assert without_ids(report["messages"][1:]) == [{"role": "assistant", "content": reply}]
    outcome, messages = python_view(url, message)
    assert outcome == "success"
    assert without_ids(report["messages"]) == without_ids(messages)
    return report
