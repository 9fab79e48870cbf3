"""to_prompt: a run's conversation as prompt messages for a model.

Everything in a RunAgentInput comes from the client, so the instructions it carries (system and
developer messages) are left out unless the caller opts in: the agent's own system prompt is the
only instruction a model sees by default. The rest keeps its meaning:

* a user message keeps its content, text or content parts (images, audio, documents, ...);
* an assistant message keeps its text and its tool calls with their ids and argument text;
* a tool message becomes a tool result naming its toolCallId (and its error, when it has one);
* activity messages (UI only) and reasoning messages (the model's own earlier thoughts, which
  chat APIs do not take back) are left out.
"""

from __future__ import annotations

from agui_generated import (
    AssistantMessage,
    DeveloperMessage,
    RunAgentInput,
    SystemMessage,
    ToolMessage,
    UserMessage,
)

from agui.model.interface import (
    AssistantPrompt,
    InstructionPrompt,
    PromptMessage,
    PromptToolCall,
    ToolResultPrompt,
    UserPrompt,
)

__all__ = ["to_prompt"]


def to_prompt(input: RunAgentInput, *, keep_instructions: bool = False) -> list[PromptMessage]:
    """The run's messages as prompt messages, in order (see the module docstring).

    keep_instructions: keep the client's system and developer messages (only for clients you
    trust to instruct the model)."""
    prompt: list[PromptMessage] = []
    for message in input.messages:
        if isinstance(message, SystemMessage | DeveloperMessage):
            if keep_instructions:
                prompt.append(
                    InstructionPrompt(
                        content=message.content,
                        role="system" if isinstance(message, SystemMessage) else "developer",
                    )
                )
        elif isinstance(message, UserMessage):
            prompt.append(UserPrompt(content=message.content))
        elif isinstance(message, AssistantMessage):
            calls = tuple(
                PromptToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
                for c in message.tool_calls or ()
            )
            if message.content or calls:
                prompt.append(AssistantPrompt(text=message.content or "", tool_calls=calls))
        elif isinstance(message, ToolMessage):
            prompt.append(
                ToolResultPrompt(
                    tool_call_id=message.tool_call_id, content=message.content, error=message.error
                )
            )
        # ActivityMessage, ReasoningMessage: not part of what the model is told.
    return prompt
