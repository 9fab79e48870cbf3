"""encode and decode: wire JSON <-> the generated models.

The per-definition work is generated (agui_generated.codec); this module adds the JSON text layer
(orjson), the tolerant treatment of unknown event types, and where warnings go.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TypeVar, overload

import attrs
import orjson
from agui_generated import DecodeError, Event, Problem, decode_value, encode_value
from agui_generated._runtime import DROP, describe

__all__ = ["EncodeError", "UnknownEvent", "decode", "decode_json", "encode", "to_json"]

T = TypeVar("T")
log = logging.getLogger("agui")


class EncodeError(ValueError):
    """A model could not be written as JSON (a value inside it is not JSON, or it is no model)."""


@attrs.frozen(kw_only=True)
class UnknownEvent:
    """An event whose type this package does not know, kept whole so it can be forwarded.

    Only tolerant decoding produces it (with a warning); strict decoding rejects the type."""

    type: str
    """The event's type string, as received."""
    raw: dict[str, Any]
    """The whole event object, as received."""


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
        return _warned(result, found, value, warnings)
    return result


def decode_json(
    value: Any, cls: Any = Event, *, strict: bool = False, warnings: list[Problem] | None = None
) -> Any:
    """Like decode, for a document already parsed into Python JSON values."""
    result, found = decode_value(value, cls, strict, cls is Event)
    if found:
        return _warned(result, found, value, warnings)
    return result


def _warned(result: Any, found: list[Problem], value: Any, warnings: list[Problem] | None) -> Any:
    if result is DROP:  # an event of a type this package does not know
        tag = value["type"]
        found = [
            Problem(
                "/type",
                "unknown_tag",
                f"unknown event type {describe(tag)}; passed on as UnknownEvent",
            )
        ]
        result = UnknownEvent(type=tag, raw=value)
    if warnings is not None:
        warnings.extend(found)
    else:
        for problem in found:
            log.warning("%s", problem)
    return result


def to_json(obj: Any) -> Any:
    """The JSON object of a model, as Python values (wire names, spec order, absent omitted)."""
    if type(obj) is UnknownEvent:
        return obj.raw
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
