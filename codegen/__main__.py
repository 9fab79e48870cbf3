"""`python -m codegen` writes generated/; `python -m codegen --check` only compares.

Both regenerate everything in memory first. --check exits 1 and names every stale, missing or
orphan file; writing touches only files whose bytes changed and removes orphans.
"""

from __future__ import annotations

import argparse
import os
import sys

from codegen.load import ROOT, SpecError, load_spec
from codegen.model import build
from codegen.render import render

GENERATED = ROOT / "generated"


def generate_files() -> dict[str, str]:
    """Path under generated/ -> the exact text it must have."""
    return render(build(load_spec()))


def existing_files() -> set[str]:
    if not GENERATED.exists():
        return set()
    return {
        p.relative_to(GENERATED).as_posix()
        for p in GENERATED.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def shown(path: str) -> str:
    """A generated path as the messages name it, relative to the repository root."""
    return os.path.normpath(f"generated/{path}").replace(os.sep, "/")


def differences(files: dict[str, str]) -> list[str]:
    problems = []
    for path, text in sorted(files.items()):
        target = GENERATED / path
        if not target.exists():
            problems.append(f"{shown(path)} is missing")
        elif target.read_bytes() != text.encode("utf-8"):
            problems.append(f"{shown(path)} is stale")
    for path in sorted(existing_files() - set(files)):
        problems.append(f"generated/{path} is an orphan (no template produces it)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="compare only; exit 1 if anything differs"
    )
    args = parser.parse_args(argv)
    try:
        files = generate_files()
    except SpecError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except RuntimeError as exc:  # a tool of the pipeline is missing, the wrong version, or failed
        print(f"python -m codegen: {exc}", file=sys.stderr)
        return 2
    problems = differences(files)
    if args.check:
        for problem in problems:
            print(f"{problem} — run: nox -s generate", file=sys.stderr)
        return 1 if problems else 0
    for path, text in files.items():
        target = GENERATED / path
        if not target.exists() or target.read_bytes() != text.encode("utf-8"):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
            print(f"wrote {shown(path)}")
    for path in sorted(existing_files() - set(files)):
        (GENERATED / path).unlink()
        print(f"removed generated/{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
