r"""The JSON Schema binding (generated/jsonschema/agui.schema.json) agrees with strict agui.decode.

Every golden fixture is validated with `jsonschema.Draft202012Validator` against its definition,
addressed by anchor through a registry (`urn:agui:schema:1.0#TextPart`), and must be accepted
exactly when strict decoding accepts it. A document that is not JSON is rejected by every binding
before any schema runs.

One difference between the validator and JSON Schema itself is bridged here: python-jsonschema
runs `pattern` with Python's `re`, a different dialect from ECMA-262 (which JSON Schema
specifies: Python's `$` also matches before a final newline, its `\d` takes any Unicode digit).
The validator below runs patterns with the ECMA-262 engine the generated decoder uses
(codegen.regex.jsonschema_pattern).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
from jsonschema.exceptions import best_match
from referencing.jsonschema import DRAFT202012

import agui
from agui.wire.codec import DEFINITIONS, TAGS
from codegen.load import load_spec
from codegen.model import build
from codegen.regex import python_regex, spec_validator

from .conftest import FIXTURES, ROOT

SCHEMA_PATH = ROOT / "generated" / "jsonschema" / "agui.schema.json"
SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text("utf-8"))
SCHEMA_ID = SCHEMA["$id"]
OPEN_OBJECTS = {
    "AddOperation",
    "RemoveOperation",
    "ReplaceOperation",
    "MoveOperation",
    "CopyOperation",
    "TestOperation",
}


REGISTRY: referencing.Registry[Any] = referencing.Registry().with_resource(
    SCHEMA_ID, DRAFT202012.create_resource(SCHEMA)
)


@cache
def validator(name: str) -> Any:
    """A validator for one definition, reached by its $anchor from outside the document."""
    return spec_validator({"$ref": f"{SCHEMA_ID}#{name}"}, REGISTRY)


def load(raw: bytes) -> tuple[bool, Any]:
    """(is JSON, value): strict JSON, no NaN or Infinity."""

    def reject(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    try:
        return True, json.loads(raw, parse_constant=reject)
    except ValueError:
        return False, None


def _cases(kind: str) -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob(f"*/{kind}/*.json") if not p.name.endswith(".expect.json")
    )


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.stem}"


def schema_accepts(name: str, raw: bytes) -> bool:
    ok, value = load(raw)
    return ok and validator(name).is_valid(value)


def agui_accepts(name: str, raw: bytes) -> bool:
    try:
        agui.decode(raw, getattr(agui, name), strict=True)
    except agui.DecodeError:
        return False
    return True


# ── the document itself ───────────────────────────────────────────────────────────────────────


def test_schema_is_valid_2020_12() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_schema_is_self_contained() -> None:
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(SCHEMA)
    assert refs and all(r.startswith("#/$defs/") for r in refs)
    assert all(r.removeprefix("#/$defs/") in SCHEMA["$defs"] for r in refs)


def test_every_definition_has_its_anchor_and_a_description() -> None:
    for name, definition in SCHEMA["$defs"].items():
        assert definition["$anchor"] == name
        assert definition["description"]
    spec_names = [*DEFINITIONS, "Metadata", "JsonPointer", "JsonPatch", "EventType", "Role"]
    assert set(spec_names) <= set(SCHEMA["$defs"])


def test_objects_are_closed_except_the_open_ones() -> None:
    for name, definition in SCHEMA["$defs"].items():
        if definition.get("type") != "object" or "properties" not in definition:
            continue
        if name in TAGS:  # a union: its members say what is closed
            assert "unevaluatedProperties" not in definition, name
            continue
        if name in OPEN_OBJECTS:
            assert "unevaluatedProperties" not in definition, name
            assert definition["additionalProperties"] is True, name
        else:
            assert definition["unevaluatedProperties"] is False, name
        for wire, member in definition["properties"].items():
            assert member["description"], (name, wire)
            if member.get("type") == "object":  # metadata-like members are open by meaning
                assert member["additionalProperties"] == {}, (name, wire)
    assert SCHEMA["$defs"]["Metadata"]["additionalProperties"] == {}


def test_unions_are_discriminated() -> None:
    """A union checks its tag, then, by `if` on each tag, its member's definition; the
    OpenAPI-style `discriminator` annotation lists the members for generators."""
    for union, members in TAGS.items():
        definition = SCHEMA["$defs"][union]
        key = definition["discriminator"]["propertyName"]
        mapping = definition["discriminator"]["mapping"]
        assert mapping == {tag: f"#/$defs/{cls.__name__}" for tag, cls in members.items()}
        assert "oneOf" not in definition and "anyOf" not in definition
        assert definition["type"] == "object"
        assert definition["required"] == [key]
        assert definition["properties"] == {key: {"enum": list(members)}}
        assert definition["allOf"] == [
            {
                "if": {"type": "object", "required": [key], "properties": {key: {"const": tag}}},
                "then": {"$ref": f"#/$defs/{cls.__name__}"},
            }
            for tag, cls in members.items()
        ]
        for tag, cls in members.items():
            member = SCHEMA["$defs"][cls.__name__]
            assert member["properties"][key]["const"] == tag
            assert key in member["required"]


def test_optional_members_are_never_nullable() -> None:
    """null is valid only for required any-JSON members (and inside open objects)."""
    nullable = []
    for name, definition in SCHEMA["$defs"].items():
        for wire, member in definition.get("properties", {}).items():
            check = spec_validator({"$defs": SCHEMA["$defs"], **member}, REGISTRY)
            if check.is_valid(None):
                assert wire in definition["required"], (name, wire)
                nullable.append(f"{name}.{wire}")
    # exactly the members the spec says `nullable: true` (a fork may add some)
    declared = [
        f"{o.name}.{f.wire}" for o in build(load_spec()).objects for f in o.fields if f.nullable
    ]
    assert sorted(nullable) == sorted(declared)
    assert {"CustomEvent.value", "StateSnapshotEvent.snapshot"} <= set(declared)


def test_the_root_validates_any_event_and_nothing_else() -> None:
    root = spec_validator(SCHEMA, REGISTRY)
    assert root.is_valid({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    assert not root.is_valid({"threadId": "t", "runId": "r", "messages": []})
    assert not root.is_valid({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "x": 1})


def test_python_regex_translates_only_the_end_anchor() -> None:
    assert python_regex("^(/([^/~]|~[01])*)*$") == "^(/([^/~]|~[01])*)*\\Z"
    assert python_regex(r"^a\$[$]$") == r"^a\$[$]\Z"


# ── agreement with strict decoding, fixture by fixture ────────────────────────────────────────


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_valid_fixture_is_valid_against_its_definition(path: Path) -> None:
    name = path.parent.parent.name
    raw = path.read_bytes()
    assert agui_accepts(name, raw)
    ok, value = load(raw)
    assert ok
    errors = [e.message for e in validator(name).iter_errors(value)]
    assert errors == []
    for union, members in TAGS.items():  # and through every union it belongs to
        if getattr(agui, name) in members.values():
            assert validator(union).is_valid(value), union


@pytest.mark.parametrize("path", _cases("invalid"), ids=_id)
def test_invalid_fixture_is_invalid_against_its_definition(path: Path) -> None:
    name = path.parent.parent.name
    raw = path.read_bytes()
    assert not agui_accepts(name, raw)
    assert not schema_accepts(name, raw)


def test_python_jsonschema_alone_would_accept_a_newline_pointer() -> None:
    """Why the validator above replaces `pattern`: the stock one accepts "\\n" as a pointer."""
    stock = jsonschema.Draft202012Validator(
        {"$ref": f"{SCHEMA_ID}#RemoveOperation"}, registry=REGISTRY
    )
    document = {"op": "remove", "path": "\n"}
    assert stock.is_valid(document)
    assert not validator("RemoveOperation").is_valid(document)
    assert not agui_accepts("RemoveOperation", json.dumps(document).encode())


# ── errors: a union is checked by its discriminator ───────────────────────────────────────────


def best_error(name: str, document: Any) -> jsonschema.ValidationError:
    error = best_match(validator(name).iter_errors(document))
    assert error is not None, document
    return error


def _wrong_members(member: str, document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(member, the document with it broken) for each member of the definition, present or not,
    but its tag, that a value of another JSON type breaks; and, for a closed definition, ("", the
    document with an unknown member), which is reported on the object itself."""
    for wire in SCHEMA["$defs"][member]["properties"]:
        if wire == _tag_key(member):
            continue
        for wrong in (42, "x", [42], {"zz": 42}, None):
            if wire in document and type(wrong) is type(document[wire]):
                continue
            broken = {**document, wire: wrong}
            if not validator(member).is_valid(broken):
                yield wire, broken
                break
    if member not in OPEN_OBJECTS:
        yield "", {**document, "zzUnknown": 1}


def _tag_key(member: str) -> str:
    return next(SCHEMA["$defs"][u]["discriminator"]["propertyName"] for u in _unions_of(member))


def _unions_of(member: str) -> list[str]:
    return [u for u, members in TAGS.items() if member in {c.__name__ for c in members.values()}]


def _members() -> list[Any]:
    """(union, member, its first valid fixture) for every member of every union. A member with no
    valid fixture yet (a spec just extended, its fixtures still to write) gets its folder instead,
    and its case fails saying what to add, as test_every_definition_has_fixtures does."""
    return [
        pytest.param(
            union,
            cls.__name__,
            next(iter(_cases_of(cls.__name__)), FIXTURES / cls.__name__ / "valid"),
            id=f"{union}/{cls.__name__}",
        )
        for union, members in TAGS.items()
        for cls in members.values()
    ]


def _cases_of(name: str) -> list[Path]:
    return sorted(p for p in _cases("valid") if p.parent.parent.name == name)


@pytest.mark.parametrize(("union", "member", "fixture"), _members())
def test_a_wrong_member_is_reported_at_its_path(union: str, member: str, fixture: Path) -> None:
    """Through its union, a document with a member of the wrong type gets the error that
    validating against its own definition gives: best_match names the member's path, not "not
    valid under any of the given schemas"."""
    if fixture.is_dir() or not fixture.exists():
        pytest.fail(
            f"{fixture.relative_to(ROOT).as_posix()}: no valid fixture of {member}; add one"
        )
    for wire, broken in _wrong_members(member, json.loads(fixture.read_bytes())):
        through_union = best_error(union, broken)
        alone = best_error(member, broken)
        if wire:
            assert list(through_union.path)[:1] == [wire], (wire, through_union.message)
        else:
            assert "'zzUnknown' was unexpected" in through_union.message
        assert (through_union.json_path, through_union.message) == (alone.json_path, alone.message)


def test_the_root_reports_the_real_error() -> None:
    root = spec_validator(SCHEMA, REGISTRY)
    error = best_match(
        root.iter_errors({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42})
    )
    assert error is not None
    assert (error.json_path, error.message) == ("$.delta", "42 is not of type 'string'")
    # all the errors there are: that one alone, not one per event kind
    assert (
        len(list(root.iter_errors({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42})))
        == 1
    )
    nested = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "u", "role": "user", "content": [{"type": "text", "text": 7}]}],
    }
    error = best_match(root.iter_errors(nested))
    assert error is not None
    assert (error.json_path, error.message) == (
        "$.messages[0].content[0].text",
        "7 is not of type 'string'",
    )
    for document in ([], "RUN_STARTED", None):
        assert [e.message for e in root.iter_errors(document)] == [
            f"{document!r} is not of type 'object'"
        ]


@pytest.mark.parametrize("union", sorted(TAGS))
def test_an_unknown_or_missing_tag_is_named(union: str) -> None:
    key = SCHEMA["$defs"][union]["discriminator"]["propertyName"]
    unknown = best_error(union, {key: "NO_SUCH_TAG"})
    assert list(unknown.path) == [key]
    assert unknown.message.startswith("'NO_SUCH_TAG' is not one of [")
    assert [e.message for e in validator(union).iter_errors({key: "NO_SUCH_TAG"})] == [
        unknown.message
    ]
    missing = best_error(union, {})
    assert (missing.json_path, missing.message) == ("$", f"'{key}' is a required property")
