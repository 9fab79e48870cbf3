"""The argument parser of the `agui` command line and its entry point (the usage is in
agui.cli's docstring); each command lives in its own module, imported when it runs."""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["SERVE_SETTINGS", "Setting", "main", "parser"]


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


def _threads(args: argparse.Namespace) -> int:
    from agui.cli.threads import threads

    return threads(args)


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


class _VersionAction(argparse.Action):
    """`--version`: print the installed version and exit. argparse's own "version" action takes
    the text when the parser is made, and reading it (importlib.metadata, a scan of sys.path)
    took 20-30 ms of every command's start-up; this reads it only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_: Any):
        super().__init__(
            option_strings,
            dest=dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show program's version number and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


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


# ── the settings of agui serve ─────────────────────────────────────────────────────────────────
# Each one is read from its option, else from its environment variable, else its default
# (agui.cli.serve.settings_of). A reader takes the text and returns the value, or raises
# ValueError with what is wrong (argparse then names the option; settings_of the variable).

_OFF = ("none", "off")


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"not a whole number: {text!r}") from None


def _seconds(text: str) -> float:
    """A duration: a number of seconds above 0."""
    value = _number(text)
    if value <= 0:
        raise ValueError(f"must be more than 0 seconds, not {text!r}")
    return value


def _seconds_or_off(text: str) -> float | None:
    """A duration that can be turned off: seconds above 0, or none/off (None)."""
    return None if text.strip().lower() in _OFF else _seconds(text)


def _grace(text: str) -> float:
    """A grace period: seconds, 0 or more (0: none at all)."""
    value = _number(text)
    if value < 0:
        raise ValueError(f"must be 0 seconds or more, not {text!r}")
    return value


def _grace_or_off(text: str) -> float | None:
    """A grace period that can be unbounded: seconds, 0 or more, or none/off (None)."""
    return None if text.strip().lower() in _OFF else _grace(text)


def _count(text: str) -> int:
    """A whole number, 1 or more."""
    value = _whole(text)
    if value < 1:
        raise ValueError(f"must be at least 1, not {text!r}")
    return value


def _count_or_off(text: str) -> int | None:
    """A bound on a number of things: 1 or more, or none/off (None: no limit)."""
    return None if text.strip().lower() in _OFF else _count(text)


_SIZE = re.compile(r"\s*(\d+)\s*([kmgt]?i?b?)\s*", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4}


def _bytes_or_off(text: str) -> int | None:
    """A size in bytes, 1 or more: a whole number, with a unit or not (50MB, 50 MiB, 2GiB: KB,
    MB, GB, TB in powers of 1000, KiB, MiB, GiB, TiB in powers of 1024), or none/off (None)."""
    if text.strip().lower() in _OFF:
        return None
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"not a size in bytes (such as 50MB or 64MiB): {text!r}")
    number, unit = match.group(1), match.group(2).lower()
    if "i" in unit:
        if unit[0] not in "kmgt":
            raise ValueError(f"not a size in bytes (such as 50MB or 64MiB): {text!r}")
        factor = 1024 ** ("kmgt".index(unit[0]) + 1)
    else:
        factor = _UNITS[unit[:1]]
    value: int = int(number) * factor
    if value < 1:
        raise ValueError(f"must be at least 1 byte, not {text!r}")
    return value


def _days_or_off(text: str) -> float | None:
    """A retention period in days above 0 (read as seconds), or none/off (None)."""
    if text.strip().lower() in _OFF:
        return None
    value = _number(text)
    if value <= 0:
        raise ValueError(f"must be more than 0 days, not {text!r}")
    return value * 86400.0


def _port(text: str) -> int:
    """A TCP port, 0 (a free one) to 65535."""
    value = _whole(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"a port is 0 to 65535, not {text!r}")
    return value


def _url_path(text: str) -> str:
    """A path to serve at: it starts with '/'."""
    if not text.startswith("/"):
        raise ValueError(f"a path starts with '/': {text!r}")
    return text


def _detach(value: str) -> str:
    """requested or always (AgentApp's detach)."""
    word = value.strip().lower()
    if word not in ("requested", "always"):
        raise ValueError(f"requested or always, not {value!r}")
    return word


def _compat(value: str) -> str:
    """auto, off or a 0.0.x release from the oldest era's on (AgentApp's compat)."""
    from agui.wire.eras import NEWEST, OLDEST, Compat

    word = value.strip().lower()
    try:
        Compat.parse(word)
    except ValueError:
        raise ValueError(
            f"auto, off or a 0.0.x release from {OLDEST.name} on such as {NEWEST.name}, not "
            f"{value!r}"
        ) from None
    return word


def _text(value: str) -> str:
    """Any text but an empty one."""
    if not value.strip():
        raise ValueError("empty")
    return value


def _origins(value: str) -> list[str]:
    """Origins, separated by commas (an origin holds none)."""
    return [origin.strip() for origin in value.split(",") if origin.strip()]


def _switch(value: str) -> bool:
    """1, true, yes or on; 0, false, no or off."""
    word = value.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not 0 or 1 (or true/false, yes/no, on/off): {value!r}")


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _log_level(value: str) -> str:
    """One of LOG_LEVELS."""
    if value.lower() not in LOG_LEVELS:
        raise ValueError(f"not one of {', '.join(LOG_LEVELS)}: {value!r}")
    return value.lower()


def _log_format(value: str) -> str:
    """text or json."""
    word = value.strip().lower()
    if word not in ("text", "json"):
        raise ValueError(f"text or json, not {value!r}")
    return word


def _argument_type(read: Callable[[str], Any]) -> Callable[[str], Any]:
    """`read` for argparse: its ValueError's message becomes argparse's (which names the option
    and exits with status 2)."""

    def argument(value: str) -> Any:
        try:
            return read(value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    argument.__name__ = read.__name__
    return argument


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting of `agui serve`: its option, its environment variable, how their text is
    read, its default and its help."""

    name: str
    """The setting's name (the option's dest); for an "app" or "retention" setting, the AgentApp
    or agui.store.Retention parameter it sets."""
    flag: str
    env: str
    read: Callable[[str], Any]
    default: Any
    """What applies when neither the option nor the variable is given. An "app" or "retention"
    setting is then not passed at all, so AgentApp's or Retention's own default applies, which
    this one is (the tests compare them)."""
    help: str
    target: Literal["serve", "app", "retention"] = "serve"
    """Who takes it: agui serve itself (uvicorn, what to serve), AgentApp, or the store's
    Retention."""
    metavar: str | None = None
    shown: str | None = None
    """The default as --help shows it (default: the value's text, None as "none")."""
    repeat: bool = False
    """The option may be given more than once (each value read as the variable is)."""
    boolean: bool = False
    """A switch: --NAME and --no-NAME, the variable 0 or 1."""

    @property
    def default_text(self) -> str:
        return self.shown if self.shown is not None else _shown(self.default)

    @property
    def help_text(self) -> str:
        """The help --help shows: the setting's, its default and its variable."""
        return f"{self.help} (default: {self.default_text}; env {self.env})"

    def add_to(self, command: argparse.ArgumentParser) -> None:
        """Add the option to `command`. Not given, it leaves no attribute (SUPPRESS), so that
        a value given as none/off is told apart from no value."""
        if self.boolean:
            command.add_argument(
                self.flag,
                dest=self.name,
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=self.help_text,
            )
            return
        command.add_argument(
            self.flag,
            dest=self.name,
            type=_argument_type(self.read),
            action="append" if self.repeat else "store",
            default=argparse.SUPPRESS,
            metavar=self.metavar,
            help=self.help_text,
        )


SERVE_SETTINGS: tuple[Setting, ...] = (
    Setting("host", "--host", "AGUI_HOST", _text, "127.0.0.1", "the address to listen on"),
    Setting(
        "port", "--port", "AGUI_PORT", _port, 8000, "the port to listen on; 0 picks a free one"
    ),
    Setting(
        "path",
        "--path",
        "AGUI_PATH",
        _url_path,
        "/agent",
        "where an agent is served; not for an ASGI app",
    ),
    Setting(
        "console",
        "--console",
        "AGUI_CONSOLE",
        _switch,
        None,
        "serve the dev console at PATH/console; --no-console (AGUI_CONSOLE=0) leaves it out; "
        "not for an ASGI app, which has its own settings",
        shown="on with a loopback --host, off otherwise",
        boolean=True,
    ),
    Setting(
        "workers",
        "--workers",
        "AGUI_WORKERS",
        _count,
        1,
        "worker processes; each imports MODULE:ATTR itself and gets the same settings",
        metavar="N",
    ),
    Setting(
        "log_level",
        "--log-level",
        "AGUI_LOG_LEVEL",
        _log_level,
        "warning",
        "for uvicorn's logs and agui's: " + ", ".join(LOG_LEVELS),
        metavar="LEVEL",
    ),
    Setting(
        "log_format",
        "--log-format",
        "AGUI_LOG_FORMAT",
        _log_format,
        "text",
        "text, or json: every log line (uvicorn's and agui's) one JSON object on stderr",
        metavar="FORMAT",
    ),
    Setting(
        "metrics",
        "--metrics",
        "AGUI_METRICS",
        _switch,
        True,
        "serve Prometheus metrics at /metrics (runs, outcomes, events, bytes, durations); "
        "--no-metrics (AGUI_METRICS=0) leaves them out; not for an ASGI app",
        shown="on",
        boolean=True,
    ),
    Setting(
        "timeout_graceful_shutdown",
        "--timeout-graceful-shutdown",
        "AGUI_TIMEOUT_GRACEFUL_SHUTDOWN",
        _grace,
        10.0,
        "on SIGTERM or Ctrl-C, runs still going this long after it (less a margin: a second and "
        "a few milliseconds per run) end in RUN_ERROR SERVER_SHUTDOWN, and the server stops",
        metavar="SECONDS",
    ),
    Setting(
        "store",
        "--store",
        "AGUI_STORE",
        _text,
        None,
        "keep every run in an event log and serve durable runs (resume, connect, stop): "
        "memory:// (one process), sqlite:///PATH (one machine), redis://HOST:PORT/DB (many "
        "workers; pip install 'agui-spec[redis]')",
        metavar="URL",
        shown="none, runs are not kept",
    ),
    Setting(
        "authorize",
        "--authorize",
        "AGUI_AUTHORIZE",
        _text,
        None,
        "an async hook `authorize(headers, action, thread_id, run_id)` asked before every "
        "request: it returns the caller's principal (a string) or None to refuse (403); with "
        "--store each principal's threads and runs are its own (see docs/durable-runs.md)",
        metavar="MODULE:ATTR",
        shown="none, every caller is served",
    ),
    Setting(
        "cors_origins",
        "--cors-origin",
        "AGUI_CORS_ORIGINS",
        _origins,
        [],
        "let web pages of this origin call the agent from a browser, e.g. http://localhost:3000 "
        "(repeatable; the variable is comma-separated; '*' allows any origin, for development "
        "only); not for an ASGI app, which sets up its own CORS",
        metavar="ORIGIN",
        shown="none",
        repeat=True,
    ),
    Setting(
        "tracing",
        "--otel",
        "AGUI_OTEL",
        _switch,
        False,
        "trace every run with OpenTelemetry (pip install 'agui-spec[otel]'), the SDK configured "
        "from the OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT, ...) unless MODULE sets a "
        "tracer provider; see docs/tracing.md",
        target="app",
        shown="off",
        boolean=True,
    ),
    Setting(
        "compat",
        "--compat",
        "AGUI_COMPAT",
        _compat,
        "auto",
        "what a client that sends no protocolVersion (every 0.0.x release of @ag-ui/client) is "
        "sent: auto, the stream every 0.0.x release takes (0.0.35's: no reasoning, no "
        "activities); a release such as 0.0.59, that release's (CopilotKit's runtime 1.75 "
        "bundles 0.0.59); off, the 1.0 stream; see docs/compatibility.md; not for an ASGI app",
        target="app",
        metavar="ERA",
    ),
    # The limits (AgentApp's parameters; docs/serving.md#limits).
    Setting(
        "max_run_seconds",
        "--max-run-seconds",
        "AGUI_MAX_RUN_SECONDS",
        _seconds_or_off,
        "auto",
        "a run still going after this many seconds ends in RUN_ERROR TIMEOUT; none: no limit",
        target="app",
        metavar="SECONDS",
        shown="3600 with --store, none without",
    ),
    Setting(
        "max_active_runs",
        "--max-active-runs",
        "AGUI_MAX_ACTIVE_RUNS",
        _count_or_off,
        1000,
        "runs executing on each worker at once (with --store a run counts until it ends); one "
        "more gets 503 with Retry-After; none: no limit",
        target="app",
        metavar="N",
    ),
    Setting(
        "body_timeout",
        "--body-timeout",
        "AGUI_BODY_TIMEOUT",
        _seconds_or_off,
        30.0,
        "seconds a request body may take to arrive; a slower one gets 408; none: no limit",
        target="app",
        metavar="SECONDS",
    ),
    Setting(
        "max_body_bytes",
        "--max-body-bytes",
        "AGUI_MAX_BODY_BYTES",
        _count,
        8 * 1024 * 1024,
        "the largest request body accepted (413 beyond); the history travels with every run",
        target="app",
        metavar="BYTES",
        shown="8388608, 8 MiB",
    ),
    Setting(
        "max_state_nodes",
        "--max-state-nodes",
        "AGUI_MAX_STATE_NODES",
        _count_or_off,
        500_000,
        "the most JSON values a STATE_DELTA may take the state to (a patch's copies can double "
        "it per operation); past it the run ends in RUN_ERROR INVALID_EVENT; none: no limit",
        target="app",
        metavar="N",
    ),
    Setting(
        "keepalive",
        "--keepalive",
        "AGUI_KEEPALIVE",
        _seconds_or_off,
        15.0,
        "seconds of silence before an SSE stream gets a keep-alive comment; none: never",
        target="app",
        metavar="SECONDS",
    ),
    Setting(
        "finish_grace",
        "--finish-grace",
        "AGUI_FINISH_GRACE",
        _grace_or_off,
        10.0,
        "seconds an agent may go on working after its terminal event, then it is cancelled; "
        "none: as long as it takes",
        target="app",
        metavar="SECONDS",
    ),
    Setting(
        "lease_seconds",
        "--lease-seconds",
        "AGUI_LEASE_SECONDS",
        _seconds,
        10.0,
        "with --store: how long a run stays owned by its worker without a renewal (renewed "
        "every third of it); a run whose lease ran out ends in RUN_ERROR RUN_LOST",
        target="app",
        metavar="SECONDS",
    ),
    Setting(
        "max_principal_bytes",
        "--max-principal-bytes",
        "AGUI_MAX_PRINCIPAL_BYTES",
        _bytes_or_off,
        256 * 1024 * 1024,
        "with --store: the JSON one principal's runs may hold (inputs and events; with no "
        "--authorize every caller is one principal); a run that would go beyond gets 429 "
        "naming the limit; a size (50MB, 256MiB) or none",
        target="app",
        metavar="BYTES",
        shown="256MiB (268435456)",
    ),
    Setting(
        "max_principal_threads",
        "--max-principal-threads",
        "AGUI_MAX_PRINCIPAL_THREADS",
        _count_or_off,
        10_000,
        "with --store: the threads one principal may keep; a run on a new thread beyond gets "
        "429 naming the limit; none: no limit",
        target="app",
        metavar="N",
    ),
    Setting(
        "detach",
        "--detach",
        "AGUI_DETACH",
        _detach,
        "requested",
        "with --store: which runs go on when their request goes away; requested: those whose "
        "client sends Agui-Resume: 1 (agui's client, the console), any other is stopped; "
        "always: every run",
        target="app",
        metavar="WHICH",
    ),
    # What the store keeps (agui.store.Retention; docs/durable-runs.md#retention).
    Setting(
        "run_ttl_seconds",
        "--retention-days",
        "AGUI_RETENTION_DAYS",
        _days_or_off,
        7 * 86400.0,
        "with --store: a finished run is dropped this many days after it finished; none: kept "
        "until --max-runs-per-thread pushes it out",
        target="retention",
        metavar="DAYS",
        shown="7",
    ),
    Setting(
        "max_events_per_run",
        "--max-events-per-run",
        "AGUI_MAX_EVENTS_PER_RUN",
        _count_or_off,
        1_000_000,
        "with --store: a run's log keeps its latest this many events (the terminal one always); "
        "none: every event",
        target="retention",
        metavar="N",
    ),
    Setting(
        "max_runs_per_thread",
        "--max-runs-per-thread",
        "AGUI_MAX_RUNS_PER_THREAD",
        _count_or_off,
        100,
        "with --store: a thread keeps its latest this many runs; none: every run",
        target="retention",
        metavar="N",
    ),
)
"""The settings of `agui serve` that have an environment variable, in the order --help lists
them (docs/cli.md#agui-serve lists them too)."""


def _add_header(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help="an HTTP header sent with the request, e.g. 'Authorization: Bearer ...' (repeatable)",
    )


def _add_binary(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--binary",
        action="store_true",
        help="ask for the protobuf transport (SSE is read as well, if that is what the server "
        "answers)",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="agui", description="The AG-UI protocol for Python.")
    top.add_argument("--version", action=_VersionAction)
    commands = top.add_subparsers(dest="command", required=True)
    v = commands.add_parser("validate", help="validate JSON documents against the spec")
    v.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="files of JSON documents: one document, JSON Lines, a JSON array or an SSE capture, "
        "recognised by content (- or none: standard input)",
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
        "alone; anything else is refused at start. Several agents, NAME=MODULE:ATTR each, are "
        "served by one agui.AgentServer: each at /NAME, the settings applied to each, one store "
        "shared (each agent's runs in a namespace of its own), GET /agents listing them. GET "
        "/healthz and GET /readyz answer a load balancer's health checks. Each setting below "
        "with a variable is read from its option, else from that environment variable, else its default ('none' or 'off' "
        "turns off a limit that says so); a bad value is refused (exit 2).",
    )
    s.add_argument(
        "agent",
        nargs="*",
        metavar="MODULE:ATTR | NAME=MODULE:ATTR",
        help="the agent or ASGI app to serve (default: the demo agent); NAME=MODULE:ATTR, "
        "repeated: several agents, each at /NAME, sharing --store, listed at /agents",
    )
    for setting in SERVE_SETTINGS:
        setting.add_to(s)
    s.add_argument(
        "--app-dir",
        default=".",
        metavar="DIR",
        help="look for MODULE in DIR, put first on sys.path (default: the current directory)",
    )
    s.add_argument(
        "--root-path",
        default="",
        metavar="PATH",
        help="the path prefix a proxy serves this app under (ASGI root_path)",
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
    _add_header(r)
    _add_binary(r)
    r.add_argument(
        "--thread-file",
        metavar="PATH",
        help="where an interrupted run saves the thread for the command that answers it "
        "(default: a new file in $XDG_STATE_HOME/agui/threads, ~/.local/state/agui/threads)",
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
    _add_header(c)
    _add_binary(c)
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
    _add_header(t)
    t.add_argument("--timeout", type=float, metavar="SECONDS", help=TIMEOUT_HELP)
    t.set_defaults(run=_stop)
    h = commands.add_parser(
        "threads",
        help="list the threads a server keeps for you, or delete one",
        description="List the caller's threads of a server with a store (GET URL/threads), "
        "newest first: one line each (thread, last update, the last run's outcome or status, "
        "runs, the last run's id); the next page's command goes to stderr. With --delete, delete "
        "a thread (DELETE URL/threads/THREAD): every stored event of its runs, its live run "
        "stopped first. Exit 0 when the server answered, 1 when it refused (400, 403, 404) or "
        "cannot be reached, 2 for a usage error.",
    )
    h.add_argument("url", help="the agent's URL, as for agui run")
    h.add_argument("--limit", type=int, metavar="N", help="at most N threads (1-100; default 20)")
    h.add_argument("--before", metavar="CURSOR", help="the page after the one that gave CURSOR")
    h.add_argument("--delete", metavar="THREAD", help="delete this thread instead of listing")
    h.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    _add_header(h)
    h.add_argument("--timeout", type=float, metavar="SECONDS", help=TIMEOUT_HELP)
    h.set_defaults(run=_threads)
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
    _add_header(k)
    k.add_argument("--timeout", type=float, metavar="SECONDS", help=TIMEOUT_HELP)
    k.set_defaults(run=_capabilities)
    p = commands.add_parser(
        "replay", help="process a recorded stream (JSON Lines or SSE capture) without a server"
    )
    p.add_argument(
        "file",
        metavar="FILE",
        help="the recording: one event per line, a JSON array or SSE frames; - reads standard "
        "input",
    )
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
