"""Durable runs: what `AgentApp(agent, store=...)` serves, on an event log (agui.store).

A run starts with `POST {path}` and executes as a task of its own, detached from the request: the
client leaving does not stop it. The executor drives the agent through the run lifecycle, encodes
every event (the checks the streaming path makes) and appends them to the log in batches: a
writer task takes everything queued while the previous append was in flight, so a fast agent pays
one round trip per batch and a slow one gets each event stored at once. The POST answers with the
run's live tail, read back from the log like every other reader's.

Every response that replays a run reads it from the log: `GET {path}/runs/{runId}/events` (resume
after `Last-Event-ID` or `?after=`), `GET {path}/threads/{threadId}/events` (connect: the
thread's history, then its active run live). Over SSE each stored event carries its cursor as the
frame's `id:`; the binary transport sends the same events without ids. The thread API
(`GET {path}/threads`, `GET` and `DELETE {path}/threads/{threadId}`) is agui.http.threads.

The worker executing a run owns it: it renews its lease every third of `lease_seconds`, and
every `STOP_POLL` seconds reads the run's record for a stop request (`POST
{path}/runs/{runId}/stop`, served by any worker). A stopped run ends with what is open closed and
RUN_FINISHED whose outcome is cancelled. A worker that dies leaves its lease to run out: a
response following the run checks the record whenever the run is silent, and a sweep on every
worker checks all runs every `lease_seconds`; whoever sees the lease gone first closes the run
with RUN_ERROR `RUN_LOST` (`EventLog.close_lost`, atomic), counts it and logs its run line. A run
the log no longer has (a Redis restarted without persistence) ends its streams in RUN_ERROR
`STORE_ERROR`: its executor polls its record, a follower checks it when the run is silent.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import os
import random
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import attrs
from agui_generated import (
    DecodeError,
    MessagesSnapshotEvent,
    Problem,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    UnknownEvent,
)

from agui.errors import EncodeError, ProtocolError
from agui.http import threads
from agui.http.access import Action, Principal, Refused, ask
from agui.http.asgi import (
    ALLOW_GET,
    ALLOW_POST,
    RETRY_AFTER,
    BadRequest,
    Receive,
    Scope,
    Send,
    error_body,
    json_response,
    query_params,
    relative_path,
    wait_for_disconnect,
)
from agui.http.lifetime import (
    SERVER_SHUTDOWN,
    STOP_WAIT,
    TERMINAL,
    TIMEOUT,
    earliest,
    let_finish,
    stop_agent,
)
from agui.http.response import (
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
from agui.observe.runlog import RUN_FIELDS, about_run
from agui.store import (
    EventBatch,
    EventLog,
    ExactEvents,
    RunExists,
    RunRecord,
    StoreError,
    StoreUnavailable,
    ThreadBusy,
    UnknownRun,
    open_log,
)
from agui.stream.chunks import ChunkExpander
from agui.stream.lifecycle import (
    INVALID_EVENT,
    RunTracker,
    run_error,
    run_lifecycle,
    run_started,
)
from agui.stream.reducer import Reducer
from agui.wire.codec import decode, encode
from agui.wire.content import content_writer
from agui.wire.eras import Downgrade, Era
from agui.wire.proto import proto_frame
from agui.wire.sse import sse_data_frames, sse_frame

if TYPE_CHECKING:
    from agui.http.server import AgentApp
    from agui.http.tracing import RunSpan

__all__ = [
    "HISTORY_RUN_SUFFIX",
    "RESUME_HEADER",
    "RUN_LOST",
    "STOP_POLL",
    "STORE_ERROR",
    "Durable",
    "StoreFailure",
]

log = logging.getLogger("agui.server")
_RANDOM = random.Random()
"""Jitter from a generator of our own: the global one belongs to the application (and its
tests: seeded runs, property tests that check nothing else draws from it)."""

RUN_LOST = "RUN_LOST"
"""The RUN_ERROR code of a run whose worker stopped renewing its lease before the run ended."""
STORE_ERROR = "STORE_ERROR"
"""The RUN_ERROR code that ends a run's streams when the event log failed (a full disk, a
read-only or deleted file, a lost connection) or lost the run (a Redis restarted without
persistence, a key evicted or deleted): its events cannot be stored or read, so the run cannot
go on. Stored as the run's terminal event when the log still takes that one write."""
HISTORY_RUN_SUFFIX = ":history"
"""The synthetic run of a compacted history is `<threadId>:history` (thread and run ids)."""
STOP_POLL = 0.15
"""Seconds between two reads of a run's record by its owner, for a stop request."""


_DATA_LIMIT = MAX_SSE_FRAME - 200  # an event's JSON, leaving room for the frame's id line
_BATCH_BYTES = 1024 * 1024  # an append carries at most about this many bytes (one event at least)
_READ_BATCH = 128  # events a response reads from the log at most at once (and queues as one piece)
_IDLE = 1.0  # seconds of silence after which a response following a run checks its lease
_PRUNE_EVERY = 60.0  # seconds between two prunes of the log's expired runs (by the sweep)
_RUN_STARTED_PREFIX = b'{"type":"RUN_STARTED"'
_TERMINAL_PREFIXES = (b'{"type":"RUN_FINISHED"', b'{"type":"RUN_ERROR"')
RESUME_HEADER = "Agui-Resume"
"""The request header of a start whose client resumes a cut stream (`Agui-Resume: 1`): its run
goes on when the request goes away. Without it, and unless AgentApp(detach="always"), a run
whose request went away before its end is stopped."""
_RESUME_KEY = RESUME_HEADER.lower().encode()
_SUPERSEDE_WAIT = 5.0  # seconds a new run on a thread waits for the end of a run being stopped
_STOP_NOTICE = 0.5  # seconds it looks for a stop of the thread's run (its client just left)
_ROUTE = re.compile(r"/(runs|threads)/([^/]+)/(events|stop)$")
_THREADS_ROUTE = re.compile(r"/threads(?:/([^/]+))?$")  # the thread API (agui.http.threads)
_ALLOW_GD = ((b"allow", b"GET, DELETE"),)
_RESUMABLE = (b"agui-resumable", b"1")
"""On each stream a server with a store answers: a client may resume it after a cut at
`GET {url}/runs/{runId}/events` (agui.http.client.RESUMABLE_HEADER)."""


def lost_event() -> bytes:
    """The RUN_ERROR that closes a run whose worker is gone."""
    return encode(run_error("The worker running this run stopped before the run ended.", RUN_LOST))


_STORE_ERROR_MESSAGE = "The event log failed; the run cannot go on."
_FAILED = object()  # a read of the log failed (not: it answered None)
_NOTED = 10_000  # runs whose store failure a worker remembers having logged


def _fault(error: BaseException) -> bool:
    """Whether `error`, raised by the log, says the backend failed (StoreUnavailable; a
    StoreError caused by the backend's own error, as Redis raises; anything but a StoreError),
    not the request (a conflict, an unknown run or cursor, a run another worker finished)."""
    if isinstance(error, StoreUnavailable):
        return True
    if isinstance(error, (UnknownRun, RunExists, ThreadBusy)):
        return False
    return not isinstance(error, StoreError) or error.__cause__ is not None


@attrs.frozen(kw_only=True)
class StoreFailure:
    """The last failure of the event log a worker saw (`Durable.store_failure`)."""

    error: str
    """What failed, as the log said it (`SQLite store '...': database or disk is full`)."""
    at: float
    """When, in seconds since the epoch."""
    since: float
    """When the log began failing (the first failure since it last worked)."""


class Durable:
    """The durable side of one AgentApp: its event log, the runs executing here, the routes.

    `owner` names this worker in the runs it executes (host, process id and a random part)."""

    def __init__(
        self,
        app: AgentApp,
        store: str | EventLog,
        *,
        exclusive_threads: bool,
        lease_seconds: float,
        max_principal_bytes: int | None = None,
        max_principal_threads: int | None = None,
    ) -> None:
        self.app = app
        self.max_principal_bytes = max_principal_bytes
        """The most JSON one principal's runs may hold in the log (`EventLog.usage`); a start
        that would take it beyond gets 429. None: no limit."""
        self.max_principal_threads = max_principal_threads
        """The most threads one principal may keep in the log; a start on a new thread beyond
        gets 429. None: no limit."""
        self.log: EventLog = open_log(store) if isinstance(store, str) else store
        self._owns_log = isinstance(store, str)
        self.exclusive_threads = exclusive_threads
        self.lease_seconds = lease_seconds
        self.idle = min(_IDLE, lease_seconds / 4)  # silence before a follower checks the lease
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.executions: dict[str, Execution] = {}
        self._reserved = 0  # runs admitted but not yet executing
        self._sweeper: asyncio.Task[None] | None = None
        self._pruned = 0.0
        self._closed = False
        self.namespace = ""
        """Put before every id this app keeps, ahead of the principal's prefix: `agui.AgentServer`
        gives each agent its own (`NAME/`), so agents sharing a log never see each other's
        threads and runs. "" (a lone AgentApp): the ids as the principal keeps them."""
        self.store_failure: StoreFailure | None = None
        """The event log's last failure while it is failing, None while it works: see
        `healthy`."""
        self._noted: dict[str, None] = {}  # runs whose store failure was logged (the latest)
        self._outage_noted = False  # the current failure was logged
        self._watchers: dict[str, set[asyncio.Future[None]]] = {}  # live streams, by run
        # the client's ids of the runs followed here, for the log lines about them (by run key)
        self._followed: dict[str, tuple[Principal, str | None]] = {}

    # ── routing ──────────────────────────────────────────────────────────────

    def startup(self) -> None:
        """Start the sweep for lost runs (at the ASGI lifespan's startup, else at the first
        request: an app inside FastAPI or Starlette gets no lifespan of its own)."""
        if self._sweeper is None and not self._closed:
            self._sweeper = asyncio.create_task(self._sweep_forever())

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.startup()
        try:
            if self.app._stop_at is not None:
                raise BadRequest(503, "the server is shutting down")
            kind, ident = self._route(scope)
            method = scope["method"]
            if kind == "start":
                if method != "POST":
                    raise BadRequest(
                        405, "only POST is allowed: send a RunAgentInput as JSON", (), ALLOW_POST
                    )
                await self._start(scope, receive, send)
            elif kind == "stop":
                if method != "POST":
                    raise BadRequest(405, "stop a run with POST", (), ALLOW_POST)
                await self._stop(scope, send, ident)
            elif kind in ("threads", "thread"):
                await self._threads(scope, send, kind, ident)
            elif method != "GET":
                raise BadRequest(405, "read events with GET", (), ALLOW_GET)
            elif kind == "resume":
                await self._resume(scope, receive, send, ident)
            else:
                await self._connect(scope, receive, send, ident)
        except BadRequest as bad:
            await json_response(send, bad.status, error_body(bad), bad.headers)
        except StoreError as error:
            if _fault(error) or getattr(self.log, "closed", False):
                # the backend: once per outage, no traceback (readiness sees it); or a request
                # the shutdown overtook (nothing logged)
                self._store_failed(error)
            else:
                log.exception("the event log failed")
            await json_response(send, 503, {"error": "the event log failed"}, RETRY_AFTER)

    def _route(self, scope: Scope) -> tuple[str, str]:
        """(start|resume|connect|stop|threads|thread, the run or thread id) of the request; 404
        otherwise."""
        path = relative_path(scope)
        raw = scope.get("raw_path")
        tail = raw.decode("latin-1") if isinstance(raw, bytes) else path
        match = _ROUTE.search(tail)
        if match is not None:
            noun, ident, verb = match.groups()
            ident = unquote(ident)
            suffix = f"/{noun}/{ident}/{verb}"
            kind = {
                ("runs", "events"): "resume",
                ("runs", "stop"): "stop",
                ("threads", "events"): "connect",
            }.get((noun, verb))
            if kind is not None and path.endswith(suffix) and ident:
                base = path[: -len(suffix)]
                if self.app.path is None or base == self.app.path.rstrip("/"):
                    return kind, ident
        match = _THREADS_ROUTE.search(tail)
        if match is not None and not (self.app.path is None and scope["method"] == "POST"):
            # (with no path of its own, a POST is a run wherever it goes, as before)
            ident = unquote(match.group(1) or "")
            suffix = f"/threads/{ident}" if match.group(1) is not None else "/threads"
            if path.endswith(suffix) and (match.group(1) is None or ident):
                base = path[: -len(suffix)]
                if self.app.path is None or base == self.app.path.rstrip("/"):
                    return ("thread" if match.group(1) is not None else "threads"), ident
        if self.app.path is None or self.app.path in (scope["path"], path):
            return "start", ""
        raise BadRequest(
            404, f"nothing is served at {scope['path']}; the agent is at {self.app.path}"
        )

    async def _allowed(
        self, scope: Scope, action: Action, thread_id: str | None, run_id: str | None
    ) -> Principal:
        """The request's principal (agui.http.access), asked of `authorize` before anything is
        read from the log; 403 when it refuses. Every id the request names is then looked up in
        that principal's namespace only, so another principal's run or thread is "not known
        here", exactly as an id never used."""
        try:
            principal = await ask(self.app.authorize, scope["headers"], action, thread_id, run_id)
        except Refused as refused:
            raise BadRequest(refused.status, refused.error) from None
        if self.namespace:  # the agent's namespace, then the principal's (agui.AgentServer)
            return Principal(principal.name, self.namespace + principal.prefix)
        return principal

    # ── start ────────────────────────────────────────────────────────────────

    def _capacity(self) -> None:
        self.app.check_capacity(len(self.executions) + self._reserved)

    async def _start(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.app
        self._capacity()
        body = await app.read_request(scope, receive)
        if body is None:  # the client left while sending its body
            return
        thread_id, run_id = body.thread_id, body.run_id
        empty = tuple(
            Problem(f"/{name}", "empty", f"{name} is empty: a durable run needs one to be found")
            for name, ident in (("threadId", thread_id), ("runId", run_id))
            if ident == ""
        )
        if empty:  # its run could never be resumed, connected to or stopped
            raise BadRequest(400, "the body is not a RunAgentInput a store can keep", empty)
        # Asked before decoding: a refused caller costs a parse, not a tolerant decode. (Ids that
        # are missing or not strings are asked as None; decoding then answers the 400.)
        principal = await self._allowed(scope, "start", thread_id, run_id)
        run_input = await app.decode_input(body)
        thread_id, run_id = run_input.thread_id, run_input.run_id
        run_key = principal.key(run_id)
        stored_input = encode(run_input)
        await self._check_quota(principal, principal.key(thread_id), len(stored_input))
        self._capacity()
        self._reserved += 1
        try:
            now = time.time()
            record = RunRecord(
                thread_id=principal.key(thread_id),
                run_id=run_key,
                status="running",
                owner=self.owner,
                started_at=now,
                lease_until=now + self.lease_seconds,
            )
            try:
                await self.log.start_run(
                    record,
                    stored_input,
                    exclusive=self.exclusive_threads,
                    namespace=principal.key(""),
                )
            except ThreadBusy:
                if not await self._superseded(record.thread_id):
                    raise BadRequest(
                        409, f"thread {thread_id!r} has a run going; stop it or wait for its end"
                    ) from None
                try:
                    await self.log.start_run(
                        record, stored_input, exclusive=True, namespace=principal.key("")
                    )
                except ThreadBusy:
                    raise BadRequest(
                        409, f"thread {thread_id!r} has a run going; stop it or wait for its end"
                    ) from None
                except RunExists:
                    raise BadRequest(409, f"run {run_id!r} was already started") from None
            except RunExists:
                resumed = await self._resume_in_place(run_input, record, principal)
                if resumed is None:
                    raise BadRequest(409, f"run {run_id!r} was already started") from None
                run_input, record = resumed
                run_id, run_key = run_input.run_id, record.run_id
            execution = Execution(self, run_input, run_key, scope.get("client"))
            self.executions[run_key] = execution
        finally:
            self._reserved -= 1
        # Detached from this request, the run carries its trace span (and the caller's trace).
        execution.span = app._run_span(run_input, scope)
        execution.start()
        binary = self.app.binary_for(scope)

        async def produce(tail: _Tail) -> None:
            await self._follow(tail, run_key, None, binary, principal, thread_id=thread_id)

        undeclared = run_input.protocol_version is None
        await self._respond(receive, send, binary, produce, app.era_for(run_input), undeclared)
        if not (app.detach == "always" or _asks_to_resume(scope)):
            await self._end_unread(execution)

    async def _check_quota(self, principal: Principal, thread_key: str, size: int) -> None:
        """429 when the run would take its principal beyond a quota: a new thread beyond
        `max_principal_threads`, or its input (`size` bytes of JSON) beyond
        `max_principal_bytes` of what the principal's runs hold. Checked before the run starts,
        on what the log holds now: the events a run stores later count for the next start (a
        principal's usage can pass the quota by its last run's events, and by concurrent starts
        checked together)."""
        max_bytes, max_threads = self.max_principal_bytes, self.max_principal_threads
        if max_bytes is None and max_threads is None:
            return
        usage = await self.log.usage(principal.key(""))
        if (
            max_threads is not None
            and usage.threads >= max_threads
            and not await self.log.thread_runs(thread_key)
        ):
            raise BadRequest(
                429,
                f"this principal keeps {usage.threads} threads, the most allowed "
                f"(max-principal-threads {max_threads}): delete one to start another",
                details={
                    "limit": "max-principal-threads",
                    "limit_threads": max_threads,
                    "used_threads": usage.threads,
                },
            )
        if max_bytes is not None and usage.bytes + size > max_bytes:
            raise BadRequest(
                429,
                f"this principal's runs hold {usage.bytes} bytes; this input's {size} would "
                f"take them beyond max-principal-bytes ({max_bytes}): delete threads to make "
                "room",
                details={
                    "limit": "max-principal-bytes",
                    "limit_bytes": max_bytes,
                    "used_bytes": usage.bytes,
                    "input_bytes": size,
                },
            )

    async def _resume_in_place(
        self, run_input: RunAgentInput, record: RunRecord, principal: Principal
    ) -> tuple[RunAgentInput, RunRecord] | None:
        """A resume sent with the runId of the run it answers, started as the new run it is.

        The protocol's resume is a new run (new runId, the answers in `resume`); CopilotKit
        1.75's useInterrupt sends it with the interrupted run's own runId, which the log holds.
        Such a request (resume entries, the run it names finished and the latest of the same
        thread) starts a run under `{runId}~{n}` (n: its number in the thread), the id its
        events carry and its stop, resume and the thread's history use. Anything else, a replay
        of that resume included (the first is then the latest run), is 409 as before: the
        answer to whether a run id exists stays the same for everyone else."""
        if not run_input.resume:
            return None
        old = await self.log.get_run(record.run_id)
        if old is None or old.status != "finished" or old.thread_id != record.thread_id:
            return None
        runs = await self.log.thread_runs(record.thread_id)
        if not runs or runs[-1].run_id != old.run_id:
            return None
        wire_id = f"{run_input.run_id}~{len(runs) + 1}"
        resumed = attrs.evolve(run_input, run_id=wire_id)
        new = attrs.evolve(record, run_id=principal.key(wire_id))
        try:
            await self.log.start_run(
                new,
                encode(resumed),
                exclusive=self.exclusive_threads,
                namespace=principal.key(""),
            )
        except (RunExists, ThreadBusy):
            return None
        about_run(
            log,
            logging.INFO,
            {"agent": self.app.name, "thread": run_input.thread_id, "run": wire_id},
            "a resume sent with the id of the run it answers (%s); started as its own run",
            run_input.run_id,
        )
        return resumed, new

    async def _end_unread(self, execution: Execution) -> None:
        """The run's request went away before its end and its client did not ask to resume it
        (`detach`): a client that only knows AG-UI 1.0 (@ag-ui/client, CopilotKit's runtime)
        stops a run by aborting its request, and will never read the rest. Unless another reader
        follows it here, it is stopped as `POST runs/{id}/stop` stops it (RUN_FINISHED, outcome
        cancelled, stored), so the thread is free for the next turn."""
        if execution.final or self.executions.get(execution.id) is not execution:
            return  # it ended, or is ending
        if any(isinstance(r, _Tail) and r.run_id == execution.id for r in self.app._runs):
            return  # a resume or connect on this worker follows it
        about_run(
            log,
            logging.INFO,
            execution.fields(),
            "its request went away and its client did not ask to resume it (no %s header): stopped",
            RESUME_HEADER,
        )
        execution.request_stop()
        try:  # the flag, for a new run on the thread elsewhere waiting for this one's end
            await self.log.request_stop(execution.id)
        except (StoreError, UnknownRun):
            pass  # the run stops here all the same; its end is what the log gets

    async def _superseded(self, thread_key: str) -> bool:
        """A new run came for a thread whose run is going: wait for that run's end when it is
        being stopped (a stop request, or a client that left without asking to resume it), for
        up to _SUPERSEDE_WAIT seconds. True when the thread is free. A run nobody stops (its
        client may still resume it) leaves the thread busy: after a moment's look, False."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            busy = [r for r in await self.log.thread_runs(thread_key) if r.status != "finished"]
            if not busy:
                return True
            waited = loop.time() - started
            stopping = all(r.stop_requested for r in busy)
            if waited >= (_SUPERSEDE_WAIT if stopping else _STOP_NOTICE):
                return False
            await asyncio.sleep(0.05)

    # ── resume ───────────────────────────────────────────────────────────────

    async def _resume(self, scope: Scope, receive: Receive, send: Send, run_id: str) -> None:
        after: str | None = None
        for key, value in scope["headers"]:
            if key.lower() == b"last-event-id":
                after = value.decode("latin-1").strip() or None
        if after is None:
            after = query_params(scope).get("after") or None
        principal = await self._allowed(scope, "resume", None, run_id)
        key = principal.key(run_id)
        backlog = aiter(self.log.read_batches(key, after, limit=_READ_BATCH))
        try:
            first = await anext(backlog, None)
        except UnknownRun:
            raise BadRequest(404, f"no run {run_id!r} is known here") from None
        except StoreError as exc:
            if after is None or exc.__cause__ is not None:
                raise  # the log failed (a backend's error is the cause): 503
            raise BadRequest(400, f"run {run_id!r} has no event at cursor {after!r}") from exc
        binary = self.app.binary_for(scope)
        if self.app._meter is not None:
            self.app._meter.resumed()
        # the thread, for the run's RUN_STARTED if it needs one and the log lines about the run
        record = await self.log.get_run(key)
        thread_id = None if record is None else principal.wire(record.thread_id)

        async def produce(tail: _Tail) -> None:
            await self._follow(
                tail,
                key,
                after,
                binary,
                principal,
                thread_id=thread_id,
                first=first,
                backlog=backlog,
            )

        era, undeclared = await self._resume_era(scope, key)
        await self._respond(receive, send, binary, produce, era, undeclared)

    # ── connect ──────────────────────────────────────────────────────────────

    async def _connect(self, scope: Scope, receive: Receive, send: Send, thread_id: str) -> None:
        history = query_params(scope).get("history", "compact")
        if history not in ("compact", "full"):
            raise BadRequest(400, f"history is compact or full, not {history!r}")
        principal = await self._allowed(scope, "connect", thread_id, None)
        runs = await self.log.thread_runs(principal.key(thread_id))
        if not runs:
            raise BadRequest(404, f"no run of thread {thread_id!r} is known here")
        binary = self.app.binary_for(scope)
        live = [r for r in runs if r.status != "finished"]
        if history == "full":
            replayed = runs
            head: list[Any] = []
        else:
            replayed = live
            head = await self._compact(thread_id, runs)
        era = self._replay_era(scope)
        frame_of = proto_frame if binary else sse_frame
        frames = [frame_of(event) for event in head]
        if self.app._meter is not None:
            self.app._meter.connected()

        async def produce(tail: _Tail) -> None:
            if tail.downgrade is not None:  # a pre-1.0 peer: the head as its era takes it
                frames[:] = [tail.downgrade.sse(event) for event in head]
            for frame in frames:
                await tail.outbox.put(frame)
            for record in replayed:
                # A run still going is followed live, with its cursors; a finished one replayed.
                ids = record.status != "finished"
                try:
                    await self._follow(
                        tail, record.run_id, None, binary, principal, thread_id=thread_id, ids=ids
                    )
                except UnknownRun:  # dropped since it was listed
                    continue

        await self._respond(receive, send, binary, produce, era)

    async def _compact(
        self, thread_id: str, runs: list[RunRecord], ends: dict[str, bytes] | None = None
    ) -> list[Any]:
        """The thread's history as one synthetic run: RUN_STARTED, MESSAGES_SNAPSHOT,
        STATE_SNAPSHOT, RUN_FINISHED. Each run's input sets the messages and state it started
        from, and its stored events are applied to them (agui.stream.reducer.Reducer); a run still
        going contributes its input only (its events follow live). `ends`, when given, gets each
        finished run's last event (by the log's run key)."""
        reducer = Reducer(max_state_nodes=self.app.max_state_nodes)
        last_finished = False
        for record in runs:
            data = await self.log.get_input(record.run_id)
            if data is not None:
                _start_from(reducer, data)
            if record.status != "finished":
                last_finished = False
                continue
            expander = ChunkExpander()
            try:
                async for stored in self.log.read(record.run_id):
                    _apply(reducer, expander, stored.data)
                    if ends is not None:
                        ends[record.run_id] = stored.data
            except UnknownRun:  # dropped since it was listed
                continue
            reducer.abort("The stored run has no terminal event.")
            last_finished = True
        history_id = thread_id + HISTORY_RUN_SUFFIX
        outcome: RunFinishedOutcome | None = None
        result: Any = None
        if last_finished and reducer.runs:
            outcome, result = _outcome_of(reducer.runs[-1])
        return [
            RunStartedEvent(thread_id=thread_id, run_id=history_id),
            MessagesSnapshotEvent(messages=reducer.messages),
            StateSnapshotEvent(snapshot=reducer.state),
            RunFinishedEvent(
                thread_id=thread_id, run_id=history_id, outcome=outcome, result=result
            ),
        ]

    # ── the thread API ───────────────────────────────────────────────────────

    async def _threads(self, scope: Scope, send: Send, kind: str, thread_id: str) -> None:
        """GET {path}/threads, GET and DELETE {path}/threads/{id}: agui.http.threads."""
        method = scope["method"]
        if kind == "threads":
            if method != "GET":
                raise BadRequest(405, "list the threads with GET", (), ALLOW_GET)
            await threads.serve_list(self, scope, send)
        elif method == "GET":
            await threads.serve_thread(self, scope, send, thread_id)
        elif method == "DELETE":
            await threads.serve_delete(self, scope, send, thread_id)
        else:
            raise BadRequest(405, "read a thread with GET, delete it with DELETE", (), _ALLOW_GD)

    # ── stop ─────────────────────────────────────────────────────────────────

    async def _stop(self, scope: Scope, send: Send, run_id: str) -> None:
        principal = await self._allowed(scope, "stop", None, run_id)
        key = principal.key(run_id)
        try:
            record = await self.log.request_stop(key)
        except UnknownRun:
            raise BadRequest(404, f"no run {run_id!r} is known here") from None
        if record.status == "finished":
            raise BadRequest(409, f"run {run_id!r} has already ended")
        execution = self.executions.get(key)
        if execution is not None:
            execution.request_stop()  # here: no need to wait for the next poll
        elif record.lease_until < time.time():
            await self._close_lost(key)  # nobody is left to stop it
        body = {"runId": run_id, "threadId": principal.wire(record.thread_id), "status": "stopping"}
        await json_response(send, 202, body)

    # ── responses ────────────────────────────────────────────────────────────

    def _replay_era(self, scope: Scope) -> Era | None:
        """The era a replay (resume, connect) is sent in: the one of `?protocolVersion=` when
        the request names a pre-1.0 version (and compat is not "off"); else none, the 1.0
        stream, for a connect (a resume that names none is in its run's era: _resume_era)."""
        declared = query_params(scope).get("protocolVersion")
        return self.app._compat.era_for(declared) if declared else None

    async def _resume_era(self, scope: Scope, key: str) -> tuple[Era | None, bool]:
        """The era a resume is sent in, and whether it is that of a client that declared no
        protocolVersion: the one `?protocolVersion=` names; else the one the run was started in,
        by its input's protocolVersion (compat's era for an input without), so that a 0.0.x
        client that picks its run up again reads the rest as it read the start."""
        if query_params(scope).get("protocolVersion"):
            return self._replay_era(scope), False
        raw = await self.log.get_input(key)
        try:
            started = None if raw is None else decode(raw, RunAgentInput, warnings=[])
        except DecodeError:
            started = None  # a store's input that no longer decodes: the 1.0 stream
        if started is None:
            return None, False
        return self.app.era_for(started), started.protocol_version is None

    async def _follow(
        self,
        tail: _Tail,
        run_id: str,
        after: str | None,
        binary: bool,
        principal: Principal,
        *,
        thread_id: str | None = None,
        first: EventBatch | None = None,
        backlog: AsyncIterator[EventBatch] | None = None,
        ids: bool = True,
    ) -> None:
        """Queue the run's events after `after` as frames, following it live until its terminal
        event. `first` and `backlog`: the batches a read without follow already started to give
        (the events up to now); the live read goes on from the last of them.

        The log is read in batches (`EventLog.read_batches`: every event stored after the last
        one read, up to _READ_BATCH), and each batch is queued as one piece: its frames joined,
        each with its own `id:`. `run_id` is the log's key for the run (`principal.key` of the
        client's id), `thread_id` the client's."""
        outbox = tail.outbox
        offer, put = outbox.offer, outbox.put
        downgrade = tail.downgrade  # a pre-1.0 peer's translation, or None
        tail.run_id = run_id
        counting = self.app._meter is not None  # the events a piece holds, for the metrics
        fresh = after is None  # from the run's start: it must open with RUN_STARTED
        tail.started = not fresh
        tail.ended = False
        last = after

        async def opening(data: bytes) -> None:
            """Before the run's first event: a RUN_STARTED when that event is none (a run lost
            before its first event was stored ends in RUN_ERROR alone; a client needs the run
            opened)."""
            if data.startswith(_RUN_STARTED_PREFIX):
                return
            thread = thread_id
            if thread is None:
                record = await self.log.get_run(run_id)
                thread = "" if record is None else principal.wire(record.thread_id)
            started = RunStartedEvent(thread_id=thread, run_id=principal.wire(run_id))
            await put(proto_frame(started) if binary else sse_frame(started))
            tail.started = True

        async def pump(source: AsyncIterator[EventBatch]) -> bytes:
            """Queue the frames of `source`'s batches; the last event's data (b"": none)."""
            nonlocal fresh, last
            data = b""
            async for batch in source:
                if not batch:
                    continue
                events = batch.data
                if fresh:
                    fresh = False
                    await opening(events[0])
                data = events[-1]
                if binary:
                    frames = [_proto_of(event, run_id) for event in events]
                    kept = [frame for frame in frames if frame is not None]
                    chunk = b"".join(kept)
                elif downgrade is not None:
                    chunk = downgrade.sse_batch(events, batch.cursors if ids else None)
                elif ids:
                    chunk = _sse_batch(batch)
                else:
                    chunk = b"".join([b"data: " + event + b"\n\n" for event in events])
                tail.count += len(events)
                if chunk:
                    if counting:  # one piece holds the batch's frames: the sender counts one
                        tail.clock.events += (len(kept) if binary else chunk.count(b"\n\n")) - 1
                    if not offer(chunk):
                        await put(chunk)
                last = batch.cursors[-1]  # queued: a read after the fault goes on from here
                tail.started = True
                tail.ended = data.startswith(_TERMINAL_PREFIXES)
            return data

        async def reading() -> None:
            if backlog is not None:
                if first is not None:
                    end = await pump(_chain(first, backlog))
                    if end.startswith(_TERMINAL_PREFIXES):
                        return
            await pump(self.log.read_batches(run_id, last, follow=True, limit=_READ_BATCH))

        # The log fails: the read raises, or the run's executor or lease check says the run
        # cannot be ended in the log (`_end_streams` sets `ended`). Either way the stream ends
        # in RUN_ERROR STORE_ERROR, after what the log still gives, instead of waiting for a
        # terminal event that will never be stored.
        ended: asyncio.Future[None] = tail.loop.create_future()
        self._watchers.setdefault(run_id, set()).add(ended)
        self._followed[run_id] = (principal, thread_id)
        reader = asyncio.ensure_future(reading())
        try:
            await asyncio.wait((reader, ended), return_when=asyncio.FIRST_COMPLETED)
            if reader.done():
                error = reader.exception()
                if error is None and (tail.ended or await self._held(run_id)):
                    tail.run_id = None
                    return
                if error is None:  # the read ended before the run's end: the run is gone
                    self.lost_by_log(run_id)
                elif not _fault(error):
                    raise error
                else:
                    self._store_failed(error, run_id)
                self._end_streams(run_id)
            else:
                reader.cancel()
                await asyncio.wait((reader,))
                try:  # what was stored before the fault, if the log still gives it
                    async with asyncio.timeout(_IDLE):
                        end = await pump(self.log.read_batches(run_id, last, limit=_READ_BATCH))
                    if end.startswith(_TERMINAL_PREFIXES):
                        tail.run_id = None
                        return
                except Exception:  # the log fails: the stream ends here all the same
                    pass
        finally:
            if not reader.done():  # the response is over (or failed): the read ends with it
                reader.cancel()
                await asyncio.wait((reader,), timeout=STOP_WAIT / 2)
            watchers = self._watchers.get(run_id)
            if watchers is not None:
                watchers.discard(ended)
                if not watchers:
                    del self._watchers[run_id]
                    self._followed.pop(run_id, None)
        ending: list[Any] = []
        if not tail.started:
            execution = self.executions.get(run_id)
            thread = thread_id or ("" if execution is None else execution.input.thread_id)
            ending.append(RunStartedEvent(thread_id=thread, run_id=principal.wire(run_id)))
        ending.append(run_error(_STORE_ERROR_MESSAGE, STORE_ERROR))
        for event in ending:
            if binary:
                await put(proto_frame(event))
            elif downgrade is not None:
                await put(downgrade.sse(event))
            else:
                await put(sse_frame(event))
        tail.count += len(ending)
        tail.started = tail.ended = True
        tail.run_id = None

    async def _respond(
        self,
        receive: Receive,
        send: Send,
        binary: bool,
        produce: Callable[[_Tail], Awaitable[None]],
        era: Era | None = None,
        undeclared: bool = False,
    ) -> None:
        """Stream what `produce` queues; end when it is done, when the client leaves (the runs go
        on) or at the server's shutdown. While the run followed is silent, check its lease.
        `era`: the translation, if any; `undeclared`: the request declared no protocolVersion."""
        app = self.app
        headers = [*(PROTO_HEADERS if binary else STREAM_HEADERS), _RESUMABLE]
        if app.protobuf:
            headers.append(VARY)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        # The outbox holds pieces of up to _READ_BATCH events: about queue_size events in all.
        tail = _Tail(max(2, app.queue_size // _READ_BATCH))
        if era is not None and not binary:
            tail.downgrade = Downgrade(era)

        async def producing() -> None:
            try:
                await produce(tail)
            finally:
                tail.outbox.put_nowait(None)

        producer = asyncio.create_task(producing())
        sender = asyncio.create_task(send_frames(tail.outbox, send, tail.clock))
        watcher = asyncio.create_task(wait_for_disconnect(receive))
        tasks = [producer, sender, watcher]
        if app.keepalive is not None and not binary:
            tasks.append(asyncio.create_task(keep_alive(tail.outbox, tail.clock, app.keepalive)))
        app._runs.add(tail)
        if app._stop_at is not None:
            tail.stop(app._stop_at)
        meter = app._meter
        if meter is not None:
            meter.streaming(tail.clock, binary)
        try:
            await self._watch(tail, producer, sender, watcher)
        except asyncio.CancelledError:
            # The server cancels the request: uvicorn does when its graceful-shutdown window
            # ends (it was not told when the shutdown began). A run executing here still ends
            # in RUN_ERROR SERVER_SHUTDOWN, in the log and for this client.
            await self._cancelled(tail, producer, sender, send, binary)
            raise
        finally:
            app._runs.discard(tail)
            downgrade = tail.downgrade
            if downgrade is not None and downgrade.notes:
                log.info(
                    "a response for a client of the %s era (no protocolVersion): %s",
                    downgrade.era.name,
                    downgrade.notes.summary(),
                )
                app.note_downgrade(downgrade, undeclared)
            for task in tasks:
                task.cancel()
            # A producer that let its cancellation pass (an event log's wait may swallow one)
            # stops at its next frame instead of waiting forever for room nobody makes.
            tail.outbox.close()
            done, pending = await asyncio.wait(tasks, timeout=STOP_WAIT)
            if producer in pending:
                log.error("a durable response: reading the log did not stop when cancelled")
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.error("a durable response failed", exc_info=task.exception())
            if meter is not None:
                meter.streamed(tail.clock, binary)

    async def _cancelled(
        self,
        tail: _Tail,
        producer: asyncio.Task[None],
        sender: asyncio.Task[None],
        send: Send,
        binary: bool,
    ) -> None:
        """The request's task was cancelled: stop the run followed when it executes here (its
        RUN_ERROR SERVER_SHUTDOWN is stored), and write what is queued and that RUN_ERROR (no
        cursor) directly, if the connection still takes it. A response following another
        worker's run ends without a terminal event, as at a shutdown: the client resumes it.

        The writes come first, before anything else is awaited: the server may be about to stop
        its event loop, and a send that finds the transport writable completes without waiting."""
        producer.cancel()
        sender.cancel()
        if sender.done() and not sender.cancelled() and sender.exception() is None:
            return  # the response was complete
        frames = unsent(tail.outbox)
        execution = None if tail.run_id is None else self.executions.get(tail.run_id)
        if execution is not None:
            execution.stop(execution.loop.time())
            if not tail.ended:
                about_run(
                    log,
                    logging.WARNING,
                    execution.fields(SERVER_SHUTDOWN),
                    "the server cancelled the response; it ends in RUN_ERROR",
                )
                ending: list[Any] = []
                if not tail.started:
                    ending.append(run_started(execution.input))
                ending.append(run_error("The server is shutting down.", SERVER_SHUTDOWN))
                for event in ending:
                    if binary:
                        frames.append(proto_frame(event))
                    elif tail.downgrade is not None:
                        frames.append(tail.downgrade.sse(event))
                    else:
                        frames.append(sse_frame(event))
        try:
            async with asyncio.timeout(STOP_WAIT):
                await send_last(send, frames)
        except Exception:  # the connection is gone: nothing more to tell the client
            log.info("a durable response: its end could not be sent")

    async def _watch(
        self, tail: _Tail, producer: asyncio.Task[None], sender: Any, watcher: Any
    ) -> None:
        loop = tail.loop
        seen = -1
        check_at = loop.time() + self.idle
        cut = False
        while not sender.done():
            if watcher.done():
                return  # the client left; the run goes on
            now = loop.time()
            cut_at = None
            if tail.stop_at is not None and not cut:
                # The shutdown: a run executing here ends through the log (RUN_ERROR
                # SERVER_SHUTDOWN) and is followed to its end; another worker's is left (the
                # client resumes it elsewhere).
                local = tail.run_id is not None and tail.run_id in self.executions
                cut_at = tail.stop_at + (STOP_WAIT if local else 0.0)
                if now >= cut_at:
                    cut = True
                    cut_at = None
                    producer.cancel()
            if tail.count != seen:
                seen = tail.count
                check_at = now + self.idle
            elif now >= check_at:
                wait = self.idle if tail.run_id is None else await self._check_lease(tail.run_id)
                check_at = loop.time() + wait
            if tail.wake.done():
                tail.wake = loop.create_future()
            await asyncio.wait(
                (sender, watcher, tail.wake),
                timeout=earliest(now, check_at, cut_at),
                return_when=asyncio.FIRST_COMPLETED,
            )

    async def _check_lease(self, run_id: str) -> float:
        """A silent run: close it when its lease ran out. Returns the seconds until the next
        check (just after the lease would run out, unless renewed)."""
        try:
            record = await self.log.get_run(run_id)
            if record is None:  # the log lost the run: its end will never be stored
                self.lost_by_log(run_id)
                self._end_streams(run_id)
                return self.idle
            if record.status == "finished":
                return self.idle
            left = record.lease_until - time.time()
            if left < 0 and run_id not in self.executions:
                await self._close_lost(run_id)
                return self.idle
        except Exception as error:
            # The record cannot be read, or the lost run cannot be closed: nothing will end the
            # run in the log while it fails, so its streams here end now.
            self._store_failed(error, run_id)
            self._end_streams(run_id)
            return self.idle
        return min(max(left + 0.05, 0.05), self.lease_seconds)

    async def _close_lost(self, run_id: str) -> None:
        """Close the run whose lease ran out with RUN_ERROR RUN_LOST. Whoever closes it counts
        it (agui_runs_ended_total, outcome error) and logs its run line: its worker, gone, never
        will."""
        closed = await self.log.close_lost(run_id, lost_event(), time.time())
        self._store_ok()
        if not closed:
            return
        fields = self._fields(run_id, RUN_LOST)
        seconds = 0.0
        try:  # the client's ids, from the run's input, and how long the run lasted
            record = await self.log.get_run(run_id)
            data = await self.log.get_input(run_id)
            if record is not None:
                seconds = max(0.0, time.time() - record.started_at)
            if data is not None:
                run_input = decode(data, RunAgentInput)
                fields.update(thread=run_input.thread_id, run=run_input.run_id)
        except Exception:  # the line goes out with the ids this worker knows
            pass
        about_run(log, logging.WARNING, fields, "its worker is gone; closed with RUN_ERROR")
        thread = fields["thread"]
        thread_id = None if thread is None else str(thread)
        self.app.observe_closed(thread_id, str(fields["run"]), seconds, RUN_LOST)

    def _fields(self, run_id: str, code: str | None = None) -> dict[str, object]:
        """The fields of a log line about the run of key `run_id` (agent, thread, run, code), as
        this worker knows them without reading the log: an execution's input, a follower's
        request, else the key without this app's namespace (thread unknown)."""
        execution = self.executions.get(run_id)
        if execution is not None:
            return execution.fields(code)
        fields: dict[str, object] = {"agent": self.app.name, "thread": None}
        followed = self._followed.get(run_id)
        if followed is not None:
            principal, thread_id = followed
            fields.update(thread=thread_id, run=principal.wire(run_id))
        else:
            fields["run"] = run_id.removeprefix(self.namespace)
        if code is not None:
            fields["code"] = code
        return fields

    async def _held(self, run_id: str) -> bool:
        """Whether the log still has the run (a read that fails says yes: the fault is not the
        run's)."""
        try:
            return await self.log.get_run(run_id) is not None
        except Exception:
            return True

    def lost_by_log(self, run_id: str) -> None:
        """The log answers that it has no record of a run that had not ended (a Redis restarted
        without persistence, its keys evicted or deleted): its streams end in RUN_ERROR
        STORE_ERROR. Logged once per run, counted as a failure of the log; not a failure of the
        health (the log works, it lost what it held)."""
        if getattr(self.log, "closed", False) or run_id in self._noted:
            return
        self._noted[run_id] = None
        if len(self._noted) > _NOTED:
            del self._noted[next(iter(self._noted))]
        if self.app._meter is not None:
            self.app._meter.store_failed()
        about_run(
            log,
            logging.ERROR,
            self._fields(run_id, STORE_ERROR),
            "the event log no longer has the run (a Redis restarted without persistence, its "
            "keys evicted or deleted); its streams end in RUN_ERROR",
        )

    # ── the health of the log ────────────────────────────────────────────────

    @property
    def healthy(self) -> bool:
        """Whether the event log works, as far as this worker knows: False from a failure of the
        log (a write, a read, a lease renewal, the sweep: a full disk, a read-only or deleted
        file, a lost connection) until a write works again (an append, a renewal, a lost run
        closed) or the sweep's probe does (`EventLog.probe`, every `lease_seconds` or so while
        the log fails). `store_failure` then holds the last failure: what failed, when, and
        since when. Meant for a readiness check: while it is False, runs started here cannot be
        stored, and every stream the failure meets ends in RUN_ERROR `STORE_ERROR`."""
        return self.store_failure is None

    def _store_failed(self, error: BaseException, run_id: str | None = None) -> None:
        """Record a failure of the log. One line is logged per run it meets (`run_id`), and one
        for a failure that meets no run (the sweep, a probe) unless this outage was logged
        already; never a traceback, never again for the same run."""
        if getattr(self.log, "closed", False):
            # the log's owner closed it (the server stops): a sweep or a request still under
            # way meets that, which is no outage and nothing for an operator to read
            log.debug("the event log is closed: %s", error)
            return
        meter = self.app._meter
        if meter is not None:
            meter.store_failed()
        now = time.time()
        text = str(error) or type(error).__name__
        failure = self.store_failure
        since = now if failure is None else failure.since
        self.store_failure = StoreFailure(error=text, at=now, since=since)
        if run_id is None:
            if not self._outage_noted:
                self._outage_noted = True
                log.error("the event log failed: %s", text)
            return
        if run_id in self._noted:
            return
        self._noted[run_id] = None
        if len(self._noted) > _NOTED:
            del self._noted[next(iter(self._noted))]
        self._outage_noted = True
        about_run(
            log,
            logging.ERROR,
            self._fields(run_id, STORE_ERROR),
            "the event log failed; the run's streams end in RUN_ERROR: %s",
            text,
        )

    def _store_ok(self) -> None:
        """A write went through: the log works again."""
        failure = self.store_failure
        if failure is None:
            return
        self.store_failure = None
        if self._outage_noted:
            self._outage_noted = False
            failed = time.time() - failure.since
            log.warning("the event log works again (it failed for %.1f s)", failed)

    def _end_streams(self, run_id: str) -> None:
        """End the live streams of the run here with RUN_ERROR STORE_ERROR: the log cannot give
        them its terminal event (see `_follow`)."""
        for ended in self._watchers.get(run_id, ()):
            if not ended.done():
                ended.set_result(None)

    async def _probe(self) -> None:
        """One round trip of the log; the health is clear when it works."""
        probe = getattr(self.log, "probe", None)
        if probe is not None:
            await probe()
        else:  # an EventLog of an older protocol: a read
            await self.log.expired(0.0)
        self._store_ok()

    # ── the sweep, the end ───────────────────────────────────────────────────

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds * _RANDOM.uniform(0.5, 1.0))
            try:
                await self.sweep()
            except StoreError as error:
                self._store_failed(error)
            except Exception:
                log.warning("the sweep for lost runs failed", exc_info=True)

    async def sweep(self) -> None:
        """Close the runs whose lease ran out (their worker is gone) with RUN_ERROR RUN_LOST, and
        once a minute drop what the retention's TTL ended. While the log fails (`healthy`),
        probe it first. A lost run that cannot be closed ends its streams here (STORE_ERROR)."""
        now = time.time()
        if self.store_failure is not None:
            await self._probe()
        for record in await self.log.expired(now):
            if not record.run_id.startswith(self.namespace):
                continue  # another agent's, on a shared log: its own sweep sees to it
            if record.run_id not in self.executions:  # a run of ours is not lost: we are here
                try:
                    await self._close_lost(record.run_id)
                except StoreError as error:
                    followed = record.run_id in self._watchers
                    self._store_failed(error, record.run_id if followed else None)
                    self._end_streams(record.run_id)
                    return  # the others cannot be closed either
        if now - self._pruned >= _PRUNE_EVERY:
            self._pruned = now
            prune = getattr(self.log, "prune", None)
            if prune is not None:
                await prune(now)

    async def close(self) -> None:
        """The server stops (ASGI lifespan shutdown): end the runs executing here with RUN_ERROR
        SERVER_SHUTDOWN, wait for them to be stored, close the log. Under uvicorn both waits end
        with the server's graceful window (`AgentApp._within_window`), when the process is
        killed: a run whose end is not stored by then is left to the lease."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            # ended before the log closes, so no sweep meets a closed log
            await asyncio.gather(self._sweeper, return_exceptions=True)
        runs = list(self.executions.values())
        now = asyncio.get_running_loop().time()
        for execution in runs:
            execution.stop(now)
        tasks = [e.task for e in runs if e.task is not None]
        if tasks:  # an agent slow to stop holds its task after the run's end is stored
            keep = 0.25 if self._owns_log else 0.0  # of the window, for closing the log
            await asyncio.wait(tasks, timeout=self.app._within_window(2 * STOP_WAIT, keep))
        if self._owns_log:
            try:
                async with asyncio.timeout(self.app._within_window(None)):
                    await self.log.aclose()
            except TimeoutError:
                log.warning("the event log was not closed within the server's graceful window")


class _Tail:
    """One response following runs: its queue of frames, what it follows, its progress."""

    __slots__ = (
        "clock",
        "count",
        "downgrade",
        "ended",
        "loop",
        "outbox",
        "run_id",
        "started",
        "stop_at",
        "wake",
    )

    def __init__(self, queue_size: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.outbox = Outbox(queue_size)
        self.clock = Clock()
        self.run_id: str | None = None  # the run followed live
        self.started = False  # its RUN_STARTED is queued
        self.ended = False  # its terminal event is queued
        self.count = 0  # events queued so far
        self.downgrade: Downgrade | None = None  # the translation for a pre-1.0 peer
        self.stop_at: float | None = None
        self.wake: asyncio.Future[None] = self.loop.create_future()

    def stop(self, deadline: float) -> None:
        if self.stop_at is None or deadline < self.stop_at:
            self.stop_at = deadline
        if not self.wake.done():
            self.wake.set_result(None)


class _Abandoned(Exception):
    """The run is no longer this worker's to write (closed elsewhere, or the log failed)."""


class Execution:
    """One run executing on this worker: the agent's events, encoded and queued for the writer,
    which appends them to the log; the lease, the stop flag, the time limit and the shutdown."""

    def __init__(
        self, durable: Durable, run_input: RunAgentInput, key: str, client: object = None
    ) -> None:
        self.durable = durable
        self.app = durable.app
        self.input = run_input
        self.id = key  # the log's key for the run: its id in its principal's namespace
        self.loop = asyncio.get_running_loop()
        self.task: asyncio.Task[None] | None = None
        self._pending: list[bytes] = []
        self._limit = max(1, self.app.queue_size)
        self._filled = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self.final = False  # the terminal event is queued: nothing more is
        self.stored = False  # the terminal event is in the log
        self._open = RunTracker(max_state_nodes=self.app.max_state_nodes)
        self.stop_at: float | None = None  # the shutdown's deadline (loop time)
        self._stop_requested = False
        self._failure: BaseException | None = None  # the log's last failure (a renewal, a poll)
        self.wake: asyncio.Future[None] = self.loop.create_future()
        self.span: RunSpan | None = None  # the run's trace span (None: not traced)
        self.client = client  # the address of the request that started it
        self.terminal: object = None  # the terminal event queued (its outcome), None: none
        self.events = 0  # events stored
        self.first_at: float | None = None  # when the first was (the loop's clock)
        self.started_at = 0.0

    def fields(self, code: str | None = None) -> dict[str, object]:
        """What every log line about the run carries: agent, thread, run (the ids as its client
        named them), and `code` when given (agui.observe.runlog.about_run)."""
        fields: dict[str, object] = {
            "agent": self.app.name,
            "thread": self.input.thread_id,
            "run": self.input.run_id,
        }
        if code is not None:
            fields["code"] = code
        return fields

    def start(self) -> None:
        self.started_at = self.app._observe_start()
        context = contextvars.copy_context() if self.span is None else self.span.task_context()
        context.run(RUN_FIELDS.set, self.fields())  # what the agent logs about the run carries
        self.task = asyncio.create_task(self.run(), name=f"agui run {self.id}", context=context)
        self.app._runs.add(self)
        if self.app._stop_at is not None:
            self.stop(self.app._stop_at)

    def stop(self, deadline: float) -> None:
        """The server shuts down: the run must end by `deadline` (the loop's clock)."""
        if self.stop_at is None or deadline < self.stop_at:
            self.stop_at = deadline
        self._wake()

    def request_stop(self) -> None:
        """A stop request for this run was recorded: stop it now."""
        self._stop_requested = True
        self._wake()

    def _wake(self) -> None:
        if not self.wake.done():
            self.wake.set_result(None)

    # ── the queue ────────────────────────────────────────────────────────────

    def _queue(self, data: bytes, terminal: bool = False) -> None:
        """Queue an event's JSON, of exactly its size (the writer hands the queue over as
        ExactEvents)."""
        self._pending.append(data)
        if terminal:
            self.final = True
        self._filled.set()

    def _queue_event(self, event: Any) -> None:
        if type(event) is RunStartedEvent:
            self._open.start(event)
        terminal = type(event) in TERMINAL
        if terminal:
            self.terminal = event
        self._queue(_exact_encode(event), terminal)

    def close_with(self, message: str, code: str) -> None:
        """End the run with RUN_ERROR `code` (RUN_STARTED first when nothing was queued)."""
        if self.final:
            return
        if self.span is not None:
            self.span.ended_by_server(code, message)
        if self._open.started is None:
            self._queue_event(run_started(self.input))
        about_run(log, logging.WARNING, self.fields(code), "ended with RUN_ERROR: %s", message)
        self._queue_event(run_error(message, code))

    def close_cancelled(self) -> None:
        """End the run as stopped: what is open closed, then RUN_FINISHED, outcome cancelled."""
        if self.final:
            return
        if self._open.started is None:
            self._queue_event(run_started(self.input))
        started = self._open.started
        assert started is not None
        finished = RunFinishedEvent(
            thread_id=started.thread_id,
            run_id=started.run_id,
            outcome=RunFinishedCancelledOutcome(),
        )
        try:
            closing = self._open.finishing(finished)
        except ProtocolError as exc:  # pragma: no cover - what is open is what gets closed
            self.close_with(f"The run cannot be finished: {exc}", INVALID_EVENT)
            return
        about_run(log, logging.INFO, self.fields(), "stopped on request")
        if self.span is not None:
            self.span.ended_by_server(None, closed=len(closing))
        for event in closing:
            self._queue(_exact_encode(event))
        self.terminal = finished
        self._queue(_exact_encode(finished), True)

    # ── the tasks ────────────────────────────────────────────────────────────

    async def run(self) -> None:
        producer = asyncio.create_task(self._produce())
        writer = asyncio.create_task(self._write())
        try:
            await self._supervise(producer, writer)
        except asyncio.CancelledError:
            # The event loop is going away (the server stopped without a lifespan shutdown):
            # store the run's end if the log still takes it.
            if not writer.done():
                producer.cancel()
                self.close_with("The server is shutting down.", SERVER_SHUTDOWN)
                await asyncio.wait((writer,), timeout=STOP_WAIT)
            raise
        except _Abandoned:
            pass
        except Exception:
            about_run(log, logging.ERROR, self.fields(), "executing the run failed", exc_info=True)
        finally:
            for task in (producer, writer):
                task.cancel()
            done, pending = await asyncio.wait((producer, writer), timeout=STOP_WAIT)
            if pending:
                about_run(
                    log,
                    logging.ERROR,
                    self.fields(),
                    "the agent did not stop when it was cancelled",
                )
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    if not isinstance(task.exception(), _Abandoned):
                        error = task.exception()
                        about_run(log, logging.ERROR, self.fields(), "failed", exc_info=error)
            self.app._runs.discard(self)
            if self.durable.executions.get(self.id) is self:
                del self.durable.executions[self.id]
            if self.span is not None:
                self.span.end("abandoned")
            self.app._observe_end(
                self.input,
                self.started_at,
                self.terminal,
                self.events,
                self.first_at,
                self.client,
                default="error",  # no end of its own here: abandoned (the lease, the log)
                span=self.span,
            )

    async def _produce(self) -> None:
        """Drive the agent through the run lifecycle; encode and queue its events."""
        app = self.app
        pending = self._pending
        limit = self._limit
        filled = self._filled
        span = self.span  # counted here, in the same pass (RunSpan.saw)
        # encode, the bulk written from a prefix its stream shares: what it gives is of exact
        # size (the bulk's text encoded once, anything else copied), so it is queued as it is
        # however long the queue, and handed to the log as ExactEvents.
        exact = content_writer(slow=_exact_encode)

        def sink(event: Any) -> bool:
            """The lifecycle's fast path for content events of open streams: encoded and
            queued in its pass; False leaves the event to the loop below (the run was ended
            here, the queue is full, the event cannot be encoded or is too large)."""
            queued = len(pending)
            if self.final or queued >= limit:
                return False
            try:
                data = exact(event)
            except EncodeError:
                return False
            if len(data) > _DATA_LIMIT:
                return False
            pending.append(data)
            if not queued:
                filled.set()  # the writer waits for an empty queue to fill, nothing else
            if span is not None:
                span.events += 1
            return True

        stream = run_lifecycle(
            app.agent,
            self.input,
            finish_grace=app.finish_grace,
            tracker=self._open,
            sink=sink,
            log_fields=self.fields(),
        )
        try:
            async for event in stream:
                if span is not None and not span.final:
                    span.saw(event)
                if self.final:
                    continue  # the run was ended here (stop, time limit); the agent is late
                if type(event) is RunStartedEvent and event.input is None:
                    # The log keeps each run whole: its RUN_STARTED carries the input, so a
                    # replay of the thread (?history=full, or the events on their own) holds the
                    # user's messages too. Clients add the input's messages they do not hold.
                    event = attrs.evolve(event, input=self.input)
                try:
                    data = exact(event)
                except EncodeError:
                    about_run(
                        log,
                        logging.ERROR,
                        self.fields(INVALID_EVENT),
                        "the agent sent an event that cannot be encoded",
                        exc_info=True,
                    )
                    self.close_with("The agent produced an invalid event.", INVALID_EVENT)
                    return
                if len(data) > _DATA_LIMIT:
                    about_run(
                        log,
                        logging.ERROR,
                        self.fields(INVALID_EVENT),
                        "the agent sent %s as %d bytes of JSON; clients refuse frames over %d bytes",
                        getattr(event.type, "value", event.type),
                        len(data),
                        MAX_SSE_FRAME,
                    )
                    self.close_with(
                        f"The agent produced an event too large to send ({len(data)} bytes).",
                        INVALID_EVENT,
                    )
                    return
                queued = len(pending)
                while queued >= limit:
                    self._drained.clear()
                    await self._drained.wait()
                    queued = len(pending)
                if self.final:
                    continue
                pending.append(data)
                if type(event) in TERMINAL:
                    self.final = True
                    self.terminal = event
                    filled.set()
                elif not queued:
                    filled.set()  # the writer waits for an empty queue to fill, nothing else
        finally:
            await stream.aclose()

    async def _write(self) -> None:
        """Append what is queued, everything at once (up to the batch limits), until the
        terminal event is stored."""
        log_ = self.durable.log
        pending = self._pending
        limit = self._limit
        while True:
            while not pending:
                self._filled.clear()
                await self._filled.wait()
            # Every event queued is of exact size and given up: ExactEvents (memory:// keeps
            # them for the run's live readers).
            if len(pending) <= limit and sum(map(len, pending)) <= _BATCH_BYTES:
                batch = ExactEvents(pending)  # everything (the common case, counted in C)
                pending.clear()
            else:
                size = 0
                count = 0
                for data in pending:
                    if count and (count >= limit or size + len(data) > _BATCH_BYTES):
                        break
                    size += len(data)
                    count += 1
                batch = ExactEvents(pending[:count])
                del pending[:count]
            final = self.final and not pending
            self._drained.set()
            try:
                await log_.append(self.id, batch, final=final)
            except Exception as exc:
                # Not retried: an append that failed may have been stored, and a retry would
                # store its events twice.
                if _fault(exc):
                    await self._unstorable(exc)
                elif isinstance(exc, UnknownRun):  # the log lost the run, its record included
                    await self._unstorable(exc, vanished=True)
                else:  # the run was closed elsewhere
                    about_run(
                        log,
                        logging.ERROR,
                        self.fields(),
                        "appending to the log failed; the run is abandoned: %s",
                        exc,
                    )
                raise _Abandoned(str(exc)) from exc
            self.durable._store_ok()
            if self.first_at is None:
                self.first_at = self.loop.time()
            self.events += len(batch)
            if final:
                self.stored = True
                return

    async def _unstorable(self, error: BaseException, *, vanished: bool = False) -> None:
        """The log failed the run (an append, or renewals until the lease ran out): nothing
        queued will be stored. Logged once; then the run ends in RUN_ERROR STORE_ERROR, stored
        if the log takes that one small append now (not a retry of what failed: the log then
        holds the events up to the failure, perhaps the failed batch, and this end), else sent
        to the streams here only (`Durable._end_streams`): the lease runs out, and once the log
        works again the sweep closes the run as lost. `vanished`: the log no longer has the run
        at all (a Redis restarted without persistence): nothing is stored, the streams here end
        (those elsewhere notice by their own reads)."""
        durable = self.durable
        if vanished:
            durable.lost_by_log(self.id)
        else:
            durable._store_failed(error, self.id)
        if self.span is not None:
            self.span.ended_by_server(STORE_ERROR, _STORE_ERROR_MESSAGE)
        self.final = True  # nothing more is queued
        self._pending.clear()
        self.terminal = run_error(_STORE_ERROR_MESSAGE, STORE_ERROR)
        end = encode(self.terminal)
        if vanished:
            durable._end_streams(self.id)
            return
        try:
            async with asyncio.timeout(STOP_WAIT):
                await durable.log.append(self.id, [end], final=True)
        except Exception:
            durable._end_streams(self.id)
        else:
            self.stored = True

    async def _supervise(self, producer: asyncio.Task[None], writer: asyncio.Task[None]) -> None:
        """Wait for the terminal event to be stored, ending the run early on a stop request, at
        max_run_seconds, or at the shutdown; renew the lease meanwhile; then let the agent
        finish (finish_grace)."""
        loop = self.loop
        app = self.app
        durable = self.durable
        lease = durable.lease_seconds
        now = loop.time()
        expires = None if app.max_run_seconds is None else now + app.max_run_seconds
        renew_at = now + lease / 3
        poll_at = now + STOP_POLL
        leased = time.time() + lease  # the lease as last renewed (the start's, at first)
        while not writer.done():
            now = loop.time()
            if self.stop_at is not None and now >= self.stop_at:
                self.stop_at = math.inf
                await stop_agent(producer, self.fields())
                self.close_with("The server is shutting down.", SERVER_SHUTDOWN)
            if expires is not None and now >= expires:
                expires = None
                await stop_agent(producer, self.fields())
                self.close_with(f"The run took longer than {app.max_run_seconds} seconds.", TIMEOUT)
            if not self.final and now >= poll_at:
                poll_at = now + STOP_POLL
                record = await self._quietly(durable.log.get_run(self.id), _FAILED)
                if record is None and not self.final:
                    await self._vanished(producer, writer)
                if isinstance(record, RunRecord) and record.stop_requested:
                    self._stop_requested = True
            if self._stop_requested and not self.final:
                await stop_agent(producer, self.fields())
                self.close_cancelled()
            if not self.stored and now >= renew_at:
                renew_at = now + lease / 3
                until = time.time() + lease
                renewed = await self._quietly(durable.log.renew(self.id, durable.owner, until))
                if renewed is not None:
                    durable._store_ok()
                if renewed:
                    leased = until
                if renewed is False and not self.final:
                    record = await self._quietly(durable.log.get_run(self.id), _FAILED)
                    if record is None:  # no lease to renew: the run is gone from the log
                        await self._vanished(producer, writer)
                    about_run(
                        log,
                        logging.ERROR,
                        self.fields(),
                        "the run is no longer this worker's; abandoned",
                    )
                    raise _Abandoned("the lease was lost")
                if renewed is None and time.time() >= leased and not self.stored:
                    # The log failed every renewal until the lease ran out: another worker may
                    # close the run any moment, and a silent agent would leave its streams
                    # waiting for as long as the log fails.
                    writer.cancel()
                    await stop_agent(producer, self.fields())
                    await self._unstorable(self._failure or StoreError("the lease ran out"))
                    raise _Abandoned("the lease could not be renewed")
            if self.wake.done():
                self.wake = loop.create_future()
            wait = earliest(now, self.stop_at, expires, None if self.final else poll_at, renew_at)
            await asyncio.wait(
                (writer, self.wake), timeout=wait, return_when=asyncio.FIRST_COMPLETED
            )
        writer.result()  # raises _Abandoned when the log failed
        # The run is stored. The agent may still be working after its terminal event.
        await let_finish(self, producer)

    async def _vanished(self, producer: asyncio.Task[None], writer: asyncio.Task[None]) -> None:
        """The log answers that it has no record of the run (a Redis restarted without
        persistence, its keys evicted or deleted): no event can be stored any more. The agent
        is stopped and the run's streams end in RUN_ERROR STORE_ERROR; raises _Abandoned."""
        writer.cancel()
        await stop_agent(producer, self.fields())
        await self._unstorable(UnknownRun(f"no run {self.id!r} in the log"), vanished=True)
        raise _Abandoned("the run is no longer in the log")

    async def _quietly(self, call: Awaitable[Any], failed: Any = None) -> Any:
        """The call's result, or `failed` when the log fails (kept in the health, logged once
        for the outage): a lease renewal or a poll missed once is tried again."""
        try:
            return await call
        except Exception as error:
            self._failure = error
            self.durable._store_failed(error)
            return failed


async def _chain(first: EventBatch, rest: AsyncIterator[EventBatch]) -> AsyncIterator[EventBatch]:
    yield first
    async for batch in rest:
        yield batch


def _exact_encode(event: Any) -> bytes:
    """encode(event) copied to its exact size: orjson's result keeps its whole working buffer
    (4 KiB at least), which a queue of a thousand events would hold on to."""
    return bytes(memoryview(encode(event)))


def _sse_batch(batch: EventBatch) -> bytes:
    """A batch of stored events as SSE frames, joined: each `id: <cursor>`, `data: <JSON>`.
    Raises ValueError for a cursor holding CR, LF or NUL (a log's cursors never do)."""
    return sse_data_frames(batch.data, batch.cursors)


def _proto_of(data: bytes, run_id: str) -> bytes | None:
    """A stored event as a protobuf frame; None for one the binary form cannot carry."""
    try:
        event = decode(data)
    except Exception:
        about_run(
            log,
            logging.WARNING,
            {"run": run_id},
            "a stored event cannot be decoded; it is skipped",
        )
        return None
    if type(event) is UnknownEvent:
        return None
    return proto_frame(event)


def _asks_to_resume(scope: Scope) -> bool:
    """The request says its client resumes a cut stream (the Agui-Resume header, "1" or
    "true"): agui's HttpAgent and the console send it."""
    for key, value in scope["headers"]:
        if key.lower() == _RESUME_KEY:
            return value.strip().lower() in (b"1", b"true")
    return False


def _start_from(reducer: Reducer, data: bytes) -> None:
    """A run's input sets the conversation it starts from: its messages and its state."""
    try:
        run_input = decode(data, RunAgentInput)
    except Exception:
        log.warning("a stored run input cannot be decoded; the history skips it")
        return
    reducer.feed(MessagesSnapshotEvent(messages=run_input.messages))
    if run_input.state is not None:
        reducer.feed(StateSnapshotEvent(snapshot=run_input.state))


def _apply(reducer: Reducer, expander: ChunkExpander, data: bytes) -> None:
    try:
        event = decode(data, warnings=[])
    except Exception:
        return
    if type(event) is UnknownEvent:
        return
    try:
        for expanded in expander.feed(event):
            reducer.feed(expanded)
    except ProtocolError:
        pass


def _outcome_of(result: Any) -> tuple[RunFinishedOutcome | None, Any]:
    """The outcome (and result) the history's RUN_FINISHED repeats from the thread's last run, so
    that a conversation hydrated from it sees its interrupts and pending tool calls."""
    if result.outcome == "interrupt" and result.interrupts:
        return RunFinishedInterruptOutcome(interrupts=result.interrupts), None
    if result.outcome == "cancelled":
        return RunFinishedCancelledOutcome(), None
    if result.outcome == "success":
        pending = result.pending_tool_call_ids
        outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=pending) if pending else None
        return outcome, result.result
    return None, None
