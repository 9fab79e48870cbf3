"""agui: the AG-UI protocol for Python, generated from one canonical spec.

Every model class, enum and union of the spec is available here (`agui.RunAgentInput`,
`agui.TextMessageContentEvent`, `agui.Role`, `agui.Event`, `agui.Message`, ...), with a small set
of hand-written names: the codec (`decode`, `encode`, ...), SSE and protobuf framing, the errors,
the `Agent` protocol, the ASGI server `AgentApp`, the httpx client `HttpAgent`, and the client-side
stream processing (`Pipeline`, `Conversation`). The model agent is `agui.model`; everything else is
imported from the layer that holds it (`agui.wire`, `agui.agent`, `agui.stream`, `agui.http`,
`agui.cli`).

Nothing is imported until it is first used (PEP 562), so `import agui` loads neither the models
nor httpx, uvicorn, jsonpatch or protobuf.

What agui warns about is data (the `warnings` lists) and is logged on the "agui" loggers
("agui.stream", "agui.client"); the "agui" logger has a NullHandler, so nothing is printed unless
the application configures logging.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

import agui_generated as _generated

if TYPE_CHECKING:
    from agui_generated import *  # noqa: F403 - the generated models are the public API

    from agui import model as model
    from agui.agent.protocol import Agent as Agent
    from agui.errors import (
        EncodeError as EncodeError,
        ExpiredInterruptError as ExpiredInterruptError,
        HttpError as HttpError,
        InterruptError as InterruptError,
        PendingInterruptsError as PendingInterruptsError,
        ProtocolError as ProtocolError,
        StreamError as StreamError,
        TransportError as TransportError,
    )
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
    "Conversation": "agui.stream.conversation",
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

# A library never prints on its own: without this, Python's "last resort" handler would print the
# warnings on stderr when the application configured no logging.
logging.getLogger("agui").addHandler(logging.NullHandler())


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
