"""The event log's contract: what every backend (memory, SQLite, Redis) provides to the server.

A run's log holds its RunAgentInput and every event it produced, each as the event's JSON bytes
(what an SSE frame's `data:` carries) with a *cursor*: an opaque string, strictly ordered within
the run, that an SSE frame sends as its `id:` and a client sends back as `Last-Event-ID` to resume
after it. A thread's runs are kept in the order they started.

A run is owned by the worker executing it. The owner holds a lease (`lease_until`, renewed while
the run goes on); a run whose lease ran out before its terminal event was stored has lost its
worker, and whoever notices first closes it (`close_lost`) with the RUN_ERROR the server builds.
A stop request is a flag on the run that its owner watches, wherever it executes.

The run's first event, RUN_STARTED, carries the run's input, which the record holds too: every
backend stores that event without its copy (`elide_input`) and reads it back whole, so an input
costs its size once. `EventLog.usage(namespace)` says what a namespace (a principal's) holds, the
server's quotas per principal.

Backends implement `EventLog`; `agui.store.open_log(url)` picks one by URL. Everything here is
async; a backend never blocks the event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from types import MemberDescriptorType
from typing import Any, Literal, Protocol, TypeAlias, overload

import attrs

from agui.errors import RunExists, StoreError, StoreUnavailable, ThreadBusy, UnknownRun

__all__ = [
    "Cursor",
    "EventBatch",
    "EventLog",
    "ExactEvents",
    "NumberedCursors",
    "Retention",
    "RunExists",
    "RunRecord",
    "RunStatus",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "ThreadBusy",
    "ThreadSummary",
    "UnknownRun",
    "Usage",
    "elide_input",
    "restore_input",
]

Cursor: TypeAlias = str
"""Where an event stands in its run's log: opaque, strictly increasing within the run, no NUL, CR
or LF (it travels in an SSE `id:` line)."""

RunStatus: TypeAlias = Literal["running", "finished"]
"""running until the run's terminal event (RUN_FINISHED or RUN_ERROR) is stored, then finished."""


ELIDED = b"\x00"
"""The first byte of a stored event whose copy of the run's input was cut out (`elide_input`):
never the first byte of JSON, so an event stored before elision existed reads as it is."""


def elide_input(input: bytes, event: bytes) -> bytes | None:
    """`event` (a run's first event, RUN_STARTED carrying the run's input) as the log stores it
    when it holds `input` byte for byte: `\\x00`, the offset of the input in decimal, `:`, then
    the event without it. The log keeps the input once, with the run's record; a read puts it
    back (`restore_input`). None when the event does not hold the input (nothing to cut)."""
    at = event.find(input) if input else -1
    if at < 0:
        return None
    return b"%s%d:%s%s" % (ELIDED, at, event[:at], event[at + len(input) :])


def restore_input(input: bytes, stored: bytes) -> bytes:
    """The event `elide_input` stored, whole again (any other event as it is)."""
    if stored[:1] != ELIDED:
        return stored
    colon = stored.index(b":", 1)
    at = int(stored[1:colon])
    body = memoryview(stored)[colon + 1 :]
    return b"".join((body[:at], input, body[at:]))


def parse_seq(cursor: Cursor) -> int:
    """The sequence number a decimal cursor (memory's and SQLite's) stands for; StoreError for
    anything else."""
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 18 or cursor[0] == "0":
        raise StoreError(f"not a cursor of this log: {cursor!r}")
    return int(cursor)


class ExactEvents(list[bytes]):
    """Events handed to `EventLog.append` by a caller that gives them up: each a bytes object
    of exactly its JSON's size (not an encoder's larger working buffer, as orjson returns), not
    used or changed after the call. memory:// keeps the latest such append's objects as they are
    for the readers following the run, instead of slicing them anew from its copy; for any
    other backend, and in every other respect, a list."""

    __slots__ = ()


class NumberedCursors(Sequence[Cursor]):
    """The cursors of events numbered consecutively (memory's: `numbers` in decimal), each made
    as a str only when asked: a reader framing a batch takes the numbers themselves
    (agui.wire.sse.sse_data_frames), and a str per event is a tenth of a fast stream's time.
    Compares equal to the list of the same cursors; `+` gives a list."""

    __slots__ = ("numbers",)

    def __init__(self, numbers: range) -> None:
        self.numbers = numbers

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> Cursor: ...
    @overload
    def __getitem__(self, index: slice) -> NumberedCursors: ...
    def __getitem__(self, index: int | slice) -> Cursor | NumberedCursors:
        if isinstance(index, slice):
            return NumberedCursors(self.numbers[index])
        return str(self.numbers[index])

    def __iter__(self) -> Iterator[Cursor]:
        return map(str, self.numbers)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NumberedCursors):
            return self.numbers == other.numbers
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[Cursor]) -> list[Cursor]:
        return [*self, *other]

    def __radd__(self, other: Sequence[Cursor]) -> list[Cursor]:
        return [*other, *self]

    def __repr__(self) -> str:
        return f"NumberedCursors({self.numbers!r})"


@attrs.frozen(kw_only=True)
class RunRecord:
    """What the log knows about a run, besides its events."""

    thread_id: str
    run_id: str
    status: RunStatus
    owner: str
    """The worker executing the run (any string unique among the workers sharing the log)."""
    started_at: float
    """When the run started, in seconds since the epoch."""
    lease_until: float
    """Until when the owner holds the run, in seconds since the epoch; renewed while it runs."""
    stop_requested: bool = False
    """A stop was asked for; the owner ends the run (RUN_FINISHED, outcome cancelled)."""
    last_cursor: Cursor | None = None
    """The cursor of the last event stored, None before the first."""
    finished_at: float | None = None
    """When the run finished (its terminal event was stored), in seconds since the epoch; None
    while it runs."""


@attrs.frozen(kw_only=True)
class ThreadSummary:
    """A thread as `EventLog.list_threads` gives it: its latest run and where it stands."""

    thread_id: str
    """The thread's id as the log keeps it (its namespace's prefix included)."""
    order: int
    """Where the thread's latest run stands in the log's start order: unique in the log, larger
    for a later start (the page cursor of `list_threads`)."""
    runs: int
    """How many runs of the thread the log keeps."""
    last_run: RunRecord
    """The thread's latest run (the last one started)."""
    last_event: bytes | None = None
    """That run's last stored event (its terminal event once it finished); None before one."""


@attrs.frozen(kw_only=True)
class Usage:
    """What one namespace (a principal's, agui.http.access) holds in the log: `EventLog.usage`."""

    bytes: int
    """The JSON its runs hold: each run's input (once) and every event kept."""
    threads: int
    """Its threads the log keeps."""


@attrs.frozen(kw_only=True)
class StoredEvent:
    """One event of a run's log."""

    cursor: Cursor
    data: bytes
    """The event's JSON, as an SSE frame's data carries it."""


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


@attrs.frozen(kw_only=True)
class EventBatch:
    """Events of one run read together (`EventLog.read_batches`), in order: `data[i]` is an
    event's JSON, `cursors[i]` its cursor. Two lists rather than a StoredEvent per event: a
    reader streaming a run builds its frames from them, and a hundred thousand objects fewer
    per 100,000 events is a tenth of the server's time. Iterating gives StoredEvents."""

    cursors: Sequence[Cursor]
    data: Sequence[bytes]

    def __len__(self) -> int:
        return len(self.cursors)

    def __iter__(self) -> Iterator[StoredEvent]:
        """The events as StoredEvents. attrs' frozen `__init__` is slow next to the rest of a
        read; with the plain slotted class its slots are set directly (the same objects)."""
        if _SLOTS is None:
            for cursor, data in zip(self.cursors, self.data, strict=True):
                yield StoredEvent(cursor=cursor, data=data)
            return
        new = object.__new__
        set_cursor, set_data = _SLOTS
        for cursor, data in zip(self.cursors, self.data, strict=True):
            stored = new(StoredEvent)
            set_cursor(stored, cursor)
            set_data(stored, data)
            yield stored


@attrs.frozen(kw_only=True)
class Retention:
    """What the log keeps. The defaults keep what a chat UI needs: recent threads whole."""

    max_events_per_run: int | None = 1_000_000
    """A run's log stops growing beyond this many events (the oldest are dropped first, the
    terminal event is always kept); None: no limit."""
    run_ttl_seconds: float | None = 7 * 24 * 3600.0
    """A finished run (its events and record) is dropped this long after it finished; None:
    kept until max_runs_per_thread pushes it out."""
    max_runs_per_thread: int | None = 100
    """A thread keeps its latest runs only; None: every run."""


class EventLog(Protocol):
    """The event log a server with a store writes runs to and reads them from."""

    async def start_run(
        self, record: RunRecord, input: bytes, *, exclusive: bool, namespace: str = ""
    ) -> None:
        """Record a new run (status running, no events yet) and its RunAgentInput JSON. Raises
        RunExists for a run id already in the log, and ThreadBusy when `exclusive` and the thread
        has a running run. Atomic: of two workers starting runs on one thread, one wins.
        `namespace`: whose thread it is (the prefix of its principal's ids,
        `agui.http.access.Principal.prefix`): the index `list_threads` reads."""
        ...

    async def append(
        self, run_id: str, events: Sequence[bytes], *, final: bool = False
    ) -> Sequence[Cursor]:
        """Append events (JSON bytes) to the run's log in one round trip; returns their cursors
        (a list, or NumberedCursors).
        `final`: the last of them is the terminal event, and the run becomes finished in the same
        step. Readers following the run see them at once. Raises UnknownRun, and StoreError when
        the run is already finished (another worker closed it with `close_lost`, say)."""
        ...

    async def read(
        self, run_id: str, after: Cursor | None = None, *, follow: bool = False
    ) -> AsyncIterator[StoredEvent]:
        """The run's events after `after` (None: from the first), in order. With `follow`, keep
        waiting for new ones until the terminal event has been yielded (a finished run ends at
        once after its last event). Raises UnknownRun (before yielding anything); a cursor this
        run never produced raises StoreError. The backends inherit it: `read_batches`, one event
        at a time."""
        async for batch in self.read_batches(run_id, after, follow=follow):
            for stored in batch:
                yield stored

    def read_batches(
        self,
        run_id: str,
        after: Cursor | None = None,
        *,
        follow: bool = False,
        limit: int | None = None,
    ) -> AsyncIterator[EventBatch]:
        """The events `read` gives, in batches: each batch holds every event available after
        the previous one when it is taken (at most `limit`; None: the backend's own bound, a few
        thousand at most), in order, and is never empty. A reader streaming a run takes one batch
        per wake-up instead of one event per step (and sends it in one write). Ends, and raises,
        as `read` does."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run's record, or None when the log does not hold it."""
        ...

    async def get_input(self, run_id: str) -> bytes | None:
        """The run's RunAgentInput JSON, or None when the log does not hold the run."""
        ...

    async def thread_runs(self, thread_id: str) -> list[RunRecord]:
        """The thread's runs, in the order they started (empty for an unknown thread)."""
        ...

    async def list_threads(
        self, namespace: str, *, limit: int, before: int | None = None
    ) -> list[ThreadSummary]:
        """The threads whose runs were started in `namespace`, newest first (by the start of
        their latest run: `ThreadSummary.order`), at most `limit`; with `before`, only those whose
        order is below it (the next page after a thread of that order). Read from an index kept
        as runs start and are dropped: no scan of other namespaces' threads."""
        ...

    async def delete_thread(self, namespace: str, thread_id: str) -> list[str]:
        """Remove the thread `thread_id` of `namespace` whole: every run's record, input and
        events, and the thread's entries in every index. Returns the ids of the runs removed
        (empty for a thread the log does not hold). A reader following a removed run ends, as
        when retention drops it; a run still executing finds itself unknown at its next write.
        The caller stops live runs first (their followers then get the run's end)."""
        ...

    async def usage(self, namespace: str) -> Usage:
        """What the threads of `namespace` hold (the quota a server applies per principal):
        kept as runs start, events are appended and runs are dropped (retention, expiry,
        `delete_thread`), so reading it costs a lookup, not a scan of the runs; the same in
        every worker sharing the log."""
        ...

    async def renew(self, run_id: str, owner: str, lease_until: float) -> bool:
        """Extend the owner's lease; False when the run is finished or owned by another worker
        (the owner then stops executing it)."""
        ...

    async def request_stop(self, run_id: str) -> RunRecord:
        """Ask the run's owner to stop it; returns the record as it was (status finished: nothing
        to stop). Raises UnknownRun."""
        ...

    async def expired(self, now: float) -> list[RunRecord]:
        """The running runs whose lease ended before `now` (their worker is gone)."""
        ...

    async def close_lost(self, run_id: str, event: bytes, now: float) -> bool:
        """Append `event` (a RUN_ERROR) as the terminal event of a running run whose lease ended
        before `now`; True if this call closed it. Atomic: among workers noticing the same loss,
        exactly one closes the run."""
        ...

    async def probe(self) -> None:
        """One round trip that shows the log works now; raises StoreError when it does not. The
        server calls it while its health says the log failed (`Durable.store_failure`), to learn
        when it is back. A backend that can fail to write and still read (a full disk) writes
        here; by default it is a read of the running runs' leases."""
        await self.expired(0.0)

    async def prune(self, now: float) -> int:
        """Apply the retention's TTL as of `now`: drop the finished runs that finished more than
        `run_ttl_seconds` before it; returns how many runs were dropped. Backends also prune on
        their own (memory and SQLite when a run starts, Redis by key expiry), so calling it is
        optional; a server may call it periodically."""
        ...

    async def aclose(self) -> None:
        """Release connections and files. A log may also have a `closed` property, True from
        then on (the three backends do): a server that meets a failure of a closed log knows its
        own shutdown caused it, and says nothing (`getattr(log, "closed", False)`)."""
        ...
