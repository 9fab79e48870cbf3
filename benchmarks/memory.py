"""Memory benchmark: the peak memory of a long run through `agui.Conversation().run`.

Usage: ``python benchmarks/memory.py [--quick] [--events N]`` (``nox -s bench`` runs it last).

A local agent (an async generator) yields 1,000,000 events (100,000 with --quick), built as agui
models as it goes: a STATE_SNAPSHOT, then cycles of TEXT_MESSAGE_START, 20 token-sized
TEXT_MESSAGE_CONTENT deltas, TEXT_MESSAGE_END, a tool call (TOOL_CALL_START / ARGS / END /
RESULT) and a STATE_DELTA (a JSON Patch replace of a counter), with new ids every cycle, so the
messages grow as a long conversation's would (the last cycle is cut short to make the count
exact). Every string is a new object, as if decoded from the wire.

Each figure comes from a fresh subprocess that runs it once with `asyncio.run(
Conversation(...).run(agent, "hi"))`:

- peak RSS: resource.getrusage's ru_maxrss, and its growth over the RSS before the run (after
  the imports and a small warm-up run);
- tracemalloc peak: the largest traced size during the run (tracing starts just before it); in
  its own subprocess, because tracing slows the run and adds its own memory to the RSS.

Two modes: the default options (`Conversation()`), and `Conversation(keep_events=True)`, which
keeps every delivered event. Conversation.run adds the run's lifecycle (RUN_STARTED and
RUN_FINISHED, not in the event count) around the agent's events.

Printed: events, peak MiB per mode, the final message count and state size. Results also go to
``.bench/memory.json``. The exit status is 0: a benchmark reports and does not gate.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from common import RESULTS_DIR, machine, print_markdown_table, run_json, versions, write_results

RESULTS = RESULTS_DIR / "memory.json"
MODES = ("default", "keep_events")
DELTAS_PER_MESSAGE = 20
CYCLE = 1 + DELTAS_PER_MESSAGE + 1 + 4 + 1
"""Events per cycle: a text message, a tool call with its result, a state delta."""
DISTS = ("agui", "attrs", "cattrs", "orjson", "jsonpatch")
"""The distributions whose versions the results record."""

WORDS = (
    "The quick brown fox jumps over the lazy dog , and then it runs back to the river where "
    "the water is cold . Größe , naïve café ; isn't it ?"
).split()


def mib(n_bytes: float) -> float:
    return n_bytes / (1024 * 1024)


def max_rss_bytes() -> int:
    """The peak resident set size of this process so far."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


# ── the agent (runs in the child) ───────────────────────────────────────────────────────────────


def make_agent(total: int) -> Any:
    """An async generator agent yielding exactly `total` events."""
    import agui

    async def agent(run_input: Any) -> AsyncIterator[Any]:
        left = total
        yield agui.StateSnapshotEvent(snapshot={"counter": 0, "title": "memory benchmark"})
        left -= 1
        i = 0
        while left > 0:
            message_id = str(uuid.uuid4())
            if left < CYCLE:  # the last, short cycle: a shorter message, or state deltas
                if left >= 3:
                    yield agui.TextMessageStartEvent(
                        message_id=message_id, role=agui.TextMessageRole.ASSISTANT
                    )
                    for k in range(left - 2):
                        yield agui.TextMessageContentEvent(
                            message_id=message_id, delta=f" {WORDS[k % len(WORDS)]}{i}"
                        )
                    yield agui.TextMessageEndEvent(message_id=message_id)
                else:
                    for k in range(left):
                        yield agui.StateDeltaEvent(
                            delta=(agui.ReplaceOperation(path="/counter", value=i + k),)
                        )
                break
            tool_call_id = f"call_{uuid.uuid4().hex[:24]}"
            yield agui.TextMessageStartEvent(
                message_id=message_id, role=agui.TextMessageRole.ASSISTANT
            )
            for k in range(DELTAS_PER_MESSAGE):
                yield agui.TextMessageContentEvent(
                    message_id=message_id, delta=f" {WORDS[(i + k) % len(WORDS)]}"
                )
            yield agui.TextMessageEndEvent(message_id=message_id)
            yield agui.ToolCallStartEvent(
                tool_call_id=tool_call_id, tool_call_name="lookup", parent_message_id=message_id
            )
            yield agui.ToolCallArgsEvent(
                tool_call_id=tool_call_id, delta=f'{{"query": "weather in Zürich", "n": {i}}}'
            )
            yield agui.ToolCallEndEvent(tool_call_id=tool_call_id)
            yield agui.ToolCallResultEvent(
                message_id=str(uuid.uuid4()),
                tool_call_id=tool_call_id,
                content=f'{{"temperature": {i % 30}, "unit": "C"}}',
            )
            yield agui.StateDeltaEvent(delta=(agui.ReplaceOperation(path="/counter", value=i),))
            left -= CYCLE
            i += 1

    return agent


def child(mode: str, events: int, trace: bool) -> dict[str, Any]:
    import tracemalloc

    import orjson

    import agui

    # The warm-up: a small run loads the models and the codec.
    asyncio.run(agui.Conversation().run(make_agent(CYCLE * 2 + 1), "hi"))
    conv = agui.Conversation(keep_events=(mode == "keep_events"))
    agent = make_agent(events)
    gc.collect()
    rss_before = max_rss_bytes()
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    asyncio.run(conv.run(agent, "hi"))
    seconds = time.perf_counter() - started
    traced_peak = tracemalloc.get_traced_memory()[1] if trace else None
    if trace:
        tracemalloc.stop()
    rss_peak = max_rss_bytes()
    runs = conv.runs
    return {
        "mode": mode,
        "events": events,
        "tracemalloc": trace,
        "seconds": seconds,
        "rss_before_mib": mib(rss_before),
        "rss_peak_mib": mib(rss_peak),
        "rss_growth_mib": mib(rss_peak - rss_before),
        "tracemalloc_peak_mib": None if traced_peak is None else mib(traced_peak),
        "kept_events": len(conv.events),
        "messages": len(conv.messages),
        "state_bytes": len(orjson.dumps(conv.state)),
        "warnings": len(conv.warnings),
        "outcome": runs[-1].outcome if runs else None,
    }


# ── the parent ──────────────────────────────────────────────────────────────────────────────────


def spawn(mode: str, events: int, trace: bool) -> dict[str, Any]:
    return run_json(
        [__file__, "--child", mode, "--events", str(events)] + (["--trace"] if trace else []),
        f"memory: the {mode} run failed:",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 events instead of 1,000,000")
    parser.add_argument("--events", type=int, help="events the agent yields")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    events = args.events or (100_000 if args.quick else 1_000_000)
    if events < CYCLE + 3:
        parser.error(f"--events must be at least {CYCLE + 3}")
    if args.child:
        print(json.dumps(child(args.child, events, args.trace)))
        return 0

    load_before = os.getloadavg()
    runs = {}
    for trace in (False, True):
        for mode in MODES:
            print(f"{mode}{' (tracemalloc)' if trace else ''} ...", file=sys.stderr, flush=True)
            runs[mode, trace] = spawn(mode, events, trace)

    first = runs["default", False]
    print(f"\nConversation().run(agent, 'hi') over {events:,} events from a local agent")
    header = ("mode", "peak RSS MiB", "RSS growth MiB", "tracemalloc peak MiB", "s", "events/s")
    header += ("kept events",)
    body = []
    for mode in MODES:
        plain, traced = runs[mode, False], runs[mode, True]
        label = "Conversation()" if mode == "default" else "Conversation(keep_events=True)"
        body.append(
            (
                label,
                f"{plain['rss_peak_mib']:.1f}",
                f"{plain['rss_growth_mib']:.1f}",
                f"{traced['tracemalloc_peak_mib']:.1f}",
                f"{plain['seconds']:.1f}",
                f"{events / plain['seconds']:,.0f}",
                f"{plain['kept_events']:,}",
            )
        )
    print_markdown_table(header, body)
    print(
        f"final: {first['messages']:,} messages, state {first['state_bytes']:,} B (JSON), "
        f"{first['warnings']:,} warnings, last run {first['outcome']}; RSS before the run "
        f"{first['rss_before_mib']:.1f} MiB"
    )

    meta = {
        "versions": versions(DISTS),
        "machine": machine(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "events": events,
        "cycle": f"TEXT_MESSAGE_START, {DELTAS_PER_MESSAGE} x TEXT_MESSAGE_CONTENT, "
        "TEXT_MESSAGE_END, TOOL_CALL_START/ARGS/END/RESULT, STATE_DELTA",
    }
    rows = [runs[mode, trace] for trace in (False, True) for mode in MODES]
    print(f"results: {write_results(RESULTS, {'meta': meta, 'runs': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
