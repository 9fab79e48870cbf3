"""A durable response leaves nothing behind: once its client is gone, the task that read the log
for it (`producing`, in `Durable._respond`) ends, and none is found pending later, when the server
stops ("Task was destroyed but it is pending!").

Such a reader used to stay when its cancellation was swallowed on the way: asyncio.wait_for on
Python 3.11 returns the result instead of raising when what it waits for completes as the
cancellation arrives, and the SQLite store's live read waited for a wake-up that way. The reader
then read on, filled the response's queue that nobody drained any more, and waited for room
forever. Now the store's wait lets the cancellation through, and a reader that is not stopped
anyway (an event log of the application's may swallow one too) ends at its next frame: the
response's queue is closed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import agui
from agui.store import Cursor, EventBatch
from agui.store.memory import MemoryLog
from tests.conftest import live_server

from .agents import paced
from .support import body, post, stream

RESUMES = 5
DESTROYED = "Task was destroyed but it is pending"


class SwallowingLog(MemoryLog):
    """memory:// whose live reads let the first cancellation pass, as asyncio.wait_for does on
    Python 3.11 when the wake-up it waits for comes with the cancellation: the read goes on."""

    def __init__(self) -> None:
        super().__init__()
        self.swallowed = 0

    async def read_batches(
        self,
        run_id: str,
        after: Cursor | None = None,
        *,
        follow: bool = False,
        limit: int | None = None,
    ) -> AsyncIterator[EventBatch]:
        swallowed = False
        while True:
            try:
                async for batch in super().read_batches(run_id, after, follow=follow, limit=limit):
                    if batch:
                        after = batch.cursors[-1]
                    yield batch
                return
            except asyncio.CancelledError:
                if swallowed or not follow:
                    raise
                swallowed = True
                self.swallowed += 1


class Loops:
    """An ASGI wrapper that notes the event loop serving the app, to look at its tasks."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)

    def producers(self) -> list[str]:
        """The pending tasks of durable responses' readers (`producing`), as text."""

        async def pending() -> list[str]:
            return [
                repr(task)
                for task in asyncio.all_tasks()
                if getattr(task.get_coro(), "__qualname__", "").endswith(
                    "_respond.<locals>.producing"
                )
                and not task.done()
            ]

        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(pending(), self.loop).result(5)


def leave_early(store: Any, caplog: pytest.LogCaptureFixture) -> None:
    """A run still going, its POST and RESUMES resumes each left after their first event; then
    no reader of theirs is left, neither while the server runs nor once it stopped."""
    caplog.set_level(logging.INFO)
    served = Loops(agui.AgentApp(paced, path="/agent", store=store))
    with live_server(served) as url:
        # An event every 10 ms: each response follows the run live when its client leaves.
        first = post(f"{url}/agent", body("r1", count=2000, delay=0.01), stop_after=2)
        assert first.status == 200
        last = first.frames[-1].id
        for _ in range(RESUMES):
            resumed = stream(
                f"{url}/agent/runs/r1/events", headers={"last-event-id": last or ""}, stop_after=1
            )
            assert resumed.status == 200 and resumed.frames
            last = resumed.frames[-1].id
        deadline = time.monotonic() + 5
        while (left := served.producers()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"readers left behind by the responses whose clients left: {left}"
        gc.collect()  # a reader left blocked forever is garbage: collected, it is reported
    gc.collect()
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if DESTROYED in m]
    assert not [m for m in messages if "did not stop" in m]


def test_readers_end_when_their_clients_leave(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    leave_early(store_url, caplog)


def test_a_reader_whose_cancellation_is_swallowed_ends_at_its_next_frame(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An event log that swallows a cancellation (the reader reads on after its client left):
    the reader still ends, at the next event it queues."""
    log = SwallowingLog()
    leave_early(log, caplog)
    assert log.swallowed, "no cancellation came while a response followed the run"
