"""The live tail's fast path on memory:// (the writer hands its batches over as ExactEvents, the
log keeps the latest one's objects for the readers following the run, cursors come as
NumberedCursors and are framed from their numbers) keeps the guarantees: a frame goes out only
after its events are in the log, every frame carries its event's cursor, and a resume after any
cursor, a batch's last or first included, gives exactly the events after it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import agui
from agui.store import Cursor
from agui.store.memory import MemoryLog

from .agents import paced
from .support import body, deltas, post, stream

COUNT = 2500
"""Content events: ids cross 1000 and 2000 (the framing's thousands), several batches."""


class CheckedLog(MemoryLog):
    """memory:// that notes where each append ends (the batch boundaries)."""

    def __init__(self) -> None:
        super().__init__()
        self.ends: list[int] = []

    async def append(
        self, run_id: str, events: Sequence[bytes], *, final: bool = False
    ) -> Sequence[Cursor]:
        cursors = await super().append(run_id, events, final=final)
        self.ends.append(self._runs[run_id].last)
        return cursors


class StoredFirst:
    """ASGI middleware: each body a response sends is checked against the log as it is sent,
    every `id:` in it must be stored already (the run's last sequence number reaches it)."""

    def __init__(self, app: Any, log: CheckedLog) -> None:
        self.app = app
        self.log = log
        self.sent = 0
        self.early: list[int] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def checked(message: Any) -> None:
            if message["type"] == "http.response.body" and scope["method"] == "POST":
                ids = [
                    int(line[4:])
                    for line in message.get("body", b"").split(b"\n")
                    if line.startswith(b"id: ")
                ]
                runs = self.log._runs
                last = max((run.last for run in runs.values()), default=0)
                self.sent += len(ids)
                self.early += [i for i in ids if i > last]
            await send(message)

        await self.app(scope, receive, checked)


def _body(version: str | None) -> bytes:
    # A pause every 300 events: the run is stored in many appends, read as each one lands.
    value = json.loads(body("r1", count=COUNT, delay=0.001, every=300))
    if version is not None:
        value["protocolVersion"] = version
    return json.dumps(value).encode()


@pytest.mark.parametrize("version", [None, "1.0"])  # translated for 0.0.x, and as it is
def test_frames_go_out_after_their_events_are_stored(
    live: Callable[[Any], str], version: str | None
) -> None:
    log = CheckedLog()
    app = agui.AgentApp(paced, path="/agent", store=log)
    checked = StoredFirst(app, log)
    url = live(checked)
    first = post(f"{url}/agent", _body(version))
    assert first.status == 200
    assert checked.sent == len(first.frames) == COUNT + 4
    assert checked.early == []
    ids = [frame.id for frame in first.frames]
    assert ids == [str(n) for n in range(1, COUNT + 5)]
    assert len(log.ends) > 3
    assert deltas(first.frames) == [f"{i}," for i in range(COUNT)]


def test_a_resume_at_a_batch_boundary_gives_exactly_the_rest(live: Callable[[Any], str]) -> None:
    log = CheckedLog()
    url = live(agui.AgentApp(paced, path="/agent", store=log))
    whole = post(f"{url}/agent", _body("1.0"))
    assert whole.status == 200
    events = [frame.event for frame in whole.frames]
    ids = [frame.id for frame in whole.frames]
    assert len(log.ends) > 3
    # Each append's last event, the one after it, and the framing's thousands.
    cursors = {end for end in log.ends if end < len(events)}
    cursors |= {end + 1 for end in cursors if end + 1 < len(events)} | {999, 1000, 1001, 2000}
    for after in sorted(cursors):
        resumed = stream(f"{url}/agent/runs/r1/events", headers={"last-event-id": str(after)})
        assert resumed.status == 200
        assert [frame.id for frame in resumed.frames] == ids[after:]
        assert [frame.event for frame in resumed.frames] == events[after:]
