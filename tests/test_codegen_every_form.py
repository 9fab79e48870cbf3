"""Every form of the type grammar, generated as a fork and run through every binding.

tests/codegen/every_form.yaml adds to a copy of spec/agui.yaml an enum, bounded and patterned
aliases, a json alias, list and `A | B` aliases, an object, a tagged object used both directly and
through a new union, and four events holding one member of every scalar, list and `A | B` form
(each allowed pair of JSON kinds), optional and required, with defaults and py renames; it also
extends TEXT_MESSAGE_START and the ContentPart union. `python -m codegen --spec --out` generates
the fork into a temporary folder, as a fork maintainer would; then

* the generated packages pass mypy --strict;
* tests/codegen/every_form_checks.py runs under pytest in a process whose PYTHONPATH puts the
  fork's packages first: valid documents drawn from the intermediate model round-trip through the
  attrs codec (byte for byte), the JSON Schema, pydantic and protobuf (the generated codec and the
  protobuf runtime, whose descriptors it compares with protoc's), and documents made invalid by
  one change are refused by the attrs codec, the JSON Schema and pydantic alike;
* tests/test_properties.py, run the same way on the fork's model, round-trips random instances of
  every form;
* the ledger beside the fork's spec numbers what the fork added, and only that.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.ledger import numbers, space_of

from .conftest import ROOT

OVERLAY = ROOT / "tests" / "codegen" / "every_form.yaml"
CHECKS = "tests/codegen/every_form_checks.py"
TIMEOUT = 600


def merge(spec: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """The fork's spec: the overlay's event types, extensions and definitions (see its header)."""
    spec = copy.deepcopy(spec)
    definitions = spec["definitions"]
    definitions["EventType"]["values"].update(overlay["eventTypes"])
    for name, more in overlay["extend"].items():
        if "fields" in more:
            definitions[name]["fields"].update(more["fields"])
        if "members" in more:
            definitions[name]["members"].extend(more["members"])
    merged: dict[str, Any] = {}
    for name, definition in definitions.items():
        if name == "Event":
            merged.update(copy.deepcopy(overlay["definitions"]))
        merged[name] = definition
    for name, definition in overlay["definitions"].items():
        if definition.get("tag") in overlay["eventTypes"]:
            merged["Event"]["members"].append(name)
    return {**spec, "definitions": merged}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the fork's spec/ (agui.yaml and its ledger) and the tree generated from it."""
    base = tmp_path_factory.mktemp("every_form")
    (base / "spec").mkdir()
    spec = yaml.safe_load((ROOT / "spec" / "agui.yaml").read_text("utf-8"))
    overlay = yaml.safe_load(OVERLAY.read_text("utf-8"))
    (base / "spec" / "agui.yaml").write_text(
        yaml.safe_dump(merge(spec, overlay), sort_keys=False, allow_unicode=True, width=100),
        "utf-8",
    )
    shutil.copyfile(ROOT / "spec" / "proto-ledger.txt", base / "spec" / "proto-ledger.txt")
    command = ["-m", "codegen", "--spec", str(base / "spec" / "agui.yaml")]
    made = run(*command, "--out", str(base / "generated"))
    assert made.returncode == 0, made.stderr
    fresh = run(*command, "--out", str(base / "generated"), "--check")
    assert fresh.returncode == 0, fresh.stderr
    return base


def test_the_fork_type_checks_strictly(fork: Path) -> None:
    generated = fork / "generated"
    proc = run(
        "-m",
        "mypy",
        "--strict",
        "--python-version",
        "3.11",
        "--cache-dir",
        str(fork / ".mypy_cache"),
        str(generated / "agui_generated"),
        str(generated / "agui_pydantic"),
        env={**os.environ, "MYPYPATH": str(generated)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_form_goes_through_every_binding(fork: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fork / "generated"), str(ROOT)]),
        "AGUI_EVERY_FORM_SPEC": str(fork / "spec" / "agui.yaml"),
        "AGUI_EVERY_FORM_OUT": str(fork / "generated"),
    }
    proc = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", CHECKS, env=env)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr
    assert " passed" in proc.stdout, proc.stdout  # not skipped as a whole (a missing env var)


def test_the_property_tests_cover_every_form(fork: Path) -> None:
    """tests/test_properties.py draws valid instances of every form (each string format, with a
    pattern, in lists and alternatives; defaults, deprecated members, ...) from the fork's model,
    and they survive the wire."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fork / "generated"), str(ROOT)]),
        "AGUI_EVERY_FORM_SPEC": str(fork / "spec" / "agui.yaml"),
    }
    argv = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    proc = run(*argv, "tests/test_properties.py", env=env)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr
    assert (
        "EveryScalarEvent"
        in run(*argv, "--collect-only", "tests/test_properties.py", env=env).stdout
    )


def test_the_ledger_numbers_what_the_fork_added(fork: Path) -> None:
    original = (ROOT / "spec" / "proto-ledger.txt").read_text("utf-8").splitlines()
    ledger = (fork / "spec" / "proto-ledger.txt").read_text("utf-8").splitlines()
    added = set(ledger) - set(original)
    assert set(original) <= set(ledger)
    # the next numbers free in each message or enum, counted from the spec's own ledger
    before = numbers("\n".join(original))

    def after(space: str) -> int:
        return max((n for s, n in before.items() if space_of(s) == space), default=0) + 1

    assert (
        {
            f"EventType.EVERY_SCALAR = {after('EventType')} (unshipped)",
            f"TextMessageStartEvent.language = {after('TextMessageStartEvent')} string (unshipped)",
            # a new member of an existing oneof union
            f"InputContent.part.location = {after('InputContent')} LocationPart (unshipped)",
            "Attachment.attachment.location = 1 LocationPart (unshipped)",  # a new union: a oneof of its own
            "StringList.value = 1 repeated string (unshipped)",  # list[list[str]]: a wrapper message per item
            "StringOrInt64.value = 1 string (unshipped)",
            "StringOrInt64.value_number = 2 int64 (unshipped)",
            # A | B: the string form under the member's name
            "EveryEitherEvent.str_or_int = 2 string (unshipped)",
            "EveryEitherEvent.str_or_int_number = 3 int64 (unshipped)",
        }
        <= added
    )
    assert not any(line.startswith(("Message.", "ToolCall.")) for line in added)
    proto = (fork / "generated" / "proto" / "ag_ui" / "events.proto").read_text("utf-8")
    assert "  repeated double numbers = 4;" in proto
    assert "  repeated StringList nested = 17;" in proto
    assert "  optional double ratio = 5;" in proto
