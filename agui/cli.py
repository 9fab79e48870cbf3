"""The `agui` command line.

agui validate [--as DEFINITION] [--strict] [FILE ...]
    Validate JSON documents against a definition of the spec (default: Event) and print one JSON
    line per document: {"ok", "errors", "warnings", "wire"}. Without FILE, read JSON Lines from
    standard input. A FILE ending in .jsonl holds one document per line. Exit 1 if any failed.
agui serve [MODULE:ATTR] [--host 127.0.0.1] [--port 8000] [--path /agent]
           [--model-url URL --model NAME]
    Serve an agent (default: the built-in demo agent) under uvicorn; with --model, an
    OpenAI-compatible model with the demo tools (key from AGUI_MODEL_API_KEY / OPENAI_API_KEY).
agui run URL [--message TEXT] [--input FILE] [--json] [--summary]
    Post a run and print the assistant's text as it streams, or every event as a JSON line; with
    --summary, process the stream like a client and print one summary JSON object at the end.
agui replay FILE [--summary]
    Process a recorded stream (JSON Lines, one event per line, or an SSE capture) without a server;
    print every delivered event as a JSON line, or with --summary one summary JSON object.
agui demo
    Start the demo agent on a free loopback port, run a conversation against it, print it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

import agui
from agui import DecodeError, EncodeError, Problem
from agui.codec import dumps

MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
"""The largest document validate reads; a bigger one is reported, not parsed."""


def _problem_json(p: Problem) -> dict[str, str]:
    return {"pointer": p.pointer, "kind": p.kind, "message": p.message}


def _documents(args: argparse.Namespace) -> Iterator[bytes | Problem]:
    if not args.files:
        yield from _lines(sys.stdin.buffer, "standard input")
        return
    for name in args.files:
        try:
            with open(name, "rb") as fh:
                if name.endswith(".jsonl"):
                    yield from _lines(fh, name)
                    continue
                data = fh.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as exc:
            yield Problem("", "io", f"cannot read {name}: {exc.strerror or exc}")
            continue
        yield _bounded(data)


def _lines(stream: BinaryIO, name: str) -> Iterator[bytes | Problem]:
    seen = False
    while True:
        line = stream.readline(MAX_DOCUMENT_BYTES + 1)
        if not line:
            break
        if len(line) > MAX_DOCUMENT_BYTES:
            yield _bounded(line)
            # skip the rest of the oversized line
            while line and not line.endswith(b"\n"):
                line = stream.readline(1024 * 1024)
            seen = True
            continue
        if line.strip():
            seen = True
            yield line
    if not seen:
        yield Problem("", "json", f"no JSON document in {name}")


def _bounded(data: bytes) -> bytes | Problem:
    if len(data) > MAX_DOCUMENT_BYTES:
        return Problem("", "too_large", f"document larger than {MAX_DOCUMENT_BYTES} bytes")
    return data


def _validate(doc: bytes | Problem, cls: Any, strict: bool) -> dict[str, Any]:
    if isinstance(doc, Problem):
        return {"ok": False, "errors": [_problem_json(doc)], "warnings": []}
    warnings: list[Problem] = []
    try:
        model = agui.decode(doc, cls, strict=strict, warnings=warnings)
        wire = orjson.Fragment(agui.encode(model))
    except DecodeError as exc:
        errors = [_problem_json(p) for p in exc.problems]
        return {"ok": False, "errors": errors, "warnings": [_problem_json(w) for w in warnings]}
    except EncodeError as exc:
        return {
            "ok": False,
            "errors": [{"pointer": "", "kind": "encode", "message": str(exc)}],
            "warnings": [],
        }
    return {
        "ok": True,
        "errors": [],
        "warnings": [_problem_json(w) for w in warnings],
        "wire": wire,
    }


def validate(args: argparse.Namespace) -> int:
    cls = agui.DEFINITIONS.get(args.definition)
    if cls is None:
        print(f"agui validate: unknown definition {args.definition!r}", file=sys.stderr)
        return 2
    failed = False
    out = sys.stdout.buffer
    for doc in _documents(args):
        result = _validate(doc, cls, args.strict)
        failed |= not result["ok"]
        out.write(orjson.dumps(result) + b"\n")
        out.flush()
    return 1 if failed else 0


def serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        print("agui serve needs uvicorn: pip install 'agui[server]'", file=sys.stderr)
        return 2
    from agui.server import AgentApp

    if args.model_url and not args.model:
        print("agui serve: --model-url needs --model NAME", file=sys.stderr)
        return 2
    if args.model and args.agent:
        print("agui serve: give MODULE:ATTR or --model, not both", file=sys.stderr)
        return 2
    if args.model:
        agent, what = _model_agent(args.model, args.model_url)
    else:
        try:
            agent = _load_agent(args.agent)
        except (ImportError, AttributeError, ValueError) as exc:
            print(f"agui serve: cannot load {args.agent!r}: {exc}", file=sys.stderr)
            return 2
        what = args.agent or "the demo agent"
    print(f"serving {what} at http://{args.host}:{args.port}{args.path}", file=sys.stderr)
    uvicorn.run(
        AgentApp(agent, path=args.path), host=args.host, port=args.port, log_level="warning"
    )
    return 0


def _model_agent(model: str, url: str | None) -> tuple[Any, str]:
    """The demo agent's tools and system prompt with an OpenAI-compatible model."""
    from agui.demo import DemoAgent
    from agui.model.openai import OpenAIChatModel

    chat = OpenAIChatModel(model, base_url=url)
    return DemoAgent(model=chat), f"model {model} at {chat.base_url} with the demo tools"


def _load_agent(spec: str | None) -> Any:
    if not spec:
        from agui.demo import DemoAgent

        return DemoAgent()
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise ValueError("expected MODULE:ATTR")
    import importlib

    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def run(args: argparse.Namespace) -> int:
    import asyncio

    from agui.runner import run_command, summary_command

    if args.summary:
        conversation = asyncio.run(summary_command(args))
        return 2 if conversation is None else _report(conversation, True)

    return asyncio.run(run_command(args))


SUMMARY_HELP = (
    'after the stream ends, print one JSON object {"outcome", "error", "events", "eventTypes", '
    '"messages", "state", "warnings", "pendingInterrupts"}. outcome is "completed" (exit 0) when '
    'every run ended with RUN_FINISHED, "failed" (exit 1) when the client rejected the stream, it '
    "ended inside a run (truncated), or the producer sent RUN_ERROR: that run did not complete"
)


def _report(conversation: Any, summary: bool) -> int:
    """Print the summary (or, for replay without --summary, the delivered events and the error);
    return the exit code."""
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
    return 0 if result["outcome"] == "completed" else 1


def _recorded(data: bytes) -> Iterator[Any]:
    """The events of a recording: JSON Lines, a JSON array, or an SSE capture (by content)."""
    from agui.sse import SSEDecoder

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
    from agui.conversation import Conversation

    try:
        with open(args.file, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        print(f"agui replay: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    conversation = Conversation()
    try:
        conversation.consume(_recorded(data))
    except Exception:  # recorded in conversation.failures; the summary reports it
        pass
    return _report(conversation, args.summary)


def demo(args: argparse.Namespace) -> int:
    import asyncio

    from agui.runner import demo_command

    return asyncio.run(demo_command(args))


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="agui", description="The AG-UI protocol for Python.")
    commands = top.add_subparsers(dest="command", required=True)
    v = commands.add_parser("validate", help="validate JSON documents against the spec")
    v.add_argument(
        "files", nargs="*", metavar="FILE", help="JSON files (default: JSON Lines on stdin)"
    )
    v.add_argument(
        "--as",
        dest="definition",
        default="Event",
        metavar="DEFINITION",
        help="the definition to validate against (default: Event)",
    )
    v.add_argument(
        "--strict", action="store_true", help="exactly the contract: no unknown members or types"
    )
    v.set_defaults(run=validate)
    s = commands.add_parser("serve", help="serve an agent under uvicorn")
    s.add_argument(
        "agent",
        nargs="?",
        metavar="MODULE:ATTR",
        help="the agent to serve (default: the demo agent)",
    )
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--path", default="/agent")
    s.add_argument(
        "--model-url",
        metavar="URL",
        help="the base URL of an OpenAI-compatible chat-completions server, e.g. "
        "http://127.0.0.1:8080/v1 (default: AGUI_MODEL_URL, OPENAI_BASE_URL or api.openai.com); "
        "the key comes from AGUI_MODEL_API_KEY or OPENAI_API_KEY",
    )
    s.add_argument(
        "--model", metavar="NAME", help="serve this model with the demo tools (a model agent)"
    )
    s.set_defaults(run=serve)
    r = commands.add_parser("run", help="post a run to an agent and print what streams back")
    r.add_argument("url")
    r.add_argument("--message", help="the user message (default: read --input, or say hello)")
    r.add_argument("--input", metavar="FILE", help="a RunAgentInput JSON file to post")
    r.add_argument("--json", action="store_true", help="print every event as a JSON line")
    r.add_argument("--summary", action="store_true", help=SUMMARY_HELP)
    r.set_defaults(run=run)
    p = commands.add_parser(
        "replay", help="process a recorded stream (JSON Lines or SSE capture) without a server"
    )
    p.add_argument("file", metavar="FILE", help="the recording: one event per line, or SSE frames")
    p.add_argument("--summary", action="store_true", help=SUMMARY_HELP)
    p.set_defaults(run=replay)
    d = commands.add_parser("demo", help="run the demo agent end to end on a loopback port")
    d.add_argument("--message", default="Hello from the agui demo")
    d.set_defaults(run=demo)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code
