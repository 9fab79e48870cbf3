"""docs/integrations/crewai.md, used as written, in a fresh virtualenv.

The page's install line is run as written (tests/integrations/recipe.py: a fresh virtualenv, the
wheel of this checkout offered by --find-links). The page's module is written to
examples/crewai_example.py of a fresh folder, and the page's serve command is run there
from the virtualenv, on 127.0.0.1 and a free port; one run of a Conversation through HttpAgent
completes with the tool's answer and its state update, and the server logs nothing worse than
INFO.

It installs CrewAI from the index, so it runs only under `nox -s integrations`
(AGUI_REQUIRE_INTEGRATIONS=1); elsewhere it is skipped.
"""

from __future__ import annotations

import asyncio

import pytest

import agui
from tests.integrations import REQUIRED, recipe
from tests.integrations.test_crewai import FRAMEWORK

PAGE = "integrations/crewai.md"

pytestmark = pytest.mark.skipif(
    not REQUIRED,
    reason="installs CrewAI in a fresh virtualenv: `nox -s integrations` runs it",
)


def test_the_recipe_runs_as_written(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with recipe.served(
        "integrations/crewai.md",
        "class WeatherFlow(",
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
    assert conversation.state["last_city"] == "Paris"  # the flow's whole state
    assert conversation.warnings == []
