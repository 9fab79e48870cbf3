"""The binary transport: each event one protobuf `ag_ui.Event`, framed by its length.

A stream served as `application/vnd.ag-ui.event+proto` is a sequence of frames, each a 4-byte
big-endian length followed by that many bytes of a serialized `ag_ui.Event` (the .proto files are
generated/proto/ag_ui/). The bytes equal those @ag-ui/proto 1.0.0 writes for the same event.

Encoding and decoding need no protobuf runtime: the generated codec (agui_generated.proto_wire)
writes and reads the wire form itself, which is what makes the bytes identical (no runtime writes
object entries in JavaScript's order) and keeps the key order of objects. `to_message` and
`from_message` convert to and from the protobuf runtime's message objects, for code that works
with those (`pip install 'agui-spec[proto]'`).
"""

from __future__ import annotations

from typing import Any, Protocol

from agui_generated import DecodeError, Event, Problem

from agui.errors import EncodeError, ProtoStreamError, require_extra
from agui.wire.codec import decode_parsed, to_json

__all__ = [
    "DEFAULT_MAX_PROTO_FRAME_BYTES",
    "PROTO_MEDIA_TYPE",
    "ProtoFrameDecoder",
    "ProtoStreamError",
    "accepts_proto",
    "decode_proto",
    "decode_proto_json",
    "encode_proto",
    "from_message",
    "proto_frame",
    "to_message",
]

PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
"""The media type of the binary stream. Served with no parameters: the TypeScript client compares
the Content-Type with this string exactly."""

DEFAULT_MAX_PROTO_FRAME_BYTES = 10 * 1024 * 1024
"""The TypeScript client's limit on one message: a larger length prefix is an error."""

_MIB = 1024 * 1024


class _Wire(Protocol):
    """What this module uses of agui_generated.proto_wire."""

    @property
    def ProtoEncodeError(self) -> type[Exception]: ...
    @property
    def ProtoDecodeError(self) -> type[Exception]: ...
    def encode_event(self, event: dict[str, Any], /) -> bytes: ...
    def decode_event(self, data: bytes, /) -> dict[str, Any]: ...


_wire: _Wire | None = None
"""agui_generated.proto_wire, once the first binary event is written or read. The generated codec
(107 KB of source) loads then, not with this module, which the client and the server import for
the media type and the content negotiation of every request (it costs 1 ms with bytecode caches,
about 45 ms without)."""


def _load_wire() -> _Wire:
    global _wire
    from agui_generated import proto_wire

    _wire = proto_wire
    return proto_wire


def encode_proto(event: Any) -> bytes:
    """The serialized `ag_ui.Event` of an event (no length prefix). Raises EncodeError for what
    the binary form cannot carry: an UnknownEvent, a value that is not JSON, or JSON values nested
    deeper than MAX_JSON_DEPTH (128) levels (which `encode` refuses as well)."""
    value = to_json(event)
    wire = _wire or _load_wire()
    try:
        return wire.encode_event(value)
    except wire.ProtoEncodeError as exc:
        raise EncodeError(f"cannot encode {type(event).__name__} as protobuf: {exc}") from None


def proto_frame(event: Any) -> bytes:
    """One event as a frame of the binary stream: its length (4 bytes, big-endian), then it."""
    message = encode_proto(event)
    return len(message).to_bytes(4, "big") + message


def decode_proto_json(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """A serialized `ag_ui.Event` -> the event's JSON object, not yet checked against the spec
    (decode_json does that). An envelope holding only an event this version does not know comes
    back as {"type": "(unknown ag_ui.Event arm N)"}, which tolerant decoding passes on as an
    UnknownEvent. Raises DecodeError (kind "protobuf") for bytes that are not one event."""
    wire = _wire or _load_wire()
    try:
        return wire.decode_event(bytes(data))
    except wire.ProtoDecodeError as exc:
        raise DecodeError(
            [Problem("", "protobuf", f"failed to decode protocol buffer message: {exc}")]
        ) from None


def decode_proto(
    data: bytes | bytearray | memoryview,
    *,
    strict: bool = False,
    warnings: list[Problem] | None = None,
) -> Any:
    """A serialized `ag_ui.Event` -> the event, checked as `agui.decode` checks JSON (strict or
    tolerant, with the same warnings). The reader refuses values nested deeper than
    MAX_JSON_DEPTH itself, so the check does not measure them again."""
    return decode_parsed(decode_proto_json(data), Event, strict, warnings, deep=False)


class ProtoFrameDecoder:
    """Feed it network chunks; it returns the complete messages (without their length prefix).

    A length prefix over `max_frame_bytes` raises ProtoStreamError at once, before the bytes
    arrive; `close()` raises ProtoStreamError when the stream ended inside a frame. The messages
    completed before a broken frame in the same chunk are returned first (the error comes with
    the next call)."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_PROTO_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.frames = 0
        """How many frames were completed so far."""
        self._buffer = bytearray()
        self._error: ProtoStreamError | None = None

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[bytes]:
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        buffer += chunk
        out: list[bytes] = []
        pos = 0
        while len(buffer) - pos >= 4:
            size = int.from_bytes(buffer[pos : pos + 4], "big")
            if size > self.max_frame_bytes:
                self._error = ProtoStreamError(
                    f"protobuf frame {self.frames + 1}: message size {size} bytes exceeds the "
                    f"maximum of {self.max_frame_bytes} bytes"
                    + (" (10 MB)" if self.max_frame_bytes == 10 * _MIB else "")
                )
                break
            if len(buffer) - pos - 4 < size:
                break
            out.append(bytes(buffer[pos + 4 : pos + 4 + size]))
            pos += 4 + size
            self.frames += 1
        del buffer[:pos]
        if self._error is not None and not out:
            raise self._error
        return out

    def close(self) -> None:
        """End of stream: raises ProtoStreamError if it ended inside a frame."""
        if self._error is not None:
            raise self._error
        if self._buffer:
            raise ProtoStreamError(
                f"the binary stream ended mid-frame: {len(self._buffer)} trailing bytes could not "
                "be read as a complete message"
            )


def accepts_proto(accept: str | bytes | None) -> bool:
    """Whether an Accept header asks for the binary stream: it must name
    application/vnd.ag-ui.event+proto itself, with a q above 0. Wildcards (`*/*`,
    `application/*`) do not count, so curl and browsers keep getting readable SSE."""
    if not accept:
        return False
    if isinstance(accept, bytes):
        accept = accept.decode("latin-1")
    for entry in accept.split(","):
        media, *params = entry.split(";")
        if media.strip().lower() != PROTO_MEDIA_TYPE:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0  # an unreadable weight is no request
        if q > 0:
            return True
    return False


# ── the protobuf runtime's message objects ───────────────────────────────────────────────────
def _pb2() -> Any:
    require_extra("proto", "to_message/from_message (the protobuf runtime)")
    from agui_generated import proto_pb2

    return proto_pb2


def to_message(event: Any) -> Any:
    """An event as an `ag_ui.Event` message of the protobuf runtime (google.protobuf)."""
    return _pb2().Event.FromString(encode_proto(event))


def from_message(
    message: Any, *, strict: bool = False, warnings: list[Problem] | None = None
) -> Any:
    """An `ag_ui.Event` message of the protobuf runtime -> the event."""
    return decode_proto(message.SerializeToString(), strict=strict, warnings=warnings)
