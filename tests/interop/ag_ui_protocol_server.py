"""An AG-UI server built the way ag-ui-protocol's integrations (ag-ui-langgraph, ag-ui-crewai,
...) build theirs: FastAPI, the SDK's pydantic events encoded by its EventEncoder, no
protocolVersion in RUN_STARTED. tests/interop/test_compat_matrix.py reads it with agui's client
and the official 1.0 client. (No `from __future__ import annotations` here: FastAPI reads the
endpoint's annotations.)"""

from collections.abc import AsyncIterator

from ag_ui.core import (
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

app = FastAPI()


@app.post("/agent")
async def run(input: RunAgentInput, request: Request) -> StreamingResponse:
    encoder = EventEncoder(accept=request.headers.get("accept"))

    async def events() -> AsyncIterator[str]:
        for event in (
            RunStartedEvent(thread_id=input.thread_id, run_id=input.run_id),
            ReasoningStartEvent(message_id="r-span"),
            ReasoningMessageStartEvent(message_id="r-1", role="reasoning"),
            ReasoningMessageContentEvent(message_id="r-1", delta="Checking."),
            ReasoningMessageEndEvent(message_id="r-1"),
            ReasoningEndEvent(message_id="r-span"),
            TextMessageStartEvent(message_id="m-1", role="assistant"),
            TextMessageContentEvent(message_id="m-1", delta="Looking it up."),
            TextMessageEndEvent(message_id="m-1"),
            ToolCallStartEvent(
                tool_call_id="c-1", tool_call_name="weather", parent_message_id="m-1"
            ),
            ToolCallArgsEvent(tool_call_id="c-1", delta='{"city":"Paris"}'),
            ToolCallEndEvent(tool_call_id="c-1"),
            ToolCallResultEvent(message_id="t-1", tool_call_id="c-1", content="21 C"),
            StateSnapshotEvent(snapshot={"city": "Paris"}),
            TextMessageStartEvent(message_id="m-2", role="assistant"),
            TextMessageContentEvent(message_id="m-2", delta="It is 21 C in Paris."),
            TextMessageEndEvent(message_id="m-2"),
            RunFinishedEvent(thread_id=input.thread_id, run_id=input.run_id),
        ):
            yield encoder.encode(event)

    return StreamingResponse(events(), media_type=encoder.get_content_type())
