"""The streaming response of a run, with a store or without: its headers and the largest frame
a client takes, the outbox the producer fills, the sender that writes it (coalescing what is
queued into writes) and counts what went out, the keep-alive, and the end of a response whose
request the server cancelled."""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Callable
from itertools import accumulate
from typing import TYPE_CHECKING, Any, cast

from agui.errors import EncodeError
from agui.http.asgi import Send, send_body
from agui.wire.proto import DEFAULT_MAX_PROTO_FRAME_BYTES, PROTO_MEDIA_TYPE
from agui.wire.sse import DEFAULT_MAX_FRAME_BYTES, KEEPALIVE

if TYPE_CHECKING:
    from agui.http.tracing import RunSpan

STREAM_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
# Exactly the media type, no parameters: the TypeScript client compares the string exactly.
PROTO_HEADERS = [
    (b"content-type", PROTO_MEDIA_TYPE.encode()),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
VARY = (b"vary", b"accept")
_WRITE_BYTES = 64 * 1024  # coalesce queued frames into writes of at most about this size
# The largest frame a client takes by default: an SSE frame's lines (each with its line end), a
# protobuf frame's message (after its 4-byte length).
MAX_SSE_FRAME = DEFAULT_MAX_FRAME_BYTES + 1
MAX_PROTO_FRAME = DEFAULT_MAX_PROTO_FRAME_BYTES + 4


class Outbox:
    """The frames queued for the sender: the producer appends one at a time (waiting while `limit`
    are queued), the sender takes everything queued at once.

    A list and two events rather than an asyncio.Queue: a queue costs several method calls per
    frame on each side, about a sixth of the server's time on a fast stream of small events.
    """

    __slots__ = ("_closed", "_drained", "_filled", "_frames", "_limit")

    def __init__(self, limit: int) -> None:
        self._frames: list[bytes | None] = []
        self._limit = max(1, limit)
        self._closed = False
        self._filled = asyncio.Event()  # set when frames may be waiting
        self._drained = asyncio.Event()  # set when there may be room
        self._drained.set()

    def empty(self) -> bool:
        return not self._frames

    def put_nowait(self, frame: bytes | None) -> None:
        """Queue a frame regardless of the limit (the keep-alive, into an empty outbox)."""
        self._frames.append(frame)
        self._filled.set()

    def offer(self, frame: bytes) -> bool:
        """Queue a frame if there is room (True), else nothing (False: `await put(frame)`)."""
        if len(self._frames) >= self._limit:
            return False
        self._frames.append(frame)
        self._filled.set()
        return True

    def sink(
        self, frame_of: Callable[[Any], bytes], limit: int, span: RunSpan | None = None
    ) -> Callable[[Any], bool]:
        """The run lifecycle's fast path into this outbox (`run_lifecycle(sink=...)`): an event
        framed by `frame_of` and queued, True; False, leaving the event to the producer, when
        the outbox is full (or closed), when the event cannot be framed (EncodeError) or its
        frame is over `limit` bytes: the producer then frames it again, and waits for room or
        reports the error as for any event. `span`: the run's trace span, which counts it."""
        filled = self._filled

        def take(event: Any) -> bool:
            frames = self._frames
            queued = len(frames)
            if queued >= self._limit:
                return False
            try:
                frame = frame_of(event)
            except EncodeError:
                return False
            if len(frame) > limit:
                return False
            frames.append(frame)
            if not queued:  # the sender waits for an empty outbox to fill, nothing else
                filled.set()
            if span is not None:
                span.events += 1
            return True

        return take

    async def put(self, frame: bytes | None) -> None:
        while len(self._frames) >= self._limit:
            if self._closed:
                raise asyncio.CancelledError("the response is over")
            self._drained.clear()
            await self._drained.wait()
        self._frames.append(frame)
        self._filled.set()

    def close(self) -> None:
        """The response is over: nothing takes frames any more. A producer still going stops at
        its next frame (`put` raises CancelledError, `offer` refuses) instead of waiting for room
        forever: one whose cancellation was swallowed on the way (asyncio.wait_for on Python 3.11
        returns instead when what it waits for completes as the cancellation arrives) would
        otherwise be left pending, blocked in `put`, until it is garbage ("Task was destroyed
        but it is pending!")."""
        self._closed = True
        self._limit = 0  # no room: offer refuses, put raises
        self._frames.clear()
        self._drained.set()

    def take_now(self) -> list[bytes | None]:
        """Everything queued, in order, without waiting."""
        frames, self._frames = self._frames, []
        self._drained.set()
        return frames

    async def take(self) -> list[bytes | None]:
        """Everything queued, in order; waits until there is something."""
        while not self._frames:
            self._filled.clear()
            await self._filled.wait()
        frames, self._frames = self._frames, []
        self._drained.set()
        return frames


class Clock:
    """When the sender last wrote (for the keep-alive task) and first wrote, and what it wrote:
    events (frames, keep-alives left out) and bytes, counted per write, for the metrics and the
    run's log line."""

    __slots__ = ("bytes", "events", "first", "last")

    def __init__(self) -> None:
        self.last = asyncio.get_running_loop().time()
        self.first: float | None = None
        self.events = 0
        self.bytes = 0


async def send_frames(outbox: Outbox, send: Send, clock: Clock) -> None:
    """Write what is queued, joined into writes of about _WRITE_BYTES, until the None frame.

    The events and bytes are counted per write (on `clock`), not per frame: a keep-alive is
    queued only into an empty outbox, so it can only be the first frame taken. What is taken
    at once is measured in C (`accumulate` of the frames' sizes) and cut into writes where the
    running size passes each _WRITE_BYTES, so the frames cost no Python step each."""
    loop = asyncio.get_running_loop()
    done = False
    while not done:
        taken = await outbox.take()
        if None in taken:
            del taken[taken.index(None) :]
            done = True
            if not taken:
                break
        frames = cast("list[bytes]", taken)  # no None left
        uncounted = 1 if frames[0] is KEEPALIVE else 0
        ends = list(accumulate(map(len, frames)))
        start = 0
        base = 0  # the bytes before frames[start]
        count = len(frames)
        while start < count:
            # the first frame whose end reaches _WRITE_BYTES past `base` closes the write
            stop = min(bisect_left(ends, base + _WRITE_BYTES, start) + 1, count)
            await send_body(send, frames[start:stop] if start or stop < count else frames)
            clock.last = loop.time()
            _count(clock, stop - start - uncounted, ends[stop - 1] - base)
            uncounted = 0
            base = ends[stop - 1]
            start = stop
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _count(clock: Clock, events: int, size: int) -> None:
    """A write of `events` events (`size` bytes) went out."""
    if clock.first is None and events:
        clock.first = clock.last
    clock.events += events
    clock.bytes += size


async def keep_alive(outbox: Outbox, clock: Clock, interval: float) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(max(0.0, clock.last + interval - loop.time()))
        if loop.time() - clock.last >= interval and outbox.empty():
            outbox.put_nowait(KEEPALIVE)
            clock.last = loop.time()


def unsent(outbox: Outbox) -> list[bytes]:
    """The frames queued and not yet written, up to the end of the response, taken at once."""
    frames: list[bytes] = []
    for frame in outbox.take_now():
        if frame is None:
            break
        frames.append(frame)
    return frames


async def send_last(send: Send, frames: list[bytes]) -> None:
    """Write `frames` and the end of the response (of a request the server cancelled)."""
    if frames:
        await send_body(send, frames)
    await send({"type": "http.response.body", "body": b"", "more_body": False})
