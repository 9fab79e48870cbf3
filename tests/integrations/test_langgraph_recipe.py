"""docs/serving.md's LangGraph recipe, used as written, in a fresh virtualenv.

The page's install line (`pip install 'agui-spec[server,ag-ui-protocol]'
'ag-ui-langgraph[fastapi]'`) is run as written in a virtualenv made in a temporary folder, with
the wheel of this checkout (built here) offered by `--find-links`, since agui-spec has no
release: so the versions are whatever pip picks for a user today, not the pins of `nox -s
integrations`. The page's module is written to the file its comment names (mymodule.py) in a
fresh folder and served by the command of that comment, `uvicorn mymodule:app`, from the
virtualenv, on 127.0.0.1 and a free port; one run of a Conversation through HttpAgent completes,
and the graph's text arrives.

It installs LangGraph from the index, so it runs only under `nox -s integrations`
(AGUI_REQUIRE_INTEGRATIONS=1); elsewhere it is skipped.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

import agui
from tests.integrations import REQUIRED
from tests.integrations.recipe import install
from tests.test_docs import block_containing
from tests.usage import support

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "serving.md"

pytestmark = pytest.mark.skipif(
    not REQUIRED, reason="installs LangGraph in a fresh virtualenv: `nox -s integrations` runs it"
)


def install_line() -> str:
    block = support.docs_text("serving.md", "ag-ui-langgraph")
    (line,) = [c for c, _ in support.shell_lines(block)]
    return line


def module_block() -> str:
    return block_containing(PAGE, "LangGraphAgent(")


def test_the_recipe_runs_as_written(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin = install(install_line(), tmp_path_factory)

    block = module_block()
    found = re.search(r"`(uvicorn \w+:app)`", block)
    assert found, "the module no longer says how to run it"
    project = tmp_path_factory.mktemp("project")
    (project / f"{support.module_name(block)}.py").write_text(block)
    monkeypatch.setitem(support.COMMANDS, "uvicorn", bin / "uvicorn")
    words = [*found.group(1).split(), "--port", "{port}"]
    ready = ["Uvicorn running on http://127.0.0.1:{port} "]
    with support.servers(project, {"uvicorn": (words, ready)}) as running:
        conversation = agui.Conversation()
        url = f"{running['uvicorn'].base}/agent"
        result = asyncio.run(conversation.run(agui.HttpAgent(url), "Hi"))
        assert result is not None and result.outcome == "success", conversation.failures
        assert conversation.messages[-1].role == "assistant"
        assert conversation.messages[-1].content == "Hello from LangGraph!"
        assert conversation.warnings == []
