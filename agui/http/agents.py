"""Several agents behind one ASGI app: `AgentServer({"NAME": agent, ...})` serves each agent at
`/NAME` (an AgentApp of its own: its run, capabilities, durable routes and console under that
path), lists them at `GET /agents` and answers the health checks `GET /healthz` and `GET /readyz`
(agui.http.health). It runs under uvicorn on its own (`agui serve NAME=MODULE:ATTR ...` builds
one) or inside FastAPI or Starlette (`include_in(api)`).

One store, many agents: a store given here (a URL, opened once, or an EventLog) is shared by the
agents the server builds, and each agent keeps its threads and runs in a namespace of its own
(`NAME/`, ahead of the principal's namespace of agui.http.access). The same thread and run ids
sent to two agents are two threads and two runs; a request to one agent for another's run is
answered as for an id never used. The log is closed at the end of the server's lifespan, once the
agents' runs have ended.

The paths at the server's root are its own: `/agents`, `/healthz`, `/readyz`, and `/metrics`
(the Prometheus metrics of its agents, when they report them: `metrics=True` or a registry,
which they share), so no agent takes those names.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import orjson

from agui.http import health
from agui.http.access import Authorize, Refused, ask
from agui.http.asgi import (
    Receive,
    Scope,
    Send,
    answer_lifespan,
    json_response,
    nested_lifespan,
    relative_path,
)
from agui.http.cors import checked_origins, with_cors
from agui.http.server import AgentApp, RouteTable
from agui.wire.codec import encode

if TYPE_CHECKING:
    from agui.agent.protocol import Agent
    from agui.store.base import EventLog, Retention

__all__ = ["AGENT_NAME", "RESERVED_NAMES", "AgentServer"]

log = logging.getLogger("agui.server")

AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""What an agent's name is: one path segment of letters, digits, `.`, `_` and `-` (not first),
at most 64 characters. It is the agent's path (`/NAME`) and its namespace in a shared store."""
RESERVED_NAMES = frozenset({"agents", "healthz", "readyz", "metrics"})
"""The server's own paths at its root: no agent is named so."""

_AGENTS = "/agents"
_METRICS = "/metrics"
_JSON_HEADERS = ((b"cache-control", b"no-cache"),)


class AgentServer:
    """An ASGI application serving several agents, each at `/NAME` (see the module docstring).

    agents: the name of each agent and the agent, or an AgentApp built for it (used as it is,
    with its own settings: its path must be unset, the server gives it `/NAME`, or `/NAME`).
    For the agents given as agents, the server builds each AgentApp with the settings here:
    store (a URL for `agui.store.open_log`, opened once, or an EventLog) and retention (for a
    store URL), authorize, console, and any other AgentApp parameter in `options`
    (max_run_seconds, max_active_runs, lease_seconds, ...: each agent has its own limits). An
    AgentApp given here keeps its own store, if any, in its agent's namespace too.
    cors_origins: the origins whose web pages may call every route of the server (Starlette's
    CORSMiddleware, as AgentApp's); an AgentApp given here then must have none of its own.

    `GET /agents` answers `{"agents": [{"name", "path", "capabilities"}, ...]}` in the order
    given: each agent's name, the path it is served at (the request's root path included) and
    its capabilities (AgentApp.capabilities: the agent's declaration and the transport). An
    agent whose `authorize` hook refuses the caller the action "capabilities" is left out;
    when it refuses every agent, the answer is its refusal (403).
    `GET /healthz`: 200 while the process serves. `GET /readyz`: 503 while the server drains
    (the shutdown of the server or of one of its agents began) or a store does not answer a
    round trip, else 200 (agui.http.health).

    ValueError for no agent, a name that is not one (AGENT_NAME) or is reserved
    (RESERVED_NAMES), an AgentApp given twice or at another path, a `path` or `cors_origins`
    in `options`; TypeError for an agent that cannot be one (as AgentApp's).
    """

    def __init__(
        self,
        agents: Mapping[str, Agent | AgentApp],
        *,
        store: str | EventLog | None = None,
        retention: Retention | None = None,
        authorize: Authorize | None = None,
        cors_origins: Iterable[str] = (),
        console: bool = False,
        **options: Any,
    ) -> None:
        if not agents:
            raise ValueError("give at least one agent: AgentServer({'name': agent})")
        for option in ("path", "cors_origins"):
            if option in options:
                raise ValueError(f"{option} is the server's to set: each agent is at /NAME")
        origins = checked_origins(cors_origins)
        self._owns_log = False
        self._log: EventLog | None = None
        if retention is not None and not isinstance(store, str):
            raise ValueError(
                "retention is for a store URL: give store=URL, or open the EventLog with it "
                "(agui.store.open_log(url, retention=...))"
            )
        apps: dict[str, AgentApp] = {}
        given: set[int] = set()
        for name, agent in agents.items():
            _check_name(name)
            if isinstance(agent, AgentApp):
                if id(agent) in given:
                    raise ValueError(f"agent {name!r}: this AgentApp is given twice")
                given.add(id(agent))
                if agent.path is None:
                    agent.path = f"/{name}"
                elif agent.path.rstrip("/") != f"/{name}":
                    raise ValueError(
                        f"agent {name!r}: its AgentApp serves {agent.path}, not /{name}: leave "
                        "its path unset (the server gives it /NAME)"
                    )
                if origins and agent.cors_origins:
                    raise ValueError(
                        f"agent {name!r}: give cors_origins to the AgentServer only (its "
                        "AgentApp has its own)"
                    )
                apps[name] = agent
                continue
            if store is not None and self._log is None:
                self._log = _opened(store, retention)
                self._owns_log = isinstance(store, str)
            try:
                apps[name] = AgentApp(
                    agent,
                    path=f"/{name}",
                    store=self._log,
                    authorize=authorize,
                    console=console,
                    **{"name": name, **options},  # its name in metrics, logs and traces
                )
            except TypeError as error:
                raise TypeError(f"agent {name!r}: {error}") from None
        for name, app in apps.items():
            if app._durable is not None:
                app._durable.namespace = f"{name}/"
        self.apps: Mapping[str, AgentApp] = MappingProxyType(apps)
        """Each agent's AgentApp, by name, in the order given."""
        self.cors_origins = origins
        self._app: Callable[[Scope, Receive, Send], Awaitable[None]] = self._dispatch
        if origins:
            self._app = with_cors(self._dispatch, origins)
        self._bases: list[str] = [""]  # the prefixes the server is served under (include_in)
        self._draining = False
        self._lifespans = 0

    @property
    def store(self) -> EventLog | None:
        """The event log the agents built here share (None: no store given)."""
        return self._log

    # ── shutdown ─────────────────────────────────────────────────────────────
    def shutdown(self, grace: float = 0.0) -> None:
        """The server is shutting down: `/readyz` answers 503 from now on, and every agent's
        AgentApp.shutdown(grace) (new requests 503, runs still going after `grace` seconds end in
        RUN_ERROR SERVER_SHUTDOWN). Under uvicorn each AgentApp learns of the shutdown by itself
        (its lifespan, or `agui serve`); call this under another server. Safe from a signal
        handler or another thread."""
        self._draining = True
        for app in self.apps.values():
            app.shutdown(grace)

    # ── inside FastAPI or Starlette ──────────────────────────────────────────
    def include_in(self, target: RouteTable, path: str = "") -> None:
        """Add the server's routes to `target` (a FastAPI or Starlette application, an APIRouter
        or a Router) under `path` (default: the root): `{path}/agents`, `{path}/healthz`,
        `{path}/readyz`, and for each agent `{path}/NAME` and every path under it, with this
        server as their endpoint (every method goes to it; left out of an OpenAPI schema). The
        server's lifespan (each agent's, then the shared store's end) joins the target's, inside
        it, as AgentApp.include_in does."""
        if path and not path.startswith("/"):
            raise ValueError(f"the path must start with '/': {path!r}")
        base = path.rstrip("/")
        routes = [f"{base}{_AGENTS}", f"{base}{health.HEALTHZ}", f"{base}{health.READYZ}"]
        for name in self.apps:
            routes += [f"{base}/{name}", f"{base}/{name}/{{rest:path}}"]
        for route in routes:
            target.add_route(route, self, include_in_schema=False)
        if base not in self._bases:
            self._bases.append(base)
            self._bases.sort(key=len, reverse=True)  # the longest prefix that fits wins
        holder: Any = getattr(target, "router", target)
        inner = getattr(holder, "lifespan_context", None)
        if callable(inner):
            holder.lifespan_context = nested_lifespan(inner, self.lifespan)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[None]:
        """The server's part of the lifespan (its own ASGI lifespan, or an application's through
        `include_in`; `async with server.lifespan(app):` in a lifespan of your own): each
        agent's AgentApp.lifespan entered on entry, all exited together on exit (their runs
        ended and stored), then the store the server opened from its URL closed, within what is
        left of uvicorn's graceful window."""
        self._lifespans += 1
        entered: list[contextlib.AbstractAsyncContextManager[None]] = []
        try:
            if self._lifespans == 1:
                for agent in self.apps.values():
                    context = agent.lifespan()
                    await context.__aenter__()
                    entered.append(context)
            yield
        finally:
            self._lifespans -= 1
            if entered:
                await asyncio.gather(*(c.__aexit__(None, None, None) for c in entered))
            if self._lifespans == 0 and self._owns_log and self._log is not None:
                await self._close_log(self._log)

    async def _close_log(self, store: EventLog) -> None:
        limits = [app._within_window(None) for app in self.apps.values()]
        bounded = [limit for limit in limits if limit is not None]
        try:
            async with asyncio.timeout(min(bounded) if bounded else None):
                await store.aclose()
        except TimeoutError:
            log.warning("the event log was not closed within the server's graceful window")
        except Exception:
            log.exception("the event log could not be closed")

    # ── the requests ─────────────────────────────────────────────────────────
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send, self.lifespan())
            return
        if scope["type"] != "http":
            return
        base, rest = self._split(relative_path(scope))
        if rest == health.HEALTHZ:
            await health.answer(scope, send, None)
            return
        if rest == health.READYZ:
            ready = await health.not_ready(self.apps.values(), self._draining)
            await health.answer(scope, send, ready)
            return
        if rest == _AGENTS:
            await self._list(scope, send, scope.get("root_path", "") + base)
            return
        if rest == _METRICS:
            metered = next((app for app in self.apps.values() if app._meter is not None), None)
            if metered is not None:  # the registry the agents share (agui.http.metrics)
                if not await metered._refused(scope, send, "metrics"):
                    await metered._serve_metrics(scope, receive, send)
                return
        name = rest[1:].partition("/")[0]
        agent = self.apps.get(name)
        if agent is None:
            where = scope.get("root_path", "") + base + _AGENTS
            await json_response(
                send,
                404,
                {
                    "error": f"no agent is served at {scope['path']}; the agents are listed at {where}"
                },
            )
            return
        if base:  # as if the server were at the root: the agent's app sees /NAME...
            root = scope.get("root_path", "") + base
            scope = {**scope, "root_path": root, "path": root + rest}
        await agent(scope, receive, send)

    def _split(self, relative: str) -> tuple[str, str]:
        """(the prefix the request came under, the path after it)."""
        for base in self._bases:
            if not base:
                break
            if relative == base or relative.startswith(base + "/"):
                return base, relative[len(base) :] or "/"
        return "", relative

    async def _list(self, scope: Scope, send: Send, base: str) -> None:
        """`GET /agents`: each agent the caller may read the capabilities of."""
        if scope["method"] != "GET":
            await json_response(
                send, 405, {"error": "list the agents with GET"}, ((b"allow", b"GET"),)
            )
            return
        if self._draining or any(app._stop_at is not None for app in self.apps.values()):
            await json_response(send, 503, {"error": "the server is shutting down"})
            return
        listed: list[dict[str, Any]] = []
        refusal: Refused | None = None
        for name, app in self.apps.items():
            try:
                await ask(app.authorize, scope["headers"], "capabilities", None, None)
            except Refused as refused:
                refusal = refusal or refused
                continue
            entry: dict[str, Any] = {"name": name, "path": f"{base}/{name}"}
            try:
                entry["capabilities"] = orjson.loads(encode(await app.capabilities()))
            except Exception:  # one broken declaration does not hide the other agents
                log.exception("the capabilities of agent %r could not be read", name)
            listed.append(entry)
        if not listed and refusal is not None:
            await json_response(send, refusal.status, {"error": refusal.error})
            return
        await json_response(send, 200, {"agents": listed}, _JSON_HEADERS)


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not AGENT_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is not an agent name: one path segment of letters, digits, '.', '_' and "
            "'-' (not first), at most 64 characters"
        )
    if name in RESERVED_NAMES:
        raise ValueError(
            f"{name!r} is a path of the server itself ({', '.join(sorted(RESERVED_NAMES))}): "
            "name the agent otherwise"
        )


def _opened(store: str | EventLog, retention: Retention | None) -> EventLog:
    if not isinstance(store, str):
        return store
    from agui.store import open_log

    return open_log(store, retention=retention)
