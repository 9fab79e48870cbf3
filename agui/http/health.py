"""Health endpoints for a load balancer or an orchestrator: `GET /healthz` (liveness: the process
serves) and `GET /readyz` (readiness: it should get traffic now).

Readiness is 503 while the server drains (its shutdown began: a rollout takes it out of the load
balancer before its streams are ended) and while an event log it serves runs from does not answer
a round trip (`EventLog.probe`, at most `PROBE_TIMEOUT` seconds); 200 again as soon as the log
answers, without a restart. Each answer is a short JSON object, `{"status": "ok"}` or
`{"status": "unavailable", "reason": "..."}`, whose reason names no host, no error text and no
traceback: the failure itself goes to the server's log (stderr), once per outage.

Both are answered by `agui.AgentServer` at its root, and by an `AgentApp` with a path of its own
(what `agui serve MODULE:ATTR` builds) at `/healthz` and `/readyz` beside its path. No
`authorize` hook is asked: a probe carries no credentials, and the answer tells nothing of any
run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from agui.http.asgi import Scope, Send
    from agui.http.server import AgentApp
    from agui.store.base import EventLog

__all__ = ["HEALTHZ", "PROBE_TIMEOUT", "READYZ", "answer", "not_ready"]

log = logging.getLogger("agui.server")

HEALTHZ = "/healthz"
READYZ = "/readyz"
PROBE_TIMEOUT = 0.75
"""Seconds a readiness probe waits for the event log's round trip: below the one second an
orchestrator waits for the answer by default (Kubernetes' timeoutSeconds)."""

DRAINING = "the server is shutting down"
STORE_DOWN = "the event log does not answer"

_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
_inflight: dict[tuple[int, int], asyncio.Future[BaseException | None]] = {}
"""The probe going on for an event log (by the loop's and the log's id): concurrent readiness
checks share one round trip instead of each sending its own."""


async def not_ready(apps: Iterable[AgentApp], draining: bool = False) -> str | None:
    """Why the server serving `apps` should get no traffic now (a reason a client may read), or
    None when it should: it drains (`draining`, or the shutdown of one of the apps began), or
    an event log of theirs does not answer a round trip. Each log is probed once, all at once;
    the apps' store health (`Durable.healthy`) follows the result."""
    apps = list(apps)
    if draining or any(app._stop_at is not None for app in apps):
        return DRAINING
    logs: dict[int, tuple[EventLog, list[Any]]] = {}
    for app in apps:
        durable = app._durable
        if durable is not None:
            logs.setdefault(id(durable.log), (durable.log, []))[1].append(durable)
    if not logs:
        return None
    failures = await asyncio.gather(*(_probe(store) for store, _ in logs.values()))
    reason = None
    for (_, durables), failure in zip(logs.values(), failures, strict=True):
        if failure is None:
            for durable in durables:
                durable._store_ok()
            continue
        reason = STORE_DOWN
        first, *others = durables
        first._store_failed(failure)  # logged once per outage of the log, never a traceback
        for durable in others:  # the same log: the same failure, not logged again
            durable.store_failure = first.store_failure
    return reason


async def _probe(store: EventLog) -> BaseException | None:
    """One round trip of `store` (shared with the checks already waiting for one); the error
    when it failed or took longer than PROBE_TIMEOUT, None when it answered."""
    key = (id(asyncio.get_running_loop()), id(store))
    pending = _inflight.get(key)
    if pending is None:
        pending = asyncio.ensure_future(_round_trip(store))
        _inflight[key] = pending
        pending.add_done_callback(lambda _: _inflight.pop(key, None))
    return await asyncio.shield(pending)


async def _round_trip(store: EventLog) -> BaseException | None:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            probe = getattr(store, "probe", None)
            if probe is not None:
                await probe()
            else:  # an EventLog of an older protocol: a read
                await store.expired(0.0)
    except TimeoutError:
        return TimeoutError(f"the event log did not answer within {PROBE_TIMEOUT} s")
    except Exception as error:
        return error
    return None


async def answer(scope: Scope, send: Send, reason: str | None) -> None:
    """Answer a health request: 200 `{"status": "ok"}` when `reason` is None, else 503
    `{"status": "unavailable", "reason": reason}`; 405 for a method other than GET or HEAD (a
    HEAD answer has the headers only)."""
    method = scope.get("method", "GET")
    if method not in ("GET", "HEAD"):
        body = orjson.dumps({"error": "read the health with GET"})
        headers = [*_HEADERS, (b"allow", b"GET, HEAD")]
        await send({"type": "http.response.start", "status": 405, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
        return
    if reason is None:
        status, body = 200, orjson.dumps({"status": "ok"})
    else:
        status, body = 503, orjson.dumps({"status": "unavailable", "reason": reason})
    await send({"type": "http.response.start", "status": status, "headers": _HEADERS})
    await send(
        {
            "type": "http.response.body",
            "body": b"" if method == "HEAD" else body,
            "more_body": False,
        }
    )
