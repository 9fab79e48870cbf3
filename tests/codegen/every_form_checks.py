"""Documents of every grammar form through every binding of a generated fork.

Not collected by the test suite on its own: tests/test_codegen_every_form.py generates the fork of
spec/agui.yaml with tests/codegen/every_form.yaml, then runs this module with pytest in a process
whose PYTHONPATH puts the fork's agui_generated and agui_pydantic ahead of the repository's.
AGUI_EVERY_FORM_SPEC names the fork's agui.yaml, AGUI_EVERY_FORM_OUT its generated folder.

Documents are drawn from the intermediate model (codegen.model), not written by hand: valid ones
for each object of the overlay, and invalid ones made from a valid one by one change the model says
is wrong (a value of another JSON kind, a bound or pattern broken, an enum value, minItems, a
missing, null or unknown member, a wrong tag), at any depth. Every binding must agree: the attrs
codec (agui.decode / agui.encode, byte for byte), the JSON Schema, the pydantic models, and the
protobuf codec (with the runtime's descriptors checked against protoc).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import agui_pydantic
import attrs
import orjson
import pytest
import referencing
import yaml
from hypothesis import HealthCheck, Phase, find, given, settings, strategies as st
from pydantic import MISSING, TypeAdapter, ValidationError
from referencing.jsonschema import DRAFT202012

import agui
from agui.wire.codec import DEFINITIONS
from agui.wire.proto import decode_proto_json, from_message, to_message
from codegen.load import ledger_path, load_ledger, load_spec
from codegen.model import Object, TypeRef, build
from codegen.proto import build_proto
from codegen.regex import python_regex, search, spec_validator

HERE = Path(__file__).resolve().parent
SPEC_FILE = Path(os.environ.get("AGUI_EVERY_FORM_SPEC", "missing/agui.yaml"))
OUT = Path(os.environ.get("AGUI_EVERY_FORM_OUT", "missing"))
if not SPEC_FILE.is_file():
    pytest.skip(
        "run by tests/test_codegen_every_form.py, against a generated fork",
        allow_module_level=True,
    )

SPEC = build(load_spec(SPEC_FILE))
OBJECTS: dict[str, Object] = {o.name: o for o in SPEC.objects}
UNIONS = {u.name: u for u in SPEC.unions}
ENUMS = {e.name: [v.value for v in e.values] for e in SPEC.enums}
OVERLAY = yaml.safe_load((HERE / "every_form.yaml").read_text("utf-8"))
EVENTS = [
    name for name, d in OVERLAY["definitions"].items() if d.get("tag") in OVERLAY["eventTypes"]
] + [name for name in OVERLAY["extend"] if name in UNIONS["Event"].members]
"""The events of the overlay, and the existing ones it extends."""

SAFE = 2**53
INT64 = 2**63
EXAMPLES = settings(
    max_examples=int(os.environ.get("AGUI_EVERY_FORM_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # a failing document is reported as drawn: shrinking one of these takes minutes
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)


# ── valid documents, from the model ─────────────────────────────────────────────────────────────

_keys = st.text(max_size=5)
_json_scalars = (
    st.booleans()
    | st.integers(-SAFE, SAFE)  # JSON values travel as doubles in protobuf
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
JSON = st.recursive(
    st.none() | _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=6,
)
JSON_NOT_NULL = JSON.filter(lambda v: v is not None)


FORMATTED = {
    "date-time": [
        "2026-12-04T18:00:00Z",
        "2024-02-29 23:59:60+00:00",
        "1999-12-31t23:59:59.5-01:30",
    ],
    "email": ["nobody@example.com", "a.b+c@mail.example.org"],
    "uri": ["https://example.com/a?b=1#c", "urn:isbn:0451450523", "mailto:x@example.com"],
    "uuid": [
        "123e4567-e89b-12d3-a456-426614174000",
        "urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
    ],
}
"""Strings of each format (a string with a pattern too takes those that match it)."""
UNFORMATTED = {
    "date-time": "2026-02-30T10:00:00Z",
    "email": "nobody@localhost",
    "uri": "example.com/a",
    "uuid": "urn:uuid:123e4567-e89b-12d3-a456",
}
"""A string of no format, for each: close to one, as a careless writer's would be."""


def value(t: TypeRef, nullable: bool = False) -> Any:
    """A strategy for valid JSON values of a type (constraints included)."""
    c = t.constraints
    if t.kind == "str":
        if c.format is not None:
            found = [s for s in FORMATTED[c.format] if c.pattern is None or search(c.pattern, s)]
            assert found, f"no example of {c.format} matches {c.pattern}"
            return st.sampled_from(found)
        if c.pattern is not None:
            pattern = c.pattern
            return st.from_regex(python_regex(pattern), fullmatch=True).filter(
                lambda s: search(pattern, s)
            )
        return st.text(max_size=8)
    if t.kind == "int":
        lo = -INT64 if c.min is None else int(c.min)
        hi = INT64 - 1 if c.max is None else int(c.max)
        return st.sampled_from([lo, hi]) | st.integers(lo, hi)
    if t.kind == "number":
        lo = -SAFE if c.min is None else max(-SAFE, math.ceil(c.min))
        hi = SAFE if c.max is None else min(SAFE, math.floor(c.max))
        floats = st.floats(min_value=c.min, max_value=c.max, allow_nan=False, allow_infinity=False)
        return floats | st.integers(lo, hi)  # an integer is a number, and stays one
    if t.kind == "bool":
        return st.booleans()
    if t.kind == "json":
        return JSON if nullable else JSON_NOT_NULL
    if t.kind == "object":
        return st.dictionaries(_keys, JSON, max_size=3)
    if t.kind == "enum":
        return st.sampled_from(ENUMS[t.name])
    if t.kind == "ref":
        return document(t.name)
    if t.kind == "union":
        return st.one_of([document(m) for m in UNIONS[t.name].members])
    if t.kind == "list":
        assert t.item is not None
        least = c.min_items or 0
        return st.lists(value(t.item), min_size=least, max_size=least + 2)
    if t.kind == "either":
        return st.one_of([value(o) for o in t.options])
    raise AssertionError(t.kind)


@cache
def document(name: str) -> Any:
    """Valid JSON objects of one object definition, members in spec order."""
    obj = OBJECTS[name]
    parts: list[Any] = []
    for f in obj.fields:
        if f.tag is not None or (f.const is not None and f.required):
            parts.append(st.just((f.wire, f.wire_value)))
            continue
        present = st.just(f.const) if f.const is not None else None
        if present is None:
            assert f.type is not None
            present = value(f.type, f.nullable)
        pair = present.map(lambda v, w=f.wire: (w, v))
        parts.append(pair if f.required else st.none() | pair)
    return st.tuples(*parts).map(lambda pairs: dict(p for p in pairs if p is not None))


def full_value(t: TypeRef) -> Any:
    """One valid value of a type, with every optional member and one list item present."""
    c = t.constraints
    if t.kind == "str":
        if c.format is not None:
            return next(s for s in FORMATTED[c.format] if c.pattern is None or search(c.pattern, s))
        if c.pattern is None:
            return "s"
        return matching(c.pattern)
    if t.kind in ("int", "number"):
        bound = c.min if c.min is not None else c.max
        return bound if bound is not None else (0 if t.kind == "int" else 1.5)
    if t.kind == "bool":
        return True
    if t.kind in ("json", "object"):
        return {"k": [1, None]}
    if t.kind == "enum":
        return ENUMS[t.name][0]
    if t.kind == "ref":
        return full(OBJECTS[t.name])
    if t.kind == "union":
        return full(OBJECTS[UNIONS[t.name].members[0]])
    if t.kind == "list":
        assert t.item is not None
        return [full_value(t.item)] * max(1, t.constraints.min_items or 0)
    return full_value(t.options[0])


@cache
def matching(pattern: str) -> str:
    for candidate in ("a", "/a", "ABC", "", "0"):
        if search(pattern, candidate):
            return candidate
    return find(st.from_regex(python_regex(pattern), fullmatch=True), lambda s: search(pattern, s))


def full(obj: Object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in obj.fields:
        if f.tag is not None or f.const is not None:
            out[f.wire] = f.wire_value if f.tag is not None else f.const
        else:
            assert f.type is not None
            out[f.wire] = full_value(f.type)
    return out


# ── invalid documents: one change the model says is wrong ───────────────────────────────────────

SAMPLES = {
    "string": "x",
    "integer": 7,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def accepted(t: TypeRef, nullable: bool = False) -> set[str]:
    """The JSON kinds a type takes (SAMPLES' keys)."""
    if t.kind == "json":
        return set(SAMPLES) - ({"null"} if not nullable else set())
    if t.kind == "either":
        return set().union(*(accepted(o) for o in t.options))
    kinds = {
        "str": {"string"},
        "enum": {"string"},
        "int": {"integer"},
        "number": {"integer", "number"},
        "bool": {"boolean"},
        "list": {"array"},
    }
    return kinds.get(t.kind, {"object"})


def not_matching(pattern: str) -> str:
    for candidate in ("", "!", "A", "a", "/", "~2", "ab\n", "0"):
        if not search(pattern, candidate):
            return candidate
    raise AssertionError(f"no candidate fails {pattern}")


def mutations(t: TypeRef, v: Any, kinds: bool = True) -> Iterator[tuple[str, Any]]:
    """(what, replacement) for `v`, a valid value of `t`: each replacement is invalid. With
    `kinds`, values of the JSON kinds `t` does not take are among them; without (an alternative
    of A | B), only changes that keep the JSON kind, so no other alternative takes them."""
    if kinds:
        for kind in sorted(set(SAMPLES) - accepted(t)):
            yield f"a {kind}", SAMPLES[kind]
    c = t.constraints
    if t.kind == "str" and c.format is not None:
        bad = UNFORMATTED[c.format]
        assert c.pattern is None or search(c.pattern, bad), "the pattern would refuse it anyway"
        yield "a string of no format", bad
    if t.kind == "str" and c.pattern is not None:
        yield "a string off the pattern", not_matching(c.pattern)
    elif t.kind == "enum":
        yield "no value of the enum", "no-such-value"
    elif t.kind in ("int", "number"):
        if t.kind == "int":
            yield "a fraction", 1.5
        if c.min is not None:
            yield "below min", c.min - 1
        if c.max is not None:
            yield "above max", c.max + 1
    elif t.kind == "ref":
        yield from object_mutations(OBJECTS[t.name], v)
    elif t.kind == "union":
        u = UNIONS[t.name]
        yield "an unknown tag", {**v, u.discriminator: "no-such-tag"}
        yield "no tag", {k: x for k, x in v.items() if k != u.discriminator}
        member = dict(u.tags)[v[u.discriminator]]
        for what, bad in object_mutations(OBJECTS[member], v):
            if what != f"/{u.discriminator}: another tag":
                yield what, bad
    elif t.kind == "list":
        assert t.item is not None
        if c.min_items:
            yield "fewer than minItems", v[: c.min_items - 1]
        if v:
            for what, bad in mutations(t.item, v[0]):
                yield f"/0: {what}", [bad, *v[1:]]
    elif t.kind == "either":
        option = next(o for o in t.options if kind_of(v) in accepted(o))
        yield from mutations(option, v, kinds=False)


def kind_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    return {str: "string", float: "number", list: "array", dict: "object"}[type(v)]


def object_mutations(obj: Object, d: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    if not obj.open:
        yield "an unknown member", {**d, "zzUnknown": 1}
    for f in obj.fields:
        at = f"/{f.wire}"
        if f.tag is not None:
            yield f"{at}: another tag", {**d, f.wire: "no-such-tag"}
            continue
        if f.required:
            yield f"{at}: missing", {k: x for k, x in d.items() if k != f.wire}
        elif not f.nullable:
            yield f"{at}: null on an optional member", {**d, f.wire: None}
        if f.wire not in d:
            continue
        if f.const is not None:
            yield f"{at}: another constant", {**d, f.wire: "no-such-constant"}
            continue
        assert f.type is not None
        for what, bad in mutations(f.type, d[f.wire]):
            if bad is None and f.nullable:
                continue
            yield f"{at}: {what}", {**d, f.wire: bad}


# ── what protobuf cannot carry ──────────────────────────────────────────────────────────────────


def proto_view(t: TypeRef, v: Any) -> Any:
    """`v` as the binary form brings it back: an empty optional array comes back absent (protobuf
    writes no empty repeated field; docs/divergences.md)."""
    if t.kind == "ref":
        return proto_object(OBJECTS[t.name], v)
    if t.kind == "union":
        u = UNIONS[t.name]
        return proto_object(OBJECTS[dict(u.tags)[v[u.discriminator]]], v)
    if t.kind == "list":
        assert t.item is not None
        return [proto_view(t.item, x) for x in v]
    if t.kind == "either":
        return proto_view(next(o for o in t.options if kind_of(v) in accepted(o)), v)
    return v


def proto_object(obj: Object, d: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for f in obj.fields:
        if f.wire not in d:
            continue
        v = d[f.wire]
        if f.type is None:
            out[f.wire] = v
        elif not (v == [] and not f.required and f.type.kind in ("list", "either")):
            out[f.wire] = proto_view(f.type, v)
    return out


# ── the bindings ────────────────────────────────────────────────────────────────────────────────

SCHEMA = json.loads((OUT / "jsonschema" / "agui.schema.json").read_text("utf-8"))


REGISTRY: referencing.Registry[Any] = referencing.Registry().with_resource(
    SCHEMA["$id"], DRAFT202012.create_resource(SCHEMA)
)


@cache
def validator(name: str) -> Any:
    return spec_validator({"$ref": f"{SCHEMA['$id']}#{name}"}, REGISTRY)


@cache
def adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(getattr(agui_pydantic, name))


def test_the_fork_is_the_one_under_test() -> None:
    assert Path(agui_pydantic.__file__).is_relative_to(OUT)
    assert set(EVENTS) >= {"EveryScalarEvent", "EveryListEvent", "EveryEitherEvent"}


@pytest.mark.parametrize("name", EVENTS)
@EXAMPLES
@given(data=st.data())
def test_a_valid_document_goes_through_every_binding(name: str, data: st.DataObject) -> None:
    every_binding(name, data.draw(document(name), label=name))


def every_binding(name: str, doc: dict[str, Any]) -> None:
    """A valid document of the event `name` through every binding, and back as it was."""
    raw = orjson.dumps(doc)
    cls = DEFINITIONS[name]

    # attrs: strict decoding, and encoding gives the same bytes
    event = agui.decode(raw, cls, strict=True)
    assert agui.encode(event) == raw
    warnings: list[agui.Problem] = []
    assert agui.decode(raw, agui.Event, warnings=warnings) == event
    assert warnings == []

    # JSON Schema
    validator(name).validate(json.loads(raw))

    # pydantic: the same document back, alone and through the Event union
    model = adapter(name).validate_json(raw, by_name=False)
    assert adapter(name).dump_json(model) == raw
    assert adapter("Event").dump_json(adapter("Event").validate_json(raw, by_name=False)) == raw
    assert agui.to_pydantic(event) == model
    assert agui.from_pydantic(model) == event

    # protobuf, by the generated codec and by the protobuf runtime
    back = agui.decode_proto(agui.encode_proto(event), strict=True)
    expected = agui.decode_json(proto_object(OBJECTS[name], doc), cls, strict=True)
    assert back == expected
    message = to_message(event)
    assert from_message(message, strict=True) == expected
    again = type(message).FromString(message.SerializeToString(deterministic=True))
    assert from_message(again, strict=True) == expected


INVALID = settings(EXAMPLES, max_examples=max(1, EXAMPLES.max_examples // 6))


@pytest.mark.parametrize("name", EVENTS)
@INVALID
@given(data=st.data())
def test_an_invalid_document_is_refused_by_every_binding(name: str, data: st.DataObject) -> None:
    """Every change object_mutations makes to a drawn document, each on its own."""
    doc = data.draw(document(name), label=name)
    for what, bad in object_mutations(OBJECTS[name], doc):
        refused_by_every_binding(name, bad, what)


def refused_by_every_binding(name: str, bad: Any, what: str) -> None:
    """An invalid document of the definition `name`, refused by each binding that reads JSON."""
    raw = orjson.dumps(bad)
    with pytest.raises(agui.DecodeError):
        agui.decode(raw, DEFINITIONS[name], strict=True)
    assert not validator(name).is_valid(json.loads(raw)), what
    with pytest.raises(ValidationError):
        adapter(name).validate_json(raw, by_name=False)


def test_the_changes_cover_every_construct() -> None:
    """Among the changes made to a document of each event with every member present: each kind
    of invalidity the grammar has."""
    seen: set[str] = set()
    for name in EVENTS:
        doc = full(OBJECTS[name])
        seen |= {what.rsplit(": ", 1)[-1] for what, _ in object_mutations(OBJECTS[name], doc)}
    assert {
        "an unknown member",
        "another tag",
        "missing",
        "null on an optional member",
        "a string off the pattern",
        "a string of no format",
        "no value of the enum",
        "a fraction",
        "below min",
        "above max",
        "fewer than minItems",
        "an unknown tag",
        "no tag",
        "a string",
        "a integer",
        "a number",
        "a boolean",
        "a array",
        "a object",
        "a null",
    } <= seen


# ── one check per fix, by example ───────────────────────────────────────────────────────────────


def scalar(**members: Any) -> dict[str, Any]:
    doc = {
        "type": "EVERY_SCALAR",
        "text": "t",
        "count": 1,
        "ratio": 1,
        "flag": True,
        "anything": [1],
        "maybeNull": None,
        "bag": {},
        "mood": "out-of-office",
        "percent": 5,
        "narrowPercent": 10,
        "latitude": -90,
        "slug": "a-b",
        "pointer": "/a",
        "payload": {"x": 1},
        "bounded": -5,
        "atMost": 10,
        "fraction": 0.25,
        "atLeast": 0.5,
        "code": "ABC",
        "link": "https://example.com/",
        "at": "2026-12-04T18:00:00Z",
        "ticket": "urn:uuid:123e4567-e89b-12d3-a456-426614174000",
        "point": {"x": 1, "y": 2.5},
        "location": {"type": "location", "lat": 1.5, "lon": -180},
        "attachment": {"type": "note", "text": "n"},
        "fromPlace": "p",
    }
    return {**doc, **members}


def lists(**members: Any) -> dict[str, Any]:
    doc = {
        "type": "EVERY_LIST",
        **{
            f.wire: []
            for f in OBJECTS["EveryListEvent"].fields
            if f.required and f.type is not None and f.type.kind == "list"
        },
        "tags": ["a"],
        "atLeastTwo": [1, 2],
    }
    return {**doc, **members}


def test_a_bound_on_one_side_is_named_alone() -> None:
    """A member bounded on one side only (`max: 10`; `min: 0.5`) names the bound it broke, in
    decoding, encoding and `agui validate`, rather than an interval with None for the other end."""
    cases = (("atMost", 11, "11 must be ≤ 10"), ("atLeast", 0.25, "0.25 must be ≥ 0.5"))
    for member, value, said in (*cases, ("bounded", 6, "6 is outside [-5, 5]")):
        document = orjson.dumps(scalar(**{member: value}))
        with pytest.raises(agui.DecodeError) as wrong:
            agui.decode(document, strict=True)
        (problem,) = wrong.value.problems
        assert (problem.pointer, problem.kind, problem.message) == (f"/{member}", "range", said)
        shown = subprocess.run(
            [sys.executable, "-m", "agui", "validate", "--strict"],
            input=document,
            capture_output=True,
            check=False,
        )
        errors = orjson.loads(shown.stdout)["errors"]
        assert [(e["pointer"], e["message"]) for e in errors] == [(f"/{member}", said)]
    event = agui.decode(orjson.dumps(scalar()), strict=True)
    with pytest.raises(agui.EncodeError) as refused:
        agui.encode(attrs.evolve(event, at_most=11))
    assert (refused.value.pointer, refused.value.message) == ("/atMost", "11 must be ≤ 10")


def test_a_number_reads_back_as_it_was_written() -> None:
    """JSON integers are numbers; an int stays an int and a float a float, in both Python
    bindings, so the document round-trips byte for byte."""
    for ratio, python in ((1, int), (1.0, float), (-0.0, float), (1e300, float)):
        raw = orjson.dumps(scalar(ratio=ratio))
        event = agui.decode(raw, strict=True)
        assert type(event.ratio) is python and agui.encode(event) == raw
        model = adapter("EveryScalarEvent").validate_json(raw, by_name=False)
        assert type(model.ratio) is python and model.model_dump_json().encode() == raw


def test_an_integer_may_be_written_as_an_integral_float() -> None:
    """As in JSON Schema, 2.0 is an integer, at the top of a member and inside lists and
    alternatives, in every binding; it reads back as 2."""
    raw = orjson.dumps(scalar(count=2.0, percent=5.0))
    event = agui.decode(raw, strict=True)
    assert (type(event.count), event.percent) == (int, 5)
    assert validator("EveryScalarEvent").is_valid(json.loads(raw))
    model = adapter("EveryScalarEvent").validate_json(raw, by_name=False)
    assert (type(model.count), model.percent) == (int, 5)
    raw = orjson.dumps(lists(ints=[2.0], percents=[3.0], grid=[[1.0]], mixed=[4.0]))
    event = agui.decode(raw, strict=True)
    assert (event.ints, event.percents, event.grid, event.mixed) == ((2,), (3,), ((1,),), (4,))
    assert validator("EveryListEvent").is_valid(json.loads(raw))
    model = adapter("EveryListEvent").validate_json(raw, by_name=False)
    assert (model.ints, model.percents, model.grid, model.mixed) == ([2], [3], [[1]], [4])
    assert [type(x) for x in (*model.ints, *model.mixed)] == [int, int]


def test_an_integer_beyond_int64_has_no_binary_form() -> None:
    event = agui.decode(orjson.dumps(scalar(count=2**63 - 1)), strict=True)
    assert agui.decode_proto(agui.encode_proto(event)) == event
    bigger = agui.decode_json(scalar(count=2**64), strict=True)
    assert json.loads(agui.encode(bigger))["count"] == 2**64  # JSON has no bound
    with pytest.raises(agui.EncodeError, match="beyond what an int64 holds"):
        agui.encode_proto(bigger)


def test_nan_and_infinities_are_refused_both_ways() -> None:
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(agui.DecodeError):
            agui.decode_json(scalar(ratio=bad), strict=True)
        with pytest.raises(agui.DecodeError):
            agui.decode_json(lists(numbers=[bad], cube=[[[bad]]]), strict=False)
        event = agui.decode(orjson.dumps(scalar()), strict=True)
        with pytest.raises(agui.EncodeError, match="/ratio"):
            agui.encode(type(event)(**{**_fields(event), "ratio": bad}))
        with pytest.raises(ValidationError):
            adapter("EveryScalarEvent").validate_python(scalar(ratio=bad), by_name=False)


def _fields(event: Any) -> dict[str, Any]:
    return {a.name: getattr(event, a.name) for a in type(event).__attrs_attrs__}


def test_a_default_is_what_a_reader_assumes_and_is_never_written() -> None:
    raw = b'{"type":"TEXT_MESSAGE_START","messageId":"m"}'
    event = agui.decode(raw, strict=True)
    assert event.language is None and agui.encode(event) == raw
    model = adapter("Event").validate_json(raw, by_name=False)
    assert model.language is MISSING and model.model_dump_json().encode() == raw
    member = SCHEMA["$defs"]["TextMessageStartEvent"]["properties"]["language"]
    assert member["default"] == "en"
    assert "language" not in SCHEMA["$defs"]["TextMessageStartEvent"]["required"]
    assert agui.decode_proto(agui.encode_proto(event)) == event


def test_a_format_is_checked_by_every_binding_and_shown_in_each_schema() -> None:
    """Strict decoding, encoding, pydantic and the JSON Schema (with format assertion) refuse a
    string of no format, naming the member; pydantic's own schema shows the format, and the
    member stays the string it was (no AnyUrl, no datetime: it round-trips as written)."""
    ok = orjson.dumps(scalar(at="2024-02-29 23:59:60+00:00"))
    assert agui.encode(agui.decode(ok, strict=True)) == ok
    assert (
        adapter("EveryScalarEvent").dump_json(adapter("EveryScalarEvent").validate_json(ok)) == ok
    )
    for member, bad in (("at", "2026-02-30T10:00:00Z"), ("link", "/relative"), ("email", "a@b")):
        raw = orjson.dumps(scalar(**{member: bad}))
        with pytest.raises(agui.DecodeError) as caught:
            agui.decode(raw, strict=True)
        (problem,) = caught.value.problems
        assert (problem.pointer, problem.kind) == (f"/{member}", "format"), problem
        with pytest.raises(agui.DecodeError):  # tolerant decoding too: it is the contract
            agui.decode(raw)
        assert not validator("EveryScalarEvent").is_valid(json.loads(raw))
        with pytest.raises(ValidationError, match="string_format"):
            adapter("EveryScalarEvent").validate_json(raw)
    event = agui.decode(ok, strict=True)
    py = {"at": "at", "link": "link"}
    for member, bad in (("at", "yesterday"), ("link", "nowhere")):
        with pytest.raises(agui.EncodeError) as wrong:
            agui.encode(attrs.evolve(event, **{py[member]: bad}))
        assert wrong.value.pointer == f"/{member}" and "format" in wrong.value.message
    shown = adapter("EveryScalarEvent").json_schema()["properties"]
    assert shown["at"]["format"] == "date-time" and shown["email"]["format"] == "email"
    assert SCHEMA["$defs"]["Link"]["format"] == "uri"
    items = orjson.dumps(lists(links=["https://a.example/", "b"]))
    with pytest.raises(agui.DecodeError) as caught:
        agui.decode(items, strict=True)
    assert [p.pointer for p in caught.value.problems] == ["/links/1"]


def test_a_deprecated_member_warns_when_set_and_is_marked_in_every_binding() -> None:
    cls = DEFINITIONS["EveryScalarEvent"]
    event = agui.decode(orjson.dumps(scalar()), strict=True)
    with pytest.warns(
        DeprecationWarning, match=r"EveryScalarEvent.old_note is deprecated: use note"
    ):
        changed = attrs.evolve(event, old_note="n")
    with pytest.warns(DeprecationWarning, match=r"EveryScalarEvent.old_count is deprecated$"):
        attrs.evolve(event, old_count=1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attrs.evolve(event, note="n")  # no warning for a member that is not deprecated
        # a document may carry one: decoding keeps it without a warning
        assert agui.decode(agui.encode(changed), strict=True).old_note == "n"
    field = attrs.fields_dict(cls)["old_note"]
    assert field.metadata["deprecated"] == "EveryScalarEvent.old_note is deprecated: use note"
    assert (
        "Deprecated: use note"
        in SCHEMA["$defs"]["EveryScalarEvent"]["properties"]["oldNote"]["description"]
    )
    assert SCHEMA["$defs"]["EveryScalarEvent"]["properties"]["oldNote"]["deprecated"] is True
    assert "deprecated" not in SCHEMA["$defs"]["EveryScalarEvent"]["properties"]["note"]
    model_fields = agui_pydantic.EveryScalarEvent.model_fields
    assert model_fields["old_note"].deprecated and not model_fields["note"].deprecated
    proto = (OUT / "proto" / "ag_ui" / "events.proto").read_text("utf-8")
    assert re.search(r"optional string old_note = \d+ \[deprecated = true\];", proto), proto
    envelope = to_message(changed)
    fields = getattr(envelope, envelope.WhichOneof("event")).DESCRIPTOR.fields_by_name
    assert fields["old_note"].GetOptions().deprecated
    assert not fields["note"].GetOptions().deprecated


def test_py_renames_name_the_attribute_in_both_python_bindings() -> None:
    raw = orjson.dumps(scalar(untilTime=3))
    event = agui.decode(raw, strict=True)
    assert (event.origin, event.until) == ("p", 3)
    model = adapter("EveryScalarEvent").validate_json(raw, by_name=False)
    assert (model.origin, model.until) == ("p", 3)
    assert model.model_dump_json().encode() == raw


def test_a_tagged_object_used_directly_keeps_its_tag_over_protobuf() -> None:
    event = agui.decode(
        b'{"type":"LOCATION_SHARED","location":{"type":"location","lat":1.5,"lon":2}}',
        strict=True,
    )
    assert agui.decode_proto(agui.encode_proto(event), strict=True) == event


def test_a_list_of_a_pattern_alias_checks_every_item() -> None:
    assert agui.decode(orjson.dumps(lists()), strict=True)
    bad = lists(pointers=["/ok", "not a pointer"], percents=[0, 101], jsons=[1, None])
    with pytest.raises(agui.DecodeError) as info:
        agui.decode(orjson.dumps(bad), strict=True)
    assert [p.pointer for p in info.value.problems] == ["/jsons/1", "/percents/1", "/pointers/1"]


def test_lists_of_numbers_are_packed_and_read_unpacked_too() -> None:
    """proto3 packs repeated numbers and booleans; a reader must take either form."""
    schema = build_proto(SPEC, load_ledger(ledger_path(SPEC_FILE)))
    arm = next(
        f
        for f in next(m for m in schema.messages if m.name == "Event").fields
        if f.tag == "EVERY_LIST"
    )
    fields = {
        f.name: f for f in next(m for m in schema.messages if m.name == "EveryListEvent").fields
    }
    event = agui.decode(orjson.dumps(lists(ints=[1, -2], bools=[True, False], numbers=[0.5])))
    packed = agui.encode_proto(event)
    for name, items in (
        ("ints", b"\x01\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
        ("bools", b"\x01\x00"),
        ("numbers", struct.pack("<d", 0.5)),
    ):
        assert fields[name].key + bytes([len(items)]) + items in packed

    def varint(n: int) -> bytes:
        n &= (1 << 64) - 1
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        return bytes([*out, n])

    base = b"\x08" + varint(dict(schema.event_types)["EVERY_LIST"])  # base_event.type
    body = b"\x0a" + varint(len(base)) + base
    for name, values in (("ints", [1, -2]), ("bools", [1, 0])):
        for v in values:
            body += varint(fields[name].unpacked_key_int) + varint(v)
    body += varint(fields["numbers"].unpacked_key_int) + struct.pack("<d", 0.5)
    envelope = varint(arm.key_int) + varint(len(body)) + body
    doc = decode_proto_json(envelope)
    assert (doc["ints"], doc["bools"], doc["numbers"]) == ([1, -2], [True, False], [0.5])


def test_the_descriptors_are_what_protoc_makes_of_the_proto_files() -> None:
    protoc = pytest.importorskip("grpc_tools.protoc", reason="needs grpcio-tools")
    import grpc_tools
    from agui_generated import proto_pb2
    from google.protobuf import descriptor_pb2

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    names = [name for name, _ in proto_pb2.FILES]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        args = ["protoc", f"-I{OUT / 'proto'}", f"-I{include}"]
        assert protoc.main([*args, f"--descriptor_set_out={out}", *names]) == 0
        compiled = descriptor_pb2.FileDescriptorSet.FromString(Path(out).read_bytes())
    ours = {name: descriptor_pb2.FileDescriptorProto.FromString(d) for name, d in proto_pb2.FILES}
    assert {f.name: f for f in compiled.file} == ours
