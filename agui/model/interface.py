"""What a language model looks like to the model agent, whoever serves the model.

A model is anything with `stream(prompt, tools)` that yields parts as it produces them: text
deltas, reasoning deltas, tool calls (start, argument deltas, end) and one finish carrying the token
usage. The prompt is a list of provider-neutral messages (instructions, user, assistant, tool
results) and the tools are JSON Schema function definitions. An adapter translates both ways for
one provider (`agui.model.openai` for chat-completions servers); `agui.model.scripted` plays parts
from a script, with no network.

A provider failure is raised as `ModelError`, whose code and message are safe to show a client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs
from agui_generated import ContentPart, TokenUsage

from agui.errors import ModelError

__all__ = [
    "AssistantPrompt",
    "Finish",
    "InstructionPrompt",
    "LanguageModel",
    "ModelError",
    "Part",
    "PromptMessage",
    "PromptToolCall",
    "ReasoningDelta",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResultPrompt",
    "ToolSpec",
    "UserPrompt",
]


# ── what the model streams ─────────────────────────────────────────────────────────────────────


@attrs.frozen
class TextDelta:
    """A piece of the answer's text."""

    text: str


@attrs.frozen
class ReasoningDelta:
    """A piece of the model's visible reasoning (only some models and servers send it)."""

    text: str


@attrs.frozen
class ToolCallStart:
    """The model begins a call of the tool `name`; `id` names the call from now on."""

    id: str
    name: str


@attrs.frozen
class ToolCallDelta:
    """A piece of the JSON text of a call's arguments."""

    id: str
    arguments: str


@attrs.frozen
class ToolCallEnd:
    """The call's arguments are complete."""

    id: str


@attrs.frozen
class Finish:
    """The model is done with this request. `reason` is the provider's word for why ("stop",
    "tool_calls", "length", ...); `usage` is what the request cost, when the provider says."""

    reason: str = "stop"
    usage: TokenUsage | None = None


Part: TypeAlias = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Finish
"""One item of a model's stream."""


# ── what the model is given ────────────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class InstructionPrompt:
    """Instructions for the model: the agent's system prompt, or a client's system / developer
    message when the agent keeps those."""

    content: str
    role: Literal["system", "developer"] = "system"


@attrs.frozen(kw_only=True)
class UserPrompt:
    """A user turn: plain text, or content parts (agui's TextPart, ImagePart, AudioPart,
    VideoPart, DocumentPart) kept as the client sent them."""

    content: str | tuple[ContentPart, ...]


@attrs.frozen(kw_only=True)
class PromptToolCall:
    """A tool call the assistant made earlier; `arguments` is the JSON text it wrote."""

    id: str
    name: str
    arguments: str


@attrs.frozen(kw_only=True)
class AssistantPrompt:
    """An assistant turn: its text and the tool calls it made."""

    text: str = ""
    tool_calls: tuple[PromptToolCall, ...] = ()


@attrs.frozen(kw_only=True)
class ToolResultPrompt:
    """The result of the tool call `tool_call_id`. `error` is set when the client reported the
    call as failed (a tool message's `error`)."""

    tool_call_id: str
    content: str | tuple[ContentPart, ...]
    error: str | None = None


PromptMessage: TypeAlias = InstructionPrompt | UserPrompt | AssistantPrompt | ToolResultPrompt
"""One message of a prompt."""


@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, and a JSON Schema of its arguments
    (an object schema)."""

    name: str
    description: str
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})


# ── the model ──────────────────────────────────────────────────────────────────────────────────


@runtime_checkable
class LanguageModel(Protocol):
    """A model the agent can call: one request per round."""

    def stream(
        self, prompt: Sequence[PromptMessage], tools: Sequence[ToolSpec], /
    ) -> AsyncIterator[Part]:
        """Send the prompt with the tools on offer; yield parts as they arrive, ending with a
        Finish. Raise ModelError when the provider fails."""
        ...
