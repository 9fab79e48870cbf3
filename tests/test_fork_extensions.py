"""`extension: true` in the spec: the intermediate model marks a fork's definitions, members and
enum values, the loader keeps official members from holding an extension, and the cross-SDK
checks (tests/crosscheck/extensions.py) find exactly the documents that use one. The fork is
tests/fork/overlay.yaml; `nox -s fork` runs the whole suite and the crosscheck on it."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from codegen.load import SPEC_PATH, SpecError, read_spec
from codegen.model import Spec, build

from .conftest import FIXTURES, ROOT
from .fork.run import FIXTURES as FORK_FIXTURES, OVERLAY, merge

sys.path.insert(0, str(ROOT / "tests" / "crosscheck"))
from extensions import Extensions

SPEC_TEXT = SPEC_PATH.read_text("utf-8")


OVERLAY_DEFINITIONS = yaml.safe_load(OVERLAY.read_text("utf-8"))["definitions"]
FORKED = "LocationSharedEvent" in yaml.safe_load(SPEC_TEXT)["definitions"]
"""Whether this checkout's spec is the fork already (under `nox -s fork`)."""


def fork_raw() -> dict:  # type: ignore[type-arg]
    spec = yaml.safe_load(SPEC_TEXT)
    return spec if FORKED else merge(spec, {"definitions": OVERLAY_DEFINITIONS})


def fork_spec() -> Spec:
    return build(read_spec(yaml.safe_dump(fork_raw(), sort_keys=False)))


FORK = fork_spec()


def test_the_model_marks_the_forks_additions_and_only_them() -> None:
    objects = {o.name: o for o in FORK.objects}
    assert objects["LocationPart"].extension and objects["LocationSharedEvent"].extension
    start = objects["TextMessageStartEvent"]
    assert [f.wire for f in start.fields if f.extension] == ["language"]
    assert all(f.extension for f in objects["LocationSharedEvent"].fields)
    event_type = next(e for e in FORK.enums if e.name == "EventType")
    assert [v.value for v in event_type.values if v.extension] == ["LOCATION_SHARED"]
    if not FORKED:
        assert not Extensions(build(read_spec(SPEC_TEXT))).declared()  # the official spec: none
    assert Extensions(FORK).declared() == [
        "LocationPart",
        "LocationSharedEvent",
        "TextMessageStartEvent.language",
        "EventType.LOCATION_SHARED",
    ]


def test_an_enum_value_can_be_marked_on_its_own() -> None:
    old = '      resolved: "'
    assert old in SPEC_TEXT
    text = SPEC_TEXT.replace(
        "    values:\n" + old,
        '    values:\n      snoozed: {doc: "Put off.", extension: true}\n' + old,
        1,
    )
    spec = build(read_spec(text))
    values = {v.value: v for e in spec.enums for v in e.values}
    assert values["snoozed"].extension and values["snoozed"].doc == "Put off."
    assert not values["resolved"].extension


def test_an_official_member_cannot_hold_an_extension() -> None:
    raw = fork_raw()
    raw["definitions"]["ToolCall"]["fields"]["place?"] = {
        "type": "list[LocationPart]",
        "doc": "Where.",
    }
    with pytest.raises(SpecError) as info:
        build(read_spec(yaml.safe_dump(raw, sort_keys=False)))
    assert info.value.problems == [
        "spec/agui.yaml: definitions.ToolCall.fields.place?.type: this member is no extension, "
        "but its type uses the extension LocationPart; mark it `extension: true` too"
    ]


def _documents(root: object) -> list[tuple[str, str, object, str | None]]:
    out = []
    for path in sorted(root.glob("*/*/*.json")):  # type: ignore[attr-defined]
        if path.name.endswith(".expect.json"):
            continue
        try:
            value = json.loads(path.read_text("utf-8"))
        except ValueError:
            value = None
        pointer = None
        if path.parent.name == "invalid":
            expect = path.with_name(path.stem + ".expect.json")
            pointer = json.loads(expect.read_text("utf-8"))["pointer"]
        out.append((path.parent.parent.name, path.relative_to(root).as_posix(), value, pointer))  # type: ignore[attr-defined]
    return out


def test_the_crosscheck_finds_an_extension_in_every_fork_fixture_and_none_elsewhere() -> None:
    extensions = Extensions(FORK)
    for definition, name, value, pointer in _documents(FORK_FIXTURES):
        assert extensions.touched(definition, value, pointer), name
    used = [
        name
        for definition, name, value, pointer in _documents(FIXTURES)
        if extensions.touched(definition, value, pointer)
    ]
    # the fork's fixtures, when this checkout is the fork (nox -s fork copies them in); else none
    assert used == [name for _, name, _, _ in _documents(FORK_FIXTURES) if FORKED]
