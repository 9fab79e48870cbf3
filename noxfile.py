"""Sessions: generate, tests, crosscheck, bench. Each one builds its own environment."""

from __future__ import annotations

import nox

nox.needs_version = ">=2024.4.15"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

PYTHON = "3.11"


@nox.session(python=PYTHON)
def generate(session: nox.Session) -> None:
    """Regenerate generated/ from spec/agui.yaml, then verify every golden fixture round-trips."""
    session.install("-e", ".[codegen]", "pytest")
    session.run("python", "-m", "codegen")
    session.run("pytest", "-q", "tests/test_fixtures.py")


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The end-to-end demo: the demo agent on a loopback port, the client talking to it."""
    session.install("-e", ".[server]")
    session.run("agui", "demo")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """pytest, ruff, mypy --strict and the generated-code freshness check."""
    session.install("-e", ".[dev]")
    session.run("python", "-m", "codegen", "--check")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def crosscheck(session: nox.Session) -> None:
    """Re-serialise every valid fixture with @ag-ui/core 1.0.0 and ag-ui-protocol 1.0.0; list differences."""
    session.install("-e", ".", "ag-ui-protocol==1.0.0")
    import shutil
    from pathlib import Path

    work = Path(".crosscheck")
    work.mkdir(exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(Path("tests/crosscheck") / name, work / name)
    session.run(
        "npm", "ci", "--prefix", str(work), "--no-audit", "--no-fund", external=True, silent=True
    )
    session.run("python", "tests/crosscheck/run.py")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Decode/encode/SSE benchmarks side by side with ag-ui-protocol 1.0.0; prints ratios."""
    session.install("-e", ".", "ag-ui-protocol==1.0.0")
    session.run("python", "benchmarks/run.py", *session.posargs)
