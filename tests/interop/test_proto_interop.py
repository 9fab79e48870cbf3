"""The binary transport with the official TypeScript client, over real HTTP on 127.0.0.1.

@ag-ui/client 1.0.0's HttpAgent, made to ask for application/vnd.ag-ui.event+proto through its
`fetch` option (ts_proto_client.mjs), runs against this package's AgentApp: the server must answer
protobuf, and the run must complete without a warning, with the same events, messages and state
as the same run over SSE.

Needs node and the npm packages under `.interop/` (`nox -s interop`, which sets AGUI_INTEROP=1);
skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.http.server import AgentApp
from agui.wire.proto import PROTO_MEDIA_TYPE, ProtoFrameDecoder
from tests.conftest import live_server
from tests.test_proto import scripted

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

HERE = Path(__file__).resolve().parent
WORK = HERE.parent.parent / ".interop"
TIMEOUT = 60.0


async def scripted_run(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Every kind of content, fixed ids, and the interrupt-free success the client expects."""
    for event in scripted():
        yield event
    yield agui.MessagesSnapshotEvent(
        messages=(
            agui.UserMessage(id="user-1", content="hello"),
            agui.AssistantMessage(id="m9", content="from the snapshot", metadata={"z": 1, "1": 2}),
        )
    )


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH, and AGUI_INTEROP=1 requires it")
    if not (WORK / "node_modules" / "@ag-ui" / "client" / "package.json").is_file():
        pytest.fail("@ag-ui/client is not installed under .interop (run `nox -s interop`)")
    shutil.copy(HERE / "ts_proto_client.mjs", WORK / "ts_proto_client.mjs")
    return found


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with live_server(AgentApp(scripted_run, path="/agent")) as base:
        yield base + "/agent"


def ts_run(node: str, url: str, transport: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "SUPPRESS_TRANSFORMATION_WARNINGS"}
    done = subprocess.run(
        [node, str(WORK / "ts_proto_client.mjs"), url, "--transport", transport],
        cwd=WORK,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_the_typescript_client_completes_a_binary_run_like_an_sse_run(node: str, url: str) -> None:
    proto = ts_run(node, url, "proto")
    sse = ts_run(node, url, "sse")
    assert proto["contentType"] == "application/vnd.ag-ui.event+proto"
    assert sse["contentType"] == "text/event-stream"
    for report in (proto, sse):
        assert report["ok"], report["error"]
        assert report["warnings"] == []
        assert report["outcome"] == "success"
    assert proto["events"] == sse["events"]
    assert proto["events"][0] == "RUN_STARTED" and proto["events"][-1] == "RUN_FINISHED"
    assert proto["messages"] == sse["messages"]
    assert proto["state"] == sse["state"] == {"count": 1, "items": [{"k": None}], "10": "first"}
    # the snapshot replaces the text and tool messages; reasoning and activity ones stay
    assert [m["id"] for m in proto["messages"]] == ["user-1", "r1m", "a1", "m9"]


@pytest.fixture(scope="module")
def ts_proto_server(node: str) -> Iterator[str]:
    shutil.copy(HERE / "ts_proto_server.mjs", WORK / "ts_proto_server.mjs")
    proc = subprocess.Popen(
        [node, str(WORK / "ts_proto_server.mjs")],
        cwd=WORK,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "ts_proto_server.mjs did not start"
        yield f"http://127.0.0.1:{json.loads(line)['port']}/"
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_http_agent_reads_the_official_encoders_binary_stream(ts_proto_server: str) -> None:
    """@ag-ui/encoder answers protobuf to HttpAgent(binary=True) and SSE to HttpAgent(); every
    frame decodes strictly, and both give the same events (2.5 and 1700000000000 included)."""
    input = agui.RunAgentInput(thread_id="t", run_id="r", messages=())
    binary = list(agui.HttpAgent(ts_proto_server, binary=True, strict=True).run_sync(input))
    text = list(agui.HttpAgent(ts_proto_server, strict=True).run_sync(input))
    assert binary == text
    assert binary[0].type == "RUN_STARTED" and binary[0].timestamp == 1700000000000
    assert binary[-1].outcome == agui.RunFinishedSuccessOutcome(pending_tool_call_ids=("c9",))
    assert list(binary[2].metadata) == ["2", "b"]  # the order the bytes carry (JavaScript's)
    response = httpx.post(
        ts_proto_server,
        content=agui.encode(input),
        headers={"content-type": "application/json", "accept": PROTO_MEDIA_TYPE},
    )
    assert response.headers["content-type"] == PROTO_MEDIA_TYPE
    decoder = ProtoFrameDecoder()
    frames = decoder.feed(response.content)
    decoder.close()
    assert [agui.decode_proto(f, strict=True) for f in frames] == binary
