"""The protobuf binding: the spec's shapes as proto3 messages, numbered by the ledger.

`build_proto(spec, ledger_text)` lays the definitions reachable from the `Event` union out as
messages of package `ag_ui` and gives every field, oneof arm and enum value its number from
spec/proto-ledger.txt. The ledger is append-only: a slot keeps the number and the type it was
first shipped with (the spec retyping a shipped slot makes generation fail; an unshipped slot's
type follows the spec), a new slot takes the next number free in its message (or enum), and a slot
whose field has left the spec becomes `reserved`. An extension (`extension: true`) in an official
message or enum takes its number from the spec's `extensionNumbers` up (1000 by default), official
slots the next one below it, so a fork never takes the numbers upstream gives next. The ledger is
written back with the new slots, so it is both an input and an output of generation. Numbers that
collide make generation fail.

What the spec cannot say about the protobuf form is decided by the options below. They are the
choices of the official binding (@ag-ui/proto 1.0.0), which this one must equal byte for byte:
message names, the unions that become a oneof, are merged into one message or are flattened
into their owner, and the two object members carried as `google.protobuf.Value`.

Every other form of the grammar has one rule, so a fork's additions get a binary form without a new
option: `number` is `double`; a list of numbers or booleans is packed; a list of lists or of `A | B`
repeats a wrapper message holding one item as its field `value` (named after the item's type:
`StringList`, `StringOrInt64`); `A | B` is one field per JSON kind (see `either`); a union the
options do not name is a oneof message of its own name; a tagged object used directly is read back
with its tag (`restores`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

import attrs

from codegen.ledger import (
    RESERVED_RANGE,
    Entry,
    conflicts,
    numbers as ledger_numbers,
    parse,
    render as render_ledger,
    space_of,
)
from codegen.load import SpecError
from codegen.model import Field, Object, Spec, TypeRef, Union

PACKAGE = "ag_ui"
FILES = ("patch", "types", "events")
"""File stems, in import order: each file only imports earlier ones."""
LEDGER_NAME = "spec/proto-ledger.txt"

# ── binding options ────────────────────────────────────────────────────────────────────────────
ENVELOPE = "Event"
"""The union each frame carries: a message with one oneof arm per member."""
ENVELOPE_ONEOF = "event"
EVENT_BASE = "BaseEvent"
"""The mixin that becomes a message of its own, carried by every event at `base_event`."""
TAG_ENUMS = {"BaseEvent": "EventType", "JsonPatchOperation": "JsonPatchOperationType"}
"""Discriminators written as a protobuf enum (all others are strings)."""
ONEOF_UNIONS = {
    "ContentPart": ("InputContent", "part"),
    "PartSource": ("InputContentSource", "source"),
}
"""Unions written as a message holding one oneof arm per member, named by the member's tag."""
MERGED_UNIONS = ("Message", "JsonPatchOperation")
"""Unions written as one message with every member's fields (the discriminator included)."""
FLATTENED_UNIONS = ("RunFinishedOutcome", "SubagentFinishedOutcome")
"""Unions written into their owner: the tag as a string field named after the member, the
members' own fields as siblings of it."""
RENAMED = {
    "TextPart": "TextInputPart",
    "ImagePart": "ImageInputPart",
    "AudioPart": "AudioInputPart",
    "VideoPart": "VideoInputPart",
    "DocumentPart": "DocumentInputPart",
    "DataSource": "InputContentDataSource",
    "UrlSource": "InputContentUrlSource",
    "FileSource": "InputContentFileSource",
    "TokenUsage": "Usage",
    "FunctionCall": "ToolCall.Function",
}
VALUE_OBJECTS = {("Interrupt", "metadata"), ("Interrupt", "responseSchema")}
"""Object members carried as google.protobuf.Value rather than google.protobuf.Struct."""
OBJECT_VARIANTS = {("Message", "content"): "activity_content"}
"""The field carrying the object form of a merged member whose members disagree on its type."""
EVENTS_FILE = ("EventType", "BaseEvent", "Event")
PATCH_FILE = ("JsonPatchOperationType", "JsonPatchOperation")

VALUE = "google.protobuf.Value"
STRUCT = "google.protobuf.Struct"


# ── the model ──────────────────────────────────────────────────────────────────────────────────
@attrs.frozen
class ProtoField:
    """One field (or oneof arm) of a message.

    `kind` says how the codec treats it: string, int64, double, bool, enum, value, struct or
    message.
    `label` is "" (proto3 implicit presence: the default value is not written), "optional" or
    "repeated". `source` says where the JSON side keeps it:
      key      the member `wire` of the object
      self     a message built from the same JSON object (base_event)
      tag      the discriminator `wire` (an enum when kind is enum)
      str/int/num/bool/list/object/msg   the member `wire` when it holds that JSON kind (a member
               of type `A | B`, or of a merged union whose members disagree on its type): a
               string, an integer, a number, a boolean, an array, an object (Struct), an object
               of a definition (message)
      outcome  the `type` of the member `wire` (a flattened union), "" when absent
      payload  the member `sub` of the object in member `wire` (a flattened union's field)
      arm      a oneof arm: the object itself, when its discriminator is `tag`
    """

    name: str
    number: int
    kind: str
    type: str  # as written in the .proto file
    label: str
    source: str
    wire: str = ""
    sub: str = ""
    tag: str = ""
    ref: str = ""  # the message or enum name (dotted for nested) of message and enum kinds
    required: bool = False  # the JSON member is required
    empty: str = ""  # Python literal put back on decode when the field is absent ("" = none)
    doc: str = ""
    extension: bool = False  # a fork's own slot (`extension: true` on its member or object)
    deprecated: bool = False  # written `[deprecated = true]` (a deprecated member's slots)

    @property
    def ledger_type(self) -> str:
        """The slot's type as the ledger records it: as the .proto file declares it, `repeated`
        kept and `optional` dropped (it changes nothing on the wire)."""
        return f"repeated {self.type}" if self.label == "repeated" else self.type

    @property
    def packed(self) -> bool:
        """A repeated number or boolean: its items are one length-delimited run (proto3's default;
        readers take the unpacked form too)."""
        return self.label == "repeated" and self.kind in _PACKABLE

    @property
    def wire_type(self) -> int:
        if self.packed or self.kind in ("string", "value", "struct", "message"):
            return 2
        return 1 if self.kind == "double" else 0

    @property
    def key(self) -> bytes:
        """The encoded tag (field number and wire type) that precedes the field's value."""
        return _varint((self.number << 3) | self.wire_type)

    @property
    def key_literal(self) -> str:
        return "b'" + "".join(f"\\x{b:02x}" for b in self.key) + "'"

    @property
    def key_int(self) -> int:
        """The key read back as one varint (what the decoder compares)."""
        return (self.number << 3) | self.wire_type

    @property
    def unpacked_key_int(self) -> int:
        """The key of one item of a packed field written unpacked (which readers must accept)."""
        return (self.number << 3) | (1 if self.kind == "double" else 0)


@attrs.frozen
class ProtoEnum:
    name: str
    doc: str
    values: tuple[tuple[str, int, str], ...]  # (NAME, number, wire string)
    reserved: tuple[int, ...]
    reserved_names: tuple[str, ...]
    file: str


@attrs.frozen
class ProtoMessage:
    """A message. `shape` says which JSON object it stands for and how:
    object (a definition), base (the BaseEvent mixin: read from the event object), oneof (a union
    of arms), envelope (the Event union), merged (a union written as one message), wrapper (one
    JSON value that protobuf cannot repeat directly, a list or an `A | B`, as the field `value`
    of a message of its own, so that a list of it can be repeated)."""

    name: str  # dotted for a nested message (ToolCall.Function)
    doc: str
    fields: tuple[ProtoField, ...]
    reserved: tuple[int, ...]
    reserved_names: tuple[str, ...]
    file: str
    shape: str
    source: str  # the spec definition (or union) it comes from
    oneof: str = ""  # the oneof name (oneof and envelope shapes)
    discriminator: str = ""  # the JSON key telling arms (or merged members) apart
    # merged shapes: for each member tag, the JSON members whose absence means an empty value
    defaults: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    # flattened outcomes: for each outcome field, (tag, required payload members) per member
    outcomes: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    # a tagged object also used directly (not through its union): (discriminator, tag), which
    # the reader puts back, since only the union's arms carry the tag in the bytes
    restore: tuple[str, str] | None = None

    @property
    def any_defaults(self) -> bool:
        return any(empties for _, empties in self.defaults)

    @property
    def ident(self) -> str:
        """A Python identifier for the generated reader and writer."""
        return self.name.replace(".", "_")

    @property
    def simple(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def fields_by_number(self) -> tuple[ProtoField, ...]:
        return tuple(sorted(self.fields, key=lambda f: f.number))

    def variants(self, wire: str) -> tuple[ProtoField, ...]:
        return tuple(f for f in self.fields if f.wire == wire and f.source in ALTERNATIVES)


@attrs.frozen
class ProtoSchema:
    messages: tuple[ProtoMessage, ...]
    enums: tuple[ProtoEnum, ...]
    ledger: str  # the ledger text as it must be after this generation
    event_types: tuple[tuple[str, int], ...]  # EventType wire string -> number

    @property
    def uses_double(self) -> bool:
        return any(f.kind == "double" for m in self.messages for f in m.fields)

    @property
    def uses_packed(self) -> bool:
        return any(f.packed for m in self.messages for f in m.fields)

    def in_file(self, stem: str) -> tuple[tuple[ProtoEnum, ...], tuple[ProtoMessage, ...]]:
        enums = tuple(e for e in self.enums if e.file == stem)
        top = tuple(m for m in self.messages if m.file == stem and "." not in m.name)
        return enums, top

    def nested(self, parent: str) -> tuple[ProtoMessage, ...]:
        return tuple(
            m for m in self.messages if m.name.rsplit(".", 1)[0] == parent and "." in m.name
        )

    def imports(self, stem: str) -> tuple[str, ...]:
        """The files `stem` needs, in import order."""
        mine = {m.name for m in self.messages if m.file == stem}
        mine |= {e.name for e in self.enums if e.file == stem}
        owner = {m.name: m.file for m in self.messages} | {e.name: e.file for e in self.enums}
        needed: set[str] = set()
        for m in self.messages:
            if m.file != stem:
                continue
            for f in m.fields:
                if f.type == VALUE or f.type == STRUCT:
                    needed.add("google/protobuf/struct.proto")
                elif f.ref and f.ref not in mine and f.ref in owner:
                    needed.add(f"{PACKAGE}/{owner[f.ref]}.proto")
        order = ["google/protobuf/struct.proto"] + [f"{PACKAGE}/{s}.proto" for s in FILES]
        return tuple(p for p in order if p in needed)


# ── the ledger ─────────────────────────────────────────────────────────────────────────────────
# (its format, and what a generation changed in it: codegen/ledger.py)
def parse_ledger(text: str, name: str = LEDGER_NAME) -> dict[str, int]:
    """Ledger text -> {slot: number}. Fails on a malformed line, a slot listed twice and two slots
    sharing a number in one message or enum."""
    return ledger_numbers(text, name)


def ledger_name(spec: Spec) -> str:
    """The ledger beside the spec, as messages name it (spec/proto-ledger.txt, or a fork's)."""
    return (PurePosixPath(spec.source).parent / "proto-ledger.txt").as_posix()


# ── building ───────────────────────────────────────────────────────────────────────────────────
@attrs.define
class _Draft:
    """A message or enum before numbering: its slots in declaration order."""

    name: str
    doc: str
    file: str
    slots: list[ProtoField] = attrs.Factory(list)
    is_enum: bool = False
    enum_values: list[tuple[str, str, str]] = attrs.Factory(list)  # (NAME, wire, doc)
    extension_values: frozenset[str] = frozenset()  # the wire values that are extensions
    extension: bool = False  # the message or enum itself is an extension (numbered from 1)
    shape: str = "object"
    source: str = ""
    oneof: str = ""
    discriminator: str = ""
    defaults: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    outcomes: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    where: str = ""  # the YAML path problems with this message name

    def slot_key(self, f: ProtoField) -> str:
        if self.oneof and f.source == "arm":
            return f"{self.name}.{self.oneof}.{f.name}"
        return f"{self.name}.{f.name}"


class _Builder:
    def __init__(self, spec: Spec, ledger: dict[str, Entry]) -> None:
        self.spec = spec
        self.ledger = ledger
        self.defs: dict[str, Object | Union] = {d.name: d for d in spec.definitions}
        self.drafts: dict[str, _Draft] = {}
        self.order: list[str] = []
        self.problems: list[str] = []

    # ── names and types ──
    def proto_name(self, definition: str) -> str:
        if definition in ONEOF_UNIONS:
            return ONEOF_UNIONS[definition][0]
        return RENAMED.get(definition, definition)

    def oneof_of(self, union: str) -> tuple[str, str]:
        """(message name, oneof name) of a union written as a oneof: a union the options do not
        name is a message of its own name whose oneof is the union's name in snake_case."""
        return ONEOF_UNIONS.get(union, (self.proto_name(union), _snake(union)))

    def file_of(self, name: str) -> str:
        root = name.split(".")[0]
        if root in EVENTS_FILE or root.endswith("Event"):
            return "events"
        if root in PATCH_FILE:
            return "patch"
        return "types"

    def field_type(self, owner: str, f: Field, t: TypeRef) -> tuple[str, str, str]:
        """(kind, proto type, referenced name) of one value of a spec type: a list or an `A | B`
        inside a list is a wrapper message (protobuf repeats no repeated field)."""
        if t.kind in ("str", "enum"):
            return "string", "string", ""
        if t.kind == "int":
            return "int64", "int64", ""
        if t.kind == "number":
            return "double", "double", ""
        if t.kind == "bool":
            return "bool", "bool", ""
        if t.kind == "json":
            return "value", VALUE, ""
        if t.kind == "object":
            if (owner, f.wire) in VALUE_OBJECTS:
                return "value", VALUE, ""
            return "struct", STRUCT, ""
        if t.kind in ("ref", "union"):
            self.need(t.name)
            name = self.proto_name(t.name)
            return "message", name, name
        name = self.wrapper(owner, f, t)
        return "message", name, name

    def type_name(self, t: TypeRef) -> str:
        """How a wrapper message's name spells a type: StringList, Int64OrString, PointList."""
        if t.kind == "list" and t.item is not None:
            return self.type_name(t.item) + "List"
        if t.kind == "either":
            return "Or".join(self.type_name(o) for o in t.options)
        if t.kind in ("ref", "union"):
            return self.proto_name(t.name).replace(".", "")
        return {
            "str": "String",
            "enum": "String",
            "int": "Int64",
            "number": "Double",
            "bool": "Bool",
            "json": "Value",
            "object": "Struct",
        }[t.kind]

    def wrapper(self, owner: str, f: Field, t: TypeRef) -> str:
        """The message holding one list or `A | B` as its field `value` (see ProtoMessage)."""
        name = self.type_name(t)
        if name in self.drafts:
            return name
        clash = next((d for d in self.defs if self.proto_name(d) == name), None)
        if clash is not None:
            self.problems.append(
                f"{self.spec.source}: definitions.{clash}: the protobuf binding needs the message name "
                f"{name} for {t.spelled} (a list item of {owner}.{f.wire}); rename the definition"
            )
            return name
        draft = self.add(
            _Draft(
                name,
                f"One {t.spelled}, as a message: protobuf cannot repeat "
                + ("a repeated field." if t.kind == "list" else "a value of several kinds."),
                "types",
                shape="wrapper",
                source=t.spelled,
            )
        )
        value = Field("value", "value", f"The {t.spelled}.", True, t)
        draft.slots.extend(self.slots_of(name, [value], skip_tag=False))
        return name

    def need(self, definition: str) -> None:
        """Make sure the message for a definition exists."""
        name = self.proto_name(definition)
        if name in self.drafts:
            return
        item = self.defs[definition]
        if isinstance(item, Object):
            self.object_message(item, name)
        elif definition in MERGED_UNIONS:
            self.merged_message(item)
        elif definition in FLATTENED_UNIONS:
            self.problems.append(
                f"{self.spec.source}: definitions.{definition}: the protobuf binding flattens this union "
                "into the event that holds it (FLATTENED_UNIONS in codegen/proto.py), so no other "
                "member can have it as its type"
            )
        else:  # ONEOF_UNIONS, and every union the options do not name
            self.oneof_message(item)

    def add(self, draft: _Draft) -> _Draft:
        self.drafts[draft.name] = draft
        self.order.append(draft.name)
        return draft

    # ── one definition's fields ──
    def slots_of(self, owner: str, fields: Iterable[Field], *, skip_tag: bool) -> list[ProtoField]:
        out: list[ProtoField] = []
        for f in fields:
            first = len(out)
            self._slots_of_one(owner, f, out, skip_tag=skip_tag)
            out[first:] = [
                attrs.evolve(
                    slot,
                    extension=f.extension or slot.extension,
                    deprecated=bool(f.deprecated) or slot.deprecated,
                )
                for slot in out[first:]
            ]
        return out

    def _slots_of_one(self, owner: str, f: Field, out: list[ProtoField], *, skip_tag: bool) -> None:
        name = _snake(f.wire)
        if f.tag is not None or f.const is not None:
            if f.tag is not None and skip_tag:
                return
            label = "" if f.required else "optional"
            out.append(
                ProtoField(
                    name,
                    0,
                    "string",
                    "string",
                    label,
                    "key",
                    f.wire,
                    required=f.required,
                    empty='""' if f.required else "",
                    doc=f.doc,
                )
            )
            return
        assert f.type is not None
        t = f.type
        if t.kind == "union" and t.name in FLATTENED_UNIONS:
            out.extend(self.flattened(owner, f, t.name))
            return
        if t.kind == "either":
            out.extend(self.either(owner, f, t))
            return
        if t.kind == "list":
            assert t.item is not None
            kind, ptype, ref = self.field_type(owner, f, t.item)
            out.append(
                ProtoField(
                    name,
                    0,
                    kind,
                    ptype,
                    "repeated",
                    "key",
                    f.wire,
                    ref=ref,
                    required=f.required,
                    empty="[]" if f.required else "",
                    doc=f.doc,
                )
            )
            return
        kind, ptype, ref = self.field_type(owner, f, t)
        scalar = kind in _SCALARS
        plain = f.required and kind == "string"
        label = "" if plain or not scalar else "optional"
        empty = ""
        if f.required:
            empty = {"string": '""', "struct": "{}"}.get(kind, "None" if f.nullable else "")
        out.append(
            ProtoField(
                name,
                0,
                kind,
                ptype,
                label,
                "key",
                f.wire,
                ref=ref,
                required=f.required,
                empty=empty,
                doc=f.doc,
            )
        )

    def either(self, owner: str, f: Field, t: TypeRef) -> list[ProtoField]:
        """A member of type `A | B`: one field per JSON kind, at most one of them set. The string
        form takes the member's name; the others add _number, _bool, _parts (the array form) or
        _object."""
        out = []
        base = _snake(f.wire)
        for option in t.options:
            kind = option.json_kind
            if kind == "string":
                out.append(
                    ProtoField(
                        base,
                        0,
                        "string",
                        "string",
                        "optional",
                        "str",
                        f.wire,
                        required=f.required,
                        doc=f.doc,
                    )
                )
            elif kind == "number":
                ptype = "int64" if option.kind == "int" else "double"
                out.append(
                    ProtoField(
                        base + "_number",
                        0,
                        ptype,
                        ptype,
                        "optional",
                        "int" if option.kind == "int" else "num",
                        f.wire,
                        required=f.required,
                        doc=f"{f.doc} (the number form)",
                    )
                )
            elif kind == "boolean":
                out.append(
                    ProtoField(
                        base + "_bool",
                        0,
                        "bool",
                        "bool",
                        "optional",
                        "bool",
                        f.wire,
                        required=f.required,
                        doc=f"{f.doc} (the boolean form)",
                    )
                )
            elif kind == "array":
                assert option.item is not None
                ptype_kind, ptype, ref = self.field_type(owner, f, option.item)
                out.append(
                    ProtoField(
                        base + "_parts",
                        0,
                        ptype_kind,
                        ptype,
                        "repeated",
                        "list",
                        f.wire,
                        ref=ref,
                        required=f.required,
                        empty="[]" if f.required else "",
                        doc=f"{f.doc} (the array form)",
                    )
                )
            else:
                ptype_kind, ptype, ref = self.field_type(owner, f, option)
                if ptype_kind == "value":  # an object carried as Value: Struct here
                    ptype_kind, ptype = "struct", STRUCT
                out.append(
                    ProtoField(
                        base + "_object",
                        0,
                        ptype_kind,
                        ptype,
                        "",
                        "object" if ptype_kind == "struct" else "msg",
                        f.wire,
                        ref=ref,
                        required=f.required,
                        doc=f"{f.doc} (the object form)",
                    )
                )
        return out

    def flattened(self, owner: str, f: Field, union: str) -> list[ProtoField]:
        item = self.defs[union]
        assert isinstance(item, Union)
        out = [
            ProtoField(
                _snake(f.wire),
                0,
                "string",
                "string",
                "",
                "outcome",
                f.wire,
                doc=f"{f.doc} The member's type; empty when absent.",
            )
        ]
        seen: set[str] = set()
        for member in item.members:
            obj = self.defs[member]
            assert isinstance(obj, Object)
            for mf in obj.fields:
                if mf.tag is not None or mf.wire in seen:
                    continue
                seen.add(mf.wire)
                for slot in self.slots_of(member, [mf], skip_tag=True):
                    if slot.label != "repeated":
                        self.problems.append(
                            f"{self.spec.source}: definitions.{member}.fields.{mf.wire}: the protobuf "
                            f"binding flattens {union} into {owner}.{f.wire}, which needs every "
                            "member field to be a list"
                        )
                    out.append(
                        attrs.evolve(
                            slot, source="payload", wire=f.wire, sub=mf.wire, required=False
                        )
                    )
        return out

    # ── messages ──
    def object_message(self, obj: Object, name: str) -> None:
        draft = self.add(
            _Draft(name, obj.doc, self.file_of(name), source=obj.name, extension=obj.extension)
        )
        fields = list(obj.fields)
        if ENVELOPE in obj.unions:
            common = self.base_wires()
            base = [f for f in fields if f.wire in common]
            rest = [f for f in fields if f.wire not in common]
            self.base_message(base)
            draft.slots.append(
                ProtoField(
                    "base_event",
                    0,
                    "message",
                    EVENT_BASE,
                    "",
                    "self",
                    ref=EVENT_BASE,
                    doc="The fields every event carries.",
                )
            )
            fields = rest
        draft.slots.extend(self.slots_of(obj.name, fields, skip_tag=True))
        draft.outcomes = tuple(
            (s.wire, self.outcome_members(s.wire, obj))
            for s in draft.slots
            if s.source == "outcome"
        )

    def base_wires(self) -> set[str]:
        """The members every event has (the BaseEvent mixin's): they go to base_event."""
        union = self.defs[ENVELOPE]
        assert isinstance(union, Union)
        common: set[str] | None = None
        for member in union.members:
            obj = self.defs[member]
            assert isinstance(obj, Object)
            wires = {f.wire for f in obj.fields}
            common = wires if common is None else common & wires
        return common or set()

    def outcome_members(self, wire: str, obj: Object) -> tuple[tuple[str, tuple[str, ...]], ...]:
        field = next(f for f in obj.fields if f.wire == wire)
        assert field.type is not None
        union = self.defs[field.type.name]
        assert isinstance(union, Union)
        out = []
        for tag, member in union.tags:
            m = self.defs[member]
            assert isinstance(m, Object)
            out.append((tag, tuple(f.wire for f in m.fields if f.tag is None and f.required)))
        return tuple(out)

    def base_message(self, fields: list[Field]) -> None:
        if EVENT_BASE in self.drafts:
            return
        draft = self.add(
            _Draft(
                EVENT_BASE,
                "The fields every event carries.",
                "events",
                shape="base",
                source=EVENT_BASE,
            )
        )
        enum = TAG_ENUMS[EVENT_BASE]
        for f in fields:
            if f.tag is not None:
                draft.slots.append(
                    ProtoField(
                        _snake(f.wire),
                        0,
                        "enum",
                        enum,
                        "",
                        "tag",
                        f.wire,
                        ref=enum,
                        required=True,
                        empty='""',
                        doc=f.doc,
                    )
                )
            else:
                draft.slots.extend(self.slots_of(EVENT_BASE, [f], skip_tag=False))
        event_union = self.defs[ENVELOPE]
        assert isinstance(event_union, Union)
        self.enum(
            enum,
            "Every event type, numbered.",
            "events",
            [(t, t, self._doc_of_enum_value("EventType", t)) for t, _ in event_union.tags],
            self.extension_tags(event_union),
        )

    def extension_tags(self, union: Union) -> frozenset[str]:
        """The tags of a union's extension members: extension values of its tag enum."""
        marked = {
            v.value
            for e in self.spec.enums
            if e.name == union.tags_enum
            for v in e.values
            if v.extension
        }
        return frozenset(t for t, m in union.tags if self.defs[m].extension or t in marked)

    def _doc_of_enum_value(self, enum: str, value: str) -> str:
        for e in self.spec.enums:
            if e.name == enum:
                for v in e.values:
                    if v.value == value:
                        return v.doc
        return ""

    def enum(
        self,
        name: str,
        doc: str,
        file: str,
        values: list[tuple[str, str, str]],
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        draft = self.add(_Draft(name, doc, file, is_enum=True, extension_values=extensions))
        draft.enum_values = [(_member(wire), wire, d) for _, wire, d in values]

    def oneof_message(self, union: Union) -> None:
        name, oneof = self.oneof_of(union.name)
        draft = self.add(
            _Draft(
                name,
                union.doc,
                self.file_of(name),
                shape="oneof",
                source=union.name,
                oneof=oneof,
                discriminator=union.discriminator,
                extension=union.extension,
            )
        )
        for tag, member in union.tags:
            self.need(member)
            ref = self.proto_name(member)
            obj = self.defs[member]
            draft.slots.append(
                ProtoField(
                    _member(tag).lower(),
                    0,
                    "message",
                    ref,
                    "",
                    "arm",
                    tag=tag,
                    ref=ref,
                    doc=obj.doc,
                    extension=obj.extension,
                )
            )

    def envelope(self) -> None:
        union = self.defs[ENVELOPE]
        assert isinstance(union, Union)
        draft = self.add(
            _Draft(
                ENVELOPE,
                union.doc,
                "events",
                shape="envelope",
                source=ENVELOPE,
                oneof=ENVELOPE_ONEOF,
                discriminator=union.discriminator,
            )
        )
        for tag, member in union.tags:
            self.need(member)
            obj = self.defs[member]
            draft.slots.append(
                ProtoField(
                    tag.lower(),
                    0,
                    "message",
                    member,
                    "",
                    "arm",
                    tag=tag,
                    ref=member,
                    doc=obj.doc,
                    extension=obj.extension,
                )
            )

    def merged_message(self, union: Union) -> None:
        name = union.name
        draft = self.add(
            _Draft(
                name,
                union.doc,
                self.file_of(name),
                shape="merged",
                source=union.name,
                discriminator=union.discriminator,
                extension=union.extension,
            )
        )
        members = [self.defs[m] for m in union.members]
        assert all(isinstance(m, Object) for m in members)
        order: list[str] = []
        variants: dict[str, dict[str, tuple[Object, Field]]] = {}
        for m in members:
            assert isinstance(m, Object)
            for f in m.fields:
                if f.wire not in variants:
                    order.append(f.wire)
                    variants[f.wire] = {}
                variants[f.wire][m.name] = (m, f)
        defaults = []
        for m in members:
            assert isinstance(m, Object)
            empty = []
            for f in m.fields:
                if f.required and f.type is not None:
                    kinds = (
                        [o.kind for o in f.type.options]
                        if f.type.kind == "either"
                        else [f.type.kind]
                    )
                    if "list" in kinds:
                        empty.append((f.wire, "list"))
                    elif "object" in kinds:
                        empty.append((f.wire, "object"))
            defaults.append((m.tag or "", tuple(empty)))
        draft.defaults = tuple(defaults)
        enum = TAG_ENUMS.get(name)
        for wire in order:
            uses = variants[wire]
            first_obj, first = next(iter(uses.values()))
            everywhere = len(uses) == len(members) and all(f.required for _, f in uses.values())
            if first.tag is not None:
                if enum:
                    draft.slots.append(
                        ProtoField(
                            _snake(wire),
                            0,
                            "enum",
                            enum,
                            "",
                            "tag",
                            wire,
                            ref=enum,
                            required=True,
                            empty='""',
                            doc=f"Which member of {name} this is.",
                        )
                    )
                    self.enum(
                        enum,
                        f"The {wire} of {name}.",
                        self.file_of(enum),
                        [(t, t, "") for t, _ in union.tags],
                        self.extension_tags(union),
                    )
                else:
                    draft.slots.append(
                        ProtoField(
                            _snake(wire),
                            0,
                            "string",
                            "string",
                            "",
                            "tag",
                            wire,
                            required=True,
                            empty='""',
                            doc=f"Which member of {name} this is.",
                        )
                    )
                continue
            shapes = {_shape_key(f) for _, f in uses.values()}
            if len(shapes) == 1:
                slot = self.slots_of(first_obj.name, [first], skip_tag=False)[0]
                if not everywhere and slot.label == "" and slot.kind in _SCALARS:
                    slot = attrs.evolve(slot, label="optional")
                draft.slots.append(
                    attrs.evolve(
                        slot,
                        required=everywhere,
                        empty=slot.empty if everywhere else "",
                        doc=_merged_doc(wire, uses),
                        extension=all(f.extension for _, f in uses.values()),
                    )
                )
                continue
            # members disagree: one field per JSON kind (string, array, object)
            by_kind: dict[str, list[str]] = {}
            for member, (_, f) in uses.items():
                assert f.type is not None
                for option in f.type.options if f.type.kind == "either" else (f.type,):
                    by_kind.setdefault(option.kind, []).append(member)
            done: set[str] = set()
            for obj, f in uses.values():
                assert f.type is not None
                options = f.type.options if f.type.kind == "either" else (f.type,)
                for option in options:
                    kind = {"str": "str", "list": "list", "object": "object"}.get(option.kind)
                    if kind is None or kind in done:
                        if kind is None:
                            self.problems.append(
                                f"{self.spec.source}: definitions.{name}: the protobuf binding merges "
                                f"its members into one message (MERGED_UNIONS in codegen/proto.py), "
                                f"and their members {wire} differ in a way it cannot carry "
                                f"({option.spelled}); give the new member's field another name"
                            )
                        continue
                    done.add(kind)
                    if kind == "str":
                        draft.slots.append(
                            ProtoField(
                                _snake(wire),
                                0,
                                "string",
                                "string",
                                "optional",
                                "str",
                                wire,
                                doc=f"The {wire} of {', '.join(by_kind['str'])}, as text.",
                            )
                        )
                    elif kind == "list":
                        assert option.item is not None
                        k, ptype, ref = self.field_type(obj.name, f, option.item)
                        draft.slots.append(
                            ProtoField(
                                _snake(wire) + "_parts",
                                0,
                                k,
                                ptype,
                                "repeated",
                                "list",
                                wire,
                                ref=ref,
                                doc=f"The {wire} of {', '.join(by_kind['list'])}, as an array.",
                            )
                        )
                    else:
                        pname = OBJECT_VARIANTS.get((name, wire))
                        if pname is None:
                            self.problems.append(
                                f"{self.spec.source}: definitions.{name}: the members' {wire} differ "
                                "and one is an object; name its protobuf field in OBJECT_VARIANTS "
                                "(codegen/proto.py)"
                            )
                            continue
                        doc = f"The {wire} of {', '.join(by_kind['object'])}, an object."
                        draft.slots.append(
                            ProtoField(pname, 0, "struct", STRUCT, "", "object", wire, doc=doc)
                        )

    # ── numbering ──
    def number(self) -> tuple[list[ProtoMessage], list[ProtoEnum], dict[str, Entry]]:
        """Every slot's number from the ledger; a slot the ledger lacks takes the next number
        free in its message or enum (an extension in an official message or enum: the next one
        from the spec's extensionNumbers up, an official slot the next one below them) and is
        marked unshipped. A shipped slot keeps its type: the spec retyping one is a problem."""
        ledger = dict(self.ledger)
        messages: list[ProtoMessage] = []
        enums: list[ProtoEnum] = []
        for name in self.order:
            draft = self.drafts[name]
            live: set[str] = set()
            taken = {e.number for slot, e in ledger.items() if space_of(slot) == name}
            if draft.is_enum:
                numbered = []
                for member, wire, _doc in draft.enum_values:
                    slot = f"{name}.{member}"
                    live.add(slot)
                    if slot not in ledger:
                        extension = wire in draft.extension_values and not draft.extension
                        number = self.next_number(name, slot, taken, extension, first=0)
                        ledger[slot] = Entry(number, unshipped=True)
                        taken.add(number)
                    numbered.append((member, ledger[slot].number, wire))
                gone = sorted(
                    (e.number, s)
                    for s, e in ledger.items()
                    if space_of(s) == name and s not in live
                )
                if not any(n == 0 for _, n, _ in numbered):
                    self.problems.append(f"{name}: a proto3 enum needs a value numbered 0")
                enums.append(
                    ProtoEnum(
                        name,
                        draft.doc,
                        tuple(numbered),
                        tuple(n for n, _ in gone),
                        tuple(s.rsplit(".", 1)[1] for _, s in gone),
                        draft.file,
                    )
                )
                continue
            fields = []
            names = [s.name for s in draft.slots]
            for dup in sorted({n for n in names if names.count(n) > 1}):
                self.problems.append(
                    f"{self.spec.source}: definitions.{draft.source}: two protobuf fields of {name} "
                    f"are named '{dup}' (a member of type A | B adds _number, _bool, _parts or "
                    "_object to its name); rename one member"
                )
            for s in draft.slots:
                slot = draft.slot_key(s)
                live.add(slot)
                entry = ledger.get(slot)
                if entry is None:
                    extension = s.extension and not draft.extension
                    number = self.next_number(name, slot, taken, extension, first=1)
                    ledger[slot] = Entry(number, unshipped=True, type=s.ledger_type)
                    taken.add(number)
                elif entry.type != s.ledger_type:
                    if entry.type and not entry.unshipped:
                        self.problems.append(self.retyped(draft, s, slot, entry))
                    ledger[slot] = attrs.evolve(entry, type=s.ledger_type)
                fields.append(attrs.evolve(s, number=ledger[slot].number))
            gone = sorted(
                (e.number, s) for s, e in ledger.items() if space_of(s) == name and s not in live
            )
            messages.append(
                ProtoMessage(
                    name,
                    draft.doc,
                    tuple(fields),
                    tuple(n for n, _ in gone),
                    tuple(s.rsplit(".", 1)[1] for _, s in gone),
                    draft.file,
                    draft.shape,
                    draft.source,
                    draft.oneof,
                    draft.discriminator,
                    draft.defaults,
                    draft.outcomes,
                    self.restores(draft),
                )
            )
        self.problems += conflicts(ledger, ledger_name(self.spec))
        return messages, enums, ledger

    def next_number(
        self, space: str, slot: str, taken: set[int], extension: bool, first: int
    ) -> int:
        """The number a new slot takes in its message or enum: an extension of an official one
        the next free from the spec's extensionNumbers up; any other the next free below them
        (`first`: 1 for a field, 0 for an enum value), skipping protobuf's 19000-19999."""
        start = self.spec.extension_numbers
        if extension:
            number = max((n for n in taken if n >= start), default=start - 1) + 1
        else:
            number = max((n for n in taken if n < start), default=first - 1) + 1
        while number in RESERVED_RANGE or number in taken:
            number += 1
        if not extension and number >= start:
            self.problems.append(
                f"{ledger_name(self.spec)}: {slot}: {space} has no official number left below "
                f"the extension numbers ({start}, extensionNumbers in {self.spec.source}); raise "
                "extensionNumbers"
            )
        return number

    def retyped(self, draft: _Draft, s: ProtoField, slot: str, entry: Entry) -> str:
        """The problem of a shipped slot the spec retypes, naming the slot, both types and the
        member of the spec that changed."""
        if s.wire and draft.shape in ("object", "base"):
            where = f"definitions.{draft.source}.fields.{s.wire}"
        else:
            where = f"definitions.{draft.source}"
        return (
            f"{ledger_name(self.spec)}: {slot} = {entry.number}: shipped as {entry.type}, but "
            f"{self.spec.source}: {where} now makes it {s.ledger_type}: deployed peers would "
            f"misread field {entry.number} (a shipped slot keeps its type). Give the member a "
            "new name instead (a new number; the old one stays reserved); to break the wire "
            f"on purpose, write '{s.ledger_type}' in the ledger's line of {slot} by hand"
        )

    def restores(self, draft: _Draft) -> tuple[str, str] | None:
        """(discriminator, tag) of a tagged object's message that something refers to directly
        (a member, a list item, an alternative): its tag is in no field, so the reader puts it
        back. An event's tag travels in base_event, and a union arm's as the arm."""
        item = self.defs.get(draft.source)
        if draft.shape != "object" or not isinstance(item, Object) or ENVELOPE in item.unions:
            return None
        if item.tag is None or item.discriminator is None:
            return None
        direct = any(
            slot.ref == draft.name and slot.source != "arm"
            for other in self.drafts.values()
            for slot in other.slots
        )
        return (item.discriminator, item.tag) if direct else None

    def build(self) -> ProtoSchema:
        self.envelope()
        messages, enums, ledger = self.number()
        if self.problems:
            raise SpecError(sorted(set(self.problems)))
        file_rank = {stem: i for i, stem in enumerate(FILES)}
        # a file imports only earlier ones: a message that refers to a message of a later file
        # (a new object holding an event, a wrapper of one) moves to that file, with its nested ones
        moved = True
        while moved:
            moved = False
            home = {m.name: m.file for m in messages}
            for m in messages:
                later = max(
                    (home[f.ref] for f in m.fields if f.ref in home),
                    key=file_rank.__getitem__,
                    default=m.file,
                )
                if file_rank[later] > file_rank[m.file]:
                    root = m.name.split(".")[0]
                    for j, other in enumerate(messages):
                        if other.name.split(".")[0] == root:
                            messages[j] = attrs.evolve(other, file=later)
                    moved = True
                    break
        messages.sort(key=lambda m: (file_rank[m.file], self.order.index(m.name)))
        enums.sort(key=lambda e: (file_rank[e.file], self.order.index(e.name)))
        event_types = next(e for e in enums if e.name == TAG_ENUMS[EVENT_BASE]).values
        return ProtoSchema(
            tuple(messages),
            tuple(enums),
            render_ledger(
                ledger, [e.name for e in enums] + [m.name for m in messages], self.ledger
            ),
            tuple((wire, n) for _, n, wire in event_types),
        )


def build_proto(spec: Spec, ledger_text: str) -> ProtoSchema:
    """The protobuf layout of the spec, numbered by the ledger (see the module docstring)."""
    return _Builder(spec, parse(ledger_text, ledger_name(spec))).build()


# ── helpers ────────────────────────────────────────────────────────────────────────────────────
_SCALARS = ("string", "int64", "double", "bool")
_PACKABLE = ("int64", "double", "bool")
ALTERNATIVES = ("str", "int", "num", "bool", "list", "object", "msg")
"""The sources of the fields that carry one form of a member of several JSON kinds."""


def _merged_doc(wire: str, uses: dict[str, tuple[Object, Field]]) -> str:
    """The doc of a merged field: the members' own when they agree, else where it comes from."""
    docs = {f.doc for _, f in uses.values()}
    if len(docs) == 1:
        return docs.pop()
    return f"The {wire} of {', '.join(uses)}."


def _shape_key(f: Field) -> str:
    if f.type is None:
        return "const"
    return f.type.py


def _snake(wire: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", wire).lower()


def _member(wire: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", wire).strip("_").upper()


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# ── descriptors for the protobuf runtime ───────────────────────────────────────────────────────
def file_descriptors(schema: ProtoSchema) -> list[tuple[str, bytes]]:
    """Each .proto file as the serialized FileDescriptorProto protoc would make of it (without
    source info): what the runtime module loads, so it needs no protoc."""
    try:
        from google.protobuf import descriptor_pb2
    except ImportError:
        raise RuntimeError(
            "the protobuf package is needed to generate the runtime module: "
            "pip install -e '.[codegen]'"
        ) from None

    fdp = descriptor_pb2.FieldDescriptorProto
    scalar = {
        "string": fdp.TYPE_STRING,
        "int64": fdp.TYPE_INT64,
        "double": fdp.TYPE_DOUBLE,
        "bool": fdp.TYPE_BOOL,
    }

    def message(m: ProtoMessage) -> descriptor_pb2.DescriptorProto:
        out = descriptor_pb2.DescriptorProto(name=m.simple)
        for nested in schema.nested(m.name):
            out.nested_type.append(message(nested))
        if m.oneof:
            out.oneof_decl.add(name=m.oneof)
        synthetic = []
        for f in m.fields_by_number:
            field = out.field.add(name=f.name, number=f.number, json_name=_camel(f.name))
            field.label = fdp.LABEL_REPEATED if f.label == "repeated" else fdp.LABEL_OPTIONAL
            if f.kind in scalar:
                field.type = scalar[f.kind]
            elif f.kind == "enum":
                field.type = fdp.TYPE_ENUM
                field.type_name = f".{PACKAGE}.{f.ref}"
            else:
                field.type = fdp.TYPE_MESSAGE
                field.type_name = "." + (
                    f.type if f.kind in ("value", "struct") else f"{PACKAGE}.{f.ref}"
                )
            if f.deprecated:
                field.options.deprecated = True
            if m.oneof:
                field.oneof_index = 0
            elif f.label == "optional":
                field.proto3_optional = True
                synthetic.append(field)
        for field in synthetic:  # proto3 optional: one synthetic oneof each, after the real ones
            field.oneof_index = len(out.oneof_decl)
            out.oneof_decl.add(name="_" + field.name)
        for number in m.reserved:
            out.reserved_range.add(start=number, end=number + 1)
        out.reserved_name.extend(m.reserved_names)
        return out

    files = []
    for stem in FILES:
        enums, messages = schema.in_file(stem)
        fd = descriptor_pb2.FileDescriptorProto(
            name=f"{PACKAGE}/{stem}.proto", package=PACKAGE, syntax="proto3"
        )
        fd.dependency.extend(schema.imports(stem))
        for e in enums:
            ed = fd.enum_type.add(name=e.name)
            for name, number, _ in sorted(e.values, key=lambda v: v[1]):
                ed.value.add(name=name, number=number)
            for number in e.reserved:
                ed.reserved_range.add(start=number, end=number)
            ed.reserved_name.extend(e.reserved_names)
        for m in messages:
            fd.message_type.append(message(m))
        files.append((fd.name, fd.SerializeToString(deterministic=True)))
    return files


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)
