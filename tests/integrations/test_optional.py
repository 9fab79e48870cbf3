"""ag-ui-protocol and agent-framework-ag-ui stay optional: agui.adapters imports without them,
and building an adapter without its package says how to install it. These run everywhere (the
tests session has neither), in fresh interpreters that import this checkout's agui."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

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
        from agui.adapters import AgentFrameworkAgent, AgUiProtocolAgent
        sdks = ("ag_ui", "pydantic", "agent_framework", "agent_framework_ag_ui")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in sdks)
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


def test_without_agent_framework_building_its_adapter_says_how_to_install_it() -> None:
    done = python(
        """
        import sys
        sys.modules["agent_framework_ag_ui"] = None  # as if it were not installed
        from agui.adapters import AgentFrameworkAgent

        try:
            AgentFrameworkAgent(object())
        except ModuleNotFoundError as exc:
            print(exc)
        else:
            raise SystemExit("no error")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "AgentFrameworkAgent needs agent-framework-ag-ui: pip install agent-framework-ag-ui"
    )


def test_ag_ui_protocol_is_an_extra_never_a_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("ag-ui")]
    assert project["optional-dependencies"]["ag-ui-protocol"] == ["ag-ui-protocol>=1.0"]


def test_a_framework_module_that_is_missing_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """agui.adapters.imports.framework_module, on packages made here: the module, a package of
    it or a listed dependency missing gives the install hint; any other import error stays."""
    from agui.adapters.imports import framework_module

    (tmp_path / "fw_present").mkdir()
    (tmp_path / "fw_present" / "__init__.py").write_text("")
    (tmp_path / "fw_present" / "needs_dep.py").write_text("import fw_dependency_absent\n")
    (tmp_path / "fw_present" / "broken.py").write_text("import fw_unrelated_absent\n")
    (tmp_path / "fw_present" / "wraps.py").write_text(
        "try:\n    import fw_extra_absent\nexcept ImportError as e:\n"
        "    raise ImportError('install the extra') from e\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    needs = "X needs fw: pip install fw"
    assert framework_module("fw_present", needs).__name__ == "fw_present"
    for name, missing in [
        ("fw_absent.core", ()),
        ("fw_present.absent", ()),
        ("fw_present.needs_dep", ("fw_dependency_absent",)),
        ("fw_present.wraps", ("fw_extra_absent",)),
    ]:
        with pytest.raises(ModuleNotFoundError) as caught:
            framework_module(name, needs, missing)
        assert str(caught.value) == needs, name
    with pytest.raises(ModuleNotFoundError, match="fw_unrelated_absent"):
        framework_module("fw_present.broken", needs)
    with pytest.raises(ImportError, match="install the extra"):
        framework_module("fw_present.wraps", needs)
