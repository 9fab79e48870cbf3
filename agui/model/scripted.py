"""A scripted model: plays parts from a script, with no network and no key.

    model = ScriptedModel([
        [*think("The user wants the weather."), *call("get_weather", {"city": "Paris"})],
        say("It is sunny in Paris."),
    ])

The script is either a list of turns (one per request, in order) or a function of the prompt and
the tools that returns the parts of a response, which makes a model that reacts to what it is told
(the demo agent's). A turn without a Finish gets one, with a usage counted in words. An exception
in a turn is raised at that point of the stream (a ModelError to test provider failures).
`calls` holds the last requests (`keep_calls`, 100 by default), so a model serving for ever (the
demo agent's) keeps a bounded number of prompts; `turns` counts them all.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, TypeAlias

import orjson
from agui_generated import TokenUsage

from agui.model.interface import (
    AssistantPrompt,
    Finish,
    InstructionPrompt,
    ModelError,
    Part,
    PromptMessage,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultPrompt,
    ToolSpec,
    UserPrompt,
)

__all__ = ["Script", "ScriptedModel", "Step", "call", "say", "think"]

Step: TypeAlias = Part | BaseException
Script: TypeAlias = Callable[[Sequence[PromptMessage], Sequence[ToolSpec]], Iterable[Step]]


def say(text: str) -> list[Part]:
    """Text as a model streams it: word by word, each word with the space after it."""
    return [TextDelta(piece) for piece in _pieces(text)]


def think(text: str) -> list[Part]:
    """Reasoning, word by word."""
    return [ReasoningDelta(piece) for piece in _pieces(text)]


def call(name: str, arguments: Any = None, *, id: str | None = None, pieces: int = 3) -> list[Part]:
    """A tool call: start, the JSON of `arguments` (a str is taken as the JSON text itself) split
    into about `pieces` deltas, end."""
    call_id = id or f"call-{uuid.uuid4().hex[:12]}"
    text = arguments if isinstance(arguments, str) else orjson.dumps(arguments or {}).decode()
    size = max(1, -(-len(text) // max(1, pieces)))
    deltas = [ToolCallDelta(call_id, text[i : i + size]) for i in range(0, len(text), size)]
    return [ToolCallStart(call_id, name), *deltas, ToolCallEnd(call_id)]


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [word + " " for word in words[:-1]] + ([words[-1]] if words[-1] else [])


class ScriptedModel:
    """A LanguageModel playing `script` (see the module docstring).

    delay: seconds between parts. provider / model: what its usage is reported as. keep_calls: how
    many of the latest requests `calls` holds (0: none, None: every one, which grows with every
    request for as long as the model lives).
    """

    def __init__(
        self,
        script: Sequence[Sequence[Step]] | Script,
        *,
        delay: float = 0.0,
        provider: str = "scripted",
        model: str = "scripted",
        keep_calls: int | None = 100,
    ) -> None:
        if keep_calls is not None and keep_calls < 0:
            raise ValueError(f"keep_calls must be 0 or more (or None), not {keep_calls}")
        self.script = script
        self.delay = delay
        self.provider = provider
        self.model = model
        self.keep_calls = keep_calls
        self.turns = 0
        """How many requests the model has answered (or is answering)."""
        self.calls: list[tuple[tuple[PromptMessage, ...], tuple[ToolSpec, ...]]] = []
        """The latest requests, oldest first: (prompt, tools) each."""

    async def stream(
        self, prompt: Sequence[PromptMessage], tools: Sequence[ToolSpec], /
    ) -> AsyncIterator[Part]:
        turn = self.turns
        self.turns += 1
        keep = self.keep_calls
        if keep is None or keep > 0:
            self.calls.append((tuple(prompt), tuple(tools)))
            if keep is not None and len(self.calls) > keep:
                del self.calls[: len(self.calls) - keep]
        if callable(self.script):
            steps = list(self.script(prompt, tools))
        elif turn < len(self.script):
            steps = list(self.script[turn])
        else:
            raise ModelError("MODEL_SCRIPT_ENDED", "The scripted model has no more turns.")
        written: list[str] = []
        thought: list[str] = []
        finished = False
        for step in steps:
            await asyncio.sleep(self.delay)
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, TextDelta):
                written.append(step.text)
            elif isinstance(step, ReasoningDelta):
                thought.append(step.text)
            if isinstance(step, Finish):
                finished = True
            yield step
        if not finished:
            yield Finish(
                reason="tool_calls" if any(isinstance(s, ToolCallStart) for s in steps) else "stop",
                usage=self._usage(prompt, "".join(thought) + " " + "".join(written)),
            )

    def _usage(self, prompt: Sequence[PromptMessage], written: str) -> TokenUsage:
        read = sum(len(_text_of(m).split()) for m in prompt)
        wrote = len(written.split())
        return TokenUsage(
            provider=self.provider,
            model=self.model,
            input_tokens=read,
            output_tokens=wrote,
            total_tokens=read + wrote,
        )


def _text_of(message: PromptMessage) -> str:
    if isinstance(message, InstructionPrompt):
        return message.content
    if isinstance(message, AssistantPrompt):
        return message.text + " ".join(c.arguments for c in message.tool_calls)
    if isinstance(message, UserPrompt | ToolResultPrompt):
        content = message.content
        if isinstance(content, str):
            return content
        return " ".join(getattr(part, "text", "") for part in content)
    return ""
