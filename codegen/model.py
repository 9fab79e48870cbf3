"""The intermediate model: typed, checked, flattened definitions the templates only format.

`build(raw)` turns the validated YAML into a `Spec`. Every meaning is decided here (Python names and
annotations, flattened mixins, dependency order, constraints inherited from aliases), so the
templates never compute anything.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator
from typing import Any

import attrs

from codegen.load import SpecError, yaml_path

SCALARS = {"str": "str", "int": "int", "bool": "bool"}
JSON_KINDS = {"str": "a string", "int": "an integer", "bool": "a boolean"}


@attrs.frozen
class TypeRef:
    """A resolved field type. `kind` is one of: str int bool json object enum ref union list either."""

    kind: str
    name: str = ""  # enum, object or union name
    item: TypeRef | None = None  # list item type
    options: tuple[TypeRef, ...] = ()  # either: one option per JSON kind
    py: str = ""  # the Python annotation
    expected: str = ""  # how an error message names the expected JSON shape
    alias: str = ""  # the alias definition this type was written as (JsonPointer), if any


@attrs.frozen
class Constraints:
    min: int | None = None
    max: int | None = None
    pattern: str | None = None
    min_items: int | None = None


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
    default: str | bool | int | None = None
    constraints: Constraints = Constraints()

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


@attrs.frozen
class Enum:
    name: str
    doc: str
    values: tuple[EnumValue, ...]


@attrs.frozen
class Object:
    name: str
    doc: str
    fields: tuple[Field, ...]
    tag: str | None
    discriminator: str | None  # the wire key carrying `tag`
    open: bool
    unions: tuple[str, ...]

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


@attrs.frozen
class Alias:
    name: str
    doc: str
    type: TypeRef
    constraints: Constraints


@attrs.frozen
class Spec:
    version: str
    doc: str
    enums: tuple[Enum, ...]
    aliases: tuple[Alias, ...]
    # objects and unions interleaved in dependency order: each item only refers to earlier ones
    definitions: tuple[Object | Union, ...]

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
    def alias_constraints(self) -> dict[str, Constraints]:
        """Alias name -> the constraints it declares (a field written as the alias inherits them)."""
        return {a.name: a.constraints for a in self.aliases}

    @property
    def pattern_ids(self) -> dict[str, int]:
        """Every distinct pattern, numbered in order of first use (one compiled regex each)."""
        ids: dict[str, int] = {}
        for o in self.objects:
            for f in o.fields:
                if f.constraints.pattern is not None:
                    ids.setdefault(f.constraints.pattern, len(ids))
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


class _Builder:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.defs: dict[str, dict[str, Any]] = raw["definitions"]
        self.problems: list[str] = []

    def fail(self, where: list[str | int], message: str) -> None:
        self.problems.append(f"spec/agui.yaml: {yaml_path(['definitions', *where])}: {message}")

    # ── types ──────────────────────────────────────────────────────────────
    def parse_type(self, text: str, where: list[str | int]) -> tuple[TypeRef, Constraints]:
        text = text.strip()
        parts = _split_top(text, "|")
        if len(parts) > 1:
            options = [self.parse_type(p, where)[0] for p in parts]
            kinds = [_json_kind(o) for o in options]
            if len(set(kinds)) != len(kinds):
                self.fail(where, f"the options of '{text}' must be distinct JSON kinds")
            py = " | ".join(o.py for o in options)
            expected = " or ".join(o.expected for o in options)
            return TypeRef(
                "either", options=tuple(options), py=py, expected=expected
            ), Constraints()
        if text.startswith("list[") and text.endswith("]"):
            item, _ = self.parse_type(text[5:-1], where)
            return TypeRef(
                "list", item=item, py=f"tuple[{item.py}, ...]", expected="an array"
            ), Constraints()
        if text in SCALARS:
            return TypeRef(text, py=SCALARS[text], expected=JSON_KINDS[text]), Constraints()
        if text == "json":
            return TypeRef("json", py="JsonValue", expected="a JSON value"), Constraints()
        if text == "object":
            return TypeRef("object", py="JsonObject", expected="an object"), Constraints()
        target = self.defs.get(text)
        if target is None:
            self.fail(where, f"unknown type '{text}'")
            return TypeRef("json", py="JsonValue", expected="a JSON value"), Constraints()
        kind = target["kind"]
        if kind == "enum":
            return TypeRef("enum", name=text, py=text, expected="a string"), Constraints()
        if kind == "alias":
            inner, _ = self.parse_type(target["type"], [text, "type"])
            return attrs.evolve(inner, alias=text), _constraints(target)
        if kind == "object":
            return TypeRef("ref", name=text, py=text, expected="an object"), Constraints()
        if kind == "union":
            return TypeRef("union", name=text, py=text, expected="an object"), Constraints()
        self.fail(where, f"'{text}' is a mixin; mixins are composed with `with`, not used as types")
        return TypeRef("json", py="JsonValue", expected="a JSON value"), Constraints()

    # ── fields ─────────────────────────────────────────────────────────────
    def fields_of(self, name: str, tag: str | None, union_enum: str | None) -> list[Field]:
        spec = self.defs[name]
        out: list[Field] = []
        for mixin in spec.get("with", []):
            target = self.defs.get(mixin)
            if target is None or target["kind"] != "mixin":
                self.fail([name, "with"], f"'{mixin}' is not a mixin")
                continue
            out.extend(self._fields(mixin, target["fields"], tag, union_enum, name))
        out.extend(self._fields(name, spec.get("fields", {}), tag, union_enum, name))
        for attr in ("wire", "py"):
            names = [getattr(f, attr) for f in out]
            for dup in sorted({n for n in names if names.count(n) > 1}):
                self.fail([name, "fields"], f"two fields are named '{dup}'")
        return out

    def _fields(
        self, owner: str, fields: dict[str, Any], tag: str | None, union_enum: str | None, user: str
    ) -> Iterator[Field]:
        for key, fs in fields.items():
            where: list[str | int] = [owner, "fields", key]
            wire = key.rstrip("?")
            required = not key.endswith("?")
            py = fs.get("py") or snake(wire)
            if py == "extra":
                self.fail(
                    where,
                    "the Python name 'extra' is reserved for the unknown members of open objects",
                )
            cons = _constraints(fs)
            ftype: TypeRef | None = None
            tag_py = tag_annotation = None
            if fs.get("tag"):
                if not required:
                    self.fail(where, "a discriminator field must be required")
                if tag is None:
                    if self.defs[user]["kind"] != "mixin":
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
                )
                continue
            if "const" in fs:
                yield Field(wire, py, fs["doc"], required, None, const=fs["const"])
                continue
            ftype, inherited = self.parse_type(fs["type"], [*where, "type"])
            merged = Constraints(
                min=cons.min if cons.min is not None else inherited.min,
                max=cons.max if cons.max is not None else inherited.max,
                pattern=cons.pattern or inherited.pattern,
                min_items=cons.min_items if cons.min_items is not None else inherited.min_items,
            )
            nullable = bool(fs.get("nullable"))
            if nullable and (not required or ftype.kind != "json"):
                self.fail(
                    where,
                    "only a required `json` field may be nullable; absent and null must stay distinguishable",
                )
            if (merged.min is not None or merged.max is not None) and ftype.kind != "int":
                self.fail(where, "min/max apply to int fields only")
            if merged.pattern is not None:
                if ftype.kind != "str":
                    self.fail(where, "pattern applies to str fields only")
                else:
                    try:
                        re.compile(merged.pattern)
                    except re.error as exc:
                        self.fail(where, f"pattern does not compile: {exc}")
            if merged.min_items is not None and ftype.kind != "list":
                self.fail(where, "minItems applies to list fields only")
            if not re.fullmatch(r"[a-z][A-Za-z0-9]*", wire):
                self.fail(where, "wire names are camelCase")
            yield Field(
                wire,
                py,
                fs["doc"],
                required,
                ftype,
                nullable=nullable,
                default=fs.get("default"),
                constraints=merged,
            )

    # ── the whole spec ─────────────────────────────────────────────────────
    def build(self) -> Spec:
        enums: list[Enum] = []
        aliases: list[Alias] = []
        items: dict[str, Object | Union] = {}
        membership: dict[str, list[str]] = {}
        union_enum: dict[str, str | None] = {}
        for name, spec in self.defs.items():
            if spec["kind"] == "union":
                for member in spec["members"]:
                    membership.setdefault(member, []).append(name)
                    union_enum[member] = spec.get("tags")
        for name, spec in self.defs.items():
            kind = spec["kind"]
            if kind == "enum":
                values = tuple(EnumValue(v, member_name(v), d) for v, d in spec["values"].items())
                if len({v.member for v in values}) != len(values):
                    self.fail([name, "values"], "two values map to the same Python member name")
                enums.append(Enum(name, spec["doc"], values))
            elif kind == "alias":
                t, _ = self.parse_type(spec["type"], [name, "type"])
                aliases.append(Alias(name, spec["doc"], t, _constraints(spec)))
            elif kind == "object":
                tag = spec.get("tag")
                unions = tuple(membership.get(name, ()))
                if unions and tag is None:
                    self.fail([name], f"is a member of {', '.join(unions)} but declares no `tag`")
                fields = self.fields_of(name, tag, union_enum.get(name))
                discs = [f for f in fields if f.tag is not None]
                disc = discs[0].wire if discs else None
                if tag is not None and disc is None:
                    self.fail([name, "tag"], "a tag needs a field marked `tag: true`")
                for u in unions:
                    if disc is not None and self.defs[u]["discriminator"] != disc:
                        self.fail([name], f"its discriminator '{disc}' differs from union {u}'s")
                items[name] = Object(
                    name, spec["doc"], tuple(fields), tag, disc, bool(spec.get("open")), unions
                )
            elif kind == "union":
                items[name] = self.union(name, spec)
        order = self.order(items)
        if self.problems:
            raise SpecError(self.problems)
        return Spec(self.raw["version"], self.raw["doc"], tuple(enums), tuple(aliases), order)

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
        if len(set(values)) != len(values):
            self.fail([name, "members"], "two members share a tag")
        enum = spec.get("tags")
        if enum is not None:
            declared = list(self.defs.get(enum, {}).get("values", {}))
            if self.defs.get(enum, {}).get("kind") != "enum":
                self.fail([name, "tags"], f"'{enum}' is not an enum")
            elif sorted(declared) != sorted(values):
                missing = sorted(set(declared) - set(values))
                extra = sorted(set(values) - set(declared))
                self.fail(
                    [name, "tags"],
                    f"members' tags differ from {enum}: missing {missing}, not in enum {extra}",
                )
        return Union(
            name, spec["doc"], spec["discriminator"], tuple(spec["members"]), tuple(tags), enum
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
    if t.kind in ("ref", "union"):
        return [t.name]
    if t.kind == "list" and t.item:
        return _refs(t.item)
    if t.kind == "either":
        return [r for o in t.options for r in _refs(o)]
    return []


def _json_kind(t: TypeRef) -> str:
    return {"ref": "object", "union": "object", "enum": "str", "list": "list"}.get(t.kind, t.kind)


def _article(name: str) -> str:
    return "an" if name[:1] in "AEIOU" else "a"


def _constraints(spec: dict[str, Any]) -> Constraints:
    return Constraints(spec.get("min"), spec.get("max"), spec.get("pattern"), spec.get("minItems"))


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


def build(raw: dict[str, Any]) -> Spec:
    """Check the validated YAML for meaning and return the intermediate model."""
    return _Builder(raw).build()
