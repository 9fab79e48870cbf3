"""agui: the AG-UI protocol for Python, generated from one canonical spec.

Every model class, enum and union of the spec is available here (`agui.RunAgentInput`,
`agui.TextMessageContentEvent`, `agui.Role`, `agui.Event`, `agui.Message`, ...), with a small set
of hand-written names: the codec (`decode`, `encode`, ...), SSE and protobuf framing, the errors,
the `Agent` protocol, the ASGI servers `AgentApp` and `AgentServer` (several agents), the httpx
client `HttpAgent`, and the client-side stream processing (`Pipeline`, `Conversation`). The model
agent is `agui.model`; everything else is imported from the layer that holds it (`agui.wire`,
`agui.agent`, `agui.stream`, `agui.http`, `agui.cli`).

Nothing is imported until it is first used (PEP 562), so `import agui` loads neither the models
nor httpx, uvicorn, jsonpatch or protobuf.

Logging: every record is on a logger under "agui". What an operator must act on, the warnings and
errors of serving ("agui.server", "agui.agent", "agui.model", "agui.adapters": a failing agent's
traceback, an event refused, a request refused), reaches stderr under any ASGI server even when
the application configures no logging: a fallback handler on "agui" writes it there (time, level,
logger, message, traceback) when no other handler of the record's loggers would take it (a
NullHandler does not count), so once the application, `agui serve` or `uvicorn --log-config`
configures a handler that receives agui's records, each is written once, by that handler. What
the caller gets as data anyway (the warnings lists of "agui.stream", "agui.client" and the codec's
"agui") is never printed by agui. See docs/errors.md (Logging).
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import TYPE_CHECKING, Any

import agui_generated as _generated

if TYPE_CHECKING:
    from agui_generated import *  # noqa: F403 - the generated models are the public API

    from agui import model as model
    from agui.agent.protocol import Agent as Agent
    from agui.errors import (
        ConnectError as ConnectError,
        ConversationBusyError as ConversationBusyError,
        EncodeError as EncodeError,
        ExpiredInterruptError as ExpiredInterruptError,
        HttpError as HttpError,
        InterruptError as InterruptError,
        PendingInterruptsError as PendingInterruptsError,
        ProtocolError as ProtocolError,
        StreamError as StreamError,
        Timeout as Timeout,
        TransportError as TransportError,
    )
    from agui.http.agents import AgentServer as AgentServer
    from agui.http.client import HttpAgent as HttpAgent
    from agui.http.server import AgentApp as AgentApp
    from agui.stream.conversation import Conversation as Conversation
    from agui.stream.pipeline import Pipeline as Pipeline
    from agui.stream.reducer import RunResult as RunResult
    from agui.stream.warning import StreamWarning as StreamWarning
    from agui.wire.codec import (
        decode as decode,
        decode_json as decode_json,
        encode as encode,
        to_json as to_json,
    )
    from agui.wire.proto import decode_proto as decode_proto, encode_proto as encode_proto
    from agui.wire.pydantic import from_pydantic as from_pydantic, to_pydantic as to_pydantic
    from agui.wire.sse import SSEDecoder as SSEDecoder, sse_frame as sse_frame

# The hand-written public names and the module that defines each.
_HOMES: dict[str, str] = {
    "Agent": "agui.agent.protocol",
    "AgentApp": "agui.http.server",
    "AgentServer": "agui.http.agents",
    "ConnectError": "agui.errors",
    "Conversation": "agui.stream.conversation",
    "ConversationBusyError": "agui.errors",
    "EncodeError": "agui.errors",
    "ExpiredInterruptError": "agui.errors",
    "HttpAgent": "agui.http.client",
    "HttpError": "agui.errors",
    "InterruptError": "agui.errors",
    "PendingInterruptsError": "agui.errors",
    "Pipeline": "agui.stream.pipeline",
    "ProtocolError": "agui.errors",
    "RunResult": "agui.stream.reducer",
    "SSEDecoder": "agui.wire.sse",
    "StreamError": "agui.errors",
    "StreamWarning": "agui.stream.warning",
    "Timeout": "agui.errors",
    "TransportError": "agui.errors",
    "decode": "agui.wire.codec",
    "decode_json": "agui.wire.codec",
    "decode_proto": "agui.wire.proto",
    "encode": "agui.wire.codec",
    "encode_proto": "agui.wire.proto",
    "from_pydantic": "agui.wire.pydantic",
    "sse_frame": "agui.wire.sse",
    "to_json": "agui.wire.codec",
    "to_pydantic": "agui.wire.pydantic",
}

__all__ = sorted([*_HOMES, *_generated.__all__])


class _Fallback(logging.Handler):
    """Writes a warning or an error of agui's serving loggers to stderr when no other handler of
    the record's loggers would: Python's logging.lastResort, made for agui. Unlike lastResort it
    is not defeated by a NullHandler (the one agui used to add kept a failing agent's traceback
    off stderr unless the application configured logging), it formats with the time, the level
    and the logger's name, and it leaves alone the loggers whose warnings the caller gets as
    data. Once a handler of the application's takes a record, this one stands back: nothing is
    written twice."""

    QUIET = ("agui.stream", "agui.client")
    """Loggers (with "agui" itself, the codec's) whose records are data the caller receives
    anyway (warnings lists, exceptions), which `agui run` prints itself: only logging the
    application configures shows them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.set_name("agui.stderr")
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def handle(self, record: logging.LogRecord) -> bool:
        if record.name == "agui" or record.name.startswith(self.QUIET):
            return False
        if self._taken_elsewhere(record):
            return False
        return super().handle(record)

    def _taken_elsewhere(self, record: logging.LogRecord) -> bool:
        """Whether a handler other than this one (and no NullHandler) on the record's logger or
        the loggers it propagates to takes the record's level."""
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None:
            for handler in logger.handlers:
                if (
                    handler is not self
                    and not isinstance(handler, logging.NullHandler)
                    and record.levelno >= handler.level
                ):
                    return True
            if not logger.propagate:
                return False
            logger = logger.parent
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            stream = sys.stderr  # looked up now, as lastResort does: it may have been replaced
            if stream is not None:
                stream.write(text + "\n")
                stream.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


def _install_fallback() -> None:
    logger = logging.getLogger("agui")
    for old in [h for h in logger.handlers if h.get_name() == "agui.stderr"]:
        logger.removeHandler(old)  # a reloaded agui: one fallback, or each would defer to the other
    logger.addHandler(_Fallback())


_install_fallback()


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
    elif name in _generated.__all__:
        value = getattr(_generated, name)
    elif name == "model":
        value = importlib.import_module("agui.model")
    else:
        raise AttributeError(f"module 'agui' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "model"})
