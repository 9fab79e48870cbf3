"""Agents written for other AG-UI SDKs, made agui agents.

* `ag_ui_protocol`: `AgUiProtocolAgent`, an agent of the official Python SDK (ag-ui-protocol:
  ag-ui-langgraph's `LangGraphAgent`, ag-ui-adk's `ADKAgent`, anything with
  `run(input) -> async iterator of ag_ui.core events`) as an `agui.Agent`, so `AgentApp` serves it
  and `Conversation.run` runs it.
* `agent_framework`: `AgentFrameworkAgent`, a Microsoft Agent Framework agent (agent-framework-ag-ui,
  which needs ag-ui-protocol 0.1: `AgUiProtocolAgent` refuses that release) as an `agui.Agent`.
* `agno`: `AgnoAgent`, an Agno agent or team run through Agno's AG-UI interface (the body of
  AgentOS' AGUI route, `agno.os.interfaces.agui.router.run_entity`) as an `agui.Agent`.
* `crewai`: `CrewAIFlowAgent`, a CrewAI flow run by ag-ui-crewai's flow endpoint (its request
  handler, called in-process) as an `agui.Agent`.
* `llama_index`: `LlamaIndexAgent`, a LlamaIndex workflow (llama-index-protocols-ag-ui's
  `AGUIChatWorkflow`, made per run by a factory) run as its AG-UI router runs it, as an
  `agui.Agent`.
* `pydantic_ai`: `PydanticAIAgent`, a PydanticAI agent (`pydantic_ai.Agent`) run through
  PydanticAI's own AG-UI adapter (`pydantic_ai.ui.ag_ui.AGUIAdapter`) as an `agui.Agent`.

Nothing here imports another SDK when it is imported: ag-ui-protocol, agent-framework-ag-ui,
ag-ui-crewai, agno, llama-index-protocols-ag-ui or pydantic-ai is loaded when an adapter is built,
and `import agui` never loads this package.
"""

from __future__ import annotations

from agui.adapters.ag_ui_protocol import AgUiProtocolAgent, SdkAgent
from agui.adapters.agent_framework import AgentFrameworkAgent
from agui.adapters.agno import AgnoAgent
from agui.adapters.crewai import CrewAIFlowAgent
from agui.adapters.llama_index import LlamaIndexAgent
from agui.adapters.pydantic_ai import PydanticAIAgent

__all__ = [
    "AgUiProtocolAgent",
    "AgentFrameworkAgent",
    "AgnoAgent",
    "CrewAIFlowAgent",
    "LlamaIndexAgent",
    "PydanticAIAgent",
    "SdkAgent",
]
