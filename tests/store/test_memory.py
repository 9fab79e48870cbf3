"""memory:// on its own: what the shared suite (test_log.py) cannot see from outside, namely how
the log keeps what it is given. It keeps a copy of each append, never the caller's objects: the
events the server appends are `agui.encode`'s output, and orjson's output holds its whole working
buffer (4 KiB and more per event, whatever the JSON's length), which a log keeping those objects
would pin for as long as it keeps the run.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import tracemalloc

import pytest

from agui import TextMessageContentEvent, encode
from agui.store import ExactEvents, NumberedCursors, Retention, RunRecord, StoredEvent, base, memory
from agui.store.memory import MemoryLog


def record(run_id: str, thread_id: str = "thread-1") -> RunRecord:
    now = time.time()
    return RunRecord(
        thread_id=thread_id,
        run_id=run_id,
        status="running",
        owner="worker-1",
        started_at=now,
        lease_until=now + 60,
    )


def content(number: int) -> bytes:
    return encode(TextMessageContentEvent(message_id="m1", delta=f" token {number}"))


async def test_the_log_keeps_copies_not_the_appended_objects() -> None:
    log = MemoryLog()
    run_input = encode(TextMessageContentEvent(message_id="m1", delta="an input"))
    inputs_before = sys.getrefcount(run_input)
    await log.start_run(record("run-1"), run_input, exclusive=True)
    events = [content(n) for n in range(5)]
    before = [sys.getrefcount(e) for e in events]
    await log.append("run-1", events[:1])  # one event: bytes(x) and b"".join([x]) return x
    await log.append("run-1", events[1:])
    assert [sys.getrefcount(e) for e in events] == before
    assert sys.getrefcount(run_input) == inputs_before
    assert await log.get_input("run-1") == run_input
    read = [stored async for stored in log.read("run-1")]
    assert [s.data for s in read] == events
    assert all(type(s.data) is bytes for s in read)


async def test_a_long_run_costs_about_its_json() -> None:
    """10,000 encoded events (about 0.5 MB of JSON) appended in batches, the caller dropping
    them: the log's memory stays near the JSON's size (kept as they were, orjson's outputs would
    pin about 40 MB)."""
    log = MemoryLog()
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        size = 0
        for batch in range(20):
            events = [content(batch * 500 + n) for n in range(500)]
            size += sum(map(len, events))
            await log.append("run-1", events)
            del events
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 2 * size, f"{grown:,} bytes held for {size:,} bytes of JSON"
    read = [stored async for stored in log.read("run-1")]
    assert len(read) == 10_000 and read[-1].data == content(9_999)


@pytest.mark.parametrize("plain", [True, False])
async def test_read_makes_ordinary_stored_events(
    plain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's events, iterated, are StoredEvents whose slots are set directly when the class
    allows it (the plain path); else the class is called. Both give the same, ordinary, frozen
    StoredEvents."""
    if not plain:
        monkeypatch.setattr(base, "_SLOTS", None)
    else:
        assert base._SLOTS is not None, "StoredEvent changed: the fast path is off"
    log = MemoryLog()
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    events = [content(n) for n in range(7)]
    await log.append("run-1", events[:3])
    await log.append("run-1", events[3:])
    read = [stored async for stored in log.read("run-1", "2")]
    assert read == [StoredEvent(cursor=str(n + 1), data=events[n]) for n in range(2, 7)]
    assert all(type(s) is StoredEvent for s in read)
    assert hash(read[0]) == hash(StoredEvent(cursor="3", data=events[2]))
    with pytest.raises(AttributeError):
        read[0].cursor = "9"  # type: ignore[misc]


async def test_a_follower_reads_across_chunks_while_retention_drops_them() -> None:
    """Appends of one event and of many, a follower reading as they come, retention dropping
    whole chunks behind it: every event once, in order, from the cursor on."""
    log = MemoryLog(Retention(max_events_per_run=5))
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    events = [content(n) for n in range(40)]
    seen: list[StoredEvent] = []

    async def follow() -> None:
        async for stored in log.read("run-1", follow=True):
            seen.append(stored)

    follower = asyncio.create_task(follow())
    sizes = [1, 3, 1, 7, 2, 1, 9, 4, 1, 11]
    at = 0
    for size in sizes:
        await log.append("run-1", events[at : at + size], final=at + size == len(events))
        at += size
        await asyncio.sleep(0)
    await asyncio.wait_for(follower, 5)
    cursors = [int(s.cursor) for s in seen]
    assert cursors == sorted(set(cursors)) and cursors[-1] == 40
    assert all(s.data == events[int(s.cursor) - 1] for s in seen)
    kept = [stored async for stored in log.read("run-1")]
    assert [s.cursor for s in kept] == ["36", "37", "38", "39", "40"]


def test_offsets_take_4_bytes_unless_a_chunk_reaches_4_gib() -> None:
    assert memory._offsets(1_000_000) == "I"
    assert memory._offsets((1 << 32) - 1) == "I"
    assert memory._offsets(1 << 32) == "Q"


async def test_older_events_are_sealed_into_compressed_blocks() -> None:
    """A long run's older events are joined into blocks of BLOCK_BYTES at least and compressed;
    the latest appends stay as they came. Every event reads back the same, after any cursor,
    and the run costs far less than its JSON."""
    log = MemoryLog()
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        size = 0
        for batch in range(200):
            events = [content(batch * 100 + n) for n in range(100)]
            size += sum(map(len, events))
            await log.append("run-1", events)
            del events
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    run = log._runs["run-1"]
    assert run.sealed > 0 and all(type(data) is memory._Packed for data, _ in run.blocks[:1])
    assert all(type(data) is not memory._Packed for data, _ in run.blocks[run.sealed :])
    assert run.loose < 2 * memory.BLOCK_BYTES
    assert grown < size / 3, f"{grown:,} bytes held for {size:,} bytes of JSON"
    for after in (None, "1", "999", "1000", "10001", "19999"):
        first = 0 if after is None else int(after)
        read = [stored async for stored in log.read("run-1", after)]
        assert [s.data for s in read] == [content(n) for n in range(first, 20_000)]
        assert [s.cursor for s in read] == [str(n + 1) for n in range(first, 20_000)]


async def test_without_compression_every_append_stays_as_it_came() -> None:
    log = MemoryLog(compress=False)
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    for batch in range(50):
        await log.append("run-1", [content(batch * 100 + n) for n in range(100)])
    run = log._runs["run-1"]
    assert run.sealed == 0 and len(run.blocks) == 50
    assert [s.data async for s in log.read("run-1", "4321")] == [
        content(n) for n in range(4321, 5000)
    ]


async def test_retention_drops_sealed_blocks_and_followers_read_across_them() -> None:
    """Sealing while a follower reads and retention drops whole blocks behind it: every event
    once, in order; what is kept reads back whole."""
    log = MemoryLog(Retention(max_events_per_run=3000))
    await log.start_run(record("run-1"), b"{}", exclusive=True)
    seen: list[StoredEvent] = []

    async def follow() -> None:
        async for batch in log.read_batches("run-1", follow=True, limit=333):
            seen.extend(batch)
            await asyncio.sleep(0)

    follower = asyncio.create_task(follow())
    total = 0
    for size in [1, 700, 3, 1500, 90, 2000, 7, 4000, 1, 2500]:
        await log.append("run-1", [content(total + n) for n in range(size)])
        total += size
        await asyncio.sleep(0)
    await log.append("run-1", [content(total)], final=True)
    total += 1
    await asyncio.wait_for(follower, 5)
    cursors = [int(s.cursor) for s in seen]
    assert cursors == sorted(set(cursors)) and cursors[-1] == total
    assert all(s.data == content(int(s.cursor) - 1) for s in seen)
    run = log._runs["run-1"]
    assert run.sealed > 0 and run.loose >= 0
    kept = [stored async for stored in log.read("run-1")]
    assert 3000 <= len(kept) and [int(s.cursor) for s in kept] == list(
        range(total - len(kept) + 1, total + 1)
    )
    assert all(s.data == content(int(s.cursor) - 1) for s in kept)


async def test_the_log_reads_across_the_latest_append() -> None:
    """Reads that start in the older chunks (sealed or not) and run into the latest append's
    events, which the log keeps as they were handed over, give each event once, in order."""
    log = MemoryLog()
    await log.start_run(record("r"), b"{}", exclusive=True)
    data = [
        json.dumps({"type": "CUSTOM", "name": "n", "value": "x" * 80, "i": i}).encode()
        for i in range(3000)
    ]
    at = 0
    # About 100 bytes an event: after the 1200 events' append, the older chunks are sealed.
    for size in (1, 700, 2, 1200, 97):
        cursors = await log.append("r", ExactEvents(data[at : at + size]))
        assert cursors == [str(n) for n in range(at + 1, at + size + 1)]
        at += size
        for after in {0, 1, at - size, at - size + 1, at - 1} - {at}:
            for limit in (1, 3, 128, 5000):
                got: list[bytes] = []
                numbers: list[str] = []
                async for batch in log.read_batches(
                    "r", None if after == 0 else str(after), limit=limit
                ):
                    assert len(batch) <= limit
                    got += batch.data
                    numbers += batch.cursors
                assert got == data[after:at]
                assert numbers == [str(n) for n in range(after + 1, at + 1)]
    run = log._runs["r"]
    assert run.sealed and run.recent is not None
    await log.append("r", ExactEvents(data[at : at + 1]), final=True)
    assert run.recent is None  # a finished run keeps its copies alone
    assert [s.data async for s in log.read("r")] == data[: at + 1]


def test_numbered_cursors_are_the_list_of_their_numbers() -> None:
    cursors = NumberedCursors(range(998, 1003))
    listed = ["998", "999", "1000", "1001", "1002"]
    assert cursors == listed and list(cursors) == listed and len(cursors) == 5
    assert cursors[0] == "998" and cursors[-1] == "1002" and cursors[1:3] == ["999", "1000"]
    # `+` itself: callers add an append's cursors to a list
    assert cursors + ["x"] == [*listed, "x"]  # noqa: RUF005
    assert ["x"] + cursors == ["x", *listed]  # noqa: RUF005
    assert cursors != ["998"] and cursors == NumberedCursors(range(998, 1003))
