"""Console benchmark: a 100,000-event run shown by the dev console (agui.console) in Chromium.

Usage: ``python benchmarks/console.py [--quick] [--rounds N] [--events N]`` (``nox -s bench``
runs it after the durable benchmark).

`agui serve` (a subprocess, loopback, a free port) serves an agent streaming one assistant
message in N TEXT_MESSAGE_CONTENT deltas (100,000 by default; N + 4 events with the run's and the
message's brackets); headless Chromium (Debian's, driven by Playwright for Python, which downloads
no browser) opens the console page the server prints and sends a message, once per round, each
round in a fresh page. Measured in the page, from the click on Send:

- seconds until the final text is on screen (the page checked once per animation frame), and
  from that events per second and milliseconds per 1,000 events (the server and the loopback
  included: this machine's cores serve, send and show);
- the longest main-thread task while it streams, and how many tasks took over 50 ms (the
  long-task observer reports those only; 0 means none).

There is no peer to compare with (the official SDKs have no console), so the figures stand alone:
a median over the rounds, with the spread. The run is checked first (every event arrived, the text
is whole), or nothing is reported. tests/browser/test_console.py runs the same run and checks what
the page shows, without timing it.

Without Chromium (/usr/bin/chromium, or AGUI_CHROMIUM) or Playwright the benchmark says so and
exits 0. Results also go to ``.bench/console.json``. The exit status is 0 either way: a benchmark
reports and does not gate.
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import RESULTS_DIR, machine, print_markdown_table, stop_process, versions, write_results

RESULTS = RESULTS_DIR / "console.json"
CHROMIUM = os.environ.get("AGUI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STARTUP = 30.0
"""Seconds `agui serve` may take to print its console line."""
RUN_MS = 600_000
"""How long one round may take in the page before the benchmark gives up (a hang bound)."""
DISTS = ("agui", "playwright", "uvicorn")

AGENT = """
import agui

COUNT = {count}


async def agent(run: agui.RunAgentInput):
    yield agui.TextMessageStartEvent(message_id="big", role="assistant")
    for i in range(COUNT - 1):
        yield agui.TextMessageContentEvent(message_id="big", delta=f"w{{i}} ")
    yield agui.TextMessageContentEvent(message_id="big", delta="THE END.")
    yield agui.TextMessageEndEvent(message_id="big")
"""

LONG_TASKS = """
window.__longtasks = [];
try {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__longtasks.push([entry.startTime, entry.duration]);
  }).observe({ type: "longtask", buffered: true });
} catch (e) {}
"""

ROUND = """(expected) => new Promise((resolve) => {
    const t0 = performance.now();
    window.__longtasks = [];
    const check = () => {
      const text = document.querySelector("#chat .msg.assistant .text");
      const last = text && text.lastElementChild && text.lastElementChild.lastChild;
      if (last && last.data && last.data.endsWith("THE END.")) {
        const shown = performance.now() - t0;
        const tasks = window.__longtasks.filter(([start]) => start >= t0);
        resolve({
          seconds: shown / 1000,
          length: text.textContent.length,
          longest_task_ms: Math.max(0, ...tasks.map(([, d]) => d)),
          long_tasks: tasks.length,
        });
      } else requestAnimationFrame(check);
    };
    document.getElementById("message").value = "go";
    document.getElementById("send").click();
    requestAnimationFrame(check);
})"""


def expected_text(count: int) -> str:
    return "".join(f"w{i} " for i in range(count - 1)) + "THE END."


def unavailable() -> str | None:
    """Why the benchmark cannot run here (None: it can)."""
    if not Path(CHROMIUM).is_file():
        return f"Chromium is not at {CHROMIUM} (apt-get install chromium, or set AGUI_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright)"
    return None


class Server:
    """`agui serve` of the big agent in a subprocess; `console` is the page's URL."""

    def __init__(self, folder: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agui", "serve", "--port", "0", "big_agent:agent"],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.console = self._console()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.stderr.append(line)
                self.lines.put(line)
        self.lines.put(None)

    def _console(self) -> str:
        while True:
            try:
                line = self.lines.get(timeout=STARTUP)
            except queue.Empty:
                line = None
            if line is None:
                self.stop()
                raise SystemExit("console benchmark: agui serve failed:\n" + "".join(self.stderr))
            found = re.match(r"console: (http://\S+)", line)
            if found:
                return found.group(1)

    def stop(self) -> None:
        stop_process(self.proc, STARTUP)


def one_round(browser: Any, url: str, count: int) -> dict[str, Any]:
    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1400, "height": 900})
        page.add_init_script(LONG_TASKS)
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]", timeout=RUN_MS)
        figures: dict[str, Any] = page.evaluate(ROUND, count)
        page.wait_for_function(
            "() => !aguiConsole.current().busy && !document.getElementById('send').disabled",
            timeout=RUN_MS,
        )
        figures["events"] = page.evaluate("aguiConsole.current().events.length")
        return figures
    finally:
        page.close()


def spread(xs: list[float]) -> tuple[float, float, float]:
    return statistics.median(xs), min(xs), max(xs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds instead of 5")
    parser.add_argument("--rounds", type=int, help="rounds (each in a fresh page)")
    parser.add_argument("--events", type=int, default=100_000, help="the deltas of the run")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)
    count: int = args.events
    if count < 1 or rounds < 1:
        parser.error("--events and --rounds must be positive")
    why = unavailable()
    if why is not None:
        print(f"console benchmark: skipped: {why}")
        return 0

    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    expected = len(expected_text(count))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agui-console-bench-") as tmp:
        folder = Path(tmp)
        (folder / "big_agent.py").write_text(textwrap.dedent(AGENT.format(count=count)))
        server = Server(folder)
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch_persistent_context(
                    str(folder / "profile"),
                    executable_path=CHROMIUM,
                    headless=True,
                    args=CHROMIUM_ARGS,
                )
                try:
                    for n in range(rounds):
                        print(f"round {n + 1}/{rounds} ...", file=sys.stderr, flush=True)
                        figures = one_round(browser, server.console, count)
                        if figures["events"] != count + 4 or figures["length"] != expected:
                            raise SystemExit(
                                f"console benchmark: the run is wrong ({figures['events']:,} "
                                f"events, {figures['length']:,} characters; expected "
                                f"{count + 4:,} and {expected:,}): nothing is reported"
                            )
                        results.append(figures)
                finally:
                    browser.close()
        finally:
            server.stop()

    events = count + 4
    seconds = [r["seconds"] for r in results]
    longest = [float(r["longest_task_ms"]) for r in results]
    s_med, s_min, s_max = spread(seconds)
    per_k = [1000 * s / events * 1000 for s in seconds]  # ms per 1,000 events
    k_med, k_min, k_max = spread(per_k)
    l_med, l_min, l_max = spread(longest)
    print(
        f"\nthe console in headless Chromium, one message in {count:,} deltas ({events:,} events), "
        f"served by agui serve on loopback; {rounds} rounds, each in a fresh page"
    )
    print_markdown_table(
        ("figure", "median", "min", "max"),
        [
            ("seconds to the final text", f"{s_med:.2f}", f"{s_min:.2f}", f"{s_max:.2f}"),
            (
                "events per second",
                f"{events / s_med:,.0f}",
                f"{events / s_max:,.0f}",
                f"{events / s_min:,.0f}",
            ),
            ("ms per 1,000 events", f"{k_med:.2f}", f"{k_min:.2f}", f"{k_max:.2f}"),
            ("longest main-thread task, ms", f"{l_med:.0f}", f"{l_min:.0f}", f"{l_max:.0f}"),
            (
                "tasks over 50 ms",
                f"{statistics.median(r['long_tasks'] for r in results):g}",
                f"{min(r['long_tasks'] for r in results)}",
                f"{max(r['long_tasks'] for r in results)}",
            ),
        ],
    )
    print(f"(no peer: the official SDKs have no console; {machine()})")
    meta = {
        "versions": versions(DISTS),
        "chromium": CHROMIUM,
        "machine": machine(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "events": events,
        "rounds": rounds,
        "seconds_median": s_med,
        "events_per_second_median": events / s_med,
        "ms_per_1000_events_median": k_med,
        "longest_task_ms_median": l_med,
        "longest_task_ms_max": l_max,
    }
    print(f"results: {write_results(RESULTS, {'meta': meta, 'rounds': results})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
