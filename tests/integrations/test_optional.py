"""ag-ui-protocol stays optional: agui.adapters imports without it, and building an adapter
without it says how to install it. These run everywhere (the tests session has no
ag-ui-protocol), in fresh interpreters that import this checkout's agui."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def python(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "generated"), *filter(None, [env.get("PYTHONPATH")])]
    )
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_adapters_import_no_other_sdk() -> None:
    done = python(
        """
        import sys
        import agui, agui.adapters
        from agui.adapters import AgUiProtocolAgent
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("ag_ui", "pydantic"))
        assert not loaded, loaded
        """
    )
    assert done.returncode == 0, done.stderr


def test_without_ag_ui_protocol_building_an_adapter_says_how_to_install_it() -> None:
    done = python(
        """
        import sys
        sys.modules["ag_ui"] = None  # as if it were not installed
        from agui.adapters import AgUiProtocolAgent

        class Agent:
            async def run(self, input):
                yield None

        try:
            AgUiProtocolAgent(Agent())
        except ModuleNotFoundError as exc:
            print(exc)
        else:
            raise SystemExit("no error")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "AgUiProtocolAgent needs the official SDK, ag-ui-protocol: pip install "
        "'agui-spec[ag-ui-protocol]' (or pip install ag-ui-protocol)"
    )


def test_ag_ui_protocol_is_an_extra_never_a_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("ag-ui")]
    assert project["optional-dependencies"]["ag-ui-protocol"] == ["ag-ui-protocol>=1.0"]
