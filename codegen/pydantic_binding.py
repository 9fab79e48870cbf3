"""The pydantic v2 binding: datamodel-code-generator run on the generated JSON Schema.

The schema is the input, not the spec: the binding is exactly what standard tooling makes of the
published contract. What dmcg cannot read from a schema is supplied through its own options, never
by editing its output:

* `type_overrides` replace the two JSON Schema types pydantic has no exact equivalent for. An
  `integer` member becomes `Int` (an int that also takes an integral float such as 2.0, as JSON
  Schema does, but never "2" or true), and a `{"not": {"type": "null"}}` member becomes
  `NonNullJson` (any JSON value except null). Both live in the generated `_base.py`.
* `base_class` is `_base.WireModel`, which adds `serialize_by_alias=True` to every model so that
  `model_dump_json()` writes the wire form.

Everything else comes from the schema: `unevaluatedProperties: false` -> `extra="forbid"`,
`additionalProperties: true` (JSON Patch operations) -> `extra="allow"`, the `discriminator`
annotation next to each `oneOf` -> `Field(discriminator=...)`, optional members -> `X | MISSING`
(absent stays absent and null is rejected), `additionalProperties: {}` -> `dict[str, Any]`.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from codegen.model import Spec, TypeRef

DMCG_VERSION = "0.89.0"
"""The datamodel-code-generator release the output is pinned to (pyproject's `codegen` extra)."""

PACKAGE = "agui_pydantic"
BASE = f"{PACKAGE}._base"


def _nested(t: TypeRef) -> list[str]:
    """Kinds inside lists and alternatives that a field-level override could not reach."""
    inner = [t.item] if t.kind == "list" and t.item else list(t.options)
    return [k for i in inner for k in [i.kind, *_nested(i)] if k in ("int", "json")]


def type_overrides(spec: Spec) -> dict[str, str]:
    """`Class.python_name` -> the `_base` type that replaces dmcg's reading of the member."""
    out: dict[str, str] = {}
    for obj in spec.objects:
        for f in obj.fields:
            if f.type is None:
                continue
            if _nested(f.type):
                raise NotImplementedError(
                    f"{obj.name}.{f.wire}: an int or json inside a list or alternative needs an "
                    "override dmcg cannot express per field; extend codegen/pydantic_binding.py"
                )
            if f.type.kind == "int":
                out[f"{obj.name}.{f.py}"] = f"{BASE}.Int"
            elif f.type.kind == "json" and not f.nullable:
                out[f"{obj.name}.{f.py}"] = f"{BASE}.NonNullJson"
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
        "strict_types": ["str", "bool"],  # no "1" -> True, no b"x" -> "x"
        "strict_nullable": True,  # a member with a default is not nullable
        "use_missing_sentinel": True,  # optional members: X | MISSING, never None
        "deserialize_default_values": ["enum"],  # role default -> TextMessageRole.ASSISTANT
        "type_overrides": type_overrides(spec),
        # documentation
        "use_schema_description": True,
        "use_field_description": True,
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

    text = generate(schema_text, **options(spec, header))
    if not isinstance(text, str):
        raise RuntimeError("datamodel-code-generator produced several modules; expected one")
    return text
