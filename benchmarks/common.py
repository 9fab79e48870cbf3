"""What the benchmark scripts share: where results go, the versions and machine a run reports, the
paired official/agui ratios, the markdown table, a measurement in a fresh interpreter, and a
server subprocess on a free loopback port.

Each script runs as ``python benchmarks/X.py``, so it imports this module as ``common`` (as it
imports ``corpus``).
"""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: the working directory of a child interpreter."""
RESULTS_DIR = ROOT / ".bench"
"""Where each script writes its results (git-ignored)."""


def write_results(path: Path, data: Any) -> Path:
    """Write `data` to `path` as indented JSON with a final newline; return the path relative to
    the checkout, for the line that names it."""
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path.relative_to(ROOT)


def versions(dists: Iterable[str]) -> dict[str, str]:
    """The Python version, then each distribution's version ("not installed" when it is not)."""
    out = {"python": platform.python_version()}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def machine() -> str:
    return f"{platform.machine()} {platform.system()} {platform.release()}, {os.cpu_count()} cpus"


def run_json(argv: Sequence[str], failed: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``sys.executable`` with `argv` in the checkout and return the JSON object its last line
    prints; if it fails, exit with `failed` followed by its stderr."""
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{failed}\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


# ── official against agui, round by round ─────────────────────────────────────────────────────


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def paired_ratio(official: list[float], agui: list[float], target: float | None) -> dict[str, Any]:
    """The per-round ratios official_time / agui_time (above 1: agui is faster), their median and
    quartiles, and whether the median meets `target` (None: no target)."""
    ratios = [o / a for o, a in zip(official, agui, strict=True)]
    r25, ratio, r75 = quartiles(ratios)
    return {
        "ratio": ratio,
        "ratio_p25": r25,
        "ratio_p75": r75,
        "ratios": ratios,
        "target": target,
        "met": None if target is None else ratio >= target,
    }


def ratio_cell(row: dict[str, Any]) -> str:
    """A paired_ratio as a table cell: the median, then p25–p75."""
    return f"{row['ratio']:.2f}× ({row['ratio_p25']:.2f}–{row['ratio_p75']:.2f})"


def target_cell(row: dict[str, Any]) -> str:
    """A paired_ratio's target as a table cell: empty without one, else PASS or FAIL."""
    if row["target"] is None:
        return ""
    return f"≥ {row['target']:g}× {'PASS' if row['met'] else 'FAIL'}"


def print_markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> None:
    """A markdown table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 1) + (":" if i else "-") for i, w in enumerate(widths)) + "|")
    for r in body:
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        print("| " + " | ".join(cells) + " |")


def serve_on_loopback(app: Any, profile: str | None = None, **config: Any) -> None:
    """A server subprocess's body: bind a free loopback port, print it (the parent reads the
    first line), serve `app` under uvicorn until SIGINT; with `profile`, under cProfile, whose
    statistics go to that file."""
    import uvicorn

    # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on the accepted connections (it does
    # only for sockets whose proto says TCP): without it, every request on a reused keep-alive
    # connection waits ~40 ms for the client's delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(
        uvicorn.Config(app, **{"log_level": "warning", "access_log": False, **config})
    )
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


def spawn_server(
    argv: Sequence[str], what: str = "the server", env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """Start a server subprocess that prints its port on its first line (serve_on_loopback);
    the process and the port. Exits the benchmark, naming `what`, if no port comes."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        proc.kill()
        proc.wait()
        raise SystemExit(f"benchmarks: {what} did not start")
    return proc, int(line)


def stop_process(proc: subprocess.Popen[Any], timeout: float = 15) -> None:
    """Stop a server subprocess as Ctrl-C would, killing it if it does not end in `timeout`."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
