"""The binary transport against JSON: encode and decode speed, and bytes on the wire.

Usage: ``python benchmarks/proto.py [--rounds N] [--quick]`` (or ``nox -s bench``).

On the benchmark corpus (benchmarks/corpus.py: one 599-event chat run), in this one process:

* bytes on the wire: the whole run as SSE frames (``data: <json>\\n\\n``), as bare JSON documents,
  and as protobuf frames (4-byte length + ``ag_ui.Event``), also per event type;
* encode: model -> SSE frame (``agui.sse_frame``) versus model -> protobuf frame
  (``proto_frame``);
* decode: one frame's payload -> checked model, JSON (``agui.decode``) versus protobuf
  (``agui.decode_proto``). Both end in the same generated checks; protobuf first reads the bytes
  into the event's JSON object (``decode_proto_json``), which is also timed alone;
* for reference, when the protobuf runtime is installed, its C parser alone
  (``ag_ui.Event.FromString``), which yields no AG-UI model.

First a gate: every event must come back from its protobuf frame equal to its JSON decoding, or
nothing is timed. Then interleaved rounds; in each, every case runs several repetitions of
back-to-back calls over its documents, and the round's value is the median repetition. The table
gives the median over rounds, per event. Results also go to ``.bench/proto.json``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from common import RESULTS_DIR, write_results
from corpus import load

import agui
from agui.wire.proto import decode_proto_json, proto_frame

RESULTS = RESULTS_DIR / "proto.json"
GROUPS = ("all", "TEXT_MESSAGE_CONTENT", "STATE_DELTA", "MESSAGES_SNAPSHOT")


def sizes(
    events: Sequence[bytes], models: Sequence[Any], types: Sequence[str]
) -> list[dict[str, Any]]:
    rows = []
    for group in (*GROUPS, "STATE_SNAPSHOT", "TOOL_CALL_ARGS"):
        picked = [i for i, t in enumerate(types) if group == "all" or t == group]
        if not picked:
            continue
        json_bytes = sum(len(events[i]) for i in picked)
        sse_bytes = sum(len(agui.sse_frame(models[i])) for i in picked)
        proto_bytes = sum(len(proto_frame(models[i])) for i in picked)
        rows.append(
            {
                "group": group,
                "events": len(picked),
                "json": json_bytes,
                "sse": sse_bytes,
                "proto": proto_bytes,
                "proto_vs_sse": proto_bytes / sse_bytes,
            }
        )
    return rows


def gate(events: Sequence[bytes], models: Sequence[Any]) -> None:
    for i, (doc, model) in enumerate(zip(events, models, strict=True)):
        back = agui.decode_proto(agui.encode_proto(model), strict=True)
        if back != model:
            sys.exit(f"gate: event {i} does not survive the binary form: {doc[:200]!r}")


def loop(fn: Callable[[Any], Any], items: Sequence[Any]) -> Callable[[], None]:
    def run() -> None:
        for item in items:
            fn(item)

    return run


def measure(run: Callable[[], None], items: int, target: float) -> float:
    """Seconds per item: the median of 5 repetitions, each at least `target` seconds long."""
    run()  # warm-up
    reps = []
    for _ in range(5):
        n = 0
        start = time.perf_counter()
        while True:
            run()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= target:
                break
        reps.append(elapsed / (n * items))
    return statistics.median(reps)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds, short repetitions")
    args = parser.parse_args(argv)
    rounds, target = (3, 0.02) if args.quick else (args.rounds, 0.1)

    corpus = load()
    events, types = corpus.events, corpus.event_types
    models = [agui.decode(e, strict=True) for e in events]
    gate(events, models)
    frames = [agui.encode_proto(m) for m in models]

    try:
        from agui_generated import proto_pb2

        parse_only: Callable[[bytes], Any] | None = proto_pb2.Event.FromString
    except ImportError:
        parse_only = None

    cases: dict[tuple[str, str], tuple[Callable[[], None], int]] = {}
    for group in GROUPS:
        picked = [i for i, t in enumerate(types) if group == "all" or t == group]
        m = [models[i] for i in picked]
        j = [events[i] for i in picked]
        p = [frames[i] for i in picked]
        n = len(picked)
        cases[(group, "encode json (sse_frame)")] = (loop(agui.sse_frame, m), n)
        cases[(group, "encode proto (proto_frame)")] = (loop(proto_frame, m), n)
        cases[(group, "decode json (decode)")] = (loop(agui.decode, j), n)
        cases[(group, "decode proto (decode_proto)")] = (loop(agui.decode_proto, p), n)
        cases[(group, "  proto bytes -> JSON object")] = (loop(decode_proto_json, p), n)
        if parse_only is not None:
            cases[(group, "  upb parse only (reference)")] = (loop(parse_only, p), n)

    times: dict[tuple[str, str], list[float]] = {k: [] for k in cases}
    keys = list(cases)
    for r in range(rounds):
        order = keys if r % 2 == 0 else list(reversed(keys))
        for key in order:
            gc.collect()
            run, n = cases[key]
            times[key].append(measure(run, n, target))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)

    print(f"\nbinary transport vs JSON on the benchmark corpus ({len(events)} events)\n")
    print("bytes on the wire")
    print(f"  {'events':<22}{'n':>5}{'JSON':>11}{'SSE':>11}{'protobuf':>11}{'proto/SSE':>11}")
    size_rows = sizes(events, models, types)
    for row in size_rows:
        print(
            f"  {row['group']:<22}{row['events']:>5}{row['json']:>11,}{row['sse']:>11,}"
            f"{row['proto']:>11,}{row['proto_vs_sse']:>10.0%}"
        )
    print(f"\nspeed, µs per event (median of {rounds} rounds)")
    results = []
    for group in GROUPS:
        print(f"  {group}")
        for (g, name), values in times.items():
            if g != group:
                continue
            median = statistics.median(values) * 1e6
            results.append({"group": g, "case": name.strip(), "us_per_event": median})
            print(f"    {name:<34}{median:>9.2f}")
        enc = statistics.median(times[(group, "encode proto (proto_frame)")])
        enc_json = statistics.median(times[(group, "encode json (sse_frame)")])
        dec = statistics.median(times[(group, "decode proto (decode_proto)")])
        dec_json = statistics.median(times[(group, "decode json (decode)")])
        print(f"    protobuf/JSON time: encode {enc / enc_json:.2f}x, decode {dec / dec_json:.2f}x")
    counts = Counter(types)
    saved = write_results(
        RESULTS, {"sizes": size_rows, "speed": results, "types": counts, "rounds": rounds}
    )
    print(f"\nresults: {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
