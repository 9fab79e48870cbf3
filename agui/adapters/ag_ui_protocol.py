"""Agents written for the official Python SDK (ag-ui-protocol), as agui agents.

The official SDK's integrations give an agent a `run(input) -> async iterator of events` method:
ag-ui-langgraph's `LangGraphAgent`, ag-ui-adk's `ADKAgent`, and any agent written the same way.
`AgUiProtocolAgent(agent)` makes one an `agui.Agent`, so `AgentApp` serves it (and gives it the
run lifecycle, protobuf, keep-alives, durable runs and everything else it gives any agent) and
`Conversation.run` runs it:

    from ag_ui_langgraph import LangGraphAgent
    from agui.adapters import AgUiProtocolAgent

    app = agui.AgentApp(AgUiProtocolAgent(LangGraphAgent(name="chat", graph=graph)), path="/agent")

Both directions go through the wire form, so nothing crosses that a peer over HTTP would not
send:

* the run's input: `agui.to_json(input)` validated as `ag_ui.core.RunAgentInput`
  (`model_validate`), what the official FastAPI endpoints hand the agent;
* each item the agent yields: an `ag_ui.core` event (any pydantic model: its
  `model_dump_json(by_alias=True)`, exactly what the official `EventEncoder` writes), a string
  or bytes (SSE text such as `EventEncoder.encode(event)`'s `data: {...}\\n\\n`, split anywhere
  across items, or one JSON document per item; the first string says which), or a dict (the
  event's JSON object), decoded by agui's tolerant decoder (`agui.wire.codec.decode`): unknown
  members and nulls in optional members are removed, an unknown event type passes on as
  `agui.UnknownEvent`, and each event's warnings are logged on the "agui.adapters" logger, one
  line per event. Nothing is coerced.

An item that is none of those, or that does not decode (a member of the wrong type, a missing
one, text that is not JSON, an SSE frame over 10 MiB) ends the run the way the lifecycle ends a
run whose agent yields something that is not an event: the problems are logged (with the event's
number and the start of its JSON), the run ends in RUN_ERROR `INVALID_EVENT` ("The agent produced
an invalid event."), and the agent's iterator is closed. An exception in the agent goes on to the
lifecycle (RUN_ERROR `AGENT_ERROR`, logged with its traceback); so does an input the official
model refuses, and a failing `clone()`. A RUN_ERROR the agent sends itself (the integrations'
way of reporting an exception, with its text) reaches the client with a generic message, the
agent's going to the log (`error_messages=True` passes it on, for development).

What the agent declares it can do reaches `GET {path}/capabilities`: `AgUiProtocolAgent` asks
the agent each time (its `get_capabilities()`, as ag-ui-adk's `ADKAgent` has, or a
`capabilities` attribute or method; sync or async), reads the answer (a pydantic model such as
`ag_ui.core.AgentCapabilities`, or its JSON object as a dict; None: nothing declared) as agui's
decoder reads a wire `AgentCapabilities` (unknown members removed and logged), and AgentApp
merges it with the transport it serves.

ag-ui-protocol is imported when an `AgUiProtocolAgent` is built, never when this module is:
install it yourself, or with `pip install 'agui-spec[ag-ui-protocol]'`. It must be 1.0 or newer:
building one with an older release installed raises ImportError naming the packages that hold it
back (agent-framework-ag-ui requires ag-ui-protocol<0.2, and pip replaces 1.0 without a warning;
its agents have `agui.adapters.AgentFrameworkAgent`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from typing import Any, Literal, Protocol, runtime_checkable

import attrs
from agui_generated import (
    AgentCapabilities,
    DecodeError,
    Event,
    Problem,
    RunAgentInput,
    RunErrorEvent,
    UnknownEvent,
)

from agui.adapters.imports import framework_module
from agui.errors import SSEError
from agui.observe.runlog import about_run, run_fields
from agui.stream.lifecycle import AGENT_FAILED, INVALID_EVENT, run_error
from agui.wire.codec import decode, decode_json, to_json
from agui.wire.sse import SSEDecoder

__all__ = ["AgUiProtocolAgent", "SdkAgent", "read_events"]

log = logging.getLogger("agui.adapters")

_INSTALL = "pip install 'agui-spec[ag-ui-protocol]' (or pip install ag-ui-protocol)"
_PREVIEW = 120  # characters of an invalid event's JSON quoted in the log


@runtime_checkable
class SdkAgent(Protocol):
    """An agent of the official Python SDK: `run` takes an `ag_ui.core.RunAgentInput` and returns
    an async iterator of `ag_ui.core` events (pydantic models), of their encodings (SSE or JSON
    text) or of their JSON objects. ag-ui-langgraph's `LangGraphAgent` and ag-ui-adk's `ADKAgent`
    are such agents. An agent may also have `clone()`, a fresh copy for one run (see
    `AgUiProtocolAgent`)."""

    def run(self, input: Any, /) -> AsyncIterator[Any]: ...


class _Invalid(Exception):
    """An item of the official agent's stream that cannot be sent: the run ends in INVALID_EVENT."""


class AgUiProtocolAgent:
    """An agent of the official Python SDK (`SdkAgent`) as an `agui.Agent` (see the module).

    clone: run each run on `agent.clone()`, as the official FastAPI endpoints of ag-ui-langgraph
    do (a `LangGraphAgent` keeps the run it is serving on itself, so concurrent runs on one
    instance would mix). None (the default): clone when the agent has a `clone` method; True:
    require one; False: every run on `agent` itself.

    error_messages: pass the message of a RUN_ERROR the agent sends on to the client. The
    integrations turn an exception into RUN_ERROR with the exception's text as the message
    (ag-ui-langgraph, PydanticAI, ADK), and that text can hold anything (a connection string, a
    query, a path): by default the client gets "The agent failed while running." with the
    agent's code, and the message is logged, as for an exception in an agui agent. True is for
    development.

    `capabilities()` is what the agent declares (see the module): AgentApp serves it, with its
    transport, at `GET {path}/capabilities`.

    Raises TypeError when `agent` has no `run` method (or no `clone` with clone=True),
    ModuleNotFoundError when ag-ui-protocol is not installed, and ImportError when the installed
    one is older than 1.0 (naming the installed distributions that require the old release:
    agent-framework-ag-ui does; serve its agents with `AgentFrameworkAgent`).
    """

    def __init__(
        self, agent: SdkAgent, *, clone: bool | None = None, error_messages: bool = False
    ) -> None:
        if not callable(getattr(agent, "run", None)):
            raise TypeError(
                f"{type(agent).__qualname__} has no run method: an agent of the official SDK "
                "has run(input) returning an async iterator of ag_ui.core events"
            )
        can_clone = callable(getattr(agent, "clone", None))
        if clone and not can_clone:
            raise TypeError(f"clone=True, but {type(agent).__qualname__} has no clone method")
        self.agent = agent
        """The official SDK's agent."""
        self.clone = can_clone if clone is None else clone
        """Whether each run runs on `agent.clone()`."""
        self.error_messages = error_messages
        """Whether the agent's RUN_ERROR messages reach the client as they are."""
        self._input_type: Any = _official_input_type()

    async def capabilities(self) -> AgentCapabilities:
        """What the agent declares it can do, asked again each time (see `_declared_capabilities`):
        empty when it declares nothing."""
        return await _declared_capabilities(self.agent)

    async def __call__(self, input: RunAgentInput, /) -> AsyncGenerator[Event | UnknownEvent, None]:
        agent: Any = self.agent
        if self.clone:
            agent = agent.clone()
        stream: AsyncIterator[Any] = agent.run(self._input_type.model_validate(to_json(input)))
        async with aclosing(
            read_events(stream, run_fields(input.thread_id, input.run_id), self.error_messages)
        ) as events:
            async for event in events:
                yield event


async def _declared_capabilities(agent: object) -> AgentCapabilities:
    """What an agent of another SDK declares it can do, as an agui `AgentCapabilities`.

    Asked of `agent.get_capabilities()` when it has that method (ag-ui-adk's `ADKAgent`), else of
    its `capabilities` (an attribute, or a method); a call may be sync or async. The answer may
    be None (nothing declared: an empty AgentCapabilities), an agui AgentCapabilities (as it is),
    a pydantic model (`ag_ui.core.AgentCapabilities`: its JSON by alias, None members left out) or
    a mapping (the wire JSON object: camelCase names, as `GET /capabilities` answers). The JSON
    is decoded as agui's client decodes a server's answer: unknown members are removed, each
    logged on the "agui.adapters" logger. Raises TypeError for an answer of another type and
    ValueError for one that is not an AgentCapabilities (a member of the wrong type), naming the
    problems; AgentApp logs either and answers 500."""
    getter = getattr(agent, "get_capabilities", None)
    value: Any = getter if callable(getter) else getattr(agent, "capabilities", None)
    if callable(value):
        value = value()
    if inspect.isawaitable(value):
        value = await value
    if value is None:
        return AgentCapabilities()
    if isinstance(value, AgentCapabilities):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{type(agent).__qualname__}'s capabilities are a {type(value).__qualname__}: "
            "expected a pydantic model (ag_ui.core.AgentCapabilities), its JSON object, or None"
        )
    warnings: list[Problem] = []
    try:
        declared: AgentCapabilities = decode_json(dict(value), AgentCapabilities, warnings=warnings)
    except DecodeError as exc:
        raise ValueError(
            f"{type(agent).__qualname__}'s capabilities are not an AgentCapabilities: "
            f"{'; '.join(map(str, exc.problems))}"
        ) from None
    for warning in warnings:
        log.warning("%s's capabilities: %s", type(agent).__qualname__, warning)
    return declared


async def read_events(
    stream: AsyncIterator[Any], fields: Mapping[str, object], error_messages: bool
) -> AsyncGenerator[Event | UnknownEvent, None]:
    """An official agent's stream as agui events (see the module docstring): its items decoded,
    the message of its RUN_ERROR withheld unless `error_messages`, an item that cannot be sent
    ending the run in RUN_ERROR INVALID_EVENT; `stream` is closed at the end; what is logged
    about the run carries `fields` (agui.observe.runlog). Shared by the adapters of agui.adapters."""
    reader = _Reader(fields)
    try:
        try:
            async for item in stream:
                for event in reader.read(item):
                    if type(event) is RunErrorEvent and not error_messages:
                        event = _withheld(event, fields)
                    yield event
            for event in reader.close():
                yield event
        except _Invalid as exc:
            about_run(
                log,
                logging.ERROR,
                fields,
                "%s; the run ends in RUN_ERROR %s",
                exc,
                INVALID_EVENT,
            )
            yield run_error("The agent produced an invalid event.", INVALID_EVENT)
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


def _withheld(event: RunErrorEvent, fields: Mapping[str, object]) -> RunErrorEvent:
    """The agent's RUN_ERROR with a generic message; its own goes to the log."""
    about_run(
        log,
        logging.ERROR,
        fields,
        "the agent ended the run in RUN_ERROR (code %r): %s; the client gets %r "
        "(the adapter's error_messages=True passes the message on)",
        event.code,
        event.message,
        AGENT_FAILED,
    )
    return attrs.evolve(event, message=AGENT_FAILED)


def _official_input_type() -> Any:
    """ag_ui.core.RunAgentInput, imported now (ModuleNotFoundError saying how to install it)."""
    needs = f"AgUiProtocolAgent needs the official SDK, ag-ui-protocol: {_INSTALL}"
    core = framework_module("ag_ui.core", needs)
    _check_sdk_release()
    return core.RunAgentInput


def _check_sdk_release() -> None:
    """ImportError when the installed ag-ui-protocol is older than 1.0. A package pinning an
    older one (agent-framework-ag-ui 1.7.0: ag-ui-protocol<0.2) makes pip replace 1.0 without a
    word, and `pip check` finds nothing wrong; the 0.1 models then refuse inputs without tools,
    context or forwardedProps, which 1.0 makes optional, and every such run fails."""
    try:
        installed = importlib.metadata.version("ag-ui-protocol")
    except importlib.metadata.PackageNotFoundError:
        return  # ag_ui imported from a folder, not an installed distribution: nothing to read
    if _release(installed) >= (1,):
        return
    pins = _pins_below_1()
    why = "; ".join(pins) if pins else "no installed distribution requires it"
    raise ImportError(
        f"AgUiProtocolAgent needs ag-ui-protocol 1.0 or newer, but {installed} is installed "
        f"({why}). For a Microsoft Agent Framework agent use agui.adapters.AgentFrameworkAgent, "
        "which works with the release agent-framework-ag-ui requires; otherwise install "
        "ag-ui-protocol>=1.0 (pip install 'ag-ui-protocol>=1.0'), in a virtualenv of its own if "
        "another package holds it back",
        name="ag_ui",
    )


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version: "0.1.22" -> (0, 1, 22), "1.0.0rc1" -> (1, 0, 0)."""
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def _pins_below_1() -> list[str]:
    """The installed distributions' requirements (outside extras) that rule out ag-ui-protocol
    1.0, as "agent-framework-ag-ui 1.7.0 requires ag-ui-protocol<0.2,>=0.1.19"."""
    pins = set()
    for dist in importlib.metadata.distributions():
        for line in dist.requires or ():
            requirement, _, marker = line.partition(";")
            named = re.fullmatch(
                r"\s*ag[-_.]ui[-_.]protocol\s*(?:\[[^]]*\])?\s*\(?([^)]*)\)?\s*",
                requirement,
                re.IGNORECASE,
            )
            if named and "extra" not in marker and _rules_out_1(named.group(1)):
                name = dist.metadata["Name"]
                pins.add(f"{name} {dist.version} requires ag-ui-protocol{named.group(1).strip()}")
    return sorted(pins)


def _rules_out_1(specifier: str) -> bool:
    """Whether a version specifier ("<0.2,>=0.1.19") excludes 1.0.0."""
    for clause in specifier.split(","):
        found = re.fullmatch(r"\s*(~=|===|==|<=|<)\s*(\S+)\s*", clause)
        if found is None:
            continue
        op, version = found.groups()
        release = _release(version)
        padded = release + (0,) * (3 - len(release))
        if (op == "<" and padded <= (1, 0, 0)) or (op == "<=" and padded < (1, 0, 0)):
            return True
        if op in ("==", "===", "~=") and release[:1] < (1,):
            return True
    return False


class _Reader:
    """The official agent's items, decoded into events (see the module docstring)."""

    def __init__(self, fields: Mapping[str, object]) -> None:
        self.fields = fields  # what its log lines about the run carry
        self.count = 0  # events read so far
        self.text: Literal["sse", "json"] | None = None  # decided by the first string
        self.sse = SSEDecoder()

    def read(self, item: Any) -> Iterator[Event | UnknownEvent]:
        """The events `item` completes; raises _Invalid at the first one that cannot be sent."""
        if isinstance(item, str | bytes | bytearray | memoryview):
            data = item.encode() if isinstance(item, str) else bytes(item)
            if self.text is None:
                self.text = "json" if data.lstrip()[:1] == b"{" else "sse"
            if self.text == "json":
                yield self.decode(data)
            else:
                yield from self.frames(data)
            return
        yield from self.close()  # an SSE frame still missing its blank line comes first
        dump = getattr(item, "model_dump_json", None)
        if callable(dump):  # an ag_ui.core event (a pydantic model)
            yield self.decode(dump(by_alias=True))
        elif isinstance(item, Mapping):
            yield self.decode(dict(item))
        else:
            self.count += 1
            raise _Invalid(
                f"the agent's event {self.count} is a {type(item).__qualname__}, not an "
                "ag_ui.core event, its SSE or JSON text, or its JSON object"
            )

    def close(self) -> Iterator[Event | UnknownEvent]:
        """The end of the stream, or a non-string item: a last SSE frame without its blank line."""
        if self.text == "sse":
            yield from self.frames(None)

    def frames(self, data: bytes | None) -> Iterator[Event | UnknownEvent]:
        """The events of the SSE frames `data` completes (None: the end of the text)."""
        try:
            messages = self.sse.close() if data is None else self.sse.feed(data)
        except SSEError as exc:
            self.count += 1
            raise _Invalid(f"the agent's event {self.count} is not valid SSE: {exc}") from None
        for message in messages:
            yield self.decode(message.data)

    def decode(self, data: str | bytes | dict[str, Any]) -> Event | UnknownEvent:
        self.count += 1
        warnings: list[Problem] = []
        try:
            if isinstance(data, dict):
                event: Event | UnknownEvent = decode_json(data, warnings=warnings)
            else:
                event = decode(data, warnings=warnings)
        except DecodeError as exc:
            raise _Invalid(
                f"the agent's event {self.count} is not a valid AG-UI event: "
                f"{'; '.join(map(str, exc.problems))} (in {_preview(data)})"
            ) from None
        if warnings:
            about_run(
                log,
                logging.WARNING,
                self.fields,
                "the agent's event %d (%s): %s",
                self.count,
                event.type,
                "; ".join(map(str, warnings)),
            )
        return event


def _preview(data: str | bytes | dict[str, Any]) -> str:
    if isinstance(data, dict):
        text = repr(data)
    elif isinstance(data, bytes):
        text = data[: _PREVIEW * 4].decode("utf-8", "replace")
    else:
        text = data
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "..."
