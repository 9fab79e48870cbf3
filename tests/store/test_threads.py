"""The thread index of every backend (memory, SQLite, Redis): `list_threads` gives a namespace's
threads newest first, a page at a time, with the latest run and its last event; `delete_thread`
removes a thread whole, and for SQLite and Redis nothing of it is left in the store itself (read
with sqlite3 and a plain Redis client, not through the log)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agui.store import EventLog, Retention, UnknownRun, open_log

from .conftest import Backend
from .test_log import collect, event, record, terminal

SECRET = b"erase-me-7f3a"


async def started(log: EventLog, run_id: str, thread_id: str, namespace: str) -> None:
    await log.start_run(
        record(run_id, thread_id), b'{"secret":"%s"}' % SECRET, exclusive=False, namespace=namespace
    )


async def finished(log: EventLog, run_id: str, thread_id: str, namespace: str) -> None:
    await started(log, run_id, thread_id, namespace)
    await log.append(run_id, [event(run_id, 0) + SECRET, event(run_id, 1)])
    await log.append(run_id, [terminal(run_id)], final=True)


async def test_threads_are_listed_newest_first_by_their_latest_run(log: EventLog) -> None:
    await finished(log, "a/r1", "a/t1", "a/")
    await finished(log, "a/r2", "a/t2", "a/")
    await finished(log, "a/r3", "a/t1", "a/")  # t1 moves to the top
    await started(log, "a/r4", "a/t3", "a/")  # running, no event yet
    threads = await log.list_threads("a/", limit=10)
    assert [t.thread_id for t in threads] == ["a/t3", "a/t1", "a/t2"]
    t3, t1, t2 = threads
    assert (t1.runs, t1.last_run.run_id, t1.last_run.status) == (2, "a/r3", "finished")
    assert t1.last_event == terminal("a/r3") and t1.last_run.finished_at is not None
    assert (t3.runs, t3.last_run.status, t3.last_event) == (1, "running", None)
    assert t3.last_run.finished_at is None
    assert t2.last_run.run_id == "a/r2"
    assert t3.order > t1.order > t2.order


async def test_a_namespace_sees_only_its_own_threads(log: EventLog) -> None:
    await finished(log, "a/r1", "a/t1", "a/")
    await finished(log, "b/r1", "b/t1", "b/")
    assert [t.thread_id for t in await log.list_threads("a/", limit=10)] == ["a/t1"]
    assert [t.thread_id for t in await log.list_threads("b/", limit=10)] == ["b/t1"]
    assert await log.list_threads("c/", limit=10) == []
    assert await log.list_threads("", limit=10) == []  # "" is a namespace too, not "every"


async def test_pages_follow_each_other_without_gap_or_repeat(log: EventLog) -> None:
    for n in range(7):
        await finished(log, f"r{n}", f"t{n}", "ns/")
    seen: list[str] = []
    before = None
    pages = 0
    while True:
        page = await log.list_threads("ns/", limit=3, before=before)
        if not page:
            break
        pages += 1
        seen += [t.thread_id for t in page]
        before = page[-1].order
    assert seen == [f"t{n}" for n in reversed(range(7))]
    assert pages == 3
    assert await log.list_threads("ns/", limit=0) == []


async def test_deleting_a_thread_removes_its_runs_and_its_listing(log: EventLog) -> None:
    await finished(log, "a/r1", "a/t1", "a/")
    await finished(log, "a/r2", "a/t1", "a/")
    await finished(log, "a/r3", "a/t2", "a/")
    assert sorted(await log.delete_thread("a/", "a/t1")) == ["a/r1", "a/r2"]
    assert [t.thread_id for t in await log.list_threads("a/", limit=10)] == ["a/t2"]
    assert await log.thread_runs("a/t1") == []
    for run_id in ("a/r1", "a/r2"):
        assert await log.get_run(run_id) is None
        assert await log.get_input(run_id) is None
        with pytest.raises(UnknownRun):
            await collect(log, run_id)
    assert await log.delete_thread("a/", "a/t1") == []  # twice: nothing left
    assert await log.get_run("a/r3") is not None  # the other thread is untouched


async def test_a_follower_of_a_deleted_run_ends(log: EventLog) -> None:
    await started(log, "r1", "t1", "")
    await log.append("r1", [event("r1", 0)])
    follower = asyncio.ensure_future(collect(log, "r1", follow=True))
    await asyncio.sleep(0.2)
    assert await log.delete_thread("", "t1") == ["r1"]
    await asyncio.wait_for(follower, 30)  # hang bound (Redis: one XREAD BLOCK at most)


# Redis expires keys by itself (PEXPIRE): its case is the TTL test below.
@pytest.mark.parametrize("backend", ["memory", "sqlite"], indirect=True)
async def test_a_thread_whose_runs_retention_dropped_is_not_listed(backend: Backend) -> None:
    log = backend.open(Retention(run_ttl_seconds=0.0))
    await finished(log, "r1", "t1", "ns/")
    time.sleep(0.01)
    await log.prune(time.time())
    assert await log.list_threads("ns/", limit=10) == []


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_redis_drops_an_expired_thread_from_its_index(backend: Backend) -> None:
    log = backend.open(Retention(run_ttl_seconds=0.05))
    await finished(log, "r1", "t1", "ns/")
    await finished(log, "r2", "t2", "ns/")
    await asyncio.sleep(0.3)  # both expired (PEXPIRE 50 ms)
    assert await log.list_threads("ns/", limit=10) == []
    client = _raw_redis(backend.url)
    try:
        assert client.zcard(f"{_prefix(backend.url)}threads:ns/") == 0
    finally:
        client.close()


# ── nothing left in the store itself ──────────────────────────────────────────────────────────


def _prefix(url: str) -> str:
    return urlsplit(url).query.split("prefix=", 1)[1]


def _raw_redis(url: str) -> object:
    import redis

    parts = urlsplit(url)
    return redis.Redis(host=parts.hostname or "127.0.0.1", port=parts.port or 6379, db=0)


def _sqlite_rows(path: str) -> list[tuple[str, object]]:
    """Every row of every table of the file, read with sqlite3 itself, as (table, row)."""
    with sqlite3.connect(path) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [(t, row) for t in tables for row in db.execute(f"SELECT * FROM {t}")]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_sqlite_keeps_no_row_and_no_byte_of_a_deleted_thread(
    backend: Backend, tmp_path: Path
) -> None:
    log = backend.open()
    await finished(log, "gone/r1", "gone/t1", "gone/")
    await finished(log, "gone/r2", "gone/t1", "gone/")
    await finished(log, "kept/r1", "kept/t1", "kept/")
    path = urlsplit(backend.url).path[1:]
    assert any("gone/" in repr(row) for _, row in _sqlite_rows(path))
    await log.delete_thread("gone/", "gone/t1")
    rows = _sqlite_rows(path)
    left = [(table, row) for table, row in rows if "gone/" in repr(row)]
    assert left == []
    assert any("kept/" in repr(row) for _, row in rows)
    # secure_delete and the checkpoint: the deleted events' bytes are in neither file. The kept
    # thread's events hold the same secret, so look for the deleted ids.
    for name in (path, path + "-wal"):
        if Path(name).exists():
            assert b"gone/r1" not in Path(name).read_bytes(), name


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_redis_keeps_no_key_of_a_deleted_thread(backend: Backend) -> None:
    log = backend.open()
    await finished(log, "gone/r1", "gone/t1", "gone/")
    await started(log, "gone/r2", "gone/t1", "gone/")  # running: in leases and running:
    await finished(log, "kept/r1", "kept/t1", "kept/")
    prefix = _prefix(backend.url)
    client = _raw_redis(backend.url)
    try:

        def mentions() -> list[str]:
            found = []
            for key in client.scan_iter(match=f"{prefix}*"):  # a test may scan
                name = key.decode()
                if "gone/" in name:
                    found.append(name)
                    continue
                kind = client.type(key).decode()
                members: list[bytes] = []
                if kind == "zset":
                    members = client.zrange(key, 0, -1)
                elif kind == "set":
                    members = list(client.smembers(key))
                elif kind == "hash":
                    members = list(client.hgetall(key).values())
                if any(b"gone/" in m for m in members):
                    found.append(name)
            return found

        assert mentions()  # there was something to delete
        assert sorted(await log.delete_thread("gone/", "gone/t1")) == ["gone/r1", "gone/r2"]
        assert mentions() == []
        assert client.exists(f"{prefix}run:kept/r1") == 1
    finally:
        client.close()


async def test_a_sqlite_file_of_schema_1_is_upgraded_with_its_threads(tmp_path: Path) -> None:
    """A file written before the thread index: its threads are listed once it is reopened."""
    path = tmp_path / "old.db"
    log = open_log(f"sqlite:///{path}")
    await finished(
        log, "0123456789abcdef0123456789abcdef/r1", "0123456789abcdef0123456789abcdef/t1", "x"
    )
    await log.aclose()
    with sqlite3.connect(path) as db:  # back to what version 1 had
        db.execute("DROP TABLE threads")
        db.execute("PRAGMA user_version = 1")
    log = open_log(f"sqlite:///{path}")
    try:
        threads = await log.list_threads("0123456789abcdef0123456789abcdef/", limit=5)
        assert [t.last_run.run_id for t in threads] == ["0123456789abcdef0123456789abcdef/r1"]
    finally:
        await log.aclose()


@pytest.mark.parametrize("backend", ["memory", "sqlite"], indirect=True)
async def test_a_thread_whose_latest_run_was_dropped_goes_back_to_its_place(
    backend: Backend,
) -> None:
    """The TTL drops a thread's latest run (finished) while an older one still runs: the thread
    is ordered by the run it keeps, behind a thread started in between. (Redis keeps the order
    of the latest start: its keys expire by themselves, not through a prune.)"""
    log = backend.open(Retention(run_ttl_seconds=1000.0))
    await started(log, "long", "t", "ns/")  # still running: kept
    await started(log, "between", "u", "ns/")  # running too
    await finished(log, "short", "t", "ns/")
    assert [x.thread_id for x in await log.list_threads("ns/", limit=10)] == ["t", "u"]
    assert await log.prune(time.time() + 2000.0) == 1  # "short", as if 2000 s went by
    listed = await log.list_threads("ns/", limit=10)
    assert [(x.thread_id, x.last_run.run_id) for x in listed] == [("u", "between"), ("t", "long")]
