"""`python -m codegen` writes generated/; `python -m codegen --check` only compares.

Both regenerate everything in memory first. --check exits 1 and names every stale, missing or
orphan file; writing touches only files whose bytes changed and removes orphans.

`--spec PATH/agui.yaml --out DIR` generates from another spec into another folder (a fork of the
protocol, or a test of an extension): the tree goes to DIR, and the number ledger is
PATH/proto-ledger.txt, read and rewritten beside that spec. The defaults are spec/agui.yaml and
generated/. A DIR other than generated/ must be empty, absent, or hold a tree this command made:
writing removes every file of it no template produces.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen.load import ROOT, SPEC_PATH, SpecError, display, ledger_path, load_ledger, load_spec
from codegen.model import build
from codegen.render import HEADER, LEDGER, PACKAGE, render

GENERATED = ROOT / "generated"
MARKER = f"{PACKAGE}/__init__.py"
"""A folder holding this file, starting with the generated banner, is a generated tree."""


def generate_files(spec: Path = SPEC_PATH) -> dict[str, str]:
    """Path under the output folder -> the exact text it must have (LEDGER: the spec's ledger)."""
    return render(build(load_spec(spec)), load_ledger(ledger_path(spec)))


def target(path: str, out: Path = GENERATED, spec: Path = SPEC_PATH) -> Path:
    """Where a generated path is written: under `out`, the ledger beside `spec`."""
    return ledger_path(spec) if path == LEDGER else out / path


def existing_files(out: Path = GENERATED) -> set[str]:
    if not out.exists():
        return set()
    return {
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


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
    return not (marker.is_file() and marker.read_text("utf-8").startswith(HEADER))


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
    args = parser.parse_args(argv)
    spec: Path = args.spec
    out: Path = args.out
    if not args.check and foreign(out):
        print(
            f"python -m codegen: {display(out)} holds files but no generated tree "
            f"({MARKER} with the generated banner); refusing to write there, since writing "
            "removes every file no template produces",
            file=sys.stderr,
        )
        return 2
    try:
        files = generate_files(spec)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
