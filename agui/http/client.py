"""HttpAgent: a remote AG-UI agent over httpx, itself an Agent.

`async for event in HttpAgent(url).run(input)` POSTs the input and yields typed events as their
frames arrive; `run_sync` does the same without asyncio. Closing the iterator early closes the
response (and so the connection), which tells a server without a store to stop the run. With
`binary=True` the request asks for the protobuf transport; whichever the server answers (by its
Content-Type) is read, and an answer that is neither (an HTML page, a JSON document) is a
StreamError naming its content type.

Redirects are followed as `fetch` follows them (307 and 308 repeat the POST with its body; 301,
302 and 303 become a GET). A non-2xx answer is an HttpError (with the problems of a JSON answer
such as AgentApp's 400); a timeout or a failed connection is a TransportError naming the URL, with
httpx's exception as its `__cause__`.

Durable runs. A server with a store (AgentApp(agent, store=...)) sends every SSE frame with an
`id:`, the event's cursor in the run's log. HttpAgent remembers the last one and the run's id
(RUN_STARTED's runId); when the connection breaks, or the answer ends, before the run's terminal
event (RUN_FINISHED or RUN_ERROR), it reconnects to `GET {url}/runs/{runId}/events` with
`Last-Event-ID` and goes on with the frames after that cursor, so its consumer sees one unbroken
stream, numbered on from where it broke: no frame lost, none twice. `ResumePolicy` bounds the
reconnects (exponential backoff with jitter); a server that sends no ids is never resumed (a cut
is a TransportError, as without a store). `StreamPosition` shows where a stream stands.

The same server answers `rejoin(run_id, after=)` (a run's stream, from its start or after a
cursor), `connect(thread_id)` (a thread's history, then its live run) and `stop(run_id)`.

`capabilities()` reads what the agent declares it can do (`GET {url}/capabilities`, the
AgentCapabilities AgentApp serves, as does the official ADK middleware).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Mapping
from contextlib import aclosing, closing
from typing import Any, TypeAlias, cast
from urllib.parse import quote

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
from agui.errors import HttpError, ProtoStreamError, SSEError, StreamError, TransportError
from agui.wire.codec import decode, decode_frame, encode
from agui.wire.proto import (
    DEFAULT_MAX_PROTO_FRAME_BYTES,
    PROTO_MEDIA_TYPE,
    ProtoFrameDecoder,
    decode_proto_json,
)
from agui.wire.sse import DEFAULT_MAX_FRAME_BYTES, SSEDecoder

__all__ = ["HttpAgent", "ResumePolicy", "StreamPosition", "endpoint"]

log = logging.getLogger("agui.client")
_RANDOM = random.Random()
"""Jitter from a generator of our own: the global one belongs to the application (and its
tests: seeded runs, property tests that check nothing else draws from it)."""

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)

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
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
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


class HttpAgent:
    """A remote agent at `url`.

    headers: sent with every request. timeout: an httpx timeout (default 10 s to connect, 60 s
    between reads; keep-alive comments keep a quiet run alive; an injected client keeps its own
    unless one is given; None disables timeouts). client / sync_client: httpx clients
    to use instead of a new one per run (their connection pools are reused). strict: decode events
    strictly instead of tolerantly (tolerant warnings go to the "agui.client" logger).
    binary: ask for the protobuf transport (Accept: application/vnd.ag-ui.event+proto, with SSE as
    the fallback); the response is read by its Content-Type either way. max_frame_bytes limits one
    frame of either transport (10 MiB, as the TypeScript client). Redirects are followed, as fetch
    follows them.

    resume: how a stream of a server that sends event ids is resumed when it breaks off before
    its run's terminal event (default `ResumePolicy()`: up to 5 reconnects in a row without
    progress, 0.1 s doubling up to 2 s between them); None turns it off. resume_attempts: a
    shorthand for `ResumePolicy(attempts=N)` (0: off).
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
        resume: ResumePolicy | None = ResumePolicy(),
        resume_attempts: int | None = None,
    ) -> None:
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
        if resume_attempts is not None:
            resume = attrs.evolve(resume or ResumePolicy(), attempts=resume_attempts)
        self.resume: ResumePolicy | None = resume

    def __call__(self, input: RunAgentInput, /) -> AsyncIterator[Received]:
        return self.run(input)

    def _request_timeout(self, own: bool) -> Any:
        return self.timeout if own or self._timeout_given else httpx.USE_CLIENT_DEFAULT

    def _accept(self) -> str:
        return f"{PROTO_MEDIA_TYPE}, text/event-stream;q=0.5" if self.binary else _SSE

    def _request_headers(self) -> dict[str, str]:
        return {"content-type": "application/json", "accept": self._accept(), **self.headers}

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

    def _failure(self, exc: Exception, url: str | httpx.URL | None = None) -> TransportError:
        where = self.url if url is None else str(url)
        return TransportError(_transport_message(where, exc), url=where)

    # ── streams ──────────────────────────────────────────────────────────────────────────────

    def _post(self, input: RunAgentInput, position: StreamPosition | None) -> _Request:
        position = _fresh(position, input.run_id)
        if input.protocol_version is None:
            # This is a 1.0 client: a server sends a request without a version the stream of a
            # pre-1.0 release (AgentApp's compat), with what those cannot show dropped.
            input = attrs.evolve(input, protocol_version=PROTOCOL_VERSION)
        headers = self._request_headers()
        if self.resume is not None:
            # A durable agui server keeps the run going when the stream is cut only for a
            # client that says it resumes (AgentApp's detach).
            headers.setdefault("agui-resume", "1")
        return _Request("POST", self.url, headers, encode(input), position, resumable=True)

    def _rejoin(self, run_id: str, after: str | None, position: StreamPosition | None) -> _Request:
        position = _fresh(position, run_id, after)
        headers = {"accept": self._accept(), **self.headers}
        if after is not None:
            headers["last-event-id"] = after
        url = endpoint(self.url, "runs", run_id, "events")
        return _Request("GET", url, headers, None, position, resumable=True)

    def _connect(
        self, thread_id: str, history: History, position: StreamPosition | None
    ) -> _Request:
        if history not in ("compact", "full"):
            raise ValueError(f'history must be "compact" or "full", not {history!r}')
        url = endpoint(self.url, "threads", thread_id, "events")
        if history == "full":
            url = url.copy_merge_params({"history": "full"})
        headers = {"accept": self._accept(), **self.headers}
        return _Request("GET", url, headers, None, _fresh(position, None), resumable=True)

    def frames(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> AsyncIterator[Frame]:
        """POST the input; yield each frame as it arrives, undecoded (for a pipeline that decodes,
        and reports what it strips, itself): the data of an SSE frame, or the JSON object read
        from a protobuf frame (not yet checked against the spec). A stream with event ids is
        resumed when it breaks off (see the module docstring); `position` shows where it is."""
        return self._stream(self._post(input, position))

    def frames_sync(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> Iterator[Frame]:
        """The same as `frames`, for code without an event loop."""
        return self._stream_sync(self._post(input, position))

    def rejoin_frames(
        self, run_id: str, *, after: str | None = None, position: StreamPosition | None = None
    ) -> AsyncIterator[Frame]:
        """The frames of a run the server keeps (GET {url}/runs/{runId}/events): from its first
        event, or those after the event id `after` (sent as Last-Event-ID), following the run
        live until its terminal event. Resumed when it breaks off, as `frames` is. HttpError 404
        for a run the server does not hold, 400 for a cursor the run never produced."""
        return self._stream(self._rejoin(run_id, after, position))

    def rejoin_frames_sync(
        self, run_id: str, *, after: str | None = None, position: StreamPosition | None = None
    ) -> Iterator[Frame]:
        """The same as `rejoin_frames`, for code without an event loop."""
        return self._stream_sync(self._rejoin(run_id, after, position))

    def connect_frames(
        self,
        thread_id: str,
        /,
        *,
        history: History = "compact",
        position: StreamPosition | None = None,
    ) -> AsyncIterator[Frame]:
        """The frames of a thread the server keeps (GET {url}/threads/{threadId}/events): its
        history, "compact" (the server's snapshots of its messages and state, in one synthetic
        run) or "full" (every stored event, `?history=full`), then its live run, followed until
        it ends. HttpError 404 for a thread the server holds nothing of. The live run's frames
        carry ids (the history's do not): a cut inside it is resumed as in `frames`; a cut in
        the history is a TransportError (connect again)."""
        return self._stream(self._connect(thread_id, history, position))

    def connect_frames_sync(
        self,
        thread_id: str,
        /,
        *,
        history: History = "compact",
        position: StreamPosition | None = None,
    ) -> Iterator[Frame]:
        """The same as `connect_frames`, for code without an event loop."""
        return self._stream_sync(self._connect(thread_id, history, position))

    async def _stream(self, request: _Request) -> AsyncGenerator[Frame]:
        own = self.client is None
        client = self.client or httpx.AsyncClient(timeout=self.timeout)
        resumer = _Resumer(self, request)
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
                        async for chunk in response.aiter_bytes():
                            for data in frames.feed(chunk):
                                yield data
                        for data in frames.close(partial=not resumer.wanted()):
                            yield data
                except (httpx.HTTPError, httpx.InvalidURL, HttpError) as exc:
                    wait: float | None = resumer.broke(exc, seen)
                else:
                    wait = resumer.ended(seen)
                if wait is None:
                    return
                await asyncio.sleep(wait)
        finally:
            if own:
                await client.aclose()

    def _stream_sync(self, request: _Request) -> Generator[Frame]:
        own = self.sync_client is None
        client = self.sync_client or httpx.Client(timeout=self.timeout)
        resumer = _Resumer(self, request)
        try:
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
                        for chunk in response.iter_bytes():
                            yield from frames.feed(chunk)
                        yield from frames.close(partial=not resumer.wanted())
                except (httpx.HTTPError, httpx.InvalidURL, HttpError) as exc:
                    wait: float | None = resumer.broke(exc, seen)
                else:
                    wait = resumer.ended(seen)
                if wait is None:
                    return
                time.sleep(wait)
        finally:
            if own:
                client.close()

    # ── events ───────────────────────────────────────────────────────────────────────────────

    async def run(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> AsyncIterator[Received]:
        """POST the input; yield each event as it arrives."""
        request = self._post(input, position)
        async with aclosing(self._stream(request)) as frames:
            async for data in frames:
                yield self._event(data, request.position.frames)

    def run_sync(
        self, input: RunAgentInput, *, position: StreamPosition | None = None
    ) -> Iterator[Received]:
        """The same as `run`, for code without an event loop."""
        request = self._post(input, position)
        with closing(self._stream_sync(request)) as frames:
            for data in frames:
                yield self._event(data, request.position.frames)

    async def rejoin(
        self, run_id: str, *, after: str | None = None, position: StreamPosition | None = None
    ) -> AsyncIterator[Received]:
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
    ) -> AsyncIterator[Received]:
        """`connect_frames`, decoded: the thread's history, then its live run. To hydrate a
        conversation (messages, state, pending interrupts), use `Conversation.connect`."""
        request = self._connect(thread_id, history, position)
        async with aclosing(self._stream(request)) as frames:
            async for data in frames:
                yield self._event(data, request.position.frames)

    def _event(self, data: Frame, count: int) -> Received:
        # `count`: the frame's number (the position is updated before a frame is handed over).
        warnings: list[Problem] = []
        event = decode_frame(data, count, strict=self.strict, warnings=warnings)
        for warning in warnings:
            log.warning("frame %d: %s", count, warning)
        return cast(Received, event)

    # ── stopping a run ───────────────────────────────────────────────────────────────────────

    async def stop(self, run_id: str) -> None:
        """Ask the server to stop a run (POST {url}/runs/{runId}/stop), wherever it executes; the
        run then ends with RUN_FINISHED whose outcome is cancelled. HttpError 404 for a run the
        server does not hold, 409 for a run already finished (with the server's message);
        TransportError when the server cannot be reached."""
        url = endpoint(self.url, "runs", run_id, "stop")
        own = self.client is None
        client = self.client or httpx.AsyncClient(timeout=self.timeout)
        try:
            async with client.stream(
                "POST",
                url,
                headers={"accept": "application/json", **self.headers},
                timeout=self._request_timeout(own),
                follow_redirects=True,
            ) as response:
                if not response.is_success:
                    raise _http_error(response, await _error_body_async(response))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._failure(exc, url) from exc
        finally:
            if own:
                await client.aclose()

    def stop_sync(self, run_id: str) -> None:
        """The same as `stop`, for code without an event loop."""
        url = endpoint(self.url, "runs", run_id, "stop")
        own = self.sync_client is None
        client = self.sync_client or httpx.Client(timeout=self.timeout)
        try:
            with client.stream(
                "POST",
                url,
                headers={"accept": "application/json", **self.headers},
                timeout=self._request_timeout(own),
                follow_redirects=True,
            ) as response:
                if not response.is_success:
                    raise _http_error(response, _error_body(response))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._failure(exc, url) from exc
        finally:
            if own:
                client.close()

    # ── capabilities ─────────────────────────────────────────────────────────────────────────

    async def capabilities(self) -> AgentCapabilities:
        """What the agent declares it can do (GET {url}/capabilities): an AgentCapabilities whose
        left-out fields are unknown, not unsupported. Decoded tolerantly (unknown members
        removed, each logged on "agui.client"), or strictly with `strict`. HttpError for a non-2xx
        answer (404 from a server that serves no capabilities); StreamError for an answer that is
        not JSON or not an AgentCapabilities (with the problems); TransportError when the server
        cannot be reached."""
        url = endpoint(self.url, "capabilities")
        own = self.client is None
        client = self.client or httpx.AsyncClient(timeout=self.timeout)
        try:
            response = await client.get(
                url,
                headers={"accept": "application/json", **self.headers},
                timeout=self._request_timeout(own),
                follow_redirects=True,
            )
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._failure(exc, url) from exc
        finally:
            if own:
                await client.aclose()
        return self._capabilities(response)

    def capabilities_sync(self) -> AgentCapabilities:
        """The same as `capabilities`, for code without an event loop."""
        url = endpoint(self.url, "capabilities")
        own = self.sync_client is None
        client = self.sync_client or httpx.Client(timeout=self.timeout)
        try:
            response = client.get(
                url,
                headers={"accept": "application/json", **self.headers},
                timeout=self._request_timeout(own),
                follow_redirects=True,
            )
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._failure(exc, url) from exc
        finally:
            if own:
                client.close()
        return self._capabilities(response)

    def _capabilities(self, response: httpx.Response) -> AgentCapabilities:
        body = response.content
        if not response.is_success:
            raise _http_error(response, body[:_MAX_ERROR_BODY])
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
        return capabilities


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


class _Resumer:
    """The resuming of one stream: whether a break is mended, where and when to reconnect, and
    what the consumer gets when it is not."""

    def __init__(self, agent: HttpAgent, request: _Request) -> None:
        self.agent = agent
        self.request = request
        self.position = request.position
        self.policy = agent.resume if request.resumable else None
        self.agent_url: str | httpx.URL = agent.url
        """The agent's URL, as the POST's answer came from (after redirects)."""
        self.reconnecting = False
        self.attempt = 0
        """Reconnects in a row that brought no new frame."""

    def wanted(self) -> bool:
        """Whether the stream, were it to end now, would be resumed: resuming is on, the server
        sent ids, and the run's terminal event has not arrived."""
        position = self.position
        return (
            self.policy is not None
            and self.policy.attempts > 0
            and position.last_event_id is not None
            and not position.finished
        )

    def opened(self, response: httpx.Response) -> _Frames | _ProtoFrames:
        """A 2xx answer: its frame reader."""
        if self.request.method == "POST" and not self.reconnecting:
            self.agent_url = response.url
        return self.agent._reader(response, self.position)

    def broke(self, exc: Exception, seen: int) -> float:
        """The connection failed with `exc` (`seen`: the frames before it was opened): the seconds
        to wait before reconnecting; raises what the consumer gets when it is not resumed."""
        if isinstance(exc, HttpError):
            if not self.reconnecting:
                raise exc
            if exc.status not in _RETRY_STATUSES:
                raise self._give_up(str(exc), exc, final=True)
            return self._next(str(exc), exc, seen)
        if not self.wanted():
            raise self.agent._failure(exc, self.request.url) from exc
        return self._next(_transport_message(str(self.request.url), exc), exc, seen)

    def ended(self, seen: int) -> float | None:
        """The answer ended cleanly: None when the stream is over (its run ended, it cannot be
        resumed, or a reconnect brought nothing: the server has nothing more), else the seconds
        to wait before reconnecting."""
        if not self.wanted() or self.position.frames == seen:
            return None
        return self._next("the answer ended before the run's terminal event", None, seen)

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
        request.headers = {"accept": _SSE, **self.agent.headers, "last-event-id": cursor}
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
            messages = self.sse.feed(chunk)
        except SSEError as exc:
            at = position.frames + 1
            raise StreamError(f"frame {at}: {exc}", frame=at) from None
        for message in messages:
            position.frames += 1
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


def _http_error(response: httpx.Response, body: bytes) -> HttpError:
    """The HttpError of a non-2xx answer: the server's text; for a JSON answer with an "error"
    (AgentApp's `{"error", "problems": [...]}`), that error and the problems it lists."""
    text = body.decode("utf-8", "replace").strip() or "(no body)"
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        return HttpError(response.status_code, text)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return HttpError(response.status_code, text)
    error = value.get("error") if isinstance(value, dict) else None
    if not isinstance(error, str):
        return HttpError(response.status_code, text)
    listed = value.get("problems")
    problems = tuple(
        Problem(
            str(item.get("pointer", "")), str(item.get("kind", "")), str(item.get("message", ""))
        )
        for item in (listed if isinstance(listed, list) else ())
        if isinstance(item, dict)
    )
    return HttpError(response.status_code, error, problems)


_TIMEOUTS = {
    httpx.ConnectTimeout: "connecting to",
    httpx.WriteTimeout: "sending the request to",
    httpx.PoolTimeout: "waiting for a free connection to",
}


def _transport_message(url: str, exc: Exception) -> str:
    """One sentence naming the URL and what went wrong."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        doing = _TIMEOUTS.get(type(exc), "waiting for data from")
        return f"Timed out {doing} {url} ({type(exc).__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"Cannot connect to {url}: {detail}"
    if isinstance(exc, httpx.TooManyRedirects):
        return f"Too many redirects from {url}"
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return f"Cannot request {url}: {detail}"
    return f"{type(exc).__name__} while talking to {url}: {detail}"
