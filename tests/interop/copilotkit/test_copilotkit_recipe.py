"""docs/integrations/copilotkit.md's recipe, run as written: its agent.py served by its `agui
serve` line, its runtime.mjs started by its `node runtime.mjs` line (beside the packages pinned
in tests/interop/package.json, under .interop/, which its npm install line names), and
CopilotKit's headless client (copilotkit_host.mjs --runtime) talking to that runtime: two turns
of the demo agent, with its tool call and its reasoning in CopilotKit's messages.

The only changes to the blocks: the ports (8000 and 4000 become free ones)."""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.interop.copilotkit.host import copilotkit, install_host
from tests.interop.test_interop import WORK, node
from tests.test_docs import DOCS, block_containing
from tests.usage.support import (
    STARTUP,
    docs_text,
    free_port,
    servers,
    shell_lines,
)

__all__ = ["node"]  # the fixture (node on PATH, the @ag-ui pins installed), used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

PAGE = "integrations/copilotkit.md"
RUNTIME_FILE = "runtime.mjs"
AGENT_PORT = "8000"
RUNTIME_PORT = "4000"


def agent_block() -> str:
    return block_containing(DOCS / PAGE, "AgentApp(DemoAgent()")


def runtime_block() -> str:
    return docs_text(PAGE, "createCopilotNodeListener", language="js")


def serve_line() -> list[str]:
    ((line, _),) = shell_lines(docs_text(PAGE, "agui serve agent:app"))
    return shlex.split(line)


def runtime_lines() -> tuple[list[str], list[str]]:
    (install, _), (start, _) = shell_lines(docs_text(PAGE, f"node {RUNTIME_FILE}"))
    return shlex.split(install), shlex.split(start)


@contextmanager
def running_runtime(node: str, agent_url: str) -> Iterator[str]:
    """The page's runtime.mjs, its agent URL and its port moved, started by the page's line
    (node resolved to the interop session's); its URL once it says it listens."""
    install, start = runtime_lines()
    assert install[:2] == ["npm", "install"], install
    assert "@copilotkit/runtime@1.75.0" in install and "@ag-ui/client" in install, install
    assert start == ["node", RUNTIME_FILE], start
    port = free_port()
    code = runtime_block()
    assert f"http://127.0.0.1:{AGENT_PORT}/agent" in code and f"listen({RUNTIME_PORT}," in code
    code = code.replace(f"http://127.0.0.1:{AGENT_PORT}/agent", agent_url)
    code = code.replace(f"listen({RUNTIME_PORT},", f"listen({port},")
    code = code.replace(f"127.0.0.1:{RUNTIME_PORT}/", f"127.0.0.1:{port}/")
    (WORK / RUNTIME_FILE).write_text(code)
    env = {**os.environ, "COPILOTKIT_TELEMETRY_DISABLED": "true", "DO_NOT_TRACK": "1"}
    proc = subprocess.Popen(
        [node, *start[1:]],
        cwd=WORK,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    said: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        with proc.stdout:
            for line in proc.stdout:
                said.append(line)
                lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    url = f"http://127.0.0.1:{port}/api/copilotkit"
    try:
        while True:
            line = lines.get(timeout=STARTUP)  # hang bound
            assert line is not None, f"node {RUNTIME_FILE} exited:\n{''.join(said)}"
            if f"CopilotKit runtime at {url}" in line:
                break
        yield url
    finally:
        proc.terminate()
        proc.wait(STARTUP)  # hang bound
        reader.join(STARTUP)  # hang bound


def test_the_recipe_serves_the_demo_agent_through_copilotkit(node: str, tmp_path: Path) -> None:
    """Two turns through the page's runtime: the demo agent's tool call, its reasoning and its
    answer reach CopilotKit's messages, and the second turn is answered on the same thread."""
    host = install_host()
    (tmp_path / "agent.py").write_text(agent_block())
    words = serve_line()
    assert words[:3] == ["agui", "serve", "agent:app"] and AGENT_PORT in words, words
    words[words.index(AGENT_PORT)] = "{port}"
    ready = ["serving ", "at http://127.0.0.1:{port}"]
    with servers(tmp_path, {"agui": (words, ready)}) as running:
        agent_url = f"{running['agui'].base}/agent"
        with running_runtime(node, agent_url) as runtime_url:
            steps = [{"send": "hello"}, {"send": "again"}]
            report = copilotkit(node, host, "", steps, runtime=runtime_url)
    first, second = report["steps"]
    for step in (first, second):
        assert step["errors"] == [] and step["coreErrors"] == [], step
    assert first["reply"] == "You said: hello (5 characters).", first
    assert second["reply"] == "You said: again (5 characters).", second
    roles = [m["role"] for m in second["messages"]]
    assert roles.count("user") == 2 and "tool" in roles and "reasoning" in roles, roles
    calls = [c["name"] for m in second["messages"] for c in m.get("toolCalls", [])]
    assert calls == ["count_characters", "count_characters"], second["messages"]
