"""The Agent abstraction: anything that turns a RunAgentInput into a stream of events.

A local agent (an async generator function, or an object with such a `__call__`) and a remote one
(`agui.HttpAgent`) are interchangeable: AgentApp serves either, and `Conversation.run` runs
either, with the same lifecycle (agui.stream.lifecycle) applied to a local one as the server
applies, so the same agent gives the same messages both ways.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from agui_generated import AgentCapabilities, Problem, RunAgentInput

__all__ = [
    "Agent",
    "Capabilities",
    "CapabilitySource",
    "FrameSource",
    "History",
    "InputValidator",
    "SyncThreadSource",
    "ThreadSource",
]

History: TypeAlias = Literal["compact", "full"]
"""How a thread's history is handed over: "compact" (its messages and state as snapshots, in one
synthetic run) or "full" (every stored event of every run)."""


@runtime_checkable
class Agent(Protocol):
    """Call it with the run's input; iterate the events of that run.

    The stream may carry RUN_STARTED and a terminal RUN_FINISHED / RUN_ERROR itself; whatever is
    missing is added (agui.stream.lifecycle). Events are the generated models (an
    `agui.UnknownEvent` passes through unchanged)."""

    def __call__(self, input: RunAgentInput, /) -> AsyncIterator[Any]: ...


@runtime_checkable
class InputValidator(Protocol):
    """An agent that can refuse an input before any event is sent: AgentApp calls `validate`
    once the body is decoded and answers 400 with the problems when there are any
    (agui.model.ModelAgent refuses clashing tool names this way)."""

    def validate(self, input: RunAgentInput, /) -> Sequence[Problem]: ...


Capabilities: TypeAlias = (
    AgentCapabilities | Callable[[], AgentCapabilities | Awaitable[AgentCapabilities]]
)
"""What a `CapabilitySource` declares: an AgentCapabilities, or a call (sync or async, a method
say) that answers one each time it is asked."""


@runtime_checkable
class CapabilitySource(Protocol):
    """An agent that declares what it can do: `capabilities` is an `agui.AgentCapabilities`, or a
    method (sync or async) that returns one, asked again on every request so the answer can
    change at run time. AgentApp serves it at `GET {path}/capabilities`, with the transport it
    knows itself (streaming, binary, resumable) in place of the agent's; agui.model.ModelAgent
    declares its tools, reasoning, approvals and max_steps, and agui.HttpAgent's `capabilities()`
    reads a remote agent's (so an AgentApp proxying one passes them on). Declare only what is
    known: a field left out means unknown, not unsupported."""

    @property
    def capabilities(self) -> Capabilities: ...


@runtime_checkable
class FrameSource(Protocol):
    """An agent that can hand over its stream undecoded (HttpAgent): the data of each SSE frame,
    or the JSON object of each protobuf frame. A consumer that decodes and reports what it strips
    itself (agui.Pipeline) reads these instead of decoded events."""

    def frames(self, input: RunAgentInput, /) -> AsyncIterator[bytes | dict[str, Any]]: ...


@runtime_checkable
class ThreadSource(Protocol):
    """An agent whose server keeps threads (HttpAgent, against an AgentApp with a store): it can
    hand over a thread's stream undecoded, its history (`history`) and then its live run until
    that ends. `Conversation.connect` reads it to hydrate a conversation."""

    def connect_frames(
        self, thread_id: str, /, *, history: History = "compact"
    ) -> AsyncIterator[bytes | dict[str, Any]]: ...


@runtime_checkable
class SyncThreadSource(Protocol):
    """`ThreadSource` without an event loop (HttpAgent.connect_frames_sync): what
    `Conversation.connect_sync` reads."""

    def connect_frames_sync(
        self, thread_id: str, /, *, history: History = "compact"
    ) -> Iterator[bytes | dict[str, Any]]: ...
