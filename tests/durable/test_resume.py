"""Resume: a client that drops after N events of a run of a few thousand, and comes back with
`Last-Event-ID`, gets exactly events N+1..end, in order; on every backend, and on another
`agui serve` process sharing one Redis (start on A, resume on B)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import agui

from .agents import paced
from .support import Frame, body, deltas, post, stream, types

COUNT = 3000
"""Content events of the long run (plus RUN_STARTED, START, END, RUN_FINISHED)."""
DROP = 1234
"""Events the client reads before it hangs up."""


def check_resumed(first: list[Frame], resumed: list[Frame], whole: list[Frame]) -> None:
    """`first` then `resumed` is the whole run, without a gap or a duplicate."""
    assert len(first) == DROP
    assert [f.event for f in first] + [f.event for f in resumed] == [f.event for f in whole]
    ids = [f.id for f in first + resumed]
    assert ids == [f.id for f in whole]
    assert None not in ids and len(set(ids)) == len(ids)
    assert deltas(first + resumed) == [f"{i}," for i in range(COUNT)]
    assert types(whole)[0] == "RUN_STARTED" and types(whole)[-1] == "RUN_FINISHED"


def test_resume_gives_exactly_the_missing_events(
    store_url: str, live: Callable[[Any], str]
) -> None:
    url = live(agui.AgentApp(paced, path="/agent", store=store_url))
    # A pause every 100 events, so that the client drops while the run is still going.
    first = post(f"{url}/agent", body("r1", count=COUNT, delay=0.002, every=100), stop_after=DROP)
    assert first.status == 200
    assert first.headers["content-type"] == "text/event-stream"
    last = first.frames[-1].id
    assert last is not None
    resumed = stream(f"{url}/agent/runs/r1/events", headers={"last-event-id": last})
    assert resumed.status == 200
    whole = stream(f"{url}/agent/runs/r1/events")  # from the start, after the end
    check_resumed(first.frames, resumed.frames, whole.frames)
    # ?after= is the same as the header; the header wins over it
    again = stream(f"{url}/agent/runs/r1/events?after={last}")
    assert again.frames == resumed.frames
    header_wins = stream(f"{url}/agent/runs/r1/events?after=1", headers={"last-event-id": last})
    assert header_wins.frames == resumed.frames


def test_resume_on_another_worker(redis_url: str, served: Any) -> None:
    """Start on A, drop, resume on B: two `agui serve --store redis://...` processes."""
    a = served("agents:paced", "--store", redis_url)
    b = served("agents:paced", "--store", redis_url)
    assert "runs kept in redis://" in "".join(a.stderr)
    first = post(a.url, body("r1", count=COUNT, delay=0.002, every=100), stop_after=DROP)
    resumed = stream(
        f"{b.url}/runs/r1/events", headers={"last-event-id": first.frames[-1].id or ""}
    )
    whole = stream(f"{a.url}/runs/r1/events")
    check_resumed(first.frames, resumed.frames, whole.frames)


@pytest.mark.parametrize("point", [0, 1, 3, COUNT + 3])
def test_resume_from_any_event(point: int, live: Callable[[Any], str]) -> None:
    """After event k, whatever k, resume gives the rest: the first, the last and the terminal
    event included (after the terminal: nothing, and the response ends)."""
    url = live(agui.AgentApp(paced, path="/agent", store="memory://"))
    whole = post(f"{url}/agent", body("r1", count=COUNT)).frames
    assert len(whole) == COUNT + 4
    after = whole[point].id
    rest = stream(f"{url}/agent/runs/r1/events", headers={"last-event-id": after or ""})
    assert rest.status == 200
    assert rest.frames == whole[point + 1 :]
