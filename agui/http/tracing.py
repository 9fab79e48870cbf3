"""Traces of the runs an AgentApp serves, with OpenTelemetry (`AgentApp(agent, tracing=True)`,
`agui serve --otel`; `pip install 'agui-spec[otel]'`).

Imported only when tracing is on: AgentApp asks for it when `tracing` is given, the model agent
and HttpAgent only once it (or OpenTelemetry) is loaded. Nothing here is on the per-event path of
a run that is not traced.

Each run is one span following the OpenTelemetry GenAI semantic conventions (status:
Development): `invoke_agent {agent name}`, kind INTERNAL (the agent runs in this process), with
`gen_ai.operation.name` "invoke_agent", `gen_ai.agent.name`, `gen_ai.conversation.id` (the
thread), and this package's `agui.run.id`, `agui.run.outcome` and `agui.run.events`; a run that
ends in RUN_ERROR has `error.type` (its code) and the status ERROR. Its parent is the span
current in the request (an ASGI instrumentation's), else the caller's W3C trace context
(`traceparent`, read with the global propagator). The run's tasks carry the span as their
current context (`RunSpan.task_context`), a durable run's too, which executes detached from its
request: what the agent does, and the spans its libraries make, are children of the run's.

Within a traced run the model agent (agui.model.agent) makes a `chat {model}` span (kind
CLIENT) for each model request, with the token usage, and an `execute_tool {name}` span for
each server tool it runs (`chat_span`, `tool_span`).

The tracer comes from the application's TracerProvider: the one given (`tracing=provider`), else
the global one, used as it is when the application set one; when none is set, the SDK is
configured from the standard OTEL_* environment variables (`global_provider`) and set as the
global provider.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agui_generated import RunErrorEvent, RunFinishedEvent
from opentelemetry import context as otel_context, propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode

from agui.errors import ModelError, ToolError

if TYPE_CHECKING:
    from agui_generated import RunAgentInput, TokenUsage
    from opentelemetry.sdk.trace.export import SpanExporter

    from agui.model.interface import Finish

__all__ = [
    "ChatSpan",
    "RunSpan",
    "ToolSpan",
    "Tracing",
    "agent_name",
    "chat_span",
    "check_environment",
    "global_provider",
    "inject",
    "tool_span",
]

log = logging.getLogger("agui.tracing")

SCOPE = "agui"
"""The instrumentation scope of agui's spans (the tracer's name)."""
OTHER = "_OTHER"
"""error.type of a RUN_ERROR without a code (the conventions' fallback value)."""

_RUN_TRACER: contextvars.ContextVar[trace.Tracer] = contextvars.ContextVar("agui_run_tracer")
"""The tracer of the run the current task works for; unset outside a traced run."""
_CONFIGURE = threading.Lock()

Headers = Sequence[tuple[bytes, bytes]]


class _HeaderGetter(Getter[Headers]):
    """Reads a propagator's fields from ASGI headers (lower-case byte names)."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        name = key.lower().encode("latin-1")
        found = [v.decode("latin-1") for k, v in carrier if k.lower() == name]
        return found or None

    def keys(self, carrier: Headers) -> list[str]:
        return [k.decode("latin-1") for k, _ in carrier]


_HEADERS = _HeaderGetter()


# ── the tracer provider ─────────────────────────────────────────────────────────────────────────


def global_provider() -> trace.TracerProvider:
    """The global TracerProvider: the application's, when it set one; else an SDK provider
    configured from the environment (below), set as the global one now. ValueError for an
    exporter the environment names that is not installed or not known.

    From the environment: the exporters of OTEL_TRACES_EXPORTER (default "otlp"; "none": none;
    "otlp" with OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL "http/protobuf",
    the default, or "grpc"; "console"; or the name of an installed exporter's entry point), each
    behind a BatchSpanProcessor (OTEL_BSP_*); the exporter reads its own settings
    (OTEL_EXPORTER_OTLP_ENDPOINT, ..._HEADERS, ..._TIMEOUT, ...); the resource OTEL_SERVICE_NAME
    and OTEL_RESOURCE_ATTRIBUTES; the sampler OTEL_TRACES_SAMPLER; OTEL_SDK_DISABLED=true traces
    nothing. Spans still queued are exported when the process exits (the SDK's atexit hook)."""
    with _CONFIGURE:
        current = trace.get_tracer_provider()
        if not isinstance(current, trace.ProxyTracerProvider):
            return current  # the application's, as it is
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporters = _exporters(os.environ)
        provider = TracerProvider(resource=Resource.create())
        for exporter in exporters:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        log.info(
            "tracing: the OpenTelemetry SDK is configured from the environment (exporters: %s)",
            ", ".join(type(e).__name__ for e in exporters) or "none",
        )
        return trace.get_tracer_provider()


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Refuse (ValueError) what `global_provider` would refuse in `environ` (default: this
    process's), an exporter that is not installed or not known, before any run."""
    _exporter_classes(os.environ if environ is None else environ)


def _exporters(environ: Mapping[str, str]) -> list[SpanExporter]:
    return [make() for make in _exporter_classes(environ)]


def _exporter_classes(environ: Mapping[str, str]) -> list[Callable[[], SpanExporter]]:
    """What makes each exporter of OTEL_TRACES_EXPORTER (imported, not made yet)."""
    names = [n.strip() for n in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    names = [n for n in names if n]
    if "none" in names:
        return []
    return [_exporter_class(name, environ) for name in names]


def _exporter_class(name: str, environ: Mapping[str, str]) -> Callable[[], SpanExporter]:
    if name == "otlp":
        protocol = (
            environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf"
        ).strip()
        if protocol == "http/protobuf":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter
        if protocol == "grpc":
            try:
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                    OTLPSpanExporter as GrpcExporter,
                )
            except ImportError:
                raise ValueError(
                    "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the gRPC exporter: pip install "
                    "opentelemetry-exporter-otlp-proto-grpc (http/protobuf needs nothing more)"
                ) from None
            grpc: Callable[[], SpanExporter] = GrpcExporter
            return grpc
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: the OTLP protocols are http/protobuf (the "
            "default) and grpc"
        )
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter
    from importlib.metadata import entry_points

    found = entry_points(group="opentelemetry_traces_exporter", name=name)
    if not found:
        raise ValueError(
            f"OTEL_TRACES_EXPORTER={name}: no span exporter of that name is installed (otlp, "
            "console, none, or an exporter package's name)"
        )
    loaded: Callable[[], SpanExporter] = next(iter(found)).load()
    return loaded


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agui-spec")
    except PackageNotFoundError:  # pragma: no cover - a checkout that is not installed
        return None


def agent_name(agent: object) -> str:
    """The name a run's span gives the agent (gen_ai.agent.name): its `name` attribute when that
    is a non-empty string, else its function's or its class's name."""
    name = getattr(agent, "name", None)
    if isinstance(name, str) and name:
        return name
    own = getattr(agent, "__name__", None)
    return own if isinstance(own, str) and own else type(agent).__name__


# ── the run's span ──────────────────────────────────────────────────────────────────────────────


class Tracing:
    """What an AgentApp traces its runs with: the agent's name and the tracer, found when the
    first run starts (`provider` None: `global_provider()`), so that an application may set its
    provider after building the app."""

    def __init__(self, agent: object, provider: trace.TracerProvider | None = None) -> None:
        self.agent = agent_name(agent)
        self.provider = provider
        self._tracer: trace.Tracer | None = None
        self._failed = False
        model = getattr(agent, "model", None)  # a ModelAgent's model says who serves it
        provider_name = getattr(model, "provider", None)
        self._attributes: dict[str, str] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.agent,
        }
        if isinstance(provider_name, str) and provider_name:
            self._attributes["gen_ai.provider.name"] = provider_name

    def tracer(self) -> trace.Tracer | None:
        """The tracer (None when the environment's configuration was refused or failed: logged
        once, and the app's runs are served untraced)."""
        if self._tracer is None and not self._failed:
            try:
                provider = self.provider if self.provider is not None else global_provider()
            except ValueError as exc:
                self._failed = True
                log.error("tracing is off: %s", exc)
                return None
            except Exception:  # an exporter that cannot be made: serve on, untraced
                self._failed = True
                log.exception("tracing is off: the OpenTelemetry SDK could not be configured")
                return None
            self._tracer = provider.get_tracer(SCOPE, _version())
        return self._tracer

    def start(self, run_input: RunAgentInput, headers: Headers) -> RunSpan | None:
        """The span of a run starting now, for a request with `headers` (None: not traced)."""
        tracer = self.tracer()
        if tracer is None:
            return None
        parent = None
        if not trace.get_current_span().get_span_context().is_valid:
            parent = propagate.extract(headers, getter=_HEADERS)
        attributes = {
            **self._attributes,
            "gen_ai.conversation.id": run_input.thread_id,
            "agui.run.id": run_input.run_id,
        }
        span = tracer.start_span(
            f"invoke_agent {self.agent}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        return RunSpan(span, tracer, parent)


def _enter(span: trace.Span, tracer: trace.Tracer, parent: otel_context.Context | None) -> None:
    otel_context.attach(trace.set_span_in_context(span, parent))
    _RUN_TRACER.set(tracer)


class RunSpan:
    """One run's span: what the run's stream carried (`observe`), how the server ended it
    (`ended_by_server`), ended once with `end`."""

    __slots__ = ("_context", "error", "events", "final", "outcome", "span")

    def __init__(
        self, span: trace.Span, tracer: trace.Tracer, parent: otel_context.Context | None
    ) -> None:
        self.span = span
        self.events = 0
        """The events of the run's stream so far, RUN_STARTED and the terminal one included."""
        self.final = False
        self.outcome: str | None = None
        self.error: tuple[str, str] | None = None  # (error.type, the RUN_ERROR message)
        # The context the run's tasks start from: the request's, with the span current and the
        # run's tracer for the model agent. Never detached: each task gets a copy of its own.
        self._context = contextvars.copy_context()
        self._context.run(_enter, span, tracer, parent)

    @property
    def trace_id(self) -> str:
        """The run's trace id, 32 hex digits as W3C traceparent writes it (the run line's
        `trace`)."""
        return format(self.span.get_span_context().trace_id, "032x")

    def task_context(self) -> contextvars.Context:
        """A context for a task of the run (asyncio.create_task(..., context=...)): the span
        current in it."""
        return self._context.copy()

    async def observe(self, stream: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
        """`stream` (the run lifecycle's) as it is, counted, its terminal event noted."""
        try:
            async for event in stream:
                if not self.final:
                    self.saw(event)
                yield event
        finally:
            await stream.aclose()

    def saw(self, event: Any) -> None:
        """One more event of the run's stream (before its terminal one): counted, and a
        terminal event noted. What `observe` does for each, for a producer that counts in its
        own pass (AgentApp's: its fast path for content events only adds to `events`)."""
        self.events += 1
        kind = type(event)
        if kind is RunFinishedEvent:
            self.final = True
            self.outcome = "success" if event.outcome is None else event.outcome.type
        elif kind is RunErrorEvent:
            self.final = True
            self.outcome = "error"
            self.error = (event.code or OTHER, event.message)

    def ended_by_server(self, code: str | None, message: str = "", closed: int = 0) -> None:
        """The server ended the run itself: with RUN_ERROR `code` and `message` (a time limit,
        the shutdown, an event it could not send, the store), or stopped on request when `code`
        is None (RUN_FINISHED, outcome cancelled, after `closed` events closing what was open).
        Its RUN_STARTED, when the agent's had not come, counts too."""
        if self.final:
            return
        self.final = True
        self.events += (0 if self.events else 1) + closed + 1
        if code is None:
            self.outcome = "cancelled"
        else:
            self.outcome = "error"
            self.error = (code, message)

    def end(self, unfinished: str) -> None:
        """End the span; `unfinished` is the outcome of a run that got no terminal event (the
        client left: "disconnected"; a durable run no longer this worker's: "abandoned", an
        error)."""
        span = self.span
        outcome = self.outcome
        if outcome is None:
            outcome = unfinished
            if unfinished == "abandoned":
                self.error = ("abandoned", "the run is no longer this worker's to write")
        span.set_attribute("agui.run.outcome", outcome)
        span.set_attribute("agui.run.events", self.events)
        if self.error is not None:
            span.set_attribute("error.type", self.error[0])
            span.set_status(Status(StatusCode.ERROR, self.error[1] or None))
        span.end()


# ── the model agent's spans ─────────────────────────────────────────────────────────────────────


def _error_type(exc: BaseException) -> str:
    """error.type of an exception: its class's qualified name (with its module, unless a
    builtin)."""
    kind = type(exc)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def _server(url: object) -> dict[str, str | int]:
    """server.address and server.port of a model's base URL (none for a model without one)."""
    if not isinstance(url, str):
        return {}
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return {}
    if not parts.hostname:
        return {}
    found: dict[str, str | int] = {"server.address": parts.hostname}
    if port is not None:
        found["server.port"] = port
    return found


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class ChatSpan:
    """The span of one model request of a traced run (`chat {model}`, kind CLIENT)."""

    __slots__ = ("span",)

    def __init__(self, tracer: trace.Tracer, model: object) -> None:
        requested = _text(getattr(model, "model", None))
        attributes: dict[str, str | bool | int] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.stream": True,
        }
        provider = _text(getattr(model, "provider", None))
        if provider is not None:
            attributes["gen_ai.provider.name"] = provider
        if requested is not None:
            attributes["gen_ai.request.model"] = requested
        attributes.update(_server(getattr(model, "base_url", None)))
        self.span = tracer.start_span(
            f"chat {requested}" if requested else "chat",
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )

    def finished(self, finish: Finish) -> None:
        """The model's Finish: why it stopped, and what the request cost."""
        span = self.span
        span.set_attribute("gen_ai.response.finish_reasons", (finish.reason,))
        usage: TokenUsage | None = finish.usage
        if usage is None:
            return
        if usage.model:
            span.set_attribute("gen_ai.response.model", usage.model)
        for attribute, value in (
            ("gen_ai.usage.input_tokens", usage.input_tokens),
            ("gen_ai.usage.output_tokens", usage.output_tokens),
            ("gen_ai.usage.cache_read.input_tokens", usage.cached_input_tokens),
            ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_input_tokens),
            ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
        ):
            if value is not None:
                span.set_attribute(attribute, value)

    def failed(self, exc: BaseException) -> None:
        """The request failed: a ModelError's code (MODEL_HTTP_ERROR, ...), else the
        exception's class."""
        if isinstance(exc, ModelError):
            kind, message = exc.code, exc.message
        else:
            kind, message = _error_type(exc), ""
            self.span.record_exception(exc)
        self.span.set_attribute("error.type", kind)
        self.span.set_status(Status(StatusCode.ERROR, message or None))

    def end(self) -> None:
        self.span.end()


def chat_span(model: object) -> ChatSpan | None:
    """The span of a model request starting now, a child of the current span; None outside a
    traced run."""
    tracer = _RUN_TRACER.get(None)
    return None if tracer is None else ChatSpan(tracer, model)


class ToolSpan:
    """The span of one server tool's execution (`execute_tool {name}`, kind INTERNAL)."""

    __slots__ = ("span",)

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def failed(self, exc: BaseException | None = None, kind: str | None = None) -> None:
        """The tool failed: raised `exc` (recorded on the span unless a ToolError, the error a
        tool means the model to read), or gave what is not a result (`kind`)."""
        if exc is not None:
            kind = _error_type(exc)
            if not isinstance(exc, ToolError):
                self.span.record_exception(exc)
        self.span.set_attribute("error.type", kind or OTHER)
        self.span.set_status(Status(StatusCode.ERROR))


@contextlib.contextmanager
def tool_span(name: str, call_id: str, description: str | None) -> Iterator[ToolSpan | None]:
    """The span of a server tool running in this task, current while it runs (a sync tool's
    thread gets it too); None outside a traced run."""
    tracer = _RUN_TRACER.get(None)
    if tracer is None:
        yield None
        return
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "extension",  # run by the agent, on the server
    }
    if description:
        attributes["gen_ai.tool.description"] = description
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield ToolSpan(span)


# ── the client side ─────────────────────────────────────────────────────────────────────────────


def inject(headers: dict[str, str]) -> dict[str, str]:
    """`headers` with the current trace context (traceparent, and what else the global
    propagator writes) when a span is active; a header already in `headers` is kept."""
    if not trace.get_current_span().get_span_context().is_valid:
        return headers
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    given = {name.lower() for name in headers}
    return {**{k: v for k, v in carrier.items() if k.lower() not in given}, **headers}
