"""agui: the AG-UI protocol for Python, generated from one canonical spec.

Every model class, enum and union of the spec is available here (`agui.RunAgentInput`,
`agui.TextMessageContentEvent`, `agui.Role`, `agui.Event`, `agui.Message`, ...), with `encode`
and `decode` for the wire form, SSE framing, the `Agent` protocol, the ASGI server `AgentApp` and
the httpx client `HttpAgent`.
"""

import agui_generated as _generated
from agui_generated import *  # noqa: F403 - the generated models are the public API

from agui.agent import Agent
from agui.client import HttpAgent, HttpError, StreamError
from agui.codec import EncodeError, UnknownEvent, decode, decode_json, encode, to_json
from agui.server import AgentApp
from agui.sse import SSEDecoder, SSEError, SSEMessage, sse_frame

__all__ = [
    "Agent",
    "AgentApp",
    "EncodeError",
    "HttpAgent",
    "HttpError",
    "SSEDecoder",
    "SSEError",
    "SSEMessage",
    "StreamError",
    "UnknownEvent",
    "decode",
    "decode_json",
    "encode",
    "sse_frame",
    "to_json",
]
__all__ += _generated.__all__
