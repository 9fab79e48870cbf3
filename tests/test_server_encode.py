"""The server never sends an invalid frame: an event the encoder refuses (a messageId that is an
int, NaN inside the state) ends the stream in RUN_ERROR INVALID_EVENT, over SSE and over the
binary transport, and nothing of the bad event reaches the client.

(Real HTTP through the `serve` fixture of conftest.py.)
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

import agui
from agui import AgentApp, SSEDecoder
from agui.wire.proto import PROTO_MEDIA_TYPE, ProtoFrameDecoder

from .conftest import run_input

BODY = agui.encode(run_input())
BAD_EVENTS = {
    "message_id=5": agui.TextMessageStartEvent(message_id=5),  # type: ignore[arg-type]
    "NaN state": agui.StateSnapshotEvent(snapshot={"todos": [{"hours": float("nan")}]}),
}


def agent_yielding(bad: Any) -> Callable[[agui.RunAgentInput], AsyncIterator[Any]]:
    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.StepStartedEvent(step_name="s")
        yield bad
        yield agui.StepFinishedEvent(step_name="s")

    return agent


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    return [json.loads(m.data) for m in decoder.feed(raw) + decoder.close()]


def proto_events(raw: bytes) -> list[dict[str, Any]]:
    decoder = ProtoFrameDecoder()
    frames = decoder.feed(raw)
    decoder.close()
    return [agui.to_json(agui.decode_proto(frame, strict=True)) for frame in frames]


@pytest.mark.parametrize("binary", [False, True], ids=["sse", "protobuf"])
@pytest.mark.parametrize("bad", list(BAD_EVENTS))
def test_an_invalid_event_ends_the_stream_in_run_error_invalid_event(
    serve: Callable[[Any], str], caplog: pytest.LogCaptureFixture, bad: str, binary: bool
) -> None:
    caplog.set_level(logging.INFO, logger="agui.server")
    url = serve(AgentApp(agent_yielding(BAD_EVENTS[bad]), keepalive=None))
    headers = {"content-type": "application/json"}
    if binary:
        headers["accept"] = PROTO_MEDIA_TYPE
    with httpx.Client(timeout=10) as client:
        response = client.post(url, content=BODY, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == (PROTO_MEDIA_TYPE if binary else "text/event-stream")
    events = proto_events(response.content) if binary else sse_events(response.content)
    assert [e["type"] for e in events] == ["RUN_STARTED", "STEP_STARTED", "RUN_ERROR"]
    assert events[-1]["code"] == "INVALID_EVENT"
    # nothing of the refused event went out, and the server says why in its log
    assert b"NaN" not in response.content and b"todos" not in response.content
    pointer = "/messageId" if bad == "message_id=5" else "/snapshot/todos/0/hours"
    assert any(
        isinstance(r.exc_info and r.exc_info[1], agui.EncodeError)
        and r.exc_info[1].pointer == pointer  # type: ignore[union-attr]
        for r in caplog.records
    )
