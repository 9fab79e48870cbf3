"""encode and decode: wire JSON <-> the generated models.

The per-definition work is generated (agui_generated.codec and its runtime, which also turns an
event of an unknown type into UnknownEvent and reports tolerant-mode warnings). Both directions
check: decoding what it reads, encoding what it writes (EncodeError with a JSON pointer, before
anything is written). This module adds
the JSON text layer (orjson), stream frames (`decode_frame`) and wire names (`wire_name`). The
cattrs converter and the codec tables are re-exported here for code that needs them (they are
not among `agui`'s own names).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs
import orjson
from agui_generated import DecodeError, Event, Problem, UnknownEvent
from agui_generated._runtime import (
    _SHALLOW_TEXT,
    MAX_WARNINGS,
    document_nests_deeper,
    dumps_checked,
    json_fragment,
    report,
)
from agui_generated.codec import (
    AGAIN,
    DEFINITIONS,
    DISCRIMINATORS,
    ENCODERS as _ENCODERS,
    TAGS,
    decode_event,
    decode_value,
    encode_fragments,
    encode_value,
)

from agui.errors import EncodeError, StreamError

if TYPE_CHECKING:  # loaded on first use (__getattr__ below)
    from agui_generated.converter import configure_converter, make_converter

__all__ = [
    "DEFINITIONS",
    "DISCRIMINATORS",
    "MAX_WARNINGS",
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

# Bound here, not looked up per call: the compiler calls a method of an imported name as an
# attribute (a new bound method each time), which costs a tenth of encoding a small event.
_orjson_dumps = orjson.dumps
_loads = orjson.loads
_encoder_of = _ENCODERS.get
_FRAGMENTS = json_fragment


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
    modes, and nothing is coerced. An any-JSON value (state, metadata, ...) may nest at most
    MAX_JSON_DEPTH (128) levels of arrays and objects, the limit encoding has: a deeper one is an
    error of kind "depth" at the array or object one level too deep. Warnings are appended to
    `warnings` when a list is given, else logged on the "agui" logger: at most MAX_WARNINGS (20)
    of a kind, then one of that kind (pointer "") saying how many more were removed. Raises
    DecodeError listing every problem with its JSON pointer.
    """
    try:
        value = _loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError([Problem("", "json", f"not valid JSON: {exc}")]) from None
    # A document no deeper than the limit (nearly all: most are too short or have too few
    # brackets to be) cannot hold a value deeper than it; only a deeper one has its values measured.
    # (A short text cannot: that test is inlined here, a call costs a tenth of a small event.)
    deep = len(data) > _SHALLOW_TEXT and document_nests_deeper(data, value)
    if cls is Event:
        result = decode_event(value, strict, deep)
        if result is not AGAIN:
            return result
    result, found = decode_value(value, cls, strict, cls is Event, deep)
    if found:
        return report(result, found, value, warnings)
    return result


def decode_json(
    value: Any, cls: Any = Event, *, strict: bool = False, warnings: list[Problem] | None = None
) -> Any:
    """Like decode, for a document already parsed into Python JSON values."""
    return decode_parsed(value, cls, strict, warnings, deep=True)


def decode_loaded(
    data: bytes | str,
    value: Any,
    cls: Any,
    *,
    strict: bool = False,
    warnings: list[Problem] | None = None,
    reshaped: bool = False,
) -> Any:
    """Like decode, for `value`, which the caller parsed from `data` already (a parse saved:
    the server reads a request's ids before it decodes). `reshaped`: the caller changed `value`
    since (an upgrade), so its nesting is measured rather than judged from `data`."""
    deep = reshaped or (len(data) > _SHALLOW_TEXT and document_nests_deeper(data, value))
    return decode_parsed(value, cls, strict, warnings, deep=deep)


def decode_parsed(
    value: Any, cls: Any, strict: bool, warnings: list[Problem] | None, *, deep: bool
) -> Any:
    """decode_json, told whether the document may nest its any-JSON values deeper than
    MAX_JSON_DEPTH (deep=False: a reader that refused deeper ones already, the binary form's)."""
    result, found = decode_value(value, cls, strict, cls is Event, deep)
    if found:
        return report(result, found, value, warnings)
    return result


def to_json(obj: Any) -> Any:
    """The JSON object of a model, as Python values (wire names, spec order, absent omitted).

    Checked as `encode` checks it; raises EncodeError."""
    try:
        return encode_value(obj)
    except (TypeError, AttributeError) as exc:  # a half-built model (object.__new__)
        raise EncodeError(f"cannot encode {type(obj).__name__}: {exc}") from None


def encode(obj: Any) -> bytes:
    """Compact JSON bytes of a model: wire names, spec order, absent optional members omitted.

    Everything written is checked first, so what comes out is a valid document: the JSON type of
    every member (a str; an int, not a bool; a bool; a model of the class, or of a member class of
    the union, the spec names; a tuple or list of them), enum members (the enum or one of its
    exact strings), the bounds, patterns and minItems the spec declares, required members that
    are None, and any-JSON values (state, results, metadata, patch values, rawEvent ...), which
    must be JSON: dicts with str keys, lists, tuples, str, int, finite floats, bool and None; no
    NaN or infinity, sets, bytes, datetimes or other objects. Enum members and UUIDs inside
    any-JSON values are written as orjson writes them (the member's value, the UUID's string).
    An UnknownEvent (what tolerant decoding makes of an event of a type this package does not
    know) is written as received, and checked the same way: its `raw` must be JSON, an object
    whose type is UnknownEvent.type, and that type no event this package knows.

    Raises EncodeError for the first problem found: `.pointer` is where, in wire names
    (``/messageId``, ``/snapshot/x``), and str(error) starts with it
    (``/messageId: expected a string, got int 5``). Nothing is written then. Something that is no
    model (a dict, for instance) is an EncodeError saying how to build one."""
    encoder = _encoder_of(type(obj))  # encode_fragments, inlined: this is the hot path
    if encoder is None:
        return orjson.dumps(encode_fragments(obj))  # raises: not a model
    try:
        return _orjson_dumps(encoder(obj, _FRAGMENTS))
    except (TypeError, AttributeError):  # orjson.JSONEncodeError is a TypeError
        return _encode_slowly(obj)


def _encode_slowly(obj: Any) -> bytes:
    """The rare cases orjson does not write: an integer beyond 64 bits or a string with a lone
    surrogate among a model's scalars (the latter an EncodeError with its pointer)."""
    value = to_json(obj)
    return dumps_checked(value)


def dumps(value: Any) -> bytes:
    """Compact JSON of plain Python values. orjson stops at 254 levels of nesting (what agui
    decodes and encodes stays far inside: MAX_JSON_DEPTH), so deeper values of other origins go
    through the standard library, written the same way."""
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


def decode_event_bytes(data: bytes, frame: int, strict: bool, warnings: list[Problem]) -> Any:
    """`decode_frame` of a frame's JSON bytes (the hot path of a stream: one call, no keywords);
    the warnings, if any, are appended to `warnings`."""
    try:
        value = _loads(data)
        deep = len(data) > _SHALLOW_TEXT and document_nests_deeper(data, value)
        result = decode_event(value, strict, deep)
        if result is not AGAIN:
            return result
        result, found = decode_value(value, Event, strict, True, deep)
    except (orjson.JSONDecodeError, DecodeError):
        # Not an event: decode_frame says why, as it does for every stream.
        return decode_frame(data, frame, strict=strict, warnings=warnings)
    if found:
        return report(result, found, value, warnings)
    return result


def wire_name(cls: type, attribute: str) -> str:
    """The wire name of a model attribute (`wire_name(ToolMessage, "tool_call_id")` is
    "toolCallId"), read from the generated class, so hand-written code that builds or edits wire
    JSON directly never restates a key the spec defines."""
    name: str = attrs.fields_dict(cls)[attribute].metadata["wire"]
    return name


def __getattr__(name: str) -> Any:
    """The cattrs converter's two functions, loaded on first use: neither decoding nor encoding
    needs cattrs, whose import (with typing_extensions) cost this module about 10 ms with
    bytecode caches and 35 ms without."""
    if name in ("configure_converter", "make_converter"):
        from agui_generated import converter

        value = getattr(converter, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
