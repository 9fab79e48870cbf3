"""The examples users copy pass `mypy --strict`, and the types say what the code does.

Every ```python block of README.md and docs/calling.md is type-checked, as a user's module would
be: a block that is a whole program as it is; a fragment (one whose prose says what its free
names stand for: `url`, `agent`, `conversation`, ...) as the body of an async function whose
parameters are those names, typed as PLACEHOLDERS says. One mypy run checks them all, with the
small programs below on what the API promises its callers: `Conversation.run` returns a
RunResult (not an Optional), enum fields take their wire strings (`ResumeEntry(status=
"resolved")`) and refuse other strings, a `stream()` update's event and result are typed.
"""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import ROOT

PAGES = ("README.md", "docs/calling.md")

PLACEHOLDERS: dict[str, str] = {
    "agent": "agui.HttpAgent",
    "conversation": "agui.Conversation",
    "run_id": "str",
    "run_input": "agui.RunAgentInput",
    "thread_id": "str",
    "url": "str",
}
"""The names a fragment uses without defining them (the reader's), and their types."""

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def free_names(code: str) -> set[str]:
    """The names `code` reads and never binds (nor are builtins)."""
    tree = compile(code, "<example>", "exec", flags=_FLAGS, dont_inherit=True)
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                bound.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        elif isinstance(node, ast.Lambda):
            bound.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound - set(dir(builtins))


def awaits_at_top_level(code: str) -> bool:
    try:
        compile(code, "<example>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError:
        return True
    return False


def as_module(code: str) -> str:
    """The block as a module mypy checks: itself, or (a fragment) the body of an async function
    taking its free names."""
    names = free_names(code)
    # a fragment's `agui` is the package, a standard module (contextlib, say) that module
    modules = sorted(n for n in names if n == "agui" or n in sys.stdlib_module_names)
    free = sorted(names - set(modules))
    unknown = [name for name in free if name not in PLACEHOLDERS]
    assert not unknown, (
        f"names the example uses without defining them: {unknown}; say what they stand for in "
        "PLACEHOLDERS"
    )
    if not names and not awaits_at_top_level(code):
        return code
    imports = "".join(f"import {module}\n" for module in sorted({"agui", *modules}))
    parameters = ", ".join(f"{name}: {PLACEHOLDERS[name]}" for name in free)
    body = textwrap.indent(code, "    ")
    return f"{imports}\n\nasync def example({parameters}) -> None:\n{body}"


def examples() -> dict[str, str]:
    """File name -> module text, one per ```python block of the pages."""
    found: dict[str, str] = {}
    for page in PAGES:
        stem = Path(page).stem.lower().replace("-", "_")
        for number, code in enumerate(_BLOCK.findall((ROOT / page).read_text("utf-8")), 1):
            found[f"{stem}_{number}.py"] = as_module(code)
    return found


API = {
    "api_run_result.py": """
import agui


async def outcome(agent: agui.HttpAgent) -> str:
    result = await agui.Conversation().run(agent, "Hi")
    reveal_type(result)
    return result.outcome


def outcome_sync(agent: agui.HttpAgent) -> str:
    return agui.Conversation().run_sync(agent, "Hi").outcome
""",
    "api_enum_strings.py": """
import agui

entry = agui.ResumeEntry(interrupt_id="i", status="resolved")
cancelled = agui.ResumeEntry(interrupt_id="i", status=agui.ResumeStatus.CANCELLED)
start = agui.TextMessageStartEvent(message_id="m", role="user")
unset = agui.TextMessageStartEvent(message_id="m")
value = agui.ReasoningEncryptedValueEvent(subtype="tool-call", entity_id="c", encrypted_value="v")
reveal_type(entry.status)
""",
    "api_enum_refused.py": """
import agui

agui.ResumeEntry(interrupt_id="i", status="resolve")
""",
    "api_stream.py": """
import agui
from agui.stream.conversation import RunUpdate


async def watch(agent: agui.HttpAgent) -> agui.RunResult | None:
    conversation = agui.Conversation()
    async with conversation.stream(agent, "Hi") as updates:
        async for update in updates:
            reveal_type(update)
            reveal_type(update.event)
            reveal_type(update.messages)
            if update.result is not None:
                return update.result
    return updates.result


async def shown(event: agui.Event) -> None:
    pass


conversation = agui.Conversation(on_event=shown)
""",
}
"""Small programs on what the API promises, each a file of the same mypy run."""


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One `mypy --strict` run over the examples and API: file name -> its lines of output."""
    folder = tmp_path_factory.mktemp("typed-examples")
    files = {**examples(), **{name: textwrap.dedent(text) for name, text in API.items()}}
    for name, text in files.items():
        (folder / name).write_text(text)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(folder / ".cache"),
            *sorted(files),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert not done.stderr.strip(), done.stderr
    output: dict[str, list[str]] = {name: [] for name in files}
    for line in done.stdout.splitlines():
        output.setdefault(line.split(":", 1)[0], []).append(line)
    return output


def errors(lines: list[str]) -> list[str]:
    return [line for line in lines if ": error:" in line]


def revealed(lines: list[str]) -> list[str]:
    return [
        line.split('Revealed type is "', 1)[1].rstrip('"') for line in lines if "Revealed" in line
    ]


def test_the_pages_have_python_examples() -> None:
    found = examples()
    assert sum(name.startswith("readme_") for name in found) >= 3
    assert sum(name.startswith("calling_") for name in found) >= 10


@pytest.mark.parametrize("name", sorted(examples()))
def test_each_example_passes_mypy_strict(mypy_output: dict[str, list[str]], name: str) -> None:
    assert not errors(mypy_output[name]), "\n".join(mypy_output[name])


def test_conversation_run_returns_a_run_result(mypy_output: dict[str, list[str]]) -> None:
    lines = mypy_output["api_run_result.py"]
    assert not errors(lines), "\n".join(lines)
    assert revealed(lines) == ["agui.stream.reducer.RunResult"]


def test_enum_fields_take_their_wire_strings(mypy_output: dict[str, list[str]]) -> None:
    lines = mypy_output["api_enum_strings.py"]
    assert not errors(lines), "\n".join(lines)
    assert revealed(lines) == ["agui_generated.enums.ResumeStatus"]
    [refused] = errors(mypy_output["api_enum_refused.py"])
    assert "Literal['resolved', 'cancelled'] | ResumeStatus" in refused


def test_a_stream_update_is_typed(mypy_output: dict[str, list[str]]) -> None:
    lines = mypy_output["api_stream.py"]
    assert not errors(lines), "\n".join(lines)
    update, event, messages = revealed(lines)
    assert update == "agui.stream.conversation.RunUpdate"
    assert event.endswith("| None") and "agui_generated.models.RunStartedEvent" in event
    assert messages.startswith("tuple[") and "agui_generated.models.UserMessage" in messages
