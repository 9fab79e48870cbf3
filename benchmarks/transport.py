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
import signal
import socket
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
from common import RESULTS_DIR, write_results

try:
    import agui
except ImportError as exc:  # pragma: no cover - depends on the checkout
    raise SystemExit(f"benchmarks: cannot import agui ({exc}); install the package first") from exc

RESULTS = RESULTS_DIR / "transport.json"
SERVERS = ("agui", "official")
TARGET = 3.0
PATH = "/agent"
THREAD_ID = "thread-bench"
RUN_ID = "run-bench"
MESSAGE_ID = "msg-bench"

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


def request_body() -> bytes:
    return orjson.dumps(
        {
            "threadId": THREAD_ID,
            "runId": RUN_ID,
            "state": {},
            "messages": [{"id": "user-1", "role": "user", "content": "Tell me a long story."}],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    )


# ── the two servers (run in a subprocess: `transport.py --serve agui|official`) ──────────────


def agui_app(events: int, keepalive: float | None = 15.0, store: Any = None) -> Any:
    """AgentApp over the benchmark's agent (durable.py's too, with a store); a run's event count
    is `forwardedProps.events` when given (durable.py's warm-up and big runs), else `events`."""
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

    # --metrics (AGUI_BENCH_METRICS=1, which the server subprocess inherits): AgentApp's metrics on
    metrics = os.environ.get("AGUI_BENCH_METRICS") == "1"
    return agui.AgentApp(agent, path=PATH, keepalive=keepalive, store=store, metrics=metrics)


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
    import uvicorn

    if kind == "agui":
        app = agui_app(events, keepalive)
    elif kind == "per-send":
        app = per_send_app(events)
    else:
        app = official_app(events)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT that stopped it
        pass
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)


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
        argv = [sys.executable, __file__, "--serve", kind, "--events", str(events)]
        argv += ["--keepalive", "none" if keepalive is None else str(keepalive)]
        if profile is not None:
            argv += ["--profile-to", profile]
        self._start(kind, argv)

    def _start(self, kind: str, argv: list[str]) -> None:
        """Start `argv`, a server that prints its port on its first line."""
        self.kind = kind
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.proc.kill()
            self.proc.wait()
            raise SystemExit(f"benchmarks: the {kind} server did not start")
        self.base = f"http://127.0.0.1:{int(line)}"
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
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
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


def summarise(raw: list[Sample], decoded: list[Sample]) -> Result:
    med = statistics.median
    cpus = [s.server_cpu_s / s.events for s in raw if s.server_cpu_s is not None]
    return Result(
        server_rate=med(s.rate for s in raw),
        client_rate=med(s.rate for s in decoded),
        server_first_ms=med(s.first_s for s in raw) * 1e3,
        client_first_ms=med(s.first_s for s in decoded) * 1e3,
        server_cpu_us=med(cpus) * 1e6 if cpus else None,
        client_cpu_us=med(s.client_cpu_s / s.events for s in decoded) * 1e6,
        reads=med(s.reads for s in raw),
        server_rates=[round(s.rate) for s in raw],
        client_rates=[round(s.rate) for s in decoded],
    )


async def measure(
    events: int, rounds: int, keepalive: float | None, say: Callable[[str], None]
) -> dict[str, Result]:
    body = request_body()
    run_input = agui.decode(body, agui.RunAgentInput, strict=True)
    servers = {kind: Server(kind, events, keepalive) for kind in SERVERS}
    limits = httpx.Limits(max_connections=1)
    timeout = httpx.Timeout(120.0, connect=10.0)
    clients = {kind: httpx.AsyncClient(limits=limits, timeout=timeout) for kind in SERVERS}
    try:
        for kind in SERVERS:
            await servers[kind].ready(clients[kind])
        problems: list[str] = []
        for kind in SERVERS:  # the gate, which also warms both servers and the connections
            try:
                _, kept = await read_agent(clients[kind], servers[kind], run_input, strict=True)
            except (agui.StreamError, agui.HttpError) as exc:
                problems.append(f"{kind}: {exc}")
                continue
            assert kept is not None
            problems += check_run(kind, kept, events)
            raw = await read_raw(clients[kind], servers[kind], body)
            if raw.events != events:
                problems.append(f"{kind}: {raw.events} SSE frames on a raw read, expected {events}")
        if problems:
            raise SystemExit(
                "benchmarks: the runs are not correct, nothing timed:\n  " + "\n  ".join(problems)
            )
        say(f"gate: both servers streamed exactly {events:,} events, all decoded (strict)")
        raw_samples: dict[str, list[Sample]] = {k: [] for k in SERVERS}
        decoded_samples: dict[str, list[Sample]] = {k: [] for k in SERVERS}
        for r in range(rounds):
            order = SERVERS if r % 2 == 0 else SERVERS[::-1]
            for kind in order:
                raw = await read_raw(clients[kind], servers[kind], body)
                decoded, _ = await read_agent(clients[kind], servers[kind], run_input)
                for sample in (raw, decoded):
                    if sample.events != events:
                        raise SystemExit(f"benchmarks: {kind} sent {sample.events} events")
                raw_samples[kind].append(raw)
                decoded_samples[kind].append(decoded)
            say(
                f"round {r + 1}/{rounds}: "
                + "  ".join(
                    f"{k} {raw_samples[k][-1].rate:,.0f} / {decoded_samples[k][-1].rate:,.0f} ev/s"
                    for k in SERVERS
                )
            )
        return {k: summarise(raw_samples[k], decoded_samples[k]) for k in SERVERS}
    finally:
        for client in clients.values():
            await client.aclose()
        for server in servers.values():
            server.stop()


def report(
    results: dict[str, Result], events: int, rounds: int, keepalive: float | None, load: float
) -> str:
    a, o = results["agui"], results["official"]

    def verdict(ratio: float) -> str:
        return f"{'PASS' if ratio >= TARGET else 'FAIL'} (target >= {TARGET:g}x)"

    def row(label: str, av: float | None, ov: float | None, fmt: str, note: str = "") -> str:
        if av is None or ov is None:
            return f"{label:<44}{'n/a':>12}{'n/a':>12}"
        return f"{label:<44}{av:>12{fmt}}{ov:>12{fmt}}{note}"

    # The ratios pair the two servers round by round (interleaved), then take the median.
    server_ratio = statistics.median(
        x / y for x, y in zip(a.server_rates, o.server_rates, strict=True)
    )
    client_ratio = statistics.median(
        x / y for x, y in zip(a.client_rates, o.client_rates, strict=True)
    )
    lines = [
        f"Transport: one {events:,}-event run, POST -> uvicorn -> 127.0.0.1 -> client; "
        f"median of {rounds} interleaved rounds",
        f"Server and client are separate processes sharing the {os.cpu_count()} CPU cores "
        "of this machine (they compete for them).",
        "",
        f"{'':<44}{'agui':>12}{'official':>12}   agui/official",
        row(
            "server: events/s produced (raw read)",
            a.server_rate,
            o.server_rate,
            ",.0f",
            f"   {server_ratio:>6.2f}x  {verdict(server_ratio)}",
        ),
        row(
            "client: events/s decoded (agui.HttpAgent)",
            a.client_rate,
            o.client_rate,
            ",.0f",
            f"   {client_ratio:>6.2f}x  {verdict(client_ratio)}",
        ),
        "",
        f"{'':<44}{'':>12}{'':>12}   official/agui",
        row(
            "server CPU µs/event (raw read)",
            a.server_cpu_us,
            o.server_cpu_us,
            ".2f",
            f"   {o.server_cpu_us / a.server_cpu_us:>6.2f}x"
            if a.server_cpu_us and o.server_cpu_us
            else "",
        ),
        row(
            "client CPU µs/event (agui.HttpAgent)",
            a.client_cpu_us,
            o.client_cpu_us,
            ".2f",
            "   (same client, both servers)",
        ),
        row("body chunks the client reads per run", a.reads, o.reads, ",.0f"),
        row("time to first byte, ms (raw read)", a.server_first_ms, o.server_first_ms, ".2f"),
        row("time to first event, ms (HttpAgent)", a.client_first_ms, o.client_first_ms, ".2f"),
        "",
        "server events/s = events / (last byte - request sent), the client only counting frames;",
        "client events/s = events / (last event decoded into a model - request sent).",
        "Figures are medians over rounds; a ratio is the median of the per-round ratios.",
        "The client's CPU per event depends on the server's writes: one HTTP chunk per event costs",
        "the client's HTTP stack far more than a few large ones. agui's first write comes when the",
        "agent first yields control; this agent never awaits, so it carries ~1,000 frames.",
        f"Load average when the benchmark started: {load:.2f} (other processes add noise).",
        f"agui: AgentApp(agent, keepalive={keepalive!r}); official: FastAPI StreamingResponse"
        " + ag_ui.encoder.EventEncoder. Both agents build every event as a model while streaming.",
        f"uvicorn {_version('uvicorn')} (http: {_http_impl()}, loop: {_loop_impl()}), "
        f"fastapi {_version('fastapi')}, starlette {_version('starlette')}, "
        f"ag-ui-protocol {_version('ag-ui-protocol')}, httpx {_version('httpx')}, "
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}.",
        f"per-round events/s, server (raw): agui {a.server_rates}  official {o.server_rates}",
        f"per-round events/s, client (HttpAgent): agui {a.client_rates}  official {o.client_rates}",
    ]
    return "\n".join(lines)


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


async def _profile_requests(server: Server, requests: int) -> list[Sample]:
    body = request_body()
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=10.0)) as client:
        await server.ready(client)
        return [await read_raw(client, server, body) for _ in range(requests)]


def profile(events: int, keepalive: float | None, requests: int = 3) -> None:
    import pstats

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "server.prof")
        server = Server("agui", events, keepalive, profile=path)
        try:
            samples = asyncio.run(_profile_requests(server, requests))
        finally:
            server.stop()
        rates = ", ".join(f"{s.rate:,.0f}" for s in samples)
        print(
            f"agui server under cProfile, {requests} raw reads of {events:,} events: {rates} ev/s"
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
        "--profile", action="store_true", help="profile the agui server instead of comparing"
    )
    parser.add_argument(
        "--metrics", action="store_true", help="agui's AgentApp with metrics=True (Prometheus)"
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
    parser.add_argument("--serve", choices=(*SERVERS, "per-send"), help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    events = args.events or (20_000 if args.quick else 100_000)
    if args.metrics:
        os.environ["AGUI_BENCH_METRICS"] = "1"
    if events < 5:
        parser.error("--events must be at least 5")
    if args.serve:
        serve(args.serve, events, args.keepalive, args.profile_to)
        return 0
    if args.profile:
        profile(events, args.keepalive)
        return 0
    if args.profile_client:
        profile_client(args.profile_client, events, args.keepalive)
        return 0
    if args.client:
        kinds = tuple(args.client_server or CLIENT_SERVERS)
        return client_main(events, args.rounds, args.keepalive, kinds)
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    results = asyncio.run(
        measure(events, args.rounds, args.keepalive, lambda s: print(s, file=sys.stderr))
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
            "seconds": round(time.perf_counter() - started, 1),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
