"""What each backend (memory, SQLite, Redis) says a namespace holds (`EventLog.usage`, the quota a
server applies per principal), and the run's input kept once: the RUN_STARTED that carries it is
stored without its copy and read back whole. Usage goes up as runs start and events are appended,
and down as runs are dropped (deleted threads, retention, expiry), on every instance sharing the
store. The sizes are measured in the store itself: the SQLite file, Redis's MEMORY USAGE, the
memory log's allocations (tracemalloc)."""

from __future__ import annotations

import asyncio
import base64
import gc
import os
import sqlite3
import time
import tracemalloc
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agui.store import EventLog, Retention, Usage, open_log

from .conftest import Backend
from .test_log import collect, event, record, terminal
from .test_threads import _prefix, _raw_redis

MIB = 1024 * 1024


def run_input(run_id: str, size: int = 1000) -> bytes:
    """A RunAgentInput's JSON whose state is `size` bytes of text."""
    state = base64.b64encode(os.urandom(size))[:size]
    return b'{"threadId":"t","runId":"%s","state":{"blob":"%s"},"messages":[]}' % (
        run_id.encode(),
        state,
    )


def run_started(input: bytes) -> bytes:
    """RUN_STARTED carrying the input, as the durable server stores it."""
    return b'{"type":"RUN_STARTED","threadId":"t","runId":"r","input":%s}' % input


def stored_size(input: bytes, started: bytes) -> int:
    """What RUN_STARTED costs once its copy of the input is cut out: the rest and the header
    (NUL, the input's offset, ':')."""
    at = started.find(input)
    return len(started) - len(input) + len(b"\x00%d:" % at)


async def test_usage_counts_each_input_once_and_every_event(log: EventLog) -> None:
    input = run_input("r1")
    started = run_started(input)
    others = [event("r1", 0), event("r1", 1)]
    await log.start_run(record("r1", "ns/t1"), input, exclusive=False, namespace="ns/")
    assert await log.usage("ns/") == Usage(bytes=len(input), threads=1)
    await log.append("r1", [started, *others])
    await log.append("r1", [terminal("r1")], final=True)
    expected = len(input) + stored_size(input, started) + sum(map(len, others))
    expected += len(terminal("r1"))
    assert await log.usage("ns/") == Usage(bytes=expected, threads=1)
    assert expected < 2 * len(input)  # not the input twice
    # read back whole, from the start and after a cursor
    stored = await collect(log, "r1")
    assert [s.data for s in stored] == [started, *others, terminal("r1")]
    assert (await collect(log, "r1", stored[0].cursor))[0].data == others[0]
    assert await log.get_input("r1") == input


async def test_a_run_started_alone_reads_whole_when_followed_and_listed(log: EventLog) -> None:
    """The first event appended by itself (a one-event append), read by a follower that waited
    for it and by the thread listing (its latest run's last event)."""
    input = run_input("r1")
    started = run_started(input)
    await log.start_run(record("r1", "ns/t1"), input, exclusive=False, namespace="ns/")

    async def first() -> bytes:
        async for stored in log.read("r1", follow=True):
            return stored.data
        raise AssertionError("no event")

    follower = asyncio.ensure_future(first())
    await asyncio.sleep(0.05)
    await log.append("r1", [started])
    assert await follower == started
    (summary,) = await log.list_threads("ns/", limit=5)
    assert summary.last_event == started
    assert await log.usage("ns/") == Usage(
        bytes=len(input) + stored_size(input, started), threads=1
    )


async def test_an_event_without_the_input_is_stored_as_it_is(log: EventLog) -> None:
    input = run_input("r1")
    await log.start_run(record("r1", "ns/t1"), input, exclusive=False, namespace="ns/")
    first = b'{"type":"RUN_STARTED","threadId":"t","runId":"r1"}'
    await log.append("r1", [first])
    assert [s.data for s in await collect(log, "r1")] == [first]
    assert (await log.usage("ns/")).bytes == len(input) + len(first)


async def test_usage_is_per_namespace_and_counts_threads(log: EventLog) -> None:
    for run_id, thread_id, namespace in (
        ("a/r1", "a/t1", "a/"),
        ("a/r2", "a/t1", "a/"),
        ("a/r3", "a/t2", "a/"),
        ("b/r1", "b/t1", "b/"),
    ):
        await log.start_run(
            record(run_id, thread_id),
            b'{"in":"%s"}' % run_id.encode(),
            exclusive=False,
            namespace=namespace,
        )
    assert await log.usage("a/") == Usage(bytes=3 * len(b'{"in":"a/r1"}'), threads=2)
    assert await log.usage("b/") == Usage(bytes=len(b'{"in":"b/r1"}'), threads=1)
    assert await log.usage("c/") == Usage(bytes=0, threads=0)


async def test_deleting_a_thread_takes_its_bytes_and_itself_out_of_usage(log: EventLog) -> None:
    for run_id, thread_id in (("a/r1", "a/t1"), ("a/r2", "a/t1"), ("a/r3", "a/t2")):
        input = run_input(run_id)
        await log.start_run(record(run_id, thread_id), input, exclusive=False, namespace="a/")
        await log.append(run_id, [run_started(input), event(run_id, 0)])
        await log.append(run_id, [terminal(run_id)], final=True)
    await log.start_run(record("b/r1", "b/t1"), run_input("b/r1"), exclusive=False, namespace="b/")
    other = await log.usage("b/")
    before = await log.usage("a/")
    await log.delete_thread("a/", "a/t1")
    after = await log.usage("a/")
    assert after.threads == 1
    third = run_input("a/r3")  # the same length as the kept run's
    assert after.bytes == len(third) + stored_size(third, run_started(third)) + len(
        event("a/r3", 0)
    ) + len(terminal("a/r3"))
    assert after.bytes < before.bytes
    await log.delete_thread("a/", "a/t2")
    assert await log.usage("a/") == Usage(bytes=0, threads=0)
    assert await log.usage("b/") == other


async def test_runs_retention_drops_leave_usage(backend: Backend) -> None:
    log = backend.open(Retention(max_runs_per_thread=1))
    await log.start_run(record("r1", "ns/t1"), b'{"in":1}', exclusive=False, namespace="ns/")
    await log.append("r1", [event("r1", 0), terminal("r1")], final=True)
    await log.start_run(record("r2", "ns/t1"), b'{"in":22}', exclusive=False, namespace="ns/")
    assert await log.usage("ns/") == Usage(bytes=len(b'{"in":22}'), threads=1)


async def test_trimmed_events_leave_usage(backend: Backend) -> None:
    log = backend.open(Retention(max_events_per_run=2))
    await log.start_run(record("r1", "ns/t1"), b'{"in":1}', exclusive=False, namespace="ns/")
    for number in range(6):
        await log.append("r1", [event("r1", number)])
    kept = await collect(log, "r1")
    assert len(kept) < 6
    assert await log.usage("ns/") == Usage(
        bytes=len(b'{"in":1}') + sum(len(s.data) for s in kept), threads=1
    )


async def test_expired_runs_leave_usage(backend: Backend) -> None:
    """The TTL: memory and SQLite drop the runs when pruning; Redis expires their keys, and the
    usage read next takes them out."""
    log = backend.open(Retention(run_ttl_seconds=0.05))
    await log.start_run(record("r1", "ns/t1"), b'{"in":1}', exclusive=False, namespace="ns/")
    await log.append("r1", [event("r1", 0), terminal("r1")], final=True)
    await log.start_run(record("r2", "ns/t2"), b'{"in":2}', exclusive=False, namespace="ns/")
    deadline = time.monotonic() + 10  # a hang is the failure, not the time
    while True:
        await asyncio.sleep(0.1)
        await log.prune(time.time())
        usage = await log.usage("ns/")
        if usage == Usage(bytes=len(b'{"in":2}'), threads=1):
            break
        assert time.monotonic() < deadline, usage


@pytest.mark.parametrize("backend", ["sqlite", "redis"], indirect=True)
async def test_usage_is_the_same_on_every_instance(backend: Backend) -> None:
    one, two = backend.open(), backend.open()
    input = run_input("r1")
    await one.start_run(record("r1", "ns/t1"), input, exclusive=False, namespace="ns/")
    await one.append("r1", [run_started(input)])
    assert await two.usage("ns/") == await one.usage("ns/")
    await two.delete_thread("ns/", "ns/t1")
    assert await one.usage("ns/") == Usage(bytes=0, threads=0)


# ── a 7 MiB input costs about 7 MiB, measured in the store ─────────────────────────────────────


async def _store_seven(log: EventLog) -> int:
    """Start a run whose input is 7 MiB and store its RUN_STARTED; the input's size."""
    input = run_input("r1", 7 * MIB)
    await log.start_run(record("r1", "ns/t1"), input, exclusive=False, namespace="ns/")
    await log.append("r1", [run_started(input), event("r1", 0)])
    await log.append("r1", [terminal("r1")], final=True)
    return len(input)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_sqlite_stores_a_7_mib_input_once(backend: Backend) -> None:
    log = backend.open()
    size = await _store_seven(log)
    await log.aclose()
    path = urlsplit(backend.url).path[1:]
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    on_disk = Path(path).stat().st_size
    assert size < on_disk < 1.2 * size, on_disk


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_redis_stores_a_7_mib_input_once(backend: Backend) -> None:
    log = backend.open()
    size = await _store_seven(log)
    prefix = _prefix(backend.url)
    client: Any = _raw_redis(backend.url)
    try:
        # samples=0: every element of the keys counted, not an estimate
        held = sum(
            int(client.memory_usage(f"{prefix}{kind}:r1", samples=0) or 0)
            for kind in ("run", "events")
        )
    finally:
        client.close()
    assert size < held < 1.2 * size, held


@pytest.mark.parametrize("backend", ["memory"], indirect=True)
async def test_memory_stores_a_7_mib_input_once(backend: Backend) -> None:
    log = backend.open()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        size = await _store_seven(log)  # the test's own copies are gone when it returns
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert size < grown < 1.2 * size, grown
    assert (await log.usage("ns/")).bytes < 1.01 * size


async def test_a_sqlite_file_of_schema_2_is_counted_and_read_as_it_is(tmp_path: Path) -> None:
    """A file written before usage and elision: its runs are counted when it is opened, and
    its RUN_STARTED (with its copy of the input) reads as it was stored."""
    path = tmp_path / "old.db"
    log = open_log(f"sqlite:///{path}")
    input = run_input("r1")
    first = b'{"type":"RUN_STARTED"}'
    await log.start_run(record("r1", "ns/t1"), input, exclusive=False, namespace="ns/")
    await log.append("r1", [first, event("r1", 0)])
    await log.aclose()
    with sqlite3.connect(path) as db:  # back to version 2, its RUN_STARTED whole
        db.execute("UPDATE events SET data = ? WHERE seq = 1", (run_started(input),))
        db.execute("UPDATE runs SET input = (SELECT input FROM inputs WHERE run = runs.n)")
        db.execute("DROP TABLE inputs")
        db.execute("DROP TABLE spaces")
        db.execute("ALTER TABLE runs DROP COLUMN bytes")
        db.execute("PRAGMA user_version = 2")
    log = open_log(f"sqlite:///{path}")
    try:
        assert await log.usage("ns/") == Usage(
            bytes=len(input) + len(run_started(input)) + len(event("r1", 0)), threads=1
        )
        assert [s.data for s in await collect(log, "r1")] == [
            run_started(input),
            event("r1", 0),
        ]
    finally:
        await log.aclose()
