"""The fork proof: a fork of the protocol goes through generation, the test suite and the
cross-SDK checks with no edit outside spec/ and its fixtures.

The fork (tests/fork/overlay.yaml) adds to existing definitions of every kind, an optional member
to an event, a content part and a message, a value to an enum, members to two unions, and adds
definitions of its own that use the rest of the grammar (every string format, on an alias and on a
field, with a pattern, in a list, as one alternative of `A | B`; an enum, a narrowed bounded alias,
an untagged object, nested lists, nullable json, a default, a py rename, a deprecated member); so a test that hard-codes what the protocol has (a count, a field
list, a slot number) fails here, and is to derive it from the spec, the ledger or the overlay.

`nox -s fork` runs this. It copies the repository's files (`git ls-files`, as they are in the
working tree) into a temporary folder, writes tests/fork/overlay.yaml into the copy's
spec/agui.yaml (as text, the way a maintainer edits it: every other line stays) and drops
tests/fork/fixtures/ into its tests/fixtures/, then, in the copy, with nothing else changed:

0. `order`: first, in a copy of its own without the fixtures, the order docs/extending.md walks
   in (generate, then write fixtures): after `python -m codegen` the fixture tests must fail as
   tests, naming the folder of each new definition, never as a collection error;
1. `python -m codegen` (it prints what the ledger gained), then `python -m codegen --check`, then
   the extension numbers: every slot the fork added to an official message or enum (one the
   repository's ledger has) must be numbered from the spec's extensionNumbers up (the overlay
   marks all it adds `extension: true`), so upstream's next numbers stay free;
2. mypy (strict, as configured in pyproject.toml) on agui/, codegen/ and the fork's generated code;
3. pytest, the whole suite but EXCLUDED below (each with its reason);
4. tests/crosscheck/run.py and tests/crosscheck/proto_parity.py, which must report the fork's
   additions as extensions (a verdict per peer, accept / strip / reject, never a failure) and
   compare the rest as for the repository, against its baseline (tests/crosscheck/baseline.json;
   without --strict, so that a stale entry warns); their npm packages are the repository's
   .crosscheck/, installed by the session.

It stops at the first step that fails and exits 1, keeping the copy to look at. `--keep` leaves the copy in
place (its path is printed); `--only STEP[,STEP]` runs some steps (order, generate, mypy,
pytest, crosscheck); arguments after `--` go to pytest.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OVERLAY = HERE / "overlay.yaml"
FIXTURES = HERE / "fixtures"
STEPS = ("order", "generate", "mypy", "pytest", "crosscheck")

EXCLUDED = {
    "tests/test_codegen_every_form.py": (
        "it generates its own fork from the spec plus tests/codegen/every_form.yaml, which adds "
        "the same TEXT_MESSAGE_START.language, LocationPart and LOCATION_SHARED as this fork: on "
        "the fork's spec they would be declared twice. It tests the generator, on the "
        "repository's spec, where `nox -s tests` runs it."
    ),
    "tests/test_codegen_grammar.py::test_the_example_of_docs_extending_loads": (
        "it appends the example of docs/extending.md (the same LocationPart) to the spec, which "
        "the fork already has; it checks the page, on the repository's spec."
    ),
    "tests/fork": "the harness itself (no tests in it)",
}
"""What the fork's pytest run leaves out, and why: each applies an overlay of its own that
collides with this one by design. Everything else runs."""


def merge(spec: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """The fork's spec as data: each overlay definition that exists gains its values, fields or
    members; a new one is added at the end."""
    definitions = spec["definitions"]
    for name, extra in overlay["definitions"].items():
        if name not in definitions:
            definitions[name] = extra
            continue
        target = definitions[name]
        for key, value in _additions(name, extra):
            if key == "members":
                target["members"] = [*target["members"], *value]
            else:
                target[key] = {**target[key], **value}
    return spec


def apply(text: str, overlay: dict[str, Any]) -> str:
    """The fork's spec as text, the way a maintainer edits it: the additions are written into the
    YAML where they belong (a field at the end of its object's fields, a value at the end of its
    enum's values, a member at the end of its union's members, a new definition at the end), and
    every other line stays as it was, comments and quoting included."""
    lines = text.splitlines(keepends=True)
    for name, extra in overlay["definitions"].items():
        start = next((i for i, line in enumerate(lines) if line == f"  {name}:\n"), None)
        if start is None:
            block = yaml.safe_dump({name: extra}, sort_keys=False, allow_unicode=True, width=96)
            lines += ["\n", *(f"  {line}\n" if line else "\n" for line in block.splitlines())]
            continue
        end = _block_end(lines, start, 2)
        for key, value in _additions(name, extra):
            at = next((i for i in range(start, end) if lines[i].startswith(f"    {key}:")), None)
            if at is None:
                raise SystemExit(f"{OVERLAY}: {name} has no `{key}` to add to")
            if key == "members" and lines[at].rstrip().endswith("]"):  # members: [A, B]
                head = lines[at].rstrip()[:-1]
                lines[at] = f"{head}, {', '.join(value)}]\n"
                continue
            stop = _block_end(lines, at, 4)
            if key == "members":
                added = [f"      - {member}\n" for member in value]
            else:
                dumped = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=90)
                added = [f"      {line}\n" for line in dumped.splitlines()]
            lines[stop:stop] = added
            end += len(added)
    return "".join(lines)


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """The index after the last line of the YAML block opened at `start` (indented `indent`),
    before the blank lines that end it."""
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _additions(name: str, extra: dict[str, Any]) -> list[tuple[str, Any]]:
    for key in extra:
        if key not in ("fields", "values", "members"):
            raise SystemExit(
                f"{OVERLAY}: {name}.{key}: an overlay only adds fields, values or members to an "
                "existing definition"
            )
    return list(extra.items())


def files() -> list[str]:
    """The repository's files: the tracked ones (`git add` a new file to have it copied), as
    they are in the working tree."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


def make_fork(base: Path, fixtures: bool = True) -> None:
    for path in files():
        target = base / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, target)
    spec_file = base / "spec" / "agui.yaml"
    overlay = yaml.safe_load(OVERLAY.read_text("utf-8"))
    text = apply(spec_file.read_text("utf-8"), overlay)
    if yaml.safe_load(text) != merge(yaml.safe_load(spec_file.read_text("utf-8")), overlay):
        raise SystemExit(f"{OVERLAY}: applied as text, it reads differently than as data")
    spec_file.write_text(text, "utf-8")
    # a repository of its own, so that what asks git (which files it ignores) still can
    subprocess.run(["git", "init", "-q", str(base)], check=True)
    for fixture in sorted(FIXTURES.rglob("*.json")) if fixtures else ():
        target = base / "tests" / "fixtures" / fixture.relative_to(FIXTURES)
        if target.exists():
            raise SystemExit(f"{fixture}: the repository already has {target.relative_to(base)}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(fixture, target)
    # the cross-SDK peers: the repository's npm packages (nox -s fork installs them)
    node_modules = ROOT / ".crosscheck" / "node_modules"
    if node_modules.is_dir():
        (base / ".crosscheck").mkdir()
        (base / ".crosscheck" / "node_modules").symlink_to(node_modules)


class StepFailed(Exception):
    pass


FIXTURE_TESTS = [
    "tests/test_fixtures.py",
    "tests/test_jsonschema.py",
    "tests/test_pydantic_binding.py",
]
"""What `nox -s generate` runs after generating: the tests that must say which fixtures a fork
still lacks."""


def check_order(python: str) -> None:
    """docs/extending.md in its own order: the spec is extended and generated before any fixture
    exists. The fixture tests must then fail as tests (no collection error), naming each folder the
    fork's new definitions' fixtures go into."""
    base = Path(tempfile.mkdtemp(prefix="agui-fork-order-"))
    try:
        make_fork(base, fixtures=False)
        run("order", [python, "-m", "codegen"], base)
        argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FIXTURE_TESTS]
        print(f"\nfork: order: {' '.join(argv)} (before the fixtures: must fail, naming them)")
        done = subprocess.run(argv, cwd=base, env=_env(base), capture_output=True, text=True)
        # the fork's new definitions (an existing one has the repository's fixtures already)
        new = {p.relative_to(FIXTURES).parts[0] for p in FIXTURES.rglob("*.json")}
        new -= {p.name for p in (ROOT / "tests" / "fixtures").iterdir()}
        folders = sorted(f"tests/fixtures/{name}/valid" for name in new)
        unnamed = [f for f in folders if f not in done.stdout]
        if done.returncode != 1 or "error" in done.stdout.splitlines()[-1] or unnamed:
            print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
            raise StepFailed(
                f"fork: order: exit {done.returncode}; folders not named: {unnamed or 'none'}"
            )
        print(f"fork: order: failed as it should, naming {', '.join(folders)}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def build_extension(base: Path) -> None:
    """The fork's compiled constructor, built in place as an editable install's build hook does:
    its pytest imports the fork's generated package (PYTHONPATH), which must use it as the
    repository's does."""
    from codegen.build_hook import compile_extension

    source = base / "generated" / "agui_generated" / "_construct.c"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    why = compile_extension(source, source.with_name(f"_construct{suffix}"))
    print(f"fork: the compiled constructor {'was not built: ' + why if why else 'built'}")


def check_extension_numbers(base: Path) -> None:
    """The fork's additions to official messages and enums are in the extension range."""
    sys.path.insert(0, str(ROOT))
    from codegen.ledger import parse, space_of
    from codegen.model import EXTENSION_NUMBERS

    spec = yaml.safe_load((base / "spec" / "agui.yaml").read_text("utf-8"))
    start = int(spec.get("extensionNumbers", EXTENSION_NUMBERS))
    official = parse((ROOT / "spec" / "proto-ledger.txt").read_text("utf-8"))
    fork = parse((base / "spec" / "proto-ledger.txt").read_text("utf-8"))
    spaces = {space_of(slot) for slot in official}
    added = {s: e.number for s, e in fork.items() if s not in official and space_of(s) in spaces}
    shown = ", ".join(f"{s} = {n}" for s, n in added.items())
    print(f"fork: generate: extension numbers (from {start}) in official messages: {shown}")
    below = [s for s, n in added.items() if n < start]
    if not added or below:
        raise StepFailed(
            f"fork: generate: extension slots numbered below {start}: {below or 'none added'}"
        )


def _env(base: Path) -> dict[str, str]:
    return {
        **os.environ,
        # the fork's packages, ahead of the repository's (the environment installs agui editable)
        "PYTHONPATH": os.pathsep.join([str(base), str(base / "generated")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def run(step: str, argv: list[str], base: Path) -> None:
    env = _env(base)
    print(f"\nfork: {step}: {' '.join(argv)}", flush=True)
    started = time.monotonic()
    code = subprocess.run(argv, cwd=base, env=env, check=False).returncode
    print(f"fork: {step}: exit {code} in {time.monotonic() - started:.0f} s", flush=True)
    if code != 0:
        raise StepFailed(f"fork: {step} failed (exit {code}); the fork is kept in {base}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the fork's folder in place")
    parser.add_argument("--only", default=",".join(STEPS), help="the steps to run, comma-separated")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra arguments for pytest")
    args = parser.parse_args()
    steps = args.only.split(",")
    unknown = set(steps) - set(STEPS)
    if unknown:
        parser.error(f"unknown steps {sorted(unknown)}; choose among {', '.join(STEPS)}")
    base = Path(tempfile.mkdtemp(prefix="agui-fork-"))
    python = sys.executable
    keep = args.keep
    try:
        if "order" in steps:
            check_order(python)
        make_fork(base)
        print(f"fork: {base} (the repository, with {OVERLAY.relative_to(ROOT)} and its fixtures)")
        if "generate" in steps:
            run("generate", [python, "-m", "codegen"], base)
            run("generate", [python, "-m", "codegen", "--check"], base)
            check_extension_numbers(base)
            build_extension(base)
        if "mypy" in steps:
            run("mypy", [python, "-m", "mypy", "--cache-dir", str(base / ".mypy_cache")], base)
        if "pytest" in steps:
            for what, why in EXCLUDED.items():
                print(f"fork: pytest leaves out {what}: {why}")
            deselect = [
                arg
                for what in EXCLUDED
                for arg in (("--deselect", what) if "::" in what else ("--ignore", what))
            ]
            run(
                "pytest",
                [
                    python,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    *deselect,
                    *args.pytest_args,
                ],
                base,
            )
        if "crosscheck" in steps:
            run("crosscheck", [python, "tests/crosscheck/run.py"], base)
            run("crosscheck", [python, "tests/crosscheck/proto_parity.py"], base)
    except StepFailed as failed:
        keep = True  # to look at what failed
        print(f"\n{failed}", file=sys.stderr)
        return 1
    finally:
        if keep:
            print(f"fork: kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print("\nfork: every step passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
