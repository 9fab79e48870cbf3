"""docs/integrations/pydantic_ai.md, used as written, in a fresh virtualenv.

The page's install line is run as written in a virtualenv made in a temporary folder, with the
wheel of this checkout offered by `--find-links` (tests/integrations/recipe.py); the page's
module is written to the file it names (pydantic_ai_example.py) in a fresh folder and served by
the page's command, `agui serve pydantic_ai_example:agent`, from that virtualenv on 127.0.0.1
and a free port; one run of a Conversation through HttpAgent completes with the tool's answer
and the state update. The page's module is examples/pydantic_ai_example.py byte for byte (the
matrix serves that file).

The recipe installs PydanticAI from the index, so it runs only under `nox -s integrations`
(AGUI_REQUIRE_INTEGRATIONS=1); elsewhere it is skipped.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import agui
from tests.integrations import REQUIRED, recipe
from tests.test_docs import block_containing

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "integrations" / "pydantic_ai.md"
EXAMPLE = ROOT / "examples" / "pydantic_ai_example.py"


def module_block() -> str:
    return block_containing(PAGE, "PydanticAIAgent(pydantic_agent")


def test_the_page_holds_the_example() -> None:
    assert module_block() == EXAMPLE.read_text("utf-8")


@pytest.mark.skipif(
    not REQUIRED, reason="installs PydanticAI in a fresh virtualenv: `nox -s integrations` runs it"
)
def test_the_recipe_runs_as_written(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with recipe.served(
        "integrations/pydantic_ai.md",
        "PydanticAIAgent(pydantic_agent",
        tmp_path_factory,
        monkeypatch,
    ) as url:
        conversation = agui.Conversation()
        result = asyncio.run(conversation.run(agui.HttpAgent(url), "What is the weather in Paris?"))
        assert result is not None and result.outcome == "success", conversation.failures
        assert conversation.messages[-1].role == "assistant"
        assert conversation.messages[-1].content == "It is sunny in Paris."
        assert conversation.state == {"lookups": 1, "last_city": "Paris"}
        assert conversation.warnings == []
