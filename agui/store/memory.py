"""`memory://`: the event log in this process's memory, for one worker (the embedded default).

Everything lives in this process, on the event loop: no lock, no thread, nothing survives the process.
A run's events are numbered 1, 2, 3, ..., and the cursor is that number in decimal. Each append
is kept as one chunk: its events copied into one bytes object, with the offsets where they end.
A reader following a run waits on the run's wake-up event, which every append sets: no polling.
Retention is applied as runs start (the TTL and the runs per thread) and as events are appended
(the events per run, a whole block at a time once all of its events are out); `prune(now)`
applies the TTL on demand.

Sealed blocks: once a run holds `2 * BLOCK_BYTES` of JSON in chunks not yet sealed, its oldest
chunks (`BLOCK_BYTES` at least) are joined into one block and compressed with zlib at level 1
(events' JSON compresses well: the type, the message id and the keys repeat in every event;
token deltas of English prose about 17-fold). The latest chunks stay as they are, so a reader
following the run live reads them without decompressing; a reader asking for older events (a
resume, a replay) decompresses the block holding them, and the run keeps its last decompressed
block for the next batch.
`MemoryLog(compress=False)` keeps every chunk as it is.

The run's first event, RUN_STARTED carrying the run's input, is kept without that copy (the run
holds the input) and made whole when read. Each namespace's usage (the JSON its runs hold, before
compression) is kept as runs start, events are appended and runs are dropped.

Why copy: the events handed to `append` are usually orjson's output (`agui.encode`), and orjson
(3.13) returns its whole working buffer, at least 4 KiB from malloc, whatever the JSON's length.
Keeping those objects would pin 4 KiB per event (a 100,000-event run: over 400 MiB) and make every
new event fault in fresh pages; a copy takes what the JSON needs, and orjson's buffer is freed and
reused at once. Events handed over as ExactEvents (exact sizes, given up: the durable runs'
writer) are kept as they are too, for the latest append only: a reader following the run live
takes them instead of slicing each one anew from the chunk. Cursors come as NumberedCursors, made
into str only when asked.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import zlib
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from itertools import accumulate

import attrs

from .base import (
    ELIDED,
    Cursor,
    EventBatch,
    EventLog,
    ExactEvents,
    NumberedCursors,
    Retention,
    RunExists,
    RunRecord,
    StoreError,
    ThreadBusy,
    ThreadSummary,
    UnknownRun,
    Usage,
    elide_input,
    parse_seq,
    restore_input,
)

__all__ = ["BATCH", "BLOCK_BYTES", "MemoryLog"]

BLOCK_BYTES = 64 * 1024
"""A sealed block holds at least this many bytes of JSON (the chunks of whole appends)."""

BATCH = 4096
"""The most events `read_batches` gives in one batch when the caller sets no limit."""


class _Packed(bytes):
    """A sealed block's JSON, compressed with zlib (level 1, raw deflate: no header and no
    checksum, a fifth of the compression's time, for data that never leaves the process)."""

    __slots__ = ()


class _Run:
    """One run: its record, its input, its events in blocks, its wake-up event.

    Block k holds events starts[k], starts[k] + 1, ...: blocks[k] is (their JSON, concatenated;
    the offset where each one ends). The first `sealed` blocks are sealed: joined from several
    appends and compressed (_Packed). The others are the chunks of the latest appends, one per
    append, as they came (`loose` bytes of JSON)."""

    __slots__ = (
        "blocks",
        "cached",
        "cached_at",
        "compress",
        "first",
        "input",
        "last",
        "loose",
        "order",
        "recent",
        "recent_at",
        "record",
        "sealed",
        "size",
        "space",
        "starts",
        "wake",
    )

    def __init__(
        self, record: RunRecord, input: bytes, compress: bool, order: int = 0, space: str = ""
    ) -> None:
        self.record = record
        self.space = space
        """The namespace of the run's thread (whose usage it counts in)."""
        self.size = len(input)
        """The JSON it holds: its input and the events kept (`MemoryLog.usage`)."""
        self.order = order
        """Where the run's start stands among the log's (list_threads' order)."""
        self.input = input
        self.compress = compress
        """Seal and compress older blocks."""
        self.starts: list[int] = []
        self.blocks: list[tuple[bytes, array[int]]] = []
        self.sealed = 0
        self.loose = 0
        self.cached_at = 0  # the first sequence number of the block decompressed last (0: none)
        self.cached = b""
        self.first = 1
        """The sequence number of the oldest event kept (retention drops older ones)."""
        self.last = 0
        """The sequence number of the last event appended (0: none yet)."""
        self.recent: Sequence[bytes] | None = None
        """The events of the latest append when they were handed over (ExactEvents), from
        `recent_at` on: a reader following the run live takes them as they are instead of
        slicing them from the chunk (a bytes object per event). Only the latest append's, the
        final one's excepted (a finished run is read from its chunks)."""
        self.recent_at = 0
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
        self.blocks.append((data, ends))
        self.size += len(data)
        self.last = start + len(events) - 1
        self.recent = events if type(events) is ExactEvents else None
        self.recent_at = start
        if self.compress:
            self.loose += len(data)
            if self.loose >= 2 * BLOCK_BYTES:
                self._seal()
        return start

    def _seal(self) -> None:
        """Join the oldest loose chunks (BLOCK_BYTES at least) into one compressed block."""
        first = self.sealed
        size = 0
        end = first
        while size < BLOCK_BYTES:
            size += len(self.blocks[end][0])
            end += 1
        chunks = self.blocks[first:end]
        if len(chunks) == 1:
            data, ends = chunks[0]
        else:
            data = b"".join([chunk for chunk, _ in chunks])
            ends = array(_offsets(len(data)))
            base = 0
            for chunk, offsets in chunks:
                ends.extend([offset + base for offset in offsets] if base else offsets)
                base += len(chunk)
        self.blocks[first:end] = [(_Packed(zlib.compress(data, 1, wbits=-15)), ends)]
        del self.starts[first + 1 : end]
        self.sealed += 1
        self.loose -= size

    def block(self, index: int) -> bytes:
        """The JSON of block `index`, decompressed when it is compressed."""
        data = self.blocks[index][0]
        if type(data) is not _Packed:
            return data
        start = self.starts[index]
        if self.cached_at != start:
            self.cached = zlib.decompress(data, wbits=-15)
            self.cached_at = start
        return self.cached

    def take(self, seq: int, limit: int) -> EventBatch:
        """The events from `seq` on (at most `limit`); `seq` is one kept, at most `last`."""
        first = seq
        stop_at = min(self.last + 1, seq + limit)
        events: list[bytes] = []
        starts = self.starts
        recent = self.recent
        while seq < stop_at:
            if recent is not None and seq >= self.recent_at:
                events += recent[seq - self.recent_at : stop_at - self.recent_at]
                break
            index = bisect_right(starts, seq) - 1
            offset = seq - starts[index]
            ends = self.blocks[index][1]
            count = min(len(ends) - offset, stop_at - seq)
            data = self.block(index)
            stop = offset + count
            begins = ends[offset - 1 : stop - 1] if offset else [0, *ends[: stop - 1]]
            events += [
                data[begin:end] for begin, end in zip(begins, ends[offset:stop], strict=True)
            ]
            seq += count
        if first == 1 and events[0][:1] == ELIDED:
            events[0] = restore_input(self.input, events[0])
        return EventBatch(cursors=NumberedCursors(range(first, stop_at)), data=events)

    def keep_from(self, seq: int) -> None:
        """Drop the events before `seq`: the blocks all of whose events are before it."""
        if seq <= self.first:
            return
        self.first = seq
        whole = bisect_right(self.starts, seq) - 1  # the block holding `seq` stays
        if whole > 0:
            sealed = min(whole, self.sealed)
            for data, _ in self.blocks[sealed:whole]:
                self.loose -= len(data)
            self.size -= sum(ends[-1] for _, ends in self.blocks[:whole] if ends)
            del self.starts[:whole]
            del self.blocks[:whole]
            self.sealed -= sealed

    def notify(self) -> None:
        self.wake.set()
        self.wake = asyncio.Event()


def _offsets(size: int) -> str:
    """The array type code for the offsets in a block of `size` bytes: 4 bytes each (a
    1,000,000-event run: 4 MB of offsets), 8 for a block of 4 GiB or more."""
    return "I" if size < 1 << 32 and array("I").itemsize == 4 else "Q"


def _copy(data: bytes) -> bytes:
    """`data` as a new bytes object of its own length (bytes(data) would return `data` itself)."""
    return bytes(memoryview(data))


class MemoryLog(EventLog):
    """The event log in memory (`memory://`): one process, asyncio only."""

    def __init__(self, retention: Retention | None = None, *, compress: bool = True) -> None:
        self.retention = retention if retention is not None else Retention()
        self.compress = compress
        """Seal older events into compressed blocks (see the module's doc)."""
        self._runs: dict[str, _Run] = {}
        self._threads: dict[str, list[str]] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()
        """Finished runs by the time they finished, oldest first (for the TTL)."""
        self._order = itertools.count(1)
        self._spaces: dict[str, dict[str, int]] = {}
        """Each namespace's threads, with the order of their latest run (list_threads)."""
        self._space_of: dict[str, str] = {}
        """Each thread's namespace."""
        self._used: dict[str, int] = {}
        """The bytes each namespace's runs hold (`usage`)."""
        self._closed = False

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRun(f"no run {run_id!r} in the log")
        return run

    async def start_run(
        self, record: RunRecord, input: bytes, *, exclusive: bool, namespace: str = ""
    ) -> None:
        await self.prune(time.time())
        if record.run_id in self._runs:
            raise RunExists(f"run {record.run_id!r} was already started")
        runs = self._threads.setdefault(record.thread_id, [])
        if exclusive:
            busy = [r for r in runs if self._runs[r].record.status == "running"]
            if busy:
                raise ThreadBusy(f"thread {record.thread_id!r} has a running run ({busy[-1]!r})")
        stored = attrs.evolve(record, status="running", last_cursor=None, finished_at=None)
        order = next(self._order)
        space = self._space_of.setdefault(record.thread_id, namespace)
        run = _Run(stored, _copy(input), self.compress, order, space)
        self._runs[record.run_id] = run
        self._used[space] = self._used.get(space, 0) + run.size
        runs.append(record.run_id)
        threads = self._spaces.setdefault(space, {})
        threads.pop(record.thread_id, None)  # to the end: the dict stays in the threads' order
        threads[record.thread_id] = order
        limit = self.retention.max_runs_per_thread
        if limit is not None and len(runs) > limit:
            for run_id in runs[: len(runs) - limit]:
                if self._runs[run_id].record.status == "finished":
                    self._drop(run_id)

    async def append(
        self, run_id: str, events: Sequence[bytes], *, final: bool = False
    ) -> Sequence[Cursor]:
        run = self._run(run_id)
        if run.record.status == "finished":
            raise StoreError(f"run {run_id!r} is finished: nothing can be appended")
        if not events:
            if final:
                raise StoreError("a final append needs the terminal event")
            return []
        size = run.size
        if run.last == 0:
            # RUN_STARTED carries the input the run's record holds: keep the one copy (a list,
            # not ExactEvents: the event handed over, input and all, is not kept either)
            elided = elide_input(run.input, events[0])
            if elided is not None:
                events = [elided, *events[1:]]
        start = run.add(events)
        last = run.last
        if final:
            run.recent = None  # a finished run keeps its chunks alone
            now = time.time()
            run.record = attrs.evolve(
                run.record, status="finished", last_cursor=str(last), finished_at=now
            )
            self._finished[run_id] = now
        else:
            run.record = attrs.evolve(run.record, last_cursor=str(last))
        limit = self.retention.max_events_per_run
        if limit is not None:
            run.keep_from(last - max(limit, 1) + 1)
        self._used[run.space] += run.size - size
        run.notify()
        return NumberedCursors(range(start, last + 1))

    async def read_batches(
        self,
        run_id: str,
        after: Cursor | None = None,
        *,
        follow: bool = False,
        limit: int | None = None,
    ) -> AsyncIterator[EventBatch]:
        run = self._run(run_id)
        position = 0 if after is None else parse_seq(after)
        if position > run.last or (after is not None and position < 1):
            raise StoreError(f"run {run_id!r} has no event at cursor {after!r}")
        size = BATCH if limit is None else max(1, limit)
        while True:
            wake = run.wake
            while position < run.last:
                seq = max(position + 1, run.first)  # the next event kept
                batch = run.take(seq, size)
                position = seq + len(batch) - 1
                yield batch
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

    async def list_threads(
        self, namespace: str, *, limit: int, before: int | None = None
    ) -> list[ThreadSummary]:
        # Each namespace's dict is in the threads' order (see start_run): the newest are last.
        chosen: list[ThreadSummary] = []
        for thread_id, order in reversed(self._spaces.get(namespace, {}).items()):
            if len(chosen) >= limit:
                break
            if before is None or order < before:
                chosen.append(self._summary(thread_id, order))
        return chosen

    def _summary(self, thread_id: str, order: int) -> ThreadSummary:
        runs = self._threads[thread_id]
        last = self._runs[runs[-1]]
        event = last.take(last.last, 1).data[0] if last.last >= last.first else None
        return ThreadSummary(
            thread_id=thread_id,
            order=order,
            runs=len(runs),
            last_run=last.record,
            last_event=event,
        )

    async def delete_thread(self, namespace: str, thread_id: str) -> list[str]:
        run_ids = list(self._threads.get(thread_id, ()))
        for run_id in run_ids:
            self._drop(run_id)
        return run_ids

    async def usage(self, namespace: str) -> Usage:
        return Usage(
            bytes=self._used.get(namespace, 0), threads=len(self._spaces.get(namespace, ()))
        )

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
        thread_id = run.record.thread_id
        runs = self._threads[thread_id]
        runs.remove(run_id)
        space = self._space_of[thread_id]
        left = self._used[space] - run.size
        if left:
            self._used[space] = left
        else:
            del self._used[space]
        if not runs:
            del self._threads[thread_id]
            del self._space_of[thread_id]
            threads = self._spaces[space]
            del threads[thread_id]
            if not threads:
                del self._spaces[space]
        else:  # the thread's order is that of its latest run kept
            threads = self._spaces[space]
            order = self._runs[runs[-1]].order
            if threads[thread_id] != order:  # rare (a later run dropped first): sort again
                threads[thread_id] = order
                self._spaces[space] = dict(sorted(threads.items(), key=lambda item: item[1]))
        run.notify()

    @property
    def closed(self) -> bool:
        """Whether `aclose` was called: what fails after it is the shutdown's doing."""
        return self._closed

    async def aclose(self) -> None:
        self._closed = True
        for run in self._runs.values():
            run.notify()
