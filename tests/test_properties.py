"""Property tests: random valid instances of every definition of the spec survive the wire.

The strategies are derived from the generator's intermediate model (codegen.model), not written by
hand, so a definition added to spec/agui.yaml is covered without touching this file, whatever form
of the grammar it uses: tests/test_codegen_every_form.py runs this file on its fork, which has
every one, and the fork proof (tests/fork) on its own.
"""

from __future__ import annotations

import functools
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from agui_generated.converter import CLASSES
from hypothesis import HealthCheck, given, settings, strategies as st

import agui
from agui.wire.codec import TAGS
from codegen.load import load_spec
from codegen.model import Object, TypeRef, build
from codegen.regex import python_regex, search
from codegen.runtime import FORMATS, conforms, expression

# a fork's spec, when tests/test_codegen_every_form.py runs this file on the tree it generated
_FORK = os.environ.get("AGUI_EVERY_FORM_SPEC")
SPEC = build(load_spec(Path(_FORK)) if _FORK else load_spec())
OBJECTS: dict[str, Object] = {o.name: o for o in SPEC.objects}
UNIONS = {u.name: u for u in SPEC.unions}
SAFE = 2**53 - 1

EXAMPLES = settings(
    max_examples=25,
    deadline=None,
    # filter_too_much: a formatted string under a pattern of its own (every_form's `ticket`, a
    # UUID that must start with `urn:`) is drawn from the format and kept where the pattern
    # holds, about one in four; an object with several such members rejects more draws than
    # the health check allows, though every example still comes
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

# ── JSON values ──────────────────────────────────────────────────────────────────────────────

_keys = st.text(max_size=6)
_scalars = (
    st.booleans()
    | st.integers(-SAFE, SAFE)
    # integral floats (1.0) would come back as they are but say nothing new; keep them out
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    | st.text(max_size=8)
)
JSON = st.recursive(
    st.none() | _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
"""Any JSON value, null included."""
JSON_NOT_NULL = _scalars | st.lists(JSON, max_size=3) | st.dictionaries(_keys, JSON, max_size=3)
JSON_OBJECT = st.dictionaries(_keys, JSON, max_size=3)


# ── strings of a format ──────────────────────────────────────────────────────────────────────

_offsets = st.sampled_from(["Z", "z"]) | st.builds(
    "{}{:02}:{:02}".format, st.sampled_from("+-"), st.integers(0, 23), st.integers(0, 59)
)
_DATE_TIMES = st.builds(
    "{}{}{}{}".format,
    st.dates().map(lambda d: f"{d.year:04}-{d.month:02}-{d.day:02}"),
    st.sampled_from("Tt "),
    st.times().map(lambda t: t.isoformat()),
    _offsets,
)
"""RFC 3339 date-times: a real calendar date (the one part no regular expression says)."""


@functools.cache
def formatted(fmt: str) -> Any:
    """Strings of a spec format, drawn from the expression codegen/runtime/_formats.py checks them
    by (or, for date-time, built from a date and a time) and each confirmed by that check."""
    assert fmt in FORMATS, fmt
    found = expression(fmt)
    if found is None:
        drawn = _DATE_TIMES
    else:
        # in any case, and in lower case too, as most are written (and as a pattern beside the
        # format, `^urn:`, is likelier to take)
        lower = re.compile(found.pattern, re.ASCII)
        drawn = st.from_regex(found, fullmatch=True) | st.from_regex(lower, fullmatch=True)
    return drawn.filter(lambda s: conforms(fmt, s))


# ── strategies from the intermediate model ───────────────────────────────────────────────────


def for_type(t: TypeRef, nullable: bool = False) -> Any:
    """A strategy for valid values of one type (its constraints are part of it: an alias's,
    narrowed by the field; they follow it into list items and alternatives)."""
    c = t.constraints
    if t.kind == "str":
        if c.format is not None:
            pattern = c.pattern
            return formatted(c.format).filter(lambda s: pattern is None or search(pattern, s))
        if c.pattern is None:
            return st.text(max_size=12)
        # drawn with Python's re (hypothesis needs it), kept where ECMA-262 agrees
        pattern = c.pattern
        return st.from_regex(python_regex(pattern), fullmatch=True).filter(
            lambda s: search(pattern, s)
        )
    if t.kind == "int":
        lo = -SAFE if c.min is None else c.min
        hi = SAFE if c.max is None else c.max
        # the bounds themselves are valid and where range checks go wrong: draw them often
        return st.sampled_from([lo, hi]) | st.integers(lo, hi)
    if t.kind == "number":
        # a JSON number, integers included (an int stays an int), within the bounds, which are
        # drawn often; an integral float (1.0) keeps its form too
        ints = st.integers(
            -SAFE if c.min is None else math.ceil(c.min),
            SAFE if c.max is None else math.floor(c.max),
        )
        floats = st.floats(c.min, c.max, allow_nan=False, allow_infinity=False)
        bounds = [b for b in (c.min, c.max) if b is not None]
        return (st.sampled_from(bounds) if bounds else st.nothing()) | ints | floats
    if t.kind == "bool":
        return st.booleans()
    if t.kind == "json":
        return JSON if nullable else JSON_NOT_NULL
    if t.kind == "object":
        return JSON_OBJECT
    if t.kind == "enum":
        return st.sampled_from(list(getattr(agui, t.name)))
    if t.kind == "ref":
        return instances(t.name)
    if t.kind == "union":
        return union_instances(t.name)
    if t.kind == "list":
        assert t.item is not None
        least = c.min_items or 0
        items = st.lists(for_type(t.item), min_size=least, max_size=least + 2)
        return items.map(tuple)
    if t.kind == "either":
        return st.one_of([for_type(option) for option in t.options])
    raise AssertionError(f"unknown type kind {t.kind!r}")  # pragma: no cover


@functools.cache
def instances(name: str) -> Any:
    """Valid instances of one object definition."""
    obj = OBJECTS[name]
    fields: dict[str, Any] = {}
    for f in obj.fields:
        if f.is_class_constant:
            continue
        if f.const is not None:  # an optional constant
            value = st.just(f.const)
        else:
            assert f.type is not None
            value = for_type(f.type, f.nullable)
        fields[f.py] = value if f.required else st.none() | value
    if obj.open:
        wire = frozenset(f.wire for f in obj.fields)
        # an empty dict writes nothing and reads back as None: not a distinct valid instance
        extra = st.dictionaries(_keys.filter(lambda k: k not in wire), JSON, min_size=1, max_size=3)
        fields["extra"] = st.none() | extra
    if not any(f.deprecated for f in obj.fields):
        return st.builds(getattr(agui, name), **fields)
    # a deprecated member set warns (DeprecationWarning, an error under pytest); a document may
    # still carry one, and decoding keeps it without a warning
    return st.builds(functools.partial(_quietly, getattr(agui, name)), **fields)


def _quietly(cls: type[Any], **fields: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cls(**fields)


@functools.cache
def union_instances(name: str) -> Any:
    return st.one_of([instances(member) for member in UNIONS[name].members])


# ── coverage of the spec ─────────────────────────────────────────────────────────────────────


def test_strategies_cover_every_generated_class_and_union() -> None:
    """Every class and union the package exports is a definition these tests generate."""
    assert {cls.__name__ for cls in CLASSES} == set(OBJECTS)
    assert set(TAGS) == set(UNIONS)


# ── round trips ──────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("name", list(OBJECTS))
@EXAMPLES
@given(data=st.data())
def test_object_round_trips(name: str, data: st.DataObject) -> None:
    """Any valid instance encodes to JSON that strict decoding turns back into an equal instance of
    the same class, and encoding is canonical: re-encoding the decoded instance gives the same
    bytes. The JSON layer agrees: to_json is the parsed wire, decode_json reads it back."""
    x = data.draw(instances(name), label=name)
    cls = type(x)
    wire = agui.encode(x)
    back = agui.decode(wire, cls, strict=True)
    assert type(back) is cls
    assert back == x
    assert agui.encode(back) == wire
    assert agui.to_json(x) == orjson.loads(wire)
    assert agui.decode_json(orjson.loads(wire), cls, strict=True) == x


@pytest.mark.parametrize("name", list(OBJECTS))
@EXAMPLES
@given(data=st.data())
def test_valid_instance_decodes_tolerantly_without_warnings(name: str, data: st.DataObject) -> None:
    """Tolerant decoding of a valid document removes nothing: same instance, no warning."""
    x = data.draw(instances(name), label=name)
    warnings: list[agui.Problem] = []
    assert agui.decode(agui.encode(x), type(x), warnings=warnings) == x
    assert warnings == []


@pytest.mark.parametrize("union", list(UNIONS))
@settings(EXAMPLES, max_examples=60)
@given(data=st.data())
def test_union_member_round_trips_through_its_union(union: str, data: st.DataObject) -> None:
    """A member of a union, decoded through the union (agui.Event, agui.Message, ...), comes back
    as the same class and an equal instance, strictly and tolerantly (with no warning)."""
    x = data.draw(union_instances(union), label=union)
    wire = agui.encode(x)
    via = getattr(agui, union)
    back = agui.decode(wire, via, strict=True)
    assert type(back) is type(x)
    assert back == x
    assert agui.encode(back) == wire
    warnings: list[agui.Problem] = []
    assert agui.decode(wire, via, warnings=warnings) == x
    assert warnings == []


@EXAMPLES
@given(events=st.lists(union_instances("Event"), min_size=1, max_size=5))
def test_event_stream_round_trips_as_json_lines(events: list[Any]) -> None:
    """Encoded events never contain a raw newline, so a JSON Lines stream of random events splits
    back into the same documents, each decoding through agui.Event to the event sent."""
    stream = b"".join(agui.encode(e) + b"\n" for e in events)
    lines = stream.splitlines()
    assert len(lines) == len(events)
    assert [agui.decode(line, strict=True) for line in lines] == events
