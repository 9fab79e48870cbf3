"""docs/integrations/llama_index.md, used as written, in a fresh virtualenv.

The page's install line is run as written (tests/integrations/recipe.py: a fresh virtualenv, the
wheel of this checkout offered by --find-links). The page's module is written to
examples/llama_index_example.py of a fresh folder, and the page's serve command is run there
from the virtualenv, on 127.0.0.1 and a free port; one run of a Conversation through HttpAgent
completes with the tool's answer and its state update, and the server logs nothing worse than
INFO.

It installs LlamaIndex from the index, so it runs only under `nox -s integrations`
(AGUI_REQUIRE_INTEGRATIONS=1); elsewhere it is skipped.
"""

from __future__ import annotations

import asyncio
import shlex

import pytest

import agui
from tests.integrations import REQUIRED, recipe
from tests.integrations.test_llama_index import FRAMEWORK
from tests.test_docs import block_containing
from tests.usage import support

PAGE = "integrations/llama_index.md"

pytestmark = pytest.mark.skipif(
    not REQUIRED,
    reason="installs LlamaIndex in a fresh virtualenv: `nox -s integrations` runs it",
)


def line_of(needle: str) -> str:
    """The one command of the page's ```sh block containing `needle`."""
    (line,) = [c for c, _ in support.shell_lines(support.docs_text(PAGE, needle))]
    return line


def test_the_recipe_runs_as_written(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = recipe.install(line_of("pip install"), tmp_path_factory)
    project = tmp_path_factory.mktemp("project")
    (project / "examples").mkdir()
    module = block_containing(support.DOCS / PAGE, "def reply(")
    (project / "examples" / "llama_index_example.py").write_text(module)
    serve = line_of("agui serve")
    assert serve == "agui serve llama_index_example:agent --app-dir examples", serve
    monkeypatch.setitem(support.COMMANDS, "agui", commands / "agui")
    words = [*shlex.split(serve), "--port", "{port}"]
    ready = ["serving ", "at http://127.0.0.1:{port}/agent"]
    # support.servers' checks, with the framework's startup bound (a fresh virtualenv compiles
    # llama-index-core's modules on the first import)
    server = support.Server(words, project, ready, startup=FRAMEWORK.startup)
    try:
        server.wait_ready()
        conversation = agui.Conversation()
        question = "What is the weather in Paris?"
        url = f"{server.base}/agent"
        result = asyncio.run(conversation.run(agui.HttpAgent(url), question))
        assert result is not None and result.outcome == "success", conversation.failures
    finally:
        code, stderr = server.stop()
    assert code in (0, 130), f"agui serve exited {code} on Ctrl-C:\n{stderr}"
    for bad in ("Traceback", "ERROR", "WARNING", "Exception"):
        assert bad not in stderr, f"agui serve logged {bad}:\n{stderr}"
    assert conversation.messages[-1].role == "assistant"
    assert conversation.messages[-1].content == "Sunny in Paris."
    assert conversation.state == {"last_city": "Paris"}
    assert conversation.warnings == []
