"""The noxfile's two test commands and what the README and .ci/run say of them.

* `nox -s tests` runs the freshness check, ruff, mypy and pytest and queues nothing;
  `nox -s tests -- PATH...` runs pytest on exactly those paths and nothing else.
* `nox -s ci` queues every session the whole chain had when `tests` ran it, in the same order,
  each by a name nox knows (a parametrized session by its full name).
* .ci/run runs `nox -s ci`; the README names it and `nox -s tests`.
* CONTRIBUTING.md's links and the test paths of its `nox -s tests -- PATH...` lines exist.
* Each session's description (the first line of its docstring, what `nox -l` shows) is a whole
  sentence.

nox is not installed in the test environment, so the noxfile is executed with a stand-in `nox`
module whose decorators only record the sessions, and each session function is called with a
session that records what it is asked to run and queue.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

WHOLE_CHAIN = [
    "interop",
    "integrations(framework='adk')",
    "integrations(framework='langgraph')",
    "integrations(framework='agno')",
    "integrations(framework='crewai')",
    "integrations(framework='llama_index')",
    "integrations(framework='microsoft_agent_framework')",
    "integrations(framework='pydantic_ai')",
    "integrations(framework='strands')",
    "docs",
    "fork",
    "busy",
    "workflows",
    "wheel",
    "redis_versions(redis='5.0.2')",
    "redis_versions(redis='latest')",
]
"""What `nox -s tests` queued, in order, before `ci` took the whole chain over (with node)."""

CHECKS = [
    ("python", "-m", "codegen", "--check"),
    ("ruff", "check", "."),
    ("ruff", "format", "--check", "."),
    ("mypy",),
]


class Recorder:
    """A nox session that records what it runs and queues instead of doing it."""

    def __init__(self, posargs: list[str]) -> None:
        self.posargs = posargs
        self.ran: list[tuple[str, ...]] = []
        self.notified: list[str] = []

    def run(self, *args: str, **kwargs: Any) -> None:
        self.ran.append(args)

    def notify(self, target: str, posargs: list[str] | None = None) -> None:
        self.notified.append(target)

    def install(self, *args: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass

    def error(self, message: str) -> None:
        raise AssertionError(f"session.error: {message}")


def load_noxfile() -> tuple[types.ModuleType, dict[str, Any]]:
    """The noxfile executed against a stand-in nox; its sessions by name, as `nox -s` takes them."""
    sessions: dict[str, Any] = {}

    def session(**_: Any) -> Any:
        def register(func: Any) -> Any:
            if hasattr(func, "parametrized"):
                arg, values = func.parametrized
                for value in values:
                    sessions[f"{func.__name__}({arg}={value!r})"] = func
            else:
                sessions[func.__name__] = func
            return func

        return register

    def parametrize(arg: str, values: list[str]) -> Any:
        def mark(func: Any) -> Any:
            func.parametrized = (arg, values)
            return func

        return mark

    stand_in = types.ModuleType("nox")
    stand_in.session = session  # type: ignore[attr-defined]
    stand_in.parametrize = parametrize  # type: ignore[attr-defined]
    stand_in.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    stand_in.Session = object  # type: ignore[attr-defined]
    module = types.ModuleType("noxfile_under_test")
    saved = sys.modules.get("nox")
    sys.modules["nox"] = stand_in
    try:
        source = (ROOT / "noxfile.py").read_text("utf-8")
        exec(compile(source, str(ROOT / "noxfile.py"), "exec"), module.__dict__)
    finally:
        if saved is None:
            del sys.modules["nox"]
        else:
            sys.modules["nox"] = saved
    return module, sessions


@pytest.fixture
def noxfile(monkeypatch: pytest.MonkeyPatch) -> tuple[types.ModuleType, dict[str, Any]]:
    """The noxfile on a machine with node, its npm installs left out (they write .crosscheck/)."""
    module, sessions = load_noxfile()
    monkeypatch.setattr(module, "shutil", types.SimpleNamespace(which=lambda name: f"/bin/{name}"))
    monkeypatch.setattr(module, "_npm_ci", lambda *args: None)
    monkeypatch.delenv("AGUI_REQUIRE_INTEROP", raising=False)
    return module, sessions


def test_tests_runs_the_checks_and_pytest_and_queues_nothing(
    noxfile: tuple[types.ModuleType, dict[str, Any]],
) -> None:
    _, sessions = noxfile
    session = Recorder([])
    sessions["tests"](session)
    assert session.ran == [*CHECKS, ("pytest",)]
    assert session.notified == []


def test_tests_with_paths_runs_pytest_on_exactly_those(
    noxfile: tuple[types.ModuleType, dict[str, Any]],
) -> None:
    _, sessions = noxfile
    session = Recorder(["tests/test_codec.py", "-x"])
    sessions["tests"](session)
    assert session.ran == [("pytest", "tests/test_codec.py", "-x")]
    assert session.notified == []


def test_ci_runs_the_checks_and_queues_the_whole_chain_in_order(
    noxfile: tuple[types.ModuleType, dict[str, Any]],
) -> None:
    _, sessions = noxfile
    session = Recorder([])
    sessions["ci"](session)
    assert session.ran == [*CHECKS, ("pytest",)]
    assert session.notified == WHOLE_CHAIN
    unknown = [name for name in session.notified if name not in sessions]
    assert not unknown, f"ci queues sessions nox does not know by these names: {unknown}"


def test_ci_without_node_fails_when_interop_is_required(
    noxfile: tuple[types.ModuleType, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    module, sessions = noxfile
    monkeypatch.setattr(module, "shutil", types.SimpleNamespace(which=lambda name: None))
    monkeypatch.setenv("AGUI_REQUIRE_INTEROP", "1")
    session = Recorder([])
    with pytest.raises(AssertionError, match="AGUI_REQUIRE_INTEROP=1"):
        sessions["ci"](session)
    assert session.ran == []
    monkeypatch.delenv("AGUI_REQUIRE_INTEROP")
    session = Recorder([])
    sessions["ci"](session)
    assert session.notified == WHOLE_CHAIN[9:]


def test_every_description_is_a_whole_sentence() -> None:
    _, sessions = load_noxfile()
    problems = []
    for name, func in sessions.items():
        # nox shows the first line only: it must end the sentence, and the next line not go on
        lines = [*(func.__doc__ or "").strip().splitlines(), ""]
        if not re.fullmatch(r"[A-Z].*[.]", lines[0]) or lines[1].strip():
            problems.append(f"{name}: {lines[0]!r}")
    assert not problems, f"`nox -l` descriptions that are not whole sentences: {problems}"


def test_ci_run_runs_the_whole_chain_the_readme_names() -> None:
    commands = [
        line
        for line in (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
        if "nox -s" in line and not line.lstrip().startswith("#")
    ]
    assert commands == ["python3 -m nox -s ci"]
    readme = (ROOT / "README.md").read_text("utf-8")
    # the quick start's two commands (the demo, the tests); the chain named right after them
    assert "python3 -m pip install --quiet nox && python3 -m nox -s tests" in readme
    assert "`python3 -m nox -s ci`, what CI\n(`.ci/run`) runs" in readme


def test_contributing_names_files_that_exist() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text("utf-8")
    links = [t for t in re.findall(r"\]\(([^)#]+)", text) if not re.match(r"[a-z]+:", t)]
    paths = [
        word
        for line in re.findall(r"^nox -s tests -R -- (.*)$", text, flags=re.MULTILINE)
        for word in line.split("#")[0].split()
    ]
    assert links and paths
    missing = [p for p in links + paths if not (ROOT / p).exists()]
    assert not missing, f"CONTRIBUTING.md names files that do not exist: {missing}"
