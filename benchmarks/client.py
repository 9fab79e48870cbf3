"""Client benchmark: 50 sequential short runs with a default HttpAgent against one with an
explicit shared httpx client.

Usage: ``python benchmarks/client.py [--rounds N] [--runs N] [--quick]`` (``nox -s bench`` runs
it).

A server subprocess serves ``agui.AgentApp`` of a short agent (a message of three deltas, so a
run is a handful of frames) under uvicorn on 127.0.0.1. This process is the client and, for each
way of holding connections, times ``--runs`` sequential runs through ``Conversation.run`` (async)
and ``Conversation.run_sync`` (sync), every run checked to end ``success``:

- default: ``HttpAgent(url)``, one agent for all the runs: its own pooled clients (one async
  client per event loop, one sync client), closed after the batch;
- shared: ``HttpAgent(url, client=..., sync_client=...)`` with httpx clients made once by the
  caller, what applications did to reuse connections;
- per run: a new ``httpx.AsyncClient`` / ``httpx.Client`` for every run, closed after it: what
  ``HttpAgent(url)`` did before it pooled (the reference the pool removes).

A round runs the three batches interleaved run by run (default and shared alternating which goes
first, the per-run client last), so the load of a shared machine falls on them alike; a way's time is its runs plus making and closing its agent or
client. Each time is the median over rounds, and each ratio is paired round by round (default /
shared of the same round; the median, with the quartiles). The target is default / shared at most 1.1 (the default agent costs no more than a
shared client), marked PASS/FAIL; the exit status is 0 either way. Results also go to
``.bench/client.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from common import (
    RESULTS_DIR,
    machine,
    quartiles,
    serve_on_loopback,
    spawn_server,
    stop_process,
    versions,
    write_results,
)

try:
    import agui
except ImportError as exc:  # pragma: no cover - depends on the checkout
    raise SystemExit(f"benchmarks: cannot import agui ({exc}); install the package first") from exc

TARGET = 1.1
"""default / shared: the default HttpAgent may take at most this much longer."""
PATH = "/agent"


async def short_agent(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    for word in ("one ", "two ", "three"):
        yield agui.TextMessageContentEvent(message_id="m", delta=word)
    yield agui.TextMessageEndEvent(message_id="m")


def serve() -> None:
    """The server subprocess: bind a free loopback port, print it, serve until SIGINT (with
    TCP_NODELAY: a delayed ACK on a reused connection would hide the pool)."""
    app = agui.AgentApp(short_agent, path=PATH)
    serve_on_loopback(app)


class Server:
    def __init__(self) -> None:
        self.proc, port = spawn_server([sys.executable, __file__, "--serve"])
        self.url = f"http://127.0.0.1:{port}{PATH}"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(self.url)  # 405: the server answers
                return
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise SystemExit("benchmarks: the server is not answering") from None
                time.sleep(0.05)

    def stop(self) -> None:
        stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _check(result: agui.RunResult | None) -> None:
    if result is None or result.outcome != "success":
        raise SystemExit(f"benchmarks: a run did not succeed: {result}")


WAYS = ("default", "shared", "per run")


def _order(n: int) -> tuple[str, ...]:
    """The ways of run `n` in their order: default and shared alternate first in an ABBA pattern
    (neither is the one that always follows the other), the per-run client last (making and
    dropping a client each time disturbs what runs right after it, so that is never one of the
    two compared)."""
    pair = ("default", "shared") if n % 4 in (0, 3) else ("shared", "default")
    return (*pair, "per run")


async def round_async(url: str, runs: int) -> dict[str, float]:
    """One round: `runs` sequential Conversation.run calls for each way of holding connections,
    interleaved run by run (see _order), so that the load of the machine falls on the
    three alike. Each way's seconds: its runs, and making and closing its agent or client."""
    spent = dict.fromkeys(WAYS, 0.0)
    started = time.perf_counter()
    default = agui.HttpAgent(url)
    spent["default"] += time.perf_counter() - started
    started = time.perf_counter()
    client = httpx.AsyncClient()
    agents = {"default": default, "shared": agui.HttpAgent(url, client=client)}
    spent["shared"] += time.perf_counter() - started
    for n in range(runs):
        for way in _order(n):
            started = time.perf_counter()
            if way == "per run":
                async with httpx.AsyncClient() as own:
                    _check(await agui.Conversation().run(agui.HttpAgent(url, client=own), "hi"))
            else:
                _check(await agui.Conversation().run(agents[way], "hi"))
            spent[way] += time.perf_counter() - started
    started = time.perf_counter()
    await default.aclose()
    spent["default"] += time.perf_counter() - started
    started = time.perf_counter()
    await client.aclose()
    spent["shared"] += time.perf_counter() - started
    return spent


def round_sync(url: str, runs: int) -> dict[str, float]:
    """The same with Conversation.run_sync (HttpAgent's sync client)."""
    spent = dict.fromkeys(WAYS, 0.0)
    started = time.perf_counter()
    default = agui.HttpAgent(url)
    spent["default"] += time.perf_counter() - started
    started = time.perf_counter()
    client = httpx.Client()
    agents = {"default": default, "shared": agui.HttpAgent(url, sync_client=client)}
    spent["shared"] += time.perf_counter() - started
    for n in range(runs):
        for way in _order(n):
            started = time.perf_counter()
            if way == "per run":
                with httpx.Client() as own:
                    _check(agui.Conversation().run_sync(agui.HttpAgent(url, sync_client=own), "hi"))
            else:
                _check(agui.Conversation().run_sync(agents[way], "hi"))
            spent[way] += time.perf_counter() - started
    started = time.perf_counter()
    default.close()
    spent["default"] += time.perf_counter() - started
    started = time.perf_counter()
    client.close()
    spent["shared"] += time.perf_counter() - started
    return spent


def measure(url: str, rounds: int, runs: int) -> dict[str, dict[str, list[float]]]:
    """Each side's seconds per way, one figure per round (after a warm-up round)."""
    sides: dict[str, Callable[[], dict[str, float]]] = {
        "async": lambda: asyncio.run(round_async(url, runs)),
        "sync": lambda: round_sync(url, runs),
    }
    for side in sides.values():  # warm-up: imports, the server's first requests
        side()
    times: dict[str, dict[str, list[float]]] = {s: {w: [] for w in WAYS} for s in sides}
    for _ in range(rounds):
        for name, side in sides.items():
            for way, seconds in side().items():
                times[name][way].append(seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    rounds = 3 if args.quick else args.rounds
    server = Server()
    try:
        times = measure(server.url, rounds, args.runs)
    finally:
        server.stop()
    print(
        f"Client: {args.runs} sequential short runs (Conversation.run / run_sync -> AgentApp "
        f"under uvicorn on 127.0.0.1), median of {rounds} rounds; {machine()}"
    )
    print(
        f"{'':6} {'default':>10} {'shared':>10} {'per run':>10}   default/shared (paired)"
        "   per run/default"
    )
    results: dict[str, Any] = {"runs": args.runs, "rounds": rounds, "target": TARGET}
    for side, by_way in times.items():
        median = {way: statistics.median(xs) for way, xs in by_way.items()}
        paired = [d / s for d, s in zip(by_way["default"], by_way["shared"], strict=True)]
        low, ratio, high = quartiles(paired)
        slower = statistics.median(
            p / d for p, d in zip(by_way["per run"], by_way["default"], strict=True)
        )
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        print(
            f"{side:6} {median['default'] * 1e3:8.1f}ms {median['shared'] * 1e3:8.1f}ms "
            f"{median['per run'] * 1e3:8.1f}ms   {ratio:.2f}x ({low:.2f}-{high:.2f}x) {verdict} "
            f"(target <= {TARGET}x)   {slower:.1f}x"
        )
        results[side] = {
            "seconds": by_way,
            "median": median,
            "ratio": ratio,
            "ratio_quartiles": [low, high],
            "per_run_over_default": slower,
            "pass": ratio <= TARGET,
        }
    results["versions"] = versions(["agui-spec", "httpx", "uvicorn"])
    print(f"results: {write_results(RESULTS_DIR / 'client.json', results)}")


if __name__ == "__main__":
    main()
