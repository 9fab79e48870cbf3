"""HttpAgent: a remote AG-UI agent over httpx, itself an Agent.

`async for event in HttpAgent(url).run(input)` POSTs the input and yields typed events as their
frames arrive; `run_sync` does the same without asyncio. Closing the iterator early closes the
response (and so the connection), which tells the server to stop the run. With `binary=True` the
request asks for the protobuf transport; whichever the server answers (by its Content-Type) is
read, and an answer that is neither (an HTML page, a JSON document) is a StreamError naming its
content type.

Redirects are followed as `fetch` follows them (307 and 308 repeat the POST with its body; 301,
302 and 303 become a GET). A non-2xx answer is an HttpError (with the problems of a JSON answer
such as AgentApp's 400); a timeout or a failed connection is a TransportError naming the URL, with
httpx's exception as its `__cause__`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, TypeAlias, cast

import httpx
import orjson
from agui_generated import DecodeError, Event, Problem, RunAgentInput, UnknownEvent

from agui.errors import HttpError, ProtoStreamError, SSEError, StreamError, TransportError
from agui.wire.codec import decode_frame, encode
from agui.wire.proto import (
    DEFAULT_MAX_PROTO_FRAME_BYTES,
    PROTO_MEDIA_TYPE,
    ProtoFrameDecoder,
    decode_proto_json,
)
from agui.wire.sse import DEFAULT_MAX_FRAME_BYTES, SSEDecoder

__all__ = ["HttpAgent"]

log = logging.getLogger("agui.client")

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)

Received: TypeAlias = Event | UnknownEvent
"""What HttpAgent.run yields: an event of the spec, or (tolerant decoding) one of a type this
package does not know, kept whole."""


class _Unset:
    """The default of HttpAgent's timeout: distinguishes "not given" from None (no timeout)."""


_UNSET = _Unset()
_SSE = "text/event-stream"
_MAX_ERROR_BODY = 64 * 1024


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

    def __call__(self, input: RunAgentInput, /) -> AsyncIterator[Received]:
        return self.run(input)

    def _request_timeout(self, own: bool) -> Any:
        return self.timeout if own or self._timeout_given else httpx.USE_CLIENT_DEFAULT

    def _request_headers(self) -> dict[str, str]:
        accept = f"{PROTO_MEDIA_TYPE}, text/event-stream;q=0.5" if self.binary else _SSE
        return {"content-type": "application/json", "accept": accept, **self.headers}

    def _reader(self, response: httpx.Response) -> _Frames | _ProtoFrames:
        """The frame reader for the answer's content type; StreamError for anything but SSE or
        (asked for or not) the protobuf media type."""
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media == PROTO_MEDIA_TYPE:
            return _ProtoFrames(min(self.max_frame_bytes, DEFAULT_MAX_PROTO_FRAME_BYTES))
        if media == _SSE:
            return _Frames(self.max_frame_bytes)
        expected = f"{PROTO_MEDIA_TYPE} or {_SSE}" if self.binary else _SSE
        raise StreamError(
            f"expected {expected}, got {media or 'no content type'} "
            f"(HTTP {response.status_code} from {response.url})"
        )

    def _failure(self, exc: Exception) -> TransportError:
        return TransportError(_transport_message(self.url, exc), url=self.url)

    async def frames(self, input: RunAgentInput) -> AsyncIterator[bytes | dict[str, Any]]:
        """POST the input; yield each frame as it arrives, undecoded (for a pipeline that decodes,
        and reports what it strips, itself): the data of an SSE frame, or the JSON object read
        from a protobuf frame (not yet checked against the spec)."""
        body = encode(input)
        own = self.client is None
        client = self.client or httpx.AsyncClient(timeout=self.timeout)
        try:
            async with client.stream(
                "POST",
                self.url,
                content=body,
                headers=self._request_headers(),
                timeout=self._request_timeout(own),
                follow_redirects=True,
            ) as response:
                if not response.is_success:
                    raise _http_error(response, await _error_body_async(response))
                frames = self._reader(response)
                async for chunk in response.aiter_bytes():
                    for data in frames.feed(chunk):
                        yield data
                for data in frames.close():
                    yield data
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._failure(exc) from exc
        finally:
            if own:
                await client.aclose()

    def frames_sync(self, input: RunAgentInput) -> Iterator[bytes | dict[str, Any]]:
        """The same as `frames`, for code without an event loop."""
        body = encode(input)
        own = self.sync_client is None
        client = self.sync_client or httpx.Client(timeout=self.timeout)
        try:
            with client.stream(
                "POST",
                self.url,
                content=body,
                headers=self._request_headers(),
                timeout=self._request_timeout(own),
                follow_redirects=True,
            ) as response:
                if not response.is_success:
                    raise _http_error(response, _error_body(response))
                frames = self._reader(response)
                for chunk in response.iter_bytes():
                    yield from frames.feed(chunk)
                yield from frames.close()
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._failure(exc) from exc
        finally:
            if own:
                client.close()

    async def run(self, input: RunAgentInput) -> AsyncIterator[Received]:
        """POST the input; yield each event as it arrives."""
        count = 0
        async for data in self.frames(input):
            count += 1
            yield self._event(data, count)

    def run_sync(self, input: RunAgentInput) -> Iterator[Received]:
        """The same as `run`, for code without an event loop."""
        for count, data in enumerate(self.frames_sync(input), 1):
            yield self._event(data, count)

    def _event(self, data: bytes | dict[str, Any], count: int) -> Received:
        warnings: list[Problem] = []
        event = decode_frame(data, count, strict=self.strict, warnings=warnings)
        for warning in warnings:
            log.warning("frame %d: %s", count, warning)
        return cast(Received, event)


class _Frames:
    """SSE bytes -> frame data, numbering frames so an error can name the one that broke."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.sse = SSEDecoder(max_frame_bytes)
        self.count = 0

    # Generators, not lists: each frame is handed out before the next is looked at, so the
    # frames before a broken one reach the caller however the bytes were chunked.
    def feed(self, chunk: bytes) -> Iterator[bytes]:
        try:
            messages = self.sse.feed(chunk)
        except SSEError as exc:
            raise StreamError(f"frame {self.count + 1}: {exc}", frame=self.count + 1) from None
        for message in messages:
            self.count += 1
            yield message.data

    def close(self) -> Iterator[bytes]:
        try:
            messages = self.sse.close()
        except SSEError as exc:
            raise StreamError(f"frame {self.count + 1}: {exc}", frame=self.count + 1) from None
        for message in messages:
            self.count += 1
            yield message.data


class _ProtoFrames:
    """Protobuf frame bytes -> each frame's event as a JSON object, numbering frames."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.decoder = ProtoFrameDecoder(max_frame_bytes)
        self.count = 0

    def feed(self, chunk: bytes) -> Iterator[dict[str, Any]]:
        try:
            messages = self.decoder.feed(chunk)
        except ProtoStreamError as exc:
            raise StreamError(str(exc), frame=self.count + 1) from None
        for message in messages:
            self.count += 1
            try:
                yield decode_proto_json(message)
            except DecodeError as exc:
                raise StreamError(
                    f"frame {self.count}: {exc.problems[0].message}",
                    frame=self.count,
                    problems=exc.problems,
                ) from None

    def close(self) -> Iterator[dict[str, Any]]:
        try:
            self.decoder.close()
        except ProtoStreamError as exc:
            raise StreamError(str(exc), frame=self.count + 1) from None
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
