"""Transport benchmark: a 100,000-event run over uvicorn and loopback, agui against the official SDK.

Usage: ``python benchmarks/transport.py [--rounds N] [--quick] [--events N] [--metrics] [--profile]``
(``nox -s bench`` runs it after the codec benchmarks), and ``python benchmarks/transport.py --client
[--rounds N] [--events N] [--client-server agui|per-send]`` for the client side (below);
``--profile-client agui|per-send`` profiles ``Conversation.run`` (cProfile) reading the run.

Two servers, each under uvicorn on 127.0.0.1 in its own subprocess, stream the same run: RUN_STARTED,
TEXT_MESSAGE_START, token-sized TEXT_MESSAGE_CONTENT deltas, TEXT_MESSAGE_END, RUN_FINISHED. The
agent builds every event as it goes (generation cost is part of serving, as in real life).

- agui: ``agui.AgentApp(agent)`` with its default keep-alive, the events built as agui models.
- official: what ag-ui-protocol 1.0.0 documents: a FastAPI POST endpoint that parses ``RunAgentInput``
  and returns ``StreamingResponse(gen(), media_type=encoder.get_content_type())``, ``gen`` yielding
  ``EventEncoder().encode(event)`` for ag_ui.core models.

This process is the client. First a gate: one run from each server, read with agui's ``HttpAgent``
in strict mode, must deliver exactly the expected events (RUN_STARTED first, RUN_FINISHED last,
the deltas joining to the expected text), or nothing is timed. Then interleaved rounds (the order
of the servers flips every round); in a round each server is measured twice:

- server side: the response is read raw (bytes and frame separators counted, nothing decoded), so
  the client takes as little CPU as possible; events/s = events / (time of last byte - time of
  request). The server's CPU time for the request (from /proc) is reported per event.
- client side: the run is read with ``agui.HttpAgent(url).run(input)``, which decodes every event
  into a model; events/s = events decoded / (time the last event was decoded - time of request).
  The client's CPU time per event is reported too.

Each figure is the median over rounds. Server and client are separate processes but share this
machine's cores, which the output states. The target (agui serving at least 3x the official
throughput) is marked PASS/FAIL; the exit status is 0 either way, because a benchmark reports and
does not gate. Results also go to ``.bench/transport.json``.

``--profile`` instead runs the agui server under cProfile for a few requests and prints where its
time goes.

``--client`` measures the client side: the run (of ``--events`` events, and of a tenth of that, to
show the rate does not depend on the run's length) from two servers, ``AgentApp`` (which coalesces
queued frames into writes of up to 64 KiB: ~300 body chunks per 100,000 events) and ``per-send``, a
raw ASGI app that sends ONE event per ``http.response.body`` (one HTTP chunk per event, as a
model's token stream flushed token by token arrives), each read four ways, the readers' order
rotating round by round and the servers' alternating: ``raw`` (aiter_raw, frames counted: the
ceiling of any client), ``peer`` (httpx ``aiter_lines`` + pydantic ``TypeAdapter(ag_ui.core.Event)
.validate_json`` per data line: what a user of the official Python SDK, which has no client,
writes), ``HttpAgent`` (``HttpAgent.run``, every event decoded) and ``Conversation``
(``Conversation().run(HttpAgent(url))``: decoded, verified, applied to the messages). It reports
medians with [min-max] over the rounds, the client's CPU per event, and Conversation / peer paired
round by round; results go to ``.bench/transport_client.json``.
"""

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Any

import httpx
import orjson
from common import RESULTS_DIR, serve_on_loopback, spawn_server, stop_process, write_results

try:
    import agui
except ImportError as exc:  # pragma: no cover - depends on the checkout
    raise SystemExit(f"benchmarks: cannot import agui ({exc}); install the package first") from exc

RESULTS = RESULTS_DIR / "transport.json"
CASES = ("agui", "era", "official", "node")
"""The servers compared: agui's AgentApp on the 1.0 path (a request declaring protocolVersion
"1.0"), the same app answering a request without protocolVersion (served through the 0.0.35
era's translation, agui.wire.eras), the official FastAPI + EventEncoder path, and the Node peer
(node:http + @ag-ui/encoder 1.0.0). `--metrics` and `--tracing` add the app with that on."""
EXTRA_CASES = ("metrics", "tracing")
TARGET = 3.0  # agui against the official path, events/s
TARGET_NODE = 1.5  # agui against Node, server CPU per event
TARGET_ERA = 1.10  # the era path's CPU per event against the 1.0 path's, at most
TARGET_OBSERVED = 1.05  # metrics or tracing on against off, CPU per event, at most
PATH = "/agent"
THREAD_ID = "thread-bench"
RUN_ID = "run-bench"
MESSAGE_ID = "msg-bench"
ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / ".crosscheck"  # where `nox -s bench` installs tests/crosscheck's packages
NODE_SERVER = Path(__file__).resolve().parent / "transport_node.mjs"

# Token-sized deltas, as a model streams them: a leading space and a short word, some punctuation.
TOKENS = tuple(
    " " + word
    for word in (
        "The quick brown fox jumps over the lazy dog, and then it runs back to the river where"
        " the water is cold . It is a fine day for a long walk ; isn't it ?"
    ).split()
)


def delta(i: int) -> str:
    return TOKENS[i % len(TOKENS)]


def request_body(protocol_version: str | None = None) -> bytes:
    """The POST body: a RunAgentInput, declaring `protocol_version` when given (a 0.0.x client
    declares none)."""
    body: dict[str, Any] = {
        "threadId": THREAD_ID,
        "runId": RUN_ID,
        "state": {},
        "messages": [{"id": "user-1", "role": "user", "content": "Tell me a long story."}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    if protocol_version is not None:
        body["protocolVersion"] = protocol_version
    return orjson.dumps(body)


def case_body(case: str) -> bytes:
    """The request of a case: without protocolVersion for the era case, "1.0" for the others."""
    return request_body(None if case == "era" else "1.0")


# ── the two servers (run in a subprocess: `transport.py --serve agui|official`) ──────────────


def agui_app(
    events: int,
    keepalive: float | None = 15.0,
    store: Any = None,
    metrics: bool | None = None,
    tracing: bool = False,
) -> Any:
    """AgentApp over the benchmark's agent (durable.py's too, with a store); a run's event count
    is `forwardedProps.events` when given (durable.py's warm-up and big runs), else `events`.
    metrics None: on when AGUI_BENCH_METRICS=1 (durable.py's servers inherit it)."""
    from agui import (
        RunAgentInput,
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageRole,
        TextMessageStartEvent,
    )

    async def agent(input: RunAgentInput) -> AsyncIterator[Any]:
        props = input.forwarded_props
        count = props.get("events", events) if isinstance(props, dict) else events
        yield RunStartedEvent(thread_id=input.thread_id, run_id=input.run_id)
        yield TextMessageStartEvent(message_id=MESSAGE_ID, role=TextMessageRole.ASSISTANT)
        for i in range(count - 4):
            yield TextMessageContentEvent(message_id=MESSAGE_ID, delta=delta(i))
        yield TextMessageEndEvent(message_id=MESSAGE_ID)
        yield RunFinishedEvent(thread_id=input.thread_id, run_id=input.run_id)

    if metrics is None:
        metrics = os.environ.get("AGUI_BENCH_METRICS") == "1"
    return agui.AgentApp(
        agent, path=PATH, keepalive=keepalive, store=store, metrics=metrics, tracing=tracing
    )


def official_app(events: int) -> Any:
    from ag_ui.core import (
        EventType,
        RunAgentInput,
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
    )
    from ag_ui.encoder import EventEncoder
    from fastapi import FastAPI, Request
    from fastapi.responses import StreamingResponse

    app = FastAPI()

    @app.post(PATH)
    async def agentic_chat_endpoint(input_data: RunAgentInput, request: Request) -> Any:
        encoder = EventEncoder(accept=request.headers.get("accept"))

        async def event_generator() -> AsyncIterator[str]:
            yield encoder.encode(
                RunStartedEvent(
                    type=EventType.RUN_STARTED,
                    thread_id=input_data.thread_id,
                    run_id=input_data.run_id,
                )
            )
            yield encoder.encode(
                TextMessageStartEvent(
                    type=EventType.TEXT_MESSAGE_START, message_id=MESSAGE_ID, role="assistant"
                )
            )
            for i in range(events - 4):
                yield encoder.encode(
                    TextMessageContentEvent(
                        type=EventType.TEXT_MESSAGE_CONTENT, message_id=MESSAGE_ID, delta=delta(i)
                    )
                )
            yield encoder.encode(
                TextMessageEndEvent(type=EventType.TEXT_MESSAGE_END, message_id=MESSAGE_ID)
            )
            yield encoder.encode(
                RunFinishedEvent(
                    type=EventType.RUN_FINISHED,
                    thread_id=input_data.thread_id,
                    run_id=input_data.run_id,
                )
            )

        return StreamingResponse(event_generator(), media_type=encoder.get_content_type())

    return app


def per_send_app(events: int) -> Any:
    """A raw ASGI app that streams the same run with ONE event per `http.response.body` send (each
    a chunk of its own on the wire), as an agent flushing a model's tokens one at a time does;
    every frame is built with agui's encoder as it goes. The run's length is
    `forwardedProps.events` when given, else `events`."""
    from agui import (
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageRole,
        TextMessageStartEvent,
    )
    from agui.wire.sse import sse_frame

    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = orjson.loads(body)
        props = request.get("forwardedProps")
        count = props.get("events", events) if isinstance(props, dict) else events
        thread_id, run_id = request["threadId"], request["runId"]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

        async def one(event: Any) -> None:
            await send({"type": "http.response.body", "body": sse_frame(event), "more_body": True})

        await one(RunStartedEvent(thread_id=thread_id, run_id=run_id))
        await one(TextMessageStartEvent(message_id=MESSAGE_ID, role=TextMessageRole.ASSISTANT))
        for i in range(count - 4):
            await one(TextMessageContentEvent(message_id=MESSAGE_ID, delta=delta(i)))
        await one(TextMessageEndEvent(message_id=MESSAGE_ID))
        await one(RunFinishedEvent(thread_id=thread_id, run_id=run_id))
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


def serve(kind: str, events: int, keepalive: float | None, profile: str | None) -> None:
    """The server subprocess: bind a free loopback port, print it, serve until SIGINT/SIGTERM."""

    if kind == "official":
        app = official_app(events)
    elif kind == "per-send":
        app = per_send_app(events)
    else:  # agui, era (the same app: the request differs), metrics, tracing
        app = agui_app(events, keepalive, metrics=kind == "metrics", tracing=kind == "tracing")
    serve_on_loopback(app, profile)


def cpu_seconds(pid: int) -> float | None:
    """CPU time of a process so far, all its threads (Linux /proc): from schedstat in
    nanoseconds, else from stat in clock ticks (10 ms), else None."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """One server subprocess; its port and its CPU time."""

    def __init__(
        self, kind: str, events: int, keepalive: float | None, profile: str | None = None
    ) -> None:
        if kind == "node":
            script = NODE_MODULES / NODE_SERVER.name  # beside its node_modules, to import them
            shutil.copy(NODE_SERVER, script)
            self._start(kind, ["node", str(script), "--events", str(events)])
            return
        argv = [sys.executable, __file__, "--serve", kind, "--events", str(events)]
        argv += ["--keepalive", "none" if keepalive is None else str(keepalive)]
        if profile is not None:
            argv += ["--profile-to", profile]
        env = None
        if kind == "tracing":  # the SDK configured from the environment, exporting nowhere
            env = {**os.environ, "OTEL_TRACES_EXPORTER": "none"}
        self._start(kind, argv, env)

    def _start(self, kind: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Start `argv`, a server that prints its port on its first line."""
        self.kind = kind
        self.proc, port = spawn_server(argv, f"the {kind} server", env)
        self.base = f"http://127.0.0.1:{port}"
        self.url = self.base + PATH

    def cpu_seconds(self) -> float | None:
        return cpu_seconds(self.proc.pid)

    async def ready(self, client: httpx.AsyncClient) -> None:
        deadline = time.monotonic() + 20
        while True:
            try:
                await client.get(self.url)  # 405: the server answers
                return
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit(
                        f"benchmarks: the {self.kind} server is not answering"
                    ) from None
                await asyncio.sleep(0.05)

    def stop(self) -> None:
        stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# ── the client ───────────────────────────────────────────────────────────────────────────────


@dataclass
class Sample:
    events: int
    seconds: float  # request sent -> last byte (raw) or last event decoded (HttpAgent)
    first_s: float  # request sent -> first byte (raw) or first event decoded (HttpAgent)
    server_cpu_s: float | None
    client_cpu_s: float
    reads: int = 0  # body chunks the client's HTTP stack handed over (raw read only)

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def _cpu_delta(server: Server, before: float | None) -> float | None:
    after = server.cpu_seconds()
    return None if before is None or after is None else after - before


async def read_raw(client: httpx.AsyncClient, server: Server, body: bytes) -> Sample:
    """Read the response without decoding: count the frame separators, time the last byte."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    cpu0, ccpu0 = server.cpu_seconds(), time.process_time()
    t0 = time.perf_counter()
    first = 0.0
    frames = reads = 0
    tail = b""
    async with client.stream("POST", server.url, content=body, headers=headers) as response:
        if response.status_code != 200:
            raise SystemExit(f"benchmarks: {server.kind} answered {response.status_code}")
        async for chunk in response.aiter_raw():
            if not first:
                first = time.perf_counter()
            reads += 1
            frames += chunk.count(b"\n\n") + (tail == b"\n" and chunk[:1] == b"\n")
            tail = chunk[-1:]
    end = time.perf_counter()
    return Sample(
        frames, end - t0, first - t0, _cpu_delta(server, cpu0), time.process_time() - ccpu0, reads
    )


async def read_agent(
    client: httpx.AsyncClient, server: Server, run_input: Any, strict: bool = False
) -> tuple[Sample, list[Any] | None]:
    """Read the run with agui.HttpAgent, decoding every event; keep them when strict (the gate)."""
    agent = agui.HttpAgent(server.url, client=client, strict=strict)
    kept: list[Any] | None = [] if strict else None
    cpu0, ccpu0 = server.cpu_seconds(), time.process_time()
    t0 = time.perf_counter()
    first = 0.0
    count = 0
    async for event in agent.run(run_input):
        if not count:
            first = time.perf_counter()
        count += 1
        if kept is not None:
            kept.append(event)
    end = time.perf_counter()
    sample = Sample(
        count, end - t0, first - t0, _cpu_delta(server, cpu0), time.process_time() - ccpu0
    )
    return sample, kept


def check_run(kind: str, events: list[Any], expected: int) -> list[str]:
    """What is wrong with a run's events (empty: it is the run both servers should stream)."""
    problems = []
    if len(events) != expected:
        problems.append(f"{len(events)} events, expected {expected}")
    if not events or type(events[0]) is not agui.RunStartedEvent:
        problems.append("the first event is not RUN_STARTED")
    if not events or type(events[-1]) is not agui.RunFinishedEvent:
        problems.append("the last event is not RUN_FINISHED")
    if len(events) >= 2 and type(events[1]) is not agui.TextMessageStartEvent:
        problems.append("the second event is not TEXT_MESSAGE_START")
    if len(events) >= 2 and type(events[-2]) is not agui.TextMessageEndEvent:
        problems.append("the last but one event is not TEXT_MESSAGE_END")
    content = events[2:-2]
    if any(type(e) is not agui.TextMessageContentEvent for e in content):
        problems.append("an event between start and end is not TEXT_MESSAGE_CONTENT")
    elif "".join(e.delta for e in content) != "".join(delta(i) for i in range(expected - 4)):
        problems.append("the deltas do not join to the expected text")
    return [f"{kind}: {p}" for p in problems]


# ── the measurement ──────────────────────────────────────────────────────────────────────────


@dataclass
class Result:
    server_rate: float
    client_rate: float
    server_first_ms: float
    client_first_ms: float
    server_cpu_us: float | None  # server CPU per event (raw read)
    client_cpu_us: float  # client CPU per event (HttpAgent)
    reads: float  # body chunks per response (raw read)
    server_rates: list[float]
    client_rates: list[float]
    server_cpu_us_rounds: list[float]  # server CPU per event, round by round (raw read)


def summarise(raw: list[Sample], decoded: list[Sample]) -> Result:
    med = statistics.median
    cpus = [s.server_cpu_s / s.events * 1e6 for s in raw if s.server_cpu_s is not None]
    return Result(
        server_rate=med(s.rate for s in raw),
        client_rate=med(s.rate for s in decoded),
        server_first_ms=med(s.first_s for s in raw) * 1e3,
        client_first_ms=med(s.first_s for s in decoded) * 1e3,
        server_cpu_us=med(cpus) if cpus else None,
        client_cpu_us=med(s.client_cpu_s / s.events for s in decoded) * 1e6,
        reads=med(s.reads for s in raw),
        server_rates=[round(s.rate) for s in raw],
        client_rates=[round(s.rate) for s in decoded],
        server_cpu_us_rounds=[round(c, 3) for c in cpus],
    )


def node_missing() -> str | None:
    """Why the Node peer cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (NODE_MODULES / "node_modules" / "@ag-ui" / "encoder").is_dir():
        return (
            "@ag-ui/encoder is not installed in .crosscheck/: copy tests/crosscheck/package*.json "
            "there and run `npm ci --prefix .crosscheck` (`nox -s bench` does)"
        )
    return None


async def measure(
    cases: Sequence[str],
    events: int,
    rounds: int,
    keepalive: float | None,
    say: Callable[[str], None],
) -> dict[str, Result]:
    bodies = {case: case_body(case) for case in cases}
    inputs = {case: agui.decode(bodies[case], agui.RunAgentInput, strict=True) for case in cases}
    servers: dict[str, Server] = {}
    limits = httpx.Limits(max_connections=1)
    timeout = httpx.Timeout(120.0, connect=10.0)
    clients = {case: httpx.AsyncClient(limits=limits, timeout=timeout) for case in cases}
    try:
        for case in cases:
            servers[case] = Server(case, events, keepalive)
        for case in cases:
            await servers[case].ready(clients[case])
        problems: list[str] = []
        for case in cases:  # the gate, which also warms every server and connection
            server, client = servers[case], clients[case]
            try:
                _, kept = await read_agent(client, server, inputs[case], strict=True)
            except (agui.StreamError, agui.HttpError) as exc:
                problems.append(f"{case}: {exc}")
                continue
            assert kept is not None
            problems += check_run(case, kept, events)
            raw = await read_raw(client, server, bodies[case])
            if raw.events != events:
                problems.append(f"{case}: {raw.events} SSE frames on a raw read, expected {events}")
        if problems:
            raise SystemExit(
                "benchmarks: the runs are not correct, nothing timed:\n  " + "\n  ".join(problems)
            )
        say(f"gate: every server streamed exactly {events:,} events, all decoded (strict)")
        raw_samples: dict[str, list[Sample]] = {k: [] for k in cases}
        decoded_samples: dict[str, list[Sample]] = {k: [] for k in cases}
        for r in range(rounds):
            # the order rotates every round, and is reversed every other round
            order = list(cases[r % len(cases) :]) + list(cases[: r % len(cases)])
            if r % 2:
                order.reverse()
            for case in order:
                server, client = servers[case], clients[case]
                raw = await read_raw(client, server, bodies[case])
                decoded, _ = await read_agent(client, server, inputs[case])
                for sample in (raw, decoded):
                    if sample.events != events:
                        raise SystemExit(f"benchmarks: {case} sent {sample.events} events")
                raw_samples[case].append(raw)
                decoded_samples[case].append(decoded)
            say(
                f"round {r + 1}/{rounds}: "
                + "  ".join(
                    f"{k} {raw_samples[k][-1].rate:,.0f} ev/s {_us(raw_samples[k][-1]):.2f} µs"
                    for k in cases
                )
            )
        return {k: summarise(raw_samples[k], decoded_samples[k]) for k in cases}
    finally:
        for client in clients.values():
            await client.aclose()
        for server in servers.values():
            server.stop()


def _us(sample: Sample) -> float:
    """A raw read's server CPU per event, µs (nan when /proc could not say)."""
    if sample.server_cpu_s is None:
        return float("nan")
    return sample.server_cpu_s / sample.events * 1e6


LABELS = {
    "agui": "agui, 1.0 path",
    "era": "agui, era path (no protocolVersion)",
    "official": "official (FastAPI + EventEncoder)",
    "node": "node:http + @ag-ui/encoder",
    "metrics": "agui, 1.0 path, metrics=True",
    "tracing": "agui, 1.0 path, tracing=True",
}


@dataclass
class Ratio:
    """Per-round ratios of two cases (paired round by round): their median and range."""

    name: str
    values: list[float]
    target: float | None = None
    at_most: bool = False  # the target is a ceiling, not a floor

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.median <= self.target if self.at_most else self.median >= self.target

    def cell(self) -> str:
        text = f"{self.median:.2f}x ({min(self.values):.2f}-{max(self.values):.2f}x)"
        if self.target is None:
            return text
        sign = "<=" if self.at_most else ">="
        return f"{text}  {'PASS' if self.met else 'FAIL'} (target {sign} {self.target:g}x)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.name,
            "median": self.median,
            "min": min(self.values),
            "max": max(self.values),
            "rounds": [round(v, 3) for v in self.values],
            "target": self.target,
            "at_most": self.at_most,
            "met": self.met,
        }


def ratios(results: dict[str, Result]) -> list[Ratio]:
    """The ratios the targets are about, each paired round by round."""

    def pair(a: list[float], b: list[float]) -> list[float]:
        return [x / y for x, y in zip(a, b, strict=True)]

    out: list[Ratio] = []
    a = results["agui"]
    o = results.get("official")
    if o is not None:
        out.append(Ratio("events/s: agui / official", pair(a.server_rates, o.server_rates), TARGET))
        out.append(Ratio("client events/s: agui / official", pair(a.client_rates, o.client_rates)))
        if a.server_cpu_us_rounds and o.server_cpu_us_rounds:
            cpu = pair(o.server_cpu_us_rounds, a.server_cpu_us_rounds)
            out.append(Ratio("server CPU/event: official / agui", cpu))
    n = results.get("node")
    if n is not None and a.server_cpu_us_rounds and n.server_cpu_us_rounds:
        cpu = pair(n.server_cpu_us_rounds, a.server_cpu_us_rounds)
        out.append(Ratio("server CPU/event: node / agui", cpu, TARGET_NODE))
        out.append(Ratio("events/s: agui / node", pair(a.server_rates, n.server_rates)))
    for case, target in (
        ("era", TARGET_ERA),
        ("metrics", TARGET_OBSERVED),
        ("tracing", TARGET_OBSERVED),
    ):
        c = results.get(case)
        if c is not None and a.server_cpu_us_rounds and c.server_cpu_us_rounds:
            cpu = pair(c.server_cpu_us_rounds, a.server_cpu_us_rounds)
            out.append(Ratio(f"server CPU/event: {case} / agui", cpu, target, at_most=True))
    return out


def report(
    results: dict[str, Result], events: int, rounds: int, keepalive: float | None, load: float
) -> str:
    def fmt(value: float | None, spec: str) -> str:
        return "n/a" if value is None else format(value, spec)

    def spread(values: list[float]) -> str:
        return f"{min(values):.2f}-{max(values):.2f}" if values else "n/a"

    head = f"{'':<38}{'events/s':>10}{'CPU µs/ev':>11}{'(range)':>12}{'HttpAgent ev/s':>16}"
    head += f"{'chunks':>8}{'1st byte ms':>13}"
    lines = [
        f"Transport: one {events:,}-event run, POST -> server -> 127.0.0.1 -> client; "
        f"median of {rounds} interleaved rounds",
        f"Servers and client are separate processes sharing the {os.cpu_count()} CPU cores "
        "of this machine (they compete for them).",
        "",
        head,
    ]
    for case, r in results.items():
        lines.append(
            f"{LABELS[case]:<38}{r.server_rate:>10,.0f}{fmt(r.server_cpu_us, '.2f'):>11}"
            f"{spread(r.server_cpu_us_rounds):>12}{r.client_rate:>16,.0f}{r.reads:>8,.0f}"
            f"{r.server_first_ms:>13.2f}"
        )
    lines += ["", "Ratios, paired round by round: median (range over rounds)"]
    for ratio in ratios(results):
        lines.append(f"  {ratio.name:<40}{ratio.cell()}")
    lines += [
        "",
        "events/s = events / (last byte - request sent), the client only counting frames (raw);",
        "server CPU per event: the server process's CPU time for the raw read (/proc), all threads;",
        "HttpAgent ev/s = events / (last event decoded into a model - request sent).",
        "The client's CPU per event depends on the server's writes: one HTTP chunk per event costs",
        "the client's HTTP stack far more than a few large ones (see the chunks column).",
        f"Load average when the benchmark started: {load:.2f} (other processes add noise).",
        f"agui: AgentApp(agent, keepalive={keepalive!r}); official: FastAPI StreamingResponse"
        " + ag_ui.encoder.EventEncoder; node: node:http, res.write(EventEncoder.encode(event)).",
        "Every agent builds every event as it goes.",
        f"uvicorn {_version('uvicorn')} (http: {_http_impl()}, loop: {_loop_impl()}), "
        f"fastapi {_version('fastapi')}, starlette {_version('starlette')}, "
        f"ag-ui-protocol {_version('ag-ui-protocol')}, httpx {_version('httpx')}, "
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}"
        + (f", node {_node_version()}" if "node" in results else "")
        + ".",
    ]
    for case, r in results.items():
        lines.append(
            f"per-round {case}: events/s {r.server_rates}  CPU µs/ev {r.server_cpu_us_rounds}"
        )
    return "\n".join(lines)


def _node_version() -> str:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def _http_impl() -> str:
    return "httptools" if util.find_spec("httptools") else "h11"


def _loop_impl() -> str:
    return "uvloop" if util.find_spec("uvloop") else "asyncio"


# ── profiling the agui server ────────────────────────────────────────────────────────────────


async def _profile_requests(server: Server, requests: int, body: bytes) -> list[Sample]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=10.0)) as client:
        await server.ready(client)
        return [await read_raw(client, server, body) for _ in range(requests)]


def profile(case: str, events: int, keepalive: float | None, requests: int = 3) -> None:
    import pstats

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "server.prof")
        server = Server(case, events, keepalive, profile=path)
        try:
            samples = asyncio.run(_profile_requests(server, requests, case_body(case)))
        finally:
            server.stop()
        rates = ", ".join(f"{s.rate:,.0f}" for s in samples)
        print(
            f"{LABELS[case]} under cProfile, {requests} raw reads of {events:,} events: "
            f"{rates} ev/s"
        )
        stats = pstats.Stats(path)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(25)


# ── the client side: Conversation.run against a peer, two ways of writing ────────────────────

CLIENT_SERVERS = ("agui", "per-send")
"""agui: AgentApp, which coalesces queued frames into few large writes; per-send: one event per
ASGI send, so one HTTP chunk per event (a model's token stream flushed as it comes)."""
READERS = ("raw", "peer", "HttpAgent", "Conversation")
CLIENT_TARGET = 150_000  # Conversation events/s on the long run, from either server


def _body(events: int) -> bytes:
    value = orjson.loads(request_body())
    value["forwardedProps"] = {"events": events}
    return orjson.dumps(value)


async def read_peer(client: httpx.AsyncClient, server: Server, body: bytes) -> Sample:
    """What a user of the official Python SDK writes, which has no client: httpx's line iterator,
    each `data:` line validated into an ag_ui.core event by pydantic (TypeAdapter(Event))."""
    adapter = _peer_adapter()
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    ccpu0 = time.process_time()
    t0 = time.perf_counter()
    first = 0.0
    count = 0
    validate = adapter.validate_json
    async with client.stream("POST", server.url, content=body, headers=headers) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                validate(line[6:])
                if not count:
                    first = time.perf_counter()
                count += 1
    end = time.perf_counter()
    return Sample(count, end - t0, first - t0, None, time.process_time() - ccpu0)


_ADAPTER: Any = None


def _peer_adapter() -> Any:
    global _ADAPTER
    if _ADAPTER is None:
        from ag_ui.core import Event
        from pydantic import TypeAdapter

        _ADAPTER = TypeAdapter(Event)
    return _ADAPTER


async def read_conversation(
    client: httpx.AsyncClient, server: Server, events: int
) -> tuple[Sample, agui.Conversation]:
    """The run through `Conversation().run(HttpAgent(url))`: decoded, verified, applied."""
    agent = agui.HttpAgent(server.url, client=client)
    conversation = agui.Conversation()
    ccpu0 = time.process_time()
    t0 = time.perf_counter()
    result = await conversation.run(agent, "hi", forwarded_props={"events": events})
    end = time.perf_counter()
    if result.outcome != "success":
        raise SystemExit(f"benchmarks: {server.kind}: the run ended {result.outcome}")
    return Sample(events, end - t0, 0.0, None, time.process_time() - ccpu0), conversation


async def _read(reader: str, client: httpx.AsyncClient, server: Server, events: int) -> Sample:
    if reader == "raw":
        return await read_raw(client, server, _body(events))
    if reader == "peer":
        return await read_peer(client, server, _body(events))
    if reader == "HttpAgent":
        run_input = agui.decode(_body(events), agui.RunAgentInput, strict=True)
        return (await read_agent(client, server, run_input))[0]
    return (await read_conversation(client, server, events))[0]


def _has_peer() -> bool:
    return util.find_spec("ag_ui") is not None and util.find_spec("pydantic") is not None


async def measure_client(
    lengths: Sequence[int],
    rounds: int,
    keepalive: float | None,
    say: Callable[[str], None],
    kinds: tuple[str, ...] = CLIENT_SERVERS,
) -> dict[tuple[str, int, str], list[Sample]]:
    """Samples per (server, run length, reader), interleaved: in a round each server in turn
    (the order flips every round) reads each length with every reader (the readers' order
    rotates round by round)."""
    readers = READERS if _has_peer() else tuple(r for r in READERS if r != "peer")
    servers = {kind: Server(kind, max(lengths), keepalive) for kind in kinds}
    limits = httpx.Limits(max_connections=1)
    timeout = httpx.Timeout(120.0, connect=10.0)
    clients = {k: httpx.AsyncClient(limits=limits, timeout=timeout) for k in kinds}
    samples: dict[tuple[str, int, str], list[Sample]] = {}
    try:
        for kind in kinds:
            await servers[kind].ready(clients[kind])
        for kind in kinds:  # the gate, which also warms the servers and the connections
            for n in lengths:
                _, conversation = await read_conversation(clients[kind], servers[kind], n)
                text = conversation.messages[-1].content
                if text != "".join(delta(i) for i in range(n - 4)):
                    raise SystemExit(f"benchmarks: {kind}: the message is not the expected text")
                raw = await read_raw(clients[kind], servers[kind], _body(n))
                if raw.events != n:
                    raise SystemExit(f"benchmarks: {kind}: {raw.events} frames, expected {n}")
        say(f"gate: both servers' runs of {', '.join(f'{n:,}' for n in lengths)} events applied")
        for r in range(rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            shift = r % len(readers)
            rotated = readers[shift:] + readers[:shift]
            for kind in order:
                for n in lengths:
                    for reader in rotated:
                        sample = await _read(reader, clients[kind], servers[kind], n)
                        if sample.events != n:
                            raise SystemExit(f"benchmarks: {kind} {reader}: {sample.events} events")
                        samples.setdefault((kind, n, reader), []).append(sample)
            say(
                f"round {r + 1}/{rounds}: "
                + "  ".join(
                    f"{k} {samples[k, lengths[0], 'Conversation'][-1].rate:,.0f}" for k in kinds
                )
                + " Conversation ev/s"
            )
        return samples
    finally:
        for client in clients.values():
            await client.aclose()
        for server in servers.values():
            server.stop()


def client_report(
    samples: dict[tuple[str, int, str], list[Sample]],
    lengths: Sequence[int],
    rounds: int,
    load: float,
    kinds: tuple[str, ...] = CLIENT_SERVERS,
) -> tuple[str, dict[str, Any]]:
    med = statistics.median
    lines = [
        f"Client: runs of {', '.join(f'{n:,}' for n in lengths)} events, POST -> uvicorn -> "
        f"127.0.0.1 -> this process; median of {rounds} interleaved rounds [min-max]",
        f"Server and client are separate processes sharing the {os.cpu_count()} CPU cores.",
        "",
        f"{'server':<10}{'events':>9}  {'reader':<14}{'events/s':>10} {'[min-max]':<17}"
        f"{'client CPU µs/ev':>17}{'chunks':>9}",
    ]
    table: dict[str, Any] = {}
    for kind in kinds:
        for n in lengths:
            for reader in READERS:
                got = samples.get((kind, n, reader))
                if not got:
                    continue
                rates = [s.rate for s in got]
                cpu = med(s.client_cpu_s / s.events for s in got) * 1e6
                chunks = f"{med(s.reads for s in got):,.0f}" if reader == "raw" else ""
                lines.append(
                    f"{kind:<10}{n:>9,}  {reader:<14}{med(rates):>10,.0f} "
                    f"{f'[{min(rates):,.0f}-{max(rates):,.0f}]':<17}{cpu:>17.2f}{chunks:>9}"
                )
                table[f"{kind} {n} {reader}"] = {
                    "rate": med(rates),
                    "rates": [round(x) for x in rates],
                    "client_cpu_us": cpu,
                }
            conv = samples.get((kind, n, "Conversation"))
            peer = samples.get((kind, n, "peer"))
            if conv and peer:
                ratio = med(c.rate / p.rate for c, p in zip(conv, peer, strict=True))
                lines.append(f"{'':<21}Conversation / peer (paired): {ratio:.2f}x")
                table[f"{kind} {n} Conversation/peer"] = ratio
    long = max(lengths)
    for kind in kinds:
        rate = med(s.rate for s in samples[kind, long, "Conversation"])
        verdict = "PASS" if rate >= CLIENT_TARGET else "FAIL"
        lines.append(
            f"{kind}: Conversation {rate:,.0f} events/s on the {long:,}-event run: {verdict} "
            f"(target >= {CLIENT_TARGET:,})"
        )
    lines += [
        "",
        "raw: the body read with httpx aiter_raw, frames counted, nothing decoded (the server's",
        "rate, the ceiling of any client); peer: httpx aiter_lines + pydantic TypeAdapter(ag_ui.core",
        "Event).validate_json per data line (the official Python SDK has no client); HttpAgent:",
        "agui.HttpAgent.run, every event decoded; Conversation: Conversation().run(HttpAgent(url)),",
        "every event decoded, verified and applied to the conversation's messages.",
        "events/s = events / (request sent -> last event handled). chunks: the HTTP body chunks",
        "httpx hands over per run.",
        f"Load average when the benchmark started: {load:.2f}. httpx {_version('httpx')}, "
        f"httpcore {_version('httpcore')}, h11 {_version('h11')}, uvicorn {_version('uvicorn')}, "
        f"ag-ui-protocol {_version('ag-ui-protocol')}, pydantic {_version('pydantic')}, "
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}.",
    ]
    return "\n".join(lines), table


def client_main(
    events: int, rounds: int, keepalive: float | None, kinds: tuple[str, ...] = CLIENT_SERVERS
) -> int:
    started = time.perf_counter()
    lengths = (events, max(5, events // 10))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    samples = asyncio.run(
        measure_client(lengths, rounds, keepalive, lambda s: print(s, file=sys.stderr), kinds)
    )
    text, table = client_report(samples, lengths, rounds, load, kinds)
    print(text)
    write_results(
        RESULTS_DIR / "transport_client.json",
        {
            "lengths": list(lengths),
            "rounds": rounds,
            "cpus": os.cpu_count(),
            "load_average": load,
            "results": table,
            "seconds": round(time.perf_counter() - started, 1),
        },
    )
    return 0


async def _profile_client_runs(server: Server, events: int, runs: int) -> list[Sample]:
    limits = httpx.Limits(max_connections=1)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(300.0)) as client:
        await server.ready(client)
        await read_conversation(client, server, events)  # warm-up
        import cProfile

        profiler = cProfile.Profile()
        out = []
        profiler.enable()
        for _ in range(runs):
            out.append((await read_conversation(client, server, events))[0])
        profiler.disable()
        profiler.dump_stats(str(RESULTS_DIR / "client.prof"))
        return out


def profile_client(kind: str, events: int, keepalive: float | None, runs: int = 2) -> None:
    """Conversation.run under cProfile (this process), reading from `kind`'s server."""
    import pstats

    RESULTS_DIR.mkdir(exist_ok=True)
    server = Server(kind, events, keepalive)
    try:
        samples = asyncio.run(_profile_client_runs(server, events, runs))
    finally:
        server.stop()
    rates = ", ".join(f"{s.rate:,.0f}" for s in samples)
    print(f"Conversation.run under cProfile, {runs} runs of {events:,} events from {kind}: {rates}")
    stats = pstats.Stats(str(RESULTS_DIR / "client.prof"))
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(30)


# ── entry point ──────────────────────────────────────────────────────────────────────────────


def _keepalive(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--quick", action="store_true", help="a 20,000-event run")
    parser.add_argument("--events", type=int, help="events in the run (default 100,000)")
    parser.add_argument(
        "--keepalive",
        type=_keepalive,
        default=15.0,
        help="agui keep-alive seconds, or 'none' (default 15, AgentApp's default)",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="agui",
        choices=("agui", "era", *EXTRA_CASES),
        help="profile one agui case under cProfile instead of comparing (default: agui, the 1.0 "
        "path)",
    )
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="also agui's AgentApp with metrics=True (Prometheus), side by side",
    )
    parser.add_argument(
        "--tracing",
        action="store_true",
        help="also agui's AgentApp with tracing=True (OpenTelemetry SDK, no exporter)",
    )
    parser.add_argument(
        "--only",
        help="comma-separated cases to run (of agui, era, official, node, metrics, tracing); "
        "agui is always run",
    )
    parser.add_argument(
        "--client",
        action="store_true",
        help="the client side instead: Conversation.run, HttpAgent.run and a peer reading the "
        "run from a server that coalesces its writes and from one that sends one event per write",
    )
    parser.add_argument(
        "--client-server",
        choices=CLIENT_SERVERS,
        action="append",
        help="with --client: only this server (repeatable; default both)",
    )
    parser.add_argument(
        "--profile-client",
        choices=CLIENT_SERVERS,
        help="profile Conversation.run (cProfile) reading the run from this server",
    )
    parser.add_argument(
        "--serve", choices=(*CASES, *EXTRA_CASES, "per-send"), help=argparse.SUPPRESS
    )
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    events = args.events or (20_000 if args.quick else 100_000)
    if events < 5:
        parser.error("--events must be at least 5")
    if args.serve:
        serve(args.serve, events, args.keepalive, args.profile_to)
        return 0
    if args.profile:
        profile(args.profile, events, args.keepalive)
        return 0
    if args.profile_client:
        profile_client(args.profile_client, events, args.keepalive)
        return 0
    if args.client:
        kinds = tuple(args.client_server or CLIENT_SERVERS)
        return client_main(events, args.rounds, args.keepalive, kinds)
    cases = [*CASES, *(c for c in EXTRA_CASES if getattr(args, c))]
    if args.only:
        wanted = {c.strip() for c in args.only.split(",")} | {"agui"}
        unknown = wanted - {*CASES, *EXTRA_CASES}
        if unknown:
            parser.error(f"--only: unknown cases {sorted(unknown)}")
        cases = [c for c in (*CASES, *EXTRA_CASES) if c in wanted]
    if "node" in cases:
        missing = node_missing()
        if missing is not None:
            print(f"benchmarks: the Node peer is left out: {missing}", file=sys.stderr)
            cases.remove("node")
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    results = asyncio.run(
        measure(cases, events, args.rounds, args.keepalive, lambda s: print(s, file=sys.stderr))
    )
    print(report(results, events, args.rounds, args.keepalive, load))
    write_results(
        RESULTS,
        {
            "events": events,
            "rounds": args.rounds,
            "keepalive": args.keepalive,
            "cpus": os.cpu_count(),
            "load_average": load,
            "results": {k: asdict(v) for k, v in results.items()},
            "ratios": [r.as_dict() for r in ratios(results)],
            "seconds": round(time.perf_counter() - started, 1),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
