"""`agui capabilities URL`: what an agent declares it can do (GET URL/capabilities), printed as
JSON.

The document is the server's AgentCapabilities as HttpAgent.capabilities() decodes it (tolerantly,
or strictly with --strict), written back in its wire form, indented (--compact: one line). A field
left out is unknown, not unsupported. Exit 0 when it was read, 1 when the server refused it (404:
no capabilities served there), cannot be reached or answered something else, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from agui.cli.run import agent_for
from agui.errors import HttpError, StreamError, TransportError
from agui.wire.codec import encode

__all__ = ["capabilities"]


def capabilities(args: argparse.Namespace) -> int:
    """`agui capabilities URL [--strict] [--compact] [--timeout SECONDS]`."""
    agent = agent_for(args)
    if isinstance(agent, str):
        print(f"agui capabilities: {agent}", file=sys.stderr)
        return 2
    agent.strict = args.strict
    try:
        declared = agent.capabilities_sync()
    except (HttpError, StreamError, TransportError) as exc:
        print(f"agui capabilities: {exc}", file=sys.stderr)
        return 1
    option = 0 if args.compact else orjson.OPT_INDENT_2
    sys.stdout.write(orjson.dumps(orjson.loads(encode(declared)), option=option).decode() + "\n")
    return 0
