"""Serving a language model as an AG-UI agent.

* `interface`: the provider-neutral model interface (`LanguageModel`: prompt messages and tool
  specs in, streamed parts out) and `ModelError`.
* `prompt`: `to_prompt(input)`, a run's conversation as prompt messages.
* `tools`: server tools (`tool(fn)`), their argument schemas and checks.
* `agent`: `ModelAgent`, the agent: rounds, server and frontend tools, approvals, usage.
* `openai`: `OpenAIChatModel`, for OpenAI-compatible chat-completions servers (over httpx).
* `scripted`: `ScriptedModel`, a model that plays a script (no network, no key).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agui.model.agent import (
        APPROVAL_SCHEMA as APPROVAL_SCHEMA,
        ModelAgent as ModelAgent,
        approval_interrupt_id as approval_interrupt_id,
    )
    from agui.model.interface import (
        AssistantPrompt as AssistantPrompt,
        Finish as Finish,
        InstructionPrompt as InstructionPrompt,
        LanguageModel as LanguageModel,
        ModelError as ModelError,
        Part as Part,
        PromptMessage as PromptMessage,
        PromptToolCall as PromptToolCall,
        ReasoningDelta as ReasoningDelta,
        TextDelta as TextDelta,
        ToolCallDelta as ToolCallDelta,
        ToolCallEnd as ToolCallEnd,
        ToolCallStart as ToolCallStart,
        ToolResultPrompt as ToolResultPrompt,
        ToolSpec as ToolSpec,
        UserPrompt as UserPrompt,
    )
    from agui.model.openai import OpenAIChatModel as OpenAIChatModel
    from agui.model.prompt import to_prompt as to_prompt
    from agui.model.scripted import ScriptedModel as ScriptedModel
    from agui.model.tools import (
        ServerTool as ServerTool,
        ToolContext as ToolContext,
        ToolError as ToolError,
        tool as tool,
    )

# Each name and the module that defines it; a module loads when one of its names is first used
# (so `from agui.model import ModelAgent` does not load httpx, which only the OpenAI adapter needs).
_HOMES: dict[str, str] = {
    "APPROVAL_SCHEMA": "agui.model.agent",
    "AssistantPrompt": "agui.model.interface",
    "Finish": "agui.model.interface",
    "InstructionPrompt": "agui.model.interface",
    "LanguageModel": "agui.model.interface",
    "ModelAgent": "agui.model.agent",
    "ModelError": "agui.errors",
    "OpenAIChatModel": "agui.model.openai",
    "Part": "agui.model.interface",
    "PromptMessage": "agui.model.interface",
    "PromptToolCall": "agui.model.interface",
    "ReasoningDelta": "agui.model.interface",
    "ScriptedModel": "agui.model.scripted",
    "ServerTool": "agui.model.tools",
    "TextDelta": "agui.model.interface",
    "ToolCallDelta": "agui.model.interface",
    "ToolCallEnd": "agui.model.interface",
    "ToolCallStart": "agui.model.interface",
    "ToolContext": "agui.model.tools",
    "ToolError": "agui.errors",
    "ToolResultPrompt": "agui.model.interface",
    "ToolSpec": "agui.model.interface",
    "UserPrompt": "agui.model.interface",
    "approval_interrupt_id": "agui.model.agent",
    "to_prompt": "agui.model.prompt",
    "tool": "agui.model.tools",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'agui.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
