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

import pytest

import agui
from tests.integrations import REQUIRED, recipe
from tests.integrations.test_llama_index import FRAMEWORK

PAGE = "integrations/llama_index.md"

pytestmark = pytest.mark.skipif(
    not REQUIRED,
    reason="installs LlamaIndex in a fresh virtualenv: `nox -s integrations` runs it",
)


def test_the_recipe_runs_as_written(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with recipe.served(
        "integrations/llama_index.md",
        "def reply(",
        tmp_path_factory,
        monkeypatch,
        startup=FRAMEWORK.startup,
    ) as url:
        conversation = agui.Conversation()
        question = "What is the weather in Paris?"
        result = asyncio.run(conversation.run(agui.HttpAgent(url), question))
        assert result is not None and result.outcome == "success", conversation.failures
    assert conversation.messages[-1].role == "assistant"
    assert conversation.messages[-1].content == "Sunny in Paris."
    assert conversation.state == {"last_city": "Paris"}
    assert conversation.warnings == []
