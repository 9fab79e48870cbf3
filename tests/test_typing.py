"""agui's types reach user code: the package ships its py.typed marker, so `mypy --strict` on an
application sees the models, the Event union HttpAgent yields and the conversation's messages
(not Any)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

USER_CODE = """
import agui


def read(data: bytes) -> agui.RunAgentInput:
    return agui.decode(data, agui.RunAgentInput)


async def watch(url: str, run_input: agui.RunAgentInput) -> list[agui.Event | agui.UnknownEvent]:
    seen: list[agui.Event | agui.UnknownEvent] = []
    async for event in agui.HttpAgent(url).run(run_input):
        reveal_type(event)
        seen.append(event)
    for synced in agui.HttpAgent(url).run_sync(run_input):
        reveal_type(synced)
    return seen


def history() -> tuple[agui.Message, ...]:
    return agui.Conversation().messages


reveal_type(agui.decode(b"{}", agui.RunAgentInput))
reveal_type(agui.Conversation().messages)
"""


def test_py_typed_ships_in_the_wheel() -> None:
    """agui/py.typed exists, is not ignored by git, and the wheel packages the agui directory
    whole (hatch takes every file of a listed package that git does not ignore)."""
    assert (ROOT / "agui" / "py.typed").is_file()
    ignored = subprocess.run(["git", "check-ignore", "-q", "agui/py.typed"], cwd=ROOT, check=False)
    assert ignored.returncode == 1, "git ignores agui/py.typed, so the wheel would not carry it"
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert "agui" in wheel["packages"]
    assert not wheel.get("exclude") and not wheel.get("only-include")


def test_mypy_strict_on_user_code_sees_agui_types(tmp_path: Path) -> None:
    """mypy --strict on a small application in a temporary directory: no error (no untyped
    import, no Any returned), and the revealed types are agui's own."""
    (tmp_path / "app.py").write_text(textwrap.dedent(USER_CODE))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / ".cache"),
            "app.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    revealed = [
        line.split('Revealed type is "', 1)[1].rstrip('"')
        for line in done.stdout.splitlines()
        if "Revealed type is" in line
    ]
    event, synced, decoded, messages = revealed
    for union in (event, synced):
        assert "Any" not in union
        assert "agui_generated.models.RunStartedEvent" in union
        assert "agui_generated._runtime.UnknownEvent" in union
    assert decoded == "agui_generated.models.RunAgentInput"
    assert messages.startswith("tuple[") and "agui_generated.models.UserMessage" in messages
    assert "Any" not in messages
