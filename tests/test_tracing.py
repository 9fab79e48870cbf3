"""Traces (agui.http.tracing): what reaches a collector, sent by the SDK's own OTLP/HTTP exporter
to a receiver this module starts on 127.0.0.1, which decodes each request body as the
ExportTraceServiceRequest it is (opentelemetry-proto).

- a run is one span `invoke_agent {agent}` with the GenAI attributes, agui's run id, outcome and
  event count, parented to the caller's traceparent; the model agent's model requests (`chat
  {model}`, token usage) and server tools (`execute_tool {name}`) are its children, and a span a
  sync tool makes in its thread is the tool's child; durable runs carry all of it too;
- a run that ends in RUN_ERROR (the agent's, the model's, the server's time limit) has error.type
  and the status ERROR; a run stopped on request is cancelled; a client that left, disconnected;
- a span current in the request (an ASGI instrumentation's) is the parent instead of the header;
- HttpAgent sends the current span's context (the client's span is the run's parent), nothing
  without one, and a traceparent the application set is kept;
- `agui serve --otel` configures the SDK from OTEL_* (the endpoint is the receiver), unless the
  application set its own provider, which is used as it is; a bad exporter setting is refused at
  start; `import agui` and an untraced AgentApp load no OpenTelemetry.
"""

from __future__ import annotations

import asyncio
import gzip
import http.server
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import agui
from agui.http import tracing
from agui.http.durable import lost_event
from agui.model import ModelAgent
from agui.model.openai import OpenAIChatModel
from agui.store import StoreUnavailable
from agui.store.memory import MemoryLog

from .conftest import ROOT, live_server, run_input
from .fake_openai import MODEL, FakeOpenAI, Status, reply
from .test_cli_options import loaded_after
from .test_cli_serve import Served

Serve = Callable[[Any], str]

HANG = 30.0
"""A hang bound: how long a test waits for spans that arrive within milliseconds."""
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
INTERNAL, SERVER, CLIENT = 1, 2, 3  # opentelemetry.proto.trace.v1.Span.SpanKind
UNSET, ERROR = 0, 2  # opentelemetry.proto.trace.v1.Status.StatusCode


# ── the receiver ────────────────────────────────────────────────────────────────────────────────


@attrs.frozen
class Span:
    """A span as it arrived, decoded from the OTLP protobuf."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    status: int
    status_message: str
    resource: dict[str, Any]
    scope: str


def _value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, which) if which else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


class Receiver:
    """An OTLP/HTTP trace receiver on 127.0.0.1: `POST /v1/traces` with an
    ExportTraceServiceRequest (protobuf, gzip or not), answered 200 with an empty
    ExportTraceServiceResponse; the spans are kept, decoded."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.paths: list[str] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest.FromString(body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                receiver.add(self.path, request)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, path: str, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        Span(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            attributes=_attributes(span.attributes),
                            status=span.status.code,
                            status_message=span.status.message,
                            resource=resource,
                            scope=scope_spans.scope.name,
                        )
                    )
        with self.changed:
            self.paths.append(path)
            self.spans.extend(spans)
            self.changed.notify_all()

    def wait_for(self, name: str, count: int = 1) -> list[Span]:
        """The spans named `name` once `count` of them arrived."""
        deadline = time.monotonic() + HANG  # hang bound
        with self.changed:
            while True:
                found = [s for s in self.spans if s.name == name]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                assert left > 0, f"{name}: {len(found)} spans arrived; got {self.spans}"
                self.changed.wait(left)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    received = Receiver()
    yield received
    received.close()


@pytest.fixture
def provider(receiver: Receiver) -> Iterator[TracerProvider]:
    """The application's own provider: the SDK's OTLP/HTTP exporter, sending to the receiver."""
    made = TracerProvider(resource=Resource.create({"service.name": "agui-tests"}))
    exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces")
    made.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=20))
    yield made
    made.shutdown()


def post(url: str, body: agui.RunAgentInput, **headers: str) -> list[dict[str, Any]]:
    """POST the run; the events of its answer, as JSON."""
    sent = {"content-type": "application/json", **headers}
    with httpx.stream("POST", url, content=agui.encode(body), headers=sent, timeout=HANG) as r:
        assert r.status_code == 200, r.read()
        decoder = agui.SSEDecoder()
        frames = [f for chunk in r.iter_bytes() for f in decoder.feed(chunk)]
    import orjson

    return [orjson.loads(frame.data) for frame in frames if frame.data]


# ── agents ──────────────────────────────────────────────────────────────────────────────────────


async def echo(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageChunkEvent(message_id="m", delta="hi")


async def broken(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageChunkEvent(message_id="m", delta="hi")
    raise RuntimeError("the agent broke")


async def hung(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id)
    await asyncio.sleep(HANG)  # hang bound: the test ends it sooner
    yield agui.RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id)


def weather_agent(serve: Serve, fake: FakeOpenAI, provider: TracerProvider) -> ModelAgent:
    """A ModelAgent named "forecaster" against the fake OpenAI server, with a sync server tool
    that makes a span of its own (through the application's provider)."""
    inner = provider.get_tracer("tests.tool")

    def weather(city: str) -> str:
        """The weather in a city."""
        with inner.start_as_current_span("lookup"):
            return f"sunny in {city}"

    model = OpenAIChatModel(MODEL, base_url=serve(fake) + "/v1", api_key="sk-test")
    agent = ModelAgent(model, tools=[weather])
    agent.name = "forecaster"  # type: ignore[attr-defined]
    return agent


def weather_fake() -> FakeOpenAI:
    return FakeOpenAI(
        reply(calls=[("call_1", "weather", {"city": "Paris"})], usage=(12, 7)),
        reply("It is sunny in Paris.", usage=(30, 9)),
    )


def check_weather_trace(
    receiver: Receiver, events: list[dict[str, Any]], run_id: str, agent: ModelAgent
) -> None:
    """The trace of one weather run: the run's span under the caller's, the model requests and
    the tool under the run's, the tool's own span under the tool's."""
    model = agent.model
    assert isinstance(model, OpenAIChatModel)
    port = httpx.URL(model.base_url).port
    assert events[-1]["type"] == "RUN_FINISHED"
    (run,) = receiver.wait_for("invoke_agent forecaster")
    chats = receiver.wait_for(f"chat {MODEL}", 2)
    (tool,) = receiver.wait_for("execute_tool weather")
    (lookup,) = receiver.wait_for("lookup")
    assert (run.trace_id, run.parent_id) == (TRACE_ID, PARENT_ID)
    assert run.kind == INTERNAL and run.status == UNSET
    assert run.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "forecaster",
        "gen_ai.provider.name": model.provider,  # the model's (OpenAIChatModel: its host:port)
        "gen_ai.conversation.id": "thread-1",
        "agui.run.id": run_id,
        "agui.run.outcome": "success",
        "agui.run.events": len(events),
    }
    assert run.resource["service.name"] == "agui-tests"  # the application's provider, as it is
    assert run.scope == "agui"
    for span in (*chats, tool):
        assert (span.trace_id, span.parent_id) == (TRACE_ID, run.span_id)
    assert (lookup.trace_id, lookup.parent_id) == (TRACE_ID, tool.span_id)
    first, second = sorted(chats, key=lambda s: s.attributes["gen_ai.usage.input_tokens"])
    assert first.kind == CLIENT
    assert first.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.stream": True,
        "gen_ai.provider.name": model.provider,
        "gen_ai.request.model": MODEL,
        "server.address": "127.0.0.1",
        "server.port": port,
        "gen_ai.response.model": MODEL,
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 7,
    }
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert second.attributes["gen_ai.usage.output_tokens"] == 9
    assert tool.kind == INTERNAL and tool.status == UNSET
    assert tool.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "weather",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "extension",
        "gen_ai.tool.description": "The weather in a city.",
    }


# ── a run's trace ───────────────────────────────────────────────────────────────────────────────


def test_a_run_is_a_span_with_its_model_requests_and_tools_under_the_callers_trace(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    agent = weather_agent(serve, weather_fake(), provider)
    events = post(
        serve(agui.AgentApp(agent, tracing=provider)), run_input(), traceparent=TRACEPARENT
    )
    provider.force_flush()
    check_weather_trace(receiver, events, "run-1", agent)
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}


def test_a_durable_run_carries_the_callers_trace(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    """Detached from its request, the run executes with the request's trace context."""
    agent = weather_agent(serve, weather_fake(), provider)
    app = agui.AgentApp(agent, tracing=provider, store="memory://")
    events = post(serve(app), run_input("run-d"), traceparent=TRACEPARENT)
    provider.force_flush()
    check_weather_trace(receiver, events, "run-d", agent)


def test_a_run_without_a_traceparent_is_a_trace_of_its_own(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    events = post(serve(agui.AgentApp(echo, tracing=provider)), run_input())
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent echo")  # a function's name
    assert run.parent_id == "" and run.trace_id != TRACE_ID
    assert run.attributes["agui.run.events"] == len(events) == 3  # with RUN_STARTED, RUN_FINISHED


def test_a_failed_run_has_error_type_and_status_error(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    events = post(serve(agui.AgentApp(broken, tracing=provider)), run_input())
    provider.force_flush()
    assert events[-1]["type"] == "RUN_ERROR"
    (run,) = receiver.wait_for("invoke_agent broken")
    assert run.status == ERROR
    assert run.attributes["error.type"] == events[-1]["code"] == "AGENT_ERROR"
    assert run.status_message == events[-1]["message"]
    assert run.attributes["agui.run.outcome"] == "error"
    assert run.attributes["agui.run.events"] == len(events)


def test_a_model_failure_is_the_model_requests_error_and_the_runs(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    fake = FakeOpenAI(Status(500, {"error": {"message": "boom", "type": "server_error"}}))
    model = OpenAIChatModel(MODEL, base_url=serve(fake) + "/v1", api_key="sk-test")
    app = agui.AgentApp(ModelAgent(model), tracing=provider)
    events = post(serve(app), run_input(), traceparent=TRACEPARENT)
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent ModelAgent")  # its class's name
    (chat,) = receiver.wait_for(f"chat {MODEL}")
    assert events[-1]["code"] == "MODEL_HTTP_ERROR"
    assert (run.status, run.attributes["error.type"]) == (ERROR, "MODEL_HTTP_ERROR")
    assert (chat.status, chat.attributes["error.type"]) == (ERROR, "MODEL_HTTP_ERROR")
    assert chat.parent_id == run.span_id


def test_a_failing_tool_is_an_error_of_its_span(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    def flaky(city: str) -> str:
        """Always fails."""
        raise LookupError(city)

    fake = FakeOpenAI(reply(calls=[("call_9", "flaky", {"city": "Oslo"})]), reply("Sorry."))
    model = OpenAIChatModel(MODEL, base_url=serve(fake) + "/v1", api_key="sk-test")
    app = agui.AgentApp(ModelAgent(model, tools=[flaky]), tracing=provider)
    events = post(serve(app), run_input())
    provider.force_flush()
    (tool,) = receiver.wait_for("execute_tool flaky")
    (run,) = receiver.wait_for("invoke_agent ModelAgent")
    assert (tool.status, tool.attributes["error.type"]) == (ERROR, "LookupError")
    assert events[-1]["type"] == "RUN_FINISHED"  # the model read the error; the run went on
    assert run.status == UNSET and "error.type" not in run.attributes


@pytest.mark.parametrize("store", [None, "memory://"], ids=["served", "durable"])
def test_a_run_the_server_ends_has_its_code(
    store: str | None, serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    app = agui.AgentApp(hung, tracing=provider, max_run_seconds=0.2, store=store)
    events = post(serve(app), run_input())
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent hung")
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert (run.status, run.attributes["error.type"]) == (ERROR, "TIMEOUT")
    assert run.attributes["agui.run.events"] == 2


def test_a_run_uvicorn_cancels_at_the_end_of_its_window_is_a_shutdown(
    receiver: Receiver, provider: TracerProvider
) -> None:
    """Under a uvicorn that does not tell the app of its shutdown (no signal handlers off the
    main thread), the window's end cancels the request: its RUN_ERROR is the server's."""
    server = live_server(agui.AgentApp(hung, tracing=provider), timeout_graceful_shutdown=0.3)
    url = server.__enter__()
    body, sent = agui.encode(run_input()), {"content-type": "application/json"}
    with httpx.stream("POST", url, content=body, headers=sent, timeout=HANG) as answer:
        lines = answer.iter_lines()
        assert any("RUN_STARTED" in line for line in lines)
        server.__exit__(None, None, None)
        assert any("SERVER_SHUTDOWN" in line for line in lines)
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent hung")
    assert (run.status, run.attributes["error.type"]) == (ERROR, "SERVER_SHUTDOWN")
    assert run.attributes["agui.run.events"] == 2


class FailingLog(MemoryLog):
    """memory:// whose appends fail after the first `good`: a store that went away mid-run."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good

    async def append(self, run_id: str, events: Any, *, final: bool = False) -> list[str]:
        self.good -= 1
        if self.good < 0:
            raise StoreUnavailable("the store went away")
        return await super().append(run_id, events, final=final)


async def paced(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    for _ in range(50):
        yield agui.TextMessageChunkEvent(message_id="m", delta="hi ")
        await asyncio.sleep(0.01)


def test_a_durable_run_whose_store_fails_has_store_error(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    app = agui.AgentApp(paced, tracing=provider, store=FailingLog(good=3))
    events = post(serve(app), run_input())
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent paced")
    assert events[-1]["code"] == "STORE_ERROR"
    assert (run.status, run.attributes["error.type"]) == (ERROR, "STORE_ERROR")


def test_a_durable_run_closed_elsewhere_is_abandoned(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    """Another worker closed the run in the log (its sweep took it for lost): this worker can no
    longer write it, and its span says so."""
    app: agui.AgentApp

    async def overtaken(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageChunkEvent(message_id="m", delta="hi")
        await asyncio.sleep(0.2)  # the writer appends what came
        assert app.store is not None
        await app.store.append(run.run_id, [lost_event()], final=True)  # as the other worker
        for _ in range(5):
            await asyncio.sleep(0.05)
            yield agui.TextMessageChunkEvent(message_id="m", delta=" more")

    app = agui.AgentApp(overtaken, tracing=provider, store="memory://")
    events = post(serve(app), run_input(), **{"agui-resume": "1"})  # not stopped when it ends
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent overtaken")
    assert events[-1]["code"] == "RUN_LOST"  # what the log holds
    assert run.attributes["agui.run.outcome"] == "abandoned"
    assert (run.status, run.attributes["error.type"]) == (ERROR, "abandoned")


def test_a_durable_run_stopped_on_request_is_cancelled(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    url = serve(agui.AgentApp(hung, tracing=provider, store="memory://"))
    sent = {"content-type": "application/json", "agui-resume": "1"}
    body = agui.encode(run_input("run-s"))
    with httpx.stream("POST", url, content=body, headers=sent, timeout=HANG) as answer:
        lines = answer.iter_lines()
        assert any("RUN_STARTED" in line for line in lines)
        assert httpx.post(f"{url}/runs/run-s/stop", timeout=HANG).status_code == 202
        assert any("RUN_FINISHED" in line for line in lines)
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent hung")
    assert run.attributes["agui.run.outcome"] == "cancelled" and run.status == UNSET
    assert run.attributes["agui.run.events"] == 2


def test_a_client_leaving_is_a_disconnected_run(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    url = serve(agui.AgentApp(hung, tracing=provider))
    body = agui.encode(run_input())
    sent = {"content-type": "application/json"}
    with httpx.stream("POST", url, content=body, headers=sent, timeout=HANG) as answer:
        assert any("RUN_STARTED" in line for line in answer.iter_lines())
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent hung")
    assert run.attributes["agui.run.outcome"] == "disconnected" and run.status == UNSET


def test_the_span_current_in_the_request_is_the_parent(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    """An ASGI instrumentation's server span (here a middleware of the test's) is the run's
    parent: it already continues the caller's trace."""
    app = agui.AgentApp(echo, tracing=provider)
    tracer = provider.get_tracer("tests.asgi")

    async def instrumented(scope: Any, receive: Any, send: Any) -> None:
        with tracer.start_as_current_span("POST /", kind=trace.SpanKind.SERVER):
            await app(scope, receive, send)

    post(serve(instrumented), run_input(), traceparent=TRACEPARENT)
    provider.force_flush()
    (server,) = receiver.wait_for("POST /")
    (run,) = receiver.wait_for("invoke_agent echo")
    assert run.parent_id == server.span_id and server.parent_id == ""


# ── the client side ─────────────────────────────────────────────────────────────────────────────


def test_httpagent_sends_the_current_span_as_the_runs_parent(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    url = serve(agui.AgentApp(echo, tracing=provider))
    tracer = provider.get_tracer("tests.client")

    async def call() -> None:
        with tracer.start_as_current_span("caller"):
            async with agui.HttpAgent(url) as agent:
                assert [e async for e in agent.run(run_input("run-a"))]
        with tracer.start_as_current_span("sync caller"):
            with agui.HttpAgent(url) as agent:
                assert list(agent.run_sync(run_input("run-b")))
        async with agui.HttpAgent(url) as agent:  # no span current: nothing sent
            assert [e async for e in agent.run(run_input("run-c"))]

    asyncio.run(call())
    provider.force_flush()
    (caller,) = receiver.wait_for("caller")
    (sync_caller,) = receiver.wait_for("sync caller")
    runs = {s.attributes["agui.run.id"]: s for s in receiver.wait_for("invoke_agent echo", 3)}
    assert (runs["run-a"].trace_id, runs["run-a"].parent_id) == (caller.trace_id, caller.span_id)
    assert runs["run-b"].parent_id == sync_caller.span_id
    assert runs["run-c"].parent_id == ""


def test_a_traceparent_the_application_sets_is_kept(
    serve: Serve, receiver: Receiver, provider: TracerProvider
) -> None:
    url = serve(agui.AgentApp(echo, tracing=provider))
    tracer = provider.get_tracer("tests.client")

    async def call() -> None:
        with tracer.start_as_current_span("caller"):
            async with agui.HttpAgent(url, headers={"Traceparent": TRACEPARENT}) as agent:
                assert [e async for e in agent.run(run_input())]

    asyncio.run(call())
    provider.force_flush()
    (run,) = receiver.wait_for("invoke_agent echo")
    assert (run.trace_id, run.parent_id) == (TRACE_ID, PARENT_ID)


# ── agui serve --otel ───────────────────────────────────────────────────────────────────────────

OWN_PROVIDER = """
import os

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import agui

provider = TracerProvider(resource=Resource.create({"service.name": "own-provider"}))
exporter = OTLPSpanExporter(endpoint=os.environ["TEST_RECEIVER"] + "/v1/traces")
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)


async def echo(run):
    yield agui.TextMessageChunkEvent(message_id="m", delta="hi")
"""


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    """The environment of an `agui serve --otel` exporting to the receiver (quickly)."""
    for name in list(os.environ):
        if name.startswith("OTEL_") or name.startswith("AGUI_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "served")


@pytest.mark.parametrize("switch", [["--otel"], []], ids=["option", "variable"])
def test_agui_serve_otel_exports_to_the_environments_collector(
    switch: list[str], otel_env: None, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not switch:
        monkeypatch.setenv("AGUI_OTEL", "1")
    served = Served("tests.test_tracing:echo", "--port", "0", *switch, cwd=ROOT)
    try:
        url = served.url()
        events = post(url, run_input(), traceparent=TRACEPARENT)
        (run,) = receiver.wait_for("invoke_agent echo")
    finally:
        served.stop()
    assert (run.trace_id, run.parent_id) == (TRACE_ID, PARENT_ID)
    assert run.resource["service.name"] == "served"
    assert run.attributes["agui.run.events"] == len(events)


def test_agui_serve_otel_sends_what_is_queued_when_it_stops(
    otel_env: None, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")  # nothing is sent before the exit
    served = Served("tests.test_tracing:echo", "--port", "0", "--otel", cwd=ROOT)
    try:
        post(served.url(), run_input())
        time.sleep(0.5)  # what a batch would have sent by now (nothing is)
        assert not receiver.spans
    finally:
        served.stop()
    assert served.proc.returncode is not None  # it exited (130: after SIGINT)
    (run,) = receiver.wait_for("invoke_agent echo")
    assert run.attributes["agui.run.outcome"] == "success"


def test_agui_serve_otel_uses_the_applications_own_provider(
    otel_env: None, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The module set a provider: it is used as it is (the environment would print spans)."""
    (tmp_path / "own_provider.py").write_text(OWN_PROVIDER)
    monkeypatch.setenv("TEST_RECEIVER", receiver.url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nothing there
    served = Served(
        "own_provider:echo", "--port", "0", "--otel", "--app-dir", str(tmp_path), cwd=ROOT
    )
    try:
        post(served.url(), run_input(), traceparent=TRACEPARENT)
        (run,) = receiver.wait_for("invoke_agent echo")
    finally:
        served.stop()
    assert run.resource["service.name"] == "own-provider"
    assert run.parent_id == PARENT_ID


def test_a_bad_exporter_setting_is_refused_at_start(
    otel_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agui.cli.main import main

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "nosuch")
    assert main(["serve", "tests.test_tracing:echo", "--otel"]) == 2
    error = capsys.readouterr().err
    assert "--otel: OTEL_TRACES_EXPORTER=nosuch: no span exporter of that name" in error
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    monkeypatch.setenv("AGUI_OTEL", "1")
    assert main(["serve", "tests.test_tracing:echo"]) == 2
    assert "AGUI_OTEL: OTEL_EXPORTER_OTLP_PROTOCOL=http/json" in capsys.readouterr().err


def test_an_app_whose_environment_is_refused_serves_untraced(
    otel_env: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    serve: Serve,
) -> None:
    """AgentApp(tracing=True) outside agui serve: a bad exporter setting is logged once, at the
    first run; the runs are served, untraced, and no provider is set."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "nosuch")
    url = serve(agui.AgentApp(echo, tracing=True))
    for run_id in ("run-1", "run-2"):
        assert post(url, run_input(run_id))[-1]["type"] == "RUN_FINISHED"
    refused = [r for r in caplog.records if r.name == "agui.tracing"]
    assert [r.getMessage() for r in refused] == [
        "tracing is off: OTEL_TRACES_EXPORTER=nosuch: no span exporter of that name is installed "
        "(otlp, console, none, or an exporter package's name)"
    ]
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_the_environment_names_the_exporters() -> None:
    """OTEL_TRACES_EXPORTER (default otlp, over http/protobuf), none, console, a list."""
    classes = tracing._exporter_classes
    assert classes({}) == [OTLPSpanExporter]
    assert classes({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}) == [OTLPSpanExporter]
    assert classes({"OTEL_TRACES_EXPORTER": "none"}) == []
    assert classes({"OTEL_TRACES_EXPORTER": "otlp,none"}) == []
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    both = classes({"OTEL_TRACES_EXPORTER": "otlp, console"})
    assert both == [OTLPSpanExporter, ConsoleSpanExporter]
    with pytest.raises(ValueError, match="grpc needs the gRPC exporter"):
        classes({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


# ── tracing off ─────────────────────────────────────────────────────────────────────────────────


def test_untraced_serving_and_calling_load_no_opentelemetry() -> None:
    code = (
        "import asyncio\nimport agui\nfrom agui.model import ModelAgent\n"
        "from agui.model.scripted import ScriptedModel, say\n"
        "app = agui.AgentApp(ModelAgent(ScriptedModel([say('hi')])), store='memory://')\n"
        "agui.HttpAgent('http://127.0.0.1:9')\n"
    )
    loaded = loaded_after(code)
    assert "agui.http.server" in loaded
    assert not [m for m in loaded if m.split(".")[0] == "opentelemetry"]
    assert "agui.http.tracing" not in loaded


def test_tracing_needs_opentelemetry_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delitem(sys.modules, "agui.http.tracing")
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'agui-spec\[otel\]'"):
        agui.AgentApp(echo, tracing=True)
