"""`agui connect` (hydrate a thread a server keeps: its history, then its live run) and
`agui stop` (stop a run wherever it executes); `agui run --rejoin` is in agui.cli.run.

`agui connect` goes through the client pipeline (`Conversation.connect`) and exits with the
outcome, as `agui run` does: completed or interrupt exit 0, error or failed (an unknown thread's
404 among them) exit 1, a usage error 2. `agui stop` exits 0 once the server took the request
(202), 1 when it refused it (404 unknown run, 409 already finished) or cannot be reached.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from agui_generated import PROTOCOL_VERSION, RunAgentInput

from agui.agent.protocol import History
from agui.cli.run import Output, agent_for, print_interrupts
from agui.errors import HttpError, TransportError
from agui.stream.conversation import Conversation

__all__ = ["connect", "stop"]


def connect(args: argparse.Namespace) -> int:
    """`agui connect URL THREAD [--full] [--json | --summary]`."""
    agent = agent_for(args)
    if isinstance(agent, str):
        print(f"agui connect: {agent}", file=sys.stderr)
        return 2
    output = Output(args, transcript=True)
    conversation = Conversation(args.thread, keep_events=args.summary, on_event=output.watch)
    history: History = "full" if args.full else "compact"

    def waiting(out: TextIO, styled: bool) -> None:
        # The thread so far is saved with no tools, context or forwardedProps: those of the
        # run that was interrupted are not in the stream.
        bare = RunAgentInput(
            thread_id=args.thread, run_id="-", protocol_version=PROTOCOL_VERSION, messages=()
        )
        print_interrupts(out, styled, conversation, bare, args.url)

    return output.finish(
        "agui connect", conversation, conversation.connect(agent, history=history), waiting
    )


def stop(args: argparse.Namespace) -> int:
    """`agui stop URL RUN_ID`."""
    agent = agent_for(args)
    if isinstance(agent, str):
        print(f"agui stop: {agent}", file=sys.stderr)
        return 2
    try:
        agent.stop_sync(args.run_id)
    except (HttpError, TransportError) as exc:
        print(f"agui stop: {exc}", file=sys.stderr)
        return 1
    print(
        f"agui stop: run {args.run_id} is stopping (it ends with the outcome cancelled)",
        file=sys.stderr,
    )
    return 0
