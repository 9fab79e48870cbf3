"""A run's lifetime as served, with a store or without: the RUN_ERROR codes the server ends a run
with (`TIMEOUT` past max_run_seconds, `SERVER_SHUTDOWN`), stopping its agent (and how long that
may take), letting an agent finish after its terminal event, and the supervisor's next deadline."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from agui_generated import RunErrorEvent, RunFinishedEvent

from agui.observe.runlog import about_run

if TYPE_CHECKING:
    from agui.http.server import AgentApp

log = logging.getLogger("agui.server")

SERVER_SHUTDOWN = "SERVER_SHUTDOWN"
"""The RUN_ERROR code of a run stopped because the server shuts down."""
TIMEOUT = "TIMEOUT"
"""The RUN_ERROR code of a run that went on longer than `max_run_seconds`."""

TERMINAL = frozenset((RunFinishedEvent, RunErrorEvent))
STOP_WAIT = 2.0  # seconds a cancelled agent may take to stop before it is left behind
_SHUTDOWN_STOP_WAIT = 0.25  # seconds past the grace an agent may take to stop before its run ends
SERVING: contextvars.ContextVar[AgentApp] = contextvars.ContextVar("agui_serving")
"""The AgentApp serving the request (and the tasks it started): whose shutdown `_stop_wait` sees."""


async def stop_agent(producer: asyncio.Task[None], fields: Mapping[str, object]) -> None:
    """Cancel the agent's task and wait for it a little (`_stop_wait`); log one that goes on
    (the line carries the run's `fields`: agui.observe.runlog.about_run)."""
    producer.cancel()
    wait = _stop_wait()
    await asyncio.wait((producer,), timeout=wait)
    if not producer.done() and wait >= STOP_WAIT:  # at the shutdown, the request's end logs it
        about_run(log, logging.ERROR, fields, "the agent did not stop when it was cancelled")


def _stop_wait() -> float:
    """How long a cancelled agent may take to stop before its run ends without it: STOP_WAIT;
    once the shutdown of the app serving the request began, only until _SHUTDOWN_STOP_WAIT past
    its grace (the run's end must go out within the server's window). The agent's late events
    are dropped, and the end of the request waits for it (`AgentApp._within_window`)."""
    app = SERVING.get(None)
    stop_at = None if app is None else app._stop_at
    if stop_at is None:
        return STOP_WAIT
    return max(0.0, min(STOP_WAIT, stop_at + _SHUTDOWN_STOP_WAIT - time.monotonic()))


class _Finishing(Protocol):
    """What `let_finish` needs of a run being served (agui.http.server._Run, a durable Execution)."""

    id: str
    stop_at: float | None
    wake: asyncio.Future[None]

    def fields(self, code: str | None = None) -> dict[str, object]: ...


async def let_finish(run: _Finishing, producer: asyncio.Task[None]) -> None:
    """Wait for an agent still working after its terminal event (the run lifecycle gives it
    finish_grace seconds); a shutdown (`run.stop_at`) cuts that short, and returns at once."""
    loop = asyncio.get_running_loop()
    while not producer.done():
        now = loop.time()
        if run.stop_at == math.inf:
            return  # the shutdown ended the run, and cancelled the agent then
        if run.stop_at is not None and now >= run.stop_at:
            fields = run.fields()
            about_run(
                log,
                logging.WARNING,
                fields,
                "the server shuts down; the finishing agent is cancelled",
            )
            return
        if run.wake.done():
            run.wake = loop.create_future()
        await asyncio.wait(
            (producer, run.wake),
            timeout=earliest(now, run.stop_at),
            return_when=asyncio.FIRST_COMPLETED,
        )


def earliest(now: float, *times: float | None) -> float | None:
    """Seconds from `now` to the earliest of `times` (None: no time given)."""
    given = [t for t in times if t is not None and t != math.inf]
    return max(0.0, min(given) - now) if given else None
