"""`memory://`: the event log in this process's memory, for one worker (the embedded default).

Everything lives in dicts on the event loop: no lock, no thread, nothing survives the process.
A run's events are kept by sequence number (1, 2, 3, ...), and the cursor is that number in
decimal. A reader following a run waits on the run's wake-up event, which every append sets: no
polling. Retention is applied as runs start (the TTL and the runs per thread) and as events are
appended (the events per run); `prune(now)` applies the TTL on demand.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence

import attrs

from .base import (
    Cursor,
    Retention,
    RunExists,
    RunRecord,
    StoredEvent,
    StoreError,
    ThreadBusy,
    UnknownRun,
)

__all__ = ["MemoryLog"]


def parse_seq(cursor: Cursor) -> int:
    """The sequence number a decimal cursor stands for; StoreError for anything else."""
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 18 or cursor[0] == "0":
        raise StoreError(f"not a cursor of this log: {cursor!r}")
    return int(cursor)


class _Run:
    """One run: its record, its input, its events by sequence number, and its wake-up event."""

    __slots__ = ("events", "first", "input", "record", "wake")

    def __init__(self, record: RunRecord, input: bytes) -> None:
        self.record = record
        self.input = input
        self.events: dict[int, bytes] = {}
        self.first = 1
        """The sequence number of the oldest event kept (retention drops older ones)."""
        self.wake = asyncio.Event()

    @property
    def last(self) -> int:
        return int(self.record.last_cursor) if self.record.last_cursor is not None else 0

    def notify(self) -> None:
        self.wake.set()
        self.wake = asyncio.Event()


class MemoryLog:
    """The event log in memory (`memory://`): one process, asyncio only."""

    def __init__(self, retention: Retention | None = None) -> None:
        self.retention = retention if retention is not None else Retention()
        self._runs: dict[str, _Run] = {}
        self._threads: dict[str, list[str]] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()
        """Finished runs by the time they finished, oldest first (for the TTL)."""
        self._closed = False

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRun(f"no run {run_id!r} in the log")
        return run

    async def start_run(self, record: RunRecord, input: bytes, *, exclusive: bool) -> None:
        await self.prune(time.time())
        if record.run_id in self._runs:
            raise RunExists(f"run {record.run_id!r} was already started")
        runs = self._threads.setdefault(record.thread_id, [])
        if exclusive:
            busy = [r for r in runs if self._runs[r].record.status == "running"]
            if busy:
                raise ThreadBusy(f"thread {record.thread_id!r} has a running run ({busy[-1]!r})")
        stored = attrs.evolve(record, status="running", last_cursor=None)
        self._runs[record.run_id] = _Run(stored, input)
        runs.append(record.run_id)
        limit = self.retention.max_runs_per_thread
        if limit is not None and len(runs) > limit:
            for run_id in runs[: len(runs) - limit]:
                if self._runs[run_id].record.status == "finished":
                    self._drop(run_id)

    async def append(
        self, run_id: str, events: Sequence[bytes], *, final: bool = False
    ) -> list[Cursor]:
        run = self._run(run_id)
        if run.record.status == "finished":
            raise StoreError(f"run {run_id!r} is finished: nothing can be appended")
        if not events:
            if final:
                raise StoreError("a final append needs the terminal event")
            return []
        start = run.last + 1
        stored = run.events
        for offset, data in enumerate(events):
            stored[start + offset] = bytes(data)
        last = start + len(events) - 1
        cursors = [str(seq) for seq in range(start, last + 1)]
        if final:
            run.record = attrs.evolve(run.record, status="finished", last_cursor=cursors[-1])
            self._finished[run_id] = time.time()
        else:
            run.record = attrs.evolve(run.record, last_cursor=cursors[-1])
        limit = self.retention.max_events_per_run
        if limit is not None:
            keep_from = last - max(limit, 1) + 1
            while run.first < keep_from:
                stored.pop(run.first, None)
                run.first += 1
        run.notify()
        return cursors

    async def read(
        self, run_id: str, after: Cursor | None = None, *, follow: bool = False
    ) -> AsyncIterator[StoredEvent]:
        run = self._run(run_id)
        position = 0 if after is None else parse_seq(after)
        if position > run.last or (after is not None and position < 1):
            raise StoreError(f"run {run_id!r} has no event at cursor {after!r}")
        while True:
            wake = run.wake
            last = run.last
            while position < last:
                position = max(position + 1, run.first)
                data = run.events.get(position)
                if data is not None:
                    yield StoredEvent(cursor=str(position), data=data)
                last = run.last
            if not follow or run.record.status == "finished":
                return
            if self._runs.get(run_id) is not run:
                return  # dropped by retention while followed
            await wake.wait()
            if self._closed:
                raise StoreError("the memory store is closed")

    async def get_run(self, run_id: str) -> RunRecord | None:
        run = self._runs.get(run_id)
        return None if run is None else run.record

    async def get_input(self, run_id: str) -> bytes | None:
        run = self._runs.get(run_id)
        return None if run is None else run.input

    async def thread_runs(self, thread_id: str) -> list[RunRecord]:
        return [self._runs[run_id].record for run_id in self._threads.get(thread_id, ())]

    async def renew(self, run_id: str, owner: str, lease_until: float) -> bool:
        run = self._runs.get(run_id)
        if run is None or run.record.status != "running" or run.record.owner != owner:
            return False
        run.record = attrs.evolve(run.record, lease_until=lease_until)
        return True

    async def request_stop(self, run_id: str) -> RunRecord:
        run = self._run(run_id)
        before = run.record
        if before.status == "running" and not before.stop_requested:
            run.record = attrs.evolve(before, stop_requested=True)
        return before

    async def expired(self, now: float) -> list[RunRecord]:
        return [
            run.record
            for run in self._runs.values()
            if run.record.status == "running" and run.record.lease_until < now
        ]

    async def close_lost(self, run_id: str, event: bytes, now: float) -> bool:
        run = self._runs.get(run_id)
        if run is None or run.record.status != "running" or run.record.lease_until >= now:
            return False
        await self.append(run_id, [event], final=True)
        return True

    async def prune(self, now: float) -> int:
        ttl = self.retention.run_ttl_seconds
        if ttl is None:
            return 0
        dropped = 0
        while self._finished:
            run_id, finished_at = next(iter(self._finished.items()))
            if finished_at + ttl >= now:
                break
            self._drop(run_id)
            dropped += 1
        return dropped

    def _drop(self, run_id: str) -> None:
        run = self._runs.pop(run_id)
        self._finished.pop(run_id, None)
        runs = self._threads[run.record.thread_id]
        runs.remove(run_id)
        if not runs:
            del self._threads[run.record.thread_id]
        run.notify()

    async def aclose(self) -> None:
        self._closed = True
        for run in self._runs.values():
            run.notify()
