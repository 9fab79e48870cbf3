"""The event log's behaviour, the same for every backend (memory, SQLite, Redis): the order of
events and their cursors, reading after a cursor, following a run live, one running run per
thread, leases, stop requests, closing a lost run exactly once, retention, many concurrent runs;
and, for the backends a second process can share (SQLite, Redis), a second EventLog instance on
the same store: a restart, another worker, another process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence

import pytest

from agui.store import (
    EventLog,
    Retention,
    RunExists,
    RunRecord,
    StoredEvent,
    StoreError,
    ThreadBusy,
    UnknownRun,
    open_log,
)

from ..conftest import ROOT
from .conftest import Backend

LEASE = 60.0
"""A lease far in the future: the run is not lost."""


def event(run_id: str, number: int) -> bytes:
    """An event's JSON (~80 bytes), unique per run and number."""
    return b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"%s","delta":"event number %d"}' % (
        run_id.encode(),
        number,
    )


def terminal(run_id: str) -> bytes:
    return b'{"type":"RUN_FINISHED","threadId":"t","runId":"%s"}' % run_id.encode()


def lost(run_id: str) -> bytes:
    return b'{"type":"RUN_ERROR","message":"the worker was lost","code":"RUN_LOST"}'


def record(
    run_id: str, thread_id: str = "thread-1", owner: str = "worker-1", lease: float = LEASE
) -> RunRecord:
    now = time.time()
    return RunRecord(
        thread_id=thread_id,
        run_id=run_id,
        status="running",
        owner=owner,
        started_at=now,
        lease_until=now + lease,
    )


async def collect(
    log: EventLog, run_id: str, after: str | None = None, *, follow: bool = False
) -> list[StoredEvent]:
    return [stored async for stored in log.read(run_id, after, follow=follow)]


async def run_with(
    log: EventLog, run_id: str, count: int, *, thread_id: str = "thread-1", batch: int = 7
) -> tuple[list[bytes], list[str]]:
    """Start a run, append `count` events in batches and its terminal event; return the events
    and their cursors."""
    await log.start_run(record(run_id, thread_id), b'{"input":1}', exclusive=False)
    events = [event(run_id, n) for n in range(count)] + [terminal(run_id)]
    cursors: list[str] = []
    for start in range(0, count, batch):
        cursors += await log.append(run_id, events[start : min(start + batch, count)])
    cursors += await log.append(run_id, events[-1:], final=True)
    return events, cursors


def data(stored: Sequence[StoredEvent]) -> list[bytes]:
    return [s.data for s in stored]


# ── order and cursors ───────────────────────────────────────────────────────────────────────────


async def test_events_are_read_back_in_order_with_their_cursors(log: EventLog) -> None:
    await log.start_run(record("run-1"), b'{"threadId":"thread-1"}', exclusive=True)
    started = await log.get_run("run-1")
    assert started is not None and started.status == "running" and started.last_cursor is None
    assert started.thread_id == "thread-1" and started.owner == "worker-1"
    assert await log.get_input("run-1") == b'{"threadId":"thread-1"}'
    assert await collect(log, "run-1") == []

    events = [event("run-1", n) for n in range(5)]
    cursors = await log.append("run-1", events[:3])
    cursors += await log.append("run-1", events[3:])
    assert len(cursors) == len(set(cursors)) == 5
    for cursor in cursors:
        assert cursor and cursor.isascii() and not set(cursor) & {"\n", "\r", "\0", " "}

    read = await collect(log, "run-1")
    assert data(read) == events
    assert [s.cursor for s in read] == cursors
    running = await log.get_run("run-1")
    assert running is not None and running.status == "running"
    assert running.last_cursor == cursors[-1]

    cursors += await log.append("run-1", [terminal("run-1")], final=True)
    finished = await log.get_run("run-1")
    assert finished is not None and finished.status == "finished"
    assert finished.last_cursor == cursors[-1]
    assert [s.cursor for s in await collect(log, "run-1")] == cursors


async def test_an_empty_append_stores_nothing(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    assert await log.append("run-1", []) == []
    assert await collect(log, "run-1") == []
    with pytest.raises(StoreError):
        await log.append("run-1", [], final=True)


async def test_reading_after_a_cursor_gives_exactly_the_rest(log: EventLog) -> None:
    events, cursors = await run_with(log, "run-1", 40)
    for k, cursor in enumerate(cursors):
        rest = await collect(log, "run-1", cursor)
        assert data(rest) == events[k + 1 :], f"after cursor {k}"
        assert [s.cursor for s in rest] == cursors[k + 1 :]
        assert data(await collect(log, "run-1", cursor, follow=True)) == events[k + 1 :]


async def test_appending_to_a_finished_run_fails(log: EventLog) -> None:
    await run_with(log, "run-1", 3)
    with pytest.raises(StoreError):
        await log.append("run-1", [event("run-1", 99)])
    assert len(await collect(log, "run-1")) == 4


# ── following ───────────────────────────────────────────────────────────────────────────────────


async def test_a_follower_gets_live_appends_and_ends_after_the_terminal_event(
    log: EventLog,
) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    follower = asyncio.create_task(collect(log, "run-1", follow=True))
    events = [event("run-1", n) for n in range(30)]
    for start in range(0, 30, 6):
        await asyncio.sleep(0.02)
        await log.append("run-1", events[start : start + 6])
        assert not follower.done()
    await asyncio.sleep(0.05)
    assert not follower.done(), "a follower ended before the terminal event"
    await log.append("run-1", [terminal("run-1")], final=True)
    got = await asyncio.wait_for(follower, 5)
    assert data(got) == [*events, terminal("run-1")]


async def test_a_follower_is_woken_by_the_append(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other way a waiting follower could see the event is taken away: SQLite's poller
    (for other processes' appends) does not run and its backstop is an hour, Redis's XREAD BLOCK
    times out after an hour (the memory log has neither). Only the append's wake-up can deliver
    the event within the bound. (The log is opened after the settings are changed.)"""

    async def no_poller(self: object) -> None:
        return None

    if backend.name == "sqlite":
        monkeypatch.setattr("agui.store.sqlite.SQLiteLog._poll", no_poller)
        monkeypatch.setattr("agui.store.sqlite.BACKSTOP_SECONDS", 3600.0)
    if backend.name == "redis":
        monkeypatch.setattr("agui.store.redis.BLOCK_MS", 3_600_000)
    log = backend.open()
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    reader = log.read("run-1", follow=True)
    waiting = asyncio.ensure_future(anext(reader))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await log.append("run-1", [event("run-1", 0)])
    woken, _ = await asyncio.wait({waiting}, timeout=30)
    assert woken, "the follower was not woken by the append"  # hang bound
    assert waiting.result().data == event("run-1", 0)
    await log.append("run-1", [terminal("run-1")], final=True)
    assert data([s async for s in reader]) == [terminal("run-1")]


async def test_a_follower_cancelled_as_an_append_wakes_it_is_cancelled(
    log: EventLog, backend: Backend
) -> None:
    """The cancellation comes in the same step as the wake-up: the follower ends, cancelled; it
    does not read on. (asyncio.wait_for on Python 3.11 returns instead of raising then: the
    SQLite store's wait did, and a durable response whose client had left kept its reader.)"""
    if backend.name == "redis" and sys.version_info < (3, 12):
        pytest.xfail(
            "redis-py sends each command under asyncio.wait_for, which on Python 3.11 swallows "
            "the cancellation here: the follower reads on (a durable response still stops it, "
            "at its next event: the response's queue is closed)"
        )
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    await log.append("run-1", [event("run-1", 0)])
    follower = asyncio.create_task(collect(log, "run-1", follow=True))
    await asyncio.sleep(0.1)  # it read the event and waits for the next
    assert not follower.done()
    await log.append("run-1", [event("run-1", 1)])
    follower.cancel()
    await asyncio.wait((follower,), timeout=5)
    assert follower.cancelled(), "the follower read on after it was cancelled"


async def test_following_from_a_cursor_mid_run(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    cursors = await log.append("run-1", [event("run-1", n) for n in range(5)])
    follower = asyncio.create_task(collect(log, "run-1", cursors[2], follow=True))
    await asyncio.sleep(0.02)
    await log.append("run-1", [event("run-1", 5), terminal("run-1")], final=True)
    got = await asyncio.wait_for(follower, 5)
    assert data(got) == [event("run-1", 3), event("run-1", 4), event("run-1", 5), terminal("run-1")]


async def test_following_a_finished_run_ends_at_once(log: EventLog) -> None:
    events, cursors = await run_with(log, "run-1", 10)
    assert data(await asyncio.wait_for(collect(log, "run-1", follow=True), 1)) == events
    assert await asyncio.wait_for(collect(log, "run-1", cursors[-1], follow=True), 1) == []


async def test_reading_a_running_run_without_follow_stops_at_its_end(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    await log.append("run-1", [event("run-1", 0), event("run-1", 1)])
    assert len(await asyncio.wait_for(collect(log, "run-1"), 1)) == 2


async def test_concurrent_followers_each_see_everything(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    events = [event("run-1", n) for n in range(300)] + [terminal("run-1")]
    followers = [asyncio.create_task(collect(log, "run-1", follow=True)) for _ in range(10)]
    for start in range(0, 300, 25):
        await log.append("run-1", events[start : start + 25])
        if start == 150:
            followers += [asyncio.create_task(collect(log, "run-1", follow=True))]
        await asyncio.sleep(0)
    await log.append("run-1", events[-1:], final=True)
    for got in await asyncio.wait_for(asyncio.gather(*followers), 10):
        assert data(got) == events


async def test_closing_the_log_ends_its_followers(backend: Backend) -> None:
    log = backend.open()
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    await log.append("run-1", [event("run-1", 0)])
    follower = asyncio.create_task(collect(log, "run-1", follow=True))
    await asyncio.sleep(0.1)
    await log.aclose()
    with pytest.raises(StoreError):
        await asyncio.wait_for(follower, 5)


# ── batched reads ───────────────────────────────────────────────────────────────────────────────


async def batches(
    log: EventLog,
    run_id: str,
    after: str | None = None,
    *,
    follow: bool = False,
    limit: int | None = None,
) -> list[list[StoredEvent]]:
    return [b async for b in log.read_batches(run_id, after, follow=follow, limit=limit)]


def flat(got: Sequence[Sequence[StoredEvent]]) -> list[StoredEvent]:
    assert all(got), "an empty batch"
    return [stored for batch in got for stored in batch]


async def test_a_batched_read_gives_what_read_gives_in_one_batch(log: EventLog) -> None:
    events, cursors = await run_with(log, "run-1", 40)
    got = await batches(log, "run-1")
    assert len(got) == 1, [len(b) for b in got]  # 41 events: all available, one batch
    assert flat(got) == await collect(log, "run-1")
    assert data(flat(got)) == events and [s.cursor for s in flat(got)] == cursors
    assert all(type(s) is StoredEvent for s in flat(got))


@pytest.mark.parametrize("limit", [1, 3, 40, 41, 500])
async def test_a_batched_read_keeps_to_its_limit(log: EventLog, limit: int) -> None:
    events, cursors = await run_with(log, "run-1", 40)
    for follow in (False, True):
        got = await batches(log, "run-1", follow=follow, limit=limit)
        sizes = [len(b) for b in got]
        assert all(size == limit for size in sizes[:-1]) and 0 < sizes[-1] <= limit, sizes
        assert data(flat(got)) == events and [s.cursor for s in flat(got)] == cursors
        rest = await batches(log, "run-1", cursors[9], follow=follow, limit=limit)
        assert [s.cursor for s in flat(rest)] == cursors[10:]


async def test_a_batched_read_after_each_cursor_gives_exactly_the_rest(log: EventLog) -> None:
    events, cursors = await run_with(log, "run-1", 25, batch=4)
    for k, cursor in enumerate(cursors):
        for limit in (None, 2):
            rest = flat(await batches(log, "run-1", cursor, limit=limit))
            assert data(rest) == events[k + 1 :], f"after cursor {k}, limit {limit}"
            assert [s.cursor for s in rest] == cursors[k + 1 :]


async def test_a_batched_read_of_nothing_gives_no_batch(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    assert await batches(log, "run-1") == []  # no event yet
    cursors = await log.append("run-1", [event("run-1", 0), event("run-1", 1)])
    assert await batches(log, "run-1", cursors[-1]) == []  # after the last one
    cursors += await log.append("run-1", [terminal("run-1")], final=True)
    assert await asyncio.wait_for(batches(log, "run-1", cursors[-1], follow=True), 1) == []
    with pytest.raises(StoreError):
        await batches(log, "run-1", cursors[-1] + "9")
    with pytest.raises(UnknownRun):
        await batches(log, "nope")


async def test_a_batch_takes_everything_appended_since_the_last_one(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    events = [event("run-1", n) for n in range(20)] + [terminal("run-1")]
    cursors = await log.append("run-1", events[:5])
    reader = log.read_batches("run-1", follow=True)
    first = await anext(reader)
    assert data(first) == events[:5]
    waiting = asyncio.ensure_future(anext(reader))  # waits at the end of the run
    await asyncio.sleep(0.05)
    assert not waiting.done()
    cursors += await log.append("run-1", events[5:8])
    second = await asyncio.wait_for(waiting, 5)
    assert data(second) == events[5:8] and [s.cursor for s in second] == cursors[5:8]
    for start in (8, 12, 16):  # three appends while the reader is away: one batch for them all
        cursors += await log.append("run-1", events[start : start + 4])
    third = await asyncio.wait_for(anext(reader), 5)
    assert data(third) == events[8:20] and [s.cursor for s in third] == cursors[8:20]
    cursors += await log.append("run-1", events[-1:], final=True)
    assert [s.cursor for s in flat([b async for b in reader])] == cursors[20:]


async def test_a_batched_follower_sees_concurrent_appends_once_in_order(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    events = [event("run-1", n) for n in range(400)] + [terminal("run-1")]
    followers = [
        asyncio.create_task(batches(log, "run-1", follow=True, limit=limit))
        for limit in (None, 1, 7, 64)
    ]
    cursors: list[str] = []
    for start in range(0, 400, 9):
        cursors += await log.append("run-1", events[start : min(start + 9, 400)])
        if start % 4 == 0:
            await asyncio.sleep(0)
        if start == 198:  # one more, from the middle, cursor in hand
            followers.append(asyncio.create_task(batches(log, "run-1", cursors[100], follow=True)))
    cursors += await log.append("run-1", events[-1:], final=True)
    for n, got in enumerate(await asyncio.wait_for(asyncio.gather(*followers), 20)):
        skip = 101 if n == 4 else 0
        assert data(flat(got)) == events[skip:], f"follower {n}"
        assert [s.cursor for s in flat(got)] == cursors[skip:], f"follower {n}"


# ── starting runs ───────────────────────────────────────────────────────────────────────────────


async def test_an_exclusive_start_waits_for_the_running_run_of_its_thread(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    with pytest.raises(ThreadBusy):
        await log.start_run(record("run-2"), b"{}", exclusive=True)
    assert await log.get_run("run-2") is None
    await log.start_run(record("other", thread_id="thread-2"), b"{}", exclusive=True)
    await log.append("run-1", [terminal("run-1")], final=True)
    await log.start_run(record("run-2"), b"{}", exclusive=True)
    with pytest.raises(ThreadBusy):
        await log.start_run(record("run-3"), b"{}", exclusive=True)
    await log.start_run(record("run-3"), b"{}", exclusive=False)  # not exclusive: allowed
    assert [r.run_id for r in await log.thread_runs("thread-1")] == ["run-1", "run-2", "run-3"]


async def test_concurrent_exclusive_starts_on_one_thread_let_one_win(backend: Backend) -> None:
    logs = [backend.open(), backend.open()] if backend.shared else [backend.open()]

    async def start(n: int) -> bool:
        try:
            await logs[n % len(logs)].start_run(record(f"run-{n}"), b"{}", exclusive=True)
        except ThreadBusy:
            return False
        return True

    started = await asyncio.gather(*(start(n) for n in range(20)))
    assert sum(started) == 1
    assert len(await logs[0].thread_runs("thread-1")) == 1


async def test_a_run_id_starts_once(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    with pytest.raises(RunExists):
        await log.start_run(record("run-1", thread_id="thread-2"), b"{}", exclusive=False)
    await log.append("run-1", [terminal("run-1")], final=True)
    with pytest.raises(RunExists):
        await log.start_run(record("run-1"), b"{}", exclusive=True)
    assert await log.thread_runs("thread-2") == []


async def test_unknown_runs(log: EventLog) -> None:
    assert await log.get_run("nope") is None
    assert await log.get_input("nope") is None
    with pytest.raises(UnknownRun):
        await log.append("nope", [event("nope", 0)])
    with pytest.raises(UnknownRun):
        await collect(log, "nope")
    with pytest.raises(UnknownRun):
        await collect(log, "nope", follow=True)
    with pytest.raises(UnknownRun):
        await log.request_stop("nope")
    assert await log.renew("nope", "worker-1", time.time() + LEASE) is False
    assert await log.close_lost("nope", lost("nope"), time.time() + 2 * LEASE) is False
    assert await log.thread_runs("no-thread") == []


@pytest.mark.parametrize(
    "bad", ["", "garbage", "-1", "1.2.3", "past", "padded", "before", "0", "a\nb", "9" * 40]
)
async def test_a_cursor_the_run_never_produced_is_refused(log: EventLog, bad: str) -> None:
    _, cursors = await run_with(log, "run-1", 5)
    if bad == "past":  # well formed, past the end: a cursor made of the last one, bigger
        bad = cursors[-1] + "9"
    elif bad == "padded":  # a cursor written otherwise is not the cursor
        bad = "0" + cursors[0]
    elif bad == "before":  # well formed, before the run's first event (nothing was dropped)
        first = cursors[0]
        bad = f"{int(first.split('-')[0]) - 1}-0.0" if "-" in first else "0"
    for follow in (False, True):
        with pytest.raises(StoreError) as raised:
            await collect(log, "run-1", bad, follow=follow)
        assert not isinstance(raised.value, UnknownRun)


async def test_a_thread_lists_its_runs_in_the_order_they_started(log: EventLog) -> None:
    names = [f"run-{n}" for n in (5, 3, 9, 1, 7)]  # the start order, not the names, decides
    for name in names:
        await log.start_run(record(name), b"{}", exclusive=True)
        await log.start_run(record(name + "-other", thread_id="thread-2"), b"{}", exclusive=False)
        await log.append(name, [terminal(name)], final=True)
    runs = await log.thread_runs("thread-1")
    assert [r.run_id for r in runs] == names
    assert all(r.status == "finished" and r.thread_id == "thread-1" for r in runs)
    others = await log.thread_runs("thread-2")
    assert [r.run_id for r in others] == [n + "-other" for n in names]
    assert all(r.status == "running" for r in others)


# ── leases, stop, lost runs ─────────────────────────────────────────────────────────────────────


async def test_only_the_owner_renews_a_running_run(log: EventLog) -> None:
    await log.start_run(record("run-1", owner="worker-1", lease=5), b"{}", exclusive=True)
    later = time.time() + 500
    assert await log.renew("run-1", "worker-1", later) is True
    renewed = await log.get_run("run-1")
    assert renewed is not None and renewed.lease_until == pytest.approx(later, abs=0.01)
    assert await log.renew("run-1", "worker-2", later + 100) is False
    unchanged = await log.get_run("run-1")
    assert unchanged is not None and unchanged.lease_until == pytest.approx(later, abs=0.01)
    await log.append("run-1", [terminal("run-1")], final=True)
    assert await log.renew("run-1", "worker-1", later + 100) is False


async def test_a_stop_request_is_a_flag_on_the_run(log: EventLog) -> None:
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    before = await log.request_stop("run-1")
    assert before.status == "running" and before.stop_requested is False
    flagged = await log.get_run("run-1")
    assert flagged is not None and flagged.stop_requested is True
    again = await log.request_stop("run-1")
    assert again.stop_requested is True
    await log.append("run-1", [terminal("run-1")], final=True)
    assert (await log.request_stop("run-1")).status == "finished"


async def test_expired_lists_the_running_runs_past_their_lease(log: EventLog) -> None:
    now = time.time()
    await log.start_run(record("gone", lease=-10), b"{}", exclusive=False)
    await log.start_run(record("alive", lease=LEASE), b"{}", exclusive=False)
    await log.start_run(record("done", lease=-10), b"{}", exclusive=False)
    await log.append("done", [terminal("done")], final=True)
    assert [r.run_id for r in await log.expired(now)] == ["gone"]
    assert sorted(r.run_id for r in await log.expired(now + 2 * LEASE)) == ["alive", "gone"]
    assert await log.renew("gone", "worker-1", now + LEASE) is True
    assert await log.expired(now) == []


async def test_a_lost_run_is_closed_exactly_once(backend: Backend) -> None:
    logs = [backend.open(), backend.open()] if backend.shared else [backend.open()]
    log = logs[0]
    await log.start_run(record("run-1", lease=0.2), b"{}", exclusive=True)
    await log.append("run-1", [event("run-1", 0)])
    follower = asyncio.create_task(collect(logs[-1], "run-1", follow=True))
    assert await log.close_lost("run-1", lost("run-1"), time.time()) is False  # lease not over
    later = time.time() + 1
    closed = await asyncio.gather(
        *(logs[n % len(logs)].close_lost("run-1", lost("run-1"), later) for n in range(30))
    )
    assert closed.count(True) == 1
    assert data(await collect(log, "run-1")) == [event("run-1", 0), lost("run-1")]
    assert data(await asyncio.wait_for(follower, 5)) == [event("run-1", 0), lost("run-1")]
    finished = await log.get_run("run-1")
    assert finished is not None and finished.status == "finished"
    assert await log.expired(later) == []
    with pytest.raises(StoreError):  # the owner comes back too late
        await log.append("run-1", [terminal("run-1")], final=True)
    await log.start_run(record("run-2"), b"{}", exclusive=True)  # the thread is free again


# ── retention ───────────────────────────────────────────────────────────────────────────────────


async def test_a_run_keeps_its_latest_events_and_always_its_terminal_event(
    backend: Backend,
) -> None:
    log = backend.open(Retention(max_events_per_run=10))
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    events = [event("run-1", n) for n in range(40)] + [terminal("run-1")]
    cursors: list[str] = []
    for start in range(0, 40, 4):
        cursors += await log.append("run-1", events[start : start + 4])
    cursors += await log.append("run-1", events[-1:], final=True)
    kept = await collect(log, "run-1")
    assert 10 <= len(kept) < 16, f"{len(kept)} events kept, the limit is 10"  # Redis: entries
    assert data(kept) == events[-len(kept) :]
    assert [s.cursor for s in kept] == cursors[-len(kept) :]
    assert data(await collect(log, "run-1", cursors[0])) == data(kept)  # a dropped cursor: the rest
    assert data(await collect(log, "run-1", cursors[-2])) == [terminal("run-1")]

    await log.start_run(record("run-2", thread_id="thread-2"), b"{}", exclusive=True)
    many = [event("run-2", n) for n in range(30)]
    await log.append("run-2", many)
    await log.append("run-2", [terminal("run-2")], final=True)
    assert data(await collect(log, "run-2"))[-1] == terminal("run-2")  # one big batch


async def test_finished_runs_are_dropped_after_their_ttl(backend: Backend) -> None:
    log = backend.open(Retention(run_ttl_seconds=0.3))
    await run_with(log, "old", 5)
    await log.start_run(record("running", thread_id="thread-2"), b"{}", exclusive=True)
    await log.append("running", [event("running", 0)])
    assert await log.prune(time.time()) == 0
    assert await log.get_run("old") is not None
    await asyncio.sleep(0.6)
    await log.prune(time.time())
    assert await log.get_run("old") is None
    assert await log.get_input("old") is None
    assert await log.thread_runs("thread-1") == []
    with pytest.raises(UnknownRun):
        await collect(log, "old")
    alive = await log.get_run("running")
    assert alive is not None and alive.status == "running"
    assert len(await collect(log, "running")) == 1


async def test_a_thread_keeps_its_latest_runs(backend: Backend) -> None:
    log = backend.open(Retention(max_runs_per_thread=3))
    for n in range(6):
        await run_with(log, f"run-{n}", 2)
    assert [r.run_id for r in await log.thread_runs("thread-1")] == ["run-3", "run-4", "run-5"]
    assert await log.get_run("run-0") is None
    await log.start_run(record("live-1"), b"{}", exclusive=True)
    await log.start_run(record("live-2"), b"{}", exclusive=False)
    await log.start_run(record("live-3"), b"{}", exclusive=False)
    await log.start_run(record("live-4"), b"{}", exclusive=False)
    runs = [r.run_id for r in await log.thread_runs("thread-1")]
    assert runs == ["live-1", "live-2", "live-3", "live-4"], "running runs are never dropped"


# ── many runs at once ───────────────────────────────────────────────────────────────────────────


async def test_200_concurrent_runs_with_followers_cross_nothing(log: EventLog) -> None:
    count, per_run = 200, 40

    async def one(n: int) -> None:
        run_id, thread_id = f"run-{n}", f"thread-{n}"
        await log.start_run(record(run_id, thread_id), b'{"n":%d}' % n, exclusive=True)
        follower = asyncio.create_task(collect(log, run_id, follow=True))
        events = [event(run_id, i) for i in range(per_run)] + [terminal(run_id)]
        for start in range(0, per_run, 8):
            await log.append(run_id, events[start : start + 8])
            await asyncio.sleep(0)
        await log.append(run_id, events[-1:], final=True)
        assert data(await follower) == events
        assert data(await collect(log, run_id)) == events
        assert await log.get_input(run_id) == b'{"n":%d}' % n
        assert [r.run_id for r in await log.thread_runs(thread_id)] == [run_id]

    await asyncio.gather(*(one(n) for n in range(count)))


# ── a second instance on the same store: a restart, another worker, another process ────────────


def shared_only(backend: Backend) -> None:
    if not backend.shared:
        pytest.skip("memory:// is one process's memory: no second instance shares it")


async def test_a_restart_sees_every_run(backend: Backend) -> None:
    shared_only(backend)
    first = backend.open()
    events, cursors = await run_with(first, "run-1", 20)
    await first.start_run(record("run-2"), b'{"input":2}', exclusive=True)
    await first.append("run-2", [event("run-2", 0)])
    await first.request_stop("run-2")
    await first.aclose()

    second = backend.open()
    assert data(await collect(second, "run-1")) == events
    assert data(await collect(second, "run-1", cursors[9])) == events[10:]
    assert [r.run_id for r in await second.thread_runs("thread-1")] == ["run-1", "run-2"]
    assert await second.get_input("run-2") == b'{"input":2}'
    running = await second.get_run("run-2")
    assert running is not None and running.stop_requested and running.status == "running"
    with pytest.raises(ThreadBusy):
        await second.start_run(record("run-3"), b"{}", exclusive=True)
    await second.append("run-2", [terminal("run-2")], final=True)
    assert len(await collect(second, "run-2")) == 2


async def test_two_instances_see_each_others_runs_stops_and_appends(backend: Backend) -> None:
    shared_only(backend)
    a, b = backend.open(), backend.open()
    await a.start_run(record("run-1", owner="worker-a"), b"{}", exclusive=True)
    with pytest.raises(ThreadBusy):
        await b.start_run(record("run-2", owner="worker-b"), b"{}", exclusive=True)
    with pytest.raises(RunExists):
        await b.start_run(record("run-1", thread_id="t2", owner="worker-b"), b"{}", exclusive=True)

    follower = asyncio.create_task(collect(b, "run-1", follow=True))
    events = [event("run-1", n) for n in range(50)] + [terminal("run-1")]
    for start in range(0, 50, 10):
        await a.append("run-1", events[start : start + 10])
        await asyncio.sleep(0.01)

    await b.request_stop("run-1")
    deadline = time.monotonic() + 1
    while not (seen := await a.get_run("run-1")) or not seen.stop_requested:
        assert time.monotonic() < deadline, "the stop request did not reach the other instance"
        await asyncio.sleep(0.01)
    assert await b.renew("run-1", "worker-b", time.time() + LEASE) is False
    assert await a.renew("run-1", "worker-a", time.time() + LEASE) is True

    await a.append("run-1", events[-1:], final=True)
    assert data(await asyncio.wait_for(follower, 5)) == events
    finished = await b.get_run("run-1")
    assert finished is not None and finished.status == "finished"
    await b.start_run(record("run-2", owner="worker-b"), b"{}", exclusive=True)
    assert [r.run_id for r in await a.thread_runs("thread-1")] == ["run-1", "run-2"]


async def test_a_follower_sees_appends_through_both_instances_in_order(backend: Backend) -> None:
    shared_only(backend)
    a, b = backend.open(), backend.open()
    await a.start_run(record("run-1"), b"{}", exclusive=True)
    followers = [asyncio.create_task(collect(log, "run-1", follow=True)) for log in (a, b)]
    events = [event("run-1", n) for n in range(60)] + [terminal("run-1")]
    for start in range(0, 60, 5):
        await (a if start % 10 else b).append("run-1", events[start : start + 5])
        await asyncio.sleep(0.005 * (start % 3))
    await a.append("run-1", events[-1:], final=True)
    for got in await asyncio.wait_for(asyncio.gather(*followers), 10):
        assert data(got) == events


WRITER = """
import asyncio, sys, time
from agui.store import open_log, RunRecord

async def main(url):
    log = open_log(url)
    now = time.time()
    await log.start_run(RunRecord(thread_id="thread-p", run_id="run-p", status="running",
        owner="process", started_at=now, lease_until=now + 60), b"{}", exclusive=True)
    print("started", flush=True)
    sys.stdin.readline()
    for n in range(10):
        await log.append("run-p", [b'{"n":%d}' % n])
        await asyncio.sleep(0.02)
    await log.append("run-p", [b'{"end":true}'], final=True)
    await log.aclose()

asyncio.run(main(sys.argv[1]))
"""


async def test_a_follower_sees_the_appends_of_another_process(backend: Backend) -> None:
    shared_only(backend)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "generated")])
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        textwrap.dedent(WRITER),
        backend.url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        assert await asyncio.wait_for(process.stdout.readline(), 30) == b"started\n"
        log = backend.open()
        follower = asyncio.create_task(collect(log, "run-p", follow=True))
        await asyncio.sleep(0.05)
        process.stdin.write(b"go\n")
        await process.stdin.drain()
        got = await asyncio.wait_for(follower, 10)
        assert data(got) == [b'{"n":%d}' % n for n in range(10)] + [b'{"end":true}']
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


# ── open_log ────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "url",
    [
        "postgres://localhost/db",
        "nothing",
        "memory://somewhere",
        "sqlite://relative.db",
        "sqlite:///",
        "sqlite:///:memory:",
        "sqlite:///no/such/folder/runs.db",
        "redis://",
        "redis://localhost:6379/zero",
        "redis://localhost:port/0",
        "redis://localhost:6379/0?db=1",
    ],
)
def test_open_log_refuses_what_it_cannot_use(url: str) -> None:
    with pytest.raises(StoreError):
        open_log(url)


def test_redis_without_the_extra_says_how_to_install_it() -> None:
    code = """
    import sys
    sys.modules["redis"] = None  # as if redis-py were not installed
    from agui.store import open_log, StoreError
    try:
        open_log("redis://127.0.0.1:6379/0")
    except StoreError as error:
        print(error)
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "generated")])
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    assert "pip install 'agui-spec[redis]'" in done.stdout


def test_open_log_imports_only_the_backend_it_uses() -> None:
    code = """
    import sys
    from agui.store import open_log
    open_log("memory://")
    print(sorted(m for m in sys.modules if m.startswith(("agui.store.", "redis", "sqlite3"))))
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "generated")])
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    assert done.stdout.strip() == "['agui.store.base', 'agui.store.memory']"
