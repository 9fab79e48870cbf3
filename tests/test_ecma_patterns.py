"""Spec patterns are ECMA-262 (JSON Schema's dialect, with the u flag) in every binding.

A scratch spec (spec/agui.yaml and one more object, PatternProbe, whose members carry patterns
whose meaning differs between ECMA-262 and Python's `re`) is generated into a temporary folder as a
fork would be; each case below is a document with one member, and its verdict is JavaScript's
(`new RegExp(pattern, "u").test(value)`, as ajv runs `pattern`). The attrs codec (decoding a
document and encoding a model), the pydantic binding and the generated JSON Schema under
python-jsonschema give those verdicts (tests/codegen/ecma_verdicts.py, in a process whose
PYTHONPATH puts the scratch packages first); so do ajv 2020 on the generated schema, zod and a
plain RegExp in node, when .interop is installed (`nox -s interop`; the test fails there without
it, and is skipped elsewhere). @ag-ui/core has one of these definitions, JsonPointer (its
`JsonPointerSchema` in @ag-ui/core/schemas, a zod regex without the u flag, which reads this
pattern alike): its rows go through it; the others through `z.string().regex()` with the u flag.

Python's `re` would disagree on most of them: `\\d` takes "١٢", `\\p{L}` and a lookbehind of
several widths are errors, `.` takes "\\u2028", `\\s` takes "\\x85", `$` matches before a final
newline (test_python_re_would_disagree says which).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.regex import search

from .conftest import ROOT

PATTERNS = {
    "digits": r"^\d+$",
    "letters": r"^\p{L}+$",
    "ending": r"^[a-z]+(?<=ab|abc)$",  # a lookbehind with alternatives of two widths
    "dot": r"^a.b$",
    "space": r"^\s+$",
    "pointer": "^(/([^/~]|~[01])*)*$",  # the spec's JsonPointer (the member's type is the alias)
}
CASES: list[tuple[str, str, bool]] = [
    ("digits", "2026", True),
    ("digits", "١٢", False),  # Arabic-Indic digits: not \d in ECMA-262
    ("digits", "１２", False),  # fullwidth digits
    ("digits", "12\n", False),  # $ is the very end
    ("letters", "héllo", True),
    ("letters", "Ωμέγα", True),
    ("letters", "日本", True),
    ("letters", "h1", False),
    ("letters", "", False),
    ("ending", "xab", True),
    ("ending", "xabc", True),
    ("ending", "xa", False),
    ("ending", "abd", False),
    ("dot", "a-b", True),
    ("dot", "a\u2028b", False),  # a line terminator: not `.`
    ("dot", "a\rb", False),
    ("space", " \t\u00a0\ufeff\u3000", True),
    ("space", "\x85", False),  # NEL is whitespace to Python, not to ECMA-262
    ("space", "\x1c", False),
    ("pointer", "", True),
    ("pointer", "/messages/0/content~1x~0y", True),
    ("pointer", "/😀", True),  # one code point (u flag) or two code units: a match either way
    ("pointer", "a", False),
    ("pointer", "/a~2", False),
    ("pointer", "/a\n", True),  # [^/~] takes a newline
    ("pointer", "~", False),
]
INTEROP = ROOT / ".interop"
SCRIPT = ROOT / "tests" / "interop" / "ecma_patterns.mjs"
TIMEOUT = 600


def scratch_spec() -> dict[str, Any]:
    spec = yaml.safe_load((ROOT / "spec" / "agui.yaml").read_text("utf-8"))
    fields: dict[str, Any] = {
        f"{name}?": {"type": "str", "pattern": pattern, "doc": f"A string matching {pattern}."}
        for name, pattern in PATTERNS.items()
        if name != "pointer"
    }
    fields["pointer?"] = {"type": "JsonPointer", "doc": "The spec's own pattern alias."}
    spec["definitions"]["PatternProbe"] = {
        "kind": "object",
        "doc": "Members whose patterns read differently in ECMA-262 and in Python's re.",
        "fields": fields,
    }
    return spec


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("ecma")
    (base / "spec").mkdir()
    (base / "spec" / "agui.yaml").write_text(
        yaml.safe_dump(scratch_spec(), sort_keys=False, allow_unicode=True, width=100), "utf-8"
    )
    shutil.copyfile(ROOT / "spec" / "proto-ledger.txt", base / "spec" / "proto-ledger.txt")
    spec, out = str(base / "spec" / "agui.yaml"), str(base / "generated")
    made = subprocess.run(
        [sys.executable, "-m", "codegen", "--spec", spec, "--out", out],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return base


def test_the_cases_are_ecma_262s_verdicts() -> None:
    assert [search(PATTERNS[member], value) for member, value, _ in CASES] == [
        ok for _, _, ok in CASES
    ]


def test_python_re_would_disagree() -> None:
    """What the bindings did before: Python's `re` on the same cases (with `$` as `\\Z`)."""
    disagree = []
    for member, value, ok in CASES:
        try:
            verdict = re.search(PATTERNS[member].replace("$", r"\Z"), value) is not None
        except re.error:
            verdict = None  # the pattern is refused
        if verdict != ok:
            disagree.append((member, value))
    # every probe but the spec's own JsonPointer, which the dialects read alike (with `$` as `\Z`)
    assert {member for member, _ in disagree} == set(PATTERNS) - {"pointer"}


def test_every_python_binding_gives_ecma_262s_verdicts(scratch: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "codegen" / "ecma_verdicts.py")],
        input=json.dumps([[member, value] for member, value, _ in CASES]),
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(scratch / "generated"), str(ROOT)]),
        },
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    expected = [ok for _, _, ok in CASES]
    answer = json.loads(proc.stdout)
    assert answer["pydantic patterns"] == PATTERNS  # model_json_schema() shows them as written
    verdicts = answer["verdicts"]
    assert set(verdicts) == {"attrs decode", "attrs encode", "pydantic", "jsonschema"}
    for binding, got in verdicts.items():
        wrong = [CASES[i][:2] for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
        assert not wrong, f"{binding} disagrees with ECMA-262 on {wrong}"


def test_the_schemas_carry_the_patterns_as_written(scratch: Path) -> None:
    schema = json.loads((scratch / "generated" / "jsonschema" / "agui.schema.json").read_text())
    members = schema["$defs"]["PatternProbe"]["properties"]
    pointer = schema["$defs"]["JsonPointer"]["pattern"]
    written = {name: members[name].get("pattern", pointer) for name in PATTERNS}
    assert written == PATTERNS


def test_ajv_zod_and_javascript_give_the_same_verdicts(scratch: Path) -> None:
    node = shutil.which("node")
    installed = (INTEROP / "node_modules" / "ajv" / "package.json").is_file()
    if node is None or not installed:
        if os.environ.get("AGUI_INTEROP") == "1":
            pytest.fail("AGUI_INTEROP=1 needs node and .interop (tests/interop/package*.json)")
        pytest.skip("needs node and .interop (`nox -s interop` installs it)")
    work = INTEROP / "ecma_patterns.mjs"  # beside node_modules, so that its imports resolve
    shutil.copyfile(SCRIPT, work)
    proc = subprocess.run(
        [node, str(work), str(scratch / "generated" / "jsonschema" / "agui.schema.json")],
        input=json.dumps([[member, PATTERNS[member], value] for member, value, _ in CASES]),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    expected = [ok for _, _, ok in CASES]
    verdicts = json.loads(proc.stdout)
    assert set(verdicts) == {"ajv 2020", "zod", "RegExp u"}
    for engine, got in verdicts.items():
        wrong = [CASES[i][:2] for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
        assert not wrong, f"{engine} disagrees on {wrong}"
