"""AgentApp's `compat` over real HTTP: a request that declares no protocolVersion (every 0.0.x
client) gets the stream of its era, a 1.0 peer's stream is byte for byte the agent's, retired
input shapes are upgraded before the agent sees them; the durable endpoints do the same; the
client pipeline reads a pre-1.0 server's events as the official 1.0 client does."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.http.server import AgentApp
from agui.stream.pipeline import Pipeline
from agui.wire.codec import decode_json
from agui.wire.eras import ERAS, OLDEST, Downgrade
from agui.wire.proto import PROTO_MEDIA_TYPE
from tests.conftest import live_server

Serve = Callable[[Any], str]
REQUESTS = Path(__file__).resolve().parent / "requests"
JSON = {"content-type": "application/json", "accept": "text/event-stream"}

# A run with something of each kind an old client cannot take, every id fixed, so two responses
# can be compared byte for byte.
SCRIPT: list[dict[str, Any]] = [
    {"type": "STEP_STARTED", "stepName": "round 1"},
    {"type": "REASONING_START", "messageId": "span-1"},
    {"type": "REASONING_MESSAGE_START", "messageId": "thought-1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "thought-1", "delta": "Let me see."},
    {"type": "REASONING_MESSAGE_END", "messageId": "thought-1"},
    {"type": "REASONING_END", "messageId": "span-1"},
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "act-1",
        "activityType": "progress",
        "content": {"done": 1},
    },
    {"type": "TEXT_MESSAGE_START", "messageId": "msg-1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-1", "delta": ""},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-1", "delta": "Hello."},
    {"type": "TEXT_MESSAGE_END", "messageId": "msg-1"},
    {"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": "helper"},
    {"type": "SUBAGENT_FINISHED", "subagentRunId": "sub-1"},
    {"type": "STEP_FINISHED", "stepName": "round 1"},
]


class Scripted:
    """Yields SCRIPT (RUN_STARTED and RUN_FINISHED come from the run lifecycle); keeps inputs."""

    def __init__(self) -> None:
        self.inputs: list[agui.RunAgentInput] = []

    async def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
        self.inputs.append(input)
        for event in SCRIPT:
            yield decode_json(event, strict=True)


def body(protocol_version: str | None = None, run_id: str = "run-1") -> bytes:
    value: dict[str, Any] = {"threadId": "thread-1", "runId": run_id, "messages": []}
    if protocol_version is not None:
        value["protocolVersion"] = protocol_version
    return json.dumps(value).encode()


def post(url: str, content: bytes, headers: dict[str, str] = JSON) -> httpx.Response:
    response = httpx.post(url, content=content, headers=headers, timeout=20)
    assert response.status_code == 200, response.text
    return response


def events(response: bytes) -> list[dict[str, Any]]:
    found = []
    for frame in response.split(b"\n\n"):
        for line in frame.split(b"\n"):
            if line.startswith(b"data: "):
                found.append(json.loads(line[6:]))
    return found


def translated(era_name: str, current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    down = Downgrade(next(e for e in ERAS if e.name == era_name))
    return [o for e in current for o in down.feed(e)]


def test_a_1_0_peer_gets_the_agents_stream_byte_for_byte(serve: Serve) -> None:
    off = post(serve(AgentApp(Scripted(), compat="off")), body("1.0")).content
    for compat in ("auto", "0.0.35", "0.0.59"):
        assert post(serve(AgentApp(Scripted(), compat=compat)), body("1.0")).content == off
    sent = events(off)
    assert [e["type"] for e in sent[1:-1]] == [e["type"] for e in SCRIPT]
    assert sent[1:-1] == SCRIPT


def test_a_peer_without_protocol_version_gets_the_oldest_era(serve: Serve) -> None:
    current = events(post(serve(AgentApp(Scripted(), compat="off")), body()).content)
    sent = events(post(serve(AgentApp(Scripted())), body()).content)  # compat="auto"
    assert sent == translated(OLDEST.name, current)
    kinds = {e["type"] for e in sent}
    assert not kinds & {"REASONING_START", "ACTIVITY_SNAPSHOT", "SUBAGENT_STARTED"}
    assert {"type": "TEXT_MESSAGE_START", "messageId": "msg-1", "role": "assistant"} in sent
    assert {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-1", "delta": ""} not in sent


def test_a_pinned_era_and_a_declared_one(serve: Serve) -> None:
    current = events(post(serve(AgentApp(Scripted(), compat="off")), body()).content)
    pinned = events(post(serve(AgentApp(Scripted(), compat="0.0.59")), body()).content)
    assert pinned == translated("0.0.59", current)
    assert "REASONING_START" in {e["type"] for e in pinned}  # 0.0.59 keeps reasoning
    declared = events(post(serve(AgentApp(Scripted())), body("0.0.40")).content)
    assert declared == translated("0.0.37", current)
    assert "THINKING_START" in {e["type"] for e in declared}


def test_what_was_translated_is_logged_once_per_run(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agui.server")
    post(serve(AgentApp(Scripted(), compat="0.0.37")), body())
    said = [r.getMessage() for r in caplog.records if "era" in r.getMessage()]
    assert said == [
        "for a client of the 0.0.37 era (no protocolVersion): translated "
        "REASONING_* events to THINKING_* (5x); dropped ACTIVITY_* events, empty deltas, "
        "SUBAGENT_* events (2x): agent=agent thread=thread-1 run=run-1"
    ]


# ── the warning of compat="auto" ────────────────────────────────────────────────────────────────

TOOL_RESULT_WITH_AN_IMAGE: list[dict[str, Any]] = [
    {"type": "TOOL_CALL_START", "toolCallId": "call-1", "toolCallName": "look"},
    {"type": "TOOL_CALL_END", "toolCallId": "call-1"},
    {
        "type": "TOOL_CALL_RESULT",
        "messageId": "result-1",
        "toolCallId": "call-1",
        "content": [
            {"type": "text", "text": "a dot"},
            {"type": "image", "source": {"type": "url", "value": "https://x.test/dot.png"}},
        ],
    },
]
"""A run whose only drop is one no 0.0.x release could read: content parts in a tool result
(every era, 0.0.59's too, gets their text)."""


class Emits:
    """Yields the events given (RUN_STARTED and RUN_FINISHED come from the run lifecycle)."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = script

    async def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
        for event in self.script:
            yield decode_json(event, strict=True)


def said(caplog: pytest.LogCaptureFixture, level: int, needle: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "agui.server" and r.levelno == level and needle in r.getMessage()
    ]


def wait_for_info(caplog: pytest.LogCaptureFixture, count: int) -> list[str]:
    """The INFO lines of the translations once `count` are there: each is logged when its
    run's producer ends, which may be just after its response."""
    deadline = time.monotonic() + 20  # hang bound
    while len(found := said(caplog, logging.INFO, "era (no protocolVersion)")) < count:
        assert time.monotonic() < deadline, found
        time.sleep(0.01)
    return found


def test_auto_warns_once_about_what_a_newer_client_reads(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Two runs without protocolVersion drop reasoning (and activities, subagents): one
    warning, naming what was dropped and the setting that keeps it; each run has its INFO line."""
    caplog.set_level(logging.INFO, logger="agui.server")
    url = serve(AgentApp(Scripted(), name="helper"))
    post(url, body(run_id="run-1"))
    post(url, body(run_id="run-2"))
    assert len(wait_for_info(caplog, 2)) == 2
    (warning,) = said(caplog, logging.WARNING, "protocolVersion")
    assert warning.startswith(
        "a client without protocolVersion was sent the 0.0.35 era's stream (compat "
        '"auto", agent=helper), which dropped REASONING_* events (5x), ACTIVITY_* events, empty '
        "deltas, SUBAGENT_* events (2x); @ag-ui/client 0.0.59 reads them."
    )
    for needle in (
        "0.0.35 and 0.0.59 clients cannot be told apart",
        "`agui serve --compat 0.0.59`",
        "AGUI_COMPAT=0.0.59",
        'AgentApp(compat="0.0.59")',
    ):
        assert needle in warning
    # another app warns once of its own
    post(serve(AgentApp(Scripted())), body(run_id="run-3"))
    wait_for_info(caplog, 3)
    assert len(said(caplog, logging.WARNING, "protocolVersion")) == 2


def test_auto_does_not_warn_about_what_no_0_0_x_client_reads(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agui.server")
    post(serve(AgentApp(Emits(TOOL_RESULT_WITH_AN_IMAGE))), body())
    (info,) = wait_for_info(caplog, 1)
    assert "dropped image content parts" in info  # dropped, but 0.0.59 drops it too
    assert said(caplog, logging.WARNING, "protocolVersion") == []


@pytest.mark.parametrize("compat", ["0.0.35", "0.0.45"])
def test_an_explicit_era_does_not_warn(
    compat: str, serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """The operator chose the era: what it drops (0.0.35: reasoning; 0.0.45: subagents) is
    logged at INFO only."""
    caplog.set_level(logging.INFO, logger="agui.server")
    post(serve(AgentApp(Scripted(), compat=compat)), body())
    (info,) = wait_for_info(caplog, 1)
    assert "dropped" in info
    assert said(caplog, logging.WARNING, "protocolVersion") == []


def test_a_declared_version_does_not_warn(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    """A client that names its version gets its era: nothing the operator could choose."""
    caplog.set_level(logging.INFO, logger="agui.server")
    post(serve(AgentApp(Scripted())), body("0.0.35"))
    (info,) = wait_for_info(caplog, 1)
    assert "dropped REASONING_* events" in info
    assert said(caplog, logging.WARNING, "protocolVersion") == []


def test_0_0_59_sends_reasoning_to_a_client_without_protocol_version(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """What the warning asks for: with compat="0.0.59" the reasoning reaches a client that
    declares nothing, and nothing is warned about."""
    caplog.set_level(logging.INFO, logger="agui.server")
    sent = events(post(serve(AgentApp(Scripted(), compat="0.0.59")), body()).content)
    reasoning = [e for e in SCRIPT if e["type"].startswith("REASONING_")]
    assert [e for e in sent if e["type"].startswith("REASONING_")] == reasoning
    auto = events(post(serve(AgentApp(Scripted())), body()).content)
    assert not [e for e in auto if e["type"].startswith(("REASONING_", "THINKING_"))]
    wait_for_info(caplog, 1)  # auto's run
    (warning,) = said(caplog, logging.WARNING, "protocolVersion")
    assert "sent the 0.0.35 era's stream" in warning  # auto's run, not 0.0.59's


def test_a_durable_run_warns_once_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="agui.server")
    with live_server(AgentApp(Scripted(), store="memory://")) as url:
        post(url, body(run_id="run-1"))
        post(url, body(run_id="run-2"))
        deadline = time.monotonic() + 20  # hang bound
        while len(said(caplog, logging.INFO, "a response for a client of the 0.0.35 era")) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    (warning,) = said(caplog, logging.WARNING, "protocolVersion")
    assert "dropped REASONING_* events (5x)" in warning and "--compat 0.0.59" in warning


def test_a_binary_response_is_never_translated(serve: Serve) -> None:
    headers = {**JSON, "accept": PROTO_MEDIA_TYPE}
    auto = post(serve(AgentApp(Scripted())), body(), headers)
    off = post(serve(AgentApp(Scripted(), compat="off")), body(), headers)
    assert auto.headers["content-type"] == PROTO_MEDIA_TYPE
    assert auto.content == off.content


def test_an_unknown_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="compat"):
        AgentApp(Scripted(), compat="0.0.20")


@pytest.mark.parametrize("release", ["0.0.35", "0.0.52", "0.0.59"])
def test_a_legacy_image_reaches_the_agent(
    release: str, serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """The body a real 0.0.x release sent for a user message with an image: the agent gets the
    image as an ImagePart (tolerant decoding used to strip the binary part)."""
    agent = Scripted()
    post(serve(AgentApp(agent)), (REQUESTS / f"{release}-binary-data.json").read_bytes())
    (received,) = agent.inputs
    _text, image = received.messages[0].content
    assert isinstance(image, agui.ImagePart)
    assert image.source == agui.DataSource(value=image.source.value, mime_type="image/png")
    assert image.metadata == {"filename": "dot.png"}
    assert any("binary input content" in r.getMessage() for r in caplog.records)


def test_a_legacy_image_is_upgraded_for_a_strict_server_too(serve: Serve) -> None:
    agent = Scripted()
    post(
        serve(AgentApp(agent, strict_input=True)),
        (REQUESTS / "0.0.45-binary-url.json").read_bytes(),
    )
    image = agent.inputs[0].messages[0].content[1]
    assert isinstance(image, agui.ImagePart) and isinstance(image.source, agui.UrlSource)


# ── durable endpoints ──────────────────────────────────────────────────────────────────────────


def test_durable_replays() -> None:
    # A server of its own, whose lifespan ends the store's sweep for lost runs with the test.
    with live_server(AgentApp(Scripted(), store="memory://")) as url:
        _replays(url)


def _replays(url: str) -> None:
    started = post(url, body()).content  # a 0.0.x client: its live tail is translated
    latest = f"{url}/runs/run-1/events?protocolVersion=1.0.0"
    stored = events(httpx.get(latest, timeout=20).content)
    assert [e["type"] for e in stored[1:-1]] == [e["type"] for e in SCRIPT]  # 1.0 asked: 1.0
    assert events(started) == translated(OLDEST.name, stored)
    # a resume that names no version is in the era the run was started in, as the live stream
    # was (TEXT_MESSAGE_START with the role that era requires, no REASONING_*), not in 1.0
    resumed = events(httpx.get(f"{url}/runs/run-1/events", timeout=20).content)
    assert resumed == events(started) != stored
    assert {"type": "TEXT_MESSAGE_START", "messageId": "msg-1", "role": "assistant"} in resumed
    assert not any(e["type"].startswith("REASONING_") for e in resumed)
    again = httpx.get(f"{url}/runs/run-1/events?protocolVersion=0.0.37", timeout=20).content
    assert events(again) == translated("0.0.37", stored)
    # each stored event the era gets something of carries its cursor, on the last of its frames;
    # the dropped ones (activity, an empty delta, two subagent events) carry none
    ids = [line for line in again.split(b"\n") if line.startswith(b"id: ")]
    assert len(ids) == len(stored) - 4 and ids[-1] == f"id: {len(stored)}".encode()
    connected = httpx.get(f"{url}/threads/thread-1/events?protocolVersion=0.0.37", timeout=20)
    snapshot = next(e for e in events(connected.content) if e["type"] == "MESSAGES_SNAPSHOT")
    assert {m["role"] for m in snapshot["messages"]} == {"assistant"}  # no reasoning, no activity
    current = httpx.get(f"{url}/threads/thread-1/events", timeout=20)
    roles = {
        m["role"]
        for e in events(current.content)
        if e["type"] == "MESSAGES_SNAPSHOT"
        for m in e["messages"]
    }
    assert {"reasoning", "activity"} <= roles


def test_a_durable_run_of_a_1_0_client_resumes_in_1_0() -> None:
    """A run whose client declared 1.0 is resumed in 1.0 without `?protocolVersion=`, whatever
    compat gives a client that declares none; one whose client declared a 0.0.x release is
    resumed in that release's era."""
    with live_server(AgentApp(Scripted(), store="memory://")) as url:
        sent = events(post(url, body("1.0.0")).content)
        resumed = events(httpx.get(f"{url}/runs/run-1/events", timeout=20).content)
        assert resumed == sent and sent[1:-1] == SCRIPT
        old = events(post(url, body("0.0.37", run_id="run-2")).content)
        assert events(httpx.get(f"{url}/runs/run-2/events", timeout=20).content) == old
    assert old != sent


def test_durable_with_compat_off() -> None:
    with live_server(AgentApp(Scripted(), store="memory://", compat="off")) as url:
        sent = events(post(url, body()).content)
        again = httpx.get(f"{url}/runs/run-1/events?protocolVersion=0.0.37", timeout=20).content
        resumed = httpx.get(f"{url}/runs/run-1/events", timeout=20).content
    assert [e["type"] for e in sent[1:-1]] == [e["type"] for e in SCRIPT]
    assert events(again) == sent == events(resumed)


# ── reading a pre-1.0 server ──────────────────────────────────────────────────────────────────

LEGACY = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "THINKING_START"},
    {"type": "THINKING_TEXT_MESSAGE_START"},
    {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hm"},
    {"type": "THINKING_TEXT_MESSAGE_END"},
    {"type": "THINKING_END"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


@pytest.mark.parametrize("form", ["bytes", "str", "dict", "unknown-event"])
def test_the_pipeline_upgrades_a_legacy_stream(form: str) -> None:
    def item(event: dict[str, Any]) -> Any:
        text = json.dumps(event)
        if form == "bytes":
            return text.encode()
        if form == "str":
            return text
        if form == "dict":
            return event
        return decode_json(event)  # a decoded source: THINKING_* came as UnknownEvent

    pipeline = Pipeline()
    delivered = pipeline.run([item(e) for e in LEGACY])
    assert [type(e).__name__ for e in delivered][1:6] == [
        "ReasoningStartEvent",
        "ReasoningMessageStartEvent",
        "ReasoningMessageContentEvent",
        "ReasoningMessageEndEvent",
        "ReasoningEndEvent",
    ]
    (message,) = pipeline.reducer.messages
    assert isinstance(message, agui.ReasoningMessage) and message.content == "hm"
    legacy = [w for w in pipeline.warnings if w.kind == "legacy"]
    assert [w.event for w in legacy] == [2, 3, 4, 5, 6]


def test_a_strict_pipeline_takes_the_contract_only() -> None:
    with pytest.raises(agui.StreamError):
        Pipeline(strict=True).run([json.dumps(e).encode() for e in LEGACY])


def test_a_conversation_reads_a_legacy_server(serve: Serve) -> None:
    """Over HTTP: a server sending THINKING_* (no protocolVersion), read by Conversation.run."""

    async def legacy_app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        frames = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in LEGACY)
        await send({"type": "http.response.body", "body": frames})

    import asyncio

    conversation = agui.Conversation("t")
    asyncio.run(conversation.run(agui.HttpAgent(serve(legacy_app))))
    assert conversation.failures == []
    assert [m["role"] for m in conversation.messages_json()] == ["reasoning"]
    assert conversation.messages_json()[0]["content"] == "hm"
