"""The intermediate model: typed, checked, flattened definitions the templates only format.

`build(raw)` turns the validated YAML into a `Spec`. Every meaning is decided here (Python names and
annotations, flattened mixins, dependency order, constraints inherited from aliases), so the
templates never compute anything. Whatever the bindings cannot all express is refused here, with
the YAML path and a sentence, before any template runs.

The type grammar (spec/README.md): `str`, `int`, `number`, `bool`, `json`, `object`, a definition
(enum, alias, object or union), `list[T]` for any T, and `A | B | ...` whose alternatives are
different JSON kinds (a string, a number, a boolean, an array, an object).
"""

from __future__ import annotations

import functools
import keyword
import math
import re
from collections.abc import Iterator
from typing import Any

import attrs

from codegen.load import NAMING, SpecError, yaml_path
from codegen.regex import compile_error, search
from codegen.runtime import FORMATS, conforms

SCALARS = {"str": "str", "int": "int", "number": "int | float", "bool": "bool"}
JSON_KINDS = {"str": "a string", "int": "an integer", "number": "a number", "bool": "a boolean"}
KIND_OF = {
    "str": "string",
    "enum": "string",
    "int": "number",
    "number": "number",
    "bool": "boolean",
    "list": "array",
    "object": "object",
    "ref": "object",
    "union": "object",
}
"""The JSON kind of a value of each type kind: what tells the alternatives of `A | B` apart."""
PLURAL = {
    "string": "strings",
    "number": "numbers",
    "boolean": "booleans",
    "array": "arrays",
    "object": "objects",
}
DEFAULT_KINDS = ("str", "int", "number", "bool", "enum")
EXTENSION_NUMBERS = 1000
"""The default of the spec's `extensionNumbers`: an extension's first protobuf number in an
official message or enum. Far above the official numbers (EventType has 31 values, no message
has 20 fields), below 2048, so that its field keys still take two bytes, and clear of protobuf's
own 19000-19999."""
"""The kinds of value a `default:` may be given for."""


@attrs.frozen
class Constraints:
    """What a value must satisfy beyond its type: bounds of an int or number, the pattern and the
    format of a string, the least length of a list. On a TypeRef they are the effective ones: an
    alias's own, narrowed by the field that uses it."""

    min: int | float | None = None
    max: int | float | None = None
    pattern: str | None = None
    min_items: int | None = None
    format: str | None = None  # a key of codegen.runtime.FORMATS

    @property
    def any(self) -> bool:
        return self != Constraints()


@attrs.frozen
class TypeRef:
    """A resolved type. `kind` is one of: str int number bool json object enum ref union list
    either. Constraints are part of the type, so they follow it into lists and alternatives
    (`list[JsonPointer]` checks the pattern of every item)."""

    kind: str
    name: str = ""  # enum, object or union name
    item: TypeRef | None = None  # list item type
    options: tuple[TypeRef, ...] = ()  # either: one option per JSON kind
    py: str = ""  # the Python annotation
    expected: str = ""  # how an error message names the expected JSON shape
    alias: str = ""  # the alias definition this type was written as (JsonPointer), if any
    constraints: Constraints = Constraints()

    @property
    def json_kind(self) -> str:
        """string, number, boolean, array or object ("any" for json, "either" for A | B)."""
        return KIND_OF.get(self.kind, "any" if self.kind == "json" else self.kind)

    @property
    def inline_item(self) -> bool:
        """Whether the codec checks a list of this type inline (a string without a pattern, any
        JSON, an object definition, a union); other items get a function of their own."""
        return (self.kind == "str" and not self.constraints.any) or self.kind in (
            "json",
            "ref",
            "union",
        )

    @property
    def inline_option(self) -> bool:
        """Whether the codec checks this alternative of `A | B` inline; others get a function."""
        plain = not self.constraints.any
        return (self.kind in ("str", "list") and plain) or self.kind in (
            "bool",
            "object",
            "ref",
            "union",
        )

    @property
    def spelled(self) -> str:
        """The type as the spec writes it: `list[Slug]`, `str | int`, `number`."""
        if self.alias:
            return self.alias
        if self.kind == "list" and self.item is not None:
            return f"list[{self.item.spelled}]"
        if self.kind == "either":
            return " | ".join(o.spelled for o in self.options)
        return self.name or self.kind

    @property
    def takes_str(self) -> bool:
        """Whether an `A | B` takes any string (a str subclass is then written as its string)."""
        return any(o.kind == "str" and not o.constraints.any for o in self.options)

    @property
    def walk(self) -> tuple[TypeRef, ...]:
        """This type and every type inside it (list items, alternatives), depth first."""
        inner = (self.item,) if self.item is not None else self.options
        return (self, *(t for i in inner for t in i.walk))


@attrs.frozen
class Field:
    wire: str
    py: str
    doc: str
    required: bool
    type: TypeRef | None  # None for tag and const fields
    tag: str | None = None  # the value, when this field is the discriminator
    tag_py: str | None = (
        None  # Python expression of the tag value (an enum member or a string literal)
    )
    tag_annotation: str | None = None
    const: str | None = None
    nullable: bool = False
    default: str | bool | int | float | None = None
    deprecated: str | None = None
    """Set for a deprecated member: the sentence its DeprecationWarning and its documentation give
    (the spec's `deprecated:` text, or a plain one for `deprecated: true`)."""
    extension: bool = False
    """Not in the official protocol: a fork's own member (`extension: true` on it, or on the
    object or mixin it comes from). Cross-SDK checks report it instead of comparing it."""

    @property
    def constraints(self) -> Constraints:
        """The effective constraints of the field's own value (its type's)."""
        return self.type.constraints if self.type else Constraints()

    @property
    def annotation(self) -> str:
        """The Python annotation of an instance field."""
        base = (
            f"Literal[{self.const!r}]"
            if self.const is not None
            else (self.type.py if self.type else "")
        )
        return base if self.required else f"{base} | None"

    @property
    def converter(self) -> str | None:
        """The converter of an instance field of an enum type (see EnumConverter.name), so the
        constructor takes the enum's wire strings as well as its members; None for any other."""
        if self.type is None or self.type.kind != "enum" or self.is_class_constant:
            return None
        return EnumConverter(self.type.name, optional=not self.required).name

    @property
    def class_annotation(self) -> str:
        if self.tag_annotation:
            return self.tag_annotation
        return f"ClassVar[Literal[{self.const!r}]]"

    @property
    def class_value(self) -> str:
        return self.tag_py if self.tag_py else repr(self.const)

    @property
    def wire_value(self) -> str:
        """The constant's wire string (tags and required constants)."""
        return self.tag if self.tag is not None else (self.const or "")

    @property
    def is_class_constant(self) -> bool:
        """Tag fields and required constants are fixed by the class: class attributes, not slots."""
        return self.tag is not None or (self.const is not None and self.required)


@attrs.frozen
class EnumValue:
    value: str
    member: str
    doc: str
    extension: bool = False  # marked, in an extension enum, or the tag of an extension object


@attrs.frozen
class Enum:
    name: str
    doc: str
    values: tuple[EnumValue, ...]
    extension: bool = False


@attrs.frozen
class Object:
    name: str
    doc: str
    fields: tuple[Field, ...]
    tag: str | None
    discriminator: str | None  # the wire key carrying `tag`
    open: bool
    unions: tuple[str, ...]
    extension: bool = False

    @property
    def slots(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if not f.is_class_constant)

    @property
    def constants(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.is_class_constant)

    @property
    def required_count(self) -> int:
        return sum(1 for f in self.fields if f.required)


@attrs.frozen
class Union:
    name: str
    doc: str
    discriminator: str
    members: tuple[str, ...]
    tags: tuple[tuple[str, str], ...]  # (tag value, member name), in member order
    tags_enum: str | None
    extension: bool = False


@attrs.frozen
class EnumConverter:
    """The converter of the fields of one enum type, optional or not: `_to_<enum>` (with
    `_or_none` for optional fields). It takes `Literal[<the wire strings>] | <Enum>` (the
    annotation mypy's attrs plugin gives the constructor's parameter), and returns the member of a
    wire string; a member, or anything else (which encoding refuses, naming it), is kept as
    given. Decoding does not go through it: the decoders set each slot directly."""

    enum: str
    optional: bool

    @property
    def name(self) -> str:
        words = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.enum).lower()
        return f"_to_{words}" + ("_or_none" if self.optional else "")


@attrs.frozen
class Alias:
    name: str
    doc: str
    type: TypeRef
    constraints: Constraints
    extension: bool = False

    @property
    def early(self) -> bool:
        """Declared before the classes, and named in the annotations of the fields written as it
        (`path: JsonPointer`): its type names no object or union. An alias that does
        (`JsonPatch`, a list of patch operations) is declared after them, and its fields are
        annotated with what it stands for."""
        return not names_definition(self.type)


def names_definition(t: TypeRef) -> bool:
    """Whether a type names an object or a union (at any depth)."""
    if t.kind in ("ref", "union"):
        return True
    if t.item is not None and names_definition(t.item):
        return True
    return any(names_definition(o) for o in t.options)


@attrs.frozen
class Spec:
    version: str
    doc: str
    enums: tuple[Enum, ...]
    aliases: tuple[Alias, ...]
    # objects and unions interleaved in dependency order: each item only refers to earlier ones
    definitions: tuple[Object | Union, ...]
    source: str = "spec/agui.yaml"
    """The spec's file as messages name it (a fork's own path under `--spec`)."""
    extension_numbers: int = EXTENSION_NUMBERS
    """The first protobuf number an extension takes in an official message or enum (the spec's
    `extensionNumbers`): the official numbers below it stay free for upstream."""

    @property
    def early_aliases(self) -> tuple[Alias, ...]:
        """The aliases declared before the classes (Alias.early), each after those it names."""
        pending = [a for a in self.aliases if a.early]
        out: list[Alias] = []
        while pending:
            ready = next(
                a
                for a in pending
                if not any(
                    re.search(rf"\b{re.escape(b.name)}\b", a.type.py) for b in pending if b is not a
                )
            )
            out.append(ready)
            pending.remove(ready)
        return tuple(out)

    @property
    def late_aliases(self) -> tuple[Alias, ...]:
        return tuple(a for a in self.aliases if not a.early)

    @property
    def objects(self) -> tuple[Object, ...]:
        return tuple(d for d in self.definitions if isinstance(d, Object))

    @property
    def unions(self) -> tuple[Union, ...]:
        return tuple(d for d in self.definitions if isinstance(d, Union))

    @property
    def exports(self) -> dict[str, str]:
        """What the generated package exports (the protocol's shapes, its version and the decoding
        errors), by name, sorted, with the module that defines each. The codec tables, the codec
        entry points and the converter stay in their own modules."""
        homes = {e.name: "enums" for e in self.enums}
        homes.update({d.name: "models" for d in self.definitions})
        homes.update({a.name: "models" for a in self.aliases})
        homes.update({"JsonObject": "models", "JsonValue": "models"})
        homes.update(
            {n: "_runtime" for n in ("AguiError", "DecodeError", "Problem", "UnknownEvent")}
        )
        return dict(sorted(homes.items()))

    @property
    def public_names(self) -> list[str]:
        """The generated package's __all__: its exports and PROTOCOL_VERSION, sorted."""
        return sorted([*self.exports, "PROTOCOL_VERSION"])

    @property
    def export_groups(self) -> dict[str, list[str]]:
        """The exports grouped by the module that defines them (modules and names sorted)."""
        groups: dict[str, list[str]] = {}
        for name, module in self.exports.items():
            groups.setdefault(module, []).append(name)
        return dict(sorted(groups.items()))

    @property
    def enum_converters(self) -> list[tuple[Enum, list[EnumConverter]]]:
        """The enums whose fields have a converter (Field.converter), in order, each with the
        converters its fields use."""
        used = {
            (f.type.name, not f.required)
            for o in self.objects
            for f in o.fields
            if f.converter is not None and f.type is not None
        }
        found = [
            (e, [EnumConverter(e.name, o) for o in (False, True) if (e.name, o) in used])
            for e in self.enums
        ]
        return [(e, converters) for e, converters in found if converters]

    @property
    def alias_constraints(self) -> dict[str, Constraints]:
        """Alias name -> the constraints it declares (a field written as the alias inherits them)."""
        return {a.name: a.constraints for a in self.aliases}

    @functools.cached_property
    def pattern_ids(self) -> dict[str, int]:
        """Every distinct pattern, numbered in order of first use (one compiled regex each)."""
        ids: dict[str, int] = {}
        for o in self.objects:
            for f in o.fields:
                for t in f.type.walk if f.type else ():
                    if t.constraints.pattern is not None:
                        ids.setdefault(t.constraints.pattern, len(ids))
        return ids

    @functools.cached_property
    def formats(self) -> tuple[str, ...]:
        """The formats the members use (directly, in list items or alternatives), sorted: the
        codec builds one cached test of each (`_F_<name>`)."""
        return tuple(
            sorted(
                {
                    t.constraints.format
                    for o in self.objects
                    for f in o.fields
                    for t in (f.type.walk if f.type else ())
                    if t.constraints.format is not None
                }
            )
        )

    @property
    def deprecated(self) -> dict[str, tuple[Field, ...]]:
        """Each object with deprecated members -> those members."""
        out = {o.name: tuple(f for f in o.fields if f.deprecated) for o in self.objects}
        return {name: fields for name, fields in out.items() if fields}

    @functools.cached_property
    def value_types(self) -> dict[TypeRef, int]:
        """The types the codec checks with a function of their own (`_dv_N`, `_ev_N`), numbered in
        order of first use: list items and alternatives its inline paths do not cover."""
        ids: dict[TypeRef, int] = {}
        for o in self.objects:
            for f in o.fields:
                for t in f.type.walk if f.type else ():
                    inner = [t.item] if t.item is not None and not t.item.inline_item else []
                    inner += [o for o in t.options if not o.inline_option]
                    for i in inner:
                        ids.setdefault(i, len(ids))
        return ids

    @property
    def expected_models(self) -> dict[str, str]:
        """Each object and union -> how an encode error names what a member of that type must
        hold ("a FunctionCall", "a PartSource (DataSource, UrlSource or FileSource)")."""
        out = {}
        for d in self.definitions:
            if isinstance(d, Union):
                names = list(d.members)
                listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
                out[d.name] = f"{_article(d.name)} {d.name} ({listed})"
            else:
                out[d.name] = f"{_article(d.name)} {d.name}"
        return out

    @property
    def tagged(self) -> dict[str, tuple[str, str] | None]:
        """For each object: (discriminator, tag) when it has a tag, else None."""
        return {
            o.name: (o.discriminator, o.tag) if o.discriminator and o.tag else None
            for o in self.objects
        }


def snake(name: str) -> str:
    """camelCase wire name -> snake_case Python name; a keyword gets a trailing underscore."""
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    return out + "_" if keyword.iskeyword(out) else out


def member_name(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_").upper()


KNOWN_ELSEWHERE = [
    (("float", "double"), " (a JSON number is `number`; `int` is an integer)"),
    (("string", "String"), " (a string is `str`)"),
    (("integer", "Integer", "long"), " (an integer is `int`)"),
    (("boolean", "Boolean"), " (a boolean is `bool`)"),
    (("array", "List", "Sequence", "tuple", "Tuple"), " (a list is `list[T]`)"),
    (("dict", "Dict", "map", "Map", "Record", "Mapping"), " (an object of any keys is `object`)"),
    (("any", "Any"), " (any JSON value is `json`)"),
    (
        ("Optional", "null", "None", "NoneType"),
        " (a member that may be absent is optional: `name?:`; null is a value only of a "
        "`nullable: true` json member)",
    ),
]
"""Names other type systems use, each with what the spec writes instead."""


class _Builder:
    def __init__(self, raw: dict[str, Any], source: str) -> None:
        self.raw = raw
        self.source = source
        self.defs: dict[str, dict[str, Any]] = raw["definitions"]
        self.problems: list[str] = []
        self.membership: dict[str, list[str]] = {}
        for name, spec in self.defs.items():
            if spec["kind"] == "union":
                for member in spec["members"]:
                    self.membership.setdefault(member, []).append(name)

    def fail(self, where: list[str | int], message: str) -> None:
        self.problems.append(f"{self.source}: {yaml_path(['definitions', *where])}: {message}")

    # ── types ──────────────────────────────────────────────────────────────
    def parse_type(
        self, text: str, where: list[str | int], resolving: tuple[str, ...] = ()
    ) -> TypeRef:
        """A type expression -> its TypeRef, with the constraints of the aliases it names.
        `resolving` holds the aliases being expanded (a cycle among them is refused)."""
        text = text.strip()
        if not _balanced(text):
            self.fail(where, f"'{text}' is not a type: its brackets do not pair up")
            return _ANY
        parts = _split_top(text, "|")
        if len(parts) > 1:
            if not all(parts):
                self.fail(where, f"'{text}' is not a type: an alternative of '|' is empty")
                return _ANY
            said = len(self.problems)
            options = [self.parse_type(p, where, resolving) for p in parts]
            if len(self.problems) > said:  # an alternative is wrong, and was named: no more
                return _ANY
            return self.either(text, options, where)
        if text.startswith("list[") and text.endswith("]"):
            if not text[5:-1].strip():
                self.fail(where, f"'{text}' is not a type: list[T] needs an item type T")
                return _ANY
            item = self.parse_type(text[5:-1], where, resolving)
            return TypeRef("list", item=item, py=f"tuple[{item.py}, ...]", expected="an array")
        if text in SCALARS:
            return TypeRef(text, py=SCALARS[text], expected=JSON_KINDS[text])
        if text == "json":
            return TypeRef("json", py="JsonValue", expected="a JSON value")
        if text == "object":
            return TypeRef("object", py="JsonObject", expected="an object")
        target = self.defs.get(text)
        if target is None:
            hint = next((h for words, h in KNOWN_ELSEWHERE if text.split("[")[0] in words), "")
            known = [*SCALARS, "json", "object", *self.defs]
            cased = next((k for k in known if k.lower() == text.lower()), None)
            if cased is not None:
                hint = f" (did you mean `{cased}`? names are case-sensitive)"
            self.fail(where, f"unknown type '{text}'{hint}")
            return _ANY
        kind = target["kind"]
        if kind == "enum":
            return TypeRef("enum", name=text, py=text, expected="a string")
        if kind == "alias":
            if text in resolving:
                cycle = " -> ".join([*resolving[resolving.index(text) :], text])
                self.fail(where, f"the alias {text} refers to itself ({cycle})")
                return _ANY
            said = len(self.problems)
            inner = self.parse_type(target["type"], [text, "type"], (*resolving, text))
            if len(self.problems) > said:  # named: no type to check its constraints by
                return _ANY
            narrowed = self.constrain(inner, _constraints(target), [text], f"the alias {text}")
            # an alias of scalars is declared before the classes, so annotations can name it
            py = narrowed.py if names_definition(narrowed) else text
            return attrs.evolve(narrowed, alias=text, py=py)
        if kind == "object":
            return TypeRef("ref", name=text, py=text, expected="an object")
        if kind == "union":
            return TypeRef("union", name=text, py=text, expected="an object")
        self.fail(where, f"'{text}' is a mixin; mixins are composed with `with`, not used as types")
        return _ANY

    def either(self, text: str, options: list[TypeRef], where: list[str | int]) -> TypeRef:
        """`A | B | ...`: one value of several JSON kinds, told apart by its kind alone."""
        seen: dict[str, TypeRef] = {}
        for option in options:
            named = option.spelled
            if option.kind == "json":
                self.fail(
                    where,
                    f"'{text}': `json` already takes any JSON value, so the alternatives cannot "
                    "be told apart; use `json` alone",
                )
                return _ANY
            if option.kind == "either":
                self.fail(
                    where,
                    f"'{text}': the alternative {named} is itself 'A | B' ({' | '.join(o.py for o in option.options)}); list "
                    "all the alternatives in one 'A | B | ...'",
                )
                return _ANY
            other = seen.get(option.json_kind)
            if other is not None:
                first = other.spelled
                hint = (
                    "; for several object shapes, declare a union with a discriminator"
                    if option.json_kind == "object"
                    else "; `number` alone takes integers too"
                    if option.json_kind == "number"
                    else ""
                )
                self.fail(
                    where,
                    f"'{text}': {first} and {named} are both JSON {PLURAL[option.json_kind]}, so "
                    f"a value could not be told apart{hint}",
                )
                return _ANY
            seen[option.json_kind] = option
        py = " | ".join(o.py for o in options)
        expected = " or ".join(o.expected for o in options)
        return TypeRef("either", options=tuple(options), py=py, expected=expected)

    def constrain(self, t: TypeRef, own: Constraints, where: list[str | int], what: str) -> TypeRef:
        """`t` narrowed by the constraints a field or alias declares. Each applies to one kind of
        value, and can only narrow what an alias already says: the bindings all apply both."""
        if not own.any:
            return t
        before = t.constraints
        ok = True
        if own.min is not None or own.max is not None:
            if t.kind not in ("int", "number"):
                ok = self._misplaced(t, "min/max apply to int and number", where, what)
            else:
                for key, bound in (("min", own.min), ("max", own.max)):
                    if bound is None:
                        continue
                    if isinstance(bound, float) and not math.isfinite(bound):
                        self.fail(where, f"{key} must be a finite number, not {bound}")
                        ok = False
                    elif t.kind == "int" and not isinstance(bound, int):
                        self.fail(where, f"{key} {bound} must be an integer: the value is an int")
                        ok = False
                lo = own.min if own.min is not None else before.min
                hi = own.max if own.max is not None else before.max
                if ok and lo is not None and hi is not None and lo > hi:
                    self.fail(where, f"min {lo} is greater than max {hi}: no value fits")
                    ok = False
                if own.min is not None and before.min is not None and own.min < before.min:
                    self.fail(where, self._looser("min", own.min, before.min, t))
                    ok = False
                if own.max is not None and before.max is not None and own.max > before.max:
                    self.fail(where, self._looser("max", own.max, before.max, t))
                    ok = False
        if own.pattern is not None:
            if t.kind != "str":
                ok = self._misplaced(t, "pattern applies to str", where, what)
            elif before.pattern is not None:
                self.fail(
                    where,
                    f"{t.alias} already has a pattern; a second one cannot be added here "
                    "(declare an alias with the pattern you need)",
                )
                ok = False
            else:
                error = compile_error(own.pattern)
                if error is not None:
                    self.fail(
                        where,
                        f"pattern {own.pattern!r} is not an ECMA-262 regular expression "
                        f"(with the u flag, as JSON Schema reads it): {error}",
                    )
                    ok = False
        if own.format is not None:
            if t.kind != "str":
                ok = self._misplaced(t, "format applies to str", where, what)
            elif before.format is not None:
                self.fail(
                    where,
                    f"{t.alias} already has the format {before.format}; a second one cannot be "
                    "added here",
                )
                ok = False
        if own.min_items is not None:
            if t.kind != "list":
                ok = self._misplaced(t, "minItems applies to list", where, what)
            elif before.min_items is not None and own.min_items < before.min_items:
                self.fail(where, self._looser("minItems", own.min_items, before.min_items, t))
                ok = False
        if not ok:
            return t
        merged = Constraints(
            min=_tighter(own.min, before.min, max),
            max=_tighter(own.max, before.max, min),
            pattern=own.pattern if own.pattern is not None else before.pattern,
            min_items=_tighter(own.min_items, before.min_items, max),
            format=own.format if own.format is not None else before.format,
        )
        return attrs.evolve(t, constraints=merged)

    def _misplaced(self, t: TypeRef, rule: str, where: list[str | int], what: str) -> bool:
        inner = t.item if t.kind == "list" else None
        key = rule.split()[0]
        applies = {"min/max": ("int", "number"), "pattern": ("str",), "format": ("str",)}.get(
            key, ()
        )
        if inner is not None and key != "minItems" and inner.kind in applies:
            hint = (
                f"; to constrain the items of {t.spelled}, declare an alias with the constraint "
                "and use list[Alias]"
            )
            if key == "min/max":
                hint += "; for the least length of the list, write minItems"
        elif inner is not None and key == "min/max":
            hint = (
                "; for the least length of the list, write minItems (the grammar has no "
                "maximum length)"
            )
        elif t.kind == "either":
            hint = "; to constrain one alternative, declare an alias for it"
        else:
            hint = ""
        target = f"{what}, which is {_a(t)}" if what else _a(t)
        self.fail(where, f"{rule} values, not to {target}{hint}")
        return False

    @staticmethod
    def _looser(key: str, value: Any, inherited: Any, t: TypeRef) -> str:
        return (
            f"{key} {value} would loosen {t.alias}'s {key} {inherited}; a field or alias can "
            "only narrow the constraints of the alias it uses"
        )

    # ── fields ─────────────────────────────────────────────────────────────
    def fields_of(self, name: str, tag: str | None, union_enum: str | None) -> list[Field]:
        spec = self.defs[name]
        out: list[Field] = []
        origins: list[str] = []  # the mixin each field comes from, or `name`
        for mixin in spec.get("with", []):
            target = self.defs.get(mixin)
            if target is None or target["kind"] != "mixin":
                self.fail([name, "with"], f"'{mixin}' is not a mixin")
                continue
            out.extend(self._fields(mixin, target["fields"], tag, union_enum, name))
            origins += [mixin] * (len(out) - len(origins))
        out.extend(self._fields(name, spec.get("fields", {}), tag, union_enum, name))
        origins += [name] * (len(out) - len(origins))
        wires = [f.wire for f in out]
        for dup in sorted({n for n in wires if wires.count(n) > 1}):
            mixins = [o for f, o in zip(out, origins, strict=True) if f.wire == dup and o != name]
            whence = f", one from the mixin {' and '.join(dict.fromkeys(mixins))}" if mixins else ""
            self.fail([name, "fields"], f"two fields are named '{dup}'{whence}")
        # the same Python name from different wire names (a wire duplicate is reported above)
        by_py: dict[str, list[str]] = {}
        for f in out:
            by_py.setdefault(f.py, []).append(f.wire)
        for py, owners in sorted(by_py.items()):
            distinct = list(dict.fromkeys(owners))
            if len(distinct) > 1:
                self.fail(
                    [name, "fields"],
                    f"two fields have the Python name '{py}' ({' and '.join(map(repr, distinct))});"
                    " give one a `py:` name",
                )
        return out

    def _fields(
        self, owner: str, fields: dict[str, Any], tag: str | None, union_enum: str | None, user: str
    ) -> Iterator[Field]:
        inherited = bool(self.defs[owner].get("extension") or self.defs[user].get("extension"))
        for key, fs in fields.items():
            where: list[str | int] = [owner, "fields", key]
            extension = inherited or bool(fs.get("extension"))
            wire = key.rstrip("?")
            required = not key.endswith("?")
            py = fs.get("py") or snake(wire)
            if py == "extra":
                self.fail(
                    where,
                    "the Python name 'extra' is reserved for the unknown members of open objects",
                )
            elif keyword.iskeyword(py):
                self.fail([*where, "py"], f"'{py}' is a Python keyword; choose another name")
            cons = _constraints(fs)
            tag_py = tag_annotation = None
            if fs.get("tag") or "const" in fs:
                fixed = [
                    k
                    for k in (
                        "default",
                        "nullable",
                        "min",
                        "max",
                        "pattern",
                        "format",
                        "minItems",
                        "deprecated",
                    )
                    if k in fs
                ]
                if fixed:
                    what = "a discriminator" if fs.get("tag") else "a `const` field"
                    self.fail(
                        where,
                        f"{what} always holds one fixed string; {', '.join(fixed)} cannot apply",
                    )
            if fs.get("tag"):
                if not required:
                    self.fail(where, "a discriminator field must be required")
                if tag is None:
                    if self.defs[user]["kind"] != "mixin" and user not in self.membership:
                        self.fail(
                            [user], f"composes the discriminator '{wire}' but declares no `tag`"
                        )
                    continue_tag = None
                else:
                    continue_tag = tag
                enum = fs.get("type")
                if continue_tag is not None:
                    if enum:
                        values = self.defs.get(enum, {}).get("values", {})
                        if self.defs.get(enum, {}).get("kind") != "enum":
                            self.fail(
                                where, f"the type of a discriminator must be an enum, not '{enum}'"
                            )
                        elif continue_tag not in values:
                            self.fail([user, "tag"], f"'{continue_tag}' is not a value of {enum}")
                        tag_py = f"{enum}.{member_name(continue_tag)}"
                    else:
                        tag_py = repr(continue_tag)
                    tag_annotation = f"ClassVar[Literal[{tag_py}]]"
                yield Field(
                    wire,
                    py,
                    fs["doc"],
                    True,
                    None,
                    tag=continue_tag,
                    tag_py=tag_py,
                    tag_annotation=tag_annotation,
                    extension=extension,
                )
                continue
            if "const" in fs:
                yield Field(
                    wire, py, fs["doc"], required, None, const=fs["const"], extension=extension
                )
                continue
            said = len(self.problems)
            parsed = self.parse_type(fs["type"], [*where, "type"])
            typed = len(self.problems) == said  # else named, and no type to check the rest by
            if not extension:
                self.standard_uses(parsed, [*where, "type"], "member")
            ftype = self.constrain(parsed, cons, where, "") if typed else parsed
            nullable = bool(fs.get("nullable"))
            if nullable and (not required or (typed and ftype.kind != "json")):
                self.fail(
                    where,
                    "only a required `json` field may be nullable; absent and null must stay distinguishable",
                )
            if "default" in fs and (typed or required):
                self.check_default(fs["default"], ftype, required, [*where, "default"])
            deprecated = fs.get("deprecated")
            if deprecated is not None and required:
                self.fail(
                    [*where, "deprecated"],
                    "a required member cannot be deprecated: every document must still carry it; "
                    "make it optional (name?) first",
                )
            doc = fs["doc"]
            if deprecated is True:
                deprecated = f"{user}.{py} is deprecated"
                doc = f"{doc} Deprecated."
            elif deprecated is not None:
                doc = f"{doc} Deprecated: {deprecated}"
                deprecated = f"{user}.{py} is deprecated: {deprecated}"
            if not re.fullmatch(r"[a-z][A-Za-z0-9]*", wire):
                self.fail(where, f"{wire!r} is not a valid name: {NAMING['fields']}")
            yield Field(
                wire,
                py,
                doc,
                required,
                ftype,
                nullable=nullable,
                default=fs.get("default"),
                deprecated=deprecated,
                extension=extension,
            )

    def standard_uses(self, t: TypeRef, where: list[str | int], what: str) -> None:
        """A member (or alias) of the official protocol cannot hold a fork's extension: peers
        that know only the protocol would take a value they cannot read for one of theirs."""
        for inner in t.walk:
            for name in dict.fromkeys((inner.alias, inner.name)):
                if name and self.defs.get(name, {}).get("extension"):
                    self.fail(
                        where,
                        f"this {what} is no extension, but its type uses the extension {name}; "
                        "mark it `extension: true` too",
                    )

    def check_default(self, value: Any, t: TypeRef, required: bool, where: list[str | int]) -> None:
        """A default is what a reader assumes when an optional member is absent: it must be a
        valid value of the member's type (a scalar or an enum value)."""
        if required:
            self.fail(
                where,
                "a required member is never absent, so a default would never apply; make the "
                "member optional (name?) or drop the default",
            )
            return
        if t.kind not in DEFAULT_KINDS:
            self.fail(
                where,
                f"a default applies to a str, int, number, bool or enum member, not {_a(t)}",
            )
            return
        problem = _default_problem(value, t)
        if problem is None and t.kind == "enum":
            values = list(self.defs[t.name]["values"])
            if value not in values:
                problem = f"the default {value!r} is not a value of {t.name} ({', '.join(values)})"
        if problem is not None:
            self.fail(where, problem)

    # ── the whole spec ─────────────────────────────────────────────────────
    def build(self) -> Spec:
        enums: list[Enum] = []
        aliases: list[Alias] = []
        items: dict[str, Object | Union] = {}
        membership = self.membership
        union_enum: dict[str, str | None] = {}
        for spec in self.defs.values():
            if spec["kind"] == "union":
                for member in spec["members"]:
                    union_enum[member] = spec.get("tags")
        for name, spec in self.defs.items():
            kind = spec["kind"]
            if kind == "enum":
                whole = bool(spec.get("extension"))
                values = tuple(
                    EnumValue(v, member_name(v), d, whole)
                    if isinstance(d, str)
                    else EnumValue(v, member_name(v), d["doc"], whole or bool(d.get("extension")))
                    for v, d in spec["values"].items()
                )
                if len({v.member for v in values}) != len(values):
                    self.fail([name, "values"], "two values map to the same Python member name")
                for v in values:
                    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", v.member):
                        self.fail(
                            [name, "values", v.value],
                            f"the value gives no Python member name ({v.member or 'nothing'}); "
                            "an enum value needs a letter before any digit or symbol",
                        )
                enums.append(Enum(name, spec["doc"], values, whole))
            elif kind == "alias":
                said = len(self.problems)
                t = self.parse_type(spec["type"], [name, "type"], (name,))
                if not spec.get("extension"):
                    self.standard_uses(t, [name, "type"], "alias")
                if len(self.problems) == said:  # else named: no type to check them by
                    narrowed = self.constrain(t, _constraints(spec), [name], f"the alias {name}")
                else:
                    narrowed = t
                aliases.append(
                    Alias(name, spec["doc"], t, narrowed.constraints, bool(spec.get("extension")))
                )
            elif kind == "object":
                tag = spec.get("tag")
                unions = tuple(membership.get(name, ()))
                if unions and tag is None:
                    for u in unions:
                        self.fail([name], self._untagged(name, u))
                fields = self.fields_of(name, tag, union_enum.get(name))
                discs = [f for f in fields if f.tag is not None]
                disc = discs[0].wire if discs else None
                if tag is not None and disc is None:
                    self.fail([name, "tag"], "a tag needs a field marked `tag: true`")
                for u in unions:
                    if disc is not None and self.defs[u]["discriminator"] != disc:
                        self.fail([name], f"its discriminator '{disc}' differs from union {u}'s")
                items[name] = Object(
                    name,
                    spec["doc"],
                    tuple(fields),
                    tag,
                    disc,
                    bool(spec.get("open")),
                    unions,
                    bool(spec.get("extension")),
                )
            elif kind == "union":
                items[name] = self.union(name, spec)
        order = self.order(items)
        enums = self.extension_tags(enums, items)
        start = self.extension_numbers()
        if self.problems:
            # an alias's problem is found again wherever the alias is used: report it once
            raise SpecError(list(dict.fromkeys(self.problems)))
        return Spec(
            self.raw["version"],
            self.raw["doc"],
            tuple(enums),
            tuple(aliases),
            order,
            self.source,
            start,
        )

    def extension_numbers(self) -> int:
        start = self.raw.get("extensionNumbers", EXTENSION_NUMBERS)
        assert isinstance(start, int)
        if 19000 <= start <= 19999:
            self.problems.append(
                f"{self.source}: extensionNumbers: {start} is in 19000-19999, the field numbers "
                "protobuf keeps for itself; start the extension numbers below or above them"
            )
        return int(start)

    def extension_tags(self, enums: list[Enum], items: dict[str, Object | Union]) -> list[Enum]:
        """The enums with the tag of every extension object marked as an extension value too
        (LOCATION_SHARED of EventType, when LocationSharedEvent is an extension)."""
        tagged: set[tuple[str, str]] = set()
        for item in items.values():
            if not isinstance(item, Object) or not item.extension or item.tag is None:
                continue
            for f in self.fields_raw(item.name):
                if f.get("tag") and f.get("type"):
                    tagged.add((f["type"], item.tag))
            for u in item.unions:
                enum = self.defs[u].get("tags")
                if enum:
                    tagged.add((enum, item.tag))
        return [
            attrs.evolve(
                e,
                values=tuple(
                    attrs.evolve(v, extension=True) if (e.name, v.value) in tagged else v
                    for v in e.values
                ),
            )
            for e in enums
        ]

    def fields_raw(self, name: str) -> list[dict[str, Any]]:
        """The YAML field descriptions of an object, its mixins' included."""
        spec = self.defs[name]
        out = [
            f
            for mixin in spec.get("with", [])
            for f in self.defs.get(mixin, {}).get("fields", {}).values()
        ]
        return out + list(spec.get("fields", {}).values())

    def union(self, name: str, spec: dict[str, Any]) -> Union:
        tags: list[tuple[str, str]] = []
        for i, member in enumerate(spec["members"]):
            target = self.defs.get(member)
            if target is None or target["kind"] != "object":
                self.fail([name, "members", i], f"'{member}' is not an object definition")
                continue
            if "tag" in target:
                tags.append((target["tag"], member))
        values = [t for t, _ in tags]
        for value in sorted({v for v in values if values.count(v) > 1}):
            sharing = [m for t, m in tags if t == value]
            self.fail(
                [name, "members"],
                f"{_listed(sharing)} share the tag {value!r}; the discriminator "
                f"'{spec['discriminator']}' tells the members of {name} apart, so each needs a "
                "tag of its own",
            )
        enum = spec.get("tags")
        if enum is not None:
            declared = list(self.defs.get(enum, {}).get("values", {}))
            if self.defs.get(enum, {}).get("kind") != "enum":
                self.fail([name, "tags"], f"'{enum}' is not an enum")
            else:
                for value in declared:
                    if value not in values:
                        self.fail(
                            [name, "tags"],
                            f"{enum} has the value {value!r}, but no member of {name} has that "
                            f"tag: add the object whose `tag` is {value!r} to {name}'s members, "
                            f"or remove the value from {enum}",
                        )
                for value, member in tags:
                    if value not in declared:
                        self.fail(
                            [name, "tags"],
                            f"the member {member} has the tag {value!r}, which is no value of "
                            f"{enum}: add {value!r} to {enum}'s values",
                        )
        return Union(
            name,
            spec["doc"],
            spec["discriminator"],
            tuple(spec["members"]),
            tuple(tags),
            enum,
            bool(spec.get("extension")),
        )

    def _untagged(self, member: str, union: str) -> str:
        spec = self.defs[union]
        disc = spec["discriminator"]
        enum = spec.get("tags")
        values = f" (a value of {enum})" if enum else ""
        return (
            f"is a member of {union} but declares no `tag`: {union} tells its members apart by "
            f"'{disc}', so {member} needs `tag: <its {disc}>`{values} and a field {disc} with "
            "`tag: true`"
        )

    def order(self, items: dict[str, Object | Union]) -> tuple[Object | Union, ...]:
        """Spec order, except that a definition is moved after everything it refers to."""
        done: list[Object | Union] = []
        state: dict[str, int] = {}

        def deps(item: Object | Union) -> list[str]:
            if isinstance(item, Union):
                return list(item.members)
            out: list[str] = []
            for f in item.fields:
                out.extend(_refs(f.type) if f.type else [])
            return out

        def visit(name: str, trail: list[str]) -> None:
            if state.get(name) == 2 or name not in items:
                return
            if state.get(name) == 1:
                self.fail([name], f"reference cycle: {' -> '.join([*trail, name])}")
                return
            state[name] = 1
            for dep in deps(items[name]):
                visit(dep, [*trail, name])
            state[name] = 2
            done.append(items[name])

        for name in items:
            visit(name, [])
        return tuple(done)


def _refs(t: TypeRef) -> list[str]:
    return [i.name for i in t.walk if i.kind in ("ref", "union")]


_ANY = TypeRef("json", py="JsonValue", expected="a JSON value")
"""What an unreadable type stands for while the loader goes on to find more problems."""


def _listed(names: list[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _article(name: str) -> str:
    return "an" if name[:1] in "AEIOU" else "a"


def _a(t: TypeRef) -> str:
    """A type named in a sentence: "a list[int]", "an int | str", "the enum Role"."""
    if t.kind in ("enum", "ref", "union"):
        what = {"enum": "the enum", "ref": "the object", "union": "the union"}[t.kind]
        return f"{what} {t.name}"
    text = TypeRef(t.kind, item=t.item, options=t.options).spelled
    return f"{'an' if text[:1] in 'aeiou' else 'a'} {text}"


def _tighter(own: Any, inherited: Any, pick: Any) -> Any:
    if own is None:
        return inherited
    return own if inherited is None else pick(own, inherited)


def _constraints(spec: dict[str, Any]) -> Constraints:
    return Constraints(
        spec.get("min"),
        spec.get("max"),
        spec.get("pattern"),
        spec.get("minItems"),
        spec.get("format"),
    )


def _default_problem(value: Any, t: TypeRef) -> str | None:
    """Why `value` is no valid default for a member of type `t` (None when it is one)."""
    shown = "null" if value is None else repr(value)
    yaml_bool = (
        " (YAML reads yes/no/on/off/true/false as booleans: quote it)"
        if isinstance(value, bool) and t.kind in ("str", "enum")
        else ""
    )
    c = t.constraints
    if t.kind == "str":
        if not isinstance(value, str):
            return f"the default {shown} is not a string, and the member is a str{yaml_bool}"
        if c.pattern is not None and not search(c.pattern, value):
            return f"the default {shown} does not match the pattern {c.pattern}"
        if c.format is not None and not conforms(c.format, value):
            return f"the default {shown} is not {FORMATS[c.format]} (format {c.format})"
        return None
    if t.kind == "enum":
        if not isinstance(value, str):
            return f"the default {shown} is not a string, and the member is the enum {t.name}{yaml_bool}"
        return None  # checked against the values by the caller, who knows them
    if t.kind == "bool":
        if not isinstance(value, bool):
            return f"the default {shown} is not a boolean (true or false), and the member is a bool"
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"the default {shown} is not a number, and the member is {_a(t)}"
    if t.kind == "int" and not isinstance(value, int):
        return f"the default {shown} is not an integer, and the member is an int"
    if isinstance(value, float) and not math.isfinite(value):
        return f"the default {shown} is not a finite number"
    if (c.min is not None and value < c.min) or (c.max is not None and value > c.max):
        if c.max is None:
            return f"the default {shown} is below the member's min, {c.min}"
        if c.min is None:
            return f"the default {shown} is above the member's max, {c.max}"
        return f"the default {shown} is outside [{c.min}, {c.max}]"
    return None


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if depth < 0:
            return False
    return depth == 0


def _split_top(text: str, sep: str) -> list[str]:
    depth, start, out = 0, 0, []
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == sep and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


def build(raw: dict[str, Any], source: str = "spec/agui.yaml") -> Spec:
    """Check the validated YAML for meaning and return the intermediate model. `source` is how
    messages name the spec's file (a fork's path under `python -m codegen --spec`)."""
    return _Builder(raw, source).build()
