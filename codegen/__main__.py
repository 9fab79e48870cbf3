"""`python -m codegen` writes generated/; `python -m codegen --check` only compares.

Both regenerate everything in memory first. --check exits 1 and names every stale, missing or
orphan file; writing touches only files whose bytes changed and removes orphans.

`--spec PATH/agui.yaml --out DIR` generates from another spec into another folder (a fork of the
protocol, or a test of an extension): the tree goes to DIR, and the number ledger is
PATH/proto-ledger.txt, read and rewritten beside that spec. The defaults are spec/agui.yaml and
generated/. A DIR other than generated/ must be empty, absent, or hold a tree this command made:
writing removes every file of it no template produces.

Writing prints what changed in the ledger, one line per slot (added, reserved, released, moved,
retyped, revived, reused, shipped), and says when a change breaks the wire for deployed peers; a
shipped slot the spec gives another type stops generation and --check alike (exit 2), naming the
slot and both types, and nothing is written. A
slot added since the last release is marked (unshipped): `--release-unshipped` gives all such
numbers back before generating (the fields still in the spec are numbered afresh), `--ship` marks
every slot shipped, so that its number is permanent (see docs/binary-transport.md).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import sys
from pathlib import Path

from codegen import ledger
from codegen.load import ROOT, SPEC_PATH, SpecError, display, ledger_path, load_ledger, load_spec
from codegen.model import build
from codegen.proto import FILES as PROTO_FILES, PACKAGE as PROTO_PACKAGE
from codegen.render import GENERATED_BY, LEDGER, PACKAGE, render

GENERATED = ROOT / "generated"
MARKER = f"{PACKAGE}/__init__.py"
"""A folder holding this file, starting with the generated banner, is a generated tree."""


PROTOS = tuple(f"proto/{PROTO_PACKAGE}/{stem}.proto" for stem in PROTO_FILES)


def generate_files(spec: Path = SPEC_PATH, ledger_text: str | None = None) -> dict[str, str]:
    """Path under the output folder -> the exact text it must have (LEDGER: the spec's ledger).
    `ledger_text` is the ledger to number from (default: the one beside the spec)."""
    if ledger_text is None:
        ledger_text = load_ledger(ledger_path(spec))
    return render(build(load_spec(spec), display(spec)), ledger_text)


def ledger_changes(
    before: str, files: dict[str, str], out: Path = GENERATED
) -> list[ledger.Change]:
    """What this generation changes in the ledger: against the .proto files the previous one
    left in `out` (or, without them, against the ledger read)."""
    previous = [(out / path).read_text("utf-8") for path in PROTOS if (out / path).is_file()]
    return ledger.report(before, files[LEDGER], previous, [files[p] for p in PROTOS])


def print_changes(changes: list[ledger.Change], where: str, *, check: bool = False) -> None:
    """The ledger's changes, one line each, and a plain warning when one breaks the wire."""
    stream = sys.stderr if check else sys.stdout
    verb = "would change" if check else "changed"
    print(f"{where} {verb}: {len(changes)} slot{'s' if len(changes) != 1 else ''}", file=stream)
    for change in changes:
        print(f"  {change}", file=stream)
    breaking = [c for c in changes if c.breaks]
    if breaking:
        print(
            f"python -m codegen: {len(breaking)} change{'s' if len(breaking) != 1 else ''} of "
            f"{where} {'break' if len(breaking) != 1 else 'breaks'} the wire for deployed peers: "
            + ", ".join(c.slot for c in breaking)
            + " (see docs/binary-transport.md#the-field-number-ledger)",
            file=sys.stderr,
        )


def target(path: str, out: Path = GENERATED, spec: Path = SPEC_PATH) -> Path:
    """Where a generated path is written: under `out`, the ledger beside `spec`."""
    return ledger_path(spec) if path == LEDGER else out / path


def existing_files(out: Path = GENERATED) -> set[str]:
    if not out.exists():
        return set()
    return {
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not compiled(p)
    }


def compiled(path: Path) -> bool:
    """An extension module the build compiled in place (an editable install's): no output."""
    return path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def differences(files: dict[str, str], out: Path = GENERATED, spec: Path = SPEC_PATH) -> list[str]:
    problems = []
    for path, text in sorted(files.items()):
        file = target(path, out, spec)
        if not file.exists():
            problems.append(f"{display(file)} is missing")
        elif file.read_bytes() != text.encode("utf-8"):
            problems.append(f"{display(file)} is stale")
    for path in sorted(existing_files(out) - set(files)):
        problems.append(f"{display(out / path)} is an orphan (no template produces it)")
    return problems


def foreign(out: Path) -> bool:
    """Whether `out` holds files but no generated tree: writing there would remove them."""
    if out.resolve() == GENERATED.resolve() or not out.exists() or not any(out.iterdir()):
        return False
    marker = out / MARKER
    return not (marker.is_file() and marker.read_text("utf-8").startswith(GENERATED_BY))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codegen",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--check", action="store_true", help="compare only; exit 1 if anything differs"
    )
    parser.add_argument(
        "--spec",
        type=Path,
        default=SPEC_PATH,
        metavar="PATH",
        help="the spec to generate from (default: spec/agui.yaml); its proto-ledger.txt is beside it",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=GENERATED,
        metavar="DIR",
        help="the folder to generate into (default: generated/)",
    )
    parser.add_argument(
        "--release-unshipped",
        action="store_true",
        help="give back the numbers of the ledger's (unshipped) slots before generating: for a "
        "field renamed or removed before any release",
    )
    parser.add_argument(
        "--ship",
        action="store_true",
        help="mark every slot of the ledger shipped (at a release): their numbers become permanent",
    )
    args = parser.parse_args(argv)
    spec: Path = args.spec
    out: Path = args.out
    if args.check and (args.release_unshipped or args.ship):
        print(
            "python -m codegen: --check only compares; --release-unshipped and --ship change "
            "the ledger",
            file=sys.stderr,
        )
        return 2
    if not args.check and foreign(out):
        print(
            f"python -m codegen: {display(out)} holds files but no generated tree "
            f"({MARKER} with the generated banner); refusing to write there, since writing "
            "removes every file no template produces",
            file=sys.stderr,
        )
        return 2
    ledger_file = ledger_path(spec)
    try:
        before = load_ledger(ledger_file)
        numbered = before
        if args.release_unshipped:
            numbered = ledger.release_unshipped(before, display(ledger_file))
        if args.ship:
            numbered = ledger.ship(numbered, display(ledger_file))
        files = generate_files(spec, numbered)
        changes = ledger_changes(before, files, out)
    except SpecError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except RuntimeError as exc:  # a tool of the pipeline is missing, the wrong version, or failed
        print(f"python -m codegen: {exc}", file=sys.stderr)
        return 2
    problems = differences(files, out, spec)
    if args.check:
        for problem in problems:
            print(f"{problem} — run: nox -s generate", file=sys.stderr)
        if changes:
            print_changes(changes, display(ledger_file), check=True)
        return 1 if problems else 0
    for path, text in files.items():
        file = target(path, out, spec)
        if not file.exists() or file.read_bytes() != text.encode("utf-8"):
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(text.encode("utf-8"))
            print(f"wrote {display(file)}")
    for path in sorted(existing_files(out) - set(files)):
        (out / path).unlink()
        print(f"removed {display(out / path)}")
    if changes:
        print_changes(changes, display(ledger_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
