"""Serving a language model as an AG-UI agent.

* `interface`: the provider-neutral model interface (`LanguageModel`: prompt messages and tool
  specs in, streamed parts out) and `ModelError`.
* `prompt`: `to_prompt(input)`, a run's conversation as prompt messages.
* `tools`: server tools (`tool(fn)`), their argument schemas and checks.
* `agent`: `ModelAgent`, the agent: rounds, server and frontend tools, approvals, usage.
* `openai`: `OpenAIChatModel`, for OpenAI-compatible chat-completions servers (over httpx).
* `scripted`: `ScriptedModel`, a model that plays a script (no network, no key).
"""

from agui.model.agent import APPROVAL_SCHEMA, ModelAgent, approval_interrupt_id
from agui.model.interface import (
    AssistantPrompt,
    Finish,
    InstructionPrompt,
    LanguageModel,
    ModelError,
    Part,
    PromptMessage,
    PromptToolCall,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultPrompt,
    ToolSpec,
    UserPrompt,
)
from agui.model.openai import OpenAIChatModel
from agui.model.prompt import to_prompt
from agui.model.scripted import ScriptedModel
from agui.model.tools import ServerTool, ToolContext, ToolError, tool

__all__ = [
    "APPROVAL_SCHEMA",
    "AssistantPrompt",
    "Finish",
    "InstructionPrompt",
    "LanguageModel",
    "ModelAgent",
    "ModelError",
    "OpenAIChatModel",
    "Part",
    "PromptMessage",
    "PromptToolCall",
    "ReasoningDelta",
    "ScriptedModel",
    "ServerTool",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolContext",
    "ToolError",
    "ToolResultPrompt",
    "ToolSpec",
    "UserPrompt",
    "approval_interrupt_id",
    "to_prompt",
    "tool",
]
