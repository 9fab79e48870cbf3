"""Golden wire fixtures: tests/fixtures/<Definition>/{valid,invalid}/*.json, discovered by path.

valid/X.json decodes strictly and re-encodes to the same bytes (or to valid/X.expect.json when the
input is not canonical). invalid/X.json fails strict decoding with the problem X.expect.json names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agui_generated.converter import CLASSES

import agui
from agui.wire.codec import TAGS

from .conftest import FIXTURES


def _cases(kind: str) -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob(f"*/{kind}/*.json") if not p.name.endswith(".expect.json")
    )


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.stem}"


def _definition(path: Path) -> object:
    name = path.parent.parent.name
    cls = getattr(agui, name, None)
    assert cls is not None, f"{path}: the directory names no definition of the spec"
    return cls


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_valid_fixture_round_trips_byte_exact(path: Path) -> None:
    raw = path.read_bytes()
    expect = path.with_name(path.stem + ".expect.json")
    wanted = expect.read_bytes() if expect.exists() else raw
    assert wanted.endswith(b"\n") and not wanted.endswith(b"\n\n"), "one trailing newline"
    model = agui.decode(raw, _definition(path), strict=True)
    assert agui.encode(model) + b"\n" == wanted


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_valid_fixture_decodes_as_its_own_class_through_its_unions(path: Path) -> None:
    """A member of a union decodes to the same class through the union, with no warning."""
    cls = _definition(path)
    for union, members in TAGS.items():
        if cls in members.values():
            warnings: list[agui.Problem] = []
            model = agui.decode(path.read_bytes(), getattr(agui, union), warnings=warnings)
            assert type(model) is cls
            assert warnings == []


@pytest.mark.parametrize("path", _cases("invalid"), ids=_id)
def test_invalid_fixture_fails_at_the_expected_pointer(path: Path) -> None:
    expect = json.loads(path.with_name(path.stem + ".expect.json").read_text("utf-8"))
    with pytest.raises(agui.DecodeError) as info:
        agui.decode(path.read_bytes(), _definition(path), strict=True)
    found = [(p.pointer, p.kind) for p in info.value.problems]
    assert (expect["pointer"], expect["kind"]) in found


def test_every_definition_has_fixtures() -> None:
    """At least three valid and two invalid documents per event, message role and union; at
    least one of each for every other object of the spec."""
    names = [cls.__name__ for cls in CLASSES] + list(TAGS)
    for name in names:
        valid = len(_in(name, "valid"))
        invalid = len(_in(name, "invalid"))
        major = name in TAGS or name.endswith("Event") or name.endswith("Message")
        need_valid, need_invalid = (3, 2) if major else (1, 1)
        assert valid >= need_valid and invalid >= need_invalid, (name, valid, invalid)


def test_every_invalid_fixture_has_an_expectation() -> None:
    for path in _cases("invalid"):
        assert path.with_name(path.stem + ".expect.json").exists(), path


def _in(name: str, kind: str) -> list[Path]:
    return [
        p for p in (FIXTURES / name / kind).glob("*.json") if not p.name.endswith(".expect.json")
    ]
