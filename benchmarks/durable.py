"""Durable-runs benchmark: a 100,000-event run through each event log, side by side with the server
without a store and with the official FastAPI + EventEncoder path.

Usage: ``python benchmarks/durable.py [--rounds N] [--events N] [--tries N] [--big N] [--quick]
[--kinds memory,redis,...]`` (``--kinds``: only these servers, with no store's always)
(``nox -s bench`` runs it last). ``--quick`` shortens everything (20,000 events, 3 rounds, 10
resume tries, a 100,000-event run for the memory part).

Servers, each under uvicorn on 127.0.0.1 in its own subprocess (as in benchmarks/transport.py),
stream the same run: RUN_STARTED, TEXT_MESSAGE_START, token-sized TEXT_MESSAGE_CONTENT deltas,
TEXT_MESSAGE_END, RUN_FINISHED, every event built by the agent as it goes:

- ``none``: ``AgentApp(agent)``, today's path (no store);
- ``official``: ag-ui-protocol 1.0.0 as documented (FastAPI, ``StreamingResponse`` of
  ``EventEncoder().encode(event)``);
- ``memory``, ``sqlite``, ``redis``: ``AgentApp(agent, store=URL)``: the run executes detached,
  its events are appended to the log in batches, and the POST answers with the run's live tail,
  read back from the log (server -> store -> SSE -> client). SQLite is a file in a temporary
  folder; Redis is a throwaway ``redis-server`` this script starts on a free loopback port (no
  persistence) and stops at the end. Without ``redis-server`` or redis-py, Redis is left out.

This process is the client. Four parts:

1. The gate: one run from each server read with ``agui.HttpAgent`` (strict) must deliver exactly
   the expected events, and one raw read must have as many frames, each with an ``id:`` on the
   durable servers (ids all different); nothing is timed otherwise.
2. Throughput, interleaved rounds (the order rotates every round): in a round, each server is
   read raw (frames counted, nothing decoded: the server's throughput and its CPU per event, from
   /proc) and with ``HttpAgent.run`` (every event decoded: end to end to the application). Each
   figure is the median over rounds; a ratio pairs two servers round by round, median of those.
   For Redis, redis-server's own CPU per event is reported too.
3. Resume: a reconnect to ``GET /agent/runs/{runId}/events`` with ``Last-Event-ID`` (a new TCP
   connection each time) -> the first event after that cursor, on a finished 100,000-event run,
   cursors spread over the run; raw (first frame, its id checked) and through
   ``HttpAgent.rejoin(run_id, after=cursor)`` (first event decoded). Backends interleaved; median.
4. Memory: a 1,000,000-event run on a fresh server per backend: the growth of the server's
   resident memory (peak during the run, and what is left after it) over its RSS just before the
   run (after a 1,000-event warm-up run), and over its RSS at start. memory:// keeps the run in
   the server process (the default retention, ``max_events_per_run=1_000_000``, keeps all of
   it; its older events in zlib-compressed blocks), so it is also measured with a
   ``MemoryLog(Retention(max_events_per_run=10_000))`` ("memory-10k"): the server without most
   of its log. The JSON the log keeps is computed and printed next to it. Redis's growth is its
   own process's; SQLite's log is the file.

Targets (from issue 13) are marked PASS/FAIL; the exit status is 0 either way (a benchmark
reports, it does not gate). Results go to ``.bench/durable.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata, util
from pathlib import Path
from typing import Any

import httpx
import orjson
import transport
from common import RESULTS_DIR, serve_on_loopback, write_results
from transport import (
    MESSAGE_ID,
    Sample,
    check_run,
    cpu_seconds,
    delta,
    read_agent,
    read_raw,
)

import agui

RESULTS = RESULTS_DIR / "durable.json"
BACKENDS = ("memory", "sqlite", "redis")
KINDS = ("none", "official", *BACKENDS)
BIG_KINDS = ("none", "memory", "memory-10k", "sqlite", "redis")
SMALL_RETENTION = 10_000

TARGET_RATE = 100_000  # events/s end to end, Redis and SQLite
TARGET_OFFICIAL = 3.5  # Redis against the official path (issue 24; 3.0 in issue 13)
TARGET_MEMORY = 0.9  # memory:// against no store, in every round (issue 24; 0.8 on the median)
TARGET_RESUME_MS = 20.0
TARGET_RSS_MIB = 50.0
MiB = 1024 * 1024


# ── the servers (a subprocess each: `durable.py --serve KIND --events N [--store URL]`) ─────────


def serve(kind: str, events: int, store: str | None) -> None:
    """The server subprocess: bind a free loopback port, print it, serve until SIGINT/SIGTERM."""

    if kind == "official":
        app = transport.official_app(events)
    elif kind == "memory-10k":
        from agui.store import Retention
        from agui.store.memory import MemoryLog

        app = transport.agui_app(
            events, store=MemoryLog(Retention(max_events_per_run=SMALL_RETENTION))
        )
    else:
        app = transport.agui_app(events, store=store)
    serve_on_loopback(app)


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in KiB (Linux /proc), else {}."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0])
    return out


def reset_peak(pid: int) -> bool:
    """Reset the process's peak RSS (VmHWM) to its current RSS; False when the kernel refuses."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class Server(transport.Server):
    """One server subprocess: its URL, its CPU time and memory (the interface transport.py's
    read_raw and read_agent use)."""

    def __init__(self, kind: str, events: int, store: str | None) -> None:
        argv = [sys.executable, __file__, "--serve", kind, "--events", str(events)]
        if store is not None:
            argv += ["--store", store]
        self._start(kind, argv)
        self.runs = 0

    def next_run(self, events: int | None = None) -> tuple[str, bytes]:
        """A new run id and the POST body starting it (a new thread each time)."""
        self.runs += 1
        run_id = f"run-{self.kind}-{self.runs}"
        body: dict[str, Any] = {
            "threadId": f"thread-{self.kind}-{self.runs}",
            "runId": run_id,
            "state": {},
            "messages": [{"id": "user-1", "role": "user", "content": "Tell me a long story."}],
            "tools": [],
            "context": [],
            "forwardedProps": {} if events is None else {"events": events},
        }
        return run_id, orjson.dumps(body)


class RedisServer:
    """A throwaway redis-server on a free loopback port, no persistence, in a temporary folder."""

    def __init__(self, directory: Path) -> None:
        for _attempt in range(5):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            self.proc = subprocess.Popen(
                [
                    "redis-server",
                    "--port", str(port),
                    "--bind", "127.0.0.1",
                    "--save", "",
                    "--appendonly", "no",
                    "--dir", str(directory),
                    "--daemonize", "no",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            deadline = time.monotonic() + 10
            while self.proc.poll() is None and not _ping(port):
                if time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit("benchmarks: redis-server did not answer PING")
                time.sleep(0.02)
            if self.proc.poll() is None:
                self.url = f"redis://127.0.0.1:{port}/0"
                return
        raise SystemExit("benchmarks: redis-server could not start on a free port")

    def version(self) -> str:
        done = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
        words = done.stdout.split()
        found = [w[2:] for w in words if w.startswith("v=")]
        return found[0] if found else "?"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def redis_missing() -> str | None:
    """Why Redis cannot be measured here, or None."""
    if shutil.which("redis-server") is None:
        return "redis-server is not on PATH (apt-get install redis-server)"
    if util.find_spec("redis") is None:
        return "redis-py is not installed (pip install 'agui-spec[redis]')"
    return None


def store_url(kind: str, folder: Path, redis: RedisServer | None, prefix: str) -> str | None:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{folder / (prefix + 'runs.db')}"
    if kind == "redis":
        assert redis is not None
        return f"{redis.url}?prefix={prefix}"
    return None


# ── reading ─────────────────────────────────────────────────────────────────────────────────────


async def read_ids(client: httpx.AsyncClient, server: Server, body: bytes) -> tuple[int, list[str]]:
    """POST and read the whole answer, parsing frames: (frames, the id of each frame with one)."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    frames = 0
    ids: list[str] = []
    buffer = b""
    async with client.stream("POST", server.url, content=body, headers=headers) as response:
        if response.status_code != 200:
            raise SystemExit(f"benchmarks: {server.kind} answered {response.status_code}")
        async for chunk in response.aiter_raw():
            buffer += chunk
            *complete, buffer = buffer.split(b"\n\n")
            for frame in complete:
                if frame.startswith(b":"):
                    continue  # a keep-alive comment
                frames += 1
                if frame.startswith(b"id: "):
                    ids.append(frame[4 : frame.index(b"\n")].decode())
    return frames, ids


@dataclass
class Resume:
    raw_ms: list[float] = field(default_factory=list)
    agent_ms: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def resume_raw(server: Server, run_id: str, after: str, expected: str) -> float:
    """A new connection, GET the run's events after `after`: ms until the first frame is in."""
    url = f"{server.url}/runs/{run_id}/events"
    headers = {"accept": "text/event-stream", "last-event-id": after}
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
        t0 = time.perf_counter()
        elapsed = math.inf
        buffer = b""
        async with client.stream("GET", url, headers=headers) as response:
            if response.status_code != 200:
                raise RuntimeError(f"{server.kind}: resume answered {response.status_code}")
            async for chunk in response.aiter_raw():
                buffer += chunk
                if b"\n\n" in buffer:
                    elapsed = time.perf_counter() - t0  # before the connection is dropped
                    break
    first = buffer.split(b"\n\n", 1)[0]
    if not first.startswith(b"id: " + expected.encode() + b"\n"):
        raise RuntimeError(f"{server.kind}: resumed after {after} with {first[:40]!r}")
    return elapsed * 1e3


async def resume_agent(server: Server, run_id: str, after: str) -> float:
    """A new client, HttpAgent.rejoin(run_id, after=...): ms until the first event is decoded."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
        agent = agui.HttpAgent(server.url, client=client)
        t0 = time.perf_counter()
        events = agent.rejoin(run_id, after=after)
        try:
            event = await anext(events)
            elapsed = time.perf_counter() - t0  # before the stream is closed
        finally:
            await events.aclose()  # type: ignore[attr-defined]
    if type(event) is not agui.TextMessageContentEvent:
        raise RuntimeError(f"{server.kind}: resumed with {type(event).__name__}")
    return elapsed * 1e3


# ── the measurement ─────────────────────────────────────────────────────────────────────────────


@dataclass
class Result:
    raw_rate: float  # events/s, raw read (median)
    agent_rate: float  # events/s, HttpAgent (median)
    server_cpu_us: float | None  # server CPU per event, raw read (median)
    store_cpu_us: float | None  # redis-server CPU per event, raw read (median; Redis only)
    raw_first_ms: float
    agent_first_ms: float
    raw_rates: list[int]
    agent_rates: list[int]
    server_cpu_us_rounds: list[float]


def summarise(raw: list[Sample], decoded: list[Sample], store_cpu: list[float]) -> Result:
    med = statistics.median
    cpus = [s.server_cpu_s / s.events * 1e6 for s in raw if s.server_cpu_s is not None]
    return Result(
        raw_rate=med(s.rate for s in raw),
        agent_rate=med(s.rate for s in decoded),
        server_cpu_us=med(cpus) if cpus else None,
        store_cpu_us=med(store_cpu) if store_cpu else None,
        raw_first_ms=med(s.first_s for s in raw) * 1e3,
        agent_first_ms=med(s.first_s for s in decoded) * 1e3,
        raw_rates=[round(s.rate) for s in raw],
        agent_rates=[round(s.rate) for s in decoded],
        server_cpu_us_rounds=[round(c, 2) for c in cpus],
    )


def paired(a: Sequence[float], b: Sequence[float]) -> float:
    """The median of the per-round ratios a/b."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


async def throughput_and_resume(
    kinds: Sequence[str],
    events: int,
    rounds: int,
    tries: int,
    folder: Path,
    redis: RedisServer | None,
    say: Any,
) -> tuple[dict[str, Result], dict[str, Resume]]:
    servers: dict[str, Server] = {}
    limits = httpx.Limits(max_connections=1)
    timeout = httpx.Timeout(120.0, connect=10.0)
    clients = {kind: httpx.AsyncClient(limits=limits, timeout=timeout) for kind in kinds}
    try:
        for kind in kinds:
            servers[kind] = Server(kind, events, store_url(kind, folder, redis, "bench:"))
        for kind in kinds:
            await servers[kind].ready(clients[kind])

        # 1. the gate (it also warms every server and connection)
        problems: list[str] = []
        finished: dict[str, tuple[str, list[str]]] = {}  # a finished run's id and cursors
        for kind in kinds:
            server, client = servers[kind], clients[kind]
            run_id, body = server.next_run()
            run_input = agui.decode(body, agui.RunAgentInput, strict=True)
            try:
                _, kept = await read_agent(client, server, run_input, strict=True)
            except (agui.StreamError, agui.HttpError) as exc:
                problems.append(f"{kind}: {exc}")
                continue
            assert kept is not None
            problems += check_run(kind, kept, events)
            run_id, body = server.next_run()
            frames, ids = await read_ids(client, server, body)
            if frames != events:
                problems.append(f"{kind}: {frames} SSE frames on a raw read, expected {events}")
            if kind in BACKENDS:
                if len(ids) != frames or len(set(ids)) != len(ids):
                    problems.append(f"{kind}: {len(ids)} ids ({len(set(ids))} distinct)")
                finished[kind] = (run_id, ids)
        if problems:
            raise SystemExit(
                "benchmarks: the runs are not correct, nothing timed:\n  " + "\n  ".join(problems)
            )
        say(f"gate: every server streamed exactly {events:,} events, all decoded (strict)")

        # 2. throughput, interleaved
        raw_samples: dict[str, list[Sample]] = {k: [] for k in kinds}
        decoded_samples: dict[str, list[Sample]] = {k: [] for k in kinds}
        store_cpu: dict[str, list[float]] = {k: [] for k in kinds}
        for r in range(rounds):
            order = list(kinds[r % len(kinds) :]) + list(kinds[: r % len(kinds)])
            if r % 2:
                order.reverse()
            for kind in order:
                server, client = servers[kind], clients[kind]
                _, body = server.next_run()
                redis_cpu = cpu_seconds(redis.proc.pid) if redis and kind == "redis" else None
                raw = await read_raw(client, server, body)
                if redis_cpu is not None and redis is not None:
                    after = cpu_seconds(redis.proc.pid)
                    if after is not None:
                        store_cpu[kind].append((after - redis_cpu) / raw.events * 1e6)
                _, body = server.next_run()
                run_input = agui.decode(body, agui.RunAgentInput)
                decoded, _ = await read_agent(client, server, run_input)
                for sample in (raw, decoded):
                    if sample.events != events:
                        raise SystemExit(f"benchmarks: {kind} sent {sample.events} events")
                raw_samples[kind].append(raw)
                decoded_samples[kind].append(decoded)
            say(
                f"round {r + 1}/{rounds}: "
                + "  ".join(
                    f"{k} {raw_samples[k][-1].rate:,.0f}/{decoded_samples[k][-1].rate:,.0f}"
                    for k in kinds
                )
                + " ev/s (raw/HttpAgent)"
            )
        results = {k: summarise(raw_samples[k], decoded_samples[k], store_cpu[k]) for k in kinds}

        # 3. resume, backends interleaved
        resumes = {kind: Resume() for kind in finished}
        for i in range(tries):
            for kind in finished:
                run_id, ids = finished[kind]
                # After event 2 .. the last but three: the next one is a TEXT_MESSAGE_CONTENT.
                index = 1 + i * (len(ids) - 5) // max(tries - 1, 1)
                server = servers[kind]
                try:
                    resumes[kind].raw_ms.append(
                        await resume_raw(server, run_id, ids[index], ids[index + 1])
                    )
                    await asyncio.sleep(0.01)
                    resumes[kind].agent_ms.append(await resume_agent(server, run_id, ids[index]))
                except Exception as exc:  # reported, not fatal: a benchmark reports
                    resumes[kind].problems.append(f"after {ids[index]}: {exc}")
                await asyncio.sleep(0.01)
        say(f"resume: {tries} tries per backend")
        return results, resumes
    finally:
        for client in clients.values():
            await client.aclose()
        for server in servers.values():
            server.stop()


@dataclass
class BigRun:
    events: int
    seconds: float
    started_mib: float  # server RSS once it answered, before any run
    baseline_mib: float  # server RSS just before the run (after a 1,000-event warm-up run)
    peak_growth_mib: float  # peak RSS during the run - baseline
    after_growth_mib: float  # RSS after the run - baseline
    peak_over_start_mib: float  # peak RSS during the run - started
    peak_source: str  # "VmHWM" (reset before the run) or "polled"
    redis_growth_mib: float | None = None  # redis-server's RSS growth (Redis: where the log is)
    sqlite_file_mib: float | None = None


async def big_run(
    kind: str, events: int, folder: Path, redis: RedisServer | None, say: Any
) -> BigRun:
    """One `events`-event run on a fresh server, read raw; the server's RSS growth."""
    prefix = f"big{kind.replace('-', '')}:"
    store = None if kind == "memory-10k" else store_url(kind, folder, redis, prefix)
    server = Server(kind, 1000, store)
    timeout = httpx.Timeout(600.0, connect=10.0)
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            await server.ready(client)
            pid = server.proc.pid
            started = memory_kib(pid).get("VmRSS", 0)
            # A small warm-up run: the imports, the connections, the first buffers (small, so
            # that what a long run costs is not already there).
            _, body = server.next_run(1_000)
            await read_raw(client, server, body)
            await asyncio.sleep(0.5)
            baseline = memory_kib(pid).get("VmRSS", 0)
            reset = reset_peak(pid)
            redis_before = (
                memory_kib(redis.proc.pid).get("VmRSS") if redis and kind == "redis" else None
            )
            polled = baseline
            done = asyncio.Event()

            async def poll() -> None:
                nonlocal polled
                while not done.is_set():
                    polled = max(polled, memory_kib(pid).get("VmRSS", 0))
                    await asyncio.sleep(0.02)

            poller = asyncio.create_task(poll())
            _, body = server.next_run(events)
            sample = await read_raw(client, server, body)
            done.set()
            await poller
            await asyncio.sleep(0.3)
            now = memory_kib(pid)
            if sample.events != events:
                raise SystemExit(f"benchmarks: {kind} sent {sample.events} of {events} events")
            peak = max(now.get("VmHWM", 0), polled) if reset else polled
            result = BigRun(
                events=events,
                seconds=round(sample.seconds, 2),
                started_mib=round(started / 1024, 1),
                baseline_mib=round(baseline / 1024, 1),
                peak_growth_mib=round((peak - baseline) / 1024, 1),
                after_growth_mib=round((now.get("VmRSS", 0) - baseline) / 1024, 1),
                peak_over_start_mib=round((peak - started) / 1024, 1),
                peak_source="VmHWM" if reset else "polled",
            )
            if redis_before is not None and redis is not None:
                redis_after = memory_kib(redis.proc.pid).get("VmRSS", 0)
                result.redis_growth_mib = round((redis_after - redis_before) / 1024, 1)
            if kind == "sqlite":
                files = folder.glob(prefix + "runs.db*")
                result.sqlite_file_mib = round(sum(f.stat().st_size for f in files) / MiB, 1)
            say(
                f"{kind}: {events:,} events in {sample.seconds:.1f} s, server RSS "
                f"{result.baseline_mib:.0f} MiB + {result.peak_growth_mib:.1f} MiB at the peak"
            )
            return result
    finally:
        server.stop()


def payload_mib(events: int) -> float:
    """The JSON of a run of `events` events (what an event log holds), in MiB."""
    from agui import (
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageRole,
        TextMessageStartEvent,
    )

    size = len(agui.encode(RunStartedEvent(thread_id="thread-big", run_id="run-big")))
    size += len(
        agui.encode(TextMessageStartEvent(message_id=MESSAGE_ID, role=TextMessageRole.ASSISTANT))
    )
    size += len(agui.encode(TextMessageEndEvent(message_id=MESSAGE_ID)))
    size += len(agui.encode(RunFinishedEvent(thread_id="thread-big", run_id="run-big")))
    per_token = {
        token: len(agui.encode(TextMessageContentEvent(message_id=MESSAGE_ID, delta=token)))
        for token in transport.TOKENS
    }
    size += sum(per_token[delta(i)] for i in range(events - 4))
    return size / MiB


# ── the report ──────────────────────────────────────────────────────────────────────────────────


def verdict(met: bool) -> str:
    return "PASS" if met else "FAIL"


def report(
    results: dict[str, Result],
    resumes: dict[str, Resume],
    big: dict[str, BigRun],
    args: argparse.Namespace,
    load: float,
    notes: list[str],
    redis_version: str | None,
) -> tuple[str, dict[str, Any]]:
    kinds = list(results)
    lines = [
        f"Durable runs: one {args.events:,}-event run, POST -> uvicorn -> event log -> SSE -> "
        f"127.0.0.1 -> client; median of {args.rounds} interleaved rounds",
        f"Servers and client are separate processes sharing the {os.cpu_count()} CPU cores "
        "of this machine (and redis-server with them).",
        "",
        f"{'':<30}" + "".join(f"{k:>12}" for k in kinds),
    ]

    def row(label: str, values: list[str]) -> str:
        return f"{label:<30}" + "".join(f"{v:>12}" for v in values)

    def fmt(value: float | None, spec: str) -> str:
        return "n/a" if value is None else format(value, spec)

    lines.append(row("events/s, raw read", [fmt(results[k].raw_rate, ",.0f") for k in kinds]))
    lines.append(row("events/s, HttpAgent", [fmt(results[k].agent_rate, ",.0f") for k in kinds]))
    lines.append(row("server CPU µs/event", [fmt(results[k].server_cpu_us, ".2f") for k in kinds]))
    lines.append(
        row("redis-server CPU µs/event", [fmt(results[k].store_cpu_us, ".2f") for k in kinds])
    )
    lines.append(row("first byte, ms (raw)", [fmt(results[k].raw_first_ms, ".1f") for k in kinds]))
    lines.append(
        row("first event, ms (HttpAgent)", [fmt(results[k].agent_first_ms, ".1f") for k in kinds])
    )

    ratios: dict[str, dict[str, float]] = {}
    lines += ["", "Paired ratios (median of per-round ratios), raw read / HttpAgent:"]
    for kind in kinds:
        if kind in ("none", "official"):
            continue
        entry: dict[str, float] = {}
        for base in ("none", "official"):
            if base in results:
                entry[f"raw_vs_{base}"] = paired(results[kind].raw_rates, results[base].raw_rates)
                entry[f"agent_vs_{base}"] = paired(
                    results[kind].agent_rates, results[base].agent_rates
                )
                # the worst round, for a target every round must meet
                entry[f"raw_vs_{base}_min"] = min(
                    x / y
                    for x, y in zip(results[kind].raw_rates, results[base].raw_rates, strict=True)
                )
                entry[f"agent_vs_{base}_min"] = min(
                    x / y
                    for x, y in zip(
                        results[kind].agent_rates, results[base].agent_rates, strict=True
                    )
                )
        cpu = results[kind].server_cpu_us_rounds
        base_cpu = results["none"].server_cpu_us_rounds if "none" in results else []
        if cpu and len(cpu) == len(base_cpu):
            # The server's CPU per event against no store's: less sensitive than events/s to
            # what else runs on the machine.
            entry["cpu_vs_none"] = paired(cpu, base_cpu)
        ratios[kind] = entry
        parts = [
            f"{entry[f'raw_vs_{b}']:.2f}x / {entry[f'agent_vs_{b}']:.2f}x vs {b} (worst round "
            f"{entry[f'raw_vs_{b}_min']:.2f}x / {entry[f'agent_vs_{b}_min']:.2f}x)"
            for b in ("none", "official")
            if f"raw_vs_{b}" in entry
        ]
        if "cpu_vs_none" in entry:
            parts.append(f"server CPU per event {entry['cpu_vs_none']:.2f}x no store's")
        lines.append(f"  {kind:<8} " + ";  ".join(parts))
    if "none" in results and "official" in results:
        lines.append(
            f"  {'none':<8} {paired(results['none'].raw_rates, results['official'].raw_rates):.2f}x"
            f" / {paired(results['none'].agent_rates, results['official'].agent_rates):.2f}x "
            "vs official"
        )

    targets: list[dict[str, Any]] = []

    def target(name: str, value: float, goal: str, met: bool) -> None:
        targets.append({"target": name, "value": value, "goal": goal, "met": met})

    for kind in ("redis", "sqlite"):
        if kind in results:
            for how, rate in (
                ("raw", results[kind].raw_rate),
                ("HttpAgent", results[kind].agent_rate),
            ):
                target(f"{kind} events/s ({how})", rate, f">= {TARGET_RATE:,}", rate >= TARGET_RATE)
    if "redis" in ratios and "raw_vs_official" in ratios["redis"]:
        for how in ("raw", "agent"):
            value = ratios["redis"][f"{how}_vs_official"]
            label = "raw" if how == "raw" else "HttpAgent"
            target(
                f"redis / official ({label})",
                value,
                f">= {TARGET_OFFICIAL:g}x",
                value >= TARGET_OFFICIAL,
            )
    if "memory" in ratios and "raw_vs_none" in ratios["memory"]:
        for how in ("raw", "agent"):
            value = ratios["memory"][f"{how}_vs_none_min"]
            label = "raw" if how == "raw" else "HttpAgent"
            target(
                f"memory / no store ({label}), worst round",
                value,
                f">= {TARGET_MEMORY:g}x",
                value >= TARGET_MEMORY,
            )

    resume_out: dict[str, Any] = {}
    if resumes:
        lines += ["", f"Resume (new connection, Last-Event-ID -> first event), {args.tries} tries:"]
        for kind, res in resumes.items():
            raw_med = statistics.median(res.raw_ms) if res.raw_ms else None
            agent_med = statistics.median(res.agent_ms) if res.agent_ms else None
            raw_p90 = _p90(res.raw_ms)
            resume_out[kind] = {
                "raw_median_ms": raw_med,
                "raw_p90_ms": raw_p90,
                "agent_median_ms": agent_med,
                "agent_p90_ms": _p90(res.agent_ms),
                "tries": len(res.raw_ms),
                "raw_ms": [round(x, 2) for x in res.raw_ms],
                "agent_ms": [round(x, 2) for x in res.agent_ms],
                "problems": res.problems,
            }
            lines.append(
                f"  {kind:<8} raw median {fmt(raw_med, '.2f')} ms (p90 {fmt(raw_p90, '.2f')}), "
                f"HttpAgent.rejoin median {fmt(agent_med, '.2f')} ms "
                f"(p90 {fmt(_p90(res.agent_ms), '.2f')})"
                + (f"; {len(res.problems)} failed: {res.problems[0]}" if res.problems else "")
            )
            if raw_med is not None:
                target(
                    f"{kind} resume median (raw)",
                    raw_med,
                    f"< {TARGET_RESUME_MS:g} ms",
                    raw_med < TARGET_RESUME_MS,
                )
            if agent_med is not None:
                target(
                    f"{kind} resume median (HttpAgent)",
                    agent_med,
                    f"< {TARGET_RESUME_MS:g} ms",
                    agent_med < TARGET_RESUME_MS,
                )

    if big:
        payload = payload_mib(args.big)
        lines += [
            "",
            f"Server RSS growth over a {args.big:,}-event run (a fresh server; over its RSS just"
            f" before the run, after a 1,000-event warm-up run, and over its RSS at start; the"
            f" run's JSON is {payload:.1f} MiB):",
        ]
        for kind, b in big.items():
            extra = ""
            if b.redis_growth_mib is not None:
                extra = f"; redis-server +{b.redis_growth_mib:.1f} MiB"
            if b.sqlite_file_mib is not None:
                extra = f"; SQLite files {b.sqlite_file_mib:.1f} MiB"
            if kind == "memory":
                extra = (
                    f"; the log keeps the run's {payload:.1f} MiB of JSON in this process"
                    " (older events compressed)"
                )
            if kind == "memory-10k":
                extra = f"; retention keeps the last {SMALL_RETENTION:,} events"
            lines.append(
                f"  {kind:<10} peak +{b.peak_growth_mib:.1f} MiB, after +{b.after_growth_mib:.1f}"
                f" MiB; over start +{b.peak_over_start_mib:.1f} MiB (before the run"
                f" {b.baseline_mib:.0f} MiB, at start {b.started_mib:.0f} MiB;"
                f" {b.events / b.seconds:,.0f} ev/s; peak from {b.peak_source}){extra}"
            )
            if kind != "none":
                target(
                    f"{kind} RSS growth, {args.big:,} events",
                    b.peak_growth_mib,
                    f"<= +{TARGET_RSS_MIB:g} MiB",
                    b.peak_growth_mib <= TARGET_RSS_MIB,
                )

    lines += ["", "Targets (issue 13):"]
    for t in targets:
        value = t["value"]
        shown = f"{value:,.0f}" if value >= 1000 else f"{value:.2f}"
        lines.append(f"  {verdict(t['met'])}  {t['target']}: {shown} (goal {t['goal']})")
    lines += [
        "",
        "raw read: frames counted, nothing decoded (the server's throughput); HttpAgent: every "
        "event decoded into a model (end to end to the application).",
        "events/s = events / (last byte or last event - request sent). Figures are medians.",
        *notes,
        f"Load average when the benchmark started: {load:.2f} (other processes add noise).",
        f"uvicorn {_version('uvicorn')} (http: {'httptools' if util.find_spec('httptools') else 'h11'}, "
        f"loop: {'uvloop' if util.find_spec('uvloop') else 'asyncio'}), "
        f"redis-py {_version('redis')} (hiredis {_version('hiredis')}), "
        f"redis-server {redis_version or 'not run'}, SQLite {_sqlite_version()}, "
        f"orjson {_version('orjson')}, ag-ui-protocol {_version('ag-ui-protocol')}, "
        f"fastapi {_version('fastapi')}, httpx {_version('httpx')}, "
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}.",
    ]
    for kind in kinds:
        lines.append(
            f"per-round events/s {kind}: raw {results[kind].raw_rates} "
            f"HttpAgent {results[kind].agent_rates}"
        )
    data = {
        "ratios": ratios,
        "resume": resume_out,
        "payload_mib": payload_mib(args.big) if big else None,
        "targets": targets,
    }
    return "\n".join(lines), data


def _p90(values: list[float]) -> float | None:
    if len(values) < 2:
        return values[0] if values else None
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


# ── entry point ─────────────────────────────────────────────────────────────────────────────────


async def measure(args: argparse.Namespace, say: Any) -> tuple[Any, ...]:
    notes: list[str] = []
    missing = redis_missing()
    kinds = list(KINDS)
    big_kinds = list(BIG_KINDS)
    if args.kinds:
        wanted = {"none", *args.kinds.split(",")}
        kinds = [k for k in kinds if k in wanted]
        big_kinds = [k for k in big_kinds if k in wanted]
    if missing is not None:
        notes.append(f"Redis left out: {missing}.")
        kinds = [k for k in kinds if k != "redis"]
        big_kinds = [k for k in big_kinds if k != "redis"]
    if util.find_spec("ag_ui") is None or util.find_spec("fastapi") is None:
        notes.append("The official path left out: ag-ui-protocol or fastapi is not installed.")
        kinds = [k for k in kinds if k != "official"]
    with tempfile.TemporaryDirectory(prefix="agui-durable-bench-") as tmp:
        folder = Path(tmp)
        redis = RedisServer(folder) if missing is None else None
        redis_version = redis.version() if redis is not None else None
        try:
            results, resumes = await throughput_and_resume(
                kinds, args.events, args.rounds, args.tries, folder, redis, say
            )
            big: dict[str, BigRun] = {}
            if args.big:
                for kind in big_kinds:
                    big[kind] = await big_run(kind, args.big, folder, redis, say)
        finally:
            if redis is not None:
                redis.stop()
    return results, resumes, big, notes, redis_version


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 7; quick 3)")
    parser.add_argument("--events", type=int, help="events per run (default 100,000)")
    parser.add_argument("--tries", type=int, help="resume tries per backend (default 40)")
    parser.add_argument(
        "--big", type=int, help="events of the memory run (default 1,000,000; 0: skip it)"
    )
    parser.add_argument("--quick", action="store_true", help="shorten everything")
    parser.add_argument(
        "--kinds", help="comma-separated servers to measure (default: all; none is always in)"
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.events, args.store)
        return 0
    quick = args.quick
    if args.events is None:
        args.events = 20_000 if quick else 100_000
    if args.rounds is None:
        args.rounds = 3 if quick else 7
    if args.tries is None:
        args.tries = 10 if quick else 40
    if args.big is None:
        args.big = 100_000 if quick else 1_000_000
    if args.events < 10:
        parser.error("--events must be at least 10")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.tries < 0 or args.big < 0:
        parser.error("--tries and --big cannot be negative")
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    results, resumes, big, notes, redis_version = asyncio.run(
        measure(args, lambda s: print(s, file=sys.stderr, flush=True))
    )
    text, data = report(results, resumes, big, args, load, notes, redis_version)
    print(text)
    path = write_results(
        RESULTS,
        {
            "events": args.events,
            "rounds": args.rounds,
            "tries": args.tries,
            "big_events": args.big,
            "cpus": os.cpu_count(),
            "load_average": load,
            "results": {k: asdict(v) for k, v in results.items()},
            "big": {k: asdict(v) for k, v in big.items()},
            **data,
            "notes": notes,
            "seconds": round(time.perf_counter() - started, 1),
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
