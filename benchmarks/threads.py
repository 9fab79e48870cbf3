"""Thread API benchmark: the store side of `GET {path}/threads` and `DELETE {path}/threads/{id}`
on each event log (memory, SQLite, Redis).

Usage: ``python benchmarks/threads.py [--threads N] [--quick]`` (``nox -s bench`` runs it).

Two namespaces of N threads each (10,000 by default; --quick: 1,000), one finished run per
thread, in one store. Timed: the first page of 50 of one namespace (`list_threads`), a later page
(after the first page's cursor; the median of 20), and deleting one thread (`delete_thread`,
with SQLite's secure delete and WAL truncation). A listing reads the namespace's index, so its
time should not grow with the other namespace's threads. Redis: a redis-server started here on a
free loopback port (left out without redis-server on PATH).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agui.store import EventLog, RunRecord, open_log

PAGE = 50
TERMINAL = b'{"type":"RUN_FINISHED","threadId":"t","runId":"r"}'


def record(run_id: str, thread_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(
        thread_id=thread_id,
        run_id=run_id,
        status="running",
        owner="bench",
        started_at=now,
        lease_until=now + 600,
    )


async def fill(log: EventLog, count: int) -> None:
    for namespace in ("a/", "b/"):
        for n in range(count):
            run_id, thread_id = f"{namespace}r{n}", f"{namespace}t{n}"
            await log.start_run(
                record(run_id, thread_id), b"{}", exclusive=False, namespace=namespace
            )
            await log.append(run_id, [TERMINAL], final=True)


async def measure(url: str, count: int) -> str:
    log = open_log(url)
    try:
        await fill(log, count)
        began = time.perf_counter()
        page = await log.list_threads("a/", limit=PAGE)
        first = time.perf_counter() - began
        assert len(page) == PAGE
        later = []
        for _ in range(20):
            began = time.perf_counter()
            await log.list_threads("a/", limit=PAGE, before=page[-1].order)
            later.append(time.perf_counter() - began)
        began = time.perf_counter()
        removed = await log.delete_thread("a/", "a/t5")
        deleted = time.perf_counter() - began
        assert removed == ["a/r5"]
    finally:
        await log.aclose()
    name = url.split(":", 1)[0]
    return (
        f"{name:7} {count:,} threads x 2 namespaces: first page of {PAGE} {first * 1e3:.1f} ms, "
        f"a later page {statistics.median(later) * 1e3:.1f} ms, delete a thread {deleted * 1e3:.1f} ms"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count = args.threads or (1_000 if args.quick else 10_000)
    with tempfile.TemporaryDirectory() as folder:
        urls = ["memory://", f"sqlite:///{Path(folder) / 'threads.db'}"]
        server = None
        if shutil.which("redis-server"):
            port = free_port()
            server = subprocess.Popen(
                ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                cwd=folder,
                stdout=subprocess.DEVNULL,
            )
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            urls.append(f"redis://127.0.0.1:{port}/0")
        else:
            print("redis-server is not on PATH: Redis left out")
        try:
            for url in urls:
                print(asyncio.run(measure(url, count)))
        finally:
            if server is not None:
                server.terminate()
                server.wait()


if __name__ == "__main__":
    main()
