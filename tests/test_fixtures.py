"""Golden wire fixtures: tests/fixtures/<Definition>/{valid,invalid}/*.json, discovered by path.

valid/X.json decodes strictly as <Definition> and re-encodes to the same bytes (or to
valid/X.expect.json when the input is not canonical); when <Definition> is a member of a union, it
does the same through the union. invalid/X.json fails strict decoding with the problem
X.expect.json names. Every fixture is its own test id and reaches an assertion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agui
from agui.wire.codec import DEFINITIONS, TAGS

from .conftest import FIXTURES, ROOT


def _cases(kind: str) -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob(f"*/{kind}/*.json") if not p.name.endswith(".expect.json")
    )


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.stem}"


def _definition(path: Path) -> Any:
    name = path.parent.parent.name
    assert name in DEFINITIONS, f"{path}: the directory names no definition of the spec"
    return DEFINITIONS[name]


def _unions_of(cls: Any) -> list[str]:
    """The unions that have `cls` as a member."""
    return [union for union, members in TAGS.items() if cls in members.values()]


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_valid_fixture(path: Path) -> None:
    """Strictly as its own definition, and through every union it is a member of: decodes, to
    the same class, with no warning when tolerant, and re-encodes to the canonical bytes."""
    raw = path.read_bytes()
    expect = path.with_name(path.stem + ".expect.json")
    wanted = expect.read_bytes() if expect.exists() else raw
    assert wanted.endswith(b"\n") and not wanted.endswith(b"\n\n"), "one trailing newline"
    name = path.parent.parent.name
    cls = _definition(path)

    model = agui.decode(raw, cls, strict=True)
    assert agui.encode(model) + b"\n" == wanted, f"{name}: the re-encoding differs"
    if name in TAGS:  # a union's own fixture decodes to one of its members
        assert type(model) in TAGS[name].values(), (name, type(model))

    for union in _unions_of(cls):
        through = agui.decode(raw, DEFINITIONS[union], strict=True)
        assert type(through) is cls, f"through {union}: {type(through).__name__}"
        assert through == model, f"through {union}: another value than as {name}"
        assert agui.encode(through) + b"\n" == wanted, f"through {union}: the re-encoding differs"
        warnings: list[agui.Problem] = []
        tolerant = agui.decode(raw, DEFINITIONS[union], warnings=warnings)
        assert tolerant == model and warnings == [], (union, warnings)


def test_union_members_are_found() -> None:
    """The membership test_valid_fixture relies on: every member of every union names a
    definition with fixtures, and finds its union."""
    assert TAGS
    for union, members in TAGS.items():
        assert members, union
        for cls in members.values():
            assert DEFINITIONS.get(cls.__name__) is cls, (union, cls)
            assert union in _unions_of(cls), (union, cls)
            assert _in(cls.__name__, "valid"), f"{union} member {cls.__name__} has no fixture"


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
    missing = []
    for name in DEFINITIONS:
        major = name in TAGS or name.endswith("Event") or name.endswith("Message")
        for kind, need in zip(("valid", "invalid"), (3, 2) if major else (1, 1), strict=True):
            have = len(_in(name, kind))
            if have < need:
                folder = _shown(FIXTURES / name / kind)
                missing.append(f"{folder}: {have} of {need} needed; add {need - have} more")
    assert not missing, "too few fixtures:\n" + "\n".join(missing)


def test_every_invalid_fixture_has_an_expectation() -> None:
    for path in _cases("invalid"):
        assert path.with_name(path.stem + ".expect.json").exists(), path


def test_every_fixture_file_is_a_case() -> None:
    """Nothing under tests/fixtures escapes the tests above: every file is a case directly in
    <Definition>/valid or <Definition>/invalid, or the .expect.json of one."""
    cases = set(_cases("valid") + _cases("invalid"))
    stray = []
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file()):
        relative = path.relative_to(FIXTURES)
        if len(relative.parts) != 3 or relative.parts[1] not in ("valid", "invalid"):
            stray.append(relative)
        elif path.name.endswith(".expect.json"):
            if path.with_name(path.name.removesuffix(".expect.json") + ".json") not in cases:
                stray.append(relative)
        elif path not in cases:
            stray.append(relative)
    assert not stray, f"files under {FIXTURES} that no test reads: {stray}"


def _shown(path: Path) -> str:
    """`path` as the repository names it (tests/fixtures/...)."""
    return (path.relative_to(ROOT) if path.is_relative_to(ROOT) else path).as_posix()


def _in(name: str, kind: str) -> list[Path]:
    return [
        p for p in (FIXTURES / name / kind).glob("*.json") if not p.name.endswith(".expect.json")
    ]
