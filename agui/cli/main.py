"""The argument parser of the `agui` command line and its entry point (the usage is in
agui.cli's docstring); each command lives in its own module, imported when it runs."""

from __future__ import annotations

import argparse

__all__ = ["main", "parser"]


# Each command is imported only when it runs (so `agui validate` never loads httpx or uvicorn).
def _validate(args: argparse.Namespace) -> int:
    from agui.cli.validate import validate

    return validate(args)


def _serve(args: argparse.Namespace) -> int:
    from agui.cli.serve import serve

    return serve(args)


def _run(args: argparse.Namespace) -> int:
    from agui.cli.run import run

    return run(args)


def _connect(args: argparse.Namespace) -> int:
    from agui.cli.connect import connect

    return connect(args)


def _stop(args: argparse.Namespace) -> int:
    from agui.cli.connect import stop

    return stop(args)


def _capabilities(args: argparse.Namespace) -> int:
    from agui.cli.capabilities import capabilities

    return capabilities(args)


def _replay(args: argparse.Namespace) -> int:
    from agui.cli.run import replay

    return replay(args)


def _demo(args: argparse.Namespace) -> int:
    from agui.cli.demo import demo

    return demo(args)


DISTRIBUTION = "agui-spec"
"""The name this package is installed by (`pip install agui-spec`); `agui`, the import name, is
another project's on PyPI."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


SUMMARY_HELP = (
    'after the stream ends, print one JSON object {"outcome", "error", "events", "eventTypes", '
    '"messages", "state", "warnings", "pendingInterrupts"}. outcome: "completed" (every run ended '
    'with RUN_FINISHED; exit 0), "interrupt" (the last run waits for answers to interrupts; exit '
    '0), "error" (the agent sent RUN_ERROR; exit 1), "failed" (the client rejected the stream: a '
    "broken rule, a malformed frame, a stream cut inside a run, a transport error; exit 1)"
)

TIMEOUT_HELP = (
    "give up after this long without a connection or data (default: 10 s to connect, 60 s "
    "between reads)"
)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="agui", description="The AG-UI protocol for Python.")
    top.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
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
    v.set_defaults(run=_validate)
    s = commands.add_parser(
        "serve",
        help="serve an agent under uvicorn",
        description="Serve an agent (wrapped in AgentApp at --path) or an ASGI app (an AgentApp, "
        "a FastAPI or Starlette application, as it is) under uvicorn. MODULE:ATTR is an ASGI app "
        "when its call takes (scope, receive, send) and an agent when it takes the RunAgentInput "
        "alone; anything else is refused at start.",
    )
    s.add_argument(
        "agent",
        nargs="?",
        metavar="MODULE:ATTR",
        help="the agent or ASGI app to serve (default: the demo agent)",
    )
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000, help="default 8000; 0 picks a free port")
    s.add_argument("--path", help="where an agent is served (default: /agent; not for an ASGI app)")
    s.add_argument(
        "--no-console",
        action="store_true",
        help="do not serve the dev console at PATH/console (served by default; not for an ASGI app)",
    )
    s.add_argument(
        "--app-dir",
        default=".",
        metavar="DIR",
        help="look for MODULE in DIR, put first on sys.path (default: the current directory)",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="worker processes (default 1); each imports MODULE:ATTR itself",
    )
    s.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        help="for uvicorn's logs and agui's (default: warning)",
    )
    s.add_argument(
        "--root-path",
        default="",
        metavar="PATH",
        help="the path prefix a proxy serves this app under (ASGI root_path)",
    )
    s.add_argument(
        "--timeout-graceful-shutdown",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C, runs still going this long after it (less a margin of at most "
        "a second) end in RUN_ERROR SERVER_SHUTDOWN, and the server stops (default: 10)",
    )
    s.add_argument(
        "--store",
        metavar="URL",
        help="keep every run in an event log and serve durable runs (resume, connect, stop): "
        "memory:// (one process), sqlite:///PATH (one machine), redis://HOST:PORT/DB (many "
        "workers; pip install 'agui-spec[redis]')",
    )
    s.add_argument(
        "--authorize",
        metavar="MODULE:ATTR",
        help="an async hook `authorize(headers, action, thread_id, run_id)` asked before every "
        "request: it returns the caller's principal (a string) or None to refuse (403); with "
        "--store each principal's threads and runs are its own (see docs/durable-runs.md)",
    )
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
    s.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let web pages of this origin call the agent from a browser, e.g. "
        "http://localhost:3000 (repeatable; '*' allows any origin, for development only); not "
        "for an ASGI app, which sets up its own CORS",
    )
    s.set_defaults(run=_serve)
    r = commands.add_parser(
        "run",
        help="post a run to an agent and print what streams back",
        description="Post a run and print what a person needs as it streams: the text, reasoning, "
        "tool calls and their results, and an interrupt with the command that answers it. The "
        "outcome goes to stderr; exit 0 for completed or interrupt, 1 for error or failed (a "
        "rejected stream, a transport error), 2 for a usage error.",
    )
    r.add_argument("url")
    r.add_argument(
        "--message", help='the user message, in a new thread (default: "hello"; not with --input)'
    )
    r.add_argument("--input", metavar="FILE", help="a RunAgentInput JSON file to post")
    r.add_argument(
        "--state", metavar="JSON", help="the state the run starts from (replaces the input's)"
    )
    r.add_argument(
        "--forwarded-props",
        metavar="JSON",
        help="forwardedProps for the agent (replaces the input's), e.g. '{\"interrupt\": true}'",
    )
    r.add_argument(
        "--resume",
        metavar="FILE",
        help="answers to the interrupts of the thread's last run: a JSON list of ResumeEntry "
        'objects ({"interruptId", "status": "resolved" or "cancelled", "payload"}), or one '
        "(to re-attach to a run's stream, see --rejoin)",
    )
    r.add_argument(
        "--rejoin",
        metavar="RUN_ID",
        help="post nothing: read again the stream of a run the server keeps (a server with a "
        "store), from its start, and process it as a run's (not with --message, --input, "
        "--state, --forwarded-props, --resume)",
    )
    r.add_argument(
        "--after",
        metavar="CURSOR",
        help="with --rejoin: show only what comes after this event id (an SSE id: the run is "
        "still read whole, so the client checks it whole)",
    )
    r.add_argument("--timeout", type=float, metavar="SECONDS", help=TIMEOUT_HELP)
    r.add_argument("--json", action="store_true", help="print every delivered event as a JSON line")
    r.add_argument("--summary", action="store_true", help=SUMMARY_HELP)
    r.set_defaults(run=_run)
    c = commands.add_parser(
        "connect",
        help="show a thread a server keeps: its history, then its live run",
        description="Connect to a thread of a server with a store (GET URL/threads/THREAD/events) "
        "and print its conversation: the history (compacted by the server into its messages and "
        "state, or with --full every stored event), then its live run as it streams, until it "
        "ends. The outcome goes to stderr; exit 0 for completed or interrupt, 1 for error or "
        "failed (an unknown thread, a transport error), 2 for a usage error.",
    )
    c.add_argument("url")
    c.add_argument("thread", metavar="THREAD", help="the thread's id")
    c.add_argument(
        "--full", action="store_true", help="every stored event of every run (?history=full)"
    )
    c.add_argument("--timeout", type=float, metavar="SECONDS", help=TIMEOUT_HELP)
    c.add_argument("--json", action="store_true", help="print every delivered event as a JSON line")
    c.add_argument("--summary", action="store_true", help=SUMMARY_HELP)
    c.set_defaults(run=_connect)
    t = commands.add_parser(
        "stop",
        help="stop a run a server keeps, wherever it executes",
        description="Ask a server with a store to stop a run (POST URL/runs/RUN_ID/stop); the run "
        "ends with RUN_FINISHED whose outcome is cancelled. Exit 0 when the server took the "
        "request, 1 when it refused it (404: unknown run, 409: already finished) or cannot be "
        "reached, 2 for a usage error.",
    )
    t.add_argument("url")
    t.add_argument("run_id", metavar="RUN_ID", help="the run's id")
    t.add_argument("--timeout", type=float, metavar="SECONDS", help=TIMEOUT_HELP)
    t.set_defaults(run=_stop)
    k = commands.add_parser(
        "capabilities",
        help="print what an agent declares it can do (JSON)",
        description="Read what an agent declares it can do (GET URL/capabilities, an "
        "AgentCapabilities) and print it as JSON; a field left out is unknown. Exit 0 when it was "
        "read, 1 when the server refused it (404: it serves none), cannot be reached or answered "
        "something else, 2 for a usage error.",
    )
    k.add_argument("url", help="the agent's URL, as for agui run")
    k.add_argument(
        "--strict", action="store_true", help="refuse unknown members instead of dropping them"
    )
    k.add_argument("--compact", action="store_true", help="one line instead of indented JSON")
    k.add_argument("--timeout", type=float, metavar="SECONDS", help=TIMEOUT_HELP)
    k.set_defaults(run=_capabilities)
    p = commands.add_parser(
        "replay", help="process a recorded stream (JSON Lines or SSE capture) without a server"
    )
    p.add_argument("file", metavar="FILE", help="the recording: one event per line, or SSE frames")
    p.add_argument("--summary", action="store_true", help=SUMMARY_HELP)
    p.set_defaults(run=_replay)
    d = commands.add_parser("demo", help="run the demo agent end to end on a loopback port")
    d.add_argument("--message", default="Hello from the agui demo")
    d.set_defaults(run=_demo)
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
