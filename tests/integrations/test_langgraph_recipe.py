"""docs/integrations/langgraph.md, used as written, in a fresh virtualenv.

The page's install line is run as written in a virtualenv made in a temporary folder, with the
wheel of this checkout offered by `--find-links` (tests/integrations/recipe.py); the page's
module is written to the file it names (langgraph_agent.py) in a fresh folder and served by the
page's command, `agui serve langgraph_agent:agent`, from that virtualenv on 127.0.0.1 and a free
port; one run of a Conversation through HttpAgent completes with the tool's answer and the state
update, and an approval's round trip books the trip. The page's module is
examples/langgraph_agent.py byte for byte (the matrix serves that file).

The recipe installs LangGraph from the index, so it runs only under `nox -s integrations`
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
PAGE = ROOT / "docs" / "integrations" / "langgraph.md"
EXAMPLE = ROOT / "examples" / "langgraph_agent.py"


def module_block() -> str:
    return block_containing(PAGE, "class ScriptedChatModel(")


def answers(conversation: agui.Conversation) -> list[str]:
    """The assistant's texts (the tool messages come after the answers: see the page)."""
    return [m.content for m in conversation.messages if m.role == "assistant" and m.content]


def test_the_page_holds_the_example() -> None:
    assert module_block() == EXAMPLE.read_text("utf-8")


@pytest.mark.skipif(
    not REQUIRED, reason="installs LangGraph in a fresh virtualenv: `nox -s integrations` runs it"
)
def test_the_recipe_runs_as_written(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with recipe.served(
        "integrations/langgraph.md", "class ScriptedChatModel(", tmp_path_factory, monkeypatch
    ) as url:

        async def go() -> agui.Conversation:
            conversation = agui.Conversation()
            async with agui.HttpAgent(url) as agent:
                result = await conversation.run(agent, "What is the weather in Paris?")
                assert result is not None and result.outcome == "success", conversation.failures
                assert answers(conversation)[-1] == "It is sunny in Paris."
                assert conversation.state["lookups"] == 1
                assert conversation.state["last_city"] == "Paris"
                result = await conversation.run(agent, "Book a trip to Rome")
                assert result is not None and result.outcome == "interrupt", result
                conversation.resolve(result.interrupts[0].id, {"approved": True})
                result = await conversation.run(agent)
                assert result is not None and result.outcome == "success", conversation.failures
            return conversation

        conversation = asyncio.run(go())
        assert answers(conversation)[-1] == "Your trip to Rome is booked."
        assert conversation.warnings == []
