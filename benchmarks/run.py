"""Codec benchmarks: agui against the official ag-ui-protocol 1.0.0, side by side.

Usage: ``python benchmarks/run.py [--rounds N] [--quick]`` (or ``nox -s bench``).

Method (see the performance reference): both implementations run in this one process. First a
gate: each must decode every corpus document and re-encode it to JSON equal to the input, or
nothing is timed. Then interleaved rounds (the order of the two flips every round). In a round,
each case gets a short warm-up, then several repetitions of back-to-back calls lasting at least
the repetition target; the round's value is the median repetition. A case's ratio is the median
over rounds of the paired per-round ratio official_time / agui_time (above 1: agui is faster).

The table marks the targets set for this package; the exit status is 0 whether they are met or
not, because a benchmark reports and does not gate. Results also go to ``.bench/results.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ag_ui.core import Event as OfficialEvent, RunAgentInput as OfficialRunAgentInput
from ag_ui.encoder import EventEncoder
from common import (
    RESULTS_DIR,
    machine,
    paired_ratio,
    print_markdown_table,
    quartiles,
    ratio_cell,
    target_cell,
    versions,
    write_results,
)
from corpus import Corpus, load
from pydantic import TypeAdapter

try:
    import agui
except ImportError as exc:  # pragma: no cover - depends on the checkout
    raise SystemExit(f"benchmarks: cannot import agui ({exc}); install the package first") from exc

RESULTS = RESULTS_DIR / "results.json"
IMPLS = ("official", "agui")
DISTS = ("agui", "ag-ui-protocol", "pydantic", "pydantic-core", "attrs", "cattrs", "orjson")
"""The distributions whose versions the results record."""

Json = Any
Timed = Callable[[], None]


# ── the two implementations, called exactly as their users call them ─────────────────────────

_official_event = TypeAdapter(OfficialEvent)


def official_decode_event(doc: bytes) -> Any:
    return _official_event.validate_json(doc)


def official_decode_input(doc: bytes) -> Any:
    return OfficialRunAgentInput.model_validate_json(doc)


def official_encode(model: Any) -> bytes:
    return model.model_dump_json(by_alias=True, exclude_none=True).encode()  # type: ignore[no-any-return]


def official_sse(model: Any) -> str:
    return EventEncoder().encode(model)


def agui_decode_event(doc: bytes) -> Any:
    return agui.decode(doc, agui.Event, strict=False)


def agui_decode_input(doc: bytes) -> Any:
    return agui.decode(doc, agui.RunAgentInput, strict=False)


def agui_sse(model: Any) -> bytes:
    return b"data: " + agui.encode(model) + b"\n\n"


# The timed loops inline each call (no wrapper function per item), so both sides pay the same
# loop overhead and nothing else.


def official_decode_loop(docs: Sequence[bytes], *, body: bool = False) -> Timed:
    validate = OfficialRunAgentInput.model_validate_json if body else _official_event.validate_json

    def run() -> None:
        for doc in docs:
            validate(doc)

    return run


def agui_decode_loop(docs: Sequence[bytes], *, body: bool = False) -> Timed:
    decode, cls = agui.decode, agui.RunAgentInput if body else agui.Event

    def run() -> None:
        for doc in docs:
            decode(doc, cls, strict=False)

    return run


def official_encode_loop(models: Sequence[Any]) -> Timed:
    def run() -> None:
        for model in models:
            model.model_dump_json(by_alias=True, exclude_none=True).encode()

    return run


def agui_encode_loop(models: Sequence[Any]) -> Timed:
    encode = agui.encode

    def run() -> None:
        for model in models:
            encode(model)

    return run


def official_sse_loop(models: Sequence[Any]) -> Timed:
    encoder = EventEncoder()

    def run() -> None:
        for model in models:
            encoder.encode(model)

    return run


def agui_sse_loop(models: Sequence[Any]) -> Timed:
    encode = agui.encode

    def run() -> None:
        for model in models:
            b"data: " + encode(model) + b"\n\n"

    return run


# ── gate ─────────────────────────────────────────────────────────────────────────────────────


def first_difference(want: Json, got: Json, path: str = "") -> str | None:
    """Where ``got`` differs from ``want`` as JSON (bool, int and float are distinct), or None."""
    where = path or "/"
    if type(want) is not type(got):
        return f"{where}: got {type(got).__name__} {got!r:.80}, want {type(want).__name__} {want!r:.80}"
    if isinstance(want, dict):
        for key in sorted(want.keys() | got.keys()):
            if key not in got:
                return f"{path}/{key}: missing from the output"
            if key not in want:
                return f"{path}/{key}: not in the input"
            if diff := first_difference(want[key], got[key], f"{path}/{key}"):
                return diff
        return None
    if isinstance(want, list):
        if len(want) != len(got):
            return f"{where}: {len(got)} items, want {len(want)}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            if diff := first_difference(w, g, f"{path}/{i}"):
                return diff
        return None
    return None if want == got else f"{where}: got {got!r:.80}, want {want!r:.80}"


@dataclass(frozen=True)
class GateReport:
    impl: str
    checked: int
    identical_bytes: int
    failures: list[str]


def gate_one(
    impl: str,
    corpus: Corpus,
    decode_event: Callable[[bytes], Any],
    decode_input: Callable[[bytes], Any],
    encode: Callable[[Any], bytes],
    sse: Callable[[Any], bytes | str],
) -> GateReport:
    """Round-trip every document (and SSE-frame every event) through one implementation."""
    failures: list[str] = []
    identical = 0
    docs = [
        (f"event {i} {t}", d)
        for i, (t, d) in enumerate(zip(corpus.event_types, corpus.events, strict=True))
    ]
    docs.append(("RunAgentInput body", corpus.run_input))
    for label, doc in docs:
        is_event = label.startswith("event")
        try:
            model = (decode_event if is_event else decode_input)(doc)
            out = encode(model)
            frame = sse(model) if is_event else None
        except Exception as exc:
            failures.append(f"{label}: {type(exc).__name__}: {exc}"[:400])
            continue
        want = json.loads(doc)
        if diff := first_difference(want, json.loads(out)):
            failures.append(f"{label}: re-encoded JSON differs at {diff}")
            continue
        identical += out == doc
        if frame is not None:
            raw = frame.encode() if isinstance(frame, str) else frame
            if not (raw.startswith(b"data: ") and raw.endswith(b"\n\n")):
                failures.append(f"{label}: SSE frame is not 'data: <json>\\n\\n': {raw[:60]!r}")
            elif diff := first_difference(want, json.loads(raw[6:-2])):
                failures.append(f"{label}: SSE frame JSON differs at {diff}")
    return GateReport(impl, len(docs), identical, failures)


def gate_checks() -> None:
    """Abort unless agui.encode checks what it writes, as the official SDK's models do when they
    are built: the encode cases time the checked encoder."""
    invalid = {
        "messageId 5": lambda: agui.TextMessageStartEvent(message_id=5),
        "NaN in the state": lambda: agui.StateSnapshotEvent(snapshot={"x": [1.5, float("nan")]}),
    }
    let_through = []
    for label, build in invalid.items():
        try:
            agui.encode(build())
        except agui.EncodeError:
            continue
        let_through.append(label)
    if let_through:
        raise SystemExit(
            f"gate FAILED: agui.encode wrote an invalid event ({', '.join(let_through)})"
        )
    print(f"gate: agui: encode refuses invalid events ({', '.join(invalid)})")


def gate(corpus: Corpus) -> None:
    """Abort unless both implementations round-trip the whole corpus to equal JSON, and agui's
    encoder refuses invalid events."""
    gate_checks()
    reports = [
        gate_one(
            "official (ag-ui-protocol)",
            corpus,
            official_decode_event,
            official_decode_input,
            official_encode,
            official_sse,
        ),
        gate_one("agui", corpus, agui_decode_event, agui_decode_input, agui.encode, agui_sse),
    ]
    for r in reports:
        ok = r.checked - len(r.failures)
        print(
            f"gate: {r.impl}: {ok}/{r.checked} documents round-trip to equal JSON "
            f"({r.identical_bytes} byte-identical)"
        )
    if any(r.failures for r in reports):
        lines = ["", "gate FAILED: only like-for-like wire output is timed; fix these first:"]
        for r in reports:
            lines += [f"  {r.impl}: {f}" for f in r.failures[:10]]
            if len(r.failures) > 10:
                lines.append(f"  {r.impl}: ... and {len(r.failures) - 10} more")
        raise SystemExit("\n".join(lines))


# ── timing ───────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Case:
    name: str
    items: int
    """Items processed by one call of the timed functions (events, or 1 for a document)."""
    unit: str
    timed: dict[str, Timed]
    target: float | None = None
    """The minimum official/agui ratio this package aims for, if the issue sets one."""


def build_cases(corpus: Corpus) -> list[Case]:
    content = corpus.of_type("TEXT_MESSAGE_CONTENT")
    deltas = corpus.of_type("STATE_DELTA")
    snapshot = corpus.of_type("MESSAGES_SNAPSHOT")
    state = corpus.of_type("STATE_SNAPSHOT")
    body = [corpus.run_input]

    def models(decode: Callable[[bytes], Any], docs: Sequence[bytes]) -> list[Any]:
        return [decode(d) for d in docs]

    def enc(docs: Sequence[bytes], *, is_body: bool = False) -> dict[str, Timed]:
        return {
            "official": official_encode_loop(
                models(official_decode_input if is_body else official_decode_event, docs)
            ),
            "agui": agui_encode_loop(
                models(agui_decode_input if is_body else agui_decode_event, docs)
            ),
        }

    def dec(docs: Sequence[bytes], *, is_body: bool = False) -> dict[str, Timed]:
        return {
            "official": official_decode_loop(docs, body=is_body),
            "agui": agui_decode_loop(docs, body=is_body),
        }

    stream = corpus.events
    n_msgs = len(json.loads(snapshot[0])["messages"])
    n_body = len(json.loads(corpus.run_input)["messages"])
    return [
        Case("decode TEXT_MESSAGE_CONTENT", len(content), "event", dec(content)),
        Case("decode whole stream (avg)", len(stream), "event", dec(stream), target=2.0),
        Case(f"decode MESSAGES_SNAPSHOT ({n_msgs} msgs)", 1, "doc", dec(snapshot)),
        Case("decode STATE_DELTA", len(deltas), "event", dec(deltas)),
        Case(
            f"decode RunAgentInput ({n_body} msgs)", 1, "doc", dec(body, is_body=True), target=2.0
        ),
        Case("encode TEXT_MESSAGE_CONTENT", len(content), "event", enc(content)),
        Case("encode whole stream (avg)", len(stream), "event", enc(stream), target=5.0),
        Case(f"encode MESSAGES_SNAPSHOT ({n_msgs} msgs)", 1, "doc", enc(snapshot)),
        Case("encode STATE_DELTA", len(deltas), "event", enc(deltas)),
        # the any-JSON check at its heaviest: one state, all of it written as it is
        Case(f"encode STATE_SNAPSHOT ({len(state[0]):,} B)", 1, "doc", enc(state)),
        Case(f"encode RunAgentInput ({n_body} msgs)", 1, "doc", enc(body, is_body=True)),
        Case(
            "SSE frame whole stream (avg)",
            len(stream),
            "event",
            {
                "official": official_sse_loop(models(official_decode_event, stream)),
                "agui": agui_sse_loop(models(agui_decode_event, stream)),
            },
            target=5.0,
        ),
    ]


@dataclass(frozen=True)
class Settings:
    rounds: int
    repetitions: int
    repetition_s: float
    warmup_s: float


def measure(fn: Timed, items: int, s: Settings) -> float:
    """Seconds per item: the median of ``s.repetitions`` runs of back-to-back calls."""
    clock = time.perf_counter
    calls, start = 0, clock()
    while calls < 2 or clock() - start < s.warmup_s:  # warm up, and estimate one call
        fn()
        calls += 1
    loops = max(1, math.ceil(s.repetition_s / ((clock() - start) / calls)))
    samples = []
    for _ in range(s.repetitions):
        gc.collect()
        t0 = clock()
        for _ in range(loops):
            fn()
        samples.append((clock() - t0) / (loops * items))
    return statistics.median(samples)


def run_rounds(cases: list[Case], s: Settings) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {c.name: {i: [] for i in IMPLS} for c in cases}
    for r in range(s.rounds):
        t0 = time.perf_counter()
        order = IMPLS if r % 2 == 0 else IMPLS[::-1]
        for case in cases:
            for impl in order:
                times[case.name][impl].append(measure(case.timed[impl], case.items, s))
        elapsed = time.perf_counter() - t0
        print(
            f"round {r + 1}/{s.rounds} ({' first, '.join(order)} second): {elapsed:.1f} s",
            file=sys.stderr,
        )
    return times


# ── report ───────────────────────────────────────────────────────────────────────────────────


def fmt_us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:,.0f}" if us >= 100 else f"{us:.2f}"


def fmt_rate(seconds: float) -> str:
    rate = 1 / seconds
    return f"{rate / 1e6:.2f} M/s" if rate >= 1e6 else f"{rate / 1e3:,.1f} k/s"


def summarise(cases: list[Case], times: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        t = times[case.name]
        row: dict[str, Any] = {"case": case.name, "unit": case.unit, "items": case.items}
        for impl in IMPLS:
            p25, med, p75 = quartiles(t[impl])
            row[impl] = {"us_per_item": med * 1e6, "p25_us": p25 * 1e6, "p75_us": p75 * 1e6}
            row[impl]["per_second"] = 1 / med
            row[impl]["rounds_us"] = [x * 1e6 for x in t[impl]]
        row |= paired_ratio(t["official"], t["agui"], case.target)
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]], rounds: int) -> None:
    header = (
        "case",
        "official µs",
        "agui µs",
        "official /s",
        "agui /s",
        "× (official/agui)",
        "target",
    )
    body = []
    for row in rows:
        o, a = row["official"], row["agui"]
        body.append(
            (
                row["case"],
                f"{fmt_us(o['us_per_item'] / 1e6)}/{row['unit']}",
                f"{fmt_us(a['us_per_item'] / 1e6)}/{row['unit']}",
                fmt_rate(o["us_per_item"] / 1e6),
                fmt_rate(a["us_per_item"] / 1e6),
                ratio_cell(row),
                target_cell(row),
            )
        )
    print(
        f"\nmedian of {rounds} interleaved rounds; × = paired official/agui time (>1: agui faster, p25–p75)"
    )
    print_markdown_table(header, body)
    targets = [row for row in rows if row["target"] is not None]
    met = sum(bool(row["met"]) for row in targets)
    print(f"\ntargets met: {met}/{len(targets)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 15, quick 5)")
    parser.add_argument("--quick", action="store_true", help="short run: 5 rounds of 3 x 5 ms")
    args = parser.parse_args(argv)
    s = (
        Settings(rounds=5, repetitions=3, repetition_s=0.005, warmup_s=0.003)
        if args.quick
        else Settings(rounds=15, repetitions=5, repetition_s=0.020, warmup_s=0.010)
    )
    if args.rounds is not None:
        if args.rounds < 1:
            parser.error("--rounds must be at least 1")
        s = Settings(args.rounds, s.repetitions, s.repetition_s, s.warmup_s)

    corpus = load()
    print(
        f"corpus: {len(corpus.events)} events ({sum(map(len, corpus.events)):,} B), "
        f"RunAgentInput {len(corpus.run_input):,} B"
    )
    gate(corpus)
    cases = build_cases(corpus)
    sys.stdout.flush()  # the per-round progress goes to stderr
    load_before = os.getloadavg()
    times = run_rounds(cases, s)
    rows = summarise(cases, times)
    print_table(rows, s.rounds)

    meta = {
        "versions": versions(DISTS),
        "machine": machine(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "settings": vars(args)
        | {"repetitions": s.repetitions, "repetition_ms": s.repetition_s * 1e3},
        "rounds": s.rounds,
    }
    print(f"results: {write_results(RESULTS, {'meta': meta, 'cases': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
