"""`agui serve`: an agent, an ASGI app, or a model with the demo tools, under uvicorn.

MODULE:ATTR is looked up the way uvicorn looks up its app: MODULE is imported with the
`--app-dir` (default: the current directory) first on sys.path. What it names decides how it is
served (`serving_kind`): an ASGI app (an AgentApp, a FastAPI or Starlette application) as it is,
an agent wrapped in AgentApp at `--path`; anything else is refused before the server starts.

Several agents, `NAME=MODULE:ATTR ...` (each an agent, not an ASGI app), are served by one
agui.AgentServer: each at `/NAME` with the settings an agent's AgentApp gets, the store opened
once and shared (each agent's runs in a namespace of its own), `GET /agents` listing them;
`--path` is refused then. Every AgentApp with a path of its own and every AgentServer answers
`GET /healthz` and `GET /readyz` (agui.http.health).

The listening socket is bound here, so a busy port is one line and exit status 1; the "serving"
line is printed once uvicorn has started (with several workers: once the socket is bound, since
the workers start on their own). Shutdown: the server tells every AgentApp when it begins, so that
runs end in RUN_ERROR SERVER_SHUTDOWN within `--timeout-graceful-shutdown`; with workers, each
worker's uvicorn server is hooked the same way (see `worker_app`).

`--store URL` gives the agent's AgentApp an event log (durable runs, agui.http.durable); a URL no
backend takes, `memory://` with several workers and `--store` with an ASGI app are refused.

`--cors-origin ORIGIN` (repeatable) gives the agent's AgentApp `cors_origins`, so a web page of
that origin can call it from a browser (the preflight answered, the CORS headers on every route);
`*` allows any origin and is warned about; an ORIGIN that is not one (a path, a trailing slash)
and `--cors-origin` with an ASGI app are refused.

`--otel` (AGUI_OTEL=1) gives the agent's AgentApp `tracing=True` (agui.http.tracing): unless
MODULE set a tracer provider, the OpenTelemetry SDK configured from the OTEL_* variables, which are
checked at start (an exporter that is not installed is refused, exit 2).

The agent's AgentApp serves the dev console (agui.console) at `{path}/console`, whose URL is
printed after the "serving" line, when `--host` is a loopback address (the default); on another
address it is off unless `--console` asks for it; `--no-console` leaves it out (an ASGI app has
its own settings).

The settings of agui.cli.main.SERVE_SETTINGS (the address, the path, the store, the limits of
AgentApp, the store's retention, ...) are read by `settings_of`: each from its option, else its
environment variable (`AGUI_MAX_RUN_SECONDS`, ...), else its default; a bad value of either is
refused with exit status 2 naming the option or the variable. A limit that is not given is not
passed, so AgentApp's default applies (max_run_seconds: 3600 with a store, none without). The
workers get the settings the parent read (as JSON in AGUI_SERVE_SETTINGS), not their own
environment's.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import ipaddress
import json
import os
import signal
import socket
import sys
from collections.abc import Mapping
from typing import Any, Literal

from agui.errors import AguiError, MissingExtraError, require_extra

__all__ = ["serve", "serving_kind", "settings_of", "worker_app"]

_SETTINGS = "AGUI_SERVE_SETTINGS"
"""The environment variable that carries the settings to the worker processes."""
_DEFAULT_PATH = "/agent"


class _Refused(Exception):
    """What to serve cannot be served; the message is the one line to print."""


def serve(args: argparse.Namespace) -> int:
    try:
        require_extra("server", "agui serve", ("uvicorn",))
    except MissingExtraError as missing:
        print(f"agui serve: {missing}", file=sys.stderr)
        return 2
    import uvicorn

    try:
        settings = settings_of(args, os.environ)
    except _Refused as refused:
        print(f"agui serve: {refused}", file=sys.stderr)
        return 2
    if args.model_url and not args.model:
        print("agui serve: --model-url needs --model NAME", file=sys.stderr)
        return 2
    if args.model and settings["agents"]:
        print("agui serve: give NAME=MODULE:ATTR or --model, not both", file=sys.stderr)
        return 2
    if args.model and args.agent:
        print("agui serve: give MODULE:ATTR or --model, not both", file=sys.stderr)
        return 2
    given: dict[str, str] = settings["given"]
    store = settings["store"]
    workers: int = settings["workers"]
    if not store:
        durable = [
            given[name]
            for name in (
                "lease_seconds",
                "detach",
                "max_principal_bytes",
                "max_principal_threads",
                *settings["retention"],
            )
            if name in given
        ]
        if durable:
            print(
                f"agui serve: {', '.join(durable)}: only with a store (durable runs): give "
                "--store URL",
                file=sys.stderr,
            )
            return 2
    if store and workers > 1 and store.split(":", 1)[0].lower() == "memory":
        print(
            "agui serve: memory:// keeps runs in one process; with --workers use "
            "sqlite:///PATH or redis://HOST:PORT/DB",
            file=sys.stderr,
        )
        return 2
    origins: list[str] = settings["cors_origins"]
    _on_path(settings["app_dir"])
    try:
        app, what, path = _build(settings)
    except _Refused as refused:
        print(f"agui serve: {refused}", file=sys.stderr)
        return 2
    try:
        sock = _bind(settings["host"], settings["port"])
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f"{settings['host']}:{settings['port']}"
        print(f"agui serve: cannot listen on {where}: {reason}", file=sys.stderr)
        return 1
    from agui.http.server import AgentApp

    port = sock.getsockname()[1]
    host = f"[{settings['host']}]" if ":" in settings["host"] else settings["host"]
    line = f"serving {what} at http://{host}:{port}{path}"
    if args.root_path:
        line += f" (root path {args.root_path})"
    if origins:
        line += f" (CORS: {', '.join(origins)})"
    console = ""
    if isinstance(app, AgentApp) and app.console:
        # Where the app serves it: under its own path (an AgentApp with path None answers it at
        # any path ending in /console). An ASGI app of another kind decides its own routes.
        at = (app.path or "").rstrip("/")
        console = f"\nconsole: http://{host}:{port}{at}/console"  # as the "serving" URL
    if isinstance(app, AgentApp) and app._meter is not None:
        console += f"\nmetrics: http://{host}:{port}/metrics"
    if settings["agents"]:  # an AgentServer: its list, and each agent's console
        console = f"\nagents: http://{host}:{port}/agents"
        for name, agent in app.apps.items():
            if agent.console:
                console += f"\nconsole: http://{host}:{port}/{name}/console ({name})"
        if any(agent._meter is not None for agent in app.apps.values()):
            console += f"\nmetrics: http://{host}:{port}/metrics"
    # --cors-origin '*': AgentApp itself warns (on the "agui.server" logger, which reaches
    # stderr before uvicorn's logging is set up), once.
    options: dict[str, Any] = {
        "log_level": settings["log_level"],
        "log_config": _log_config(settings["log_level"], settings.get("log_format", "text")),
        "root_path": args.root_path,
        "timeout_graceful_shutdown": settings["timeout_graceful_shutdown"],
    }
    with sock:
        if workers == 1:
            config = uvicorn.Config(app, **options)
            server = _make_server(config, line + console, settings.get("log_format", "text"))
            server.run(sockets=[sock])
            if server.signalled == signal.SIGINT:
                # Ctrl-C exits 130, as a shell expects. uvicorn re-raises the signal it caught
                # inside asyncio's runner, which turns it into KeyboardInterrupt (main: 130)
                # only if the serving task is still running then: a race, lost under load.
                return 130
            return 0 if server.started else 3
        os.environ[_SETTINGS] = json.dumps(settings)
        config = uvicorn.Config(f"{__name__}:worker_app", factory=True, workers=workers, **options)
        said = _said(f"{line} ({workers} workers){console}", settings.get("log_format", "text"))
        print(said, file=sys.stderr, flush=True)
        _supervise(config, sock)
    return 0


def settings_of(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings `agui serve` runs with, from its command line and `environ` (worker_app
    gets the same, as JSON). Each of SERVE_SETTINGS is its option's value when the option was
    given, else its environment variable's when that is set and not empty, else its default.
    "app" holds the AgentApp parameters and "retention" the agui.store.Retention fields that
    were given, and only those (the others keep AgentApp's and Retention's own defaults);
    "given" maps each setting given to where it came from (its option or its variable), for
    the messages. Raises _Refused for a variable whose value is bad (argparse refuses a bad
    option's)."""
    from agui.cli.main import SERVE_SETTINGS

    settings: dict[str, Any] = {"app": {}, "retention": {}, "given": {}}
    for setting in SERVE_SETTINGS:
        source: str | None = None
        if hasattr(args, setting.name):  # the option was given (not given, it leaves nothing)
            value = getattr(args, setting.name)
            if setting.repeat:  # each occurrence read as the variable is: a list
                value = [item for values in value for item in values]
            source = setting.flag
        elif environ.get(setting.env, "").strip():
            try:
                value = setting.read(environ[setting.env])
            except ValueError as error:
                raise _Refused(f"{setting.env}: {error}") from None
            source = setting.env
        else:
            value = setting.default
        if setting.target == "serve":
            settings[setting.name] = value
        elif source is not None:
            settings[setting.target][setting.name] = value
        if source is not None:
            settings["given"][setting.name] = source
    if settings["console"] is None:
        # The console talks to the agent without any hook of the application's: on where only
        # this machine reaches it, off on an address others reach unless asked for.
        settings["console"] = _loopback(settings["host"])
    single, named = _targets(args.agent)
    if named and "path" in settings["given"]:
        raise _Refused(
            f"{settings['given']['path']} is for one agent: several agents are each at /NAME"
        )
    settings.update(
        agent=single,
        agents=named,
        model=args.model,
        model_url=args.model_url,
        app_dir=os.path.abspath(args.app_dir),
    )
    return settings


def _loopback(host: str) -> bool:
    """Whether `host` (what --host names) listens on loopback only."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _targets(given: str | list[str] | None) -> tuple[str | None, list[list[str]]]:
    """What the command line names: (one MODULE:ATTR, or None) and the [NAME, MODULE:ATTR] pairs
    of several agents (NAME=MODULE:ATTR each; a module name holds no '='). Raises _Refused for
    a mix of both, several MODULE:ATTR without names, an empty or repeated name."""
    if given is None or isinstance(given, str):
        return given, []
    named: list[list[str]] = []
    plain: list[str] = []
    for spec in given:
        name, sep, target = spec.partition("=")
        if not sep:
            plain.append(spec)
            continue
        if not name or not target:
            raise _Refused(f"{spec!r}: expected NAME=MODULE:ATTR")
        if any(name == seen for seen, _ in named):
            raise _Refused(f"{spec!r}: the name {name!r} is given twice")
        named.append([name, target])
    if named and plain:
        raise _Refused(
            f"{plain[0]}: give every agent a name to serve several (NAME=MODULE:ATTR), or serve "
            "one MODULE:ATTR"
        )
    if len(plain) > 1:
        raise _Refused(
            f"{' '.join(plain)}: serve one MODULE:ATTR, or name each agent (NAME=MODULE:ATTR) to "
            "serve several at /NAME"
        )
    return (plain[0] if plain else None), named


# ── what to serve ──────────────────────────────────────────────────────────────────────────────


def serving_kind(target: object) -> Literal["asgi", "agent"]:
    """How `agui serve` serves `target`: "asgi" as it is, "agent" wrapped in AgentApp. Raises
    TypeError for anything else.

    An async generator function (or an object whose __call__ is one) is an agent. Otherwise the
    signature decides: a call that takes three arguments (scope, receive, send) is an ASGI app
    (an AgentApp, FastAPI, Starlette, any ASGI 3 callable), one that takes the RunAgentInput
    alone is an agent. A class is neither (name an instance, or a function)."""
    from agui.http.server import AgentApp

    if isinstance(target, AgentApp):
        return "asgi"
    if isinstance(target, type):
        raise TypeError(f"it is a class ({target.__qualname__}); name an instance of it")
    if not callable(target):
        raise TypeError(f"it is {_a(target)}, which cannot be called")
    call: Any = target
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        call = call.__call__
    if inspect.isasyncgenfunction(call):
        return "agent"
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        raise TypeError(f"its call signature cannot be read ({_a(target)})") from None
    if _binds(signature, 3):
        return "asgi"
    if _binds(signature, 1):
        return "agent"
    raise TypeError(f"it is called with {signature}, neither (input) nor (scope, receive, send)")


def _binds(signature: inspect.Signature, count: int) -> bool:
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def _a(value: object) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _build(settings: dict[str, Any]) -> tuple[Any, str, str]:
    """(the ASGI app, what it is for the "serving" line, the path shown after the address)."""
    from agui.http.server import AgentApp

    given: dict[str, str] = settings.get("given", {})
    if settings.get("agents"):
        return _build_server(settings)
    if settings["model"]:
        agent, what = _model_agent(settings["model"], settings["model_url"])
    elif not settings["agent"]:
        from agui.cli.demo import DemoAgent

        agent, what = DemoAgent(), "the demo agent"
    else:
        spec = settings["agent"]
        target = _load(spec)
        try:
            kind = serving_kind(target)
        except TypeError as exc:
            raise _Refused(
                f"{spec} is neither an agent (called with a RunAgentInput, returning an async "
                f"iterator of events) nor an ASGI app (called with scope, receive, send): {exc}"
            ) from None
        if kind == "asgi":
            _asgi_refuses(spec, given, settings)
            return target, f"{spec} (an ASGI app)", ""
        agent, what = target, spec
    path = settings.get("path") or _DEFAULT_PATH
    store = settings.get("store")
    origins = settings.get("cors_origins") or ()
    authorize = _hook(settings["authorize"]) if settings.get("authorize") else None
    kept = settings.get("retention")
    if settings.get("app", {}).get("tracing"):
        _check_tracing(given["tracing"])
    from agui.store import Retention

    metrics = _metrics(settings)

    try:
        app = AgentApp(
            agent,
            path=path,
            store=store or None,
            retention=Retention(**kept) if kept else None,
            authorize=authorize,
            cors_origins=origins,
            console=settings.get("console", True),
            metrics=metrics,
            **settings.get("app", {}),
        )
    except TypeError as exc:
        raise _Refused(f"{what} cannot be served: {exc}") from None
    except MissingExtraError as exc:  # no Starlette (CORS), no prometheus-client (--metrics)
        where = {"server": "cors_origins", "otel": "tracing"}.get(exc.extra, "metrics")
        raise _Refused(f"{given.get(where, '--' + where.replace('_', '-'))}: {exc}") from None
    except ValueError as exc:  # an origin that is not one
        raise _Refused(f"{given.get('cors_origins', '--cors-origin')}: {exc}") from None
    except AguiError as exc:  # the store URL (agui.store.StoreError)
        raise _Refused(f"{given.get('store', '--store')} {store}: {exc}") from None
    if store:
        what += f", runs kept in {_redacted(store)}"
    return app, what, path


def _build_server(settings: dict[str, Any]) -> tuple[Any, str, str]:
    """The agui.AgentServer of several NAME=MODULE:ATTR agents, with the settings an agent's
    AgentApp gets applied to each and one store shared."""
    from agui.http.agents import AgentServer
    from agui.store import Retention

    given: dict[str, str] = settings.get("given", {})
    agents: dict[str, Any] = {}
    for name, spec in settings["agents"]:
        target = _load(spec)
        try:
            kind = serving_kind(target)
        except TypeError as exc:
            raise _Refused(
                f"{name}={spec} is not an agent (called with a RunAgentInput, returning an async "
                f"iterator of events): {exc}"
            ) from None
        if kind == "asgi":
            raise _Refused(
                f"{name}={spec} is an ASGI app: several agents served together are agents; for "
                "agents with settings of their own, build an agui.AgentServer in your module and "
                "serve it as MODULE:ATTR"
            )
        agents[name] = target
    store = settings.get("store")
    kept = settings.get("retention")
    authorize = _hook(settings["authorize"]) if settings.get("authorize") else None
    if settings.get("app", {}).get("tracing"):
        _check_tracing(given["tracing"])
    try:
        server = AgentServer(
            agents,
            store=store or None,
            retention=Retention(**kept) if kept else None,
            authorize=authorize,
            cors_origins=settings.get("cors_origins") or (),
            console=settings.get("console", True),
            metrics=_metrics(settings),
            **settings.get("app", {}),
        )
    except (TypeError, ValueError, ImportError) as exc:  # a name, an origin, an agent
        raise _Refused(str(exc)) from None
    except AguiError as exc:  # the store URL (agui.store.StoreError)
        raise _Refused(f"{given.get('store', '--store')} {store}: {exc}") from None
    what = f"{len(agents)} agents: " + ", ".join(f"{n} ({s})" for n, s in settings["agents"])
    if store:
        what += f", runs kept in {_redacted(store)}"
    return server, what, ""


def _metrics(settings: dict[str, Any]) -> bool:
    """Whether the agents report metrics: as asked, else where prometheus-client is installed
    (the server extra)."""
    metrics = bool(settings.get("metrics", True))
    if metrics and "metrics" not in settings.get("given", {}):
        return importlib.util.find_spec("prometheus_client") is not None
    return metrics


def _check_tracing(source: str) -> None:
    """--otel: OpenTelemetry is installed and, unless the application set its own tracer
    provider, the OTEL_* variables name exporters that are (refused at start, not at the first
    run)."""
    try:
        require_extra("otel", source)  # the API, the SDK and the OTLP exporter
    except MissingExtraError as missing:
        raise _Refused(str(missing)) from None
    from opentelemetry import trace

    from agui.http import tracing

    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        try:
            tracing.check_environment()
        except ValueError as exc:
            raise _Refused(f"{source}: {exc}") from None


def _asgi_refuses(spec: str, given: dict[str, str], settings: dict[str, Any]) -> None:
    """An ASGI app is served as it is: the settings of the AgentApp agui serve would build are
    refused (each names where it came from, an option or a variable)."""
    if "path" in given:
        raise _Refused(
            f"{spec} is an ASGI app, which decides its own paths: {given['path']} is for an agent"
        )
    if "store" in given:
        raise _Refused(
            f"{spec} is an ASGI app: {given['store']} is for an agent (give an AgentApp its "
            "store=URL)"
        )
    if "authorize" in given:
        raise _Refused(
            f"{spec} is an ASGI app: {given['authorize']} is for an agent (give an AgentApp its "
            "authorize=hook)"
        )
    if "cors_origins" in given:
        raise _Refused(
            f"{spec} is an ASGI app: {given['cors_origins']} is for an agent (give an AgentApp "
            "its cors_origins=[...], or wrap the app in Starlette's CORSMiddleware)"
        )
    if "metrics" in given:
        raise _Refused(
            f"{spec} is an ASGI app: {given['metrics']} is for an agent (give an AgentApp its "
            "metrics=True, and serve /metrics in the app: docs/operations.md)"
        )
    for name in (*settings.get("app", {}), *settings.get("retention", {})):
        parameter = name if name in settings.get("app", {}) else "retention"
        raise _Refused(
            f"{spec} is an ASGI app: {given[name]} is for an agent (give an AgentApp its "
            f"{parameter}=...)"
        )


def _hook(spec: str) -> Any:
    """The `--authorize MODULE:ATTR` hook: an async function (agui.http.access.Authorize)."""
    try:
        hook = _load(spec)
    except _Refused as refused:
        raise _Refused(f"--authorize: {refused}") from None
    # a function, or an object whose class has an async __call__ (not merely callable)
    call = hook if inspect.isfunction(hook) else getattr(type(hook), "__call__", None)  # noqa: B004
    if not inspect.iscoroutinefunction(call):
        raise _Refused(
            f"--authorize {spec}: not an async function; the hook is `async def "
            "authorize(headers, action, thread_id, run_id)` returning the caller's principal "
            "(a string) or None to refuse"
        )
    return hook


def _redacted(url: str) -> str:
    """The store URL without its password, for the "serving" line."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return parts._replace(netloc=user + host).geturl()


def _load(spec: str) -> Any:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise _Refused(f"cannot load {spec!r}: expected MODULE:ATTR")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise _Refused(f"cannot load {spec!r}: {exc}") from None
    return target


def _model_agent(model: str, url: str | None) -> tuple[Any, str]:
    """The demo agent's tools and system prompt with an OpenAI-compatible model."""
    from agui.cli.demo import DemoAgent
    from agui.model.openai import OpenAIChatModel

    chat = OpenAIChatModel(model, base_url=url)
    return DemoAgent(model=chat), f"model {model} at {chat.base_url} with the demo tools"


def _on_path(app_dir: str) -> None:
    """Put the app directory first on sys.path, as uvicorn's --app-dir does."""
    if app_dir in sys.path:
        sys.path.remove(app_dir)
    sys.path.insert(0, app_dir)


# ── the server ─────────────────────────────────────────────────────────────────────────────────


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (what uvicorn's own binding does, but failing with an
    OSError to report instead of a log line and a SystemExit)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, as loop.create_server does: asyncio sets TCP_NODELAY only on the
    # connections of such a socket, and without it a reused keep-alive connection waits ~40 ms
    # (Nagle against the client's delayed ACK) for every small answer (/readyz, capabilities).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)  # for the worker processes
    return sock


def _log_config(level: str, log_format: Any = "text") -> dict[str, Any]:
    """uvicorn's logging configuration, with agui's loggers at the same level, every line in
    `log_format` (text, or json: one object per line, agui.http.logs)."""
    from agui.http.logs import log_config

    return log_config(log_format, level)


def _said(text: str, log_format: str) -> str:
    """The "serving" lines as stderr gets them: as they are, or with --log-format json each a
    JSON object (logger "agui.serve"), as every other line there is."""
    if log_format != "json":
        return text
    import logging

    from agui.http.logs import JsonFormatter

    formatter = JsonFormatter()
    return "\n".join(
        formatter.format(
            logging.makeLogRecord(
                {"name": "agui.serve", "levelname": "INFO", "levelno": logging.INFO, "msg": part}
            )
        )
        for part in text.splitlines()
    )


def _shutting_down(server: Any) -> None:
    """Tell every AgentApp of this process that `server` (a uvicorn.Server) shuts down (as
    `AgentApp.shutdown_all`, with the grace and the end of the server's window)."""
    from agui.http.server import uvicorn_shutdown

    uvicorn_shutdown(server)


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, which tells the AgentApps when the shutdown begins and prints the
        "serving" line once it has started."""

        def __init__(self, config: Any, line: str, log_format: str) -> None:
            super().__init__(config)
            self.line = line
            self.log_format = log_format
            self.signalled: int | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.signalled is None:
                self.signalled = sig
            super().handle_exit(sig, frame)
            _shutting_down(self)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and not self.should_exit:
                print(_said(self.line, self.log_format), file=sys.stderr, flush=True)

    return Server


def _make_server(config: Any, line: str, log_format: str = "text") -> Any:
    return _server_class()(config, line, log_format)


def _supervise(config: Any, sock: socket.socket) -> None:
    """Run uvicorn's worker supervisor on the bound socket. Each worker runs uvicorn's own server
    (worker_app hooks it)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    options: dict[str, Any] = {"sockets": [sock]}
    if "target" in inspect.signature(Multiprocess).parameters:  # older uvicorn
        options["target"] = uvicorn.Server(config).run
    Multiprocess(config, **options).run()


def worker_app() -> Any:
    """The ASGI app of one worker process (uvicorn's factory, "agui.cli.serve:worker_app"): what
    the `agui serve` command line named, built again in this process from the settings the
    parent left in the environment, with this worker's uvicorn server hooked to tell the
    AgentApps when the shutdown begins."""
    settings = json.loads(os.environ[_SETTINGS])
    _on_path(settings["app_dir"])
    app, _, _ = _build(settings)
    _hook_shutdown()
    return app


def _hook_shutdown() -> None:
    """Chain a notice to the AgentApps onto the signal handlers of the uvicorn server loading
    this app (installed before it loads the app), so a worker's runs end in RUN_ERROR
    SERVER_SHUTDOWN within the window, as under `agui serve` with one process. A handler that is
    not a uvicorn server's is left alone: the runs then end when uvicorn cancels them."""
    from agui.http.server import when_uvicorn_exits

    when_uvicorn_exits(_shutting_down)
