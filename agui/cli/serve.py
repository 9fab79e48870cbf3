"""`agui serve`: an agent, an ASGI app, or a model with the demo tools, under uvicorn.

MODULE:ATTR is looked up the way uvicorn looks up its app: MODULE is imported with the
`--app-dir` (default: the current directory) first on sys.path. What it names decides how it is
served (`serving_kind`): an ASGI app (an AgentApp, a FastAPI or Starlette application) as it is,
an agent wrapped in AgentApp at `--path`; anything else is refused before the server starts.

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

The agent's AgentApp serves the dev console (agui.console) at `{path}/console`, whose URL is
printed after the "serving" line; `--no-console` leaves it out (an ASGI app has its own settings).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import socket
import sys
from typing import Any, Literal

from agui.errors import AguiError

__all__ = ["serve", "serving_kind", "worker_app"]

_SETTINGS = "AGUI_SERVE_SETTINGS"
"""The environment variable that carries the settings to the worker processes."""
_DEFAULT_PATH = "/agent"


class _Refused(AguiError):
    """What to serve cannot be served; the message is the one line to print."""


def serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        print("agui serve needs uvicorn: pip install 'agui-spec[server]'", file=sys.stderr)
        return 2
    if args.model_url and not args.model:
        print("agui serve: --model-url needs --model NAME", file=sys.stderr)
        return 2
    if args.model and args.agent:
        print("agui serve: give MODULE:ATTR or --model, not both", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("agui serve: --workers must be at least 1", file=sys.stderr)
        return 2
    store = getattr(args, "store", None)
    if store and args.workers > 1 and store.split(":", 1)[0].lower() == "memory":
        print(
            "agui serve: memory:// keeps runs in one process; with --workers use "
            "sqlite:///PATH or redis://HOST:PORT/DB",
            file=sys.stderr,
        )
        return 2
    origins = list(getattr(args, "cors_origin", None) or ())
    settings = {
        "agent": args.agent,
        "path": args.path,
        "store": store,
        "cors_origins": origins,
        "authorize": getattr(args, "authorize", None),
        "model": args.model,
        "model_url": args.model_url,
        "app_dir": os.path.abspath(args.app_dir),
        "console": not getattr(args, "no_console", False),
    }
    _on_path(settings["app_dir"])
    try:
        app, what, path = _build(settings)
    except _Refused as refused:
        print(f"agui serve: {refused}", file=sys.stderr)
        return 2
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(f"agui serve: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 1
    from agui.http.server import AgentApp

    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
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
    if "*" in origins:
        print(
            "agui serve: --cors-origin '*' lets web pages of any origin call this agent; for "
            "development only (name the front end's origin otherwise)",
            file=sys.stderr,
        )
    options: dict[str, Any] = {
        "log_level": args.log_level,
        "log_config": _log_config(args.log_level),
        "root_path": args.root_path,
        "timeout_graceful_shutdown": args.timeout_graceful_shutdown,
    }
    with sock:
        if args.workers == 1:
            server = _make_server(uvicorn.Config(app, **options), line + console)
            server.run(sockets=[sock])
            return 0 if server.started else 3
        os.environ[_SETTINGS] = json.dumps(settings)
        config = uvicorn.Config(
            f"{__name__}:worker_app", factory=True, workers=args.workers, **options
        )
        print(f"{line} ({args.workers} workers){console}", file=sys.stderr, flush=True)
        _supervise(config, sock)
    return 0


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

    path = settings["path"]
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
            if path is not None:
                raise _Refused(
                    f"{spec} is an ASGI app, which decides its own paths: --path is for an agent"
                )
            if settings.get("store"):
                raise _Refused(
                    f"{spec} is an ASGI app: --store is for an agent (give an AgentApp its "
                    "store=URL)"
                )
            if settings.get("authorize"):
                raise _Refused(
                    f"{spec} is an ASGI app: --authorize is for an agent (give an AgentApp its "
                    "authorize=hook)"
                )
            if settings.get("cors_origins"):
                raise _Refused(
                    f"{spec} is an ASGI app: --cors-origin is for an agent (give an AgentApp its "
                    "cors_origins=[...], or wrap the app in Starlette's CORSMiddleware)"
                )
            return target, f"{spec} (an ASGI app)", ""
        agent, what = target, spec
    path = path or _DEFAULT_PATH
    store = settings.get("store")
    origins = settings.get("cors_origins") or ()
    authorize = _hook(settings["authorize"]) if settings.get("authorize") else None
    try:
        app = AgentApp(
            agent,
            path=path,
            store=store or None,
            authorize=authorize,
            cors_origins=origins,
            console=settings.get("console", True),
        )
    except TypeError as exc:
        raise _Refused(f"{what} cannot be served: {exc}") from None
    except (ValueError, ImportError) as exc:  # an origin that is not one; no Starlette
        raise _Refused(f"--cors-origin: {exc}") from None
    except AguiError as exc:  # the store URL (agui.store.StoreError)
        raise _Refused(f"--store {store}: {exc}") from None
    if store:
        what += f", runs kept in {_redacted(store)}"
    return app, what, path


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
    sock = socket.socket(family=family)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)  # for the worker processes
    return sock


def _log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging configuration, with agui's loggers at the same level."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    numeric = "DEBUG" if level == "trace" else level.upper()
    config["loggers"]["agui"] = {"handlers": ["default"], "level": numeric, "propagate": False}
    return config


def _shutting_down(server: Any) -> None:
    """Tell every AgentApp of this process that `server` (a uvicorn.Server) shuts down."""
    from agui.http.server import AgentApp, _uvicorn_grace

    AgentApp.shutdown_all(_uvicorn_grace(server))


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, which tells the AgentApps when the shutdown begins and prints the
        "serving" line once it has started."""

        def __init__(self, config: Any, line: str) -> None:
            super().__init__(config)
            self.line = line

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            _shutting_down(self)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and not self.should_exit:
                print(self.line, file=sys.stderr, flush=True)

    return Server


def _make_server(config: Any, line: str) -> Any:
    return _server_class()(config, line)


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
    from agui.http.server import _when_uvicorn_exits

    _when_uvicorn_exits(_shutting_down)
