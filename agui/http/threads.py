"""Threads, server side: what a server with a store answers about the caller's threads, and the
answers' models for the client.

* `GET {path}/threads?limit=N&before=CURSOR`: the caller's threads, newest first (by the start
  of their latest run), a page at a time: `{"threads": [ThreadInfo...], "next": CURSOR}`, `next`
  present while more may follow. `limit` is 1 to MAX_LIMIT (DEFAULT_LIMIT when left out).
* `GET {path}/threads/{threadId}`: the thread's messages and state, as connect's compact
  history builds them, and its runs: a Thread.
* `DELETE {path}/threads/{threadId}`: the thread removed from the store whole (every run's
  record, input and events, in every index): for data retention and erasure requests. Its live
  runs are stopped first, as `POST runs/{runId}/stop` stops them (their followers get the run's
  end: RUN_FINISHED cancelled), then the thread is deleted: a DeletedThread.

Each is asked of the `authorize` hook first (actions "list", "connect" for reading one thread,
"delete") and answers in the principal's namespace only: another principal's thread is not
known here, answered exactly as an id never used (404, the same body).

These shapes are agui's own server API, not the AG-UI protocol: they are written here, not in
spec/agui.yaml, whose definitions are the protocol's (every binding, the JSON Schema and the
protobuf layout are generated from it; see docs/threads.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

import attrs
import orjson
from agui_generated import DecodeError, Interrupt, Message, Problem, RunFinishedInterruptOutcome

from agui.errors import StreamError
from agui.http.asgi import BadRequest, Scope, Send, json_response, query_params
from agui.store import RunRecord, ThreadSummary
from agui.wire.codec import decode_json, to_json

if TYPE_CHECKING:
    from agui.http.durable import Durable

__all__ = [
    "DEFAULT_LIMIT",
    "DELETE_WAIT",
    "MAX_LIMIT",
    "DeletedThread",
    "Outcome",
    "RunInfo",
    "Thread",
    "ThreadInfo",
    "ThreadPage",
]

log_ = logging.getLogger("agui.server")

DEFAULT_LIMIT = 20
"""Threads in a page when the request gives no `limit`."""
MAX_LIMIT = 100
"""The largest `limit` a listing takes (a larger one is refused with 400)."""
DELETE_WAIT = 10.0
"""Seconds a DELETE waits for the thread's live runs to end once stopped; a run still going then
(its worker gone, its lease not yet run out) is deleted as it is."""
_SETTLE = 0.5
"""Seconds, after a stopped run ended, left to its followers on other workers to read its end
before the run is deleted (those here are waited for)."""

Outcome: TypeAlias = Literal["success", "interrupt", "cancelled", "error"]
"""How a run ended: its RUN_FINISHED's outcome (none: success), or error for RUN_ERROR."""
_OUTCOMES = ("success", "interrupt", "cancelled", "error")
_STATUSES = ("running", "finished")


# ── the answers' models ────────────────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class RunInfo:
    """A run of a thread, as the threads endpoints describe it."""

    run_id: str
    status: Literal["running", "finished"]
    started_at: datetime
    finished_at: datetime | None = None
    outcome: Outcome | None = None
    """None while the run runs (or when its end is not known)."""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "runId": self.run_id,
            "status": self.status,
            "startedAt": _iso(self.started_at),
        }
        if self.finished_at is not None:
            wire["finishedAt"] = _iso(self.finished_at)
        if self.outcome is not None:
            wire["outcome"] = self.outcome
        return wire

    @classmethod
    def from_wire(cls, value: Any, at: str) -> RunInfo:
        item = _object(value, at)
        status = _choice(item, "status", _STATUSES, at)
        outcome = item.get("outcome")
        if outcome is not None:
            outcome = _choice(item, "outcome", _OUTCOMES, at)
        finished = item.get("finishedAt")
        return cls(
            run_id=_text(item, "runId", at),
            status=cast(Literal["running", "finished"], status),
            started_at=_time(item, "startedAt", at),
            finished_at=None if finished is None else _time(item, "finishedAt", at),
            outcome=cast("Outcome | None", outcome),
        )


@attrs.frozen(kw_only=True)
class ThreadInfo:
    """One thread of a listing: its latest run and where it stands."""

    thread_id: str
    runs: int
    """How many runs of the thread the server keeps."""
    updated_at: datetime
    """When the latest run finished, or started while it runs."""
    last_run: RunInfo

    def to_wire(self) -> dict[str, Any]:
        return {
            "threadId": self.thread_id,
            "runs": self.runs,
            "updatedAt": _iso(self.updated_at),
            "lastRun": self.last_run.to_wire(),
        }

    @classmethod
    def from_wire(cls, value: Any, at: str) -> ThreadInfo:
        item = _object(value, at)
        thread_id = _text(item, "threadId", at)
        runs = item.get("runs")
        if not isinstance(runs, int) or isinstance(runs, bool) or runs < 0:
            raise _bad(f"{at}/runs", "is not a count")
        return cls(
            thread_id=thread_id,
            runs=runs,
            updated_at=_time(item, "updatedAt", at),
            last_run=RunInfo.from_wire(item.get("lastRun"), f"{at}/lastRun"),
        )


@attrs.frozen(kw_only=True)
class ThreadPage:
    """A page of the caller's threads (`GET {url}/threads`), newest first."""

    threads: tuple[ThreadInfo, ...]
    next: str | None = None
    """The cursor of the next page (`before=`), None when this is the last."""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"threads": [t.to_wire() for t in self.threads]}
        if self.next is not None:
            wire["next"] = self.next
        return wire

    @classmethod
    def from_wire(cls, value: Any) -> ThreadPage:
        page = _object(value, "")
        threads = page.get("threads")
        if not isinstance(threads, list):
            raise _bad("/threads", "is not a list")
        cursor = page.get("next")
        if cursor is not None and not isinstance(cursor, str):
            raise _bad("/next", "is not a string")
        return cls(
            threads=tuple(
                ThreadInfo.from_wire(item, f"/threads/{n}") for n, item in enumerate(threads)
            ),
            next=cursor,
        )


@attrs.frozen(kw_only=True)
class Thread:
    """One thread (`GET {url}/threads/{threadId}`): its conversation as connect's compact
    history builds it, and its runs in the order they started."""

    thread_id: str
    messages: tuple[Message, ...]
    state: Any
    """The state as of the thread's last run (None: no state was ever set)."""
    runs: tuple[RunInfo, ...]
    interrupts: tuple[Interrupt, ...] = ()
    """What the thread's last run waits for, when it ended with the outcome interrupt (the
    next run answers them with resume entries). A Conversation picks the thread up with
    `Conversation(t.thread_id, messages=t.messages, state=t.state,
    pending_interrupts=t.interrupts)`."""

    def to_wire(self) -> dict[str, Any]:
        wire = {
            "threadId": self.thread_id,
            "messages": [to_json(message) for message in self.messages],
            "state": self.state,
            "runs": [run.to_wire() for run in self.runs],
        }
        if self.interrupts:
            wire["interrupts"] = [to_json(interrupt) for interrupt in self.interrupts]
        return wire

    @classmethod
    def from_wire(cls, value: Any, *, strict: bool = False) -> Thread:
        thread = _object(value, "")
        messages = thread.get("messages")
        if not isinstance(messages, list):
            raise _bad("/messages", "is not a list")
        runs = thread.get("runs")
        if not isinstance(runs, list):
            raise _bad("/runs", "is not a list")
        decoded = [
            _decoded(item, Message, f"/messages/{n}", strict) for n, item in enumerate(messages)
        ]
        listed = thread.get("interrupts", [])
        if not isinstance(listed, list):
            raise _bad("/interrupts", "is not a list")
        interrupts = tuple(
            _decoded(item, Interrupt, f"/interrupts/{n}", strict) for n, item in enumerate(listed)
        )
        return cls(
            thread_id=_text(thread, "threadId", ""),
            messages=tuple(decoded),
            state=thread.get("state"),
            runs=tuple(RunInfo.from_wire(item, f"/runs/{n}") for n, item in enumerate(runs)),
            interrupts=interrupts,
        )


@attrs.frozen(kw_only=True)
class DeletedThread:
    """What `DELETE {url}/threads/{threadId}` did."""

    thread_id: str
    deleted_runs: int
    """The runs removed from the store."""
    stopped_runs: int
    """Of those, the runs that were going and were stopped first."""

    def to_wire(self) -> dict[str, Any]:
        return {
            "threadId": self.thread_id,
            "deletedRuns": self.deleted_runs,
            "stoppedRuns": self.stopped_runs,
        }

    @classmethod
    def from_wire(cls, value: Any) -> DeletedThread:
        answer = _object(value, "")
        counts = []
        for name in ("deletedRuns", "stoppedRuns"):
            count = answer.get(name)
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise _bad(f"/{name}", "is not a count")
            counts.append(count)
        return cls(
            thread_id=_text(answer, "threadId", ""), deleted_runs=counts[0], stopped_runs=counts[1]
        )


def _decoded(value: Any, cls: Any, at: str, strict: bool) -> Any:
    """`value` decoded as `cls` (tolerantly unless `strict`); a StreamError naming where."""
    try:
        return decode_json(value, cls, strict=strict, warnings=[])
    except DecodeError as exc:
        first = exc.problems[0] if exc.problems else None
        where = at + (first.pointer if first else "")
        raise _bad(where, first.message if first else str(exc)) from None


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _bad(pointer: str, message: str) -> StreamError:
    problem = Problem(pointer, "type", message)
    return StreamError(f"the answer is not agui's thread API: {problem}", problems=(problem,))


def _object(value: Any, at: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _bad(at, "is not an object")
    return value


def _text(item: Mapping[str, Any], name: str, at: str) -> str:
    value = item.get(name)
    if not isinstance(value, str):
        raise _bad(f"{at}/{name}", "is not a string")
    return value


def _choice(item: Mapping[str, Any], name: str, allowed: Sequence[str], at: str) -> str:
    value = item.get(name)
    if value not in allowed:
        raise _bad(f"{at}/{name}", f"is not one of {', '.join(allowed)}")
    return cast(str, value)


def _time(item: Mapping[str, Any], name: str, at: str) -> datetime:
    value = _text(item, name, at)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise _bad(f"{at}/{name}", "is not an ISO 8601 time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


# ── the server's side ──────────────────────────────────────────────────────────────────────────


def outcome_of(data: bytes | None) -> Outcome | None:
    """How the run whose terminal event is `data` ended (None for anything else)."""
    if data is None:
        return None
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(event, dict):
        return None
    if event.get("type") == "RUN_ERROR":
        return "error"
    if event.get("type") != "RUN_FINISHED":
        return None
    outcome = event.get("outcome")
    kind = outcome.get("type") if isinstance(outcome, dict) else None
    return cast(Outcome, kind) if kind in ("interrupt", "cancelled") else "success"


def run_info(record: RunRecord, wire_id: str, last_event: bytes | None) -> RunInfo:
    finished = record.status == "finished"
    return RunInfo(
        run_id=wire_id,
        status=record.status,
        started_at=_at(record.started_at),
        finished_at=_at(record.finished_at)
        if finished and record.finished_at is not None
        else None,
        outcome=outcome_of(last_event) if finished else None,
    )


def thread_info(summary: ThreadSummary, wire: Any) -> ThreadInfo:
    record = summary.last_run
    last = run_info(record, wire(record.run_id), summary.last_event)
    return ThreadInfo(
        thread_id=wire(summary.thread_id),
        runs=summary.runs,
        updated_at=last.finished_at or last.started_at,
        last_run=last,
    )


class _Refused(Exception):
    """A listing's query refused (answered 400 with its problems)."""

    def __init__(self, error: str, problems: tuple[Problem, ...]) -> None:
        self.error, self.problems = error, problems


def page_query(query: Mapping[str, str]) -> tuple[int, int | None]:
    """(limit, before) of a listing's query; _Refused naming each bad parameter (its pointer is
    the parameter's name: /limit, /before)."""
    problems: list[Problem] = []
    limit = DEFAULT_LIMIT
    raw = query.get("limit")
    if raw is not None:
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:
            problems.append(Problem("/limit", "type", f"limit is a whole number, not {raw!r}"))
        elif not 1 <= int(raw) <= MAX_LIMIT:
            problems.append(
                Problem("/limit", "range", f"limit is 1 to {MAX_LIMIT}, not {int(raw)}")
            )
        else:
            limit = int(raw)
    before: int | None = None
    raw = query.get("before")
    if raw is not None:
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 18 or raw.startswith("0"):
            problems.append(
                Problem("/before", "pattern", f"before is a cursor a listing gave, not {raw!r}")
            )
        else:
            before = int(raw)
    if problems:
        raise _Refused("the query of a thread listing is not valid", tuple(problems))
    return limit, before


async def serve_list(durable: Durable, scope: Scope, send: Send) -> None:
    principal = await durable._allowed(scope, "list", None, None)
    try:
        limit, before = page_query(query_params(scope))
    except _Refused as refused:
        raise BadRequest(400, refused.error, refused.problems) from None
    found = await durable.log.list_threads(principal.key(""), limit=limit + 1, before=before)
    more = len(found) > limit
    shown = found[:limit]
    page = ThreadPage(
        threads=tuple(thread_info(summary, principal.wire) for summary in shown),
        next=str(shown[-1].order) if more and shown else None,
    )
    await json_response(send, 200, page.to_wire(), _NO_CACHE)


_NO_CACHE = ((b"cache-control", b"no-store"),)


async def serve_thread(durable: Durable, scope: Scope, send: Send, thread_id: str) -> None:
    principal = await durable._allowed(scope, "connect", thread_id, None)
    runs = await durable.log.thread_runs(principal.key(thread_id))
    if not runs:
        raise BadRequest(404, f"no thread {thread_id!r} is known here")
    ends: dict[str, bytes] = {}
    head = await durable._compact(thread_id, runs, ends)
    infos = tuple(
        run_info(record, principal.wire(record.run_id), ends.get(record.run_id)) for record in runs
    )
    outcome = head[3].outcome
    thread = Thread(
        thread_id=thread_id,
        messages=tuple(head[1].messages),
        state=head[2].snapshot,
        runs=infos,
        interrupts=tuple(outcome.interrupts)
        if isinstance(outcome, RunFinishedInterruptOutcome)
        else (),
    )
    await json_response(send, 200, thread.to_wire(), _NO_CACHE)


async def serve_delete(durable: Durable, scope: Scope, send: Send, thread_id: str) -> None:
    principal = await durable._allowed(scope, "delete", thread_id, None)
    key = principal.key(thread_id)
    log = durable.log
    runs = await log.thread_runs(key)
    if not runs:
        raise BadRequest(404, f"no thread {thread_id!r} is known here")
    live = [record.run_id for record in runs if record.status != "finished"]
    if live:
        await _stop_all(durable, live)
    removed = await log.delete_thread(principal.key(""), key)
    if not removed:  # another request deleted it meanwhile
        raise BadRequest(404, f"no thread {thread_id!r} is known here")
    log_.info("thread %s: deleted (%d runs, %d stopped first)", key, len(removed), len(live))
    answer = DeletedThread(thread_id=thread_id, deleted_runs=len(removed), stopped_runs=len(live))
    await json_response(send, 200, answer.to_wire())


async def _stop_all(durable: Durable, run_ids: list[str]) -> None:
    """Stop the runs (as POST runs/{id}/stop does), wait for their ends to be stored (DELETE_WAIT
    at most), then for their followers to read them."""
    log = durable.log
    for run_id in run_ids:
        try:
            await log.request_stop(run_id)
        except Exception:  # gone meanwhile, or the log fails: the deletion says which
            continue
        execution = durable.executions.get(run_id)
        if execution is not None:
            execution.request_stop()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DELETE_WAIT
    going = list(run_ids)
    while going and loop.time() < deadline:
        left = []
        for run_id in going:
            record = await log.get_run(run_id)
            if record is None or record.status == "finished":
                continue
            if run_id not in durable.executions and record.lease_until < time.time():
                await durable._close_lost(run_id)  # nobody is left to stop it
            left.append(run_id)
        going = left
        if going:
            await asyncio.sleep(0.05)
    # The followers here: until each has queued the run's end (or left).
    while loop.time() < deadline and any(
        getattr(tail, "run_id", None) in run_ids and not getattr(tail, "ended", True)
        for tail in durable.app._runs
    ):
        await asyncio.sleep(0.02)
    await asyncio.sleep(_SETTLE)
