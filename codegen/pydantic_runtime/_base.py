"""What the pydantic models need beyond what datamodel-code-generator reads from the schema.

`WireModel` is the base of every model. `Int` and `Number` are JSON Schema's `integer` and
`number`: dmcg writes the names `StrictInt` and `StrictFloat` for every integer and number of the
schema, at any depth (its `strict_types`), and codegen/pydantic_binding.py points those imports
here (`import_overrides`), so `StrictInt` and `StrictFloat` below are `Int` and `Number`, not
pydantic's. `NonNullJson` replaces dmcg's reading of `{"not": {"type": "null"}}` members.
`EcmaPattern` and `SpecFormat` check a string's spec pattern and format.

Nothing here depends on the spec: what does comes from the generated `_spec` (the members each
model pins, the spec's defaults) and `_types` (a type per pattern, format and list of JSON, which
codegen gives dmcg), so this module is written once, checked by ruff and mypy where it is
written (codegen/pydantic_runtime/), and copied into agui_pydantic/ as it is.
"""

from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    AfterValidator,
    AllowInfNan,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Strict,
    StrictInt as _PydanticStrictInt,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from ._spec import CONSTANTS, DEFAULTS

_MODELS = f"{__package__}.models"


def _schema_defaults(schema: dict[str, Any], cls: type) -> None:
    """pydantic's JSON Schema of a model with the spec's defaults as `default` annotations."""
    properties = schema.get("properties", {})
    for wire, value in DEFAULTS.get(cls.__name__, {}).items():
        if wire in properties:
            properties[wire].setdefault("default", value)


class WireModel(BaseModel):
    """The base of every model of the binding: wire (camelCase) names on output by default, and
    either name accepted when constructing (`RunStartedEvent(thread_id=...)`).

    A member the class pins (the discriminator, such as `type`, `role` or `op`, and a required
    constant) may be left out when constructing: `TextMessageStartEvent(message_id="m")` and
    `model_construct` fill it in, it counts as set, and the wire form always has it. It stays
    required when validating a document (`model_validate`, `model_validate_json`, a TypeAdapter, a
    member of another model), as on the wire; `model_json_schema()` says so too. Its default in
    the source is for type checkers, which read the constructor from it.

    Validate wire documents with `by_name=False` (as `agui.to_pydantic` does) to reject
    snake_case keys, which are not part of the contract."""

    model_config = ConfigDict(
        serialize_by_alias=True,
        validate_by_alias=True,
        validate_by_name=True,
        json_schema_extra=_schema_defaults,
    )

    __wire_constants__: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    """(attribute, wire name, value) of each member this class pins."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Runs as the class is made, before pydantic collects its fields: without the class
        # attribute that dmcg writes as the default, a pinned member is a required field.
        super().__init_subclass__(**kwargs)
        if cls.__module__ != _MODELS:
            return
        constants = CONSTANTS.get(cls.__name__, ())
        for attribute, _wire, value in constants:
            if cls.__dict__.get(attribute) == value:
                delattr(cls, attribute)
        cls.__wire_constants__ = constants

    def __init__(self, /, **data: Any) -> None:
        for attribute, wire, value in type(self).__wire_constants__:
            if attribute not in data and wire not in data:
                data[wire] = value
        super().__init__(**data)

    # pydantic's mark of its own __init__: validation does not go through this one (a "custom
    # init" would run it on every document, filling in what the document left out, and slowly).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        for attribute, wire, value in cls.__wire_constants__:
            if attribute not in values and wire not in values:
                values[attribute] = value
                if _fields_set is not None:
                    _fields_set = {*_fields_set, attribute}
        return super().model_construct(_fields_set, **values)


def _integral(value: Any) -> Any:
    if type(value) is float and value.is_integer():
        return int(value)
    return value


Int = Annotated[_PydanticStrictInt, BeforeValidator(_integral)]
"""A JSON integer. Like JSON Schema, it takes a number with no fractional part written as a float
(2.0 becomes 2), but never a string or a boolean (pydantic's lax int would take "2" and true)."""

Number = Annotated[_PydanticStrictInt | Annotated[float, Strict(), AllowInfNan(False)], "number"]
"""A JSON number: an int when the document has an integer, a float otherwise, so that a document
reads back as it was written (1 stays 1, 1.0 stays 1.0). Never a string or a boolean, and never
NaN or an infinity, which are no JSON numbers."""

StrictInt = Int
"""The name dmcg writes for every JSON Schema integer (see the module docstring): Int."""

StrictFloat = Number
"""The name dmcg writes for every JSON Schema number (see the module docstring): Number."""


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("null is not allowed here: leave the member out instead")
    return value


NonNullJson = Annotated[Any, AfterValidator(_not_null)]
"""Any JSON value except null (the spec's `json` type on a member that is not nullable)."""


class EcmaPattern:
    """A string member's spec pattern, run as ECMA-262 with the u flag (JSON Schema's dialect),
    where `Field(pattern=...)` would run it with pydantic-core's Rust `regex` crate or Python's
    `re`, neither of which is ECMA-262 (`\\d` takes "١٢", `\\p{L}` or a lookbehind is refused by
    one or the other). The engine is `regress`, as in the attrs binding's decoders; the error is
    pydantic's own `string_pattern_mismatch`, and `model_json_schema()` shows the pattern."""

    __slots__ = ("_matches", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._matches: Any = None

    def _check(self, value: str) -> str:
        if self._matches is None:
            import regress

            find = regress.Regex(self.pattern, "u").find

            def matches(text: str) -> bool:
                try:
                    return find(text) is not None
                except UnicodeEncodeError:  # a lone surrogate, which the wire cannot carry
                    return False

            self._matches = matches
        if not self._matches(value):
            raise PydanticCustomError(
                "string_pattern_mismatch",
                "String should match pattern '{pattern}'",
                {"pattern": self.pattern},
            )
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out["pattern"] = self.pattern
        return out


class SpecFormat:
    """A string member's spec format (`uri`, `date-time`, `uuid`, `email`), checked as the attrs
    binding checks it (agui_generated._formats: ajv-formats' definitions), where dmcg's own reading
    would make the member an AnyUrl or a datetime that rewrite what they read. The error is
    `string_format`; `model_json_schema()` shows the format."""

    __slots__ = ("format",)

    def __init__(self, format: str) -> None:
        self.format = format

    def _check(self, value: str) -> str:
        from agui_generated import _formats

        if not _formats.conforms(self.format, value):
            raise PydanticCustomError(
                "string_format",
                "String should be {what} (format {format})",
                {"what": _formats.FORMATS[self.format], "format": self.format},
            )
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out["format"] = self.format
        return out
