"""Import-time benchmark: `import agui` against the official ag-ui-protocol 1.0.0, side by side.

Usage: ``python benchmarks/imports.py [--rounds N]`` (``nox -s bench`` runs it first).

Each measurement is one fresh interpreter (``sys.executable -c ...``) that times the import
statement itself with ``time.perf_counter`` around it, so interpreter start-up is not counted. Two
cases, each with the same interpreter, the same environment (PYTHONDONTWRITEBYTECODE unset, so
the bytecode caches are used) and warm caches (one untimed run of every snippet first, which
also checks that it works):

- import: ``import agui`` against ``import ag_ui.core, ag_ui.encoder`` (what a user of the
  official SDK imports to get the models and the SSE encoder).
- import + first use: ``import agui; agui.decode(doc)`` against ``import ag_ui.core;
  ag_ui.core.TextMessageContentEvent.model_validate_json(doc)`` for one small TEXT_MESSAGE_CONTENT
  event. `import agui` is lazy (PEP 562): the models and the codec load on first use, so this line
  is the honest one for a program that imports agui to use it. (agui.decode decodes the document as
  any Event, which includes finding its type; the official line parses the one class named.)

Rounds are interleaved: in every round each snippet runs once, and the order of the two
implementations flips every round. A case's figure is the median over rounds; its ratio is the
median of the paired per-round ratios official_time / agui_time (above 1: agui is faster). The
target for the import is 2x; the exit status is 0 whether it is met or not, because a benchmark
reports and does not gate. Results also go to ``.bench/imports.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from common import (
    RESULTS_DIR,
    machine,
    paired_ratio,
    print_markdown_table,
    quartiles,
    ratio_cell,
    run_json,
    target_cell,
    versions,
    write_results,
)

RESULTS = RESULTS_DIR / "imports.json"
IMPLS = ("official", "agui")
TARGET = 2.0
DISTS = ("agui", "ag-ui-protocol", "pydantic", "pydantic-core", "attrs", "cattrs", "orjson")
"""The distributions whose versions the results record."""

DOC = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"Hello, w\xc3\xb6rld"}'
"""The event the first-use case decodes."""

# The program each measurement runs; the clock covers {timed} only.
PROGRAM = """\
import sys, time
DOC = {doc!r}
before = len(sys.modules)
t0 = time.perf_counter()
{timed}
t1 = time.perf_counter()
loaded = len(sys.modules) - before
import json
result = locals().get("result")
print(json.dumps({{
    "seconds": t1 - t0,
    "modules": loaded,
    "decoded": None if result is None else [type(result).__name__, result.delta],
}}))
"""


@dataclass(frozen=True)
class Case:
    name: str
    snippets: dict[str, str]
    """The timed statements, per implementation."""
    target: float | None = None


CASES = (
    Case(
        "import",
        {"official": "import ag_ui.core, ag_ui.encoder", "agui": "import agui"},
        target=TARGET,
    ),
    Case(
        "import + first use",
        {
            "official": "import ag_ui.core\n"
            "result = ag_ui.core.TextMessageContentEvent.model_validate_json(DOC)",
            "agui": "import agui\nresult = agui.decode(DOC)",
        },
    ),
)


def environment() -> dict[str, str]:
    """This environment, without what would change how imports behave or what they print."""
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME", "PYTHONVERBOSE"):
        env.pop(name, None)
    return env


def measure(timed: str) -> dict[str, Any]:
    """Run one fresh interpreter; return what it reports (seconds, modules loaded, decoded)."""
    return run_json(
        ["-c", PROGRAM.format(doc=DOC, timed=timed)],
        f"imports: this snippet failed:\n{timed}",
        env=environment(),
    )


def warm_up_and_check() -> dict[tuple[str, str], int]:
    """One untimed run of every snippet (it writes the bytecode caches); each first-use snippet
    must decode the document to a TEXT_MESSAGE_CONTENT with the right delta. Returns how many
    modules each snippet loads."""
    want = ["TextMessageContentEvent", json.loads(DOC)["delta"]]
    modules = {}
    for case in CASES:
        for impl, timed in case.snippets.items():
            got = measure(timed)
            if "result" in timed and got["decoded"] != want:
                raise SystemExit(f"imports: {impl} decoded {got['decoded']}, not {want}")
            modules[case.name, impl] = got["modules"]
    return modules


def run_rounds(rounds: int) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {c.name: {i: [] for i in IMPLS} for c in CASES}
    for n in range(rounds):
        order = IMPLS if n % 2 == 0 else IMPLS[::-1]
        for case in CASES:
            for impl in order:
                times[case.name][impl].append(measure(case.snippets[impl])["seconds"])
        print(f"round {n + 1}/{rounds}", file=sys.stderr, flush=True)
    return times


def summarise(
    times: dict[str, dict[str, list[float]]], modules: dict[tuple[str, str], int]
) -> list[dict[str, Any]]:
    rows = []
    for case in CASES:
        t = times[case.name]
        row: dict[str, Any] = {"case": case.name}
        for impl in IMPLS:
            p25, med, p75 = quartiles(t[impl])
            row[impl] = {
                "snippet": case.snippets[impl],
                "ms": med * 1e3,
                "p25_ms": p25 * 1e3,
                "p75_ms": p75 * 1e3,
                "modules_loaded": modules[case.name, impl],
                "rounds_ms": [x * 1e3 for x in t[impl]],
            }
        row |= paired_ratio(t["official"], t["agui"], case.target)
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]], rounds: int) -> None:
    header = ("case", "official ms", "agui ms", "modules (official / agui)", "× (official/agui)")
    header += ("target",)
    body = []
    for row in rows:
        o, a = row["official"], row["agui"]
        body.append(
            (
                row["case"],
                f"{o['ms']:.1f}",
                f"{a['ms']:.1f}",
                f"{o['modules_loaded']} / {a['modules_loaded']}",
                ratio_cell(row),
                target_cell(row),
            )
        )
    print(
        f"\nimport time in a fresh interpreter (start-up excluded), median of {rounds} "
        "interleaved rounds;\n× = paired official/agui time (>1: agui faster, p25–p75)"
    )
    print_markdown_table(header, body)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    load_before = os.getloadavg()
    modules = warm_up_and_check()
    times = run_rounds(args.rounds)
    rows = summarise(times, modules)
    print_table(rows, args.rounds)

    meta = {
        "versions": versions(DISTS),
        "python": sys.executable,
        "machine": machine(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "rounds": args.rounds,
        "document": DOC.decode(),
    }
    print(f"results: {write_results(RESULTS, {'meta': meta, 'cases': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
