"""The built-in demo agent: a ModelAgent whose model is scripted, so it needs no model and no key.

A run has two rounds, each a step ("round 1", "round 2"). In the first the model reasons (a
reasoning span) and calls the server tool `count_characters` on the user's last message; the tool
publishes the shared state (a snapshot, then a delta counting the echo) and a progress activity,
and its TOOL_CALL_RESULT is the count. In the second the model streams its answer,
"You said: <text> (<n> characters).". RUN_FINISHED carries the scripted model's usage.

`forwardedProps: {"interrupt": true}` makes `count_characters` need the user's approval: the run
finishes after the first round with an interrupt outcome (reason "tool_call") instead, and the next
run's resume entry decides: approved runs the tool (with `editedArgs` if given) and the model
answers with the count; declined or cancelled, the model says it did not count.

`demo_tools()` are the same tools for a real model (`agui serve --model-url URL --model NAME`).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from collections.abc import Iterator, Sequence
from typing import Annotated, Any

import orjson
from agui_generated import (
    ActivitySnapshotEvent,
    AddOperation,
    ReplaceOperation,
    RunAgentInput,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agui.cli.run import build_input
from agui.model.agent import DECLINED, ModelAgent
from agui.model.interface import (
    LanguageModel,
    PromptMessage,
    ToolResultPrompt,
    ToolSpec,
    UserPrompt,
)
from agui.model.scripted import ScriptedModel, Step, call, say, think
from agui.model.tools import ServerTool, ToolContext, tool

__all__ = ["DEMO_SYSTEM_PROMPT", "DemoAgent", "demo", "demo_tools", "free_port"]

DEMO_SYSTEM_PROMPT = (
    "You are the agui demo assistant. When the user says something, call count_characters on "
    "their exact words, then answer in one line: 'You said: <their words> (<n> characters).'"
)


async def count_characters(
    text: Annotated[str, "The text whose characters to count."], context: ToolContext
) -> int:
    """Count the characters of a text, and remember it in the shared state."""
    state = context.state if isinstance(context.state, dict) else {}
    echoes = state.get("echoes")
    start = {**state, "echoes": echoes if isinstance(echoes, int) else 0, "last": state.get("last")}
    context.emit(StateSnapshotEvent(snapshot=start))
    context.emit(
        StateDeltaEvent(
            delta=(
                ReplaceOperation(path="/echoes", value=start["echoes"] + 1),
                ReplaceOperation(path="/last", value=text),
                AddOperation(path="/characters", value=len(text)),
            )
        )
    )
    context.emit(
        ActivitySnapshotEvent(
            message_id=f"activity-{context.tool_call_id}",
            activity_type="progress",
            content={"done": len(text), "total": len(text)},
        )
    )
    return len(text)


def _approval_asked(input: RunAgentInput, arguments: dict[str, Any]) -> bool:
    forwarded = input.forwarded_props
    return isinstance(forwarded, dict) and forwarded.get("interrupt") is True


def demo_tools() -> list[ServerTool]:
    """The demo's server tools: `count_characters`, which asks for approval when the run's
    forwardedProps say {"interrupt": true}."""
    return [tool(count_characters, requires_approval=_approval_asked)]


def demo_script(prompt: Sequence[PromptMessage], tools: Sequence[ToolSpec]) -> Iterator[Step]:
    """What the scripted demo model answers to a prompt."""
    said = _last_user_text(prompt) or "hello"
    last = prompt[-1] if prompt else None
    if isinstance(last, ToolResultPrompt):
        result = last.content if isinstance(last.content, str) else ""
        if result.isdigit():
            yield from say(f"You said: {said} ({result} characters).")
        elif result == DECLINED:
            yield from say(f"You said: {said} (not counted: you declined).")
        else:
            yield from say(f"You said: {said} (the count failed).")
        return
    if not any(spec.name == "count_characters" for spec in tools):
        yield from say(f"You said: {said}")
        return
    yield from think(f"The user said {said!r}; I will count its characters, then echo it.")
    yield from call("count_characters", {"text": said})


def _last_user_text(prompt: Sequence[PromptMessage]) -> str:
    for message in reversed(prompt):
        if isinstance(message, UserPrompt):
            if isinstance(message.content, str):
                return message.content
            return " ".join(getattr(p, "text", "") for p in message.content).strip()
    return ""


class DemoAgent(ModelAgent):
    """The demo agent. `delay` is the pause between streamed parts, in seconds; `model` replaces
    the scripted model (the tools and the system prompt stay)."""

    def __init__(self, delay: float = 0.02, *, model: LanguageModel | None = None) -> None:
        super().__init__(
            # keep_calls=0: the demo serves for as long as `agui serve` runs, and a request's
            # prompt holds the whole conversation it was sent
            model
            or ScriptedModel(
                demo_script, delay=delay, provider="scripted", model="demo", keep_calls=0
            ),
            system=DEMO_SYSTEM_PROMPT,
            tools=demo_tools(),
            max_steps=4,
            steps=True,
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def demo_command(args: argparse.Namespace) -> int:
    """Serve the demo agent on a free loopback port, converse with it, print the transcript."""
    import uvicorn

    from agui.cli.demo import DemoAgent
    from agui.http.client import HttpAgent  # the client: `agui serve` of the demo agent needs none
    from agui.http.server import AgentApp

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
        run_input = build_input(args)
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


def demo(args: argparse.Namespace) -> int:
    return asyncio.run(demo_command(args))
