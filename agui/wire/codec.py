"""encode and decode: wire JSON <-> the generated models.

The per-definition work is generated (agui_generated.codec and its runtime, which also turns an
event of an unknown type into UnknownEvent and reports tolerant-mode warnings); this module adds
the JSON text layer (orjson), stream frames (`decode_frame`) and wire names (`wire_name`). The
cattrs converter and the codec tables are re-exported here for code that needs them (they are
not among `agui`'s own names).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar, overload

import attrs
import orjson
from agui_generated import DecodeError, Event, Problem, UnknownEvent
from agui_generated._runtime import report
from agui_generated.codec import DEFINITIONS, DISCRIMINATORS, TAGS, decode_value, encode_value
from agui_generated.converter import configure_converter, make_converter

from agui.errors import EncodeError, StreamError

__all__ = [
    "DEFINITIONS",
    "DISCRIMINATORS",
    "TAGS",
    "UnknownEvent",
    "configure_converter",
    "decode",
    "decode_frame",
    "decode_json",
    "dumps",
    "encode",
    "make_converter",
    "to_json",
    "wire_name",
]

T = TypeVar("T")


@overload
def decode(
    data: bytes | bytearray | memoryview | str,
    cls: type[T],
    *,
    strict: bool = ...,
    warnings: list[Problem] | None = ...,
) -> T: ...
@overload
def decode(
    data: bytes | bytearray | memoryview | str,
    cls: Any = ...,
    *,
    strict: bool = ...,
    warnings: list[Problem] | None = ...,
) -> Any: ...
def decode(
    data: bytes | bytearray | memoryview | str,
    cls: Any = Event,
    *,
    strict: bool = False,
    warnings: list[Problem] | None = None,
) -> Any:
    """Decode one JSON document as `cls` (a model class or a union such as `agui.Event`).

    strict=True accepts exactly the contract. The default, tolerant mode is for receivers: unknown
    members and unknown union members are removed and reported as warnings, and an event of an
    unknown type comes back as UnknownEvent. A known member with a wrong type is an error in both
    modes, and nothing is coerced. Warnings are appended to `warnings` when a list is given, else
    logged on the "agui" logger. Raises DecodeError listing every problem with its JSON pointer.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError([Problem("", "json", f"not valid JSON: {exc}")]) from None
    result, found = decode_value(value, cls, strict, cls is Event)
    if found:
        return report(result, found, value, warnings)
    return result


def decode_json(
    value: Any, cls: Any = Event, *, strict: bool = False, warnings: list[Problem] | None = None
) -> Any:
    """Like decode, for a document already parsed into Python JSON values."""
    result, found = decode_value(value, cls, strict, cls is Event)
    if found:
        return report(result, found, value, warnings)
    return result


def to_json(obj: Any) -> Any:
    """The JSON object of a model, as Python values (wire names, spec order, absent omitted)."""
    try:
        return encode_value(obj)
    except (TypeError, AttributeError) as exc:
        raise EncodeError(f"cannot encode {type(obj).__name__}: {exc}") from None


def encode(obj: Any) -> bytes:
    """Compact JSON bytes of a model: wire names, spec order, absent optional members omitted."""
    try:
        return orjson.dumps(encode_value(obj))
    except (TypeError, AttributeError):  # orjson.JSONEncodeError is a TypeError
        return _encode_slowly(obj)


def _encode_slowly(obj: Any) -> bytes:
    """The rare cases: an UnknownEvent, JSON nested deeper than orjson writes, or something that
    is not JSON at all."""
    try:
        return dumps(to_json(obj))
    except EncodeError:
        raise
    except (TypeError, ValueError, RecursionError) as exc:
        raise EncodeError(f"cannot encode {type(obj).__name__}: {exc}") from None


def dumps(value: Any) -> bytes:
    """Compact JSON of plain Python values. orjson stops at 255 levels of nesting while decoding
    accepts more, so deeper values go through the standard library, written the same way."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        if "ecursion" not in str(exc):
            raise
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def decode_frame(
    data: bytes | bytearray | memoryview | str | dict[str, Any],
    frame: int,
    *,
    strict: bool = False,
    warnings: list[Problem] | None = None,
) -> Any:
    """Decode the event carried by frame number `frame` of a stream (its JSON text, or the object
    a binary frame held). A frame that is not a valid event raises StreamError naming the frame,
    with the problems found: every consumer of a stream (HttpAgent, Pipeline) fails alike."""
    try:
        if isinstance(data, dict):
            return decode_json(data, strict=strict, warnings=warnings)
        return decode(data, strict=strict, warnings=warnings)
    except DecodeError as exc:
        if isinstance(data, dict):
            preview = str(data)[:80]
        else:
            text = data if isinstance(data, str) else bytes(data[:80]).decode("utf-8", "replace")
            preview = text[:80]
        raise StreamError(
            f"frame {frame} is not a valid AG-UI event ({exc.problems[0]}): {preview!r}",
            frame=frame,
            problems=exc.problems,
        ) from None


def wire_name(cls: type, attribute: str) -> str:
    """The wire name of a model attribute (`wire_name(ToolMessage, "tool_call_id")` is
    "toolCallId"), read from the generated class, so hand-written code that builds or edits wire
    JSON directly never restates a key the spec defines."""
    name: str = attrs.fields_dict(cls)[attribute].metadata["wire"]
    return name
