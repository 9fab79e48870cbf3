"""What the model agent reads from the generated models instead of listing it: the usage counters
it sums, the content part classes a tool may return, the wire form of models inside a tool's
result; and the OpenAI adapter's answer to a content part it does not know."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from typing import Any, ClassVar, get_args

import attrs

import agui
from agui.model import ModelAgent, ScriptedModel, UserPrompt
from agui.model.agent import _counters, _sum_usage
from agui.model.openai import chat_messages
from agui.model.scripted import call, say
from agui.model.tools import _PARTS, result_content

# ── usage counters ─────────────────────────────────────────────────────────────────────────────


def test_the_summed_counters_are_the_integer_fields_of_token_usage() -> None:
    assert _counters(agui.TokenUsage) == (
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "reasoning_tokens",
        "cached_input_tokens",
        "cache_write_input_tokens",
    )


@attrs.frozen(kw_only=True)
class NewerUsage:
    """TokenUsage as a newer spec might generate it: one more optional counter, one label more."""

    provider: str | None = None
    input_tokens: int | None = None
    audio_tokens: int | None = None
    region: str | None = None
    calls: int = 0


def test_a_counter_the_spec_adds_is_summed_without_an_edit() -> None:
    assert _counters(NewerUsage) == ("input_tokens", "audio_tokens", "calls")


def test_counters_are_summed_kept_or_left_absent_and_labels_come_from_the_first() -> None:
    a = agui.TokenUsage(provider="p", model="m", input_tokens=2, reasoning_tokens=1)
    b = agui.TokenUsage(provider="p", model="m", input_tokens=3, output_tokens=4)
    assert _sum_usage(a, b) == agui.TokenUsage(
        provider="p", model="m", input_tokens=5, output_tokens=4, reasoning_tokens=1
    )


def test_the_agent_sums_usage_with_no_hand_written_list_of_counters() -> None:
    import agui.model.agent as agent

    source = inspect.getsource(agent)
    assert "cache_write_input_tokens" not in source
    assert not re.search(r"^\s*assert\b", source, re.M)


# ── tool results ───────────────────────────────────────────────────────────────────────────────


def test_the_content_part_classes_are_the_members_of_the_generated_union() -> None:
    assert _PARTS == get_args(agui.ContentPart)
    parts = [agui.TextPart(text="a"), agui.ImagePart(source=agui.UrlSource(value="https://x/y"))]
    assert result_content(parts) == tuple(parts)


@attrs.frozen
class Report:
    """An attrs class of the tool's own, holding an agui model."""

    name: str
    usage: agui.TokenUsage


def test_models_in_a_result_are_written_in_wire_form_anywhere_in_it() -> None:
    usage = agui.TokenUsage(input_tokens=3)
    assert json.loads(result_content(usage)) == {"inputTokens": 3}
    nested = result_content({"runs": [usage], "report": Report("r", usage), "tags": {"x"}})
    assert json.loads(nested) == {
        "runs": [{"inputTokens": 3}],
        "report": {"name": "r", "usage": {"inputTokens": 3}},
        "tags": ["x"],
    }


def test_a_token_usage_returned_by_a_tool_reaches_the_tool_call_result_in_wire_form() -> None:
    def usage_of(job: str) -> dict[str, Any]:
        """The tokens a job used."""
        return {"job": job, "usage": agui.TokenUsage(input_tokens=3)}

    model = ScriptedModel([call("usage_of", {"job": "j1"}), say("Three.")])
    agent = ModelAgent(model, tools=[usage_of])
    run = agui.RunAgentInput(
        thread_id="t",
        run_id="r",
        messages=(agui.UserMessage(id="u", content="How many?"),),
    )

    async def events() -> list[Any]:
        return [event async for event in agent(run)]

    results = [e for e in asyncio.run(events()) if isinstance(e, agui.ToolCallResultEvent)]
    assert len(results) == 1
    assert json.loads(results[0].content) == {
        "job": "j1",
        "usage": {"inputTokens": 3},
    }


# ── the OpenAI adapter ─────────────────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class HologramPart:
    """A content part a newer spec might add: no media source."""

    type: ClassVar[str] = "hologram"
    scene: str


def test_a_part_without_a_source_is_left_out_with_a_note() -> None:
    prompt = [UserPrompt(content=(agui.TextPart(text="look"), HologramPart(scene="s")))]
    assert chat_messages(prompt)[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": "[hologram left out: this model adapter cannot send it]"},
    ]
