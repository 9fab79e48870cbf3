"""Every exception agui raises on purpose, under one root.

    AguiError                      the root (defined by the generated runtime, which never
    │                              imports agui, so the generated DecodeError and EncodeError
    │                              can derive from it)
    ├── DecodeError                a document does not satisfy the spec; .problems
    ├── EncodeError                a value cannot be written as an AG-UI document; .pointer,
    │                              .message
    ├── StreamError                an event stream cannot be consumed; .frame, .problems
    │   ├── SSEError               an SSE frame over the size limit
    │   ├── ProtoStreamError       a binary frame over the limit, or a stream cut mid-frame
    │   └── ProtocolError          the events break a rule the client enforces; .event
    ├── HttpError                  the server answered with a non-2xx status; .status, .url,
    │                              .headers, .body (an excerpt), .problems, .attempts
    ├── TransportError             the request or the response failed; .url, .attempts, the
    │   │                          httpx exception as __cause__
    │   ├── ConnectError           the connection could not be made (refused, a name that does
    │   │                          not resolve, a failed TLS handshake)
    │   └── Timeout                a timeout: connecting, sending, waiting for data, or for a
    │                              free connection of the pool
    ├── InterruptError             an interrupt cannot be answered that way
    │   ├── PendingInterruptsError the next run would leave interrupts unanswered
    │   └── ExpiredInterruptError  an expired interrupt answered with anything but a cancel
    ├── ConversationBusyError      a Conversation already applies another stream; also a
    │                              RuntimeError (also in agui.stream.conversation)
    ├── MissingExtraError          an option needs an extra of agui-spec that is not (wholly)
    │                              installed; .extra, .missing; also an ImportError
    ├── PatchLimitError            a JSON Patch would build a document past its node limit;
    │                              .pointer, .limit (the Reducer and the run lifecycle turn it
    │                              into ProtocolError; also in agui.stream.patch)
    ├── StoreError                 the event log cannot do what was asked (also in agui.store)
    │   ├── StoreUnavailable       the backend failed, not the request (the disk, the connection)
    │   ├── ThreadBusy             the thread already has a running run (HTTP 409)
    │   ├── RunExists              a run with this id was already started (HTTP 409)
    │   └── UnknownRun             no run with this id is in the log (HTTP 404)
    ├── ModelError                 the language model failed; .code, .message, .status (also in
    │                              agui.model)
    └── ToolError                  a server tool reports a failure to the model (also in
                                   agui.model)

Every exception a caller can catch is defined here (or, for the three of the generated runtime,
re-exported); the modules that raise them import them from here. What agui raises and catches
inside itself (a request refused before any event, a run abandoned by its worker) derives from
Exception, never from AguiError: `except AguiError` catches nothing of the plumbing.

A bad frame raises StreamError whichever way the stream is consumed (HttpAgent.run, Pipeline,
Conversation.run); DecodeError is for documents decoded on their own. DecodeError, EncodeError,
SSEError, ProtoStreamError and InterruptError are also ValueErrors, as they were before the root.

One numbering everywhere: frames and events are counted from 1, in the order they were received
(the first frame of a stream is frame 1 and carries event 1). StreamError.frame,
ProtocolError.event and StreamWarning.event are such numbers, and so are the "frame N" and
"event N" of the messages. A stage used on its own (a Verifier fed directly) counts the events it
was fed, from 1.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Mapping

from agui_generated._runtime import AguiError, DecodeError, EncodeError, Problem

__all__ = [
    "BODY_EXCERPT",
    "EXTRAS",
    "AguiError",
    "ConnectError",
    "ConversationBusyError",
    "DecodeError",
    "EncodeError",
    "ExpiredInterruptError",
    "HttpError",
    "InterruptError",
    "MissingExtraError",
    "ModelError",
    "PatchLimitError",
    "PendingInterruptsError",
    "ProtoStreamError",
    "ProtocolError",
    "RunExists",
    "SSEError",
    "StoreError",
    "StoreUnavailable",
    "StreamError",
    "ThreadBusy",
    "Timeout",
    "ToolError",
    "TransportError",
    "UnknownRun",
    "missing_modules",
    "require_extra",
]

BODY_EXCERPT = 512
"""The most bytes of an error answer's body an HttpError keeps (`body`), and of its text in the
message of an answer that is not AgentApp's JSON error."""


class StreamError(AguiError):
    """An event stream cannot be consumed: a frame is not a valid event, is too large, the stream
    breaks off, or the answer is no event stream at all (its content type). `frame` is the number
    of the frame at fault (counted from 1, as received), when known; `problems` what decoding
    found wrong with it."""

    def __init__(
        self, message: str, *, frame: int | None = None, problems: tuple[Problem, ...] = ()
    ) -> None:
        self.frame = frame
        self.problems = problems
        super().__init__(message)


class SSEError(StreamError, ValueError):
    """The byte stream is not acceptable SSE (a frame over the size limit)."""


class ProtoStreamError(StreamError, ValueError):
    """A binary stream is broken: a frame over the size limit, or a stream that ends mid-frame."""


class ProtocolError(StreamError):
    """The stream broke a rule the client enforces; the run is rejected. `event` is the number of
    the offending event in the stream (counted from 1, as received), when known; `frame` is the
    same number (the frame that carried it)."""

    def __init__(self, message: str, *, event: int | None = None) -> None:
        self.event = event
        super().__init__(message, frame=event)


class HttpError(AguiError):
    """The server answered with a non-2xx status. `message` is the server's text (its first
    BODY_EXCERPT bytes), or the "error" of a JSON answer such as AgentApp's 400 (`{"error": ...,
    "problems": [...]}`); `problems` holds that answer's problems (empty otherwise). `url` is the
    URL that answered (after redirects; None when unknown), `headers` the answer's headers
    (case-insensitive for HttpAgent's: `headers["Retry-After"]`), `body` the first BODY_EXCERPT
    bytes of the answer, and `attempts` how many times the request was made (retries included).
    Its text names the URL: `HTTP 503: overloaded (from http://host/agent)`."""

    def __init__(
        self,
        status: int,
        message: str,
        problems: tuple[Problem, ...] = (),
        *,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        attempts: int = 1,
    ) -> None:
        self.status = status
        self.message = message
        self.problems = problems
        self.url = url
        self.headers: Mapping[str, str] = {} if headers is None else headers
        self.body = body[:BODY_EXCERPT]
        self.attempts = attempts
        super().__init__(self._text())

    def _text(self) -> str:
        problems = self.problems
        listed = "".join(f"; {problem}" for problem in problems[:5])
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        where = [] if self.url is None else [f"from {self.url}"]
        if self.attempts > 1:
            where.append(f"after {self.attempts} attempts")
        said = f" ({', '.join(where)})" if where else ""
        return f"HTTP {self.status}: {self.message}{listed}{more}{said}"

    def __str__(self) -> str:
        return self._text()


class TransportError(AguiError):
    """The request could not be made or its answer could not be read: a timeout, a refused or
    broken connection, too many redirects, a URL that cannot be requested. `url` is the URL
    asked for; `attempts` how many times the request was made (retries included, said in the
    text when more than one); the underlying httpx exception is the `__cause__`."""

    def __init__(self, message: str, *, url: str, attempts: int = 1) -> None:
        self.url = url
        self.attempts = attempts
        super().__init__(message)

    def __str__(self) -> str:
        text = super().__str__()
        return text if self.attempts <= 1 else f"{text} (after {self.attempts} attempts)"


class ConnectError(TransportError):
    """The connection could not be made: refused, a host name that does not resolve, a TLS
    handshake that failed (httpx.ConnectError). Nothing reached the server."""


class Timeout(TransportError):
    """A timeout: connecting (httpx.ConnectTimeout), sending the request, waiting for data
    between two reads (httpx.ReadTimeout: a silent server without keep-alive comments), or for a
    free connection of the pool."""


class InterruptError(AguiError, ValueError):
    """An interrupt cannot be answered the way it was asked to be."""


class PendingInterruptsError(InterruptError):
    """The next run would leave pending interrupts unanswered."""


class ExpiredInterruptError(InterruptError):
    """An interrupt past its expiresAt was answered with anything but a cancellation."""


class ConversationBusyError(AguiError, RuntimeError):
    """A run (or a stream, follow, consume or connect) was started on a Conversation that is
    already applying another stream: the two would interleave one thread's history. Await the
    first (close a `stream()` left open), or use another Conversation."""


class PatchLimitError(AguiError):
    """A JSON Patch would build a document over its node limit. `pointer` names the operation
    (`/delta/19`), `limit` the limit."""

    def __init__(self, message: str, *, pointer: str, limit: int) -> None:
        self.pointer = pointer
        self.limit = limit
        super().__init__(message)


class StoreError(AguiError):
    """The event log cannot do what was asked (the backend failed, or the request conflicts)."""


class StoreUnavailable(StoreError):
    """The backend failed, not the request: the disk is full, the file is read-only or was
    deleted, the connection is lost. The same call may work later; nothing says whether a write
    that failed so was stored. (Redis raises a plain StoreError whose `__cause__` is redis-py's
    error; a conflict has no cause.)"""


class ThreadBusy(StoreError):
    """The thread already has a running run, and the new one must wait for it (HTTP 409)."""


class RunExists(StoreError):
    """A run with this id was already started (HTTP 409)."""


class UnknownRun(StoreError):
    """No run with this id is in the log (HTTP 404)."""


class ModelError(AguiError):
    """The model could not answer. `code` (e.g. MODEL_HTTP_ERROR) and `message` end the run in a
    RUN_ERROR as they are, so they never carry a key or a provider's response body."""

    def __init__(self, code: str, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


class ToolError(AguiError):
    """Raise it from a tool to give the model an error result with this message."""


EXTRAS: dict[str, tuple[str, ...]] = {
    "otel": (
        "opentelemetry.trace",
        "opentelemetry.sdk.trace",
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    ),
    "redis": ("redis.asyncio",),
    "metrics": ("prometheus_client",),
    "proto": ("google.protobuf",),
    "pydantic": ("pydantic",),
    "server": ("uvicorn", "starlette"),
}
"""For each extra of agui-spec (pyproject's optional-dependencies), the modules agui imports from
what it brings. (The redis extra's hiredis is not among them: redis-py reads replies with it when
it is installed, and without it in pure Python; `agui.store.open_log` warns then.)"""


class MissingExtraError(AguiError, ImportError):
    """An option needs modules an extra of agui-spec brings, and some are not installed. The
    message names the option, the modules missing and the install line; `extra` is the extra's
    name, `missing` the modules not found."""

    def __init__(self, what: str, extra: str, missing: Iterable[str]) -> None:
        self.extra = extra
        self.missing = tuple(missing)
        super().__init__(
            f"{what} needs the {extra} extra, not wholly installed here (missing: "
            f"{', '.join(self.missing)}): pip install 'agui-spec[{extra}]'"
        )


def require_extra(extra: str, what: str, modules: Iterable[str] | None = None) -> None:
    """Refuse now (MissingExtraError) an option that would fail on a missing module later: every
    module of `modules` (default: all the extra's, EXTRAS[extra]) must be importable. Found
    without importing them (their parent packages are imported)."""
    missing = missing_modules(modules or EXTRAS[extra])
    if missing:
        raise MissingExtraError(what, extra, missing)


def missing_modules(modules: Iterable[str]) -> list[str]:
    """Those of `modules` that cannot be imported (found without importing them)."""
    return [name for name in modules if not _found(name)]


def _found(name: str) -> bool:
    parts = name.split(".")
    for end in range(1, len(parts) + 1):  # a package set to None blocks its loaded modules too
        if sys.modules.get(".".join(parts[:end]), name) is None:
            return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing
        return False
