"""`python -m codegen --spec PATH --out DIR`: where a fork's files go, and what the command refuses.
The full round trip (a fork generated, served and read) is tests/test_extension.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codegen.__main__ import GENERATED, differences, main, target
from codegen.load import SPEC_PATH, SpecError, ledger_path, load_ledger, load_spec
from codegen.render import LEDGER

from .conftest import ROOT


def test_the_defaults_are_the_repository_spec_ledger_and_generated_folder() -> None:
    assert SPEC_PATH == ROOT / "spec" / "agui.yaml"
    assert GENERATED == ROOT / "generated"
    assert target(LEDGER) == ROOT / "spec" / "proto-ledger.txt"
    assert target("agui_generated/models.py") == ROOT / "generated/agui_generated/models.py"


def test_a_fork_writes_its_tree_to_out_and_its_ledger_beside_its_spec(tmp_path: Path) -> None:
    spec, out = tmp_path / "fork" / "agui.yaml", tmp_path / "out"
    assert ledger_path(spec) == tmp_path / "fork" / "proto-ledger.txt"
    assert target(LEDGER, out, spec) == tmp_path / "fork" / "proto-ledger.txt"
    assert target("jsonschema/agui.schema.json", out, spec) == out / "jsonschema/agui.schema.json"
    missing = differences({LEDGER: "x\n", "agui_generated/models.py": ""}, out, spec)
    assert missing == [
        f"{tmp_path / 'fork' / 'proto-ledger.txt'} is missing",
        f"{out / 'agui_generated' / 'models.py'} is missing",
    ]


def test_a_missing_spec_or_ledger_is_named_by_its_path(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=re.escape(f"{tmp_path / 'agui.yaml'}: no such spec")):
        load_spec(tmp_path / "agui.yaml")
    with pytest.raises(SpecError, match="is missing; restore it"):
        load_ledger(ledger_path(tmp_path / "agui.yaml"))


def test_writing_into_a_folder_of_other_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["--out", str(tmp_path)]) == 2
    assert "refusing to write there" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
