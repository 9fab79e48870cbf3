"""`memory://`: the event log in this process's memory, for one worker (the embedded default).

Everything lives in this process, on the event loop: no lock, no thread, nothing survives the process.
A run's events are numbered 1, 2, 3, ..., and the cursor is that number in decimal. Each append
is kept as one chunk: its events copied into one bytes object, with the offsets where they end.
A reader following a run waits on the run's wake-up event, which every append sets: no polling.
Retention is applied as runs start (the TTL and the runs per thread) and as events are appended
(the events per run, a whole chunk at a time once all of its events are out); `prune(now)`
applies the TTL on demand.

Why copy: the events handed to `append` are usually orjson's output (`agui.encode`), and orjson
(3.13) returns its whole working buffer, at least 4 KiB from malloc, whatever the JSON's length.
Keeping those objects would pin 4 KiB per event (a 100,000-event run: over 400 MiB) and make every
new event fault in fresh pages; a copy takes what the JSON needs, and orjson's buffer is freed and
reused at once.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from itertools import accumulate
from types import MemberDescriptorType
from typing import Any

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
    """One run: its record, its input, its events in chunks (one per append), its wake-up event.

    Chunk k holds events starts[k], starts[k] + 1, ...: chunks[k] is (their JSON, concatenated;
    the offset where each one ends)."""

    __slots__ = ("chunks", "first", "input", "last", "record", "starts", "wake")

    def __init__(self, record: RunRecord, input: bytes) -> None:
        self.record = record
        self.input = input
        self.starts: list[int] = []
        self.chunks: list[tuple[bytes, array[int]]] = []
        self.first = 1
        """The sequence number of the oldest event kept (retention drops older ones)."""
        self.last = 0
        """The sequence number of the last event appended (0: none yet)."""
        self.wake = asyncio.Event()

    def add(self, events: Sequence[bytes]) -> int:
        """Keep `events` as one chunk (copied); returns the sequence number of the first."""
        start = self.last + 1
        if len(events) == 1:
            data = _copy(events[0])
            ends = array(_offsets(len(data)), (len(data),))
        else:
            data = b"".join(events)  # a new object: orjson's buffers are not kept
            ends = array(_offsets(len(data)), accumulate(map(len, events)))
        self.starts.append(start)
        self.chunks.append((data, ends))
        self.last = start + len(events) - 1
        return start

    def keep_from(self, seq: int) -> None:
        """Drop the events before `seq`: the chunks all of whose events are before it."""
        if seq <= self.first:
            return
        self.first = seq
        whole = bisect_right(self.starts, seq) - 1  # the chunk holding `seq` stays
        if whole > 0:
            del self.starts[:whole]
            del self.chunks[:whole]

    def notify(self) -> None:
        self.wake.set()
        self.wake = asyncio.Event()


def _plain_slots() -> tuple[Callable[[Any, Any], None], Callable[[Any, Any], None]] | None:
    """The setters of StoredEvent's two slots, when it is what it is today: a slotted attrs
    class of two plain fields (no validator, converter or default). Else None."""
    fields = attrs.fields(StoredEvent)
    if [f.name for f in fields] != ["cursor", "data"]:
        return None
    if any(f.validator is not None or f.converter is not None for f in fields):
        return None
    if any(f.default is not attrs.NOTHING for f in fields):
        return None
    slots = [StoredEvent.__dict__.get(name) for name in ("cursor", "data")]
    if not all(type(slot) is MemberDescriptorType for slot in slots):
        return None
    return slots[0].__set__, slots[1].__set__  # type: ignore[union-attr]


_SLOTS = _plain_slots()


def _events(data: bytes, ends: array[int], offset: int, seq: int) -> Iterator[StoredEvent]:
    """The events of a chunk from its `offset`-th on (`seq`: that one's sequence number).

    The read loop makes a StoredEvent per event, and attrs' frozen `__init__` was half of the
    loop's cost: with the plain slotted class, its slots are set directly (same object)."""
    begin = ends[offset - 1] if offset else 0
    if _SLOTS is None:
        for end in ends[offset:]:
            yield StoredEvent(cursor=str(seq), data=data[begin:end])
            begin = end
            seq += 1
        return
    new = object.__new__
    set_cursor, set_data = _SLOTS
    for end in ends[offset:]:
        stored = new(StoredEvent)
        set_cursor(stored, str(seq))
        set_data(stored, data[begin:end])
        yield stored
        begin = end
        seq += 1


def _offsets(size: int) -> str:
    """The array type code for the offsets in a chunk of `size` bytes: 4 bytes each (a
    1,000,000-event run: 4 MB of offsets), 8 for a chunk of 4 GiB or more."""
    return "I" if size < 1 << 32 and array("I").itemsize == 4 else "Q"


def _copy(data: bytes) -> bytes:
    """`data` as a new bytes object of its own length (bytes(data) would return `data` itself)."""
    return bytes(memoryview(data))


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
        self._runs[record.run_id] = _Run(stored, _copy(input))
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
        start = run.add(events)
        last = run.last
        cursors = list(map(str, range(start, last + 1)))
        if final:
            run.record = attrs.evolve(run.record, status="finished", last_cursor=cursors[-1])
            self._finished[run_id] = time.time()
        else:
            run.record = attrs.evolve(run.record, last_cursor=cursors[-1])
        limit = self.retention.max_events_per_run
        if limit is not None:
            run.keep_from(last - max(limit, 1) + 1)
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
            while position < run.last:
                # The chunk holding the next event kept, then the rest of that chunk.
                seq = max(position + 1, run.first)
                index = bisect_right(run.starts, seq) - 1
                base = run.starts[index]
                data, ends = run.chunks[index]
                for stored in _events(data, ends, seq - base, seq):
                    yield stored
                position = base + len(ends) - 1
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
