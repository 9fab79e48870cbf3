"""Spec edits held out from the generator's own fixtures, generated as a fork and run through every
binding, and the mistakes a maintainer makes writing them.

tests/codegen/held_out.yaml adds to a copy of spec/agui.yaml a new event with a list of objects and
a bounded number (SCORES_REPORTED), a new content part with an enum field (CodePart), and an
optional field with a default on an existing event (RUN_ERROR.retryable); this module also renames
a field on the wire (STEP_STARTED's `stepName` becomes `name`). What tests/test_codegen_every_form.py
and tests/test_codegen_grammar.py already prove (every form of the grammar, each refusal of the
loader in memory) is not repeated; this adds, on one fork generated once by `python -m codegen
--spec --out`:

* mypy --strict on the generated packages;
* tests/codegen/held_out_checks.py, in a process with the fork's packages first: drawn documents
  through every binding, the new part inside messages, the problem the codec names for each kind
  of wrong value, the repository's fixtures of the extended event (still valid, the default never
  filled in) and of the renamed field (refused; renamed, accepted), and a binary document of a
  peer built before the rename;
* the ledger: exactly the slots the edits add, the renamed field's old number reserved (in the
  ledger and the .proto file, never reused) and its new name numbered afresh, as printed;
* each mistake below, made in the same edits, stops `python -m codegen` with exit 2 and one
  line per problem naming the fork's spec and the YAML path, with no traceback and nothing
  written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from codegen.ledger import parse, space_of
from codegen.load import SPEC_PATH, read_spec
from codegen.model import build

from .conftest import ROOT
from .fork.run import apply
from .test_codegen_every_form import run

OVERLAY = ROOT / "tests" / "codegen" / "held_out.yaml"
CHECKS = "tests/codegen/held_out_checks.py"
SPEC_TEXT = SPEC_PATH.read_text("utf-8")
LEDGER_TEXT = (ROOT / "spec" / "proto-ledger.txt").read_text("utf-8")


def rename(text: str, old: str = "stepName", new: str = "name") -> str:
    """STEP_STARTED's member `old` renamed `new` on the wire, in the YAML text."""
    start = text.index("  StepStartedEvent:\n")
    at = text.index(f"      {old}:\n", start)
    assert "\n  StepFinishedEvent:\n" in text[at:] and at < text.index("  StepFinishedEvent:\n")
    return text[:at] + f"      {new}:\n" + text[at + len(f"      {old}:\n") :]


def held_out(overlay: dict[str, Any] | None = None, renamed: str = "name") -> str:
    """The fork's spec text: the overlay applied as tests/fork/run.py applies one, then the
    rename."""
    if overlay is None:
        overlay = yaml.safe_load(OVERLAY.read_text("utf-8"))
    return rename(apply(SPEC_TEXT, overlay), new=renamed)


class Fork(NamedTuple):
    base: Path
    printed: str
    """What `python -m codegen` printed: the ledger's changes."""


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Fork:
    base = tmp_path_factory.mktemp("held_out")
    (base / "spec").mkdir()
    (base / "spec" / "agui.yaml").write_text(held_out(), "utf-8")
    (base / "spec" / "proto-ledger.txt").write_text(LEDGER_TEXT, "utf-8")
    command = ["-m", "codegen", "--spec", str(base / "spec" / "agui.yaml")]
    made = run(*command, "--out", str(base / "generated"))
    assert made.returncode == 0, made.stderr
    fresh = run(*command, "--out", str(base / "generated"), "--check")
    assert fresh.returncode == 0, fresh.stderr
    return Fork(base, made.stdout)


def test_the_fork_type_checks_strictly(fork: Fork) -> None:
    generated = fork.base / "generated"
    proc = run(
        "-m",
        "mypy",
        "--strict",
        "--python-version",
        "3.11",
        "--cache-dir",
        str(fork.base / ".mypy_cache"),
        str(generated / "agui_generated"),
        str(generated / "agui_pydantic"),
        env={**os.environ, "MYPYPATH": str(generated)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_binding_takes_the_edits(fork: Fork) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fork.base / "generated"), str(ROOT)]),
        "AGUI_EVERY_FORM_SPEC": str(fork.base / "spec" / "agui.yaml"),
        "AGUI_EVERY_FORM_OUT": str(fork.base / "generated"),
    }
    proc = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", CHECKS, env=env)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr
    assert " passed" in proc.stdout and " skipped" not in proc.stdout, proc.stdout


def test_the_ledger_reserves_the_renamed_slot_and_numbers_the_rest(fork: Fork) -> None:
    before = parse(LEDGER_TEXT)
    after = parse((fork.base / "spec" / "proto-ledger.txt").read_text("utf-8"))
    start = build(read_spec(SPEC_TEXT)).extension_numbers

    def following(space: str) -> int:
        """The next official number of a message or enum (below a fork's extension range)."""
        return 1 + max(
            e.number for s, e in before.items() if space_of(s) == space and e.number < start
        )

    added = {s: (e.number, e.type) for s, e in after.items() if s not in before}
    assert added == {
        "EventType.SCORES_REPORTED": (following("EventType"), ""),
        "Event.event.scores_reported": (following("Event"), "ScoresReportedEvent"),
        "InputContent.part.code": (following("InputContent"), "CodePart"),
        "RunErrorEvent.retryable": (following("RunErrorEvent"), "bool"),
        "RunErrorEvent.occurred_at": (following("RunErrorEvent") + 1, "string"),
        "RunErrorEvent.reason": (following("RunErrorEvent") + 2, "string"),
        "StepStartedEvent.name": (following("StepStartedEvent"), "string"),
        "CodePart.language": (1, "string"),  # an enum travels as its string
        "CodePart.text": (2, "string"),
        "Score.criterion": (1, "string"),
        "Score.value": (2, "double"),
        "Score.note": (3, "string"),
        "Score.source": (4, "string"),
        "ScoresReportedEvent.base_event": (1, "BaseEvent"),
        "ScoresReportedEvent.subagent_run_id": (2, "string"),
        "ScoresReportedEvent.message_id": (3, "string"),
        "ScoresReportedEvent.scores": (4, "repeated Score"),
        "ScoresReportedEvent.overall": (5, "double"),
    }
    assert all(after[s].unshipped for s in added)
    # the old name keeps its line, its number and its state; the new name never takes it
    old = before["StepStartedEvent.step_name"]
    assert after["StepStartedEvent.step_name"] == old
    assert {s: after[s] for s in before} == before
    lines = [line for line in fork.printed.splitlines() if not line.startswith("wrote ")]
    reserved = f"reserved  StepStartedEvent.step_name = {old.number}: its field left the spec"
    assert [line.strip() for line in lines if "reserved" in line] == [
        reserved
        + "; the number stays taken"
        + ("" if not old.unshipped else "; it never shipped: --release-unshipped frees it")
    ]
    assert lines[0].endswith(f"proto-ledger.txt changed: {len(added) + 1} slots")
    proto = (fork.base / "generated" / "proto" / "ag_ui" / "events.proto").read_text("utf-8")
    message = proto[proto.index("message StepStartedEvent {") :]
    message = message[: message.index("\n}\n")]
    assert f"  reserved {old.number};" in message and '  reserved "step_name";' in message
    assert f"string name = {after['StepStartedEvent.name'].number};" in message


# ── the mistakes ────────────────────────────────────────────────────────────────────────────────


def edited(*path: str, value: Any = None, drop: bool = False) -> Callable[[dict[str, Any]], None]:
    """An edit of the overlay: the member at `path` set to `value`, or dropped."""

    def edit(overlay: dict[str, Any]) -> None:
        *parents, last = path
        node = overlay["definitions"]
        for key in parents:
            node = node[key]
        if drop:
            del node[last]
        else:
            node[last] = value

    return edit


D = "definitions"
MISTAKES: dict[str, tuple[Callable[[dict[str, Any]], None] | None, str, list[str]]] = {
    "the new event's tag is no EventType value": (
        edited("EventType", drop=True),
        "name",
        [
            f"{D}.Event.tags: the member ScoresReportedEvent has the tag 'SCORES_REPORTED', which "
            "is no value of EventType: add 'SCORES_REPORTED' to EventType's values",
            f"{D}.ScoresReportedEvent.tag: 'SCORES_REPORTED' is not a value of EventType",
        ],
    ),
    "the new event left out of Event": (
        edited("Event", drop=True),
        "name",
        [
            f"{D}.Event.tags: EventType has the value 'SCORES_REPORTED', but no member of Event "
            "has that tag: add the object whose `tag` is 'SCORES_REPORTED' to Event's members, or "
            "remove the value from EventType"
        ],
    ),
    "a map for the list of objects": (
        edited("ScoresReportedEvent", "fields", "scores", "type", value="dict[str, Score]"),
        "name",
        [
            f"{D}.ScoresReportedEvent.fields.scores.type: 'dict[str, Score]' is not a type: "
            "list[T] takes one item type, and there are no maps: an object of any keys is "
            "`object`, one of known keys an object definition"
        ],
    ),
    "a bound written as a string": (
        edited("ScoresReportedEvent", "fields", "overall", "max", value="1"),
        "name",
        [f"{D}.ScoresReportedEvent.fields.overall.max: '1' is not of type 'number'"],
    ),
    "an enum value without its doc": (
        edited("CodeLanguage", "values", "shell", value=None),
        "name",
        [
            f"{D}.CodeLanguage.values.shell: the value has no documentation: write it "
            '`shell: "what it means"`'
        ],
    ),
    "the content part without its tag field": (
        edited("CodePart", "fields", "type", drop=True),
        "name",
        [f"{D}.CodePart.tag: a tag needs a field marked `tag: true`"],
    ),
    "the default's type in the wrong case": (
        edited("RunErrorEvent", "fields", "retryable?", "type", value="Bool"),
        "name",
        [
            f"{D}.RunErrorEvent.fields.retryable?.type: unknown type 'Bool' (did you mean "
            "`bool`? names are case-sensitive)"
        ],
    ),
    "the field renamed onto its mixin's": (
        None,
        "timestamp",
        [
            f"{D}.StepStartedEvent.fields: two fields are named 'timestamp', one from the mixin BaseEvent"
        ],
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_mistake_is_named_with_its_yaml_path_and_nothing_is_written(
    mistake: str, tmp_path: Path
) -> None:
    edit, renamed, expected = MISTAKES[mistake]
    overlay = yaml.safe_load(OVERLAY.read_text("utf-8"))
    if edit is not None:
        edit(overlay)
    spec = tmp_path / "agui.yaml"
    spec.write_text(held_out(overlay, renamed), "utf-8")
    shutil.copyfile(ROOT / "spec" / "proto-ledger.txt", tmp_path / "proto-ledger.txt")
    done = run("-m", "codegen", "--spec", str(spec), "--out", str(tmp_path / "out"))
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"{spec}: {line}" for line in expected]
    assert not (tmp_path / "out").exists()
    assert (tmp_path / "proto-ledger.txt").read_text("utf-8") == LEDGER_TEXT


def test_a_yaml_slip_is_named_by_line_and_column(tmp_path: Path) -> None:
    """A tab where the edit's indentation should be: the line and column, not a traceback."""
    text = held_out()
    at = text.index("      criterion:\n        type: str\n") + len("      criterion:\n")
    text = text[:at] + "\t" + text[at + 8 :]
    spec = tmp_path / "agui.yaml"
    spec.write_text(text, "utf-8")
    shutil.copyfile(ROOT / "spec" / "proto-ledger.txt", tmp_path / "proto-ledger.txt")
    done = run("-m", "codegen", "--spec", str(spec), "--out", str(tmp_path / "out"))
    line = text[:at].count("\n") + 1
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"{spec}: line {line}, column 1: not valid YAML: "), done.stderr
    assert "found character '\\t' that cannot start any token" in done.stderr
    assert not (tmp_path / "out").exists()
