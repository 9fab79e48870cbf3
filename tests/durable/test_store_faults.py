"""A store that cannot write (issue 19, item 4): every live stream of a run (the client that POSTed
it, a follower resuming it, a follower connected to its thread) ends with RUN_ERROR STORE_ERROR
within seconds, the failure is logged once per run (one line with the cause, no traceback), the
server's health says the log failed (`Durable.store_failure`, cleared once a write works again),
and the server keeps serving: a new run works once the store is back, or gets a clean 503 while
it is down.

Each case on real uvicorn on loopback with real clients reading SSE, and a real fault:

* SQLite on a full disk: a small tmpfs filled up mid-run (SQLITE_FULL); where this process may
  not mount, SQLite's own `PRAGMA max_page_count` on the server's writer (the same SQLITE_FULL);
* SQLite on a filesystem the kernel turns read-only mid-run, as it does on an I/O error (an ext4
  image mounted `errors=remount-ro`, made to take an error through sysfs: SQLITE_IOERR_WRITE);
  where that is not possible, `PRAGMA query_only` on the server's writer (SQLITE_READONLY);
* SQLite files deleted mid-run;
* SQLite full on a worker process, followed on a second one;
* Redis killed mid-run (SIGKILL on the redis-server the test started), with one worker, then with
  two uvicorn processes on it.

Which disk ran is printed (`pytest -s` shows it) and kept in the test's report sections.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.http.durable import STORE_ERROR
from agui.store import StoreUnavailable, open_log
from agui.store.memory import MemoryLog
from agui.wire.proto import PROTO_MEDIA_TYPE, ProtoFrameDecoder, decode_proto
from tests.conftest import live_server
from tests.store.support import free_port, ping, skip_or_fail_without_redis

from .agents import paced
from .disks import failing_ext4, fill, small_disk, writer_pragma
from .support import Tail, body, post, stream, wait_for

LEASE = 2.0
"""The servers' lease: a worker that stops renewing is noticed within it."""

HANG = 10.0
"""Every live stream ends within this many seconds of the fault (the requirement); the tests
wait no longer for any (# hang bound)."""

RUN = "fault-run-1"
"""The run that meets the fault: an id no other log line can hold by chance."""

LONG = body(RUN, count=100_000, delay=0.02)
"""A run that is still going when the fault comes (an event every 20 ms)."""


def report(request: pytest.FixtureRequest, what: str) -> None:
    """Say which fault ran (printed, and in the test's report sections)."""
    print(f"\n{request.node.name}: {what}")
    request.node.add_report_section("call", "fault", what)


def follow_live(url: str, *, connect: bool = True) -> list[Tail]:
    """POST the long run, wait for it to stream, and follow it: a resume from the start and,
    with `connect`, a follower connected to its thread."""
    tails = [Tail("POST", f"{url}/agent", LONG)]
    wait_for(lambda: len(tails[0].frames) >= 5)
    tails.append(Tail("GET", f"{url}/agent/runs/{RUN}/events"))
    if connect:
        tails.append(Tail("GET", f"{url}/agent/threads/t1/events"))
    wait_for(lambda: all(len(t.frames) >= 5 for t in tails))
    return tails


def check_ended(tails: list[Tail], broke: float) -> None:
    """Every stream ended, without a broken connection, in RUN_ERROR STORE_ERROR, within HANG
    seconds of `broke` (the fault, on the monotonic clock)."""
    for tail in tails:
        left = max(0.1, broke + HANG - time.monotonic())
        assert tail.done.wait(left), (
            f"{tail.method} {tail.url} did not end: {tail.frames[-2:]}"
        )  # hang bound
        assert not tail.broken, tail.url
        last = tail.frames[-1]
        assert last.type == "RUN_ERROR", (tail.url, tail.frames[-3:])
        assert last.event["code"] == STORE_ERROR, last
        assert last.event["message"] == "The event log failed; the run cannot go on."
        assert tail.times[-1] - broke < HANG
        # the run's events up to the fault, in order, then its end
        deltas = [f.event["delta"] for f in tail.frames if f.type == "TEXT_MESSAGE_CONTENT"]
        assert deltas == [f"{i}," for i in range(len(deltas))]
        assert sum(f.type in ("RUN_FINISHED", "RUN_ERROR") for f in tail.frames) == 1 + (
            tail.url.endswith("/threads/t1/events")  # the compacted history's RUN_FINISHED
        )


def about(records: list[logging.LogRecord], run_id: str = RUN) -> list[str]:
    """The warnings and errors that name the run."""
    return [
        r.getMessage() for r in records if r.levelno >= logging.WARNING and run_id in r.getMessage()
    ]


def check_logged_once(caplog: pytest.LogCaptureFixture, cause: str) -> None:
    """One line about the run, with the cause; no traceback anywhere."""
    lines = about(caplog.records)
    assert len(lines) == 1, lines
    assert cause in lines[0], lines
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


def check_quiet_after(caplog: pytest.LogCaptureFixture, seconds: float = 2 * LEASE) -> None:
    """While the store stays down, nothing more is logged: the sweep, the followers' checks and
    the lease renewals do not repeat the failure (a few sweeps happen in `seconds`)."""
    before = len([r for r in caplog.records if r.levelno >= logging.WARNING])
    time.sleep(seconds)
    after = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert after[before:] == [], after[before:]


def check_failure(app: agui.AgentApp, cause: str) -> None:
    durable = app._durable
    assert durable is not None
    failure = durable.store_failure
    assert failure is not None and not durable.healthy
    assert cause in failure.error, failure
    assert time.time() - 60 < failure.at <= time.time()


def check_refused(url: str, run_id: str) -> None:
    """A new run while the store is down: a clean 503, JSON, before any event."""
    answer = post(f"{url}/agent", body(run_id, thread_id=f"t-{run_id}", count=2))
    assert answer.status == 503, answer
    assert answer.headers["content-type"] == "application/json"
    assert json.loads(answer.body) == {"error": "the event log failed"}


def check_serves(url: str, run_id: str) -> None:
    """A new run once the store is back: whole."""
    answer = post(f"{url}/agent", body(run_id, thread_id=f"t-{run_id}", count=3))
    assert answer.status == 200, answer
    assert answer.frames[-1].type == "RUN_FINISHED", answer.frames[-2:]


def app_on(url: str) -> agui.AgentApp:
    return agui.AgentApp(paced, path="/agent", store=url, lease_seconds=LEASE)


def sqlite_log(app: agui.AgentApp) -> Any:
    return app.store


# ── SQLite ────────────────────────────────────────────────────────────────────────────────────


def test_a_full_disk_ends_every_stream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest
) -> None:
    folder = tmp_path / "disk"
    with small_disk(folder) as disk:
        app = app_on(f"sqlite:///{folder / 'runs.db'}")
        with live_server(app) as url:
            tails = follow_live(url)
            if disk == "tmpfs":
                report(request, "a 4 MiB tmpfs, filled up with a ballast file")
                ballast: Path | None = fill(folder)
            else:
                report(request, "no mount here: PRAGMA max_page_count on the writer")
                ballast = None
                writer_pragma(sqlite_log(app), "max_page_count = 1")
            broke = time.monotonic()
            check_ended(tails, broke)
            check_logged_once(caplog, "database or disk is full")
            check_failure(app, "database or disk is full")
            check_quiet_after(caplog)
            # the disk has room again: the health comes back (a probe, or the next write), and
            # a new run works
            if ballast is not None:
                ballast.unlink()
            else:
                writer_pragma(sqlite_log(app), "max_page_count = 4294967294")
            durable = app._durable
            assert durable is not None
            wait_for(lambda: durable.healthy, timeout=3 * LEASE)
            check_serves(url, "after-1")
            # and the run the fault stopped is closed in the log, as lost
            frames = Tail("GET", f"{url}/agent/runs/{RUN}/events").wait(3 * LEASE)  # hang bound
            assert frames[-1].type == "RUN_ERROR", frames[-2:]


def test_a_filesystem_turned_read_only_ends_every_stream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest
) -> None:
    folder = tmp_path / "disk"
    with failing_ext4(folder, tmp_path / "disk.img") as trigger:
        app = app_on(f"sqlite:///{folder / 'runs.db'}")
        with live_server(app) as url:
            tails = follow_live(url)
            if trigger is not None:
                report(request, "ext4 on a loop device, errors=remount-ro, an error triggered")
                trigger.write_text("test\n")
                cause = "disk I/O error"
            else:
                report(request, "no ext4 loop mount here: PRAGMA query_only on the writer")
                writer_pragma(sqlite_log(app), "query_only = 1")
                cause = "attempt to write a readonly database"
            broke = time.monotonic()
            check_ended(tails, broke)
            check_logged_once(caplog, cause)
            check_failure(app, cause)
            check_quiet_after(caplog)
            # what was stored is still read
            replay = stream(f"{url}/agent/runs/{RUN}/events", stop_after=5)
            assert replay.status == 200 and len(replay.frames) == 5
            if trigger is not None:
                check_refused(url, "after-1")  # the filesystem stays read-only
            else:
                writer_pragma(sqlite_log(app), "query_only = 0")
                durable = app._durable
                assert durable is not None
                wait_for(lambda: durable.healthy, timeout=3 * LEASE)
                check_serves(url, "after-1")


class BinaryTail(threading.Thread):
    """A follower on the binary transport (protobuf frames), read in a thread."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.events: list[Any] = []
        self.done = threading.Event()
        self.start()

    def run(self) -> None:
        decoder = ProtoFrameDecoder()
        try:
            with (
                httpx.Client(timeout=60) as client,
                client.stream("GET", self.url, headers={"accept": PROTO_MEDIA_TYPE}) as response,
            ):
                for chunk in response.iter_raw():
                    self.events += [decode_proto(m) for m in decoder.feed(chunk)]
        finally:
            self.done.set()


def test_deleting_the_files_ends_every_stream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.db"
    app = app_on(f"sqlite:///{path}")
    with live_server(app) as url:
        tails = follow_live(url)
        binary = BinaryTail(f"{url}/agent/runs/{RUN}/events")
        wait_for(lambda: len(binary.events) >= 5)
        for name in ("runs.db", "runs.db-wal", "runs.db-shm"):
            (tmp_path / name).unlink(missing_ok=True)
        broke = time.monotonic()
        check_ended(tails, broke)
        assert binary.done.wait(max(0.1, broke + HANG - time.monotonic()))  # hang bound
        assert binary.events[-1] == agui.RunErrorEvent(
            message="The event log failed; the run cannot go on.", code=STORE_ERROR
        )
        check_logged_once(caplog, "was deleted")
        check_failure(app, "was deleted")
        check_quiet_after(caplog)
        check_refused(url, "after-1")  # nothing is written to a file nobody will find
        # the log says so, and does not make a new file behind the server's back
        assert not path.exists()


def test_a_full_disk_ends_the_followers_on_another_worker(
    tmp_path: Path, served: Any, request: pytest.FixtureRequest
) -> None:
    """Worker A executes the run and fails to append; worker B's follower cannot be told by A (the
    log is the only link): it learns when A's lease runs out and closing the run fails."""
    folder = tmp_path / "disk"
    with small_disk(folder) as disk:
        if disk != "tmpfs":
            pytest.skip("a full disk shared by two processes needs a tmpfs (mount as root)")
        report(request, "a 4 MiB tmpfs, filled up with a ballast file")
        env = {"AGUI_TEST_STORE": f"sqlite:///{folder / 'runs.db'}", "AGUI_TEST_LEASE": str(LEASE)}
        a, b = served("agents:app", env=env), served("agents:app", env=env)
        try:
            direct = Tail("POST", f"{a.url}/agent", LONG)
            wait_for(lambda: len(direct.frames) >= 5)
            other = Tail("GET", f"{b.url}/agent/runs/{RUN}/events")
            wait_for(lambda: len(other.frames) >= 5)
            fill(folder)
            broke = time.monotonic()
            check_ended([direct, other], broke)
            time.sleep(LEASE)  # a few sweeps on both workers
            for worker in (a, b):
                lines = [line for line in worker.stderr if RUN in line]
                assert len(lines) == 1, lines
                assert "database or disk is full" in lines[0]
                assert "Traceback" not in "".join(worker.stderr)
        finally:
            a.stop()
            b.stop()


def test_a_silent_run_ends_when_its_lease_cannot_be_renewed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The agent says nothing while the log fails: no append fails, but every lease renewal
    does; once the lease has run out the run cannot be this worker's any more, and its streams
    end (within the lease, not when the agent next speaks)."""
    path = tmp_path / "runs.db"
    app = app_on(f"sqlite:///{path}")
    with live_server(app) as url:
        silent = body(RUN, count=1, delay=60.0)  # one event, then a minute of silence
        tails = [Tail("POST", f"{url}/agent", silent)]
        wait_for(lambda: len(tails[0].frames) >= 3)
        tails.append(Tail("GET", f"{url}/agent/runs/{RUN}/events"))
        wait_for(lambda: len(tails[1].frames) >= 3)
        writer_pragma(sqlite_log(app), "query_only = 1")
        broke = time.monotonic()
        check_ended(tails, broke)
        assert tails[0].times[-1] - broke > LEASE / 3  # it was the lease, not an append
        check_logged_once(caplog, "attempt to write a readonly database")
        writer_pragma(sqlite_log(app), "query_only = 0")


class FlakyLog(MemoryLog):
    """memory:// whose append fails once, after `good` appends, as a store that drops one
    connection: the next write works."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good

    async def append(self, run_id: str, events: Any, *, final: bool = False) -> list[str]:
        self.good -= 1
        if self.good == -1:
            raise StoreUnavailable("the connection to the store dropped")
        return await super().append(run_id, events, final=final)


def test_the_end_is_stored_when_the_log_takes_it(caplog: pytest.LogCaptureFixture) -> None:
    """An append fails and the next write works: the run's RUN_ERROR STORE_ERROR is stored, so
    every stream gets it from the log (with a cursor), and so does a resume afterwards."""
    app = agui.AgentApp(paced, path="/agent", store=FlakyLog(good=8), lease_seconds=LEASE)
    with live_server(app) as url:
        tails = [Tail("POST", f"{url}/agent", LONG)]
        wait_for(lambda: len(tails[0].frames) >= 3)
        tails.append(Tail("GET", f"{url}/agent/runs/{RUN}/events"))
        check_ended(tails, time.monotonic())
        for tail in tails:
            assert tail.frames[-1].id is not None  # stored
        replay = stream(f"{url}/agent/runs/{RUN}/events")
        assert replay.frames == tails[1].frames
        check_logged_once(caplog, "the connection to the store dropped")
        # nothing more is written here: the sweep's probe finds the log works again
        check_failure(app, "the connection to the store dropped")
        durable = app._durable
        assert durable is not None
        wait_for(lambda: durable.healthy, timeout=3 * LEASE)
        assert "the event log works again" in caplog.records[-1].getMessage()


def test_a_write_that_works_clears_the_health() -> None:
    """The health clears at the first write that works (here a new run's), not only at the
    sweep's probe (an hour away with this lease)."""
    app = agui.AgentApp(paced, path="/agent", store=FlakyLog(good=8), lease_seconds=3600)
    durable = app._durable
    assert durable is not None
    with live_server(app) as url:
        tail = Tail("POST", f"{url}/agent", LONG)
        check_ended([tail], time.monotonic())
        assert not durable.healthy
        check_serves(url, "after-1")
        assert durable.healthy and durable.store_failure is None


class DeadLog(MemoryLog):
    """memory:// whose appends all fail after the first `good` (its reads go on): a disk that
    filled up, at a moment the test chooses; `stored` counts the events it took. Its live reads
    lag `lag` seconds behind each batch, as a follower's do behind a slow client or a slow
    read: at the fault, a follower has not sent everything stored yet."""

    def __init__(self, good: int, lag: float) -> None:
        super().__init__()
        self.good = good
        self.lag = lag
        self.stored = 0

    async def append(self, run_id: str, events: Any, *, final: bool = False) -> list[str]:
        self.good -= 1
        if self.good < 0:
            raise StoreUnavailable("the disk is full")
        cursors = await super().append(run_id, events, final=final)
        self.stored += len(events)
        return cursors

    async def read_batches(
        self, run_id: str, after: Any = None, *, follow: bool = False, limit: Any = None
    ) -> Any:
        async for batch in super().read_batches(run_id, after, follow=follow, limit=limit):
            if follow:
                await asyncio.sleep(self.lag)
            yield batch


def test_a_stream_ended_by_the_fault_gets_every_event_stored_before_it() -> None:
    """The streams lag behind the run when the log fails: they still send every event stored
    before the fault (read again from the log), then RUN_ERROR."""
    dead = DeadLog(good=50, lag=0.3)
    app = agui.AgentApp(paced, path="/agent", store=dead, lease_seconds=LEASE)
    with live_server(app) as url:
        tails = [Tail("POST", f"{url}/agent", LONG)]
        wait_for(lambda: tails[0].frames)
        tails.append(Tail("GET", f"{url}/agent/runs/{RUN}/events"))
        wait_for(lambda: dead.good < 0)
        check_ended(tails, time.monotonic())
        for tail in tails:
            assert tail.frames[-1].id is None  # not stored: the log took nothing more
            assert len(tail.frames) - 1 == dead.stored, (len(tail.frames), dead.stored)


# ── Redis ─────────────────────────────────────────────────────────────────────────────────────


class OwnRedis:
    """A redis-server of the test's own, on a port of its own, that the test may kill and start
    again on the same port."""

    def __init__(self, directory: Path) -> None:
        skip_or_fail_without_redis()
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(lambda: ping(self.port), timeout=10)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@contextmanager
def own_redis(directory: Path) -> Iterator[OwnRedis]:
    server = OwnRedis(directory)
    try:
        yield server
    finally:
        server.stop()


def test_redis_killed_ends_every_stream(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with own_redis(tmp_path) as redis:
        app = app_on(redis.url)
        with live_server(app) as url:
            tails = follow_live(url)
            redis.kill()
            broke = time.monotonic()
            check_ended(tails, broke)
            check_logged_once(caplog, "Redis store")
            check_failure(app, "Redis store")
            check_quiet_after(caplog)
            caplog.clear()
            check_refused(url, "after-1")
            check_refused(url, "after-1b")
            # an outage already noted: the refusals log nothing more, and no traceback
            assert [r for r in caplog.records if r.exc_info] == []
            assert [r.getMessage() for r in caplog.records if r.levelno >= 40] == []
            redis.start()
            check_serves(url, "after-2")
            durable = app._durable
            assert durable is not None
            wait_for(lambda: durable.healthy, timeout=3 * LEASE)


def test_redis_killed_ends_the_followers_on_another_worker(tmp_path: Path, served: Any) -> None:
    """Two uvicorn processes (`agui serve`) on one redis-server: the run executes on A, followed
    on A and on B; B's follower learns of the fault by its own reads."""
    with own_redis(tmp_path) as redis:
        env = {"AGUI_TEST_STORE": redis.url, "AGUI_TEST_LEASE": str(LEASE)}
        a, b = served("agents:app", env=env), served("agents:app", env=env)
        try:
            tails = follow_live(a.url, connect=False)
            tails.append(Tail("GET", f"{b.url}/agent/runs/{RUN}/events"))
            tails.append(Tail("GET", f"{b.url}/agent/threads/t1/events"))
            wait_for(lambda: all(len(t.frames) >= 5 for t in tails))
            redis.kill()
            broke = time.monotonic()
            check_ended(tails, broke)
            time.sleep(LEASE)  # a few sweeps on both workers
            for worker in (a, b):
                lines = [line for line in worker.stderr if RUN in line]
                assert len(lines) == 1, lines
                assert "Redis store" in lines[0]
                assert "Traceback" not in "".join(worker.stderr)
            redis.start()
            check_serves(a.url, "after-1")
            check_serves(b.url, "after-2")
        finally:
            a.stop()
            b.stop()


# ── the health, on its own ────────────────────────────────────────────────────────────────────


def test_the_health_is_clear_until_the_log_fails(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    app = app_on(f"sqlite:///{path}")
    durable = app._durable
    assert durable is not None
    assert durable.healthy and durable.store_failure is None
    with live_server(app) as url:
        check_serves(url, "r1")
        assert durable.healthy and durable.store_failure is None


def test_probe_writes_to_the_sqlite_file(tmp_path: Path) -> None:
    """`probe()` is a round trip that writes: it fails on a log that cannot write, and works
    again once it can."""

    async def main() -> None:
        log: Any = open_log(f"sqlite:///{tmp_path / 'runs.db'}")
        try:
            await log.probe()
            await log._write(lambda db: db.execute("PRAGMA query_only = 1"))
            with pytest.raises(StoreUnavailable, match="readonly"):
                await log.probe()
            await log._write(lambda db: db.execute("PRAGMA query_only = 0"))
            await log.probe()
        finally:
            await log.aclose()

    asyncio.run(main())
