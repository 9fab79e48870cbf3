"""The protobuf number ledger explains itself: `python -m codegen` prints what a generation changed
in it, one line per slot, and says plainly when a change breaks the wire for deployed peers; a
number that never shipped can be given back (`--release-unshipped`), and `--ship` makes numbers
permanent. The ledger's lines keep their place when a message leaves the spec.

The unit tests lay a spec out in memory (no generation); the last ones run `python -m codegen`
on a copy of spec/ in a temporary folder, as a fork maintainer would."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codegen.__main__ import PROTOS, main
from codegen.ledger import (
    Change,
    Entry,
    declared,
    numbers,
    parse,
    release_unshipped,
    report,
    ship,
    space_of,
)
from codegen.load import SPEC_PATH, SpecError, load_ledger, read_spec
from codegen.model import build
from codegen.proto import build_proto
from codegen.render import LEDGER, environment, render_proto

SPEC_TEXT = SPEC_PATH.read_text("utf-8")
LEDGER_TEXT = load_ledger()
NAME = '      name?:\n        type: str\n        doc: "A display name for the author."\n'
ROLE_END = '        default: assistant\n        doc: "Who is speaking; absent means assistant."\n'


def layout(spec_text: str, ledger_text: str) -> tuple[str, list[str]]:
    """The ledger and the .proto files one generation writes for a spec."""
    files = render_proto(environment(), build_proto(build(read_spec(spec_text)), ledger_text))
    return files[LEDGER], [files[p] for p in PROTOS]


def with_field(spec_text: str, wire: str, type_: str = "str") -> str:
    """The spec with an optional member `wire` added to TEXT_MESSAGE_START."""
    assert ROLE_END in spec_text
    return spec_text.replace(
        ROLE_END, ROLE_END + f'      {wire}?:\n        type: {type_}\n        doc: "Case."\n', 1
    )


def step(
    spec_text: str, ledger_text: str, protos: list[str]
) -> tuple[str, list[str], list[Change]]:
    """One generation after another: its ledger, its .proto files and what it changed."""
    ledger, new = layout(spec_text, ledger_text)
    return ledger, new, report(ledger_text, ledger, protos, new)


BASE_LEDGER, BASE_PROTOS = layout(SPEC_TEXT, LEDGER_TEXT)
ENTRIES = parse(LEDGER_TEXT)
START = build(read_spec(SPEC_TEXT)).extension_numbers


def last(message: str) -> str:
    """The official slot of a message with the highest number (a fork's extensions, numbered
    from extensionNumbers up, left out)."""
    return max(
        (s for s in ENTRIES if s.startswith(f"{message}.") and ENTRIES[s].number < START),
        key=lambda s: ENTRIES[s].number,
    )


def line(slot: str) -> str:
    """The slot's line as the ledger has it (`TextMessageStartEvent.name = 4 string`)."""
    return ENTRIES[slot].line(slot)


NEXT = ENTRIES[last("TextMessageStartEvent")].number + 1
"""The number the next official field of TEXT_MESSAGE_START takes."""


def lines(changes: list[Change]) -> list[str]:
    return [str(c) for c in changes]


def test_the_proto_files_declare_exactly_the_ledgers_slots() -> None:
    """What the reports compare: the slots read back from the .proto files are the ledger's."""
    found = declared(BASE_PROTOS)
    assert {s: d.number for s, d in found.items()} == numbers(LEDGER_TEXT)
    assert not any(d.reserved for d in found.values())


def test_regenerating_changes_nothing() -> None:
    assert BASE_LEDGER == LEDGER_TEXT
    assert report(LEDGER_TEXT, BASE_LEDGER, BASE_PROTOS, BASE_PROTOS) == []


def test_a_new_field_is_added_unshipped_in_one_line() -> None:
    ledger, _, changes = step(with_field(SPEC_TEXT, "mood"), LEDGER_TEXT, BASE_PROTOS)
    slot = f"TextMessageStartEvent.mood = {NEXT}"
    assert lines(changes) == [f"added     {slot} (string) (unshipped)"]
    assert f"{slot} string (unshipped)\n" in ledger
    assert not changes[0].breaks


def test_a_removed_field_is_said_to_be_reserved() -> None:
    assert NAME in SPEC_TEXT
    ledger, protos, changes = step(SPEC_TEXT.replace(NAME, "", 1), LEDGER_TEXT, BASE_PROTOS)
    number = numbers(LEDGER_TEXT)["TextMessageStartEvent.name"]
    assert lines(changes) == [
        f"reserved  TextMessageStartEvent.name = {number}: its field left the spec; the number "
        "stays taken"
    ]
    assert ledger == LEDGER_TEXT  # the line stays
    assert declared(protos)["TextMessageStartEvent.name"].reserved


def test_an_unshipped_rename_is_undone_by_releasing() -> None:
    """A field renamed before any release: the old name's number is reserved, and
    --release-unshipped gives it back to the new name. (From a released ledger: in a fork that
    has not shipped its own additions yet, releasing renumbers those too.)"""
    ledger, protos, _ = step(with_field(SPEC_TEXT, "tone"), ship(LEDGER_TEXT), BASE_PROTOS)
    renamed = with_field(SPEC_TEXT, "mood")
    ledger2, protos2, changes = step(renamed, ledger, protos)
    assert lines(changes) == [
        f"added     TextMessageStartEvent.mood = {NEXT + 1} (string) (unshipped)",
        f"reserved  TextMessageStartEvent.tone = {NEXT}: its field left the spec; the number "
        "stays taken; it never shipped: --release-unshipped frees it",
    ]
    released, protos3 = layout(renamed, release_unshipped(ledger2))
    changes = report(ledger2, released, protos2, protos3)
    assert lines(changes) == [
        f"moved     TextMessageStartEvent.mood: {NEXT + 1} -> {NEXT} (unshipped)",
        f"released  TextMessageStartEvent.tone = {NEXT}: never shipped; the number is free again",
    ]
    assert not any(c.breaks for c in changes)
    assert "tone " not in released
    assert f"TextMessageStartEvent.mood = {NEXT} string (unshipped)\n" in released


def test_release_never_touches_a_shipped_number() -> None:
    shipped = ship(LEDGER_TEXT)
    assert release_unshipped(shipped) == shipped
    removed = SPEC_TEXT.replace(NAME, "", 1)
    ledger, _ = layout(removed, release_unshipped(shipped))
    assert line("TextMessageStartEvent.name") in ledger


def test_shipping_makes_numbers_permanent() -> None:
    ledger, protos, _ = step(with_field(SPEC_TEXT, "mood"), LEDGER_TEXT, BASE_PROTOS)
    shipped, protos2 = layout(with_field(SPEC_TEXT, "mood"), ship(ledger))
    assert " (unshipped)\n" not in shipped
    assert f"shipped   TextMessageStartEvent.mood = {NEXT}: now permanent" in lines(
        report(ledger, shipped, protos, protos2)
    )
    assert release_unshipped(shipped) == shipped


SUBAGENT = last("TextMessageEndEvent")  # the last official number of its message
SUBAGENT_WIRE = "subagentRunId"


def _breaking_case(what: str) -> tuple[str, list[str], str, list[str]]:
    """(ledger and .proto files before, ledger and .proto files after) of one breaking change."""
    if what == "revived":  # a field removed, generated, then back
        before = layout(SPEC_TEXT.replace(NAME, "", 1), LEDGER_TEXT)
        return (*before, *layout(SPEC_TEXT, before[0]))
    if what == "retyped":  # a field that never shipped: the ledger follows the spec
        ledger, protos = layout(with_field(SPEC_TEXT, "mood"), LEDGER_TEXT)
        return (ledger, protos, *layout(with_field(SPEC_TEXT, "mood", "int"), ledger))
    if what == "moved":  # a shipped line deleted by hand: the field takes the next number
        edited = LEDGER_TEXT.replace(line("TextMessageStartEvent.message_id"), "", 1)
        return (edited, BASE_PROTOS, *layout(SPEC_TEXT, edited))
    # the last shipped line deleted by hand, and the field renamed: its number goes to the new name
    assert SUBAGENT == "TextMessageEndEvent.subagent_run_id"
    edited = LEDGER_TEXT.replace(line(SUBAGENT), "", 1)
    renamed = SPEC_TEXT.replace(f"      {SUBAGENT_WIRE}?:", "      subagentRun?:", 1)
    return (edited, BASE_PROTOS, *layout(renamed, edited))


@pytest.mark.parametrize(
    ("what", "says"),
    [
        ("revived", "peers built while TextMessageStartEvent.name was reserved never expect it"),
        ("moved", "deployed peers send and read TextMessageStartEvent.message_id as 2"),
        ("reused", f"TextMessageEndEvent.subagent_run_id was sent as {ENTRIES[SUBAGENT].number}"),
        ("released", f"TextMessageEndEvent.subagent_run_id shipped as {ENTRIES[SUBAGENT].number}"),
    ],
)
def test_a_change_that_breaks_the_wire_says_so(what: str, says: str) -> None:
    ledger_before, protos_before, ledger_after, protos_after = _breaking_case(what)
    changes = report(ledger_before, ledger_after, protos_before, protos_after)
    breaking = [c for c in changes if c.breaks and c.what == what]
    assert any(says in c.breaks for c in breaking), lines(changes)
    assert "BREAKS THE WIRE for deployed peers: " + breaking[0].breaks in str(breaking[0])


def test_an_unshipped_slot_changes_type_freely() -> None:
    ledger_before, protos_before, ledger_after, protos_after = _breaking_case("retyped")
    assert f"TextMessageStartEvent.mood = {NEXT} string (unshipped)\n" in ledger_before
    assert f"TextMessageStartEvent.mood = {NEXT} int64 (unshipped)\n" in ledger_after
    changes = report(ledger_before, ledger_after, protos_before, protos_after)
    assert lines(changes) == [f"retyped   TextMessageStartEvent.mood = {NEXT}: string -> int64"]
    assert not changes[0].breaks


# ── the ledger records each slot's type ─────────────────────────────────────────────────────────
def test_every_field_and_arm_has_its_proto_type_in_the_ledger() -> None:
    """A field's line holds its type as the .proto file declares it; an enum value's none."""
    found = declared(BASE_PROTOS)
    assert {s: e.type for s, e in ENTRIES.items()} == {s: d.type for s, d in found.items()}
    assert line("TextMessageStartEvent.name") == "TextMessageStartEvent.name = 4 string\n"
    assert line("EventType.RAW") == "EventType.RAW = 9\n"
    assert line("Event.event.raw") == "Event.event.raw = 10 RawEvent\n"
    assert line("MessagesSnapshotEvent.messages").endswith(" repeated Message\n")


def test_a_ledger_without_types_is_migrated_in_place() -> None:
    """A ledger written before the types (a fork's) takes them at the next generation, numbers
    unchanged; an enum value given a type is refused."""
    untyped = "".join(
        f"{s} = {e.number}{' (unshipped)' if e.unshipped else ''}\n" for s, e in ENTRIES.items()
    )
    assert all(e.type == "" for e in parse(untyped).values())
    assert layout(SPEC_TEXT, untyped)[0] == LEDGER_TEXT
    with pytest.raises(SpecError, match=r"EventType.RAW is an enum value, which has no type"):
        parse(LEDGER_TEXT.replace("EventType.RAW = 9\n", "EventType.RAW = 9 string\n", 1))


RETYPE = (
    "      inputTokens?:\n        type: int\n        min: 0\n        max: 9007199254740991\n",
    "      inputTokens?:\n        type: str\n",
)
"""TokenUsage.inputTokens (the ledger's Usage.input_tokens, an int64) made a string."""


def test_a_shipped_slot_retyped_fails_generation_naming_it() -> None:
    """Usage.input_tokens shipped as an int64: the spec making it a string is refused, with the
    slot, both types and the member; the same edit before shipping is not, nor an acknowledged
    break (the new type written in the ledger's line)."""
    assert RETYPE[0] in SPEC_TEXT
    retyped = SPEC_TEXT.replace(*RETYPE, 1)
    slot = "Usage.input_tokens"
    assert line(slot) == f"{slot} = 3 int64\n"
    with pytest.raises(SpecError) as caught:
        layout(retyped, LEDGER_TEXT)
    assert caught.value.problems == [
        f"spec/proto-ledger.txt: {slot} = 3: shipped as int64, but spec/agui.yaml: "
        "definitions.TokenUsage.fields.inputTokens now makes it string: deployed peers would "
        "misread field 3 (a shipped slot keeps its type). Give the member a new name instead (a "
        "new number; the old one stays reserved); to break the wire on purpose, write 'string' "
        f"in the ledger's line of {slot} by hand"
    ]
    unshipped = LEDGER_TEXT.replace(line(slot), f"{slot} = 3 int64 (unshipped)\n")
    assert f"{slot} = 3 string (unshipped)\n" in layout(retyped, unshipped)[0]
    acknowledged = LEDGER_TEXT.replace(line(slot), f"{slot} = 3 string\n")
    assert f"{slot} = 3 string\n" in layout(retyped, acknowledged)[0]


def test_a_reserved_slot_revived_with_another_type_fails() -> None:
    removed = layout(SPEC_TEXT.replace(NAME, "", 1), LEDGER_TEXT)[0]
    assert line("TextMessageStartEvent.name") in removed  # the reserved line keeps its type
    with pytest.raises(
        SpecError,
        match=r"TextMessageStartEvent.name = 4: shipped as string, but .* now makes it int64",
    ):
        layout(SPEC_TEXT.replace(NAME, NAME.replace("type: str", "type: int"), 1), removed)


def test_a_message_that_leaves_the_spec_keeps_its_lines_in_place() -> None:
    """Removing a union member (an event) reserves its slots where they are, not at the end."""
    gone = SPEC_TEXT.replace("      - RawEvent\n", "", 1).replace(
        '      RAW: "Forwards an event from the underlying provider without translating it."\n',
        "",
        1,
    )
    start = gone.index("  RawEvent:\n")
    end = gone.index("\n  ", gone.index("\n  ", start) + 1)  # the next definition
    while gone[end + 3] == " ":
        end = gone.index("\n  ", end + 1)
    gone = gone[:start] + gone[end + 1 :]
    assert "RawEvent" not in gone
    ledger, _, changes = step(gone, LEDGER_TEXT, BASE_PROTOS)
    assert ledger == LEDGER_TEXT
    assert {c.what for c in changes} == {"reserved"}
    assert {c.slot for c in changes} >= {"Event.event.raw", "EventType.RAW"}


def test_a_broken_ledger_line_is_named_with_the_forks_path(tmp_path: Path) -> None:
    with pytest.raises(
        SpecError, match=r"fork/proto-ledger.txt: line \d+: not 'Message.field = N TYPE'"
    ):
        parse(
            LEDGER_TEXT.replace("EventType.RAW = 9", "EventType.RAW: 9", 1), "fork/proto-ledger.txt"
        )
    spec = tmp_path / "agui.yaml"
    spec.write_text(SPEC_TEXT, "utf-8")
    (tmp_path / "proto-ledger.txt").write_text(LEDGER_TEXT + "Broken.line = x\n", "utf-8")
    with pytest.raises(SpecError, match=f"{tmp_path}/proto-ledger.txt: line"):
        build_proto(
            build(read_spec(SPEC_TEXT), str(spec)), (tmp_path / "proto-ledger.txt").read_text()
        )


# ── `python -m codegen` on a fork ───────────────────────────────────────────────────────────────
@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """A copy of spec/ whose ledger is released (every slot shipped)."""
    (tmp_path / "spec").mkdir()
    shutil.copyfile(SPEC_PATH, tmp_path / "spec" / "agui.yaml")
    (tmp_path / "spec" / "proto-ledger.txt").write_text(ship(LEDGER_TEXT), "utf-8")
    return tmp_path


def generate(fork: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    spec = fork / "spec" / "agui.yaml"
    code = main(["--spec", str(spec), "--out", str(fork / "generated"), *flags])
    out, err = capsys.readouterr()
    shown = "\n".join(line for line in out.splitlines() if not line.startswith("wrote "))
    return code, shown, err


def test_the_command_prints_the_ledgers_changes_and_undoes_an_unshipped_number(
    fork: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, ledger = fork / "spec" / "agui.yaml", fork / "spec" / "proto-ledger.txt"
    assert generate(fork, capsys) == (0, "", "")  # a fresh tree: nothing changed in the ledger
    spec.write_text(with_field(SPEC_TEXT, "tone"), "utf-8")
    code, out, _ = generate(fork, capsys)
    assert code == 0
    assert out == (
        f"{ledger} changed: 1 slot\n"
        f"  added     TextMessageStartEvent.tone = {NEXT} (string) (unshipped)"
    )
    spec.write_text(with_field(SPEC_TEXT, "mood"), "utf-8")
    _, out, _ = generate(fork, capsys)
    assert f"reserved  TextMessageStartEvent.tone = {NEXT}" in out
    assert "--release-unshipped frees it" in out
    _, out, err = generate(fork, capsys, "--release-unshipped")
    assert f"moved     TextMessageStartEvent.mood: {NEXT + 1} -> {NEXT} (unshipped)" in out
    assert f"released  TextMessageStartEvent.tone = {NEXT}" in out and err == ""
    assert generate(fork, capsys, "--check")[0] == 0
    code, out, _ = generate(fork, capsys, "--ship")
    assert out.endswith(f"shipped   TextMessageStartEvent.mood = {NEXT}: now permanent")
    assert " (unshipped)\n" not in ledger.read_text("utf-8")


def test_the_command_says_plainly_when_the_wire_breaks(
    fork: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = fork / "spec" / "agui.yaml"
    assert generate(fork, capsys)[0] == 0
    spec.write_text(SPEC_TEXT.replace(NAME, "", 1), "utf-8")
    generate(fork, capsys)
    spec.write_text(SPEC_TEXT, "utf-8")
    code, out, err = generate(fork, capsys)
    assert code == 0  # written: the spec's author decides, having been told
    assert "revived   TextMessageStartEvent.name = 4 (string)" in out
    assert "BREAKS THE WIRE for deployed peers" in out
    assert err.startswith(
        f"python -m codegen: 1 change of {fork / 'spec' / 'proto-ledger.txt'} breaks the wire "
        "for deployed peers: TextMessageStartEvent.name"
    )


def test_check_shows_what_the_ledger_would_gain(
    fork: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generate(fork, capsys)
    (fork / "spec" / "agui.yaml").write_text(with_field(SPEC_TEXT, "mood"), "utf-8")
    code, _, err = generate(fork, capsys, "--check")
    assert code == 1
    assert f"added     TextMessageStartEvent.mood = {NEXT} (string) (unshipped)" in err
    assert generate(fork, capsys, "--check", "--ship")[0] == 2


def test_the_command_and_check_exit_non_zero_on_a_shipped_slot_retyped(
    fork: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the issue saw: after --ship, CitationSource.score retyped from a number to a string.
    Generation and --check both refuse it, naming the slot and both types, and write nothing."""
    spec, ledger = fork / "spec" / "agui.yaml", fork / "spec" / "proto-ledger.txt"
    assert generate(fork, capsys)[0] == 0
    before = ledger.read_bytes()
    spec.write_text(SPEC_TEXT.replace(*RETYPE, 1), "utf-8")
    for flags in ((), ("--check",)):
        code, out, err = generate(fork, capsys, *flags)
        assert code == 2, (flags, out, err)
        assert f"{ledger}: Usage.input_tokens = 3: shipped as int64, but {spec}: " in err
        assert "now makes it string" in err
        assert out == ""
    assert ledger.read_bytes() == before


# ── extensions take their own numbers ───────────────────────────────────────────────────────────
EXTENSION = {
    "definitions": {
        "EventType": {"values": {"BEACON_SENT": "Sends a beacon."}},
        "TextMessageStartEvent": {
            "fields": {"dialect?": {"type": "str", "extension": True, "doc": "A dialect."}}
        },
        "ContentPart": {"members": ["BeaconPart"]},
        "Event": {"members": ["BeaconSentEvent"]},
        "BeaconPart": {
            "kind": "object",
            "tag": "beacon",
            "extension": True,
            "doc": "A beacon.",
            "fields": {
                "type": {"tag": True, "doc": "Always beacon."},
                "strength": {"type": "number", "doc": "How strong."},
            },
        },
        "BeaconSentEvent": {
            "kind": "object",
            "tag": "BEACON_SENT",
            "with": ["BaseEvent", "Attributable"],
            "extension": True,
            "doc": "Says a beacon was sent.",
            "fields": {"beacon": {"type": "BeaconPart", "doc": "The beacon."}},
        },
    }
}
"""A fork's additions, as tests/fork/overlay.yaml makes them, under names of their own (so that
these tests also run on that fork, whose spec has the overlay's)."""


def extended(spec_text: str = SPEC_TEXT) -> str:
    from tests.fork.run import apply

    return apply(spec_text, EXTENSION)


def added(spec_text: str, ledger_text: str = LEDGER_TEXT) -> dict[str, Entry]:
    """The ledger slots a generation of the spec adds to `ledger_text`."""
    before = parse(ledger_text)
    after = parse(layout(spec_text, ledger_text)[0])
    return {s: e for s, e in after.items() if s not in before}


def next_extension(space: str) -> int:
    """The number the next extension of an official message or enum takes: one past the
    extensions it has (a fork's), or extensionNumbers."""
    taken = [e.number for s, e in ENTRIES.items() if space_of(s) == space and e.number >= START]
    return max(taken, default=START - 1) + 1


def test_extensions_in_official_messages_take_numbers_from_1000() -> None:
    """An extension field, arm or enum value in an official message or enum is numbered from
    extensionNumbers up; the fields of an extension's own message from 1."""
    new = {s: e.number for s, e in added(extended()).items()}
    assert START == 1000  # the documented default (spec/README.md, Extensions)
    assert {s: n for s, n in new.items() if n >= START} == {
        s: next_extension(space_of(s))
        for s in (
            "EventType.BEACON_SENT",
            "Event.event.beacon_sent",
            "InputContent.part.beacon",
            "TextMessageStartEvent.dialect",
        )
    }
    assert new["BeaconPart.strength"] == 1 and new["BeaconSentEvent.base_event"] == 1


def test_upstream_growing_keeps_a_fork_byte_compatible() -> None:
    """The fork shipped its extensions; upstream then adds a field to the same event: the fork
    numbers it as upstream does, not after its own extensions. A second extension field takes
    the next extension number."""
    fork_ledger = ship(layout(extended(), LEDGER_TEXT)[0])
    upstream = added(with_field(SPEC_TEXT, "mood"))
    in_fork = added(extended(with_field(SPEC_TEXT, "mood")), fork_ledger)
    assert (
        in_fork
        == upstream
        == {"TextMessageStartEvent.mood": Entry(NEXT, unshipped=True, type="string")}
    )
    second = extended(with_field(SPEC_TEXT, "accent")).replace(
        '      accent?:\n        type: str\n        doc: "Case."\n',
        '      accent?:\n        type: str\n        extension: true\n        doc: "Case."\n',
        1,
    )
    assert added(second, fork_ledger) == {
        "TextMessageStartEvent.accent": Entry(
            next_extension("TextMessageStartEvent") + 1, unshipped=True, type="string"
        )
    }


def with_top(spec_text: str, key: str, value: int) -> str:
    return spec_text.replace("definitions:\n", f"{key}: {value}\ndefinitions:\n", 1)


def test_the_extension_numbers_are_configurable() -> None:
    new = added(with_top(extended(), "extensionNumbers", 5000))
    assert new["TextMessageStartEvent.dialect"].number == 5000
    assert new["EventType.BEACON_SENT"].number == 5000


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (19500, "extensionNumbers: 19500 is in 19000-19999, the field numbers protobuf keeps"),
        (0, "extensionNumbers: 0 is less than the minimum of 1"),
        (2**29, "extensionNumbers: 536870912 is greater than the maximum of 536870911"),
    ],
)
def test_unusable_extension_numbers_are_refused(value: int, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        build(read_spec(with_top(SPEC_TEXT, "extensionNumbers", value)))


def test_an_official_field_that_reaches_the_extension_numbers_is_refused() -> None:
    spec = with_top(with_field(SPEC_TEXT, "mood"), "extensionNumbers", NEXT)
    with pytest.raises(
        SpecError,
        match=rf"TextMessageStartEvent.mood: TextMessageStartEvent has no official number left "
        rf"below the extension numbers \({NEXT}, extensionNumbers in spec/agui.yaml\)",
    ):
        layout(spec, LEDGER_TEXT)
