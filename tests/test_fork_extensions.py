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

# What the overlay adds, read from it (a definition with a `kind` is new; one without adds to an
# existing one), so that the expectations follow the overlay as it grows.
NEW = [name for name, d in OVERLAY_DEFINITIONS.items() if "kind" in d]
ADDED = {name: d for name, d in OVERLAY_DEFINITIONS.items() if "kind" not in d}
ADDED_FIELDS = {n: [w.rstrip("?") for w in d["fields"]] for n, d in ADDED.items() if "fields" in d}
ADDED_VALUES = {n: list(d["values"]) for n, d in ADDED.items() if "values" in d}


def fork_raw() -> dict:  # type: ignore[type-arg]
    spec = yaml.safe_load(SPEC_TEXT)
    return spec if FORKED else merge(spec, {"definitions": OVERLAY_DEFINITIONS})


def fork_spec() -> Spec:
    return build(read_spec(yaml.safe_dump(fork_raw(), sort_keys=False)))


FORK = fork_spec()


def test_the_overlay_adds_to_existing_definitions_of_every_kind() -> None:
    """The fork proves additions to what exists, not only new definitions: a field of an event,
    of a content part and of a message, a value of an enum, a member of a union."""
    assert {"TextMessageStartEvent", "ImagePart", "UserMessage"} <= set(ADDED_FIELDS)
    assert "EventType" in ADDED_VALUES
    assert {"ContentPart", "Event"} <= {n for n, d in ADDED.items() if "members" in d}


def test_the_model_marks_the_forks_additions_and_only_them() -> None:
    objects = {o.name: o for o in FORK.objects}
    definitions = {d.name: d for d in (*FORK.objects, *FORK.unions, *FORK.aliases, *FORK.enums)}
    for name in NEW:
        assert definitions[name].extension, name
    assert all(f.extension for f in objects["LocationSharedEvent"].fields)
    for name, wires in ADDED_FIELDS.items():
        assert [f.wire for f in objects[name].fields if f.extension] == wires, name
    enums = {e.name: e for e in FORK.enums}
    for name, values in ADDED_VALUES.items():
        assert [v.value for v in enums[name].values if v.extension] == values, name
    if not FORKED:
        assert not Extensions(build(read_spec(SPEC_TEXT))).declared()  # the official spec: none
    assert sorted(Extensions(FORK).declared()) == sorted(
        [
            *NEW,
            *(f"{name}.{wire}" for name, wires in ADDED_FIELDS.items() for wire in wires),
            *(f"{name}.{value}" for name, values in ADDED_VALUES.items() for value in values),
        ]
    )


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
