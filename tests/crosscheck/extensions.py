"""What of a document is a fork's extension (`extension: true` in the spec), so that the cross-SDK
checks report it instead of comparing it with the official SDKs, which cannot know it.

`Extensions(spec).touched(definition, document, pointer)` walks the JSON document the way the
spec reads it (a union by its discriminator, `A | B` by JSON kind, lists item by item) and names
every extension it meets: an extension definition (`LocationSharedEvent`), a member present
(`TextMessageStartEvent.language`), an enum value (`EventType.LOCATION_SHARED`). `pointer` (an
invalid fixture's expected problem) also counts when it lands on an extension member, even an
absent one (a missing required member of an extension object). An empty list: the document is
the official protocol's, and is compared as always.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from codegen.model import Spec, TypeRef  # noqa: E402

JSON_KIND = {str: "string", bool: "boolean", int: "number", float: "number", list: "array"}


def load() -> Spec:
    """The intermediate model of this checkout's spec/agui.yaml."""
    from codegen.load import SPEC_PATH, load_spec
    from codegen.model import build

    return build(load_spec(SPEC_PATH))


class Extensions:
    def __init__(self, spec: Spec) -> None:
        self.objects = {o.name: o for o in spec.objects}
        self.unions = {u.name: u for u in spec.unions}
        self.aliases = {a.name: a for a in spec.aliases}
        self.enums = {e.name: e for e in spec.enums}

    @property
    def any(self) -> bool:
        """Whether the spec has any extension at all (a fork)."""
        return bool(self.declared())

    def declared(self) -> list[str]:
        """Every extension of the spec, named as `touched` names them."""
        out = [d.name for d in (*self.objects.values(), *self.unions.values()) if d.extension]
        out += [a.name for a in self.aliases.values() if a.extension]
        for o in self.objects.values():
            if not o.extension:
                out += [f"{o.name}.{f.wire}" for f in o.fields if f.extension]
        for e in self.enums.values():
            if e.extension:  # a fork's own enum, named as its own object is: not value by value
                out.append(e.name)
            else:
                out += [f"{e.name}.{v.value}" for v in e.values if v.extension]
        return out

    def touched(self, definition: str, document: Any, pointer: str | None = None) -> list[str]:
        found: list[str] = []
        self._definition(definition, document, found)
        if pointer is not None:
            self._pointer(
                definition, document, [_unescape(p) for p in pointer.split("/")[1:]], found
            )
        return list(dict.fromkeys(found))

    # ── walking a document ──
    def _definition(self, name: str, value: Any, found: list[str]) -> None:
        if name in self.unions:
            self._union(name, value, found)
        elif name in self.objects:
            self._object(name, value, found)
        elif name in self.aliases:
            alias = self.aliases[name]
            if alias.extension:
                found.append(name)
            else:
                self._type(alias.type, value, found)

    def _union(self, name: str, value: Any, found: list[str]) -> None:
        union = self.unions[name]
        if union.extension:
            found.append(name)
            return
        member = self._member(union.name, value)
        if member is not None:
            self._object(member, value, found)

    def _member(self, union: str, value: Any) -> str | None:
        if not isinstance(value, dict):
            return None
        u = self.unions[union]
        return dict(u.tags).get(value.get(u.discriminator))

    def _object(self, name: str, value: Any, found: list[str]) -> None:
        obj = self.objects[name]
        if obj.extension:
            found.append(name)
            return
        if not isinstance(value, dict):
            return
        for f in obj.fields:
            if f.wire not in value:
                continue
            if f.extension:
                found.append(f"{name}.{f.wire}")
            elif f.type is not None:
                self._type(f.type, value[f.wire], found)

    def _type(self, t: TypeRef, value: Any, found: list[str]) -> None:
        if t.alias and self.aliases[t.alias].extension:
            found.append(t.alias)
        elif t.kind == "ref":
            self._object(t.name, value, found)
        elif t.kind == "union":
            self._union(t.name, value, found)
        elif t.kind == "enum":
            enum = self.enums[t.name]
            if enum.extension:
                found.append(t.name)
                return
            for v in enum.values:
                if v.extension and v.value == value:
                    found.append(f"{t.name}.{v.value}")
        elif t.kind == "list" and t.item is not None and isinstance(value, list):
            for item in value:
                self._type(t.item, item, found)
        elif t.kind == "either":
            kind = "object" if isinstance(value, dict) else JSON_KIND.get(type(value))
            for option in t.options:
                if option.json_kind == kind:
                    self._type(option, value, found)

    # ── following an expected problem's pointer ──
    def _pointer(self, name: str, value: Any, parts: list[str], found: list[str]) -> None:
        """Follow `parts` from the definition `name` through the spec, as far as it goes, and
        note an extension member or definition on the way (absent members included)."""
        t: TypeRef | None = self._named(name)
        for part in parts:
            t = self._resolve(t, value, found)
            if t is None:
                return
            if t.kind == "list" and t.item is not None and part.isdigit():
                index = int(part)
                value = value[index] if isinstance(value, list) and index < len(value) else None
                t = t.item
                continue
            if t.kind != "ref":
                return
            obj = self.objects[t.name]
            field = next((f for f in obj.fields if f.wire == part), None)
            if field is None:
                return
            if field.extension:
                found.append(f"{obj.name}.{field.wire}")
                return
            t = field.type
            value = value.get(part) if isinstance(value, dict) else None
        self._resolve(t, value, found)

    def _named(self, name: str) -> TypeRef | None:
        if name in self.objects:
            return TypeRef("ref", name=name)
        if name in self.unions:
            return TypeRef("union", name=name)
        if name in self.aliases:
            return self.aliases[name].type
        return None

    def _resolve(self, t: TypeRef | None, value: Any, found: list[str]) -> TypeRef | None:
        """The type a value of `t` is read as (an alternative by JSON kind, a union's member), or
        None where the walk ends (noting an extension it ends on)."""
        if t is None:
            return None
        if t.alias and t.alias in self.aliases and self.aliases[t.alias].extension:
            found.append(t.alias)
            return None
        if t.kind == "either":
            kind = "object" if isinstance(value, dict) else JSON_KIND.get(type(value))
            option = next((o for o in t.options if o.json_kind == kind), None)
            return self._resolve(option, value, found)
        if t.kind == "union":
            if self.unions[t.name].extension:
                found.append(t.name)
                return None
            member = self._member(t.name, value)
            return self._resolve(TypeRef("ref", name=member), value, found) if member else None
        if t.kind == "ref" and self.objects[t.name].extension:
            found.append(t.name)
            return None
        return t


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")
