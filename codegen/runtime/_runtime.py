"""Support shared by the generated decoders and encoders: problem records, the decode context,
the errors, the check of any-JSON values, and the slow paths that run only when a value is wrong.
The fast paths live inline in codec.py."""

import functools
import json
import logging
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, Final, NoReturn, TypeVar, cast

import attrs
import orjson

from . import _formats

# A location is a linked list of (parent, key) pairs; () is the document root. Building a pointer
# string for every value would cost more than the decode itself, so it happens only on a problem.
At = tuple[Any, ...]

MISSING: Final = object()
DROP: Final = object()
"""Returned by a union decoder for a member it removed (tolerant mode); lists filter it out."""


def pointer(at: At) -> str:
    """The RFC 6901 JSON Pointer of a location, in wire names."""
    parts: list[str] = []
    while at:
        at, key = at
        parts.append(segment(key))
    return "".join("/" + p for p in reversed(parts))


def segment(key: Any) -> str:
    """One reference token of a JSON Pointer: "~" and "/" escaped."""
    return str(key).replace("~", "~0").replace("/", "~1")


@attrs.frozen
class Problem:
    """One thing wrong (or, as a warning, removed) in a document."""

    pointer: str
    """Where, as a JSON Pointer in wire names; "" is the whole document."""
    kind: str
    """What kind of problem: json, type, missing, null, unknown_property, unknown_tag, enum, const,
    range, pattern, format, min_items, depth, or too_large."""
    message: str
    """A plain sentence saying what is wrong."""

    def __str__(self) -> str:
        return f"{self.pointer or '(document)'}: {self.message}"


class AguiError(Exception):
    """The root of every exception the package raises on purpose (agui.errors draws the tree).

    It lives here because generated code never imports the hand-written layer."""


class EncodeError(AguiError, ValueError):
    """A value cannot be written as an AG-UI document: a member of the wrong type, a value the spec
    rules out (an enum value, a bound, a pattern, minItems), something that is not JSON inside an
    any-JSON value, or an object that is no model.

    `pointer` says where, as a JSON Pointer in wire names ("/messages/2/content", "" for the value
    itself); `message` says what is wrong. str(error) is "<pointer>: <message>"."""

    def __init__(self, message: str, *, pointer: str = "") -> None:
        self.pointer = pointer
        self.message = message
        super().__init__(f"{pointer}: {message}" if pointer else message)

    def within(self, key: str | int) -> "EncodeError":
        """The same error seen from the parent: `key` (a wire name or an index) goes in front of
        the pointer. The encoders call it while the error travels up, so a pointer is only ever
        built for a value that fails."""
        self.pointer = "/" + segment(key) + self.pointer
        self.args = (f"{self.pointer}: {self.message}",)
        return self


class DecodeError(AguiError, ValueError):
    """A document does not satisfy the contract. `problems` lists every problem found."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        lines = [str(p) for p in self.problems[:20]]
        if len(self.problems) > 20:
            lines.append(f"... and {len(self.problems) - 20} more")
        super().__init__("\n".join(lines))


@attrs.frozen(kw_only=True)
class UnknownEvent:
    """An event whose type this package does not know, kept whole so it can be forwarded.

    Only tolerant decoding produces it (with a warning); strict decoding rejects the type. It
    encodes as it was received."""

    type: str
    """The event's type string, as received."""
    raw: dict[str, Any]
    """The whole event object, as received."""


_log = logging.getLogger("agui")

_Build = TypeVar("_Build", bound=Callable[..., Any])


def _native() -> Callable[[type, tuple[str, ...]], Callable[..., Any]] | None:
    if os.environ.get("AGUI_PURE_PYTHON"):
        return None
    try:
        from ._construct import constructor
    except ImportError:  # not built (no compiler, or AGUI_PURE_PYTHON=1 when it was built)
        return None
    return constructor


native_constructor: Final = _native()


def constructor(cls: type, names: tuple[str, ...], fallback: _Build) -> _Build:
    """What a decoder makes its instance with: `fallback`, the generated function that stores the
    values of `names` (cls's slots, in order) one member descriptor at a time, or the same built
    in C (_construct.c, compiled where the build found a compiler; AGUI_PURE_PYTHON=1 leaves it
    unused), which stores them in one call, about a third of decoding a small event in Python."""
    if native_constructor is None:
        return fallback
    try:
        return cast(_Build, native_constructor(cls, names))
    except TypeError:  # a class it cannot build safely (a __dict__, a custom __new__)
        return fallback


def report(result: Any, found: list[Problem], value: Any, warnings: list[Problem] | None) -> Any:
    """Finish a tolerant decode that found something: an event of an unknown type (DROP at the
    root) becomes an UnknownEvent, and the warnings go to `warnings`, or to the "agui" logger
    when no list is given. Every decoding entry point (agui.decode, the cattrs converter) ends
    here, so they report alike."""
    if result is DROP:
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
            _log.warning("%s", problem)
    return result


class Ctx:
    """The state of one decode call: strictness, whether any-JSON values must be measured (`deep`:
    unless the caller knows the document cannot nest deeper than MAX_JSON_DEPTH), and what was
    found so far."""

    __slots__ = ("deep", "dropped", "problems", "strict", "warned", "warnings")

    def __init__(self, strict: bool, deep: bool = True) -> None:
        self.strict = strict
        self.deep = deep
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.warned: dict[str, int] = {}  # warnings found, by kind (listed or not)
        self.dropped = 0

    def error(self, at: At, kind: str, message: str) -> None:
        self.problems.append(Problem(pointer(at), kind, message))

    def warn(self, at: At, kind: str, message: str) -> None:
        # Past MAX_WARNINGS of a kind, only counted: no pointer, no Problem (a body of a million
        # unknown members costs a count each, not a warning each).
        found = self.warned.get(kind, 0) + 1
        self.warned[kind] = found
        if found <= MAX_WARNINGS:
            self.warnings.append(Problem(pointer(at), kind, message))

    def listed(self) -> list[Problem]:
        """The warnings: the first MAX_WARNINGS of each kind, then, for a kind that had more, one
        of that kind (pointer "") saying how many more were found."""
        for kind, found in self.warned.items():
            if found > MAX_WARNINGS:
                more = found - MAX_WARNINGS
                self.warnings.append(
                    Problem("", kind, f"... and {more} more warnings of kind {kind}, not listed")
                )
        return self.warnings


MAX_WARNINGS: Final = 20
"""The most warnings of one kind a tolerant decode lists (as DecodeError's message lists the first
20 problems); the rest are counted, and one more warning of that kind says how many. A document
is read whole either way: this bounds what removing a million members costs to report."""


class Restart(Exception):
    """Raised by the shared first-pass context at the first problem or warning."""


class FirstPass(Ctx):
    """A shared, never-modified context for the first attempt at a document.

    Most documents are valid, so a decode first runs with this context (no allocation); the first
    problem or warning aborts that attempt and the document is decoded again with a fresh Ctx
    that collects everything. Sharing is safe across threads because nothing is ever stored."""

    __slots__ = ()

    def __init__(self, strict: bool, deep: bool) -> None:
        self.strict = strict
        self.deep = deep
        self.problems = []
        self.warnings = []
        self.warned = {}
        self.dropped = 0

    def error(self, at: At, kind: str, message: str) -> None:
        raise Restart

    def warn(self, at: At, kind: str, message: str) -> None:
        raise Restart


FIRST_PASS: Final = {
    deep: {True: FirstPass(True, deep), False: FirstPass(False, deep)} for deep in (True, False)
}
"""The shared first-pass contexts, by `deep`, then by `strict`."""


# ── nesting ────────────────────────────────────────────────────────────────────────────────────

MAX_JSON_DEPTH: Final = 128
"""The deepest an any-JSON value (state, a result, metadata, a patch value, a tool's parameters,
an unknown event) may nest, in levels of arrays and objects: the value itself is the first, so
`{}` and `[]` are one level and `[[1]]` two. Decoding refuses a deeper value (a Problem of kind
"depth" whose pointer is the array or object one level too deep) and encoding refuses it
(EncodeError, the same pointer), so whatever decodes encodes again; the binary form holds the
same (proto_wire.MAX_DEPTH, which the generator writes from this number).

It sits well inside what the libraries underneath take: orjson reads 1024 levels and writes 254
(since 3.11.5; `orjson.dumps` refuses the 255th), and the spec puts at most 6 levels of models
above an any-JSON value (RUN_STARTED.input.messages[i].toolCalls[j].metadata), so a document at
the limit is at most 134 levels deep: orjson writes it in one call, with 120 levels to spare, and
pydantic-core's parser (201 levels) reads it too. tests/test_nesting.py checks these numbers."""
_SHALLOW_TEXT: Final = 2 * MAX_JSON_DEPTH
"""JSON text this long or shorter cannot nest deeper (a level costs two brackets)."""
_WALK_BUDGET: Final = 256
"""Members a measure looks at itself before it asks orjson instead (nests_deeper)."""


def may_nest_deeper(text: bytes | bytearray | memoryview | str) -> bool:
    """Whether JSON text may nest deeper than MAX_JSON_DEPTH. False is certain: the text is too
    short, or it has too few opening brackets (counted at memchr speed); most documents are such."""
    if len(text) <= _SHALLOW_TEXT:
        return False
    if isinstance(text, str):
        objects = text.count("{")
        return objects > MAX_JSON_DEPTH or objects + text.count("[") > MAX_JSON_DEPTH
    if isinstance(text, memoryview):
        text = text.tobytes()  # no count() of its own
    objects = text.count(b"{")  # a second count only when the first does not settle it
    return objects > MAX_JSON_DEPTH or objects + text.count(b"[") > MAX_JSON_DEPTH


def document_nests_deeper(text: bytes | bytearray | memoryview | str, document: Any) -> bool:
    """Whether a document parsed from `text` nests deeper than MAX_JSON_DEPTH, the models around
    its values included: when it does not (nearly always), none of its any-JSON values can, and a
    decode need not measure them (decode_value's `deep`)."""
    return may_nest_deeper(text) and _nests_deeper_large(document)


def nests_deeper(value: Any) -> bool:
    """Whether an array or object (a dict, a list or a tuple) nests deeper than MAX_JSON_DEPTH.

    A small value is measured level by level; once that has looked at _WALK_BUDGET members,
    orjson is asked (_nests_deeper_large), which measures a large value at its own speed."""
    if type(value) is not dict and type(value) is not list:
        value = _container(value)  # a tuple, a subclass, an enum member holding one
        if value is None:
            return False
    level: list[Any] = [value]
    looked = 0
    for _ in range(MAX_JSON_DEPTH):
        inner: list[Any] = []
        for v in level:
            items = v.values() if isinstance(v, dict) else v
            looked += len(items)
            for x in items:
                t = type(x)
                if t is dict or t is list:
                    inner.append(x)
                elif not (t is str or t is int or t is float or t is bool or x is None):
                    x = _container(x)
                    if x is not None:
                        inner.append(x)
        if not inner:
            return False
        if looked > _WALK_BUDGET:
            return _nests_deeper_large(value)
        level = inner
    return True


def _container(value: Any) -> Any:
    """The array or object a value is written as (itself, or an enum member's value), or None."""
    if isinstance(value, Enum):
        value = value.value
    return value if isinstance(value, dict | list | tuple) else None


def _nests_deeper_large(value: Any) -> bool:
    """nests_deeper for a large value, asked of orjson: wrapped in one-item arrays, as many as
    orjson writes beyond MAX_JSON_DEPTH - 1 levels, it is written exactly when it nests no deeper
    than that, in about the time writing it takes (a walk takes several times as long). One level
    of slack, since orjson does not count an empty tuple: what it refuses (at or past the limit,
    or something else it does not write) is measured by a walk, and so is everything when
    orjson sets no nesting limit."""
    pad = _orjson_pad()
    if pad is not None:
        wrapped = value
        for _ in range(pad):
            wrapped = [wrapped]
        try:
            _dumps(wrapped, option=_JSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            return False
    return too_deep_at(value, ()) is not None


@functools.cache
def _orjson_pad() -> int | None:
    """How many one-item arrays make orjson.dumps refuse a value that nests MAX_JSON_DEPTH levels
    (orjson 3.11.5 and later write 254 levels: 127), found once by trying; None when orjson
    writes 1024 levels (releases before 3.11.5 set no limit)."""

    def nested(levels: int) -> Any:
        value: Any = 0
        for _ in range(levels):
            value = [value]
        return value

    def writes(levels: int) -> bool:
        try:
            _dumps(nested(levels))
        except TypeError:
            return False
        return True

    low, high = MAX_JSON_DEPTH, 1024
    if writes(high) or not writes(low):
        return None
    while high - low > 1:  # orjson writes `low` levels and refuses `high`
        middle = (low + high) // 2
        if writes(middle):
            low = middle
        else:
            high = middle
    return low - MAX_JSON_DEPTH + 1


def too_deep_at(value: Any, at: At) -> At | None:
    """The location of the first array or object (in document order) one level deeper than
    MAX_JSON_DEPTH in a value located at `at`; None when it nests no deeper."""
    stack: list[tuple[Any, At, int]] = [(value, at, 1)]
    while stack:
        v, where, level = stack.pop()
        t = type(v)
        if t is not dict and t is not list:
            v = _container(v)
            if v is None:
                continue
        if level > MAX_JSON_DEPTH:
            return where
        if isinstance(v, dict):
            stack.extend((x, (where, k), level + 1) for k, x in reversed(list(v.items())))
        else:
            stack.extend((x, (where, i), level + 1) for i, x in reversed(list(enumerate(v))))
    return None


def depth(cx: Ctx, value: Any, at: At) -> None:
    """Report an any-JSON array or object that nests deeper than MAX_JSON_DEPTH. The decoders call
    it for each such value when the document may nest that deep (cx.deep)."""
    if nests_deeper(value):
        found = too_deep_at(value, at)
        cx.error(
            at if found is None else found, "depth", f"nests deeper than {MAX_JSON_DEPTH} levels"
        )


def outside(value: Any, lo: float | None, hi: float | None) -> str:
    """What a range error says: the interval where both sides are bounded, else the one bound (a
    spec's `min: 0` alone gives "-2 must be ≥ 0", not an interval ending in None)."""
    if hi is None:
        return f"{describe(value)} must be ≥ {lo}"
    if lo is None:
        return f"{describe(value)} must be ≤ {hi}"
    return f"{describe(value)} is outside [{lo}, {hi}]"


def describe(value: Any) -> str:
    """A short, bounded rendering of a value for a message (never echoes a huge input)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:40]) + "..."
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= 40 else text[:40] + "..."
    return json_kind(value)


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def bad(cx: Ctx, d: dict[str, Any], at: At, key: str, expected: str) -> Any:
    """Report a member that is missing, null or of the wrong JSON type.

    A str subclass (a StrEnum member in values built in Python, e.g. by to_json) is a string."""
    where = (at, key)
    value = d.get(key)
    if expected == "a string" and isinstance(value, str):
        return str(value)
    if key not in d:
        cx.error(where, "missing", f"required member '{key}' is missing")
    elif d[key] is None:
        cx.error(where, "null", "null is not allowed here")
    else:
        cx.error(where, "type", f"expected {expected}, got {json_kind(d[key])}")
    return None


def bad_value(cx: Ctx, value: Any, at: At, expected: str) -> Any:
    """Report a value (an array item or a root) of the wrong JSON type."""
    if value is None:
        cx.error(at, "null", "null is not allowed here")
    else:
        cx.error(at, "type", f"expected {expected}, got {json_kind(value)}")
    return None


def int_(cx: Ctx, d: dict[str, Any], at: At, key: str, lo: int | None, hi: int | None) -> Any:
    """The slow path of an integer member: integral floats are integers (as in JSON Schema), the
    rest is reported. Strings and booleans are never coerced."""
    value = d.get(key)
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        if type(value) is float:
            cx.error((at, key), "type", f"expected an integer, got {describe(value)}")
            return None
        return bad(cx, d, at, key, "an integer")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        cx.error((at, key), "range", outside(value, lo, hi))
        return None
    return value


def number(cx: Ctx, d: dict[str, Any], at: At, key: str, lo: float | None, hi: float | None) -> Any:
    """The slow path of a number member: a finite integer or float within the bounds. Strings and
    booleans are never coerced; NaN and the infinities are no JSON numbers."""
    value = d.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return bad(cx, d, at, key, "a number")
    return number_at(cx, value, (at, key), lo, hi)


def int_at(cx: Ctx, value: Any, at: At, lo: int | None, hi: int | None) -> Any:
    """int_ for a value that is no member (an array item, an alternative of `A | B`)."""
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        if type(value) is float:
            cx.error(at, "type", f"expected an integer, got {describe(value)}")
            return None
        return bad_value(cx, value, at, "an integer")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        cx.error(at, "range", outside(value, lo, hi))
        return None
    return value


def number_at(cx: Ctx, value: Any, at: At, lo: float | None, hi: float | None) -> Any:
    """The slow path of a number that is no member: a finite int or float within the bounds."""
    if type(value) is not int and type(value) is not float:
        if isinstance(value, int | float) and not isinstance(
            value, bool
        ):  # a subclass built in Python
            value = float(value) if isinstance(value, float) else int(value)
        else:
            return bad_value(cx, value, at, "a number")
    if not math.isfinite(value):
        cx.error(at, "type", f"expected a number, got {describe(value)}, which is no JSON number")
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        cx.error(at, "range", outside(value, lo, hi))
        return None
    return value


def enum_at(cx: Ctx, value: Any, at: At, table: Mapping[str, Any]) -> Any:
    """enum for a value that is no member."""
    if isinstance(value, str) and str(value) in table:
        return table[str(value)]
    if not isinstance(value, str):
        return bad_value(cx, value, at, "a string")
    cx.error(at, "enum", f"{describe(value)} is not one of {', '.join(table)}")
    return None


def pattern_at(cx: Ctx, at: At, value: str, regex: str) -> Any:
    cx.error(at, "pattern", f"{describe(value)} does not match {regex}")
    return None


def format_at(cx: Ctx, at: At, value: str, fmt: str) -> Any:
    cx.error(at, "format", f"{describe(value)} is not {_formats.FORMATS[fmt]} (format {fmt})")
    return None


def min_items_at(cx: Ctx, at: At, minimum: int) -> None:
    cx.error(at, "min_items", f"needs at least {minimum} item{'s' if minimum != 1 else ''}")


def values(
    cx: Ctx, items: list[Any], at: At, decode: Callable[[Any, At, Ctx], Any]
) -> tuple[Any, ...]:
    """An array whose items one generated function checks (`_dv_N`); a union member it removed
    (tolerant mode) is left out."""
    before = cx.dropped
    out = [decode(item, (at, i), cx) for i, item in enumerate(items)]
    if cx.dropped != before:
        return tuple(item for item in out if item is not DROP)
    return tuple(out)


def json_items(cx: Ctx, items: list[Any], at: At) -> tuple[Any, ...]:
    """An array of any JSON values but null, each nesting no deeper than MAX_JSON_DEPTH."""
    for i, item in enumerate(items):
        if item is None:
            cx.error((at, i), "null", "null is not allowed here")
        elif cx.deep and (type(item) is dict or type(item) is list):
            depth(cx, item, (at, i))
    return tuple(items)


def tagged_items(
    cx: Ctx,
    items: list[Any],
    at: At,
    decode: Callable[[dict[str, Any], At, Ctx], Any],
    key: str,
    tag: str,
) -> tuple[Any, ...]:
    """An array of one tagged object definition (not its union): each item carries its tag."""
    out = []
    for i, item in enumerate(items):
        if type(item) is dict:
            check_tag(cx, item, (at, i), key, tag)
            out.append(decode(item, (at, i), cx))
        else:
            out.append(bad_value(cx, item, (at, i), "an object"))
    return tuple(out)


def enum(cx: Ctx, d: dict[str, Any], at: At, key: str, table: Mapping[str, Any]) -> Any:
    value = d.get(key)
    if isinstance(value, str) and str(value) in table:  # a StrEnum member built in Python
        return table[str(value)]
    if not isinstance(value, str):
        return bad(cx, d, at, key, "a string")
    cx.error((at, key), "enum", f"{describe(value)} is not one of {', '.join(table)}")
    return None


def const(cx: Ctx, d: dict[str, Any], at: At, key: str, expected: str) -> Any:
    value = d.get(key)
    if value is None:
        return bad(cx, d, at, key, f"the string {expected!r}")
    cx.error((at, key), "const", f"expected {expected!r}, got {describe(value)}")
    return None


def pattern(cx: Ctx, at: At, key: str, value: str, regex: str) -> Any:
    cx.error((at, key), "pattern", f"{describe(value)} does not match {regex}")
    return None


def format_(cx: Ctx, at: At, key: str, value: str, fmt: str) -> Any:
    cx.error(
        (at, key), "format", f"{describe(value)} is not {_formats.FORMATS[fmt]} (format {fmt})"
    )
    return None


def format_test(fmt: str) -> Callable[[str], bool]:
    """A cached test of a spec format (`_formats`: ajv-formats' definitions, run by regress,
    loaded at the first test)."""
    return _formats.tester(fmt)


def min_items(cx: Ctx, at: At, key: str, minimum: int) -> None:
    cx.error((at, key), "min_items", f"needs at least {minimum} item{'s' if minimum != 1 else ''}")


def strings(cx: Ctx, items: list[Any], at: At) -> tuple[str, ...]:
    for i, item in enumerate(items):
        if type(item) is not str:
            bad_value(cx, item, (at, i), "a string")
    return tuple(items)


def compiled(regex: str) -> Callable[[str], bool]:
    """A cached pattern test, as JSON Schema's `pattern` runs it: a search (patterns anchor
    themselves) with ECMA-262's semantics and the u flag, which is what the spec's patterns are
    (JSON Schema's dialect; Python's `re` reads `\\d`, `$`, `.` and `\\p{..}` otherwise). The engine
    is `regress`, loaded and the pattern compiled on the first test. A string with a lone
    surrogate, which the wire cannot carry, matches nothing. The same few pointers recur across a
    stream's patches, and a cache hit costs far less than running the regex again."""
    find: Callable[[str], object] | None = None

    @functools.lru_cache(maxsize=4096)
    def matches(value: str) -> bool:
        nonlocal find
        if find is None:
            import regress

            find = regress.Regex(regex, "u").find
        try:
            return find(value) is not None
        except UnicodeEncodeError:
            return False

    return matches


def check_tag(cx: Ctx, d: dict[str, Any], at: At, key: str, tag: str) -> None:
    """A document decoded as one specific member must carry that member's tag."""
    if d.get(key) != tag:
        const(cx, d, at, key, tag)


def union_fail(
    cx: Ctx, value: Any, at: At, key: str, table: Mapping[str, Any], can_drop: bool
) -> Any:
    """The slow path of a union: not an object, no discriminator, or an unknown one.

    In tolerant mode a member with an unknown tag is removed (with a warning) where the
    protocol lets a receiver do so: in arrays and in optional members."""
    if type(value) is not dict:
        return bad_value(cx, value, at, "an object")
    tag = value.get(key, MISSING)
    where = (at, key)
    if tag is MISSING:
        cx.error(where, "missing", f"required member '{key}' is missing")
    elif type(tag) is not str:
        bad_value(cx, tag, where, "a string")
    elif can_drop and not cx.strict:
        cx.warn(at, "unknown_tag", f"removed a member with unknown {key} {describe(tag)}")
        cx.dropped += 1
        return DROP
    else:
        cx.error(
            where,
            "unknown_tag",
            f"unknown {key} {describe(tag)}; expected one of {', '.join(table)}",
        )
    return None


def union_list(
    cx: Ctx, items: list[Any], at: At, decode: Callable[[Any, At, Ctx, bool], Any]
) -> tuple[Any, ...]:
    before = cx.dropped
    out = [decode(item, (at, i), cx, True) for i, item in enumerate(items)]
    if cx.dropped != before:
        return tuple(item for item in out if item is not DROP)
    return tuple(out)


def extra(
    cx: Ctx, d: dict[str, Any], at: At, known: frozenset[str], optional: frozenset[str], keep: bool
) -> dict[str, Any] | None:
    """Members other than the known ones, and nulls on optional members.

    Closed objects: an error in strict mode, removed with a warning in tolerant mode.
    Open objects (`keep`): unknown members are legal and returned to be kept verbatim (any JSON,
    so measured like any)."""
    kept: dict[str, Any] = {}
    for key, value in d.items():
        if key not in known:
            if keep:
                kept[key] = value
                if cx.deep and (type(value) is dict or type(value) is list):
                    depth(cx, value, (at, key))
            elif cx.strict:
                cx.error((at, key), "unknown_property", f"unknown member '{key}'")
            else:
                cx.warn((at, key), "unknown_property", f"removed unknown member '{key}'")
        elif value is None and key in optional:
            if cx.strict:
                cx.error((at, key), "null", "null is not allowed here; omit the member instead")
            else:
                cx.warn((at, key), "null", "removed null from an optional member")
    return kept or None


# ── encoding ───────────────────────────────────────────────────────────────────────────────────
#
# The generated encoders test every member inline (`type(v) is str`, a bound, a table lookup) and
# call these functions only for what the inline tests do not settle: the slow path of a member
# that failed its test (it accepts a subclass, normalised, or raises EncodeError), and the check
# of an any-JSON value. A pointer is built only for an error: each encoder adds its own key while
# the error travels up (EncodeError.within).

JsonWriter = Callable[[Any, str | int | None], Any]
"""What an encoder does with an any-JSON value that is not a plain scalar: check it and return it
(json_plain, for Python values) or its serialized form (json_fragment, for orjson.dumps)."""

_JSON_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
"""orjson writes dataclasses and datetimes on its own; with these options it refuses them, so they
reach the slow path and are reported like any other object that is not JSON."""
_dumps = orjson.dumps
_Fragment = orjson.Fragment
_has_null = re.compile(b"null").search
_LEAVE: Final = object()


def json_plain(value: Any, key: str | int | None) -> Any:
    """Check an any-JSON value (not a str, int, bool or None: the encoders pass those on inline)
    and return it. Raises EncodeError with the pointer of the first thing that is not JSON;
    `key` is the member (or index) holding the value, None for a value that is the document.

    The check is orjson itself (it refuses sets, non-string keys and objects it cannot write),
    plus a look for NaN and the infinities, which orjson writes as null: only when its output
    holds "null" are the value's floats looked at; and the value's nesting, measured only when
    its output is long enough and has enough brackets to nest deeper than MAX_JSON_DEPTH. Enum
    members and UUIDs pass, since orjson writes them as JSON (a member as its value, a UUID as
    its string)."""
    try:
        out = _dumps(value, option=_JSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError included
        _json_slowly(value, key)
        return value
    if (_has_null(out) is not None and not _finite(value)) or (
        len(out) > _SHALLOW_TEXT and _deep(out, value)
    ):
        _json_slowly(value, key)
    return value


def json_fragment(value: Any, key: str | int | None) -> Any:
    """json_plain for agui.encode: the same check, and the value comes back serialized (an
    orjson.Fragment), so the document's orjson.dumps copies the bytes instead of writing the value
    a second time."""
    try:
        out = _dumps(value, option=_JSON_OPTIONS)
    except TypeError:
        return _Fragment(_json_slowly(value, key))
    if (_has_null(out) is not None and not _finite(value)) or (
        len(out) > _SHALLOW_TEXT and _deep(out, value)
    ):
        _json_slowly(value, key)
    return _Fragment(out)


def _deep(out: bytes, value: Any) -> bool:
    """Whether a value orjson wrote as `out` (longer than _SHALLOW_TEXT) nests deeper than
    MAX_JSON_DEPTH: out's brackets first, too few of them settle it; then orjson measures."""
    return may_nest_deeper(out) and _nests_deeper_large(value)


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in a value orjson accepted (so at most the 254 levels it
    writes)."""
    t = type(value)
    if t is dict:
        items: Any = value.values()
    elif t is list or t is tuple:
        items = value
    elif t is float:
        return bool(value - value == 0.0)
    elif isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list):
        items = value
    elif isinstance(value, Enum):
        return _finite(value.value)
    else:
        return True
    for item in items:
        it = type(item)
        if it is str or it is int or it is bool or item is None:
            continue
        if not _finite(item):
            return False
    return True


def _json_slowly(value: Any, key: str | int | None) -> bytes:
    """What orjson refused, a null in its output, or a nesting to measure: raise for the first
    thing that is not JSON (or nests deeper than MAX_JSON_DEPTH); if there is none (an integer
    beyond 64 bits, a subclass of float or tuple), write the value with the json module."""
    prefix = "" if key is None else "/" + segment(key)
    found = locate(value)
    if found is not None:
        at, message = found
        raise EncodeError(message, pointer=prefix + pointer(at))
    try:
        text = json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_as_json
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise EncodeError(f"cannot be written as JSON: {exc}", pointer=prefix) from None
    return text.encode()


def dumps_checked(value: Any) -> bytes:
    """Compact JSON of checked Python values (what encode_value returns) that orjson would not
    write: an integer beyond 64 bits, or a string with a lone surrogate (reported with its
    pointer). A checked value nests no deeper than orjson writes: MAX_JSON_DEPTH and the models
    around it."""
    return _json_slowly(value, None)


def _as_json(value: Any) -> Any:
    """The json module's fallback for what orjson writes natively: enum members, UUIDs."""
    if isinstance(value, Enum):
        return value.value
    if _is_uuid(value):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _is_uuid(value: Any) -> bool:
    module = sys.modules.get("uuid")  # no UUID can exist before the module is imported
    return module is not None and isinstance(value, module.UUID)


def locate(value: Any) -> tuple[At, str] | None:
    """The first thing in a value (in document order) that is not JSON, with what is wrong with it;
    None if it is all JSON: dicts with string keys, lists, tuples, strings (encodable as UTF-8),
    integers, finite floats, booleans, None, and what orjson writes as JSON (enum members by their
    value, UUIDs, orjson.Fragment), nesting at most MAX_JSON_DEPTH levels (an array or object one
    level deeper is reported). Iterative, so any depth and any cycle is safe."""
    stack: list[tuple[Any, Any, int]] = [(value, (), 0)]
    active: set[int] = set()  # the containers on the current path: meeting one again is a cycle
    done: dict[int, int] = {}  # the containers checked already, and at which depth
    while stack:
        v, at, depth = stack.pop()
        if v is _LEAVE:
            active.discard(at)
            continue
        if v is None or isinstance(v, bool | int):
            continue
        if isinstance(v, str):
            if not _utf8(v):
                return at, "a string with a lone surrogate is not valid UTF-8"
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                return (
                    at,
                    f"{'NaN' if v != v else 'Infinity' if v > 0 else '-Infinity'} is not a JSON number",
                )
            continue
        if isinstance(v, Enum):
            stack.append((v.value, at, depth))
            continue
        if isinstance(v, dict | list | tuple):
            ident = id(v)
            if ident in active:
                return at, f"the {type(v).__name__} contains itself"
            if done.get(ident, -1) >= depth:
                continue  # checked already, where it had as much room to nest or less
            if depth >= MAX_JSON_DEPTH:
                return at, f"nests deeper than {MAX_JSON_DEPTH} levels"
            done[ident] = depth
            active.add(ident)
            stack.append((_LEAVE, ident, 0))
            if isinstance(v, dict):
                for k in v:
                    if not isinstance(k, str):
                        return at, f"an object key must be a string, not {what(k)}"
                    if not _utf8(k):
                        return (
                            at,
                            f"the key {describe(k)} has a lone surrogate, which is not valid UTF-8",
                        )
                stack.extend((x, (at, k), depth + 1) for k, x in reversed(list(v.items())))
            else:
                stack.extend((v[i], (at, i), depth + 1) for i in reversed(range(len(v))))
            continue
        if _is_uuid(v) or isinstance(v, orjson.Fragment):
            continue
        return at, _not_json(v)
    return None


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _not_json(value: Any) -> str:
    name = type(value).__name__
    if isinstance(value, set | frozenset):
        return f"{name} is not JSON (a list is)"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"{name} is not JSON (a string is; base64 for binary data)"
    if attrs.has(type(value)) and type(value).__module__.startswith(
        __package__ or "agui_generated"
    ):
        return f"{name} is a model, not JSON; turn it into JSON first (to_json)"
    if hasattr(value, "isoformat"):
        return f"{name} is not JSON (an ISO 8601 string is)"
    return f"{name} is not JSON"


def what(value: Any) -> str:
    """A Python value for a message: its type, and the value itself for a scalar."""
    if value is None:
        return "None"
    if isinstance(value, bool | int | float):
        text = repr(value)
        return f"{type(value).__name__} {text if len(text) <= 40 else text[:40] + '...'}"
    if isinstance(value, str):
        return f"{type(value).__name__} {describe(str.__str__(value))}"
    return type(value).__name__


def wrong(value: Any, key: str, expected: str) -> NoReturn:
    """A member of the wrong type (None for a required member included)."""
    required = " (the member is required)" if value is None else ""
    raise EncodeError(
        f"expected {expected}, got {what(value)}{required}", pointer="/" + segment(key)
    )


def w_str(value: Any, key: str) -> str:
    """The slow path of a string member: a str subclass (a StrEnum member) is written as its plain
    string; anything else is an error."""
    if not isinstance(value, str):
        wrong(value, key, "a string")
    return str.__str__(value)


def w_matched(
    value: Any, key: str, matches: Callable[[str], bool], known: set[str], regex: str
) -> str:
    """The slow path of a string member with a pattern: a string not met before. One that matches
    joins `known` (the inline test; emptied when it grows large), one that does not is an error."""
    text = w_str(value, key)
    if not matches(text):
        raise EncodeError(f"{describe(text)} does not match {regex}", pointer="/" + segment(key))
    if len(text) <= 256:  # remember short strings only, and not too many
        if len(known) >= 4096:
            known.clear()
        known.add(text)
    return text


def w_formatted(
    value: Any, key: str, conforming: Callable[[str], bool], known: set[str], fmt: str
) -> str:
    """w_matched for a string member with a format."""
    text = w_str(value, key)
    if not conforming(text):
        raise EncodeError(
            f"{describe(text)} is not {_formats.FORMATS[fmt]} (format {fmt})",
            pointer="/" + segment(key),
        )
    if len(text) <= 256:
        if len(known) >= 4096:
            known.clear()
        known.add(text)
    return text


def w_int(value: Any, key: str, lo: int | None, hi: int | None) -> int:
    """The slow path of an integer member: an int subclass (an IntEnum member) is written as its
    plain integer, within the member's bounds. A bool or a float (even 2.0) is an error."""
    if not isinstance(value, int) or isinstance(value, bool):
        wrong(value, key, "an integer")
    number = int(value)
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise EncodeError(outside(number, lo, hi), pointer="/" + segment(key))
    return number


def w_number(value: Any, key: str, lo: float | None, hi: float | None) -> int | float:
    """The slow path of a number member: an int or a float (a subclass written as its plain
    value), finite and within the member's bounds. A bool is an error."""
    try:
        return v_number(value, lo, hi)
    except EncodeError as exc:
        raise exc.within(key) from None


def enum_name(table: Mapping[str, str], name: str) -> str:
    return f"a {name} ({', '.join(table)})"


def w_enum(value: Any, key: str, table: Mapping[str, str], name: str) -> str:
    """The slow path of an enum member: it holds a member of the enum or one of its exact wire
    strings (which is written); anything else is an error."""
    values = ", ".join(table)
    if not isinstance(value, str):
        wrong(value, key, f"a {name} ({values})")
    text = str.__str__(value)
    found = table.get(text)
    if found is None:
        raise EncodeError(
            f"{describe(text)} is not a {name} ({values})", pointer="/" + segment(key)
        )
    return found


def w_const(value: Any, key: str, expected: str) -> NoReturn:
    if isinstance(value, str):
        raise EncodeError(
            f"expected {expected!r}, got {describe(str.__str__(value))}", pointer="/" + segment(key)
        )
    wrong(value, key, f"the string {expected!r}")


def w_either(value: Any, key: str, expected: str, takes_str: bool) -> str:
    """The slow path of a member with several JSON kinds: a str subclass where a string is one of
    them; anything else is an error."""
    if takes_str and isinstance(value, str):
        return str.__str__(value)
    wrong(value, key, expected)


def w_object(value: Any, key: str, jv: JsonWriter) -> Any:
    """The slow path of an object member: a dict subclass is an object (checked like any JSON)."""
    if not isinstance(value, dict):
        wrong(value, key, "an object (a dict)")
    return jv(value, key)


def w_min_items(key: str, minimum: int) -> NoReturn:
    raise EncodeError(
        f"needs at least {minimum} item{'s' if minimum != 1 else ''}", pointer="/" + segment(key)
    )


def w_strings(items: Any, key: str) -> list[str]:
    """An array of strings (the encoders checked it is a list or a tuple)."""
    out = list(items)
    for i, item in enumerate(out):
        if type(item) is not str:
            if not isinstance(item, str):
                raise EncodeError(
                    f"expected a string, got {what(item)}", pointer=f"/{segment(key)}/{i}"
                )
            out[i] = str.__str__(item)
    return out


def w_json_items(items: Any, key: str, jv: JsonWriter) -> list[Any]:
    """An array of any-JSON values but null (the encoders checked it is a list or a tuple)."""
    out = []
    for i, item in enumerate(items):
        t = type(item)
        if t is str or t is int or t is bool:
            out.append(item)
            continue
        if item is None:
            raise EncodeError(
                "expected a JSON value, got None (null is no item here)",
                pointer=f"/{segment(key)}/{i}",
            )
        try:
            out.append(jv(item, i))
        except EncodeError as exc:
            raise exc.within(key) from None
    return out


def w_model(
    value: Any,
    key: str,
    table: Mapping[type, Callable[[Any, JsonWriter], Any]],
    expected: str,
    jv: JsonWriter,
) -> Any:
    """The slow path of a member holding a model: not a model of the right class (for a union: of
    one of its members), or something inside it failed."""
    encoder = table.get(type(value))
    if encoder is None:
        wrong(value, key, expected)
    try:
        return encoder(value, jv)
    except EncodeError as exc:
        raise exc.within(key) from None


def w_items(
    items: Any,
    key: str,
    table: Mapping[type, Callable[[Any, JsonWriter], Any]],
    expected: str,
    jv: JsonWriter,
) -> list[Any]:
    """The slow path of an array of models: encode it again item by item to find the one at fault."""
    out = []
    for i, item in enumerate(items):
        encoder = table.get(type(item))
        if encoder is None:
            raise EncodeError(
                f"expected {expected}, got {what(item)}", pointer=f"/{segment(key)}/{i}"
            )
        try:
            out.append(encoder(item, jv))
        except EncodeError as exc:
            raise exc.within(i).within(key) from None
    return out


def w_values(
    items: Any, key: str, encode: Callable[[Any, JsonWriter], Any], jv: JsonWriter
) -> list[Any]:
    """An array whose items one generated encoder checks (`_ev_N`; the encoders checked it is a
    list or a tuple)."""
    try:
        return v_values(items, encode, jv)
    except EncodeError as exc:
        raise exc.within(key) from None


# The slow paths of values that are no member (array items, alternatives of `A | B`): the error's
# pointer starts at the value, and the encoders put the keys and indexes in front of it.


def v_wrong(value: Any, expected: str) -> NoReturn:
    raise EncodeError(f"expected {expected}, got {what(value)}")


def v_str(value: Any) -> str:
    if not isinstance(value, str):
        v_wrong(value, "a string")
    return str.__str__(value)


def v_matched(value: Any, matches: Callable[[str], bool], known: set[str], regex: str) -> str:
    """w_matched for a value that is no member."""
    text = v_str(value)
    if not matches(text):
        raise EncodeError(f"{describe(text)} does not match {regex}")
    if len(text) <= 256:
        if len(known) >= 4096:
            known.clear()
        known.add(text)
    return text


def v_formatted(value: Any, conforming: Callable[[str], bool], known: set[str], fmt: str) -> str:
    """w_formatted for a value that is no member."""
    text = v_str(value)
    if not conforming(text):
        raise EncodeError(f"{describe(text)} is not {_formats.FORMATS[fmt]} (format {fmt})")
    if len(text) <= 256:
        if len(known) >= 4096:
            known.clear()
        known.add(text)
    return text


def v_int(value: Any, lo: int | None, hi: int | None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        v_wrong(value, "an integer")
    number = int(value)
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise EncodeError(outside(number, lo, hi))
    return number


def v_number(value: Any, lo: float | None, hi: float | None) -> int | float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        v_wrong(value, "a number")
    number = float(value) if isinstance(value, float) else int(value)
    if not math.isfinite(number):
        raise EncodeError(
            f"{'NaN' if number != number else 'Infinity' if number > 0 else '-Infinity'} is not a JSON number"
        )
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise EncodeError(outside(number, lo, hi))
    return number


def v_enum(value: Any, table: Mapping[str, str], name: str) -> str:
    if not isinstance(value, str):
        v_wrong(value, enum_name(table, name))
    found = table.get(str.__str__(value))
    if found is None:
        raise EncodeError(f"{describe(str.__str__(value))} is not {enum_name(table, name)}")
    return found


def v_object(value: Any, jv: JsonWriter) -> Any:
    if not isinstance(value, dict):
        v_wrong(value, "an object (a dict)")
    return jv(value, None)


def v_model(
    value: Any,
    table: Mapping[type, Callable[[Any, JsonWriter], Any]],
    expected: str,
    jv: JsonWriter,
) -> Any:
    encoder = table.get(type(value))
    if encoder is None:
        v_wrong(value, expected)
    return encoder(value, jv)


def v_either(value: Any, expected: str, takes_str: bool) -> str:
    if takes_str and isinstance(value, str):
        return str.__str__(value)
    v_wrong(value, expected)


def v_min_items(items: Any, minimum: int) -> None:
    if len(items) < minimum:
        raise EncodeError(f"needs at least {minimum} item{'s' if minimum != 1 else ''}")


def v_array(value: Any) -> None:
    if type(value) is not tuple and type(value) is not list:
        v_wrong(value, "an array (a tuple or a list)")


def v_values(items: Any, encode: Callable[[Any, JsonWriter], Any], jv: JsonWriter) -> list[Any]:
    out = []
    for i, item in enumerate(items):
        try:
            out.append(encode(item, jv))
        except EncodeError as exc:
            raise exc.within(i) from None
    return out


def v_strings(items: Any) -> list[str]:
    out = list(items)
    for i, item in enumerate(out):
        if type(item) is not str:
            if not isinstance(item, str):
                raise EncodeError(f"expected a string, got {what(item)}", pointer=f"/{i}")
            out[i] = str.__str__(item)
    return out


def v_json_items(items: Any, jv: JsonWriter) -> list[Any]:
    out = []
    for i, item in enumerate(items):
        t = type(item)
        if t is str or t is int or t is bool:
            out.append(item)
        elif item is None:
            raise EncodeError("expected a JSON value, got None", pointer=f"/{i}")
        else:
            out.append(jv(item, i))
    return out


def v_models(
    items: Any,
    table: Mapping[type, Callable[[Any, JsonWriter], Any]],
    expected: str,
    jv: JsonWriter,
) -> list[Any]:
    out = []
    for i, item in enumerate(items):
        try:
            out.append(v_model(item, table, expected, jv))
        except EncodeError as exc:
            raise exc.within(i) from None
    return out


def w_extra(d: dict[str, Any], extra: Any, jv: JsonWriter) -> None:
    """The members an open object (a JSON Patch operation) keeps beyond the named ones: checked
    like any JSON and written after them, unless they repeat a named member."""
    if not isinstance(extra, dict):
        raise EncodeError(f"extra must be a dict of the other members, got {what(extra)}")
    for key, value in extra.items():
        if not isinstance(key, str):
            raise EncodeError(f"a member name must be a string, not {what(key)}")
        if key not in d:
            t = type(value)
            d[key] = value if t is str or t is int or t is bool or value is None else jv(value, key)


def w_unknown_event(event: UnknownEvent, events: Mapping[str, type]) -> NoReturn:
    """The slow path of an UnknownEvent: it must be what tolerant decoding makes, an event object
    whose type is a string this package does not know, and `type` is that string."""
    tag, raw = event.type, event.raw
    if not isinstance(tag, str):
        wrong(tag, "type", "a string")
    if tag in events:
        raise EncodeError(
            f"{describe(tag)} is a known event type: build a {events[tag].__name__}, not an UnknownEvent",
            pointer="/type",
        )
    if not isinstance(raw, dict):
        raise EncodeError(
            f"UnknownEvent.raw must be the event's JSON object (a dict), got {what(raw)}"
        )
    raise EncodeError(
        f"the event's type is {describe(raw.get('type'))}, not UnknownEvent.type {describe(tag)}",
        pointer="/type",
    )


def not_a_model(obj: Any, events: Mapping[str, type]) -> NoReturn:
    """What encoding something that is no model says: what to do instead."""
    message = (
        f"cannot encode {type(obj).__name__}: not an AG-UI model; build events with the model "
        "classes (agui.TextMessageContentEvent, ...)"
    )
    tag = obj.get("type") if isinstance(obj, dict) else None
    if isinstance(tag, str) and tag in events:
        message += (
            f"; this dict is the wire form of agui.{events[tag].__name__}: "
            "agui.decode_json(value) turns it into one"
        )
    raise EncodeError(message)
