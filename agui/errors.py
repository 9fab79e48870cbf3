"""Every exception agui raises on purpose, under one root.

    AguiError                      the root (defined by the generated runtime, which never
    │                              imports agui, so the generated DecodeError can derive from it)
    ├── DecodeError                a document does not satisfy the spec; .problems
    ├── EncodeError                a value cannot be written as an AG-UI document
    ├── StreamError                an event stream cannot be consumed; .frame, .problems
    │   ├── SSEError               an SSE frame over the size limit
    │   ├── ProtoStreamError       a binary frame over the limit, or a stream cut mid-frame
    │   └── ProtocolError          the events break a rule the client enforces; .event
    ├── HttpError                  the server answered with a non-2xx status; .status
    ├── InterruptError             an interrupt cannot be answered that way
    │   ├── PendingInterruptsError the next run would leave interrupts unanswered
    │   └── ExpiredInterruptError  an expired interrupt answered with anything but a cancel
    ├── ModelError                 (agui.model) the language model failed
    └── ToolError                  (agui.model) a server tool reports a failure to the model

A bad frame raises StreamError whichever way the stream is consumed (HttpAgent.run, Pipeline,
Conversation.run); DecodeError is for documents decoded on their own. DecodeError, EncodeError,
SSEError, ProtoStreamError and InterruptError are also ValueErrors, as they were before the root.
"""

from __future__ import annotations

from agui_generated._runtime import AguiError, DecodeError, Problem

__all__ = [
    "AguiError",
    "DecodeError",
    "EncodeError",
    "ExpiredInterruptError",
    "HttpError",
    "InterruptError",
    "PendingInterruptsError",
    "ProtoStreamError",
    "ProtocolError",
    "SSEError",
    "StreamError",
]


class EncodeError(AguiError, ValueError):
    """A value could not be written as JSON: something inside it is not JSON, or it is no model."""


class StreamError(AguiError):
    """An event stream cannot be consumed: a frame is not a valid event, is too large, or the
    stream breaks off. `frame` is the 1-based number of the frame at fault, when known;
    `problems` what decoding found wrong with it."""

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
    """The stream broke a rule the client enforces; the run is rejected. `event` is the 0-based
    index of the offending event in the stream as received, when known."""

    def __init__(self, message: str, *, event: int | None = None) -> None:
        self.event = event
        super().__init__(message)


class HttpError(AguiError):
    """The server answered with a non-2xx status. `message` is the server's text (or JSON)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(f"HTTP {status}: {message}")


class InterruptError(AguiError, ValueError):
    """An interrupt cannot be answered the way it was asked to be."""


class PendingInterruptsError(InterruptError):
    """The next run would leave pending interrupts unanswered."""


class ExpiredInterruptError(InterruptError):
    """An interrupt past its expiresAt was answered with anything but a cancellation."""
