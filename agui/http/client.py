"""HttpAgent: a remote AG-UI agent over httpx, itself an Agent.

`async for event in HttpAgent(url).run(input)` POSTs the input and yields typed events as their
frames arrive; `run_sync` does the same without asyncio. A run is over at its terminal event
(RUN_FINISHED or RUN_ERROR): what arrives at once after it is still read (the answer's end,
another run of the stream), and a silence of END_GRACE seconds ends the stream and closes the
response, even when the server (or a proxy) keeps it open. Closing the iterator early closes
the response (and so the connection), which tells a server without a store to stop the run; a
server with a store, which keeps the runs of a client that resumes, is sent a stop for it
(`HttpAgent(detach=True)`: it goes on).
With `binary=True` the request asks for the protobuf transport; whichever the server answers (by
its Content-Type) is read, and an answer that is neither (an HTML page, a JSON document) is a
StreamError naming its content type.

Connections. An HttpAgent without an injected client keeps its own: one httpx.AsyncClient per
event loop (made on first use; closed by `aclose()`, `async with`, or when the loop shuts down,
as at the end of `asyncio.run`) and one httpx.Client for the sync methods (closed by `close()`,
`with`, or when the agent is collected). An injected client is used as it is and never closed.

Redirects are followed as `fetch` follows them (307 and 308 repeat the POST with its body; 301,
302 and 303 become a GET). A non-2xx answer is an HttpError (its url, status, headers, a body
excerpt, and the problems of a JSON answer such as AgentApp's 400); a timeout is a Timeout, a
connection that cannot be made a ConnectError, any other failure a TransportError, each naming
the URL, with httpx's exception as its `__cause__`.

Retries (as openai-python retries). Before the first frame of a stream, and for `stop` and
`capabilities`, a connection error (refused, reset, closed before the answer, a connect timeout)
and an answer 429, 502, 503 or 504 are tried again, up to `max_retries` times (2 by default),
after the server's Retry-After (seconds or an HTTP date, at most MAX_RETRY_AFTER) or else
INITIAL_RETRY_DELAY doubling up to MAX_RETRY_DELAY, less up to a quarter at random. A 429 whose
JSON answer names a `limit` (a principal's quota, agui's durable runs) is not tried again: it
lasts. Once a frame has arrived nothing is sent again: resuming covers a break after that.

Durable runs. A server with a store (AgentApp(agent, store=...)) sends every SSE frame with an
`id:`, the event's cursor in the run's log. HttpAgent remembers the last one and the run's id
(RUN_STARTED's runId); when the connection breaks, or the answer ends, before the run's terminal
event, it reconnects to `GET {url}/runs/{runId}/events` with `Last-Event-ID` and goes on with the
frames after that cursor, so its consumer sees one unbroken stream, numbered on from where it
broke: no frame lost, none twice. It does so only when the server said it can: the run's answer
carries `Agui-Resumable: 1` (RESUMABLE_HEADER), or `capabilities()` read `transport.resumable`
as true (a rejoin or a thread's stream is that route's own answer). `ResumePolicy` bounds the
reconnects (exponential backoff with jitter); a server that sends no ids, or does not say it
resumes, is never resumed (a cut is a TransportError naming the agent's URL). `StreamPosition`
shows where a stream stands.

The same server answers `rejoin(run_id, after=)` (a run's stream, from its start or after a
cursor), `connect(thread_id)` (a thread's history, then its live run) and `stop(run_id)`.

`capabilities()` reads what the agent declares it can do (`GET {url}/capabilities`, the
AgentCapabilities AgentApp serves, as does the official ADK middleware).

Tracing. When the application traces with OpenTelemetry (it is loaded, and a span is current
where a request is made), every request carries the current trace context (`traceparent`, and
what else the global propagator writes), so the server's run continues the caller's trace
(agui.http.tracing); a header of `headers` by that name is sent as it is.

A server with a store also answers about the caller's threads (agui.http.threads): `threads()`
(a page of them, newest first), `thread(thread_id)` (its messages, state and runs) and
`delete_thread(thread_id)` (removed whole, its live run stopped first).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import sys
import threading
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Mapping
from contextlib import aclosing, closing
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast, overload
from urllib.parse import quote

import anyio
import attrs
import httpx
import orjson
from agui_generated import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    DecodeError,
    Event,
    Problem,
    RunAgentInput,
    UnknownEvent,
)

from agui.agent.protocol import History
from agui.errors import (
    BODY_EXCERPT,
    ConnectError,
    HttpError,
    ProtoStreamError,
    SSEError,
    StreamError,
    Timeout,
    TransportError,
)
from agui.wire.codec import decode, decode_event_bytes, decode_frame, encode
from agui.wire.proto import (
    DEFAULT_MAX_PROTO_FRAME_BYTES,
    PROTO_MEDIA_TYPE,
    ProtoFrameDecoder,
    decode_proto_json,
)
from agui.wire.sse import DEFAULT_MAX_FRAME_BYTES, SSEDecoder, SSEMessage

if TYPE_CHECKING:  # the thread API's answers load with its first call (and agui.store with them)
    from agui.http.threads import DeletedThread, Thread, ThreadPage

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "END_GRACE",
    "INITIAL_RETRY_DELAY",
    "MAX_RETRY_AFTER",
    "MAX_RETRY_DELAY",
    "ORPHAN_GRACE",
    "RESUMABLE_HEADER",
    "RETRY_STATUSES",
    "STOP_TIMEOUT",
    "HttpAgent",
    "ResumePolicy",
    "StreamPosition",
    "endpoint",
    "retry_delay",
]

log = logging.getLogger("agui.client")
_RANDOM = random.Random()
"""Jitter from a generator of our own: the global one belongs to the application (and its
tests: seeded runs, property tests that check nothing else draws from it)."""

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)

DEFAULT_MAX_RETRIES = 2
"""How many times HttpAgent tries a request again by default (openai-python's default)."""
INITIAL_RETRY_DELAY = 0.5
"""Seconds before the first retry when the server gives no Retry-After; doubled for each next."""
MAX_RETRY_DELAY = 8.0
"""The longest wait between two tries without a Retry-After, in seconds."""
MAX_RETRY_AFTER = 60.0
"""The longest Retry-After honoured, in seconds: a longer one is waited this long."""
RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""The answers worth another try of a request (busy, or a gateway that lost the server)."""
RESUMABLE_HEADER = "Agui-Resumable"
"""The header of a run's answer by which its server says it resumes the run's stream at
`GET {url}/runs/{runId}/events` (`Agui-Resumable: 1`). Without it (or capabilities that say
`transport.resumable`), a cut stream is not resumed: the route may not exist."""
END_GRACE = 0.25
"""After a run's terminal event, the longest wait for more of the answer, in seconds: what comes
within it is read (the answer's end, which leaves the connection reusable; another run of the
stream; an event that breaks the run's rules, which the pipeline reports), and a silence that
long ends the stream and closes the response, whatever the server (a proxy) keeps open."""

STOP_TIMEOUT = 5.0
"""The longest wait, in seconds, for the stop HttpAgent sends when its consumer leaves a durable
run's stream early (not detached): past it the stop is given up (logged), and the run goes on at
the server until its end or another stop."""

Received: TypeAlias = Event | UnknownEvent
"""What HttpAgent.run yields: an event of the spec, or (tolerant decoding) one of a type this
package does not know, kept whole."""

Frame: TypeAlias = bytes | dict[str, Any]
"""A frame as HttpAgent.frames yields it: the data of an SSE frame, or the JSON object of a
protobuf frame."""


class _Unset:
    """The default of HttpAgent's timeout: distinguishes "not given" from None (no timeout)."""


_UNSET = _Unset()
_SSE = "text/event-stream"
_MAX_ERROR_BODY = 64 * 1024
_RECONNECT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
"""The answers to a reconnect that are worth another try (the server is busy, restarting or
behind a gateway that lost it); any other non-2xx answer ends the resuming at once."""


@attrs.frozen(kw_only=True)
class ResumePolicy:
    """How HttpAgent resumes a stream that broke off before its run's terminal event.

    attempts: how many reconnects in a row may bring no new frame before HttpAgent gives up (a
    reconnect that brings frames starts the count again, so a long run survives any number of
    cuts); 0 turns resuming off. The first reconnect after a cut is made at once; the n-th in a
    row (n >= 2) waits min(cap, base * 2 ** (n - 2)) seconds, less a random part of up to
    `jitter` of it (so clients cut off together do not all come back together).
    """

    attempts: int = attrs.field(default=5, validator=attrs.validators.ge(0))
    base: float = attrs.field(default=0.1, validator=attrs.validators.ge(0.0))
    """Seconds before the second reconnect in a row."""
    cap: float = attrs.field(default=2.0, validator=attrs.validators.ge(0.0))
    """The longest wait between two reconnects, in seconds."""
    jitter: float = attrs.field(
        default=0.5, validator=[attrs.validators.ge(0.0), attrs.validators.le(1.0)]
    )
    """The largest part of a wait taken off at random (0: none, 1: anything down to no wait)."""

    def delay(self, attempt: int) -> float:
        """The seconds to wait before reconnect number `attempt` in a row (counted from 1)."""
        if attempt <= 1:
            return 0.0
        full = min(self.cap, self.base * 2.0 ** min(attempt - 2, 64))
        return full * (1.0 - self.jitter * _RANDOM.random())


@attrs.define
class StreamPosition:
    """Where a stream read by HttpAgent stands. Pass one to `frames`, `run`, `rejoin_frames`,
    `rejoin`, `connect_frames` or `connect` (or their sync variants) to watch it: to save the last
    event id and rejoin the run later, say. HttpAgent updates it before it hands over a frame."""

    run_id: str | None = None
    """The run the stream is in: the runId of the last RUN_STARTED received (before that, the
    run asked for)."""
    last_event_id: str | None = None
    """The `id:` of the last frame of the current run that had one: the cursor to resume after.
    None while the run's frames carry no ids (a server without a store, a thread's history): the
    stream cannot be resumed then. A RUN_STARTED starts it again (with its own id, or none)."""
    finished: bool = False
    """The run's terminal event (RUN_FINISHED or RUN_ERROR) was received."""
    frames: int = 0
    """Frames received so far, over every connection (the number of the last one)."""
    reconnects: int = 0
    """How many times the stream was resumed."""


def _fresh(
    position: StreamPosition | None, run_id: str | None, after: str | None = None
) -> StreamPosition:
    """The position of a new stream: the one given, started again, or a new one."""
    if position is None:
        return StreamPosition(run_id=run_id, last_event_id=after)
    position.run_id = run_id
    position.last_event_id = after
    position.finished = False
    position.frames = position.reconnects = 0
    return position


def endpoint(url: str | httpx.URL, *segments: str) -> httpx.URL:
    """The URL of a durable endpoint under an agent's URL: `segments` appended to its path (each
    percent-encoded; a trailing slash of the path is dropped), its query kept."""
    base = httpx.URL(url)
    path = base.raw_path.split(b"?", 1)[0].rstrip(b"/")
    path += b"".join(b"/" + quote(segment, safe="").encode() for segment in segments)
    return base.copy_with(raw_path=path + (b"?" + base.query if base.query else b""))


def retry_delay(retry: int, headers: Mapping[str, str] | None = None) -> float:
    """The seconds to wait before retry number `retry` (counted from 1) of a request: the
    server's Retry-After when `headers` carry one (seconds, or an HTTP date; at most
    MAX_RETRY_AFTER, and none for a date already past); else INITIAL_RETRY_DELAY doubling with
    each retry up to MAX_RETRY_DELAY, less up to a quarter at random (openai-python's backoff)."""
    if headers is not None:
        after = _retry_after(headers.get("retry-after"))
        if after is not None:
            return after
    full = min(INITIAL_RETRY_DELAY * 2.0 ** min(max(retry, 1) - 1, 64), MAX_RETRY_DELAY)
    return full * (1.0 - 0.25 * _RANDOM.random())


def _retry_after(value: str | None) -> float | None:
    """A Retry-After header's wait in seconds (capped), or None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _over_quota(status: int, body: bytes) -> bool:
    """A 429 that is a principal's quota (AgentApp's JSON answer names the `limit`), not a rate:
    it lasts until the principal's threads are deleted or expire, so trying again only costs."""
    if status != 429 or not body.startswith(b"{"):
        return False
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(answer, dict) and isinstance(answer.get("limit"), str)


def _retryable(exc: Exception) -> bool:
    """Whether a failure before the first frame is worth another try: an httpx failure its
    _HTTPX entry says is (the connection could not be made or broke before an answer came), or
    an answer one of RETRY_STATUSES."""
    if isinstance(exc, HttpError):
        return exc.status in RETRY_STATUSES and not _over_quota(exc.status, exc.body)
    return _translation(exc).retry


def _says_resumable(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes")


class _AsyncClients:
    """HttpAgent's own httpx.AsyncClients: one per event loop (an async client's connections
    belong to the loop that opened them), made on first use.

    Each is watched by a suspended async generator started in its loop, so that the loop closes
    it, whole, when it shuts down its async generators (asyncio.run does as it ends). An agent
    that is collected leaves its clients to their loops: each is closed ORPHAN_GRACE seconds
    later, or by that shutdown if the loop ends first (an agent is often dropped as the loop
    ends, when a close begun then would be cut short). No connection is left to the garbage
    collector, whose ResourceWarning is an error under `-W error`."""

    def __init__(self) -> None:
        self.by_loop: dict[asyncio.AbstractEventLoop, _Watched] = {}

    async def get(self, make: Callable[[], httpx.AsyncClient]) -> httpx.AsyncClient | None:
        """The running loop's client (made by `make` when it has none); None outside asyncio
        (another async library)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        watched = self.by_loop.get(loop)
        if watched is not None and not watched.client.is_closed:
            return watched.client
        for gone in [other for other in list(self.by_loop) if other.is_closed()]:
            self.by_loop.pop(gone, None)
        watched = _Watched(make(), loop)
        self.by_loop[loop] = watched
        await anext(watched.watcher)  # registered with the loop from now on
        return watched.client

    async def aclose(self) -> None:
        """Close the running loop's client (awaited) and those of loops running elsewhere
        (scheduled in their loops); the clients of loops not running now close with them."""
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        mine = self.by_loop.pop(current, None) if current is not None else None
        self.close_elsewhere()
        if mine is not None:
            await mine.watcher.aclose()

    def close_elsewhere(self) -> None:
        for loop, watched in list(self.by_loop.items()):
            if loop.is_running():
                self.by_loop.pop(loop, None)
                asyncio.run_coroutine_threadsafe(_close_watcher(watched.watcher), loop)
            elif loop.is_closed():
                self.by_loop.pop(loop, None)


ORPHAN_GRACE = 1.0
"""Seconds after its agent was collected that an async client is closed by its loop."""
_ORPHANS: set[_Watched] = set()
"""The clients of collected agents, held until they are closed."""


def _orphaned(by_loop: dict[asyncio.AbstractEventLoop, _Watched]) -> None:
    """The agent holding `by_loop` was collected (called from any thread): each of its async
    clients is held, and closed by its loop ORPHAN_GRACE seconds later, unless the loop's
    shutdown closes it first."""
    for gone in [w for w in list(_ORPHANS) if w.loop.is_closed()]:
        _ORPHANS.discard(gone)  # a loop closed without shutting down its async generators
    for loop, watched in list(by_loop.items()):
        if loop.is_closed() or watched.client.is_closed:
            continue
        _ORPHANS.add(watched)
        try:
            loop.call_soon_threadsafe(loop.call_later, ORPHAN_GRACE, _close_orphan, watched)
        except RuntimeError:  # the loop closed meanwhile
            _ORPHANS.discard(watched)
    by_loop.clear()


def _close_orphan(watched: _Watched) -> None:
    watched.closing = watched.loop.create_task(_close_watcher(watched.watcher))


@attrs.define(eq=False)
class _Watched:
    """An async client, the loop its connections belong to, and its watcher."""

    client: httpx.AsyncClient
    loop: asyncio.AbstractEventLoop
    watcher: AsyncGenerator[None, None] = attrs.field(init=False)
    closing: asyncio.Task[None] | None = None

    def __attrs_post_init__(self) -> None:
        self.watcher = _watch(self)


async def _watch(watched: _Watched) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        try:
            await watched.client.aclose()
        finally:
            _ORPHANS.discard(watched)


async def _close_watcher(watcher: AsyncGenerator[None, None]) -> None:
    await watcher.aclose()


class _SyncClient:
    """HttpAgent's own httpx.Client, made on first use (from any thread)."""

    def __init__(self) -> None:
        self.client: httpx.Client | None = None
        self.lock = threading.Lock()

    def get(self, make: Callable[[], httpx.Client]) -> httpx.Client:
        client = self.client
        if client is None or client.is_closed:
            with self.lock:
                if self.client is None or self.client.is_closed:
                    self.client = make()
                client = self.client
        return client

    def close(self) -> None:
        with self.lock:
            client, self.client = self.client, None
        if client is not None:
            client.close()


class HttpAgent:
    """A remote agent at `url`.

    headers: sent with every request. timeout: an httpx timeout (default 10 s to connect, 60 s
    between reads; keep-alive comments keep a quiet run alive; an injected client keeps its own
    unless one is given; None disables timeouts). client / sync_client: httpx clients to use
    (never closed by the agent); without them the agent keeps its own, one async client per event
    loop and one sync client, so runs share their connection pools: close them with `aclose()`
    (or `async with HttpAgent(url) as agent:`) and `close()` (or `with`). strict: decode events
    strictly instead of tolerantly (tolerant warnings go to the "agui.client" logger).
    binary: ask for the protobuf transport (Accept: application/vnd.ag-ui.event+proto, with SSE as
    the fallback); the response is read by its Content-Type either way. max_frame_bytes limits one
    frame of either transport (10 MiB, as the TypeScript client). Redirects are followed, as fetch
    follows them.

    max_retries: how many times a request is tried again (default 2; 0: never) after a
    connection error or an answer 429, 502, 503 or 504, before the stream's first frame (see
    `retry_delay` for the waits).

    resume: how a stream of a server that sends event ids, and says it resumes
    (RESUMABLE_HEADER, or capabilities with transport.resumable), is resumed when it breaks off
    before its run's terminal event (default `ResumePolicy()`: up to 5 reconnects in a row
    without progress, 0.1 s doubling up to 2 s between them); None turns it off.
    resume_attempts: a shorthand for `ResumePolicy(attempts=N)` (0: off).

    detach: what becomes of a run this agent started on a server with a store when the stream is
    left before the run's end (an iterator closed early, its task cancelled, the consumer's
    exception; not a transport failure). False (the default): the run is stopped there too
    (`stop(run_id)`, given STOP_TIMEOUT seconds), as the official client's abortRun stops it, so
    the thread is free for the next turn. True: it goes on, to rejoin or connect to later. A
    server without a store stops the run when its connection closes, whatever this says.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | _Unset | None = _UNSET,
        client: httpx.AsyncClient | None = None,
        sync_client: httpx.Client | None = None,
        strict: bool = False,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        binary: bool = False,
        max_retries: int = DEFAULT_MAX_RETRIES,
        resume: ResumePolicy | None = ResumePolicy(),
        resume_attempts: int | None = None,
        detach: bool = False,
    ) -> None:
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a whole number >= 0, not {max_retries!r}")
        self.url = url
        self.headers = dict(headers or {})
        # An injected client keeps its own timeout unless one is given here.
        self._timeout_given = not isinstance(timeout, _Unset)
        self.timeout: httpx.Timeout | float | None = (
            DEFAULT_TIMEOUT if isinstance(timeout, _Unset) else timeout
        )
        self.client = client
        self.sync_client = sync_client
        self.strict = strict
        self.max_frame_bytes = max_frame_bytes
        self.binary = binary
        self.max_retries = max_retries
        if resume_attempts is not None:
            resume = attrs.evolve(resume or ResumePolicy(), attempts=resume_attempts)
        self.resume: ResumePolicy | None = resume
        self.detach = detach
        self.declared_resumable = False
        """Whether the last `capabilities()` read said the server resumes streams
        (transport.resumable): cut runs are then resumed even without RESUMABLE_HEADER."""
        # The agent's own clients refer to nothing of the agent, so that it is collected as soon
        # as it is dropped, and these finalizers close them: the sync one at once, each async
        # one by its loop (see _AsyncClients).
        self._async_clients = _AsyncClients()
        self._sync = _SyncClient()
        weakref.finalize(self, _orphaned, self._async_clients.by_loop)
        weakref.finalize(self, self._sync.close)

    def __call__(self, input: RunAgentInput, /) -> AsyncGenerator[Received, None]:
        return self.run(input)

    # ── its clients ──────────────────────────────────────────────────────────────────────────

    def _new_async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=self.timeout)

    def _new_sync_client(self) -> httpx.Client:
        return httpx.Client(timeout=self.timeout)

    async def _async_client(self) -> tuple[httpx.AsyncClient, bool, bool]:
        """(the client, whether it is the agent's own, whether it is made for this request
        alone and to be closed after it: outside asyncio)."""
        if self.client is not None:
            return self.client, False, False
        pooled = await self._async_clients.get(self._new_async_client)
        if pooled is None:
            return self._new_async_client(), True, True
        return pooled, True, False

    def _sync_client(self) -> tuple[httpx.Client, bool]:
        if self.sync_client is not None:
            return self.sync_client, False
        return self._sync.get(self._new_sync_client), True

    async def aclose(self) -> None:
        """Close the agent's own clients (an injected one is left alone): this event loop's async
        client, those of loops running in other threads, and the sync client. A later request
        opens new ones."""
        await self._async_clients.aclose()
        self._sync.close()

    def close(self) -> None:
        """Close the agent's own sync client, and its async clients of loops that are running
        (scheduled there); a later request opens new ones. An injected client is left alone."""
        self._sync.close()
        self._async_clients.close_elsewhere()

    async def __aenter__(self) -> HttpAgent:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __enter__(self) -> HttpAgent:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _request_timeout(self, own: bool) -> Any:
        return self.timeout if own or self._timeout_given else httpx.USE_CLIENT_DEFAULT

    def _accept(self) -> str:
        return f"{PROTO_MEDIA_TYPE}, text/event-stream;q=0.5" if self.binary else _SSE

    def _request_headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": self._accept(), **self.headers}
        return _traced(headers)

    def _reader(self, response: httpx.Response, position: StreamPosition) -> _Frames | _ProtoFrames:
        """The frame reader for the answer's content type; StreamError for anything but SSE or
        (asked for or not) the protobuf media type."""
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media == PROTO_MEDIA_TYPE:
            return _ProtoFrames(min(self.max_frame_bytes, DEFAULT_MAX_PROTO_FRAME_BYTES), position)
        if media == _SSE:
            return _Frames(self.max_frame_bytes, position)
        expected = f"{PROTO_MEDIA_TYPE} or {_SSE}" if self.binary else _SSE
        raise StreamError(
            f"expected {expected}, got {media or 'no content type'} "
            f"(HTTP {response.status_code} from {response.url})"
        )

    def _failure(
        self, exc: Exception, url: str | httpx.URL | None = None, attempts: int = 1
    ) -> TransportError:
        where = self.url if url is None else str(url)
        return _translation(exc).kind(_transport_message(where, exc), url=where, attempts=attempts)

    # ── streams ──────────────────────────────────────────────────────────────────────────────

    def _post(self, input: RunAgentInput, position: StreamPosition | None) -> _Request:
        position = _fresh(position, input.run_id)
        if input.protocol_version is None:
            # This is a 1.0 client: a server sends a request without a version the stream of a
            # pre-1.0 release (AgentApp's compat), with what those cannot show dropped.
            input = attrs.evolve(input, protocol_version=PROTOCOL_VERSION)
        headers = self._request_headers()
        if self.resume is not None or self.detach:
            # A durable agui server keeps the run going when the stream is cut only for a
            # client that says it resumes (AgentApp's detach); left on purpose, it is stopped
            # (`_stop_left`) unless detach.
            headers.setdefault("agui-resume", "1")
        return _Request(
            "POST",
            self.url,
            headers,
            encode(input),
            position,
            resumable=True,
            one_run=True,
            starts="agui-resume" in headers,
        )

    def _rejoin(self, run_id: str, after: str | None, position: StreamPosition | None) -> _Request:
        position = _fresh(position, run_id, after)
        headers = _traced({"accept": self._accept(), **self.headers})
        if after is not None:
            headers["last-event-id"] = after
        url = endpoint(self.url, "runs", run_id, "events")
        return _Request("GET", url, headers, None, position, resumable=True, one_run=True)

    def _connect(
        self, thread_id: str, history: History, position: StreamPosition | None
    ) -> _Request:
        if history not in ("compact", "full"):
            raise ValueError(f'history must be "compact" or "full", not {history!r}')
        url = endpoint(self.url, "threads", thread_id, "events")
        if history == "full":
            url = url.copy_merge_params({"history": "full"})
        headers = _traced({"accept": self._accept(), **self.headers})
        # A thread's stream holds several runs (the history's, then the live one): it ends when
        # the server ends it.
        position = _fresh(position, None)
        return _Request("GET", url, headers, None, position, resumable=True, one_run=False)

    def frames(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> AsyncGenerator[Frame, None]:
        """POST the input; yield each frame as it arrives, undecoded (for a pipeline that decodes,
        and reports what it strips, itself): the data of an SSE frame, or the JSON object read
        from a protobuf frame (not yet checked against the spec). It ends at the run's terminal
        event. A stream with event ids is resumed when it breaks off, if the server says it can
        (see the module docstring); `position` shows where it is."""
        return cast(AsyncGenerator[Frame, None], self._stream(self._post(input, position)))

    def frames_sync(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> Generator[Frame, None, None]:
        """The same as `frames`, for code without an event loop."""
        return self._stream_sync(self._post(input, position))

    def rejoin_frames(
        self, run_id: str, *, after: str | None = None, position: StreamPosition | None = None
    ) -> AsyncGenerator[Frame, None]:
        """The frames of a run the server keeps (GET {url}/runs/{runId}/events): from its first
        event, or those after the event id `after` (sent as Last-Event-ID), following the run
        live until its terminal event. Resumed when it breaks off, as `frames` is. HttpError 404
        for a run the server does not hold, 400 for a cursor the run never produced."""
        return cast(
            AsyncGenerator[Frame, None], self._stream(self._rejoin(run_id, after, position))
        )

    def rejoin_frames_sync(
        self, run_id: str, *, after: str | None = None, position: StreamPosition | None = None
    ) -> Generator[Frame, None, None]:
        """The same as `rejoin_frames`, for code without an event loop."""
        return self._stream_sync(self._rejoin(run_id, after, position))

    def connect_frames(
        self,
        thread_id: str,
        /,
        *,
        history: History = "compact",
        position: StreamPosition | None = None,
    ) -> AsyncGenerator[Frame, None]:
        """The frames of a thread the server keeps (GET {url}/threads/{threadId}/events): its
        history, "compact" (the server's snapshots of its messages and state, in one synthetic
        run) or "full" (every stored event, `?history=full`), then its live run, followed until
        it ends. HttpError 404 for a thread the server holds nothing of. The live run's frames
        carry ids (the history's do not): a cut inside it is resumed as in `frames`; a cut in
        the history is a TransportError (connect again)."""
        return cast(
            AsyncGenerator[Frame, None], self._stream(self._connect(thread_id, history, position))
        )

    def connect_frames_sync(
        self,
        thread_id: str,
        /,
        *,
        history: History = "compact",
        position: StreamPosition | None = None,
    ) -> Generator[Frame, None, None]:
        """The same as `connect_frames`, for code without an event loop."""
        return self._stream_sync(self._connect(thread_id, history, position))

    def _frame_batches(self, input: RunAgentInput) -> AsyncGenerator[list[Frame], None] | None:
        """`frames(input)` as a list of frames per network chunk, for a consumer that takes
        them in bulk (Conversation.run: an async step per chunk, not per frame); None when a
        subclass overrides `frames` (what that yields is what counts)."""
        if type(self).frames is not HttpAgent.frames:
            return None
        return cast(
            AsyncGenerator[list[Frame], None], self._stream(self._post(input, None), batched=True)
        )

    async def _stream(self, request: _Request, batched: bool = False) -> AsyncGenerator[Any, None]:
        """The request's frames, one by one (or, `batched`, a list of those of each chunk)."""
        client, own, temporary = await self._async_client()
        resumer = _Resumer(self, request)
        left = False
        try:
            while True:
                seen = request.position.frames
                try:
                    async with client.stream(
                        request.method,
                        request.url,
                        content=request.content,
                        headers=request.headers,
                        timeout=self._request_timeout(own),
                        follow_redirects=True,
                    ) as response:
                        if not response.is_success:
                            raise _http_error(response, await _error_body_async(response))
                        frames = resumer.opened(response)
                        # (httpx's aiter_raw and aiter_bytes are async generators, typed as iterators)
                        chunks = cast(AsyncGenerator[bytes, None], _aiter_body(response))
                        async with aclosing(chunks):
                            while True:
                                if resumer.over():
                                    # The run is over: what comes at once is read (the end of
                                    # the answer, or another run), a silence ends the stream
                                    # and closes the response, whatever the server keeps open.
                                    with anyio.move_on_after(END_GRACE) as waited:
                                        chunk = await anext(chunks, None)
                                    if waited.cancelled_caught:
                                        return
                                else:
                                    chunk = await anext(chunks, None)
                                if chunk is None:
                                    break
                                if not batched:
                                    for data in frames.feed(chunk):
                                        yield data
                                    continue
                                batch: list[Frame] = []
                                try:
                                    for data in frames.feed(chunk):
                                        batch.append(data)
                                except StreamError:
                                    if batch:  # the frames before the broken one first
                                        yield batch
                                    raise
                                if batch:
                                    yield batch
                        for data in frames.close(partial=not resumer.wanted()):
                            yield [data] if batched else data
                except (httpx.HTTPError, httpx.InvalidURL, HttpError) as exc:
                    wait: float | None = resumer.broke(exc, seen)
                else:
                    wait = resumer.ended(seen)
                if wait is None:
                    return
                await asyncio.sleep(wait)
        except TransportError:
            raise  # the server could not be read: a stop would not get there either
        except BaseException:
            left = True  # closed early, cancelled, or the consumer's or the decoder's error
            raise
        finally:
            try:
                stop = self._stop_left(request, resumer) if left else None
                if stop is not None:
                    # A stop the enclosing cancel scope would cancel at once: shielded, bounded.
                    with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_TIMEOUT):
                        await self._send_stop(client, stop)
            finally:
                if temporary:
                    await client.aclose()

    def _stream_sync(self, request: _Request) -> Generator[Frame, None, None]:
        client, own = self._sync_client()
        resumer = _Resumer(self, request)
        try:
            yield from self._stream_sync_frames(client, own, request, resumer)
        except TransportError:
            raise  # the server could not be read: a stop would not get there either
        except BaseException:
            stop = self._stop_left(request, resumer)
            if stop is not None:
                self._send_stop_sync(client, stop)
            raise

    def _stream_sync_frames(
        self, client: httpx.Client, own: bool, request: _Request, resumer: _Resumer
    ) -> Generator[Frame, None, None]:
        while True:
            seen = request.position.frames
            try:
                with client.stream(
                    request.method,
                    request.url,
                    content=request.content,
                    headers=request.headers,
                    timeout=self._request_timeout(own),
                    follow_redirects=True,
                ) as response:
                    if not response.is_success:
                        raise _http_error(response, _error_body(response))
                    frames = resumer.opened(response)
                    short = _ShortReads(response)
                    try:
                        for chunk in _iter_body(response):
                            yield from frames.feed(chunk)
                            # The run is over: what comes at once is read, a silence ends the
                            # stream and closes the response (see the async stream).
                            if resumer.over():
                                if not short.start():
                                    return  # the wait cannot be bounded: end at once
                            else:
                                short.stop()
                        yield from frames.close(partial=not resumer.wanted())
                    except httpx.ReadTimeout:
                        if short.active:
                            return
                        raise
                    finally:
                        short.remove()
            except (httpx.HTTPError, httpx.InvalidURL, HttpError) as exc:
                wait: float | None = resumer.broke(exc, seen)
            else:
                wait = resumer.ended(seen)
            if wait is None:
                return
            time.sleep(wait)

    def _stop_left(self, request: _Request, resumer: _Resumer) -> httpx.URL | None:
        """The stream was left before its end: the stop URL of the run it started, when that run
        goes on at the server without one (this agent started it asking to resume it, the server
        said it keeps it, it has not ended, and the agent does not detach); else None."""
        position = request.position
        if (
            self.detach
            or not request.starts
            or position.finished
            or position.run_id is None
            or not resumer.resumes()
        ):
            return None
        return endpoint(resumer.agent_url, "runs", position.run_id, "stop")

    async def _send_stop(self, client: httpx.AsyncClient, url: httpx.URL) -> None:
        """Stop the run left early (one try: the stream's consumer is leaving)."""
        try:
            response = await client.post(url, headers=self._stop_headers(), timeout=STOP_TIMEOUT)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            log.warning("the stop of a run left early failed (%s): %s", url, exc)
            return
        _log_stop(url, response)

    def _send_stop_sync(self, client: httpx.Client, url: httpx.URL) -> None:
        """The same as `_send_stop`, without an event loop."""
        try:
            response = client.post(url, headers=self._stop_headers(), timeout=STOP_TIMEOUT)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            log.warning("the stop of a run left early failed (%s): %s", url, exc)
            return
        _log_stop(url, response)

    def _stop_headers(self) -> dict[str, str]:
        return _traced({"accept": "application/json", **self.headers})

    # ── events ───────────────────────────────────────────────────────────────────────────────

    async def run(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> AsyncGenerator[Received, None]:
        """POST the input; yield each event as it arrives, until the run's terminal event. An
        async generator: `contextlib.aclosing(agent.run(...))`, or `aclose()` it to stop early
        (which closes the connection)."""
        request = self._post(input, position)
        async with aclosing(self._stream(request)) as frames:
            async for data in frames:
                yield self._event(data, request.position.frames)

    def run_sync(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> Generator[Received, None, None]:
        """The same as `run`, for code without an event loop (a generator: `close()` it to stop
        early)."""
        request = self._post(input, position)
        with closing(self._stream_sync(request)) as frames:
            for data in frames:
                yield self._event(data, request.position.frames)

    async def rejoin(
        self, run_id: str, *, after: str | None = None, position: StreamPosition | None = None
    ) -> AsyncGenerator[Received, None]:
        """`rejoin_frames`, decoded: the run's events from its start, or after `after`."""
        request = self._rejoin(run_id, after, position)
        async with aclosing(self._stream(request)) as frames:
            async for data in frames:
                yield self._event(data, request.position.frames)

    async def connect(
        self,
        thread_id: str,
        /,
        *,
        history: History = "compact",
        position: StreamPosition | None = None,
    ) -> AsyncGenerator[Received, None]:
        """`connect_frames`, decoded: the thread's history, then its live run. To hydrate a
        conversation (messages, state, pending interrupts), use `Conversation.connect`."""
        request = self._connect(thread_id, history, position)
        async with aclosing(self._stream(request)) as frames:
            async for data in frames:
                yield self._event(data, request.position.frames)

    def _event(self, data: Frame, count: int) -> Received:
        # `count`: the frame's number (the position is updated before a frame is handed over).
        warnings: list[Problem] = []
        if type(data) is bytes:
            event = decode_event_bytes(data, count, self.strict, warnings)
        else:
            event = decode_frame(data, count, strict=self.strict, warnings=warnings)
        for warning in warnings:
            log.warning("frame %d: %s", count, warning)
        return cast(Received, event)

    # ── small requests: stop, capabilities ───────────────────────────────────────────────────

    async def _fetch(self, method: str, url: httpx.URL) -> tuple[httpx.Response, int]:
        """One small request, its answer read whole, retried as a stream's first request is;
        (the answer, the attempts made). TransportError when it cannot be made."""
        client, own, temporary = await self._async_client()
        headers = _traced({"accept": "application/json", **self.headers})
        retries = 0
        try:
            while True:
                try:
                    response = await client.request(
                        method,
                        url,
                        headers=headers,
                        timeout=self._request_timeout(own),
                        follow_redirects=True,
                    )
                except (httpx.HTTPError, httpx.InvalidURL) as exc:
                    wait = self._retry_wait(method, url, retries, exc)
                else:
                    again = self._retry_wait(method, url, retries, response)
                    if again is None:
                        return response, retries + 1
                    wait = again
                retries += 1
                await asyncio.sleep(wait)
        finally:
            if temporary:
                await client.aclose()

    def _fetch_sync(self, method: str, url: httpx.URL) -> tuple[httpx.Response, int]:
        """The same as `_fetch`, without an event loop."""
        client, own = self._sync_client()
        headers = _traced({"accept": "application/json", **self.headers})
        retries = 0
        while True:
            try:
                response = client.request(
                    method,
                    url,
                    headers=headers,
                    timeout=self._request_timeout(own),
                    follow_redirects=True,
                )
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                wait = self._retry_wait(method, url, retries, exc)
            else:
                again = self._retry_wait(method, url, retries, response)
                if again is None:
                    return response, retries + 1
                wait = again
            retries += 1
            time.sleep(wait)

    @overload
    def _retry_wait(
        self, method: str, url: httpx.URL, retries: int, outcome: httpx.Response
    ) -> float | None: ...
    @overload
    def _retry_wait(
        self, method: str, url: httpx.URL, retries: int, outcome: Exception
    ) -> float: ...
    def _retry_wait(
        self, method: str, url: httpx.URL, retries: int, outcome: httpx.Response | Exception
    ) -> float | None:
        """After try number `retries + 1` of a small request: the seconds to wait before the next
        (logged), or None to keep the answer; a failure not tried again is raised as
        TransportError."""
        if isinstance(outcome, httpx.Response):
            if outcome.status_code not in RETRY_STATUSES or retries >= self.max_retries:
                return None
            if _over_quota(outcome.status_code, outcome.content):
                return None
            reason = f"HTTP {outcome.status_code}"
            wait = retry_delay(retries + 1, outcome.headers)
        else:
            if retries >= self.max_retries or not _retryable(outcome):
                raise self._failure(outcome, url, retries + 1) from outcome
            reason, wait = _transport_message(str(url), outcome), retry_delay(retries + 1)
        _log_retry(method, url, wait, retries + 1, self.max_retries, reason)
        return wait

    # ── stopping a run ───────────────────────────────────────────────────────────────────────

    async def stop(self, run_id: str) -> None:
        """Ask the server to stop a run (POST {url}/runs/{runId}/stop), wherever it executes; the
        run then ends with RUN_FINISHED whose outcome is cancelled. HttpError 404 for a run the
        server does not hold, 409 for a run already finished (with the server's message);
        TransportError when the server cannot be reached."""
        response, attempts = await self._fetch("POST", endpoint(self.url, "runs", run_id, "stop"))
        if not response.is_success:
            raise _http_error(response, response.content[:_MAX_ERROR_BODY], attempts)

    def stop_sync(self, run_id: str) -> None:
        """The same as `stop`, for code without an event loop."""
        response, attempts = self._fetch_sync("POST", endpoint(self.url, "runs", run_id, "stop"))
        if not response.is_success:
            raise _http_error(response, response.content[:_MAX_ERROR_BODY], attempts)

    # ── threads ──────────────────────────────────────────────────────────────────────────────

    async def threads(self, *, limit: int | None = None, before: str | None = None) -> ThreadPage:
        """The caller's threads a server with a store keeps (GET {url}/threads), newest first: a
        page of at most `limit` (the server's default 20, at most 100), after the page whose
        `next` is `before`. HttpError for a refusal (400 names the bad parameter in its
        problems, 403 the hook's, 404 a server without a store); StreamError for an answer that
        is not a ThreadPage; TransportError when the server cannot be reached."""
        from agui.http.threads import ThreadPage

        response, attempts = await self._fetch("GET", self._threads_url(limit, before))
        return ThreadPage.from_wire(_json_of(response, attempts, "the threads"))

    def threads_sync(self, *, limit: int | None = None, before: str | None = None) -> ThreadPage:
        """The same as `threads`, for code without an event loop."""
        from agui.http.threads import ThreadPage

        response, attempts = self._fetch_sync("GET", self._threads_url(limit, before))
        return ThreadPage.from_wire(_json_of(response, attempts, "the threads"))

    def _threads_url(self, limit: int | None, before: str | None) -> httpx.URL:
        params: dict[str, str] = {}
        if limit is not None:
            params["limit"] = str(limit)
        if before is not None:
            params["before"] = before
        return endpoint(self.url, "threads").copy_merge_params(params)

    async def thread(self, thread_id: str) -> Thread:
        """One thread (GET {url}/threads/{threadId}): its messages and state as connect's
        compact history builds them, and its runs. HttpError 404 for a thread the server does
        not hold for this caller; StreamError, TransportError as for `threads`."""
        from agui.http.threads import Thread

        response, attempts = await self._fetch("GET", endpoint(self.url, "threads", thread_id))
        return Thread.from_wire(_json_of(response, attempts, "the thread"), strict=self.strict)

    def thread_sync(self, thread_id: str) -> Thread:
        """The same as `thread`, for code without an event loop."""
        from agui.http.threads import Thread

        response, attempts = self._fetch_sync("GET", endpoint(self.url, "threads", thread_id))
        return Thread.from_wire(_json_of(response, attempts, "the thread"), strict=self.strict)

    async def delete_thread(self, thread_id: str) -> DeletedThread:
        """Delete a thread from the server's store (DELETE {url}/threads/{threadId}): every
        stored event of every run, its live run stopped first. HttpError 404 for a thread the
        server does not hold for this caller (a retry after a lost answer may get it too: the
        first try deleted it); StreamError, TransportError as for `threads`."""
        from agui.http.threads import DeletedThread

        url = endpoint(self.url, "threads", thread_id)
        response, attempts = await self._fetch("DELETE", url)
        return DeletedThread.from_wire(_json_of(response, attempts, "the deletion"))

    def delete_thread_sync(self, thread_id: str) -> DeletedThread:
        """The same as `delete_thread`, for code without an event loop."""
        from agui.http.threads import DeletedThread

        url = endpoint(self.url, "threads", thread_id)
        response, attempts = self._fetch_sync("DELETE", url)
        return DeletedThread.from_wire(_json_of(response, attempts, "the deletion"))

    # ── capabilities ─────────────────────────────────────────────────────────────────────────

    async def capabilities(self) -> AgentCapabilities:
        """What the agent declares it can do (GET {url}/capabilities): an AgentCapabilities whose
        left-out fields are unknown, not unsupported. Decoded tolerantly (unknown members
        removed, each logged on "agui.client"), or strictly with `strict`. HttpError for a non-2xx
        answer (404 from a server that serves no capabilities); StreamError for an answer that is
        not JSON or not an AgentCapabilities (with the problems); TransportError when the server
        cannot be reached. A declaration with `transport.resumable` true lets this agent resume
        the cut streams of that server (`declared_resumable`)."""
        response, attempts = await self._fetch("GET", endpoint(self.url, "capabilities"))
        return self._capabilities(response, attempts)

    def capabilities_sync(self) -> AgentCapabilities:
        """The same as `capabilities`, for code without an event loop."""
        response, attempts = self._fetch_sync("GET", endpoint(self.url, "capabilities"))
        return self._capabilities(response, attempts)

    def _capabilities(self, response: httpx.Response, attempts: int) -> AgentCapabilities:
        body = response.content
        if not response.is_success:
            raise _http_error(response, body[:_MAX_ERROR_BODY], attempts)
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        where = f"HTTP {response.status_code} from {response.url}"
        if media != "application/json" and not media.endswith("+json"):
            raise StreamError(
                f"expected the capabilities as application/json, got {media or 'no content type'} "
                f"({where})"
            )
        warnings: list[Problem] = []
        try:
            capabilities = decode(body, AgentCapabilities, strict=self.strict, warnings=warnings)
        except DecodeError as exc:
            raise StreamError(
                f"the answer is not a valid AgentCapabilities ({where}): "
                f"{exc.problems[0] if exc.problems else exc}",
                problems=exc.problems,
            ) from None
        for warning in warnings:
            log.warning("capabilities: %s", warning)
        transport = capabilities.transport
        self.declared_resumable = transport is not None and transport.resumable is True
        return capabilities


def _traced(headers: dict[str, str]) -> dict[str, str]:
    """`headers` with the current trace context when the application traces (OpenTelemetry is
    loaded, a span is current): agui.http.tracing.inject. Without OpenTelemetry, nothing is
    imported."""
    if "opentelemetry.trace" not in sys.modules:
        return headers
    from agui.http.tracing import inject

    return inject(headers)


def _log_stop(url: httpx.URL, response: httpx.Response) -> None:
    """The answer to the stop of a run left early: 202, or 409 for a run that ended meanwhile."""
    if response.is_success or response.status_code == 409:
        log.info("stopped the run left early (%s): HTTP %d", url, response.status_code)
    else:
        log.warning(
            "the stop of a run left early failed (%s): HTTP %d %s",
            url,
            response.status_code,
            response.text[:BODY_EXCERPT],
        )


def _json_of(response: httpx.Response, attempts: int, what: str) -> Any:
    """The JSON of a 2xx answer; HttpError for another, StreamError for one that is not JSON."""
    body = response.content
    if not response.is_success:
        raise _http_error(response, body[:_MAX_ERROR_BODY], attempts)
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    where = f"HTTP {response.status_code} from {response.url}"
    if media != "application/json" and not media.endswith("+json"):
        raise StreamError(
            f"expected {what} as application/json, got {media or 'no content type'} ({where})"
        )
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise StreamError(f"{what}: the answer is not JSON ({where}): {exc}") from None


def _log_retry(
    method: str, url: str | httpx.URL, wait: float, retry: int, retries: int, reason: str
) -> None:
    log.info(
        "retrying %s %s in %.2f s (retry %d of %d): %s", method, url, wait, retry, retries, reason
    )


class _ShortReads:
    """The sync stream's wait after a run's terminal event, bounded by END_GRACE seconds: the
    reads of the answer's connection (httpcore's network stream, the `network_stream` response
    extension, whose `read(max_bytes, timeout)` is httpcore's network-backend interface) are
    given that timeout while `active`. Without such a stream (another transport), `start` says
    the wait cannot be bounded."""

    def __init__(self, response: httpx.Response) -> None:
        self.active = False
        self.stream: Any = response.extensions.get("network_stream")
        self.wrapper: Callable[..., bytes] | None = None

    def start(self) -> bool:
        if self.wrapper is None:
            read = getattr(self.stream, "read", None)
            if not callable(read):
                return False
            state = self

            def read_briefly(max_bytes: int, timeout: float | None = None) -> bytes:
                if state.active:
                    timeout = END_GRACE if timeout is None else min(timeout, END_GRACE)
                return cast(bytes, read(max_bytes, timeout))

            try:
                self.stream.read = read_briefly
            except (AttributeError, TypeError):
                return False
            self.wrapper = read_briefly
        self.active = True
        return True

    def stop(self) -> None:
        self.active = False

    def remove(self) -> None:
        """Done with the answer: the connection's reads are its own again (once it is back in
        the pool, an inactive wrapper only passes them on)."""
        self.active = False
        if self.wrapper is not None and vars(self.stream).get("read") is self.wrapper:
            del self.stream.read


@attrs.define
class _Request:
    """The request a stream reads, and what the stream has seen so far."""

    method: str
    url: str | httpx.URL
    headers: dict[str, str]
    content: bytes | None
    position: StreamPosition
    resumable: bool
    """A break is mended by resuming the run (a run's stream, not a thread's)."""
    one_run: bool
    """The stream is one run's: it ends at that run's terminal event."""
    starts: bool = False
    """The request starts a run (a POST of its input) that a server with a store keeps when its
    stream is cut (Agui-Resume): a stream left on purpose stops it (HttpAgent._stop_left)."""


class _Resumer:
    """The mending of one stream: retries before its first frame, resuming after, and what the
    consumer gets when neither is done."""

    def __init__(self, agent: HttpAgent, request: _Request) -> None:
        self.agent = agent
        self.request = request
        self.position = request.position
        self.policy = agent.resume if request.resumable else None
        self.agent_url: str | httpx.URL = agent.url
        """The agent's URL, as the POST's answer came from (after redirects)."""
        self.said_resumable = request.method != "POST"
        """The server said it resumes this run's stream: its answer carried RESUMABLE_HEADER
        (a GET of a durable route is that route's own answer)."""
        self.reconnecting = False
        self.attempt = 0
        """Reconnects in a row that brought no new frame."""
        self.retries = 0
        """Requests made again before the first frame."""

    def resumes(self) -> bool:
        """Whether the server said it resumes the stream (its answer, or its capabilities)."""
        return self.said_resumable or self.agent.declared_resumable

    def wanted(self) -> bool:
        """Whether the stream, were it to end now, would be resumed: resuming is on, the server
        sent ids and said it resumes, and the run's terminal event has not arrived."""
        position = self.position
        return (
            self.policy is not None
            and self.policy.attempts > 0
            and position.last_event_id is not None
            and not position.finished
            and self.resumes()
        )

    def over(self) -> bool:
        """The stream is one run's and that run's terminal event arrived."""
        return self.request.one_run and self.position.finished

    def opened(self, response: httpx.Response) -> _Frames | _ProtoFrames:
        """A 2xx answer: its frame reader."""
        if self.request.method == "POST" and not self.reconnecting:
            self.agent_url = response.url
            if _says_resumable(response.headers.get(RESUMABLE_HEADER)):
                self.said_resumable = True
        return self.agent._reader(response, self.position)

    def broke(self, exc: Exception, seen: int) -> float:
        """The connection failed with `exc` (`seen`: the frames before it was opened): the seconds
        to wait before trying again; raises what the consumer gets when it is not."""
        if (
            not self.reconnecting
            and self.position.frames == 0
            and self.retries < self.agent.max_retries
            and _retryable(exc)
        ):
            return self._retry(exc)
        if isinstance(exc, HttpError):
            if not self.reconnecting:
                exc.attempts = self.retries + 1
                raise exc
            if exc.status not in _RECONNECT_STATUSES:
                raise self._give_up(str(exc), exc, final=True)
            return self._next(str(exc), exc, seen)
        if not self.wanted():
            raise self._unresumed(exc) from exc
        return self._next(_transport_message(str(self.request.url), exc), exc, seen)

    def ended(self, seen: int) -> float | None:
        """The answer ended cleanly: None when the stream is over (its run ended, it cannot be
        resumed, or a reconnect brought nothing: the server has nothing more), else the seconds
        to wait before reconnecting."""
        if not self.wanted() or self.position.frames == seen:
            if self._unsaid():
                log.info(
                    "run %s: the answer of %s ended after event id %s, before the run's terminal "
                    "event; not resumed: the server did not say it resumes streams",
                    self.position.run_id,
                    self.agent_url,
                    self.position.last_event_id,
                )
            return None
        return self._next("the answer ended before the run's terminal event", None, seen)

    def _unsaid(self) -> bool:
        """The stream would be resumed, but for the server not saying it can."""
        position = self.position
        return (
            self.policy is not None
            and self.policy.attempts > 0
            and position.last_event_id is not None
            and not position.finished
            and not self.reconnecting
            and not self.resumes()
        )

    def _retry(self, exc: Exception) -> float:
        self.retries += 1
        request = self.request
        if isinstance(exc, HttpError):
            reason, wait = str(exc), retry_delay(self.retries, exc.headers)
        else:
            reason = _transport_message(str(request.url), exc)
            wait = retry_delay(self.retries)
        _log_retry(request.method, request.url, wait, self.retries, self.agent.max_retries, reason)
        return wait

    def _unresumed(self, exc: Exception) -> TransportError:
        """The error of a break that is not mended."""
        failure = self.agent._failure(exc, self.request.url, self.retries + 1)
        if not self._unsaid():
            return failure
        position = self.position
        return type(failure)(
            f"The stream of run {position.run_id} from {self.agent_url} broke off after event "
            f"id {position.last_event_id} (frame {position.frames}) and was not resumed: the "
            f"server did not say it resumes streams ({RESUMABLE_HEADER}: 1 on its answer, or "
            f"transport.resumable in its capabilities): {failure}",
            url=str(self.agent_url),
        )

    def _next(self, reason: str, cause: BaseException | None, seen: int) -> float:
        policy = self.policy
        assert policy is not None  # wanted() said so
        self.attempt = 1 if self.position.frames > seen else self.attempt + 1
        if self.attempt > policy.attempts:
            raise self._give_up(reason, cause, final=False)
        position = self.position
        cursor = position.last_event_id
        assert cursor is not None  # wanted() said so
        request = self.request
        request.method = "GET"
        request.url = endpoint(self.agent_url, "runs", position.run_id or "", "events")
        request.headers = _traced({"accept": _SSE, **self.agent.headers, "last-event-id": cursor})
        request.content = None
        self.reconnecting = True
        position.reconnects += 1
        log.info(
            "resuming run %s after event id %s (reconnect %d in a row): %s",
            position.run_id,
            cursor,
            self.attempt,
            reason,
        )
        return policy.delay(self.attempt)

    def _give_up(self, reason: str, cause: BaseException | None, *, final: bool) -> TransportError:
        position = self.position
        url = endpoint(self.agent_url, "runs", position.run_id or "", "events")
        if final:
            tried = "it cannot be resumed"
        else:
            count = self.policy.attempts if self.policy is not None else 0
            tried = f"{count} reconnect(s) in a row brought nothing"
        error = TransportError(
            f"The stream of run {position.run_id} broke off after event id "
            f"{position.last_event_id} (frame {position.frames}) and {tried}: {reason}",
            url=str(url),
        )
        error.__cause__ = cause
        return error


def _lifecycle(position: StreamPosition, value: Any, frame_id: str | None) -> None:
    """Note a frame that opens or ends a run (its JSON object, or JSON text to parse). A
    RUN_STARTED starts the run's cursors: its own id, or none (a run whose frames carry no ids,
    as a thread's history, cannot be resumed)."""
    if not isinstance(value, dict):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return
        if not isinstance(value, dict):
            return
    kind = value.get("type")
    if kind == "RUN_STARTED":
        run_id = value.get("runId")
        if isinstance(run_id, str):
            position.run_id = run_id
        position.last_event_id = frame_id
        position.finished = False
    elif kind == "RUN_FINISHED" or kind == "RUN_ERROR":
        position.finished = True


class _Frames:
    """SSE bytes -> frame data, numbering frames (so an error can name the one that broke) and
    keeping the position: the last event id, the run, whether it ended."""

    def __init__(self, max_frame_bytes: int, position: StreamPosition) -> None:
        self.sse = SSEDecoder(max_frame_bytes)
        self.position = position

    # Generators, not lists: each frame is handed out before the next is looked at, so the
    # frames before a broken one reach the caller however the bytes were chunked.
    def feed(self, chunk: bytes) -> Iterator[bytes]:
        position = self.position
        try:
            messages = self.sse.feed_frames(chunk)
        except SSEError as exc:
            at = position.frames + 1
            raise StreamError(f"frame {at}: {exc}", frame=at) from None
        for message in messages:
            position.frames += 1
            if type(message) is bytes:  # a frame of data alone
                if b'"RUN_' in message:
                    _lifecycle(position, message, None)
                yield message
                continue
            assert isinstance(message, SSEMessage)
            if message.id is not None:
                position.last_event_id = message.id
            data = message.data
            if b'"RUN_' in data:
                _lifecycle(position, data, message.id)
            yield data

    def close(self, *, partial: bool) -> Iterator[bytes]:
        """The answer ended: a last frame that lacks its blank line is handed over only when
        `partial` (a stream about to be resumed drops it, as the SSE standard says, and gets it
        again whole)."""
        position = self.position
        try:
            messages = self.sse.close()
        except SSEError as exc:
            at = position.frames + 1
            raise StreamError(f"frame {at}: {exc}", frame=at) from None
        if not partial:
            return
        for message in messages:
            position.frames += 1
            if message.id is not None:
                position.last_event_id = message.id
            if b'"RUN_' in message.data:
                _lifecycle(position, message.data, message.id)
            yield message.data


class _ProtoFrames:
    """Protobuf frame bytes -> each frame's event as a JSON object, numbering frames."""

    def __init__(self, max_frame_bytes: int, position: StreamPosition) -> None:
        self.decoder = ProtoFrameDecoder(max_frame_bytes)
        self.position = position

    def feed(self, chunk: bytes) -> Iterator[dict[str, Any]]:
        position = self.position
        try:
            messages = self.decoder.feed(chunk)
        except ProtoStreamError as exc:
            raise StreamError(str(exc), frame=position.frames + 1) from None
        for message in messages:
            position.frames += 1
            try:
                value = decode_proto_json(message)
            except DecodeError as exc:
                raise StreamError(
                    f"frame {position.frames}: {exc.problems[0].message}",
                    frame=position.frames,
                    problems=exc.problems,
                ) from None
            _lifecycle(position, value, None)
            yield value

    def close(self, *, partial: bool) -> Iterator[dict[str, Any]]:
        try:
            self.decoder.close()
        except ProtoStreamError as exc:
            raise StreamError(str(exc), frame=self.position.frames + 1) from None
        return iter(())


def _aiter_body(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive: httpx's raw chunks when the answer is not
    content-encoded (one iterator less per chunk, which counts when a server writes each event
    on its own), else decoded (gzip, ...)."""
    if "content-encoding" in response.headers:
        return response.aiter_bytes()
    return response.aiter_raw()


def _iter_body(response: httpx.Response) -> Iterator[bytes]:
    """`_aiter_body` for the sync client."""
    if "content-encoding" in response.headers:
        return response.iter_bytes()
    return response.iter_raw()


async def _error_body_async(response: httpx.Response) -> bytes:
    data = b""
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > _MAX_ERROR_BODY:
            break
    return data[:_MAX_ERROR_BODY]


def _error_body(response: httpx.Response) -> bytes:
    data = b""
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) > _MAX_ERROR_BODY:
            break
    return data[:_MAX_ERROR_BODY]


def _http_error(response: httpx.Response, body: bytes, attempts: int = 1) -> HttpError:
    """The HttpError of a non-2xx answer: its URL, status, headers and first bytes, with the
    server's text (its first BODY_EXCERPT bytes); for a JSON answer with an "error" (AgentApp's
    `{"error", "problems": [...]}`), that error and the problems it lists."""
    about: dict[str, Any] = {
        "url": str(response.url),
        "headers": response.headers,
        "body": body[:BODY_EXCERPT],
        "attempts": attempts,
    }
    status = response.status_code
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            value = None
        error = value.get("error") if isinstance(value, dict) else None
        if isinstance(error, str):
            listed = value.get("problems") if isinstance(value, dict) else None
            problems = tuple(
                Problem(
                    str(item.get("pointer", "")),
                    str(item.get("kind", "")),
                    str(item.get("message", "")),
                )
                for item in (listed if isinstance(listed, list) else ())
                if isinstance(item, dict)
            )
            return HttpError(status, error, problems, **about)
    text = body[:BODY_EXCERPT].decode("utf-8", "replace").strip()
    if len(body) > BODY_EXCERPT:
        text += " ..."
    return HttpError(status, text or "(no body)", **about)


class _Translation(NamedTuple):
    """What an httpx failure becomes: the agui error raised, whether it is worth another try
    before a stream's first frame (the connection could not be made, or broke before an answer
    came: the server may have dropped an idle pooled connection; a timeout waiting for the answer
    is not, the server may be running the run), and the message (format fields: url, name: the
    httpx exception's class, detail: its text)."""

    kind: type[TransportError]
    retry: bool
    text: str


_TALKING = "{name} while talking to {url}: {detail}"
_HTTPX: tuple[tuple[type[Exception] | tuple[type[Exception], ...], _Translation], ...] = (
    (httpx.ConnectTimeout, _Translation(Timeout, True, "Timed out connecting to {url} ({name})")),
    (
        httpx.WriteTimeout,
        _Translation(Timeout, False, "Timed out sending the request to {url} ({name})"),
    ),
    (
        httpx.PoolTimeout,
        _Translation(Timeout, False, "Timed out waiting for a free connection to {url} ({name})"),
    ),
    (  # ReadTimeout: a silent server
        httpx.TimeoutException,
        _Translation(Timeout, False, "Timed out waiting for data from {url} ({name})"),
    ),
    (httpx.ConnectError, _Translation(ConnectError, True, "Cannot connect to {url}: {detail}")),
    (httpx.RemoteProtocolError, _Translation(TransportError, True, _TALKING)),
    (httpx.ReadError, _Translation(TransportError, True, _TALKING)),
    (httpx.WriteError, _Translation(TransportError, True, _TALKING)),
    (httpx.TooManyRedirects, _Translation(TransportError, False, "Too many redirects from {url}")),
    (
        (httpx.InvalidURL, httpx.UnsupportedProtocol),
        _Translation(TransportError, False, "Cannot request {url}: {detail}"),
    ),
)
"""The client's one table of httpx failures, the first entry that matches (by isinstance) wins;
any other failure is _OTHER."""
_OTHER = _Translation(TransportError, False, _TALKING)


def _translation(exc: BaseException) -> _Translation:
    return next((found for kind, found in _HTTPX if isinstance(exc, kind)), _OTHER)


def _transport_message(url: str, exc: Exception) -> str:
    """One sentence naming the URL and what went wrong."""
    name = type(exc).__name__
    return _translation(exc).text.format(url=url, name=name, detail=str(exc) or name)
