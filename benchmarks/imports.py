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

Then the start-up of the command line (agui alone, no peer), in the same rounds:

- imports, timed as above: ``import agui.cli.run`` (what `agui run` and `agui replay` import before
  they parse anything) and ``import agui_generated.codec`` (the codec with the models it needs);
- whole commands, timed from outside (``time.perf_counter`` around the child process, so the
  interpreter's start-up is in): ``python -c pass`` for reference, ``agui --version``,
  ``agui --help``, and ``agui run URL`` against a server this script starts on a free loopback
  port (``--serve``: ``AgentApp`` of PACED_AGENT under uvicorn, in its own process), whose run
  streams a message for about RUN_SECONDS. The run's own time is the same run through a warm
  ``Conversation.run(HttpAgent(url))`` in this process, in the same round; the overhead of the
  command is its time minus that (paired round by round), and its target is at most
  ``1.3 x run + 200 ms``.

Each case also reports its median CPU time (user + system: ``time.process_time`` around an import,
the child's resource usage for a command), which a busy machine inflates far less than the wall
clock: on a shared machine, compare those.

Each of these runs twice per round: with the bytecode caches (warm, as above: what a user sees
after the first start) and without any for the installed packages and this checkout (cold:
``PYTHONDONTWRITEBYTECODE=1`` and a ``PYTHONPYCACHEPREFIX`` holding only the standard library's,
compiled once into a temporary folder; what a container built with ``uv pip install`` without
``--compile-bytecode`` and run with ``PYTHONDONTWRITEBYTECODE=1`` sees at every start).
``--cache warm`` or ``--cache cold`` measures one of them only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import (
    RESULTS_DIR,
    ROOT,
    machine,
    paired_ratio,
    print_markdown_table,
    quartiles,
    ratio_cell,
    run_json,
    serve_on_loopback,
    spawn_server,
    stop_process,
    target_cell,
    versions,
    write_results,
)

RESULTS = RESULTS_DIR / "imports.json"
IMPLS = ("official", "agui")
TARGET = 2.0
DISTS = (
    "agui-spec",
    "ag-ui-protocol",
    "pydantic",
    "pydantic-core",
    "attrs",
    "cattrs",
    "orjson",
    "httpx",
    "uvicorn",
)
"""The distributions whose versions the results record."""

DOC = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"Hello, w\xc3\xb6rld"}'
"""The event the first-use case decodes."""

# The program each measurement runs; the clock covers {timed} only.
PROGRAM = """\
import sys, time
DOC = {doc!r}
before = len(sys.modules)
c0 = time.process_time()
t0 = time.perf_counter()
{timed}
t1 = time.perf_counter()
c1 = time.process_time()
loaded = len(sys.modules) - before
import json
result = locals().get("result")
print(json.dumps({{
    "seconds": t1 - t0,
    "cpu": c1 - c0,
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
    for name in (
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONPYCACHEPREFIX",
        "PYTHONPROFILEIMPORTTIME",
        "PYTHONVERBOSE",
    ):
        env.pop(name, None)
    return env


def measure(timed: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one fresh interpreter; return what it reports (seconds, modules loaded, decoded)."""
    return run_json(
        ["-c", PROGRAM.format(doc=DOC, timed=timed)],
        f"imports: this snippet failed:\n{timed}",
        env=environment() if env is None else env,
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


# ── the command line's start-up ───────────────────────────────────────────────────────────────

CACHES = ("warm", "cold")
STARTUP_IMPORTS = ("import agui.cli.run", "import agui_generated.codec")
"""The imports timed in a fresh interpreter, with and without bytecode caches."""
COMMANDS = {
    "python -c pass": ("python", "-c", "pass"),
    "agui --version": ("agui", "--version"),
    "agui --help": ("agui", "--help"),
}
"""The whole commands timed from outside ("python" and "agui" are replaced by the interpreter
and the command line); `agui run` is apart (RUN_CASE)."""
RUN_CASE = "agui run URL"
OWN_CASE = "the run itself (warm client)"
RUN_SECONDS = 0.5
"""About how long PACED_AGENT's run streams."""
DELTAS = 20
RUN_TARGET = (1.3, 0.2)
"""`agui run` on the paced run: at most 1.3 x the run's own time + 0.2 s."""
PATH = "/agent"
COLD_EXCLUDE = r"[/\\](site-packages|test|tests|idlelib|tkinter|turtledemo|lib2to3|ensurepip)[/\\]"
"""What compileall leaves out of the standard library's caches for the cold case."""


async def paced_agent(run_input: Any) -> AsyncIterator[Any]:
    """A message streamed as DELTAS text deltas over about RUN_SECONDS (a model's answer)."""
    import agui

    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    for n in range(DELTAS):
        await asyncio.sleep(RUN_SECONDS / DELTAS)
        yield agui.TextMessageContentEvent(message_id="m", delta=f"word{n} ")
    yield agui.TextMessageEndEvent(message_id="m")


def serve() -> None:
    """The server subprocess (--serve): bind a free loopback port, print it, serve PACED_AGENT
    until SIGINT."""

    import agui

    app = agui.AgentApp(paced_agent, path=PATH)
    serve_on_loopback(app)


def agui_command() -> list[str]:
    """The `agui` script installed beside this interpreter, else `python -m agui`."""
    script = Path(sys.executable).with_name("agui")
    return [str(script)] if script.exists() else [sys.executable, "-m", "agui"]


class Startup:
    """The start-up cases: a server of PACED_AGENT, the standard library's caches for the cold
    case, a warm client for the run's own time, and one measurement of every case per call of
    round()."""

    def __init__(self, caches: Sequence[str], folder: Path) -> None:
        self.caches = tuple(caches)
        self.envs = {"warm": environment()}
        if "cold" in self.caches:
            self.envs["cold"] = self._cold_environment(folder / "pycache")
        self.proc, port = spawn_server([sys.executable, __file__, "--serve"])
        self.url = f"http://127.0.0.1:{port}{PATH}"
        self.runner = asyncio.Runner()
        import agui

        self.agent = agui.HttpAgent(self.url)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.own_run()
                break
            except SystemExit:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.1)
        self.times: dict[str, dict[str, list[float]]] = {
            cache: {name: [] for name in self.cases()} for cache in self.caches
        }
        self.times["warm"] = self.times.get("warm", {}) | {OWN_CASE: []}
        self.cpu: dict[str, dict[str, list[float]]] = {
            cache: {name: [] for name in self.cases()} for cache in self.caches
        }
        self.modules: dict[str, dict[str, int]] = {cache: {} for cache in self.caches}

    @staticmethod
    def cases() -> list[str]:
        return [*STARTUP_IMPORTS, *COMMANDS, RUN_CASE]

    @staticmethod
    def _cold_environment(prefix: Path) -> dict[str, str]:
        """No bytecode written, and none read but the standard library's (compiled here)."""
        stdlib = sysconfig.get_paths()["stdlib"]
        print(f"compiling the standard library into {prefix} (the cold case) ...", file=sys.stderr)
        compileall = ["-m", "compileall", "-q", "-j", "0", "-x", COLD_EXCLUDE, stdlib]
        subprocess.run(
            [sys.executable, "-X", f"pycache_prefix={prefix}", *compileall],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        env = environment() | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}
        # The check: in this environment the standard library's modules come from their caches
        # and agui's and the generated package's from source.
        probe = run_json(
            [
                "-c",
                "import json, os, asyncio, agui_generated.codec as c, agui.cli.run as r\n"
                "print(json.dumps({'cached': [os.path.exists(m.__cached__) "
                "for m in (asyncio, c, r)]}))",
            ],
            "imports: the cold environment does not work",
            env=env,
        )
        if probe["cached"] != [True, False, False]:
            raise SystemExit(f"imports: the cold environment is not cold: {probe}")
        return env

    def own_run(self) -> float:
        """One run through the warm client (its connection pooled): the run's own time."""
        import agui

        async def run() -> float:
            started = time.perf_counter()
            result = await agui.Conversation().run(self.agent, "hello")
            seconds = time.perf_counter() - started
            if result is None or result.outcome != "success":
                raise SystemExit(f"imports: the run did not succeed: {result}")
            return seconds

        return self.runner.run(run())

    def command(self, argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
        """The time of one child process, from its start to its exit, and the CPU time it used
        (user and system: what a busy machine does not inflate as much as the wall clock)."""
        cpu = _children_cpu()
        started = time.perf_counter()
        done = subprocess.run(
            argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        seconds = time.perf_counter() - started
        cpu = _children_cpu() - cpu
        if done.returncode != 0:
            raise SystemExit(f"imports: {' '.join(argv)} exited {done.returncode}:\n{done.stderr}")
        return seconds, cpu

    def timed_command(self, cache: str, name: str, words: Sequence[str]) -> None:
        seconds, used = self.command(self.argv(words), self.envs[cache])
        self.times[cache][name].append(seconds)
        self.cpu[cache][name].append(used)

    def argv(self, words: Sequence[str]) -> list[str]:
        head = {"python": [sys.executable], "agui": agui_command()}[words[0]]
        return [*head, *words[1:]]

    def warm_up(self) -> None:
        """One untimed measurement of every case (the warm case writes its bytecode caches; every
        command must succeed)."""
        self.round(0)
        for table in (self.times, self.cpu):
            for cache in table.values():
                for xs in cache.values():
                    xs.clear()

    def round(self, n: int) -> None:
        order = self.caches if n % 2 == 0 else self.caches[::-1]
        for cache in order:
            env = self.envs[cache]
            times = self.times[cache]
            for timed in STARTUP_IMPORTS:
                got = measure(timed, env)
                times[timed].append(got["seconds"])
                self.cpu[cache][timed].append(got["cpu"])
                self.modules[cache][timed] = got["modules"]
            for name, words in COMMANDS.items():
                self.timed_command(cache, name, words)
            run = ("agui", "run", self.url)
            if (n // 2) % 2 == 0:  # ABBA: the command and the warm run alternate first
                self.timed_command(cache, RUN_CASE, run)
                if cache == "warm":
                    times[OWN_CASE].append(self.own_run())
            else:
                if cache == "warm":
                    times[OWN_CASE].append(self.own_run())
                self.timed_command(cache, RUN_CASE, run)
        if "warm" not in self.caches:
            self.times["warm"][OWN_CASE].append(self.own_run())

    def stop(self) -> None:
        runner = getattr(self, "runner", None)
        if runner is not None:
            if getattr(self, "agent", None) is not None:
                runner.run(self.agent.aclose())
            runner.close()
        stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def summarise(self) -> dict[str, Any]:
        """Per cache and case: the median, quartiles and range in ms; for `agui run`, the
        overhead over the run's own time (paired round by round) and the target."""
        own = self.times["warm"][OWN_CASE]
        out: dict[str, Any] = {"url": self.url, "run_seconds": RUN_SECONDS, "deltas": DELTAS}
        out["own"] = _stats(own)
        for cache in self.caches:
            rows: dict[str, Any] = {}
            for name in self.cases():
                rows[name] = _stats(self.times[cache][name])
                rows[name]["cpu"] = _stats(self.cpu[cache][name])
                if name in self.modules[cache]:
                    rows[name]["modules_loaded"] = self.modules[cache][name]
            wall = self.times[cache][RUN_CASE]
            overhead = [w - o for w, o in zip(wall, own, strict=True)]
            factor, extra = RUN_TARGET
            limit = factor * _stats(own)["ms"] + extra * 1e3
            rows[RUN_CASE] |= {
                "overhead": _stats(overhead),
                "limit_ms": limit,
                "met": rows[RUN_CASE]["ms"] <= limit,
            }
            out[cache] = rows
        return out


def _children_cpu() -> float:
    """The user and system CPU time of this process's children that have ended."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stats(xs: list[float]) -> dict[str, Any]:
    p25, med, p75 = quartiles(xs)
    return {
        "ms": med * 1e3,
        "p25_ms": p25 * 1e3,
        "p75_ms": p75 * 1e3,
        "min_ms": min(xs) * 1e3,
        "max_ms": max(xs) * 1e3,
        "rounds_ms": [x * 1e3 for x in xs],
    }


def _cell(stats: dict[str, Any]) -> str:
    return f"{stats['ms']:.1f} ({stats['min_ms']:.1f}–{stats['max_ms']:.1f})"


def print_startup(startup: dict[str, Any], caches: Sequence[str], rounds: int) -> None:
    factor, extra = RUN_TARGET
    print(
        f"\nthe command line's start-up, ms: median (min–max) of {rounds} rounds, and the median "
        "CPU time (user + system);\nimports timed inside the interpreter, commands from outside "
        "(start-up included);\nwarm: bytecode caches, cold: none but the standard library's"
    )
    header = ("case", *(f"{cache} {what}" for cache in caches for what in ("ms", "CPU ms")))
    body = [
        (
            name,
            *(
                cell
                for cache in caches
                for cell in (
                    _cell(startup[cache][name]),
                    f"{startup[cache][name]['cpu']['ms']:.0f}",
                )
            ),
        )
        for name in Startup.cases()
    ]
    body.append((OWN_CASE, *(c for _ in caches for c in (_cell(startup["own"]), ""))))
    body.append(
        (
            "agui run overhead (run − own, paired)",
            *(c for cache in caches for c in (_cell(startup[cache][RUN_CASE]["overhead"]), "")),
        )
    )
    body.append(
        (
            f"target: agui run ≤ {factor:g} × own + {extra * 1e3:.0f} ms",
            *(
                c
                for cache in caches
                for c in (
                    f"≤ {startup[cache][RUN_CASE]['limit_ms']:.0f}: "
                    + ("PASS" if startup[cache][RUN_CASE]["met"] else "FAIL"),
                    "",
                )
            ),
        )
    )
    print_markdown_table(header, body)


# ── agui against the official SDK ─────────────────────────────────────────────────────────────


def run_rounds(
    rounds: int, startup: Startup | None, official: bool
) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {c.name: {i: [] for i in IMPLS} for c in CASES}
    for n in range(rounds):
        order = IMPLS if n % 2 == 0 else IMPLS[::-1]
        if official:
            for case in CASES:
                for impl in order:
                    times[case.name][impl].append(measure(case.snippets[impl])["seconds"])
        if startup is not None:
            startup.round(n)
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
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument(
        "--cache",
        choices=("both", *CACHES),
        default="both",
        help="the start-up cases with bytecode caches (warm), without (cold), or both (default)",
    )
    parser.add_argument(
        "--startup-only",
        action="store_true",
        help="only the command line's start-up (no ag-ui-protocol needed)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve()
        return 0
    rounds = 5 if args.quick else args.rounds
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    caches = CACHES if args.cache == "both" else (args.cache,)

    load_before = os.getloadavg()
    modules = {} if args.startup_only else warm_up_and_check()
    with tempfile.TemporaryDirectory(prefix="agui-bench-imports-") as folder:
        startup = Startup(caches, Path(folder))
        try:
            startup.warm_up()
            times = run_rounds(rounds, startup, official=not args.startup_only)
            startup_rows = startup.summarise()
        finally:
            startup.stop()
    rows = [] if args.startup_only else summarise(times, modules)
    if rows:
        print_table(rows, rounds)
    print_startup(startup_rows, caches, rounds)

    meta = {
        "versions": versions(DISTS),
        "python": sys.executable,
        "machine": machine(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "rounds": rounds,
        "document": DOC.decode(),
    }
    results = {"meta": meta, "cases": rows, "startup": startup_rows}
    print(f"results: {write_results(RESULTS, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
