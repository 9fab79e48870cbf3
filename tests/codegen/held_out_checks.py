"""Documents of the held-out spec edits through every binding of a generated fork.

Not collected by the test suite on its own: tests/test_codegen_held_out.py generates the fork of
spec/agui.yaml with tests/codegen/held_out.yaml and a renamed field, then runs this module with
pytest in a process whose PYTHONPATH puts the fork's packages first. AGUI_EVERY_FORM_SPEC and
AGUI_EVERY_FORM_OUT name the fork's agui.yaml and generated folder, as for every_form_checks.py,
whose machinery this reuses: documents drawn from the intermediate model, invalid ones made by one
change, and the attrs codec (byte for byte), the JSON Schema, pydantic and protobuf on each.

What it adds to every_form_checks.py: the repository's own fixtures on the fork (those of the
renamed field must now fail, renamed they must pass; those of the event given a default must pass
unchanged), a new content part inside messages, the problem each invalid document is reported
with, and a binary document of a peer built before the rename.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import agui_pydantic
import attrs
import orjson
import pytest
from hypothesis import given, strategies as st
from pydantic import MISSING

import agui
from agui.wire.codec import DEFINITIONS
from codegen.ledger import numbers
from codegen.load import ledger_path, load_ledger

from .every_form_checks import (
    EXAMPLES,
    INVALID,
    OBJECTS,
    OUT,
    SCHEMA,
    SPEC_FILE,
    adapter,
    document,
    every_binding,
    object_mutations,
    refused_by_every_binding,
    validator,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NEW_EVENT, PART, EXTENDED = "ScoresReportedEvent", "CodePart", "RunErrorEvent"
RENAMED, OLD, NEW = "StepStartedEvent", "stepName", "name"


def fixtures(name: str) -> list[dict[str, Any]]:
    """The repository's valid documents of a definition (tests/fixtures/<name>/valid)."""
    paths = sorted((FIXTURES / name / "valid").glob("*.json"))
    docs = [json.loads(p.read_text("utf-8")) for p in paths if not p.name.endswith(".expect.json")]
    assert docs, name
    return docs


def renamed(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with the old wire name replaced by the new one, in its place."""
    return {NEW if key == OLD else key: value for key, value in doc.items()}


def in_messages(part: Any) -> dict[str, Any]:
    """A MESSAGES_SNAPSHOT with the part in a user's message and in a tool's."""
    return {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "u", "role": "user", "content": [part]},
            {"id": "t", "role": "tool", "content": [part], "toolCallId": "c"},
        ],
    }


def problems(doc: Any, name: str, strict: bool = True) -> set[tuple[str, str]]:
    """(pointer, kind) of what the attrs codec finds wrong in the document."""
    with pytest.raises(agui.DecodeError) as info:
        agui.decode(orjson.dumps(doc), DEFINITIONS[name], strict=strict)
    return {(p.pointer, p.kind) for p in info.value.problems}


def test_the_fork_is_the_one_under_test() -> None:
    assert Path(agui_pydantic.__file__).is_relative_to(OUT)
    assert {NEW_EVENT, PART, "Score"} <= set(OBJECTS)
    assert NEW in {f.wire for f in OBJECTS[RENAMED].fields}


@pytest.mark.parametrize("name", [NEW_EVENT, EXTENDED, RENAMED])
@EXAMPLES
@given(data=st.data())
def test_a_valid_event_goes_through_every_binding(name: str, data: st.DataObject) -> None:
    every_binding(name, data.draw(document(name), label=name))


@EXAMPLES
@given(data=st.data())
def test_a_new_content_part_goes_through_every_binding_inside_messages(
    data: st.DataObject,
) -> None:
    part = data.draw(document(PART), label=PART)
    every_binding("MessagesSnapshotEvent", in_messages(part))
    raw = orjson.dumps(part)
    assert type(agui.decode(raw, DEFINITIONS["ContentPart"], strict=True)).__name__ == PART
    validator("ContentPart").validate(part)
    assert adapter("ContentPart").dump_json(adapter("ContentPart").validate_json(raw)) == raw


@pytest.mark.parametrize("name", [NEW_EVENT, "Score", EXTENDED, RENAMED, PART])
@INVALID
@given(data=st.data())
def test_an_invalid_document_is_refused_by_every_binding(name: str, data: st.DataObject) -> None:
    doc = data.draw(document(name), label=name)
    for what, bad in object_mutations(OBJECTS[name], doc):
        refused_by_every_binding(name, bad, what)
        if name == PART:
            refused_by_every_binding("MessagesSnapshotEvent", in_messages(bad), what)


SCORES = {
    "type": "SCORES_REPORTED",
    "messageId": "m",
    "scores": [{"criterion": "accuracy", "value": 1}, {"criterion": "tone", "value": 0.5}],
    "overall": 0.75,
}
CODE = {"type": "code", "language": "python", "text": "print(1)"}


@pytest.mark.parametrize(
    ("name", "doc", "pointer", "kind"),
    [
        (NEW_EVENT, {**SCORES, "scores": [SCORES["scores"][0], {"criterion": "t", "value": 1.5}]},
         "/scores/1/value", "range"),
        (NEW_EVENT, {**SCORES, "scores": [{"value": 0}]}, "/scores/0/criterion", "missing"),
        (NEW_EVENT, {**SCORES, "scores": []}, "/scores", "min_items"),
        (NEW_EVENT, {**SCORES, "overall": -0.25}, "/overall", "range"),
        (NEW_EVENT, {**SCORES, "overall": "high"}, "/overall", "type"),
        ("MessagesSnapshotEvent", in_messages({**CODE, "language": "rust"}),
         "/messages/0/content/0/language", "enum"),
        ("MessagesSnapshotEvent", in_messages({"type": "code", "language": "shell"}),
         "/messages/0/content/0/text", "missing"),
        (EXTENDED, {"type": "RUN_ERROR", "message": "m", "retryable": "yes"}, "/retryable", "type"),
        (EXTENDED, {"type": "RUN_ERROR", "message": "m", "retryable": None}, "/retryable", "null"),
        (EXTENDED, {"type": "RUN_ERROR", "message": "m", "occurredAt": "2026-12-04T18:00:00"},
         "/occurredAt", "format"),
        (NEW_EVENT, {**SCORES, "scores": [{"criterion": "c", "value": 0, "source": "rubric.md"}]},
         "/scores/0/source", "format"),
    ],
)  # fmt: skip
def test_the_codec_names_the_place_and_kind_of_a_problem(
    name: str, doc: dict[str, Any], pointer: str, kind: str
) -> None:
    assert (pointer, kind) in problems(doc, name)
    refused_by_every_binding(name, doc, pointer)


def test_the_events_fixtures_still_pass_and_the_default_is_never_filled_in() -> None:
    """The repository's RUN_ERROR documents, written before `retryable` existed, are valid on
    the fork, byte for byte in every binding; absent, the member stays absent."""
    cls = DEFINITIONS[EXTENDED]
    for doc in fixtures(EXTENDED):
        every_binding(EXTENDED, doc)
        assert agui.decode(orjson.dumps(doc), cls, strict=True).retryable is None
        assert adapter(EXTENDED).validate_python(doc, by_name=False).retryable is MISSING
    for given_ in (True, False):  # given, it is written back as given, false included
        every_binding(EXTENDED, {"type": "RUN_ERROR", "message": "m", "retryable": given_})
    assert attrs.fields(cls).retryable.metadata["default"] is False
    member = SCHEMA["$defs"][EXTENDED]["properties"]["retryable"]
    assert member["default"] is False and "retryable" not in SCHEMA["$defs"][EXTENDED]["required"]


def test_documents_of_the_old_name_fail_and_renamed_they_pass() -> None:
    """Every STEP_STARTED fixture of the repository names the step `stepName`: on the fork each
    is refused by every binding (strictly: an unknown member and a missing one; leniently too,
    since the member is required), and the same document with the member renamed passes."""
    for doc in fixtures(RENAMED):
        assert problems(doc, RENAMED) == {(f"/{OLD}", "unknown_property"), (f"/{NEW}", "missing")}
        assert problems(doc, RENAMED, strict=False) == {(f"/{NEW}", "missing")}
        refused_by_every_binding(RENAMED, doc, "the old name")
        every_binding(RENAMED, renamed(doc))
    for doc in fixtures("StepFinishedEvent"):  # its sibling keeps the name
        every_binding("StepFinishedEvent", doc)


def test_a_binary_document_of_the_old_name_is_not_read_as_the_new() -> None:
    """A peer built before the rename sends the step's name under the old field number, which
    the fork reserves and skips: the name is not read into another member. Being a required
    string, it then reads as "" (proto3 writes no empty string, so its absence is not seen;
    docs/divergences.md), where JSON refuses the document."""
    slots = numbers(load_ledger(ledger_path(SPEC_FILE)))
    old, new = slots[f"{RENAMED}.step_name"], slots[f"{RENAMED}.{NEW}"]
    assert old != new and old < 16 and new < 16  # one-byte keys
    event = agui.decode(orjson.dumps({"type": "STEP_STARTED", NEW: "plan"}), strict=True)
    field = bytes([len("plan")]) + b"plan"
    current = agui.encode_proto(event)
    assert current.count(bytes([new << 3 | 2]) + field) == 1
    before = current.replace(bytes([new << 3 | 2]) + field, bytes([old << 3 | 2]) + field)
    assert agui.decode_proto(current, strict=True) == event
    assert agui.decode_proto(before, strict=True) == attrs.evolve(event, name="")


def test_a_deprecated_member_is_marked_everywhere_and_warns_when_set() -> None:
    """RUN_ERROR.reason, deprecated on the fork: documents that carry it stay valid in every
    binding; setting it in Python warns, naming what to use instead; each schema marks it."""
    doc = {"type": "RUN_ERROR", "message": "m", "reason": "old"}
    every_binding(EXTENDED, doc)
    cls = DEFINITIONS[EXTENDED]
    with pytest.warns(DeprecationWarning, match="RunErrorEvent.reason is deprecated: use message"):
        cls(message="m", reason="old")
    assert SCHEMA["$defs"][EXTENDED]["properties"]["reason"]["deprecated"] is True
    assert agui_pydantic.RunErrorEvent.model_fields["reason"].deprecated
    proto = (OUT / "proto" / "ag_ui" / "events.proto").read_text("utf-8")
    assert re.search(r"optional string reason = \d+ \[deprecated = true\];", proto)
