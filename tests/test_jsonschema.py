"""The JSON Schema binding (generated/jsonschema/agui.schema.json) agrees with strict agui.decode.

Every golden fixture is validated with `jsonschema.Draft202012Validator` against its definition,
addressed by anchor through a registry (`urn:agui:schema:1.0#TextPart`), and must be accepted
exactly when strict decoding accepts it. A document that is not JSON is rejected by every binding
before any schema runs.

One difference between the validator and JSON Schema itself is bridged here: python-jsonschema
runs `pattern` with Python's `re`, whose `$` also matches before a final newline, where ECMA-262
(which JSON Schema specifies) does not. The validator below runs patterns in ECMA-262's sense,
with the same translation the generated decoder uses (codegen.regex.python_regex).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
from referencing.jsonschema import DRAFT202012

import agui
from agui.wire.codec import DEFINITIONS, TAGS
from codegen.regex import python_regex

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


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not re.search(python_regex(pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"pattern": _ecma_pattern}
)
REGISTRY: referencing.Registry[Any] = referencing.Registry().with_resource(
    SCHEMA_ID, DRAFT202012.create_resource(SCHEMA)
)


@cache
def validator(name: str) -> Any:
    """A validator for one definition, reached by its $anchor from outside the document."""
    return Validator({"$ref": f"{SCHEMA_ID}#{name}"}, registry=REGISTRY)


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
    for union, members in TAGS.items():
        definition = SCHEMA["$defs"][union]
        assert definition["oneOf"] == [
            {"$ref": f"#/$defs/{cls.__name__}"} for cls in members.values()
        ]
        mapping = definition["discriminator"]["mapping"]
        assert mapping == {tag: f"#/$defs/{cls.__name__}" for tag, cls in members.items()}
        key = definition["discriminator"]["propertyName"]
        for tag, cls in members.items():
            member = SCHEMA["$defs"][cls.__name__]
            assert member["properties"][key]["const"] == tag
            assert key in member["required"]


def test_optional_members_are_never_nullable() -> None:
    """null is valid only for required any-JSON members (and inside open objects)."""
    nullable = []
    for name, definition in SCHEMA["$defs"].items():
        for wire, member in definition.get("properties", {}).items():
            check = Validator({"$defs": SCHEMA["$defs"], **member}, registry=REGISTRY)
            if check.is_valid(None):
                assert wire in definition["required"], (name, wire)
                nullable.append(f"{name}.{wire}")
    assert sorted(nullable) == [
        "AddOperation.value",
        "CustomEvent.value",
        "RawEvent.event",
        "ReplaceOperation.value",
        "StateSnapshotEvent.snapshot",
        "TestOperation.value",
    ]


def test_the_root_validates_any_event_and_nothing_else() -> None:
    root = Validator(SCHEMA, registry=REGISTRY)
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
