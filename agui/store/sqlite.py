"""`sqlite:///PATH`: the event log in a SQLite file, for one machine; it survives a restart, and
several processes (uvicorn's `--workers N`) may share the file.

stdlib `sqlite3`, never on the event loop: every write goes to one writer thread with its own
connection, one transaction per call (`BEGIN IMMEDIATE`, so that writers in other processes are
serialized by SQLite's lock and `start_run` / `close_lost` stay atomic across processes); reads
go to a small pool of reader threads, each with its own connection. WAL journal,
`synchronous=NORMAL`: a commit does not wait for the disk, readers never block the writer.

Tables: `runs` (one row per run: its record, the sequence numbers of its first kept and last
event, the bytes it holds; `n`, an autoincrement key, orders a thread's runs), `inputs` (`run ->`
its RunAgentInput: in the run's row, every update of the row, one per append, would write it
again), `events` (`(run, seq) -> data`, without rowid), `threads` (one row per thread: its
namespace and the `n` of its latest run, indexed by both: `list_threads` reads a page of one
namespace from the index) and `spaces` (each namespace's bytes, `usage`, updated in the
transaction that changes them). The cursor is the event's sequence number in its run, in decimal.
A run's first event, RUN_STARTED, is stored without its copy of the input and made whole when
read. A file of schema version 1 (before `threads`) is upgraded when opened: its threads'
namespaces are read from their ids (agui.http.access's prefixes: 32 hex digits and a slash, or
`-/`; else none); one of version 1 or 2 gets its usage counted (its runs keep their input in
their row, and their RUN_STARTED whole: both read as they are).

`delete_thread` erases: its deletes run with `PRAGMA secure_delete` (the freed pages are
overwritten with zeros) and end with a checkpoint that truncates the write-ahead log, so the
thread's bytes are in neither file afterwards (unless a reader held an old snapshot then: the
next checkpoint copies the zeroed pages).

A reader following a run is woken by appends made through this instance, and takes them from
memory (the latest `RECENT` events of each run followed here) instead of querying the file;
appends made by another process are noticed by one poller per instance, which checks
`PRAGMA data_version` every `POLL_SECONDS` while someone follows, and wakes the followers of the
runs that moved (they read those from the file).

Faults: an error of SQLite (a full disk, a read-only or failing filesystem) is raised as
`StoreUnavailable`. So is a file deleted or replaced while the log is open, which SQLite itself
does not notice (its open connections would go on writing to the deleted file, and a connection
opened later would make a new, empty one): every call first checks that the path still names the
file the log opened (its device and inode), and the connections opened after the first never
create the file.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from .base import (
    ELIDED,
    Cursor,
    EventBatch,
    EventLog,
    Retention,
    RunExists,
    RunRecord,
    StoreError,
    StoreUnavailable,
    ThreadBusy,
    ThreadSummary,
    UnknownRun,
    Usage,
    elide_input,
    parse_seq,
    restore_input,
)

__all__ = ["SQLiteLog"]

T = TypeVar("T")

POLL_SECONDS = 0.05
"""How often a followed log looks for appends made by another process."""

BACKSTOP_SECONDS = 1.0
"""The longest a follower sleeps without looking at the file (should a wake-up be missed)."""

BUSY_SECONDS = 10.0
"""How long a statement waits for another process's write lock before failing."""

PRUNE_EVERY_SECONDS = 60.0
"""start_run applies the TTL at most this often (prune(now) does it on demand)."""

CHUNK = 1000
"""Events read per query (and the most in one batch of `read_batches`)."""

READERS = 4
"""Reader threads (and connections) per instance."""

RECENT = 4096
"""The latest events per followed run kept in memory for its live followers."""

SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT NOT NULL,
    started_at REAL NOT NULL,
    lease_until REAL NOT NULL,
    stop INTEGER NOT NULL DEFAULT 0,
    first_seq INTEGER NOT NULL DEFAULT 1,
    last_seq INTEGER NOT NULL DEFAULT 0,
    finished_at REAL,
    input BLOB NOT NULL,
    bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, n);
CREATE INDEX IF NOT EXISTS runs_by_lease ON runs (lease_until) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS runs_by_finish ON runs (finished_at) WHERE status = 'finished';
CREATE TABLE IF NOT EXISTS events (
    run INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (run, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    last_n INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_by_namespace ON threads (namespace, last_n);
CREATE TABLE IF NOT EXISTS inputs (
    run INTEGER PRIMARY KEY,
    input BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS spaces (
    namespace TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL
);
"""

_UPGRADE_NAMESPACE = re.compile(r"[0-9a-f]{32}/|-/")
"""The namespace prefixes of agui.http.access, read from a thread's id when a version 1 file
(no `threads` table) is upgraded."""

_INPUT = "coalesce((SELECT i.input FROM inputs i WHERE i.run = runs.n), runs.input)"
"""A run's input, in a query of `runs`: in `inputs` (schema 3), else in its row (before)."""

_NO_ORDER = 1 << 62  # above every run's n: `before` left out

RECORD_COLUMNS = (
    "thread_id, run_id, status, owner, started_at, lease_until, stop, last_seq, finished_at"
)


def to_record(row: Sequence[Any]) -> RunRecord:
    """A RunRecord from a row of RECORD_COLUMNS."""
    thread_id, run_id, status, owner, started_at, lease_until, stop, last_seq, finished_at = row
    return RunRecord(
        thread_id=thread_id,
        run_id=run_id,
        status=status,
        owner=owner,
        started_at=started_at,
        lease_until=lease_until,
        stop_requested=bool(stop),
        last_cursor=str(last_seq) if last_seq else None,
        finished_at=finished_at if status == "finished" else None,
    )


def connect(path: str, *, create: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable from any thread.
    Without `create`, a missing file is an error (sqlite3.OperationalError) instead of a new,
    empty database."""
    target = path
    if not create:
        target = Path(path).absolute().as_uri() + "?mode=rw"
    connection = sqlite3.connect(
        target,
        timeout=BUSY_SECONDS,
        isolation_level=None,
        check_same_thread=False,
        uri=not create,
    )
    connection.execute("PRAGMA synchronous = NORMAL")
    return connection


async def _woken(wake: asyncio.Event) -> None:
    """Wait for a wake-up, BACKSTOP_SECONDS at most.

    Not `asyncio.wait_for(wake.wait(), ...)`: on Python 3.11 it swallows a cancellation that
    arrives as the wake-up does (it returns the result instead), and the follower read on as if
    it had not been cancelled; a durable response whose client left kept such a reader behind,
    stuck on a queue nobody drained. `asyncio.timeout` lets the cancellation through."""
    try:
        async with asyncio.timeout(BACKSTOP_SECONDS):
            await wake.wait()
    except TimeoutError:
        pass


def _batch(rows: list[tuple[int, bytes]]) -> EventBatch:
    """(sequence number, data) pairs as a batch."""
    return EventBatch(cursors=[str(seq) for seq, _ in rows], data=[data for _, data in rows])


class _Recent:
    """The latest events appended through this instance to a run someone here follows: live
    followers take them from memory instead of querying the file. Always contiguous (an append
    that does not follow the last one, say after another process appended, starts it anew)."""

    __slots__ = ("events", "final")

    def __init__(self) -> None:
        self.events: deque[tuple[int, bytes]] = deque(maxlen=RECENT)
        self.final: int | None = None
        """The sequence number of the terminal event, once appended."""

    def add(self, start: int, events: Sequence[bytes], final: bool) -> None:
        if self.events and self.events[-1][0] != start - 1:
            self.events.clear()
        # Copies of exact size: an encoder's result may keep a larger buffer alive (orjson's
        # keeps 4 KiB at least), and this cache holds thousands of events per followed run.
        copies = [bytes(memoryview(event)) for event in events]
        self.events.extend(zip(range(start, start + len(events)), copies, strict=True))
        if final:
            self.final = start + len(events) - 1

    def after(self, position: int, limit: int) -> list[tuple[int, bytes]]:
        """The events after `position` (at most `limit`), when this holds the one right after
        it; else []."""
        if not self.events:
            return []
        first = self.events[0][0]
        if not first <= position + 1 <= self.events[-1][0]:
            return []
        skip = position + 1 - first
        return list(islice(self.events, skip, skip + limit))


class _Transaction:
    """`with _Transaction(connection, immediate=True):` BEGIN ... COMMIT, ROLLBACK on error."""

    def __init__(self, connection: sqlite3.Connection, *, immediate: bool) -> None:
        self.connection = connection
        self.begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    def __enter__(self) -> sqlite3.Connection:
        self.connection.execute(self.begin)
        return self.connection

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if error is None:
            self.connection.execute("COMMIT")
        elif self.connection.in_transaction:
            self.connection.execute("ROLLBACK")


class SQLiteLog(EventLog):
    """The event log in a SQLite file (`sqlite:///PATH`)."""

    def __init__(self, path: str, retention: Retention | None = None) -> None:
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise StoreError(f"no folder {directory!r} for the SQLite store {path!r}")
        self.path = path
        self.retention = retention if retention is not None else Retention()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="agui-sqlite-writer")
        self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="agui-sqlite-reader")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._last_prune = 0.0
        self._wakes: dict[str, asyncio.Event] = {}
        self._followed: dict[str, int] = {}
        self._recent: dict[str, _Recent] = {}
        self._poller: asyncio.Task[None] | None = None
        self._poller_connection: sqlite3.Connection | None = None
        self._closed = False
        self._file: tuple[int, int] | None = None  # (device, inode) of the file opened
        self._ready: Future[None] = self._writer.submit(self._create)

    # ── threads and connections ─────────────────────────────────────────────────────────────

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (each writer and reader thread has its own)."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = connect(self.path, create=self._file is None)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    def _create(self) -> None:
        connection = self._connection()
        try:
            self._wal(connection)
            with _Transaction(connection, immediate=True):
                version = connection.execute("PRAGMA user_version").fetchone()[0]
                if version not in (0, 1, 2, SCHEMA_VERSION):
                    raise StoreError(
                        f"{self.path!r} holds a store of schema version {version}; this agui "
                        f"knows versions 1 to {SCHEMA_VERSION}"
                    )
                if version != SCHEMA_VERSION:
                    for statement in SCHEMA.split(";"):  # not executescript: it commits first
                        if statement.strip():
                            connection.execute(statement)
                    if version == 1:
                        self._upgrade_threads(connection)
                    if version in (1, 2):
                        self._upgrade_bytes(connection)
                    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            status = os.stat(self.path)
        except (sqlite3.Error, OSError) as error:
            raise StoreUnavailable(
                f"cannot open the SQLite store {self.path!r}: {error}"
            ) from error
        self._file = (status.st_dev, status.st_ino)

    @staticmethod
    def _upgrade_threads(db: sqlite3.Connection) -> None:
        """Fill `threads` from the runs of a version 1 file."""
        rows = db.execute("SELECT thread_id, max(n) FROM runs GROUP BY thread_id").fetchall()
        for thread_id, last in rows:
            match = _UPGRADE_NAMESPACE.match(thread_id)
            namespace = match.group(0) if match else ""
            db.execute(
                "INSERT OR REPLACE INTO threads (thread_id, namespace, last_n) VALUES (?, ?, ?)",
                (thread_id, namespace, last),
            )

    @staticmethod
    def _upgrade_bytes(db: sqlite3.Connection) -> None:
        """Count what the runs of a version 1 or 2 file hold (`usage`): each run's `bytes`, each
        namespace's sum. Their events keep their input copy (a read takes them as they are)."""
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        if "bytes" not in columns:
            db.execute("ALTER TABLE runs ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0")
        db.execute("DELETE FROM spaces")
        db.execute(
            "UPDATE runs SET bytes = length(input) + coalesce("
            "(SELECT sum(length(data)) FROM events WHERE run = runs.n), 0)"
        )
        db.execute(
            "INSERT INTO spaces (namespace, bytes) SELECT t.namespace, sum(r.bytes)"
            " FROM threads t JOIN runs r ON r.thread_id = t.thread_id GROUP BY t.namespace"
        )

    def _check_file(self) -> None:
        """StoreUnavailable when the path no longer names the file this log opened."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            raise StoreUnavailable(
                f"the SQLite store {self.path!r} was deleted while in use; what it held is "
                "lost, and nothing more is written (restart on a new file)"
            ) from None
        except OSError as error:
            raise StoreUnavailable(f"SQLite store {self.path!r}: {error}") from error
        if (status.st_dev, status.st_ino) != self._file:
            raise StoreUnavailable(
                f"the SQLite store {self.path!r} was replaced by another file while in use; "
                "nothing more is written to either (restart to use the new one)"
            )

    @staticmethod
    def _wal(connection: sqlite3.Connection) -> None:
        """Switch the file to WAL (once per file: it stays so). The switch does not wait for
        other connections' locks as statements do, so it is retried while the file is busy."""
        deadline = time.monotonic() + BUSY_SECONDS
        while True:
            try:
                mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    connection.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    async def _run(self, executor: ThreadPoolExecutor, job: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreError("the SQLite store is closed")
        await asyncio.wrap_future(self._ready)

        def call() -> T:
            self._check_file()
            try:
                return job(self._connection(), *args)
            except sqlite3.Error as error:
                raise StoreUnavailable(f"SQLite store {self.path!r}: {error}") from error

        return await asyncio.get_running_loop().run_in_executor(executor, call)

    async def _write(self, job: Callable[..., T], *args: Any) -> T:
        return await self._run(self._writer, job, *args)

    async def _read(self, job: Callable[..., T], *args: Any) -> T:
        return await self._run(self._readers, job, *args)

    # ── wake-ups ────────────────────────────────────────────────────────────────────────────

    def _notify(self, run_id: str) -> None:
        wake = self._wakes.pop(run_id, None)
        if wake is not None:
            wake.set()

    def _follow(self, run_id: str) -> None:
        self._followed[run_id] = self._followed.get(run_id, 0) + 1
        self._recent.setdefault(run_id, _Recent())
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    def _unfollow(self, run_id: str) -> None:
        left = self._followed[run_id] - 1
        if left:
            self._followed[run_id] = left
        else:
            del self._followed[run_id]
            self._recent.pop(run_id, None)

    async def _poll(self) -> None:
        """While runs are followed, notice the appends other processes make to them."""
        seen: dict[str, tuple[str, int]] = {}
        version = -1
        try:
            if self._poller_connection is None:
                self._poller_connection = connect(self.path, create=False)
                with self._lock:
                    self._connections.append(self._poller_connection)
            poller = self._poller_connection
            while self._followed and not self._closed:
                followed = list(self._followed)
                version, moved = await asyncio.get_running_loop().run_in_executor(
                    self._readers, self._changes, poller, version, followed, seen
                )
                for run_id in moved:
                    self._notify(run_id)
                await asyncio.sleep(POLL_SECONDS)
        except (sqlite3.Error, RuntimeError):
            pass  # closing, or the file failed; the followers' backstop keeps them going

    @staticmethod
    def _changes(
        poller: sqlite3.Connection, version: int, followed: list[str], seen: dict[str, Any]
    ) -> tuple[int, list[str]]:
        now = poller.execute("PRAGMA data_version").fetchone()[0]
        if now == version:
            return version, []
        moved: list[str] = []
        for start in range(0, len(followed), 500):
            part = followed[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = poller.execute(
                f"SELECT run_id, status, last_seq FROM runs WHERE run_id IN ({marks})", part
            ).fetchall()
            for run_id, status, last_seq in rows:
                if seen.get(run_id) != (status, last_seq):
                    seen[run_id] = (status, last_seq)
                    moved.append(run_id)
        return now, moved

    # ── writes (in the writer thread) ───────────────────────────────────────────────────────

    async def start_run(
        self, record: RunRecord, input: bytes, *, exclusive: bool, namespace: str = ""
    ) -> None:
        now = time.time()
        prune = now - self._last_prune >= PRUNE_EVERY_SECONDS
        if prune:
            self._last_prune = now
        await self._write(
            self._start, record, bytes(input), exclusive, now if prune else None, namespace
        )

    def _start(
        self,
        db: sqlite3.Connection,
        record: RunRecord,
        input: bytes,
        exclusive: bool,
        prune_at: float | None,
        namespace: str,
    ) -> None:
        with _Transaction(db, immediate=True):
            if prune_at is not None:
                self._prune(db, prune_at)
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (record.run_id,)).fetchone():
                raise RunExists(f"run {record.run_id!r} was already started")
            if exclusive:
                busy = db.execute(
                    "SELECT run_id FROM runs WHERE thread_id = ? AND status = 'running' LIMIT 1",
                    (record.thread_id,),
                ).fetchone()
                if busy:
                    raise ThreadBusy(f"thread {record.thread_id!r} has a running run ({busy[0]!r})")
            inserted = db.execute(
                "INSERT INTO runs (run_id, thread_id, status, owner, started_at, lease_until,"
                " stop, input, bytes) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                (
                    record.run_id,
                    record.thread_id,
                    record.owner,
                    record.started_at,
                    record.lease_until,
                    int(record.stop_requested),
                    b"",  # in `inputs`: every update of the run's row rewrites the whole row
                    len(input),
                ),
            )
            db.execute("INSERT INTO inputs (run, input) VALUES (?, ?)", (inserted.lastrowid, input))
            db.execute(
                "INSERT INTO threads (thread_id, namespace, last_n) VALUES (?, ?, ?)"
                " ON CONFLICT (thread_id) DO UPDATE SET last_n = excluded.last_n",
                (record.thread_id, namespace, inserted.lastrowid),
            )
            self._count(db, record.thread_id, len(input))
            limit = self.retention.max_runs_per_thread
            if limit is not None:
                beyond = db.execute(
                    "SELECT n FROM runs WHERE thread_id = ? AND status = 'finished' AND n < ("
                    " SELECT min(n) FROM (SELECT n FROM runs WHERE thread_id = ?"
                    " ORDER BY n DESC LIMIT ?))",
                    (record.thread_id, record.thread_id, max(limit, 1)),
                ).fetchall()
                self._drop(db, [n for (n,) in beyond])

    @staticmethod
    def _count(db: sqlite3.Connection, thread_id: str, change: int) -> None:
        """Add `change` bytes to the usage of the thread's namespace (in the caller's
        transaction; the thread's row exists)."""
        if change:
            db.execute(
                "INSERT INTO spaces (namespace, bytes)"
                " SELECT namespace, ? FROM threads WHERE thread_id = ?"
                " ON CONFLICT (namespace) DO UPDATE SET bytes = bytes + excluded.bytes",
                (change, thread_id),
            )
        if change < 0:  # a namespace that holds nothing leaves no row (nor its name)
            db.execute(
                "DELETE FROM spaces WHERE bytes <= 0 AND namespace ="
                " (SELECT namespace FROM threads WHERE thread_id = ?)",
                (thread_id,),
            )

    @classmethod
    def _drop(cls, db: sqlite3.Connection, runs: list[int]) -> None:
        """Drop runs (their events and rows, their bytes from their namespace's usage); each
        thread they leave keeps its latest run's n, and a thread left with no run goes."""
        if not runs:
            return
        threads: set[str] = set()
        for n in runs:
            for thread_id, size in db.execute(
                "SELECT thread_id, bytes FROM runs WHERE n = ?", (n,)
            ).fetchall():
                threads.add(thread_id)
                cls._count(db, thread_id, -size)
        db.executemany("DELETE FROM events WHERE run = ?", [(n,) for n in runs])
        db.executemany("DELETE FROM inputs WHERE run = ?", [(n,) for n in runs])
        db.executemany("DELETE FROM runs WHERE n = ?", [(n,) for n in runs])
        for thread_id in threads:
            (last,) = db.execute(
                "SELECT max(n) FROM runs WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if last is None:
                db.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
            else:
                db.execute("UPDATE threads SET last_n = ? WHERE thread_id = ?", (last, thread_id))

    async def delete_thread(self, namespace: str, thread_id: str) -> list[str]:
        def delete(db: sqlite3.Connection) -> list[str]:
            db.execute("PRAGMA secure_delete = ON")
            try:
                with _Transaction(db, immediate=True):
                    rows = db.execute(
                        "SELECT n, run_id FROM runs WHERE thread_id = ? ORDER BY n", (thread_id,)
                    ).fetchall()
                    self._drop(db, [n for n, _ in rows])
                    db.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
            finally:
                db.execute("PRAGMA secure_delete = OFF")
            if not rows:
                return []
            # The old pages are in the write-ahead log until a checkpoint: copy them back (as
            # zeros) and empty it. A reader's snapshot may keep it busy: the next one then does.
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            return [run_id for _, run_id in rows]

        removed = await self._write(delete)
        for run_id in removed:
            self._recent.pop(run_id, None)
            self._notify(run_id)
        return removed

    async def append(
        self, run_id: str, events: Sequence[bytes], *, final: bool = False
    ) -> list[Cursor]:
        if not events and final:
            raise StoreError("a final append needs the terminal event")
        start = await self._write(self._append, run_id, events, final, time.time())
        recent = self._recent.get(run_id)
        if recent is not None:
            recent.add(start, events, final)
        self._notify(run_id)
        return [str(seq) for seq in range(start, start + len(events))]

    def _append(
        self,
        db: sqlite3.Connection,
        run_id: str,
        events: Sequence[bytes],
        final: bool,
        now: float,
    ) -> int:
        with _Transaction(db, immediate=True):
            row = db.execute(
                "SELECT n, status, first_seq, last_seq, thread_id,"
                f" CASE WHEN last_seq = 0 THEN {_INPUT} END FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                raise UnknownRun(f"no run {run_id!r} in the log")
            n: int = row[0]
            status: str = row[1]
            first: int = row[2]
            last: int = row[3]
            thread_id: str = row[4]
            if status != "running":
                raise StoreError(f"run {run_id!r} is finished: nothing can be appended")
            if not events:
                return last + 1
            if row[5] is not None:
                # RUN_STARTED carries the input the run's row holds: the file keeps one copy
                elided = elide_input(row[5], events[0])
                if elided is not None:
                    events = [elided, *events[1:]]
            start = last + 1
            db.executemany(
                "INSERT INTO events (run, seq, data) VALUES (?, ?, ?)",
                [(n, start + i, data) for i, data in enumerate(events)],
            )
            size = sum(map(len, events))
            last += len(events)
            limit = self.retention.max_events_per_run
            if limit is not None and last - first + 1 > max(limit, 1):
                first = last - max(limit, 1) + 1
                (dropped,) = db.execute(
                    "SELECT coalesce(sum(length(data)), 0) FROM events WHERE run = ? AND seq < ?",
                    (n, first),
                ).fetchone()
                size -= dropped
                db.execute("DELETE FROM events WHERE run = ? AND seq < ?", (n, first))
            self._count(db, thread_id, size)
            if final:
                db.execute(
                    "UPDATE runs SET last_seq = ?, first_seq = ?, bytes = bytes + ?,"
                    " status = 'finished', finished_at = ? WHERE n = ?",
                    (last, first, size, now, n),
                )
            else:
                db.execute(
                    "UPDATE runs SET last_seq = ?, first_seq = ?, bytes = bytes + ? WHERE n = ?",
                    (last, first, size, n),
                )
            return start

    async def renew(self, run_id: str, owner: str, lease_until: float) -> bool:
        def renew(db: sqlite3.Connection) -> bool:
            with _Transaction(db, immediate=True):
                changed = db.execute(
                    "UPDATE runs SET lease_until = ? WHERE run_id = ? AND owner = ?"
                    " AND status = 'running'",
                    (lease_until, run_id, owner),
                )
                return bool(changed.rowcount == 1)

        return await self._write(renew)

    async def request_stop(self, run_id: str) -> RunRecord:
        def stop(db: sqlite3.Connection) -> RunRecord:
            with _Transaction(db, immediate=True):
                row = db.execute(
                    f"SELECT {RECORD_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
                ).fetchone()
                if row is None:
                    raise UnknownRun(f"no run {run_id!r} in the log")
                db.execute(
                    "UPDATE runs SET stop = 1 WHERE run_id = ? AND status = 'running'", (run_id,)
                )
                return to_record(row)

        return await self._write(stop)

    async def close_lost(self, run_id: str, event: bytes, now: float) -> bool:
        def close(db: sqlite3.Connection) -> bool:
            with _Transaction(db, immediate=True):
                row = db.execute(
                    "SELECT n, last_seq, thread_id FROM runs WHERE run_id = ?"
                    " AND status = 'running' AND lease_until < ?",
                    (run_id, now),
                ).fetchone()
                if row is None:
                    return False
                n, last, thread_id = row
                db.execute(
                    "INSERT INTO events (run, seq, data) VALUES (?, ?, ?)", (n, last + 1, event)
                )
                db.execute(
                    "UPDATE runs SET last_seq = ?, status = 'finished', finished_at = ?,"
                    " bytes = bytes + ? WHERE n = ?",
                    (last + 1, time.time(), len(event), n),
                )
                self._count(db, thread_id, len(event))
                return True

        closed = await self._write(close)
        if closed:
            self._notify(run_id)
        return closed

    async def probe(self) -> None:
        """A write that touches the file: the header's schema version, written again (what a
        full disk or a read-only file refuses, where a read would still work)."""

        def probe(db: sqlite3.Connection) -> None:
            with _Transaction(db, immediate=True):
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

        await self._write(probe)

    async def prune(self, now: float) -> int:
        def prune(db: sqlite3.Connection) -> int:
            with _Transaction(db, immediate=True):
                dropped = self._prune(db, now)
            return dropped

        return await self._write(prune)

    def _prune(self, db: sqlite3.Connection, now: float) -> int:
        ttl = self.retention.run_ttl_seconds
        if ttl is None:
            return 0
        runs = db.execute(
            "SELECT n FROM runs WHERE status = 'finished' AND finished_at < ?", (now - ttl,)
        ).fetchall()
        self._drop(db, [n for (n,) in runs])
        return len(runs)

    # ── reads (in the reader threads) ───────────────────────────────────────────────────────

    async def read_batches(
        self,
        run_id: str,
        after: Cursor | None = None,
        *,
        follow: bool = False,
        limit: int | None = None,
    ) -> AsyncIterator[EventBatch]:
        state = await self._read(self._state, run_id)
        if state is None:
            raise UnknownRun(f"no run {run_id!r} in the log")
        n, last = state
        position = 0 if after is None else parse_seq(after)
        if after is not None and not 1 <= position <= last:
            raise StoreError(f"run {run_id!r} has no event at cursor {after!r}")
        size = CHUNK if limit is None else max(1, min(limit, CHUNK))
        if follow:
            self._follow(run_id)
        recent = self._recent.get(run_id) if follow else None
        caught_up = False  # with what this instance appended: the file may have nothing more
        try:
            while True:
                wake = self._wakes.setdefault(run_id, asyncio.Event())
                if recent is not None:
                    if items := recent.after(position, size):
                        position = items[-1][0]
                        yield _batch(items)
                        if position == recent.final:
                            return
                        caught_up = True
                        continue
                    if caught_up:  # wait: a wake-up from the poller or a backstop reads the file
                        caught_up = False
                        await _woken(wake)
                        continue
                status, rows = await self._read(self._fetch, n, position, size)
                if rows:
                    position = rows[-1][0]
                    yield _batch(rows)
                if len(rows) == size:
                    continue
                if status is None or status == "finished" or not follow:
                    return  # everything up to the snapshot was read (None: the run was dropped)
                await _woken(wake)
        finally:
            if follow:
                self._unfollow(run_id)

    @staticmethod
    def _state(db: sqlite3.Connection, run_id: str) -> tuple[int, int] | None:
        row = db.execute("SELECT n, last_seq FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else (row[0], row[1])

    @staticmethod
    def _fetch(
        db: sqlite3.Connection, n: int, position: int, limit: int
    ) -> tuple[str | None, list[tuple[int, bytes]]]:
        with _Transaction(db, immediate=False):  # one snapshot: the status, then the events
            row = db.execute("SELECT status FROM runs WHERE n = ?", (n,)).fetchone()
            rows = db.execute(
                "SELECT seq, data FROM events WHERE run = ? AND seq > ? ORDER BY seq LIMIT ?",
                (n, position, limit),
            ).fetchall()
            if rows and rows[0][0] == 1 and rows[0][1][:1] == ELIDED:
                rows[0] = (1, SQLiteLog._whole(db, n, rows[0][1]))
        return (None if row is None else row[0]), rows

    @staticmethod
    def _whole(db: sqlite3.Connection, n: int, stored: bytes) -> bytes:
        """A run's first event stored without its input (`elide_input`), whole again."""
        (input,) = db.execute(f"SELECT {_INPUT} FROM runs WHERE n = ?", (n,)).fetchone()
        return restore_input(input, stored)

    async def get_run(self, run_id: str) -> RunRecord | None:
        def get(db: sqlite3.Connection) -> RunRecord | None:
            row = db.execute(
                f"SELECT {RECORD_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            return None if row is None else to_record(row)

        return await self._read(get)

    async def get_input(self, run_id: str) -> bytes | None:
        def get(db: sqlite3.Connection) -> bytes | None:
            row = db.execute(f"SELECT {_INPUT} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            return None if row is None else bytes(row[0])

        return await self._read(get)

    async def thread_runs(self, thread_id: str) -> list[RunRecord]:
        def runs(db: sqlite3.Connection) -> list[RunRecord]:
            rows = db.execute(
                f"SELECT {RECORD_COLUMNS} FROM runs WHERE thread_id = ? ORDER BY n", (thread_id,)
            ).fetchall()
            return [to_record(row) for row in rows]

        return await self._read(runs)

    async def list_threads(
        self, namespace: str, *, limit: int, before: int | None = None
    ) -> list[ThreadSummary]:
        def threads(db: sqlite3.Connection) -> list[ThreadSummary]:
            with _Transaction(db, immediate=False):  # one snapshot
                rows = db.execute(
                    "SELECT t.last_n, r.thread_id, r.run_id, r.status, r.owner, r.started_at,"
                    " r.lease_until, r.stop, r.last_seq, r.finished_at,"
                    " (SELECT count(*) FROM runs c WHERE c.thread_id = t.thread_id),"
                    " (SELECT data FROM events e WHERE e.run = r.n AND e.seq = r.last_seq)"
                    " FROM threads t JOIN runs r ON r.n = t.last_n"
                    " WHERE t.namespace = ? AND t.last_n < ? ORDER BY t.last_n DESC LIMIT ?",
                    (namespace, _NO_ORDER if before is None else before, max(0, limit)),
                ).fetchall()
                last = [
                    None
                    if row[11] is None
                    else self._whole(db, row[0], row[11])
                    if row[11][:1] == ELIDED
                    else bytes(row[11])
                    for row in rows
                ]
            return [
                ThreadSummary(
                    thread_id=row[1],
                    order=row[0],
                    runs=row[10],
                    last_run=to_record(row[1:10]),
                    last_event=event,
                )
                for row, event in zip(rows, last, strict=True)
            ]

        return await self._read(threads)

    async def usage(self, namespace: str) -> Usage:
        def usage(db: sqlite3.Connection) -> Usage:
            with _Transaction(db, immediate=False):  # one snapshot
                row = db.execute(
                    "SELECT bytes FROM spaces WHERE namespace = ?", (namespace,)
                ).fetchone()
                (threads,) = db.execute(
                    "SELECT count(*) FROM threads WHERE namespace = ?", (namespace,)
                ).fetchone()
            return Usage(bytes=0 if row is None else row[0], threads=threads)

        return await self._read(usage)

    async def expired(self, now: float) -> list[RunRecord]:
        def expired(db: sqlite3.Connection) -> list[RunRecord]:
            rows = db.execute(
                f"SELECT {RECORD_COLUMNS} FROM runs WHERE status = 'running' AND lease_until < ?"
                " ORDER BY lease_until",
                (now,),
            ).fetchall()
            return [to_record(row) for row in rows]

        return await self._read(expired)

    @property
    def closed(self) -> bool:
        """Whether `aclose` was called: what fails after it is the shutdown's doing."""
        return self._closed

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._poller is not None:
            self._poller.cancel()
        for wake in self._wakes.values():
            wake.set()
        self._wakes.clear()

        def shut() -> None:
            self._writer.shutdown(wait=True)
            self._readers.shutdown(wait=True)
            with self._lock:
                for connection in self._connections:
                    connection.close()
                self._connections.clear()

        await asyncio.to_thread(shut)
