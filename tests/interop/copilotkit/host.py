"""What the CopilotKit host tests share: copilotkit_host.mjs put beside the installed packages and
run with a script, the record of every request this server saw, and a summary of both sides for
an assertion's message.

`copilotkit_host.mjs` starts @copilotkit/runtime 1.75.0 (its v2 node listener, the default
InMemoryAgentRunner) on a free loopback port with one agent, an @ag-ui/client HttpAgent whose URL
is the AgentApp served here, and drives it with CopilotKit's own headless client
(@copilotkit/core's CopilotKitCore, a `window` shim being all it needs in node) as its React hooks
do; the script's steps and what the report holds are described at the top of that file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.interop.test_interop import TIMEOUT, WORK

HERE = Path(__file__).resolve().parent
SCRIPT = "copilotkit_host.mjs"
PINNED = {"@copilotkit/runtime": "1.75.0", "@copilotkit/core": "1.75.0"}
THREAD = "thread-copilotkit"


def install_host() -> str:
    """copilotkit_host.mjs beside the installed packages (ESM imports resolve from its folder)."""
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
    shutil.copy(HERE / SCRIPT, WORK / SCRIPT)
    return str(WORK / SCRIPT)


def copilotkit(
    node: str,
    host: str,
    url: str,
    steps: list[dict[str, Any]],
    *,
    client: str = "runtime",
    tools: list[dict[str, Any]] | None = None,
    thread: str = THREAD,
    runtime: str | None = None,
) -> Any:
    """Run copilotkit_host.mjs against `url` with these steps; its report. `client` is the
    runtime agent's @ag-ui/client: "runtime" the 0.0.59 @copilotkit/runtime depends on (no
    protocolVersion in its requests), "top" the 1.0.0 pinned beside it. `runtime`: the URL of
    a CopilotKit runtime running elsewhere, driven instead of one started for `url`."""
    script = {"thread": thread, "tools": tools or [], "steps": steps}
    where = ["--runtime", runtime] if runtime else [url, "--client", client]
    command = [node, host, *where, "--script", json.dumps(script)]
    done = subprocess.run(
        command, cwd=WORK, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"{SCRIPT} printed nothing (exit {done.returncode}); stderr: {done.stderr}"
    report = json.loads(lines[-1])
    assert done.returncode == 0 and report["ok"], report.get("error") or done.stderr
    report["stderr"] = done.stderr
    return report


class Requests:
    """An ASGI wrapper keeping, for each HTTP request, its method and path (and a POSTed run's
    runId), its status, when the client left (http.disconnect) and when the response ended
    (monotonic seconds)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry: dict[str, Any] = {
            "method": scope["method"],
            "path": scope["path"],
            "runId": None,
            "at": time.monotonic(),
            "status": None,
            "disconnect": None,
            "ended": None,
        }
        self.seen.append(entry)
        body = bytearray()

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body") and body.startswith(b"{"):
                    entry["runId"] = json.loads(body).get("runId")
            elif message["type"] == "http.disconnect" and entry["disconnect"] is None:
                entry["disconnect"] = time.monotonic()
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                entry["ended"] = time.monotonic()
            await send(message)

        await self.app(scope, receiving, sending)


def sse_events(response: httpx.Response) -> list[dict[str, Any]]:
    """The events of an SSE answer read to its end."""
    return [
        json.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def summary(report: Any, requests: Requests) -> str:
    """What each side saw, for an assertion's message."""
    lines = [f"versions: {report['versions']}"]
    for step in report["steps"]:
        lines.append(
            f"step {step['index']} {step['kind']} {step['text']!r}: events {step['events']}, "
            f"errors {step['errors']}, thrown {step['thrown']!r}, core errors "
            f"{step['coreErrors']}, reply {step['reply']!r}, state {step['state']}, "
            f"pending {step['pendingInterrupts']}"
        )
    lines.append(
        "client -> runtime: "
        + ", ".join(
            f"{r['method']} {r['path']} {r['status']}" for r in report["traffic"]["runtime"]
        )
    )
    lines.append(
        "runtime -> agui: "
        + ", ".join(
            f"{r['method']} {r['path']} {r['status']}{' aborted' if r['aborted'] else ''}"
            for r in report["traffic"]["agent"]
        )
    )
    lines.append(
        "agui saw: "
        + ", ".join(
            f"{r['method']} {r['path']} {r['status']}"
            f"{' disconnect' if r['disconnect'] and not r['ended'] else ''}"
            for r in requests.seen
        )
    )
    if report.get("stderr"):
        lines.append(f"stderr: {report['stderr'][-2000:]}")
    return "\n".join(lines)
