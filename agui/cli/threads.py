"""`agui threads URL`: the caller's threads a server with a store keeps (GET URL/threads), newest
first, one line each (--json: the page as the server sent it); `--delete THREAD` deletes one
(DELETE URL/threads/THREAD: every stored event of its runs, its live run stopped first).

A listing prints at most --limit threads (the server's default 20, at most 100); when more
follow, the command that prints the next page goes to stderr (`--before CURSOR`). Exit 0 when the
server answered, 1 when it refused (400 a bad --limit or --before, 403, 404: no such thread, or
no store there) or cannot be reached, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import shlex
import sys

import orjson

from agui.cli.run import agent_for
from agui.errors import HttpError, StreamError, TransportError

__all__ = ["threads"]


def threads(args: argparse.Namespace) -> int:
    """`agui threads URL [--limit N] [--before CURSOR] [--json] | --delete THREAD`."""
    if args.delete is not None and (args.limit is not None or args.before is not None):
        print("agui threads: --delete takes no --limit or --before", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print(f"agui threads: --limit is 1 or more, not {args.limit}", file=sys.stderr)
        return 2
    agent = agent_for(args)
    if isinstance(agent, str):
        print(f"agui threads: {agent}", file=sys.stderr)
        return 2
    try:
        if args.delete is not None:
            deleted = agent.delete_thread_sync(args.delete)
            if args.json:
                print(orjson.dumps(deleted.to_wire()).decode())
            stopped = f", {deleted.stopped_runs} stopped first" if deleted.stopped_runs else ""
            print(
                f"agui threads: deleted thread {deleted.thread_id} "
                f"({deleted.deleted_runs} runs{stopped})",
                file=sys.stderr,
            )
            return 0
        page = agent.threads_sync(limit=args.limit, before=args.before)
    except (HttpError, StreamError, TransportError) as exc:
        print(f"agui threads: {exc}", file=sys.stderr)
        return 1
    finally:
        agent.close()
    if args.json:
        print(orjson.dumps(page.to_wire()).decode())
    else:
        for thread in page.threads:
            last = thread.last_run
            state = last.outcome or last.status
            when = thread.updated_at.strftime("%Y-%m-%d %H:%M:%S UTC")
            plural = "run" if thread.runs == 1 else "runs"
            print(f"{thread.thread_id}\t{when}\t{state}\t{thread.runs} {plural}\t{last.run_id}")
        if not page.threads:
            print("agui threads: no thread", file=sys.stderr)
    if page.next is not None:
        more = ["agui", "threads", args.url]  # without its --header: it may hold a secret
        if args.limit is not None:
            more += ["--limit", str(args.limit)]
        print(f"agui threads: more: {shlex.join([*more, '--before', page.next])}", file=sys.stderr)
    return 0
