"""The pydantic v2 binding: datamodel-code-generator run on the generated JSON Schema.

The schema is the input, not the spec: the binding is exactly what standard tooling makes of the
published contract. What dmcg cannot read from a schema is supplied through its own options, never
by editing its output:

* `type_overrides` replace the two JSON Schema types pydantic has no exact equivalent for. An
  `integer` member becomes `Int` (an int that also takes an integral float such as 2.0, as JSON
  Schema does, but never "2" or true), and a `{"not": {"type": "null"}}` member becomes
  `NonNullJson` (any JSON value except null). Both live in `_base.py`, a copy of
  codegen/pydantic_runtime/_base.py.
* `base_class` is `_base.WireModel`, which adds `serialize_by_alias=True` to every model so that
  `model_dump_json()` writes the wire form.
* `use_one_literal_as_default` gives a discriminator (or a required constant) its value as its
  default in the source, for type checkers; `_base.WireModel` keeps the member required when
  validating and fills it in when constructing.

Three readings of the schema are adjusted before dmcg sees it: `without_defaults` (a default is what a
reader assumes, not a value to write back), `unions_as_one_of` (the published schema checks a
union by `if`/`then` on the tag, for validators' sake; dmcg builds a tagged union from a `oneOf`)
and `ecma_patterns` (a `pattern` is ECMA-262, which neither of pydantic's regex engines is: each
becomes `x-python-type: _types.Pattern{n}`, a string checked by `_base.EcmaPattern`).

Everything else comes from the schema: `unevaluatedProperties: false` -> `extra="forbid"`,
`additionalProperties: true` (JSON Patch operations) -> `extra="allow"`, the `discriminator`
annotation next to each `oneOf` -> `Field(discriminator=...)`, optional members -> `X | MISSING`
(absent stays absent and null is rejected), `additionalProperties: {}` -> `dict[str, Any]`,
`description` -> the class docstring, and `Field(description=...)` for members.
"""

from __future__ import annotations

import copy
import json
from importlib import metadata
from typing import Any

from codegen.model import Spec, TypeRef, snake

DMCG_VERSION = "0.89.0"
"""The datamodel-code-generator release the output is pinned to (pyproject's `codegen` extra)."""

PACKAGE = "agui_pydantic"
BASE = f"{PACKAGE}._base"
"""The copy of codegen/pydantic_runtime/_base.py: WireModel, Int, Number, NonNullJson, the checks."""
TYPES = f"{PACKAGE}._types"
"""The generated types of the spec's patterns, formats and lists of JSON (pydantic_types.py.jinja)."""


def json_composite(t: TypeRef) -> str | None:
    """The `_types` name of a type that holds non-null JSON below its top (`list[json]`,
    `list[list[json]]`, a list alias of json with minItems): dmcg reads such an item as `Any`,
    which would take null. None for a type with no JSON inside a list."""
    if t.kind != "list" or t.item is None:
        return None
    inner = "Json" if t.item.kind == "json" else json_composite(t.item)
    if inner is None:
        return None
    n = t.constraints.min_items
    return f"{inner}List" + (f"Min{n}" if n else "")


def json_composites(spec: Spec) -> dict[str, tuple[str, str]]:
    """Each `_types` type json_composite names -> (its definition, the spec type it stands for),
    innermost first."""
    out: dict[str, tuple[str, str]] = {}

    def define(t: TypeRef) -> str:
        if t.kind == "json":
            return "NonNullJson"
        assert t.item is not None
        inner = define(t.item)
        name = json_composite(t)
        assert name is not None
        n = t.constraints.min_items
        text = f"Annotated[list[{inner}], Field(min_length={n})]" if n else f"list[{inner}]"
        out.setdefault(name, (text, t.spelled))
        return name

    for obj in spec.objects:
        for f in obj.fields:
            if f.type is not None and json_composite(f.type):
                define(f.type)
    return out


def type_overrides(spec: Spec) -> dict[str, str]:
    """`Class.python_name` -> the `_base` or `_types` type that replaces dmcg's reading of the member: a
    non-null `json` member is NonNullJson (dmcg reads `{"not": {"type": "null"}}` as Any), and so
    is every JSON item of a list, at any depth (json_composite)."""
    out: dict[str, str] = {}
    for obj in spec.objects:
        for f in obj.fields:
            if f.type is None:
                continue
            composite = json_composite(f.type)
            if composite is not None:
                out[f"{obj.name}.{f.py}"] = f"{TYPES}.{composite}"
            elif f.type.kind == "json" and not f.nullable:
                out[f"{obj.name}.{f.py}"] = f"{BASE}.NonNullJson"
    return out


def aliases(spec: Spec) -> dict[str, str]:
    """`Class.wireName` -> the Python name a `py:` in the spec gives it (the attrs binding's)."""
    return {
        f"{obj.name}.{f.wire}": f.py
        for obj in spec.objects
        for f in obj.fields
        if f.py != snake(f.wire)
    }


def patterns(spec: Spec) -> dict[str, int]:
    """Every pattern of the spec (of its aliases, then of its members), numbered: `_types.Pattern{n}`
    is a string matching pattern n in ECMA-262's sense (`_base.EcmaPattern`)."""
    ids: dict[str, int] = {}
    for alias in spec.aliases:
        if alias.constraints.pattern is not None:
            ids.setdefault(alias.constraints.pattern, len(ids))
    for pattern in spec.pattern_ids:
        ids.setdefault(pattern, len(ids))
    return ids


def formats(spec: Spec) -> dict[str, tuple[str | None, str]]:
    """Each `_types` type of a string with a format -> (its pattern or None, the format), for every
    such string of the spec: `Format{Name}` (`FormatDateTime`), or `Pattern{n}Format{Name}` when
    it has a pattern too. `_base.SpecFormat` checks the format."""
    ids = patterns(spec)
    out: dict[str, tuple[str | None, str]] = {}
    types = [a.type for a in spec.aliases]
    types += [t for o in spec.objects for f in o.fields for t in (f.type.walk if f.type else ())]
    for t in types:
        c = t.constraints
        if c.format is not None:
            out[format_type(c.pattern, c.format, ids)] = (c.pattern, c.format)
    return dict(sorted(out.items()))


def format_type(pattern: str | None, fmt: str, ids: dict[str, int]) -> str:
    name = "Format" + "".join(word.capitalize() for word in fmt.split("-"))
    return name if pattern is None else f"Pattern{ids[pattern]}{name}"


def ecma_patterns(schema: dict[str, Any], ids: dict[str, int]) -> dict[str, Any]:
    """The schema with each `pattern` replaced by `x-python-type: _types.Pattern{n}` (dmcg's own
    keyword for a member's Python type). dmcg would write `Field(pattern=...)`, which pydantic runs
    with the Rust `regex` crate or Python's `re`, neither of them ECMA-262, the dialect of the
    schema's patterns (codegen/regex.py); `_base.EcmaPattern` runs them with an ECMA-262 engine and
    puts the pattern back into `model_json_schema()`. A `format` goes the same way
    (`_types.Format{Name}`, format_type): dmcg would make `uri` pydantic's AnyUrl and `date-time` a
    datetime, which normalise what they read, so a member would not round-trip as written."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: walk(value) for key, value in node.items()}
        pattern = out.get("pattern")
        fmt = out.get("format")
        if isinstance(fmt, str) and out.get("type") == "string":
            out.pop("pattern", None)
            del out["format"]
            pattern = pattern if isinstance(pattern, str) else None
            out["x-python-type"] = f"{TYPES}.{format_type(pattern, fmt, ids)}"
        elif isinstance(pattern, str) and out.get("type") == "string":
            del out["pattern"]
            out["x-python-type"] = f"{TYPES}.Pattern{ids[pattern]}"
        return out

    result = walk(schema)
    assert isinstance(result, dict)
    return result


def without_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as dmcg reads it: without the `default` annotations of members. In this contract a
    default is what a reader assumes for an absent member; dmcg would make it the attribute's value,
    which pydantic then writes back, so the member would no longer round-trip as absent."""
    out = copy.deepcopy(schema)
    for definition in out.get("$defs", {}).values():
        for member in definition.get("properties", {}).values():
            member.pop("default", None)
    return out


def unions_as_one_of(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each union as the `oneOf` of its members, which is what dmcg reads as a
    union (with the `discriminator` beside it, a tagged one). The published schema checks a union
    by `if`/`then` on the tag, so that a validator reports the member's own errors; dmcg reads that
    form as an object with one member. The members are the `discriminator` annotation's mapping,
    in order; the validation keywords go, since `oneOf` says all of it."""
    out = copy.deepcopy(schema)
    for definition in out.get("$defs", {}).values():
        discriminator = definition.get("discriminator")
        if discriminator is None:
            continue
        for keyword in ("type", "required", "properties", "allOf"):
            definition.pop(keyword, None)
        definition["oneOf"] = [{"$ref": ref} for ref in discriminator["mapping"].values()]
    return out


def options(spec: Spec, header: str) -> dict[str, Any]:
    from datamodel_code_generator import InputFileType, PythonVersion
    from datamodel_code_generator.enums import DataModelType

    return {
        "input_file_type": InputFileType.JsonSchema,
        "output_model_type": DataModelType.PydanticV2BaseModel,
        "target_python_version": PythonVersion.PY_311,
        "target_pydantic_version": "2.14",
        "custom_file_header": header,
        "disable_timestamp": True,
        "formatters": [],  # render.py formats every Python output with the project's ruff
        "base_class": f"{BASE}.WireModel",
        # names: snake_case attributes, camelCase aliases, both accepted when constructing
        "snake_case_field": True,
        "allow_population_by_field_name": True,
        "capitalise_enum_members": True,  # EventType.RUN_STARTED, as in agui
        # types
        "use_annotated": True,
        "use_union_operator": True,
        "use_standard_collections": True,
        "use_type_alias": True,  # Event, Message, ... stay named (TypeAliasType)
        "skip_root_model": True,  # the root is `$ref: Event`, which is already named
        # no "1" -> True, no b"x" -> "x"; integer and number are the _base types (import_overrides)
        "strict_types": ["str", "bool", "int", "float"],
        "import_overrides": {"StrictInt": BASE, "StrictFloat": BASE},
        "strict_nullable": True,  # a member with a default is not nullable
        "use_missing_sentinel": True,  # optional members: X | MISSING, never None
        "type_overrides": type_overrides(spec),
        "aliases": aliases(spec),
        # a discriminator, or a required constant, has its value as its default, so that
        # `TextMessageStartEvent(message_id="m")` type-checks; _base.WireModel keeps it required
        # when validating a document and fills it in when constructing
        "use_one_literal_as_default": True,
        # documentation: classes get their docstring, members Field(description=...), which
        # model_json_schema() and so FastAPI's OpenAPI document show
        "use_schema_description": True,
        "use_double_quotes": True,
    }


def generate_models(schema_text: str, spec: Spec, header: str) -> str:
    """The source of agui_pydantic/models.py, before ruff formatting."""
    try:
        found = metadata.version("datamodel-code-generator")
    except metadata.PackageNotFoundError:
        found = None
    if found != DMCG_VERSION:
        raise RuntimeError(
            f"the pydantic binding is generated with datamodel-code-generator=={DMCG_VERSION}, "
            f"found {found or 'none'}: pip install -e '.[codegen]'"
        )
    from datamodel_code_generator import generate

    schema = unions_as_one_of(without_defaults(json.loads(schema_text)))
    schema = ecma_patterns(schema, patterns(spec))
    text = generate(json.dumps(schema, ensure_ascii=False), **options(spec, header))
    if not isinstance(text, str):
        raise RuntimeError("datamodel-code-generator produced several modules; expected one")
    return text
