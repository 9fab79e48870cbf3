"""`agui run` (post a run to an agent, print what streams back, or a summary) and `agui replay`
(process a recorded stream without a server)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
from agui_generated import (
    PROTOCOL_VERSION,
    DecodeError,
    Problem,
    RunAgentInput,
    RunErrorEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    UserMessage,
)

from agui.errors import HttpError, StreamError
from agui.http.client import HttpAgent
from agui.stream.conversation import Conversation
from agui.wire.codec import decode, dumps, encode

__all__ = ["SUCCESSFUL", "build_input", "replay", "run"]

SUCCESSFUL = ("completed", "interrupt")
"""The summary outcomes that exit 0: the runs ended as the agent meant them to."""


def build_input(args: argparse.Namespace) -> RunAgentInput:
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
        return build_input(args)
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


async def summary_command(args: argparse.Namespace) -> Conversation | None:
    """`agui run --summary`: run through the whole client pipeline; return the Conversation."""
    run_input = _load_input(args)
    if run_input is None:
        return None
    seed: dict[str, Any] = {} if run_input.state is None else {"state": run_input.state}
    conversation = Conversation(
        run_input.thread_id, messages=run_input.messages, keep_events=True, **seed
    )
    try:
        await conversation.run(HttpAgent(args.url), input=run_input)
    except Exception:  # recorded in conversation.failures; the summary reports it
        pass
    return conversation


def run(args: argparse.Namespace) -> int:
    if args.summary:
        conversation = asyncio.run(summary_command(args))
        return 2 if conversation is None else _report(conversation, True)

    return asyncio.run(run_command(args))


def _report(conversation: Conversation, summary: bool) -> int:
    """Print the summary (or, for replay without --summary, the delivered events and the error);
    return the exit code: 0 when the outcome is completed or interrupt, 1 for error or failed."""
    result = conversation.summary()
    out = sys.stdout.buffer
    if summary:
        out.write(dumps(result) + b"\n")
    else:
        for event in result["events"]:
            out.write(dumps(event) + b"\n")
    out.flush()
    if result["error"] is not None and not summary:
        print(f"agui: {result['error']}", file=sys.stderr)
    return 0 if result["outcome"] in SUCCESSFUL else 1


def _recorded(data: bytes) -> Iterator[Any]:
    """The events of a recording: JSON Lines, a JSON array, or an SSE capture (by content)."""
    from agui.wire.sse import SSEDecoder

    body = data.removeprefix(b"\xef\xbb\xbf")
    head = body.lstrip()[:1]
    if head == b"{":
        for line in body.splitlines():
            if line.strip():
                yield line
    elif head == b"[":
        try:
            items = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise DecodeError([Problem("", "json", f"not valid JSON: {exc}")]) from None
        yield from items
    else:
        decoder = SSEDecoder()
        for message in [*decoder.feed(body), *decoder.close()]:
            yield message.data


def replay(args: argparse.Namespace) -> int:
    try:
        with open(args.file, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        print(f"agui replay: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    conversation = Conversation(keep_events=True)
    try:
        conversation.consume(_recorded(data))
    except Exception:  # recorded in conversation.failures; the summary reports it
        pass
    return _report(conversation, args.summary)
