"""The ASGI server: one Agent at one path, streamed as Server-Sent Events (or as protobuf frames
when the request asks for them: Accept naming application/vnd.ag-ui.event+proto).

`AgentApp(agent)` runs on its own under uvicorn or inside Starlette / FastAPI
(`AgentApp(agent).include_in(api, "/agent")`: every route, and the app's lifespan). It validates
the request before any event is sent and wraps every run in a correct lifecycle
(agui.stream.lifecycle): RUN_STARTED first, exactly one RUN_FINISHED or RUN_ERROR last, nothing a
client must reject, whatever the agent does.

Three tasks serve a run: the producer drives the agent and queues frames, the sender writes them
(taking everything already queued at once and coalescing it into writes, so nothing waits), and a
watcher reads the ASGI `receive` channel for `http.disconnect` and stops the run when the client
leaves (uvicorn does not raise on a send after a disconnect). A keep-alive comment goes out after
`keepalive` seconds of silence. The request's own task supervises them: it ends a run that
outlives `max_run_seconds` (RUN_ERROR `TIMEOUT`) or the server's shutdown (RUN_ERROR
`SERVER_SHUTDOWN`, see `AgentApp.shutdown`), and once the response is complete lets the agent
finish its work for up to `finish_grace` seconds.

The parts a durable run (agui.http.durable) shares are in agui.http.asgi (the ASGI primitives),
agui.http.response (the outbox, the sender, the keep-alive) and agui.http.lifetime (the codes a
run is ended with, stopping and finishing its agent); `SERVER_SHUTDOWN`, `TIMEOUT` and the
`CORS_*` headers (agui.http.cors) are importable from here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import math
import signal
import sys
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar

import attrs
import orjson
from agui_generated import (
    AgentCapabilities,
    DecodeError,
    Problem,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    TransportCapabilities,
    UnknownEvent,
)

from agui.agent.protocol import Agent, CapabilitySource, InputValidator
from agui.errors import EncodeError, require_extra
from agui.http import health
from agui.http.access import Action, Authorize, Refused, ask
from agui.http.asgi import (
    ALLOW_GET,
    ALLOW_POST,
    CLOSE,
    RETRY_AFTER,
    BadRequest,
    Receive,
    Scope,
    Send,
    answer_lifespan,
    error_body,
    json_response,
    nested_lifespan,
    relative_path,
    wait_for_disconnect,
)
from agui.http.cors import CORS_EXPOSED_HEADERS, CORS_REQUEST_HEADERS, checked_origins, with_cors
from agui.http.lifetime import (
    SERVER_SHUTDOWN,
    SERVING,
    STOP_WAIT,
    TERMINAL,
    TIMEOUT,
    earliest,
    let_finish,
    stop_agent,
)
from agui.http.response import (
    MAX_PROTO_FRAME,
    MAX_SSE_FRAME,
    PROTO_HEADERS,
    STREAM_HEADERS,
    VARY,
    Clock,
    Outbox,
    keep_alive,
    send_frames,
    send_last,
    unsent,
)
from agui.observe.runlog import RUN_FIELDS, about_run, logfmt
from agui.stream.lifecycle import (
    DEFAULT_FINISH_GRACE,
    INVALID_EVENT,
    check_agent,
    run_error,
    run_lifecycle,
    run_started,
)
from agui.stream.patch import DEFAULT_MAX_STATE_NODES
from agui.wire.codec import MAX_WARNINGS, decode, decode_loaded, encode
from agui.wire.content import content_writer
from agui.wire.eras import (
    NEWEST,
    OLDEST,
    Compat,
    Downgrade,
    Era,
    needs_upgrade,
    upgrade_input,
)
from agui.wire.proto import accepts_proto, proto_frame
from agui.wire.sse import sse_frame

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider
    from prometheus_client import CollectorRegistry

    from agui.console import Console
    from agui.http.durable import Durable
    from agui.http.metrics import AgentMeter
    from agui.http.tracing import RunSpan, Tracing
    from agui.store.base import EventLog, Retention

__all__ = [
    "CORS_EXPOSED_HEADERS",
    "CORS_REQUEST_HEADERS",
    "SERVER_SHUTDOWN",
    "TIMEOUT",
    "AgentApp",
    "RouteTable",
]

log = logging.getLogger("agui.server")

_KEEP_NEWEST = (
    f"Every 0.0.x release sends the same request, so {OLDEST.name} and {NEWEST.name} clients "
    f"cannot be told apart: if the front end runs {NEWEST.name} (CopilotKit's runtime 1.75 "
    f"bundles it), set `agui serve --compat {NEWEST.name}` (AGUI_COMPAT={NEWEST.name}, "
    f'AgentApp(compat="{NEWEST.name}")); see docs/compatibility.md. Logged once per app: later '
    "runs' drops are logged at INFO."
)
"""The end of compat="auto"'s warning: the setting that keeps what the newest era reads."""


_METRICS = "/metrics"

MAX_PRINCIPAL_BYTES = 256 * 1024 * 1024
"""With a store, the JSON one principal's runs may hold by default (AgentApp's
max_principal_bytes): a few hundred conversations of long histories, a fraction of a small
server's memory (memory://) or disk."""

MAX_PRINCIPAL_THREADS = 10_000
"""With a store, the threads one principal may keep by default (max_principal_threads): the
bytes bound what they hold; this bounds the index a listing reads, and leaves room for a server
with no authorize hook, whose callers are all one principal (10,000 conversations per retention
window)."""

# The shutdown under uvicorn (`_uvicorn_grace`): runs go on for the graceful window less a margin
# for what follows, measured on a 2-core machine (docs/serving.md#shutdown).
_MARGIN = 1.0  # seconds: agents stopping, uvicorn's checks (every 0.1 s), the lifespan, the exit
_MARGIN_PER_RUN = 0.001  # seconds more for each run going and each response following one
_MARGIN_PER_STORED = 0.002  # and for each run executing with a store (its end is written)
_EXIT_TIME = 0.25  # seconds left at the window's end for the lifespan's end and the exit


_CAPABILITIES = "/capabilities"
_CAPABILITIES_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache")]


class RouteTable(Protocol):
    """What `AgentApp.include_in` adds its routes to: a FastAPI or Starlette application, a
    FastAPI APIRouter or a Starlette Router (their `add_route`)."""

    def add_route(self, path: str, route: Any, /, *, include_in_schema: bool = ...) -> None: ...


class _Stoppable(Protocol):
    """What the server's shutdown reaches: a run being served, or (with a store) a run executing
    here and a response following one."""

    loop: asyncio.AbstractEventLoop

    def stop(self, deadline: float) -> None: ...


class AgentApp:
    """An ASGI application serving `agent` (see the module docstring).

    path: the one path served (None: any path, for mounting). max_body_bytes: the largest request
    body accepted (413 beyond). max_state_nodes: the most nodes (JSON values) a STATE_DELTA may
    take the state to, checked as the client's Reducer checks it, before the patch builds
    anything (agui.stream.patch): past it the run ends in RUN_ERROR `INVALID_EVENT`, the reason
    logged (None: no limit). keepalive: seconds of silence before a keep-alive comment (None: off).
    strict_input: decode the body strictly (unknown members rejected) instead of tolerantly.
    protobuf: answer with the binary transport when the Accept header names
    application/vnd.ag-ui.event+proto with a q above 0 (wildcards do not count); False: always SSE.
    A binary stream has no keep-alive (the format has no frame that means nothing).
    finish_grace: seconds the agent may go on working after its terminal event, once the response
    is complete (None: as long as it takes); then it is cancelled. max_run_seconds: a run still
    going after this many seconds ends in RUN_ERROR `TIMEOUT` (None: no limit). "auto", the
    default: 3600 with a store, None without. Without a store a run ends when its client leaves;
    with one it can go on without its client, so a run nobody follows (an agent that never
    returns) would hold its slot of max_active_runs and its lease until the server stops. An hour
    is far above an interactive run and bounds what such runs hold.
    max_active_runs: runs executing on this worker at once; a request beyond it gets 503 with
    Retry-After before anything is read (None: no limit). body_timeout: seconds the request body
    may take to arrive; a slower one gets 408 and the connection is closed (None: no limit).

    store: keep every run in an event log (a URL for `agui.store.open_log`, or an EventLog) and
    serve durable runs: a run executes detached from its request, and the routes under `path`
    resume a run, connect to a thread and stop a run (see agui.http.durable and the durable-runs
    page). exclusive_threads: a second run on a thread whose run is going gets 409, unless
    that run is being stopped: then the new one waits for its end (a few seconds at most).
    detach: which runs go on when their request goes away before their end. "requested" (the
    default): those whose client said it resumes a cut stream (the `Agui-Resume: 1` request
    header, which agui's HttpAgent and the console send); any other is stopped then, unless a
    resume or connect on this worker follows it, as a client that knows only AG-UI 1.0
    (@ag-ui/client, CopilotKit's runtime) stops a run by aborting its request. "always": every
    run goes on until its end, whoever left.
    authorize: an async hook `(headers, action, thread_id, run_id) -> principal` asked before
    every request is served, with a store or without (action "start", "resume", "connect",
    "stop", "capabilities", "console" or "metrics"): it returns the caller's principal (a string)
    or None to refuse (403). With a store, every thread and run lives in the namespace of the
    principal that started it: another principal's request for it is answered as for an id never
    used (agui.http.access).
    lease_seconds: how long a run stays owned by this worker without a renewal (renewed every
    third of it); a run whose lease ran out is closed with RUN_ERROR `RUN_LOST`.
    max_principal_bytes, max_principal_threads: with a store, what one principal (its
    namespace: one per agent and principal; with no `authorize` hook, every caller is one
    principal) may keep in the log: the JSON of its runs (inputs and events, `EventLog.usage`;
    default MAX_PRINCIPAL_BYTES, 256 MiB) and its threads (MAX_PRINCIPAL_THREADS, 10,000). A start
    that would go beyond either (a new thread beyond the threads, an input beyond the bytes) gets
    429 before the run starts, its JSON body naming the limit and the usage. None: no limit.
    retention: what the log opened from a store URL keeps (an agui.store.Retention; None: its
    defaults, a run's latest 1,000,000 events, finished runs for 7 days, a thread's latest 100
    runs); the app closes that log at its lifespan's end. For a store given as an EventLog, give
    the retention to the log (`open_log(url, retention=...)`): ValueError here.

    `GET {path}/capabilities` answers `capabilities()`: the agent's declaration (an agent that is
    an agui.agent.protocol.CapabilitySource) with the transport this app serves. An app with a
    path of its own (the whole application, as `agui serve` builds it) also answers `GET
    /healthz` and `GET /readyz` (agui.http.health), unless its path is one of them.
    cors_origins: the origins of web pages allowed to call the agent from another origin, such as
    "http://localhost:3000" ("*": any, for development only; it is logged as a warning). Every
    route then answers CORS preflights and carries the CORS headers (Starlette's CORSMiddleware,
    `pip install 'agui-spec[server]'`): GET, POST and DELETE, the request headers
    CORS_REQUEST_HEADERS, the response headers CORS_EXPOSED_HEADERS. Empty (the default): no CORS, so a browser refuses a
    page on another origin.

    console: serve the dev console (agui.console), a page to talk to the agent and watch its runs,
    at `GET {path}/console` (with path None: any path ending in /console), its files under
    `{path}/console/`, with a strict Content-Security-Policy. Off by default, so a production
    mount does not expose it; `agui serve` turns it on.

    compat: what a client that declares no protocolVersion (every 0.0.x release of the
    official client) is sent. "auto" (the default): the stream every 0.0.x release from
    0.0.35 on accepts, with what it cannot take translated or dropped (agui.wire.eras, the
    compatibility page); a release such as "0.0.59": the stream of that release's era (for a
    deployment that knows its front end); "off": the 1.0 stream. A client that declares a
    version gets its version's stream: a 1.0 client's is never changed. Binary (protobuf)
    responses are never translated. Retired input shapes (legacy binary content parts) are
    upgraded whatever the setting. Under "auto", the first response for a client without
    protocolVersion that drops something the newest 0.0.x release reads (reasoning, activities,
    subagents) is logged as a WARNING, once per app, naming the setting that keeps it (`agui
    serve --compat`); every translated response has its INFO line.

    tracing: trace every run with OpenTelemetry (`pip install 'agui-spec[otel]'`;
    agui.http.tracing, the tracing page): a span `invoke_agent {agent}` following the GenAI
    conventions, continuing the caller's trace (its traceparent header), with the model agent's
    model requests and server tools as child spans. True: the application's global TracerProvider, or when it set
    none, the SDK configured from the OTEL_* environment variables; a TracerProvider: that one.
    False (the default): nothing is traced, and OpenTelemetry is never imported.
    name: the agent's name in the metrics (the `agent` label) and the per-run log line (default:
    the agent's `name` attribute when it is a string, else "agent").
    metrics: report Prometheus metrics (agui.http.metrics; `pip install 'agui-spec[metrics]'`):
    True into prometheus-client's default registry, or into the CollectorRegistry given; the
    AgentApps given the same registry report into the same families, each under its name. An
    app with a path of its own then answers `GET /metrics` (the text format) at the root; a
    mounted one leaves it to the application (docs/operations.md). False (the default): nothing
    is counted or imported.

    Every run's end is logged at INFO on "agui.server" (agent, thread, run, outcome, code,
    events, duration, client address, trace id when traced), its fields also in the record's
    `agui` attribute (for agui.http.logs.JsonFormatter); with a store, by the worker that closes
    a lost run too. Every other line about a run carries agent, thread, run (and code) likewise
    (agui.observe.runlog.about_run).

    An `agent` that cannot be one (a sync generator function, an `async def` without `yield`,
    something not callable with the input) is refused here with TypeError.
    """

    _apps: ClassVar[weakref.WeakSet[AgentApp]] = weakref.WeakSet()

    def __init__(
        self,
        agent: Agent,
        *,
        path: str | None = None,
        max_body_bytes: int = 8 * 1024 * 1024,
        max_state_nodes: int | None = DEFAULT_MAX_STATE_NODES,
        keepalive: float | None = 15.0,
        strict_input: bool = False,
        queue_size: int = 1024,
        protobuf: bool = True,
        finish_grace: float | None = DEFAULT_FINISH_GRACE,
        max_run_seconds: float | Literal["auto"] | None = "auto",
        max_active_runs: int | None = 1000,
        body_timeout: float | None = 30.0,
        store: str | EventLog | None = None,
        retention: Retention | None = None,
        exclusive_threads: bool = True,
        detach: Literal["requested", "always"] = "requested",
        authorize: Authorize | None = None,
        lease_seconds: float = 10.0,
        max_principal_bytes: int | None = MAX_PRINCIPAL_BYTES,
        max_principal_threads: int | None = MAX_PRINCIPAL_THREADS,
        compat: str = "auto",
        cors_origins: Iterable[str] = (),
        console: bool = False,
        tracing: bool | TracerProvider = False,
        name: str | None = None,
        metrics: bool | CollectorRegistry = False,
    ) -> None:
        check_agent(agent)
        source = agent if isinstance(agent, CapabilitySource) else None
        if source is not None and not callable(source.capabilities):
            _declared(source.capabilities)  # a declaration that cannot be served is refused now
        origins = checked_origins(cors_origins)
        if max_active_runs is not None and max_active_runs < 1:
            raise ValueError("max_active_runs must be at least 1 (None: no limit)")
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        for quota, value in (
            ("max_principal_bytes", max_principal_bytes),
            ("max_principal_threads", max_principal_threads),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{quota} must be at least 1 (None: no limit)")
        if detach not in ("requested", "always"):
            raise ValueError(f"detach is 'requested' or 'always', not {detach!r}")
        self.detach = detach
        """With a store: which runs go on when their request goes away (see the docstring)."""
        self.agent = agent
        self.path = path
        self.max_body_bytes = max_body_bytes
        if max_state_nodes is not None and max_state_nodes < 1:
            raise ValueError("max_state_nodes must be at least 1 (None: no limit)")
        self.max_state_nodes = max_state_nodes
        self.keepalive = keepalive
        self.strict_input = strict_input
        self.queue_size = queue_size
        self.protobuf = protobuf
        self.finish_grace = finish_grace
        if isinstance(max_run_seconds, str):
            if max_run_seconds != "auto":
                raise ValueError(f"max_run_seconds is seconds, None or 'auto': {max_run_seconds!r}")
            max_run_seconds = 3600.0 if store is not None else None  # a detached run: bounded
        self.max_run_seconds: float | None = max_run_seconds
        self.max_active_runs = max_active_runs
        self.body_timeout = body_timeout
        self.authorize = authorize
        """The hook asked before every request is served (agui.http.access); None: everyone."""
        self._validator = agent if isinstance(agent, InputValidator) else None
        self._compat = Compat.parse(compat)  # ValueError for a setting it does not know
        self.compat = compat
        self._warned_compat = False  # the one warning of compat="auto" (see note_downgrade)
        self._source = source
        self.cors_origins = origins
        self.console = console
        self._console: Console | None = None
        if console:
            from agui.console import Console

            self._console = Console()
        self.tracing = tracing
        """Whether (or with which TracerProvider) runs are traced (see the docstring)."""
        self._tracing: Tracing | None = None if tracing is False else _tracing(agent, tracing)
        if self._tracing is not None and name:
            self._tracing.agent = name  # the span's gen_ai.agent.name: the name given
        self._app: Callable[[Scope, Receive, Send], Awaitable[None]] = self._serve
        if origins:
            self._app = with_cors(self._serve, origins)
        self.name = name or _agent_name(agent)
        """The agent's name in the metrics and the logs."""
        self._meter: AgentMeter | None = None
        self._metrics_app: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None
        if metrics is not False:
            self._meter = _meter_of(metrics, self.name)
        self._runs: set[_Stoppable] = set()
        self._served = 0  # runs served without a store, for max_active_runs
        self._durable: Durable | None = None
        if retention is not None:
            if not isinstance(store, str):
                raise ValueError(
                    "retention is for a store URL: give store=URL, or open the EventLog with it "
                    "(agui.store.open_log(url, retention=...))"
                )
            from agui.store import open_log

            store = open_log(store, retention=retention)
        if store is not None:
            from agui.http.durable import Durable

            self._durable = Durable(
                self,
                store,
                exclusive_threads=exclusive_threads,
                lease_seconds=lease_seconds,
                max_principal_bytes=max_principal_bytes,
                max_principal_threads=max_principal_threads,
            )
            if retention is not None:
                self._durable._owns_log = True  # opened here from its URL: closed with the app
        self._stop_at: float | None = None  # time.monotonic() by which runs must end
        self._ends_by: float | None = None  # the end of the server's graceful window (monotonic)
        self._lifespans = 0  # lifespans entered and not yet exited
        AgentApp._apps.add(self)

    # ── shutdown ─────────────────────────────────────────────────────────────
    def shutdown(self, grace: float = 0.0) -> None:
        """The server is shutting down: new requests get 503, and every run still going after
        `grace` seconds ends in RUN_ERROR `SERVER_SHUTDOWN` (an agent still finishing after its
        terminal event is cancelled then). Call it with a grace shorter than the server's
        graceful-shutdown window. Safe from a signal handler or another thread; a later call can
        only bring the end closer."""
        deadline = time.monotonic() + max(0.0, grace)
        if self._stop_at is None or deadline < self._stop_at:
            self._stop_at = deadline
        following = deadline  # when a response following a run (with a store) stops
        executing: set[object] = set()
        if self._durable is not None and self._ends_by is not None:
            # Under uvicorn, at the end of the window less _MARGIN if that is later: one
            # following a run executing here waits for the run's stored end until STOP_WAIT
            # past its stop (`Durable._watch`), after the window's end, where uvicorn's
            # cancellation writes its RUN_ERROR (ending many runs on a busy machine can take
            # longer than STOP_WAIT).
            following = max(deadline, self._ends_by - _MARGIN)
            executing = set(self._durable.executions.values())
        for run in list(self._runs):
            at = following if self._durable is not None and run not in executing else deadline
            run.loop.call_soon_threadsafe(run.stop, at)

    @classmethod
    def shutdown_all(cls, grace: float = 0.0) -> None:
        """`shutdown(grace)` on every AgentApp of this process (what `agui serve` does when it is
        told to stop, for the apps inside a FastAPI or Starlette application too)."""
        for app in list(cls._apps):
            app.shutdown(grace)

    # ── inside FastAPI or Starlette ──────────────────────────────────────────
    def include_in(self, target: RouteTable, path: str | None = None) -> None:
        """Add every route of this app to `target` (a FastAPI or Starlette application, an
        APIRouter or a Router) under `path` (default: the app's own), with this app as their
        endpoint: `{path}` (the run) and `{path}/capabilities`; with a store the durable routes
        (`{path}/runs/{runId}/events`, `{path}/runs/{runId}/stop`,
        `{path}/threads/{threadId}/events`) and the thread API (`{path}/threads`,
        `{path}/threads/{threadId}`); with the console `{path}/console` and its files.
        Every method goes to the app, which answers a wrong one with its own 405; the routes are
        left out of an OpenAPI schema. An app with a path of its own serves only that one
        (ValueError for another).

        The app's `lifespan` joins the target's, inside it (as FastAPI's include_router does with
        a router's): the application's lifespan then starts the app's store and closes it, and
        tells the app when uvicorn's shutdown begins. A router keeps it in its own lifespan:
        include it in the application (include_router) after this call; Starlette runs no
        lifespan of a router it mounts, so enter `lifespan` in the application's then."""
        base = self._route_base(path)
        run = base or "/"
        paths = [run, f"{base}/capabilities"]
        if self._durable is not None:
            paths += [
                f"{base}/runs/{{run_id:path}}/events",
                f"{base}/runs/{{run_id:path}}/stop",
                f"{base}/threads/{{thread_id:path}}/events",
                f"{base}/threads",  # the thread API (agui.http.threads)
                f"{base}/threads/{{thread_id:path}}",
            ]
        if self._console is not None:
            paths += [f"{base}/console", f"{base}/console/{{file:path}}"]
        for route in paths:
            target.add_route(route, self, include_in_schema=False)
        holder: Any = getattr(target, "router", target)
        inner = getattr(holder, "lifespan_context", None)
        if callable(inner):
            holder.lifespan_context = nested_lifespan(inner, self.lifespan)

    def _route_base(self, path: str | None) -> str:
        """The routes' prefix for `include_in(target, path)`: the path without its trailing
        slash ("" for "/")."""
        if path is None:
            path = self.path
            if path is None:
                raise ValueError("give the path to serve the agent at: include_in(api, '/agent')")
        if not path.startswith("/"):
            raise ValueError(f"the path must start with '/': {path!r}")
        if self.path is not None and self.path.rstrip("/") != path.rstrip("/"):
            raise ValueError(
                f"this AgentApp serves {self.path} only, not {path}: leave its path unset "
                "(AgentApp(agent)) and give the path here"
            )
        return path.rstrip("/")

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[None]:
        """This app's part of the server's lifespan, for a FastAPI or Starlette application
        (`FastAPI(lifespan=agent.lifespan)`, or `async with agent.lifespan(api):` in a lifespan
        of your own; `include_in` adds it by itself). AgentApp's own ASGI lifespan is this one.

        On entry: under uvicorn, the app is told when the server's shutdown begins (its SIGINT
        and SIGTERM handlers are chained: `shutdown(grace)`, the graceful window less a margin
        for what follows, as under `agui serve`); with a store, the sweep for lost runs
        starts. On exit: with a store, the runs executing here end in RUN_ERROR
        `SERVER_SHUTDOWN`, their ends are stored, and a log the app opened is closed (under
        uvicorn, within what is left of its window). Entered more than once (nested), it starts
        once and ends with the outermost exit."""
        self._lifespans += 1
        if self._lifespans == 1:
            when_uvicorn_exits(_shutdown_of(self))
            if self._durable is not None:
                self._durable.startup()
        try:
            yield
        finally:
            self._lifespans -= 1
            if self._lifespans == 0 and self._durable is not None:
                try:
                    await self._durable.close()
                except Exception:
                    log.exception("the shutdown of the durable runs failed")

    @property
    def store(self) -> EventLog | None:
        """The event log runs are kept in (None: no store)."""
        return None if self._durable is None else self._durable.log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = SERVING.set(self)
        try:
            await self._app(scope, receive, send)
        finally:
            SERVING.reset(token)

    def _within_window(self, limit: float | None, keep: float = 0.0) -> float | None:
        """`limit` seconds (None: no limit) for a wait at the end of a request or of the lifespan;
        once the shutdown began under uvicorn, at most what is left of its graceful window less
        _EXIT_TIME (the lifespan's end and the process's exit come after) and `keep` (for what
        else must come after the wait)."""
        if self._ends_by is None:
            return limit
        left = max(0.01, self._ends_by - _EXIT_TIME - keep - time.monotonic())
        return left if limit is None else min(limit, left)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send, self.lifespan())
            return
        if scope["type"] != "http":
            return
        if self._at_health(scope):  # the whole app, with a path of its own (agui.http.health)
            ready = relative_path(scope) == health.READYZ
            await health.answer(scope, send, await health.not_ready([self]) if ready else None)
            return
        if self._meter is not None and self._at_metrics(scope):
            if not await self._refused(scope, send, "metrics"):
                await self._serve_metrics(scope, receive, send)
            return
        if self._console is not None and scope["method"] in ("GET", "HEAD"):
            name = self._console.file_for(relative_path(scope), self.path)
            if name is not None:
                if await self._refused(scope, send, "console"):
                    return
                await self._console.serve(name, scope, send)
                return
        if self._at_capabilities(scope):
            if not await self._refused(scope, send, "capabilities"):
                await self._serve_capabilities(scope, send)
            return
        if self._durable is not None:
            await self._durable.handle(scope, receive, send)
            return
        try:
            if self._stop_at is not None:
                raise BadRequest(503, "the server is shutting down")
            if self.path is not None and self.path not in (scope["path"], relative_path(scope)):
                raise BadRequest(
                    404, f"nothing is served at {scope['path']}; the agent is at {self.path}"
                )
            if scope["method"] != "POST":
                raise BadRequest(
                    405, "only POST is allowed: send a RunAgentInput as JSON", (), ALLOW_POST
                )
            self.check_capacity(self._served)
            body = await self.read_request(scope, receive)
            run_input = None
            if body is not None:
                # Asked before decoding: a refused caller costs a parse, not a tolerant decode.
                if self.authorize is not None:
                    try:
                        await ask(
                            self.authorize, scope["headers"], "start", body.thread_id, body.run_id
                        )
                    except Refused as refused:
                        raise BadRequest(refused.status, refused.error) from None
                run_input = await self.decode_input(body)
            self.check_capacity(self._served)
        except BadRequest as bad:
            await json_response(send, bad.status, error_body(bad), bad.headers)
            return
        if run_input is None:  # the client left while sending its body
            return
        binary = self.binary_for(scope)
        span = self._run_span(run_input, scope)
        self._served += 1
        try:
            await self._respond(
                run_input,
                receive,
                send,
                binary,
                self.era_for(run_input),
                span,
                scope.get("client"),
            )
        finally:
            self._served -= 1
            if span is not None:
                span.end("disconnected")

    def _run_span(self, run_input: RunAgentInput, scope: Scope) -> RunSpan | None:
        """The trace span of a run starting now (None: tracing is off)."""
        if self._tracing is None:
            return None
        return self._tracing.start(run_input, scope["headers"])

    async def _refused(self, scope: Scope, send: Send, action: Action) -> bool:
        """Ask `authorize` about a request that names no run (capabilities, console); answer
        the refusal and say so."""
        if self.authorize is None:
            return False
        try:
            await ask(self.authorize, scope["headers"], action, None, None)
        except Refused as refused:
            await json_response(send, refused.status, {"error": refused.error})
            return True
        return False

    def _at_health(self, scope: Scope) -> bool:
        """The request is for /healthz or /readyz, and this app has a path of its own that is
        neither (with path None every path is the agent's)."""
        relative = relative_path(scope)
        if self.path is None or relative not in (health.HEALTHZ, health.READYZ):
            return False
        return relative != self.path.rstrip("/")

    # ── metrics, the log line of a run ───────────────────────────────────────
    def _at_metrics(self, scope: Scope) -> bool:
        """The request is for `GET /metrics` of an app with a path of its own (the whole app)."""
        if self.path is None or self.path == _METRICS:
            return False
        return _METRICS in (scope["path"], relative_path(scope))

    async def _serve_metrics(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await json_response(send, 405, {"error": "read the metrics with GET"}, ALLOW_GET)
            return
        if self._metrics_app is None:
            from prometheus_client import make_asgi_app

            assert self._meter is not None
            self._metrics_app = make_asgi_app(self._meter.metrics.registry)
        await self._metrics_app(scope, receive, send)

    def _observe_start(self) -> float:
        """A run starts (served here, or executing here with a store): counted; returns its
        start (the loop's clock)."""
        if self._meter is not None:
            self._meter.run_started()
        return asyncio.get_running_loop().time()

    def _observe_end(
        self,
        run_input: RunAgentInput,
        started: float,
        terminal: object,
        events: int,
        first_event: float | None,
        client: object,
        default: str = "disconnected",
        span: RunSpan | None = None,
    ) -> None:
        """A run ended: counted, and its line logged at INFO. `terminal`: its terminal event
        queued (None: none, the outcome is `default`); `first_event`: when its first event was
        written (the loop's clock; None: never); `span`: its trace span, whose trace id the line
        carries."""
        now = asyncio.get_running_loop().time()
        outcome, code = _outcome(terminal, default)
        if self._meter is not None:
            ttfe = None if first_event is None else max(0.0, first_event - started)
            self._meter.run_ended(outcome, now - started, ttfe)
        if log.isEnabledFor(logging.INFO):
            trace = None if span is None else span.trace_id
            _log_run(
                self.name,
                run_input.thread_id,
                run_input.run_id,
                outcome,
                code,
                events,
                now - started,
                client,
                trace,
            )

    def observe_closed(self, thread_id: str | None, run_id: str, seconds: float, code: str) -> None:
        """A run another worker executed was closed here with RUN_ERROR `code` (it was lost):
        whoever closes a run counts it (outcome error; not an active run here) and logs its line.
        `thread_id` and `run_id` as the run's client named them."""
        if self._meter is not None:
            self._meter.run_closed("error", seconds)
        if log.isEnabledFor(logging.INFO):
            _log_run(self.name, thread_id, run_id, "error", code, 0, seconds, None, None)

    # ── capabilities ─────────────────────────────────────────────────────────
    async def capabilities(self) -> AgentCapabilities:
        """What `GET {path}/capabilities` answers: the agent's declaration (asked again each
        time; an attribute, or a method, sync or async), nothing when it declares none, with the
        transport this app serves in place of the agent's own streaming, httpBinary and
        resumable: streaming always, httpBinary when `protobuf` is on, resumable with a store
        (each left out otherwise). The agent's other transport fields are kept."""
        declared = AgentCapabilities()
        if self._source is not None:
            value: Any = self._source.capabilities
            if callable(value):
                value = value()
                if inspect.isawaitable(value):
                    value = await value
            declared = _declared(value)
        transport = attrs.evolve(
            declared.transport or TransportCapabilities(),
            streaming=True,
            http_binary=True if self.protobuf else None,
            resumable=True if self._durable is not None else None,
        )
        return attrs.evolve(declared, transport=transport)

    def _at_capabilities(self, scope: Scope) -> bool:
        """The request is for `{path}/capabilities` (with path None: any path ending so)."""
        relative = relative_path(scope)
        if self.path is None:
            return relative.endswith(_CAPABILITIES)
        return self.path.rstrip("/") + _CAPABILITIES in (scope["path"], relative)

    async def _serve_capabilities(self, scope: Scope, send: Send) -> None:
        try:
            if self._stop_at is not None:
                raise BadRequest(503, "the server is shutting down")
            if scope["method"] != "GET":
                raise BadRequest(405, "read the capabilities with GET", (), ALLOW_GET)
            try:
                body = encode(await self.capabilities())
            except Exception:
                log.exception("the agent's capabilities could not be read")
                raise BadRequest(500, "the agent's capabilities could not be read") from None
        except BadRequest as bad:
            await json_response(send, bad.status, error_body(bad), bad.headers)
            return
        await send({"type": "http.response.start", "status": 200, "headers": _CAPABILITIES_HEADERS})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    # ── the request ──────────────────────────────────────────────────────────
    def binary_for(self, scope: Scope) -> bool:
        """The response is protobuf: `protobuf` is on and the request's Accept takes it."""
        return self.protobuf and any(
            k.lower() == b"accept" and accepts_proto(v) for k, v in scope["headers"]
        )

    def era_for(self, run_input: RunAgentInput) -> Era | None:
        """The pre-1.0 era a run's stream is translated for (`compat`), by the protocolVersion
        its input declares; None: the 1.0 stream, unchanged."""
        return self._compat.era_for(run_input.protocol_version)

    def note_downgrade(self, downgrade: Downgrade, undeclared: bool) -> None:
        """After a translated response: under compat="auto", the first time a client that
        declared no protocolVersion lost something a client of the newest era reads, one warning
        naming the setting that keeps it (the 0.0.x releases send the same requests, so only the
        operator knows which one the front end runs). Later ones are the INFO lines only."""
        if self._warned_compat or not undeclared or self._compat.setting != "auto":
            return
        lost = downgrade.notes.lost()
        if not lost:
            return
        self._warned_compat = True
        log.warning(
            'a client without protocolVersion was sent the %s era\'s stream (compat "auto", '
            "agent=%s), which dropped %s; @ag-ui/client %s reads them. %s",
            downgrade.era.name,
            self.name,
            lost,
            NEWEST.name,
            _KEEP_NEWEST,
        )

    def check_capacity(self, active: int) -> None:
        """Refuse a new run with 503 (and Retry-After) when `active` runs already execute here."""
        if self.max_active_runs is not None and active >= self.max_active_runs:
            log.warning("refused a run: %d runs are active (max_active_runs)", active)
            raise BadRequest(
                503,
                f"the server runs {self.max_active_runs} runs already; retry later",
                (),
                RETRY_AFTER,
            )

    async def read_request(self, scope: Scope, receive: Receive) -> RequestBody | None:
        """The request's body, read and parsed as JSON, not yet decoded: what `authorize` is
        asked with (its threadId and runId) before decode_input does the costly part; None when
        the client left while sending it. Raises BadRequest (415, 413, 408)."""
        headers = {k.lower(): v for k, v in scope["headers"]}
        media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if media != b"application/json" and not media.endswith(b"+json"):
            raise BadRequest(415, "the body must be JSON (Content-Type: application/json)")
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise BadRequest(413, f"the body is larger than {self.max_body_bytes} bytes")
        chunks: list[bytes] = []
        limit = asyncio.timeout(self.body_timeout)
        try:
            async with limit:
                if await self._read_body(receive, chunks) is None:
                    return None
        except TimeoutError:
            if not limit.expired():
                raise
            log.warning("refused a request whose body took over %s s", self.body_timeout)
            raise BadRequest(
                408, f"the body took longer than {self.body_timeout} seconds", (), CLOSE
            ) from None
        data = b"".join(chunks)
        return await _off_loop(len(data), RequestBody.parse, data)

    async def decode_input(self, body: RequestBody) -> RunAgentInput:
        """The request's RunAgentInput, decoded and validated, what was removed logged (at most
        MAX_WARNINGS lines of a kind, then how many more). Raises BadRequest (400)."""
        warnings: list[Problem] = []
        upgrades: list[str] = []
        try:
            run_input = await _off_loop(
                len(body.data), body.decode, self.strict_input, warnings, upgrades
            )
        except DecodeError as exc:
            try:
                body.data.decode()
            except UnicodeDecodeError as bad:
                problem = Problem(
                    "",
                    "encoding",
                    f"the body is not UTF-8: byte 0x{body.data[bad.start]:02x} at offset "
                    f"{bad.start} ({bad.reason})",
                )
                raise BadRequest(400, "the body is not UTF-8 JSON", (problem,)) from None
            raise BadRequest(400, "the body is not a valid RunAgentInput", exc.problems) from None
        _log_body(self.name, run_input, upgrades, warnings)
        # An agent with a validate(input) method can refuse a run before the stream opens.
        refused = tuple(self._validator.validate(run_input)) if self._validator else ()
        if refused:
            raise BadRequest(400, "the agent cannot run this input", refused)
        return run_input

    async def _read_body(self, receive: Receive, chunks: list[bytes]) -> list[bytes] | None:
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise BadRequest(413, f"the body is larger than {self.max_body_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks

    # ── the stream ───────────────────────────────────────────────────────────
    async def _respond(
        self,
        run_input: RunAgentInput,
        receive: Receive,
        send: Send,
        binary: bool = False,
        era: Era | None = None,
        span: RunSpan | None = None,
        client: object = None,
    ) -> None:
        headers = PROTO_HEADERS if binary else STREAM_HEADERS
        if self.protobuf:
            headers = [*headers, VARY]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        run = _Run(run_input, self.queue_size, binary, era, span, self.name)
        # The agent runs in the producer's task: a traced run's span is current there, and so are
        # the run's log fields (what its agent logs about it carries them).
        context = contextvars.copy_context() if span is None else span.task_context()
        context.run(RUN_FIELDS.set, run.fields())
        producer = asyncio.create_task(self._produce(run), context=context)
        sender = asyncio.create_task(send_frames(run.outbox, send, run.clock))
        watcher = asyncio.create_task(wait_for_disconnect(receive))
        tasks = [producer, sender, watcher]
        if self.keepalive is not None and not binary:
            tasks.append(asyncio.create_task(keep_alive(run.outbox, run.clock, self.keepalive)))
        self._runs.add(run)
        if self._stop_at is not None:  # the shutdown began while this run was being set up
            run.stop(self._stop_at)
        started = self._observe_start()
        if self._meter is not None:
            self._meter.streaming(run.clock, binary)
        try:
            await self._supervise(run, producer, sender, watcher)
        except asyncio.CancelledError:
            # The server cancels the request: uvicorn does when its graceful-shutdown window
            # (--timeout-graceful-shutdown) ends. The client still gets its RUN_ERROR, if the
            # connection takes it.
            await _cancelled(run, producer, sender, send)
            raise
        finally:
            self._runs.discard(run)
            for task in tasks:
                task.cancel()
            run.outbox.close()  # an agent that let the cancellation pass stops at its next event
            done, pending = await asyncio.wait(tasks, timeout=self._within_window(STOP_WAIT))
            if pending:
                about_run(
                    log, logging.ERROR, run.fields(), "the agent did not stop when it was cancelled"
                )
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    error = task.exception()
                    about_run(log, logging.ERROR, run.fields(), "streaming failed", exc_info=error)
            if self._meter is not None:
                self._meter.streamed(run.clock, binary)
            clock = run.clock
            self._observe_end(
                run.input, started, run.terminal, clock.events, clock.first, client, span=span
            )

    async def _supervise(
        self, run: _Run, producer: asyncio.Task[None], sender: asyncio.Task[None], watcher: Any
    ) -> None:
        """Wait for the response to be complete, ending the run early when the client leaves,
        when max_run_seconds pass, or when the server shuts down; then let the agent finish."""
        loop = run.loop
        expires = None if self.max_run_seconds is None else loop.time() + self.max_run_seconds
        while not sender.done():
            if watcher.done():
                about_run(
                    log,
                    logging.INFO,
                    run.fields(),
                    "the client disconnected; the agent is cancelled",
                )
                return
            now = loop.time()
            if run.stop_at is not None and now >= run.stop_at:
                run.stop_at = math.inf
                await run.end(producer, SERVER_SHUTDOWN, "The server is shutting down.")
            if expires is not None and now >= expires:
                expires = None
                seconds = self.max_run_seconds
                await run.end(producer, TIMEOUT, f"The run took longer than {seconds} seconds.")
            wait = earliest(now, run.stop_at, expires)
            if run.wake.done():
                run.wake = loop.create_future()
            await asyncio.wait(
                (sender, watcher, run.wake), timeout=wait, return_when=asyncio.FIRST_COMPLETED
            )
        if sender.cancelled() or sender.exception() is not None or not run.ended:
            return
        # The response is complete. The agent may still be working after its terminal event.
        await let_finish(run, producer)

    async def _produce(self, run: _Run) -> None:
        """Drive the agent through the run lifecycle; queue its frames; None marks the end.

        One pass over the agent's events: the lifecycle hands the bulk of a run (content events
        of open streams) to `sink`, which frames and queues them where the lifecycle checked
        them; every other event (and one the sink cannot take now) comes here."""
        binary = run.binary
        outbox = run.outbox
        offer, put = outbox.offer, outbox.put
        # A pre-1.0 peer's stream is translated (decided once per request, not per event).
        downgrade = run.downgrade
        frame_of: Callable[[Any], bytes]
        if binary:
            frame_of = proto_frame
        elif downgrade is None:
            frame_of = content_writer(framed=True)  # sse_frame, content written from a prefix
        else:
            frame_of = downgrade.sse_writer()  # sse, its text deltas in one call
        limit = MAX_PROTO_FRAME if binary else MAX_SSE_FRAME
        span = run.span  # counted here, in the same pass (RunSpan.saw)
        stream = run_lifecycle(
            self.agent,
            run.input,
            finish_grace=self.finish_grace,
            sink=outbox.sink(frame_of, limit, span),
            max_state_nodes=self.max_state_nodes,
            log_fields=run.fields(),
        )
        try:
            async for event in stream:
                if span is not None and not span.final:
                    span.saw(event)
                if binary and type(event) is UnknownEvent:
                    # an event of a type the binary form has no arm for cannot be sent
                    about_run(
                        log,
                        logging.WARNING,
                        run.fields(),
                        "dropped an event of unknown type %r (no protobuf form)",
                        event.type,
                    )
                    continue
                try:
                    frame = frame_of(event)
                except EncodeError:
                    about_run(
                        log,
                        logging.ERROR,
                        run.fields(INVALID_EVENT),
                        "the agent sent an event that cannot be encoded",
                        exc_info=True,
                    )
                    run.close_with("The agent produced an invalid event.", INVALID_EVENT)
                    return
                if len(frame) > limit:
                    about_run(
                        log,
                        logging.ERROR,
                        run.fields(INVALID_EVENT),
                        "the agent sent %s as a frame of %d bytes; clients refuse frames over %d "
                        "bytes",
                        getattr(event.type, "value", event.type),
                        len(frame),
                        limit,
                    )
                    run.close_with(
                        f"The agent produced an event too large to send ({len(frame)} bytes; "
                        f"clients take frames of at most {limit} bytes).",
                        INVALID_EVENT,
                    )
                    return
                if not offer(frame):
                    await put(frame)
                run.started = True
                if type(event) in TERMINAL:
                    # End the response now: the client is done even if the agent is not. The
                    # lifecycle drops (and logs) whatever the agent still yields.
                    run.ended = True
                    run.terminal = event
                    await put(None)
        finally:
            await stream.aclose()
            if downgrade is not None and downgrade.notes:
                about_run(
                    log,
                    logging.INFO,
                    run.fields(),
                    "for a client of the %s era (no protocolVersion): %s",
                    downgrade.era.name,
                    downgrade.notes.summary(),
                )
                self.note_downgrade(downgrade, run.input.protocol_version is None)


def _tracing(agent: Agent, tracing: bool | TracerProvider) -> Tracing:
    """What `AgentApp(tracing=...)` traces with. MissingExtraError (an ImportError) when the
    otel extra is not wholly installed: now, not at the first run. A provider given needs the
    API alone; True needs the SDK and the OTLP exporter too, which the first run configures
    from the environment when the application sets no provider of its own."""
    if isinstance(tracing, bool):
        require_extra("otel", "AgentApp(tracing=True)")
    else:
        require_extra("otel", "AgentApp(tracing=provider)", ("opentelemetry.trace",))
    from agui.http.tracing import Tracing

    return Tracing(agent, None if isinstance(tracing, bool) else tracing)


def _agent_name(agent: object) -> str:
    """The agent's `name` when it has one that is a string, else "agent"."""
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else "agent"


def _meter_of(metrics: Any, name: str) -> AgentMeter:
    """The instruments of `name` in the registry `metrics` names (True: the default one)."""
    require_extra("metrics", "AgentApp(metrics=...)")
    from agui.http.metrics import Metrics

    return Metrics.of(None if metrics is True else metrics).for_agent(name)


def _outcome(terminal: object, default: str) -> tuple[str, str | None]:
    """(the outcome label, the RUN_ERROR code) of a run whose terminal event is `terminal`."""
    if isinstance(terminal, RunErrorEvent):
        return "error", terminal.code if isinstance(terminal.code, str) else None
    if isinstance(terminal, RunFinishedEvent):
        kind = getattr(terminal.outcome, "type", "success")
        return (kind if kind in ("success", "interrupt", "cancelled") else "success"), None
    return default, None


def _log_run(
    agent: str,
    thread_id: str | None,
    run_id: str,
    outcome: str,
    code: str | None,
    events: int,
    seconds: float,
    client: object,
    trace: str | None,
) -> None:
    """The run's line at INFO: its fields as key=value (values quoted when they need it: ids
    come from clients), and in the record's `agui` attribute for a structured formatter."""
    fields: dict[str, Any] = {
        "agent": agent,
        "thread": thread_id,
        "run": run_id,
        "outcome": outcome,
    }
    if code is not None:
        fields["code"] = code
    fields.update(events=events, duration=round(seconds, 3), client=client_address(client))
    if trace is not None:
        fields["trace"] = trace
    log.info("run ended: %s", logfmt(fields), extra={"agui": fields})


def client_address(client: object) -> str | None:
    """The ASGI scope's `client` as the run line writes it: `host:port`, or the host alone when
    the port is 0 or missing (uvicorn's --proxy-headers puts the X-Forwarded-For address with
    port 0: the client's port is not forwarded, and `:0` would be a fake one); None: unknown."""
    if not isinstance(client, (tuple, list)) or not client:
        return None
    host = client[0]
    port = client[1] if len(client) > 1 else None
    return f"{host}:{port}" if port else str(host)


def _declared(value: object) -> AgentCapabilities:
    """An agent's declared capabilities, checked: TypeError unless an AgentCapabilities."""
    if isinstance(value, AgentCapabilities):
        return value
    raise TypeError(
        f"the agent's capabilities are {_a(value)}: declare an agui.AgentCapabilities, or a "
        "method (sync or async) that returns one"
    )


def _a(value: object) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


_OFF_LOOP_BYTES = 1024 * 1024
"""A request body larger than this is parsed and decoded in a worker thread, so that one large
body does not hold up the event loop (8 MiB with a million unknown members decodes in about 0.3 s
of CPU; a 1 MiB body of no warnings in a few ms)."""

_NOT_JSON: Any = object()
T = TypeVar("T")


async def _off_loop(size: int, call: Callable[..., T], *args: Any) -> T:
    """call(*args), in a worker thread when it works on more than _OFF_LOOP_BYTES."""
    if size > _OFF_LOOP_BYTES:
        return await asyncio.to_thread(call, *args)
    return call(*args)


@attrs.define(slots=True)
class RequestBody:
    """A run request's body, parsed as JSON but not decoded: the threadId and runId it names (None
    when missing or not strings: decoding then says what is wrong), which is all `authorize` is
    asked with, so a refused caller costs one orjson parse and no tolerant decode."""

    data: bytes
    value: Any
    thread_id: str | None
    run_id: str | None

    @classmethod
    def parse(cls, data: bytes) -> RequestBody:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return cls(data, _NOT_JSON, None, None)
        if type(value) is not dict:
            return cls(data, value, None, None)
        thread_id, run_id = value.get("threadId"), value.get("runId")
        # (once decoded, the input's ids are these: the decoder reads the same members, as is)
        return cls(
            data,
            value,
            thread_id if type(thread_id) is str else None,
            run_id if type(run_id) is str else None,
        )

    def decode(self, strict: bool, warnings: list[Problem], upgrades: list[str]) -> RunAgentInput:
        """The RunAgentInput, retired shapes a pre-1.0 client sends (legacy binary content
        parts) upgraded first (each upgrade said in `upgrades`). Raises DecodeError."""
        if self.value is _NOT_JSON:
            return decode(self.data, RunAgentInput, strict=strict)  # it says what is wrong
        reshaped = False
        if needs_upgrade(self.data):
            upgrades.extend(upgrade_input(self.value))
            reshaped = bool(upgrades)
        return decode_loaded(  # type: ignore[no-any-return]
            self.data,
            self.value,
            RunAgentInput,
            strict=strict,
            warnings=warnings,
            reshaped=reshaped,
        )


def _log_body(
    agent: str | None, run_input: RunAgentInput, upgrades: list[str], warnings: list[Problem]
) -> None:
    """Log what a request body had upgraded or removed, each line with the run's fields (agent,
    thread, run). A null on an optional member (what many official clients send for an absent
    one) is DEBUG; the rest is a WARNING. The decoder lists at most MAX_WARNINGS of a kind;
    upgrades are capped alike."""
    fields = {"agent": agent, "thread": run_input.thread_id, "run": run_input.run_id}
    for said in upgrades[:MAX_WARNINGS]:
        about_run(log, logging.WARNING, fields, "request body: %s", said)
    if len(upgrades) > MAX_WARNINGS:
        more = len(upgrades) - MAX_WARNINGS
        about_run(log, logging.WARNING, fields, "request body: ... and %d more upgrades", more)
    for problem in warnings:
        level = logging.DEBUG if problem.kind == "null" else logging.WARNING
        about_run(log, level, fields, "request body: %s", problem)


class _Run:
    """One run being served: its queue of frames, and how far the response got."""

    __slots__ = (
        "agent",
        "binary",
        "clock",
        "downgrade",
        "ended",
        "id",
        "input",
        "loop",
        "outbox",
        "span",
        "started",
        "stop_at",
        "terminal",
        "wake",
    )

    def __init__(
        self,
        run_input: RunAgentInput,
        queue_size: int,
        binary: bool,
        era: Era | None = None,
        span: RunSpan | None = None,
        agent: str = "agent",
    ) -> None:
        self.input = run_input
        self.agent = agent  # the AgentApp's name, for the log lines about the run
        self.span = span  # the run's trace span (None: not traced)
        self.id = run_input.run_id
        self.binary = binary
        # the translation for a pre-1.0 peer (SSE only: no 0.0.x client asks for protobuf)
        self.downgrade = Downgrade(era) if era is not None and not binary else None
        self.loop = asyncio.get_running_loop()
        self.outbox = Outbox(queue_size)
        self.clock = Clock()
        self.started = False  # a frame is queued (so RUN_STARTED is)
        self.ended = False  # the terminal frame and the end of the response are queued
        self.terminal: object = None  # the terminal event queued (its outcome), None: none
        self.stop_at: float | None = None  # when the server's shutdown ends the run (loop time)
        self.wake: asyncio.Future[None] = self.loop.create_future()

    def frame(self, event: Any) -> bytes:
        return proto_frame(event) if self.binary else sse_frame(event)

    def stop(self, deadline: float) -> None:
        """The server shuts down: the run must end by `deadline` (time.monotonic, the loop's
        clock). Called on the run's loop."""
        if self.stop_at is None or deadline < self.stop_at:
            self.stop_at = deadline
        if not self.wake.done():
            self.wake.set_result(None)

    def fields(self, code: str | None = None) -> dict[str, object]:
        """What every log line about the run carries (agui.observe.runlog.about_run)."""
        fields: dict[str, object] = {
            "agent": self.agent,
            "thread": self.input.thread_id,
            "run": self.input.run_id,
        }
        if code is not None:
            fields["code"] = code
        return fields

    def close_with(self, message: str, code: str) -> None:
        """Queue the run's end: RUN_STARTED when nothing was sent yet, then RUN_ERROR."""
        if self.ended:
            return
        if self.span is not None:
            self.span.ended_by_server(code, message)
        if not self.started:
            self.outbox.put_nowait(self.frame(run_started(self.input)))
            self.started = True
        self.terminal = run_error(message, code)
        self.outbox.put_nowait(self.frame(self.terminal))
        self.outbox.put_nowait(None)
        self.ended = True

    async def end(self, producer: asyncio.Task[None], code: str, message: str) -> None:
        """Stop the agent and end the response in RUN_ERROR `code` (unless it already ended)."""
        await stop_agent(producer, self.fields())
        if not self.ended:
            about_run(log, logging.WARNING, self.fields(code), "ended with RUN_ERROR: %s", message)
        self.close_with(message, code)


async def _cancelled(
    run: _Run, producer: asyncio.Task[None], sender: asyncio.Task[None], send: Send
) -> None:
    """The request's task was cancelled (by the server): write what is queued and RUN_ERROR
    SERVER_SHUTDOWN directly, if the connection still takes it.

    The writes come first, before anything else is awaited: the server may be about to stop its
    event loop, and a send that finds the transport writable completes without waiting."""
    producer.cancel()
    sender.cancel()
    if sender.done():
        if not sender.cancelled() and sender.exception() is None:
            return  # the response was complete
    frames = unsent(run.outbox)
    if not run.ended:
        fields = run.fields(SERVER_SHUTDOWN)
        about_run(
            log, logging.WARNING, fields, "the server cancelled the run; it ends in RUN_ERROR"
        )
        if run.span is not None:
            run.span.ended_by_server(SERVER_SHUTDOWN, "The server is shutting down.")
        if not run.started:
            frames.append(run.frame(run_started(run.input)))
        run.terminal = run_error("The server is shutting down.", SERVER_SHUTDOWN)
        frames.append(run.frame(run.terminal))
        run.ended = True
    try:
        async with asyncio.timeout(STOP_WAIT):
            await send_last(send, frames)
    except Exception:  # the connection is gone: nothing more to tell the client
        about_run(log, logging.INFO, run.fields(), "the end of the response could not be sent")


def _shutdown_of(app: AgentApp) -> Callable[[Any], None]:
    """`uvicorn_shutdown` of `app` for a uvicorn server whose shutdown begins (the app is not
    kept alive by the signal handler)."""
    ref = weakref.ref(app)

    def notify(server: Any) -> None:
        target = ref()
        if target is not None:
            uvicorn_shutdown(server, [target])

    return notify


def uvicorn_shutdown(server: Any, apps: Iterable[AgentApp] | None = None) -> None:
    """The shutdown of `server` (a uvicorn.Server) begins: each of `apps` (None: every AgentApp
    of the process, for `agui serve`) is shut down with the grace of its window
    (`_uvicorn_grace`), and learns when the window ends (the waits that follow the runs' ends,
    and the lifespan's, stop there: `_within_window`)."""
    grace = _uvicorn_grace(server)
    window: float | None = server.config.timeout_graceful_shutdown
    ends_by = None if window is None else time.monotonic() + window
    if server.force_exit:  # told to hurry: the window is over
        ends_by = time.monotonic()
    for app in list(AgentApp._apps if apps is None else apps):
        if ends_by is not None and (app._ends_by is None or ends_by < app._ends_by):
            app._ends_by = ends_by
        app.shutdown(grace)


def _uvicorn_grace(server: Any) -> float:
    """How long runs may go on once the shutdown of `server` (a uvicorn.Server) begins: its
    graceful window (--timeout-graceful-shutdown; None: forever) less a margin for what follows
    (`_margin`): the runs' RUN_ERROR, their ends stored, the responses complete, the lifespan's
    end and the process's exit, all within the window (before uvicorn would cancel what is
    left, and an orchestrator kill the process); 0 when told to hurry (a second Ctrl-C)."""
    if server.force_exit:
        return 0.0
    window: float | None = server.config.timeout_graceful_shutdown
    if window is None:
        return 3600.0 * 24
    return max(0.0, window - _margin(window))


def _margin(window: float) -> float:
    """The end of a graceful window of `window` seconds kept for what follows the grace: _MARGIN,
    _MARGIN_PER_RUN for each run going and each response following one in this process, and
    _MARGIN_PER_STORED for each run executing with a store (ending them costs about that on a
    2-core machine shared with other work), at most half the window."""
    apps = list(AgentApp._apps)
    going = sum(len(app._runs) for app in apps)
    stored = sum(len(app._durable.executions) for app in apps if app._durable is not None)
    return min(window / 2, _MARGIN + _MARGIN_PER_RUN * going + _MARGIN_PER_STORED * stored)


class _ExitHook:
    """A SIGINT / SIGTERM handler: the uvicorn server's own, then `notify(server)`."""

    def __init__(self, previous: Callable[[int, Any], Any], server: Any, notify: Any) -> None:
        self.previous, self.server, self.notify = previous, server, notify

    def __call__(self, signum: int, frame: Any) -> None:
        self.previous(signum, frame)
        self.notify(self.server)


def when_uvicorn_exits(notify: Callable[[Any], None]) -> None:
    """Chain `notify(server)` onto the SIGINT and SIGTERM handlers of the uvicorn server running
    this process (it installs them before it loads and starts the app), so that `notify` learns
    of the shutdown when it begins, not when the graceful window ends. Nothing under another
    server, or off the main thread (uvicorn then installs no handler either)."""
    server_type = getattr(sys.modules.get("uvicorn"), "Server", None)
    if not isinstance(server_type, type):
        return
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(signum)
        if isinstance(previous, _ExitHook):
            server = previous.server
        else:
            server = getattr(previous, "__self__", None)
        if isinstance(server, server_type) and callable(previous):
            signal.signal(signum, _ExitHook(previous, server, notify))
