"""What one request body may cost the server, over real HTTP (uvicorn on 127.0.0.1), without a
store and with one (memory://): issue 31.

* A caller `authorize` refuses is refused before the body is decoded: an 8 MiB body of a million
  unknown members costs one JSON parse, logs nothing about the body, and /healthz answers
  meanwhile.
* The same body from an allowed caller is decoded (in a worker thread: it is large) and logs at
  most MAX_WARNINGS lines for the unknown members, then one saying how many more.
* A null on an optional member (`"state": null`, what official clients send) is logged at DEBUG,
  naming the run: a hundred such runs log no WARNING.
"""

from __future__ import annotations

import logging
import string
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import orjson
import pytest

import agui
from agui.wire.codec import MAX_WARNINGS

from .conftest import live_server

JSON = {"content-type": "application/json"}
ALLOWED = {"authorization": "Bearer ok", **JSON}
HANG = 60.0
"""A hang bound only (the requests take well under a second)."""

MESSAGES, UNKNOWN = 1733, 600
"""The issue's body: 1,733 messages of 600 unknown members each (1,039,800 members, just under
the default max_body_bytes of 8 MiB with two-letter names)."""


def big_body(run_id: str = "run-big", thread_id: str = "thread-big") -> bytes:
    names = [a + b for a in string.ascii_uppercase for b in string.ascii_letters]  # not "id"
    extra = dict.fromkeys(names[:UNKNOWN], 0)
    messages = [{"id": f"m{n}", "role": "user", "content": "x", **extra} for n in range(MESSAGES)]
    return orjson.dumps(
        {
            "threadId": thread_id,
            "runId": run_id,
            "state": None,
            "messages": messages,
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    )


def small_body(run_id: str, thread_id: str = "thread-null") -> bytes:
    """What an official client sends for a thread with no state yet."""
    return orjson.dumps(
        {
            "threadId": thread_id,
            "runId": run_id,
            "state": None,
            "messages": [{"id": f"u-{run_id}", "role": "user", "content": "hi"}],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    )


class Hook:
    """An authorize hook that records what it was asked and allows only ALLOWED's token."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any, Any]] = []

    async def __call__(self, headers: Any, action: str, thread_id: Any, run_id: Any) -> Any:
        self.asked.append((action, thread_id, run_id))
        return "alice" if headers.get("authorization") == "Bearer ok" else None


async def quiet(input: agui.RunAgentInput) -> Any:
    """An agent that says nothing (the server opens and closes the run)."""
    return
    yield


@pytest.fixture(params=["live", "durable"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, Hook]]:
    """(the agent's URL, its hook): an AgentApp at /agent, without a store or with memory://."""
    hook = Hook()
    store = "memory://" if request.param == "durable" else None
    app = agui.AgentApp(quiet, path="/agent", store=store, authorize=hook)
    with live_server(app) as base:
        yield base, hook


@contextmanager
def health_watch(base: str) -> Iterator[list[int]]:
    """GET /healthz over and over while the block runs; the statuses answered (each must come
    within HANG: a blocked event loop would hold them all)."""
    statuses: list[int] = []
    done = threading.Event()

    def watch() -> None:
        with httpx.Client(timeout=HANG) as client:
            while not done.is_set():
                statuses.append(client.get(f"{base}/healthz").status_code)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield statuses
    finally:
        done.set()
        watcher.join(HANG)
        assert not watcher.is_alive(), "/healthz did not answer"


def body_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "request body" in r.getMessage()]


def test_a_refused_caller_is_refused_before_its_body_is_decoded(
    served: tuple[str, Hook], caplog: pytest.LogCaptureFixture
) -> None:
    base, hook = served
    caplog.set_level(logging.DEBUG, logger="agui")
    body = big_body()
    assert len(body) <= 8 * 1024 * 1024
    with health_watch(base) as statuses, httpx.Client(timeout=HANG) as client:
        answer = client.post(f"{base}/agent", content=body, headers=JSON)
    assert answer.status_code == 403
    assert hook.asked == [("start", "thread-big", "run-big")]  # the ids, read without decoding
    assert body_records(caplog) == []  # the tolerant decoder never saw the body
    server_records = [r for r in caplog.records if r.name.startswith("agui")]
    assert len(server_records) <= 3, [r.getMessage() for r in server_records]
    assert statuses and set(statuses) == {200}


def test_an_allowed_caller_s_large_body_logs_a_bounded_number_of_lines(
    served: tuple[str, Hook], caplog: pytest.LogCaptureFixture
) -> None:
    base, hook = served
    caplog.set_level(logging.DEBUG, logger="agui")
    with health_watch(base) as statuses, httpx.Client(timeout=HANG) as client:
        answer = client.post(f"{base}/agent", content=big_body(), headers=ALLOWED)
    assert answer.status_code == 200
    assert "RUN_FINISHED" in answer.text
    assert hook.asked == [("start", "thread-big", "run-big")]
    warned = [r for r in body_records(caplog) if r.levelno >= logging.WARNING]
    assert len(warned) == MAX_WARNINGS + 1  # the first of a kind, then how many more
    more = MESSAGES * UNKNOWN - MAX_WARNINGS
    assert f"... and {more} more warnings of kind unknown_property" in warned[-1].getMessage()
    fields = {"thread": "thread-big", "run": "run-big"}
    assert all(fields.items() <= r.agui.items() for r in warned)  # type: ignore[attr-defined]
    assert all(r.getMessage().endswith("thread=thread-big run=run-big") for r in warned)
    assert statuses and set(statuses) == {200}


@pytest.mark.parametrize(
    ("body", "asked"),
    [
        (b'{"runId": "r1", "messages": []}', ("start", None, "r1")),
        (b'{"threadId": 5, "runId": "r1"}', ("start", None, "r1")),
        (b'["not", "an", "object"]', ("start", None, None)),
        (b'{"threadId": "t1", "runId": ', ("start", None, None)),
    ],
)
def test_a_body_without_usable_ids_is_asked_about_with_none(
    served: tuple[str, Hook], body: bytes, asked: tuple[str, Any, Any]
) -> None:
    """Refused: 403 without a decode; allowed: the 400 decoding gives, with its problems."""
    base, hook = served
    with httpx.Client(timeout=HANG) as client:
        refused = client.post(f"{base}/agent", content=body, headers=JSON)
        allowed = client.post(f"{base}/agent", content=body, headers=ALLOWED)
    assert refused.status_code == 403
    assert allowed.status_code == 400 and allowed.json()["problems"]
    assert hook.asked == [asked, asked]


def test_a_hundred_runs_with_a_null_state_log_no_warning(
    served: tuple[str, Hook], caplog: pytest.LogCaptureFixture
) -> None:
    base, _ = served
    caplog.set_level(logging.DEBUG, logger="agui")
    with httpx.Client(timeout=HANG) as client:
        for n in range(100):
            answer = client.post(f"{base}/agent", content=small_body(f"run-{n}"), headers=ALLOWED)
            assert answer.status_code == 200 and "RUN_FINISHED" in answer.text
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [], [r.getMessage() for r in warned]
    nulls = [r for r in body_records(caplog) if "removed null" in r.getMessage()]
    assert len(nulls) == 100 and {r.levelno for r in nulls} == {logging.DEBUG}
    assert nulls[7].getMessage().startswith("request body: /state:")
    assert nulls[7].getMessage().endswith("thread=thread-null run=run-7")


def test_the_upgrades_of_a_legacy_body_are_logged_with_the_same_cap(
    served: tuple[str, Hook], caplog: pytest.LogCaptureFixture
) -> None:
    """A pre-1.0 binary part with only an id cannot be upgraded (a line each) and is then
    removed by decoding (a warning each): both capped, the count of the rest said."""
    base, _ = served
    caplog.set_level(logging.DEBUG, logger="agui")
    parts = [{"type": "binary", "mimeType": "image/png", "id": f"f{n}"} for n in range(30)]
    value = orjson.loads(small_body("run-legacy"))
    value["messages"][0]["content"] = [{"type": "text", "text": "hi"}, *parts]
    with httpx.Client(timeout=HANG) as client:
        answer = client.post(f"{base}/agent", content=orjson.dumps(value), headers=ALLOWED)
    assert answer.status_code == 200
    lines = [r.getMessage() for r in body_records(caplog) if r.levelno >= logging.WARNING]
    upgrades = [line for line in lines if "onverted" in line or "more upgrades" in line]
    assert len(upgrades) == MAX_WARNINGS + 1
    assert "... and 11 more upgrades: agent=" in upgrades[-1]  # 31: the notice, then 30 parts
    assert len(lines) == 2 * (MAX_WARNINGS + 1)  # and the 30 removals: 20, then the count


# ── the decoder's cap, without a server ───────────────────────────────────────────────────────


def test_tolerant_decoding_lists_at_most_max_warnings_of_a_kind() -> None:
    value = orjson.loads(small_body("r1"))
    value["messages"][0].update({f"u{i}": 0 for i in range(MAX_WARNINGS + 5)})
    value["messages"][0]["name"] = None
    warnings: list[agui.Problem] = []
    agui.decode(orjson.dumps(value), agui.RunAgentInput, warnings=warnings)
    unknown = [w for w in warnings if w.kind == "unknown_property"]
    assert len(unknown) == MAX_WARNINGS + 1
    assert unknown[-1] == agui.Problem(
        "", "unknown_property", "... and 5 more warnings of kind unknown_property, not listed"
    )
    assert unknown[0].pointer == "/messages/0/u0"
    # another kind is listed on its own count: the unknown members do not crowd it out
    nulls = sorted(w.pointer for w in warnings if w.kind == "null")
    assert nulls == ["/messages/0/name", "/state"]


def test_max_warnings_of_a_kind_are_listed_without_a_summary() -> None:
    value = orjson.loads(small_body("r1"))
    value["messages"][0].update({f"u{i}": 0 for i in range(MAX_WARNINGS)})
    warnings: list[agui.Problem] = []
    agui.decode(orjson.dumps(value), agui.RunAgentInput, warnings=warnings)
    assert len([w for w in warnings if w.kind == "unknown_property"]) == MAX_WARNINGS
    assert all(w.pointer for w in warnings)
