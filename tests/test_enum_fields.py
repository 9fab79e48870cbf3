"""A field of an enum type takes the enum's wire strings in the constructor (codegen's
EnumConverter): `ResumeEntry(status="resolved")` holds `ResumeStatus.RESOLVED`, as decoding
gives it. The member stays the member, None stays None for an optional field, and another value
is kept as given, for the encoder to refuse by name. (That mypy takes the wire strings and
refuses others is tests/test_typing_examples.py.)"""

from __future__ import annotations

import enum
import typing
from typing import Any

import agui_generated.models as models
import attrs
import pytest
from agui_generated import enums

import agui
from codegen.load import load_spec
from codegen.model import build

from .conftest import FIXTURES


def enum_fields() -> list[tuple[type[Any], attrs.Attribute[Any], type[enum.Enum], bool]]:
    """Every instance field of the generated models whose type is an enum: (class, field, enum,
    optional)."""
    found = []
    for name in dir(models):
        cls = getattr(models, name)
        if not (isinstance(cls, type) and attrs.has(cls)):
            continue
        hints = typing.get_type_hints(cls)
        for field in attrs.fields(cls):
            kinds = typing.get_args(hints[field.name]) or (hints[field.name],)
            members = [k for k in kinds if isinstance(k, type) and issubclass(k, enum.Enum)]
            if members:
                found.append((cls, field, members[0], type(None) in kinds))
    return found


FIELDS = enum_fields()


def valid(cls: type[Any]) -> Any:
    """A valid instance of `cls`: its smallest valid fixture (every definition has one)."""
    path = min((FIXTURES / cls.__name__ / "valid").glob("*.json"), key=lambda p: p.stat().st_size)
    return agui.decode(path.read_bytes(), cls, strict=True)


def test_the_enum_fields_are_found() -> None:
    """The instance fields the spec types as an enum (a fork's too), tags left out."""
    names = sorted(f"{cls.__name__}.{field.name}" for cls, field, _, _ in FIELDS)
    spec = build(load_spec())
    assert names == sorted(
        f"{o.name}.{f.py}"
        for o in spec.objects
        for f in o.fields
        if f.type is not None and f.type.kind == "enum" and not f.is_class_constant
    )
    assert {
        "ReasoningEncryptedValueEvent.subtype",
        "ResumeEntry.status",
        "TextMessageChunkEvent.role",
        "TextMessageStartEvent.role",
    } <= set(names)
    assert all(field.converter is not None for _, field, _, _ in FIELDS)


@pytest.mark.parametrize(
    ("cls", "field", "kind", "optional"),
    FIELDS,
    ids=[f"{c.__name__}.{f.name}" for c, f, _, _ in FIELDS],
)
def test_a_wire_string_becomes_the_member(
    cls: type[Any], field: attrs.Attribute[Any], kind: type[enum.Enum], optional: bool
) -> None:
    assert getattr(enums, kind.__name__) is kind
    base = valid(cls)
    for member in kind:
        made = attrs.evolve(base, **{field.name: member.value})
        held = getattr(made, field.name)
        assert held is member and type(held) is kind
        assert getattr(attrs.evolve(base, **{field.name: member}), field.name) is member
        # the same object decoding gives, and the same bytes
        assert agui.decode(agui.encode(made), cls) == made
    if optional:
        assert getattr(attrs.evolve(base, **{field.name: None}), field.name) is None
    wrong = attrs.evolve(base, **{field.name: "Not-A-Value"})
    assert getattr(wrong, field.name) == "Not-A-Value"  # kept as given: the encoder names it
    with pytest.raises(agui.EncodeError, match=f"is not a {kind.__name__}"):
        agui.encode(wrong)


def test_resume_entry_with_the_wire_string() -> None:
    entry = agui.ResumeEntry(interrupt_id="i", status="resolved", payload={"ok": True})
    assert entry.status is agui.ResumeStatus.RESOLVED
    assert entry == agui.ResumeEntry(
        interrupt_id="i", status=agui.ResumeStatus.RESOLVED, payload={"ok": True}
    )
    assert attrs.evolve(entry, status="cancelled").status is agui.ResumeStatus.CANCELLED
