"""The client side of the command line: `agui run` and `agui demo`."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import uuid
from typing import Any

import orjson
from agui_generated import (
    PROTOCOL_VERSION,
    DecodeError,
    RunAgentInput,
    RunErrorEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)

from agui.client import HttpAgent, HttpError, StreamError
from agui.codec import decode, encode


def _input(args: argparse.Namespace) -> RunAgentInput:
    if getattr(args, "input", None):
        with open(args.input, "rb") as fh:
            value: RunAgentInput = decode(fh.read(), RunAgentInput)
            return value
    text = getattr(args, "message", None) or "hello"
    return RunAgentInput(
        thread_id=f"thread-{uuid.uuid4().hex[:12]}",
        run_id=f"run-{uuid.uuid4().hex[:12]}",
        protocol_version=PROTOCOL_VERSION,
        messages=(UserMessage(id=f"user-{uuid.uuid4().hex[:12]}", content=text),),
    )


async def _stream(url: str, run_input: RunAgentInput, as_json: bool) -> int:
    out = sys.stdout
    failed = False
    try:
        async for event in HttpAgent(url).run(run_input):
            if as_json:
                out.write(encode(event).decode() + "\n")
            elif isinstance(event, TextMessageContentEvent):
                out.write(event.delta)
            elif isinstance(event, TextMessageEndEvent):
                out.write("\n")
            if isinstance(event, RunErrorEvent):
                failed = True
                if not as_json:
                    print(
                        f"run failed: {event.message}" + (f" ({event.code})" if event.code else ""),
                        file=sys.stderr,
                    )
            out.flush()
    except (HttpError, StreamError) as exc:
        print(f"agui run: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"agui run: cannot reach {url}: {exc}", file=sys.stderr)
        return 1
    return 1 if failed else 0


def _load_input(args: argparse.Namespace) -> RunAgentInput | None:
    """The run's input, or None after saying on stderr why it cannot be used."""
    try:
        return _input(args)
    except (OSError, DecodeError) as exc:
        print(f"agui run: cannot use {args.input}: {exc}", file=sys.stderr)
        return None


async def run_command(args: argparse.Namespace) -> int:
    run_input = _load_input(args)
    if run_input is None:
        return 2
    import httpx

    try:
        return await _stream(args.url, run_input, args.json)
    except httpx.HTTPError as exc:
        print(f"agui run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


async def summary_command(args: argparse.Namespace) -> Any:
    """`agui run --summary`: run through the whole client pipeline; return the Conversation."""
    from agui.conversation import Conversation

    run_input = _load_input(args)
    if run_input is None:
        return None
    seed: dict[str, Any] = {} if run_input.state is None else {"state": run_input.state}
    conversation = Conversation(run_input.thread_id, messages=run_input.messages, **seed)
    try:
        await conversation.run(HttpAgent(args.url), input=run_input)
    except Exception:  # recorded in conversation.failures; the summary reports it
        pass
    return conversation


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def demo_command(args: argparse.Namespace) -> int:
    """Serve the demo agent on a free loopback port, converse with it, print the transcript."""
    import uvicorn

    from agui.demo import DemoAgent
    from agui.server import AgentApp

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            AgentApp(DemoAgent(delay=0.01), path="/agent"),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            return 1
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{port}/agent"
    try:
        print(f"demo agent at {url}")
        run_input = _input(args)
        print(f"user: {args.message}")
        kinds: list[str] = []
        text: list[str] = []
        state: Any = None
        calls: dict[str, list[str]] = {}  # id -> [name, arguments]
        async for event in HttpAgent(url).run(run_input):
            kinds.append(str(event.type))
            if isinstance(event, TextMessageContentEvent):
                text.append(event.delta)
            elif isinstance(event, ToolCallStartEvent):
                calls[event.tool_call_id] = [event.tool_call_name, ""]
            elif isinstance(event, ToolCallArgsEvent) and event.tool_call_id in calls:
                calls[event.tool_call_id][1] += event.delta
            elif isinstance(event, ToolCallResultEvent) and event.tool_call_id in calls:
                name, arguments = calls[event.tool_call_id]
                result = event.content if isinstance(event.content, str) else "(content parts)"
                print(f"tool: {name}({arguments}) -> {result}")
            snapshot = getattr(event, "snapshot", None)
            if snapshot is not None:
                state = snapshot
        print(f"assistant: {''.join(text).strip()}")
        print(f"events: {len(kinds)} ({kinds[0]} ... {kinds[-1]})")
        print(f"first state snapshot: {orjson.dumps(state).decode()}")
        return 0 if kinds and kinds[-1] == "RUN_FINISHED" else 1
    finally:
        server.should_exit = True
        await serving
