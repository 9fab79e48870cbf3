"""`agui serve`: an agent (or a model with the demo tools) under uvicorn."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

__all__ = ["serve"]


def serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        print("agui serve needs uvicorn: pip install 'agui[server]'", file=sys.stderr)
        return 2
    from agui.http.server import AgentApp

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
    from agui.cli.demo import DemoAgent
    from agui.model.openai import OpenAIChatModel

    chat = OpenAIChatModel(model, base_url=url)
    return DemoAgent(model=chat), f"model {model} at {chat.base_url} with the demo tools"


def _load_agent(spec: str | None) -> Any:
    if not spec:
        from agui.cli.demo import DemoAgent

        return DemoAgent()
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise ValueError("expected MODULE:ATTR")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target
