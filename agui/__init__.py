"""agui: the AG-UI protocol for Python, generated from one canonical spec.

Every model class, enum and union of the spec is available here (`agui.RunAgentInput`,
`agui.TextMessageContentEvent`, `agui.Role`, `agui.Event`, `agui.Message`, ...), with `encode`
and `decode` for the wire form, SSE framing, the `Agent` protocol, the ASGI server `AgentApp`, the
httpx client `HttpAgent`, the client-side stream processing (`Pipeline`, `Conversation`),
`to_pydantic`/`from_pydantic` for the generated pydantic binding (`agui_pydantic`), and the binary
protobuf transport (`encode_proto`, `decode_proto`, `proto_frame`, `ProtoFrameDecoder`,
`to_message`/`from_message`).
"""

import agui_generated as _generated
from agui_generated import *  # noqa: F403 - the generated models are the public API

from agui.agent import Agent
from agui.chunks import ChunkExpander
from agui.client import HttpAgent, HttpError, StreamError
from agui.codec import EncodeError, UnknownEvent, decode, decode_json, encode, to_json
from agui.conversation import Conversation, ExpiredInterruptError, PendingInterruptsError
from agui.model import ModelAgent, OpenAIChatModel, ScriptedModel, to_prompt, tool
from agui.pipeline import Pipeline
from agui.proto import (
    DEFAULT_MAX_PROTO_FRAME_BYTES,
    PROTO_MEDIA_TYPE,
    ProtoFrameDecoder,
    ProtoStreamError,
    accepts_proto,
    decode_proto,
    decode_proto_json,
    encode_proto,
    from_message,
    proto_frame,
    to_message,
)
from agui.pydantic import from_pydantic, to_pydantic
from agui.reducer import Reducer, RunResult
from agui.server import AgentApp
from agui.sse import SSEDecoder, SSEError, SSEMessage, sse_frame
from agui.stream import ProtocolError, StreamWarning
from agui.verify import Verifier

__all__ = [
    "ModelAgent",
    "OpenAIChatModel",
    "ScriptedModel",
    "to_prompt",
    "tool",
    "DEFAULT_MAX_PROTO_FRAME_BYTES",
    "PROTO_MEDIA_TYPE",
    "Agent",
    "AgentApp",
    "ChunkExpander",
    "Conversation",
    "EncodeError",
    "ExpiredInterruptError",
    "HttpAgent",
    "HttpError",
    "PendingInterruptsError",
    "Pipeline",
    "ProtoFrameDecoder",
    "ProtoStreamError",
    "ProtocolError",
    "Reducer",
    "RunResult",
    "SSEDecoder",
    "SSEError",
    "SSEMessage",
    "StreamError",
    "StreamWarning",
    "UnknownEvent",
    "Verifier",
    "accepts_proto",
    "decode",
    "decode_json",
    "decode_proto",
    "decode_proto_json",
    "encode",
    "encode_proto",
    "from_message",
    "from_pydantic",
    "proto_frame",
    "sse_frame",
    "to_json",
    "to_message",
    "to_pydantic",
]
__all__ += _generated.__all__
