"""The loader's messages say what is wrong in words, and name the spec they are about: a duplicate
tag names the tag and the members sharing it, a badly cased name is explained (and spelled right),
a union member without a tag is told which union needs which tag, and a fork's messages name the
fork's own spec and ledger, not spec/agui.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.__main__ import main
from codegen.load import SPEC_PATH, SpecError, read_spec
from codegen.model import build

SPEC_TEXT = SPEC_PATH.read_text("utf-8")


def problems(text: str, source: str = "spec/agui.yaml") -> list[str]:
    assert text != SPEC_TEXT
    with pytest.raises(SpecError) as info:
        build(read_spec(text, source), source)
    return info.value.problems


def test_a_duplicate_tag_names_the_tag_and_its_members() -> None:
    text = SPEC_TEXT.replace("    tag: TEXT_MESSAGE_START\n", "    tag: TEXT_MESSAGE_END\n", 1)
    assert (
        "spec/agui.yaml: definitions.Event.members: TextMessageStartEvent and TextMessageEndEvent "
        "share the tag 'TEXT_MESSAGE_END'; the discriminator 'type' tells the members of Event "
        "apart, so each needs a tag of its own"
    ) in problems(text)


def test_a_tag_value_no_member_carries_is_named() -> None:
    text = SPEC_TEXT.replace("    tag: TEXT_MESSAGE_START\n", "    tag: TEXT_MESSAGE_END\n", 1)
    assert (
        "spec/agui.yaml: definitions.Event.tags: EventType has the value 'TEXT_MESSAGE_START', "
        "but no member of Event has that tag: add the object whose `tag` is 'TEXT_MESSAGE_START' "
        "to Event's members, or remove the value from EventType"
    ) in problems(text)


def test_a_member_without_a_tag_is_told_which_union_needs_which_tag() -> None:
    text = SPEC_TEXT.replace("    tag: text\n", "", 1)
    found = problems(text)
    assert found == [
        "spec/agui.yaml: definitions.TextPart: is a member of ContentPart but declares no `tag`: "
        "ContentPart tells its members apart by 'type', so TextPart needs `tag: <its type>` and a "
        "field type with `tag: true`"
    ]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "      messageId:\n",
            "      message_id:\n",
            "definitions.TextMessageStartEvent.fields.message_id: 'message_id' is not a valid "
            "name: a wire name is camelCase: a lower-case letter, then letters and digits only "
            "(no '_', '-' or space; each new word starts with a capital, as in toolCallId), and a "
            "trailing '?' if the member is optional; write it 'messageId'",
        ),
        (
            "      name?:\n",
            "      Name?:\n",
            "'Name?' is not a valid name: a wire name is camelCase",
        ),
        (
            "  TextMessageStartEvent:\n",
            "  Text_message_startEvent:\n",
            "definitions.Text_message_startEvent: 'Text_message_startEvent' is not a valid name: a "
            "definition name is PascalCase: a capital letter, then letters and digits only (no "
            "'_', '-' or space), as in ToolCallStartEvent; write it 'TextMessageStartEvent'",
        ),
    ],
)
def test_a_badly_cased_name_is_explained_in_words(old: str, new: str, message: str) -> None:
    found = problems(SPEC_TEXT.replace(old, new, 1))
    assert any(message in p for p in found), found
    assert not any("does not match" in p or "^[" in p for p in found), found


def test_a_forks_messages_name_its_own_spec_and_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "fork" / "agui.yaml"
    spec.parent.mkdir()
    spec.write_text(SPEC_TEXT.replace("    tag: text\n", "", 1), "utf-8")
    (spec.parent / "proto-ledger.txt").write_text("Broken = line = 1\n", "utf-8")
    assert main(["--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{spec}: line" not in err  # the spec is read first: its own problem, by its path
    assert err.startswith(f"{spec}: definitions.TextPart: is a member of ContentPart"), err
    assert "spec/agui.yaml" not in err
    spec.write_text(SPEC_TEXT, "utf-8")
    assert main(["--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"{spec.parent / 'proto-ledger.txt'}: line 1: not 'Message.field = N TYPE'"
    )
    assert "spec/" not in err.replace(str(spec.parent), "")
    spec.write_text(SPEC_TEXT + "spec: again\n", "utf-8")
    assert main(["--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(f"{spec}: line ")
