"""What an extension adds, as each pre-1.0 era receives it (agui.wire.eras.Downgrade).

Every 0.0.x release checks each event against closed zod unions: one value it does not know
fails the whole run (`invalid_union_discriminator`), where an unknown member of an object is
removed silently. An extension (a fork's, tests/fork/overlay.yaml; docs/extending.md) adds to
some of those unions, so each era removes or degrades what it cannot read:

* a content part of another type (a fork's `location` part) in a user message, in
  MESSAGES_SNAPSHOT and in RUN_STARTED.input: removed and counted (nothing says what its text
  would be); one with a source becomes a legacy binary part, as the 1.0 media parts do;
* a REASONING_ENCRYPTED_VALUE of another subtype: dropped;
* a SUBAGENT_FINISHED outcome of another type: removed (absent reads as success), and a member
  its closed outcome objects do not list: removed;
* a resume entry of another status in RUN_STARTED.input: removed;
* event types, message roles and text roles it does not know were dropped before (test_eras.py);
* a member an extension adds to a message or a content part: sent as it is (zod strips it).

The data here is JSON, as the era layer reads it: the repository's spec has no extension, and a
fork's generated models would give the same JSON. tests/interop/test_compat_extensions.py runs
@ag-ui/client 0.0.59 against a server of a generated fork. Each test fails without its rule.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui.wire.eras import ERAS, NEWEST, Downgrade

ERA = {era.name: era for era in ERAS}
RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}

TEXT = {"type": "text", "text": "meet me here"}
LOCATION = {"type": "location", "lat": 38.7, "lon": -9.1, "label": "Lisbon"}
MODEL_3D = {
    "type": "model3d",
    "source": {"type": "url", "value": "https://x/a.glb", "mimeType": "model/gltf-binary"},
}
USER = {"id": "u", "role": "user", "content": [TEXT, LOCATION]}
WITH_PARTS = [era.name for era in ERAS if era.parts != "none"]
WITH_REASONING = [era.name for era in ERAS if "REASONING_ENCRYPTED_VALUE" in era.events]


def feed(era: str, *events: dict[str, Any]) -> tuple[list[dict[str, Any]], Downgrade]:
    down = Downgrade(ERA[era])
    out = [o for e in (RS, *events, RF) for o in down.feed(e)]
    return out[1:-1], down


def snapshot(era: str, *messages: dict[str, Any]) -> tuple[list[dict[str, Any]], Downgrade]:
    out, down = feed(era, {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)})
    (event,) = out
    return event["messages"], down


@pytest.mark.parametrize("era", [era.name for era in ERAS])
def test_an_extension_part_is_removed_from_a_snapshot_in_every_era(era: str) -> None:
    (message,), down = snapshot(era, USER)
    expected = "meet me here" if ERA[era].parts == "none" else [TEXT]
    assert message == {**USER, "content": expected}
    assert down.notes.dropped["location content parts"] == 1
    assert down.notes.lost() == ""  # 0.0.59 cannot read it either: nothing to warn about


IMAGE = {
    "type": "image",
    "source": {"type": "url", "value": "https://x/b.jpg", "mimeType": "image/jpeg"},
    "altText": "A red bicycle",  # a fork's member of an official part
}
ANSWER = {"id": "u2", "role": "user", "content": [TEXT, IMAGE], "replyTo": "a1"}


@pytest.mark.parametrize("era", [era.name for era in ERAS])
def test_a_member_an_extension_adds_to_a_message_or_a_part_is_sent_as_it_is(era: str) -> None:
    """No 0.0.x release declares a message or a content part strict: zod strips a member it does
    not list (tests/interop/test_compat_extensions.py runs each release on it). So the era keeps
    the message's member, and the part's where it sends the part as it is; a part it translates
    (to text, to a legacy binary part) is made anew, without it."""
    (message,), _ = snapshot(era, ANSWER)
    assert message["replyTo"] == "a1"
    if ERA[era].parts == "typed":
        assert message["content"] == [TEXT, IMAGE]
    else:
        assert "altText" not in str(message["content"])


@pytest.mark.parametrize("era", WITH_PARTS)
def test_an_extension_part_with_a_source_becomes_a_binary_part(era: str) -> None:
    (message,), down = snapshot(era, {**USER, "content": [TEXT, MODEL_3D]})
    assert message["content"] == [
        TEXT,
        {"type": "binary", "mimeType": "model/gltf-binary", "url": "https://x/a.glb"},
    ]
    assert down.notes.translated["model3d parts to binary parts"] == 1


@pytest.mark.parametrize("era", WITH_PARTS)
def test_the_parts_an_era_knows_stay(era: str) -> None:
    binary = {"type": "binary", "mimeType": "image/png", "data": "AA=="}
    (message,), _ = snapshot(era, {**USER, "content": [TEXT, binary]})
    assert message["content"] == [TEXT, binary]


@pytest.mark.parametrize("era", [name for name in WITH_PARTS if ERA[name].run_input])
def test_an_extension_part_is_removed_from_run_started_input(era: str) -> None:
    started = {**RS, "input": {"threadId": "t", "runId": "r", "messages": [USER]}}
    (out,) = Downgrade(ERA[era]).feed(started)
    assert out["input"]["messages"] == [{**USER, "content": [TEXT]}]


def test_an_extension_part_of_a_tool_result_is_dropped_with_the_text_kept() -> None:
    result = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c"}
    out, down = feed(NEWEST.name, {**result, "content": [TEXT, LOCATION]})
    assert out == [{**result, "content": "meet me here"}]
    assert down.notes.dropped["location content parts"] == 1


@pytest.mark.parametrize("era", WITH_REASONING)
def test_an_encrypted_value_of_an_extension_subtype_is_dropped(era: str) -> None:
    value = {"type": "REASONING_ENCRYPTED_VALUE", "entityId": "m", "encryptedValue": "x"}
    known = {**value, "subtype": "message"}
    out, down = feed(era, known, {**value, "subtype": "summary"})
    assert out == [known]
    assert down.notes.dropped["REASONING_ENCRYPTED_VALUE events of subtype summary"] == 1


def test_a_subagent_outcome_of_an_extension_type_is_removed() -> None:
    finished = {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"}
    out, down = feed(
        "0.0.59",
        {**finished, "outcome": {"type": "handoff", "to": "b"}},
        {**finished, "outcome": {"type": "suspended", "interruptIds": ["i"], "priority": 2}},
        {**finished, "outcome": {"type": "success"}},
    )
    assert out == [
        finished,
        {**finished, "outcome": {"type": "suspended", "interruptIds": ["i"]}},
        {**finished, "outcome": {"type": "success"}},
    ]
    assert down.notes.dropped["the subagent handoff outcome"] == 1
    assert down.notes.dropped["the subagent outcome's priority"] == 1


@pytest.mark.parametrize("era", [era.name for era in ERAS if era.outcomes is not None])
def test_a_member_an_extension_adds_to_a_run_outcome_is_removed(era: str) -> None:
    interrupts = [{"id": "i", "reason": "tool_call"}]
    out, down = feed(
        era,
        {**RF, "outcome": {"type": "interrupt", "interrupts": interrupts, "deadline": 5}},
        {**RF, "outcome": {"type": "success", "confidence": 0.9}},
    )
    assert [e["outcome"] for e in out] == [
        {"type": "interrupt", "interrupts": interrupts},
        {"type": "success"},
    ]
    assert down.notes.dropped["the interrupt outcome's deadline"] == 1
    assert down.notes.dropped["confidence"] == 1


@pytest.mark.parametrize("era", [era.name for era in ERAS if era.run_input])
def test_a_resume_entry_of_an_extension_status_is_removed(era: str) -> None:
    resolved = {"interruptId": "i", "status": "resolved"}
    run_input = {"threadId": "t", "runId": "r", "messages": []}
    started = {
        **RS,
        "input": {**run_input, "resume": [resolved, {"interruptId": "j", "status": "deferred"}]},
    }
    (out,) = Downgrade(ERA[era]).feed(started)
    assert out["input"]["resume"] == [resolved]
