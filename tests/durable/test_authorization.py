"""Two principals, every endpoint, with and without a store, with the hook written the simple
way the docs show (who is this? a principal or None): nothing one principal started is readable
or stoppable by the other, and no answer tells whether another principal's id exists.

The attack these cases come from: Bob POSTs `{"threadId": "bob:t3", "runId": "alice-run3"}`
while Alice's run alice-run3 is going. Before principals scoped the ids, he got 409 (which told
him the id existed), was recorded as an owner by a hook that remembered who started what, and
could then read Alice's run (her input messages) and stop it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import agui

from .agents import paced
from .support import body, deltas, post, stream, wait_for

TOKENS = {"Bearer alice-token": "alice", "Bearer bob-token": "bob"}
ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}
NOBODY: dict[str, str] = {}


async def authorize(headers: Any, action: str, thread_id: Any, run_id: Any) -> str | None:
    """As docs/durable-runs.md writes it: who the caller is, nothing about ownership."""
    return TOKENS.get(headers.get("authorization", ""))


def _answer(base: str, method: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    response = httpx.request(method, base + path, headers=headers, timeout=30)
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text[:100]


@pytest.fixture
def durable(store_url: str, live: Callable[[Any], str]) -> str:
    return live(agui.AgentApp(paced, path="/agent", store=store_url, authorize=authorize))


@pytest.fixture
def alice_running(durable: str) -> Iterator[tuple[str, threading.Thread, list[Any]]]:
    """Alice's run alice-run3 on thread alice:t1, going for a few seconds, read by her."""
    frames: list[Any] = []

    def read() -> None:
        answer = post(
            f"{durable}/agent",
            body("alice-run3", "alice:t1", count=40, delay=0.1, text="alice's secret"),
            headers=ALICE,
        )
        frames.extend(answer.frames)

    reader = threading.Thread(target=read)
    reader.start()
    # going: its record exists (Alice's own resume answers)
    wait_for(
        lambda: (
            _answer(durable, "GET", "/agent/runs/alice-run3/events?after=x", ALICE)[0] in (400, 200)
        )
    )
    yield durable, reader, frames
    reader.join(60)  # hang bound


def _unknown(base: str, method: str, path: str, headers: dict[str, str], ident: str) -> Any:
    """The answer for `path` with `ident` replaced by an id nobody ever used, ids masked."""
    status, answer = _answer(base, method, path.replace(ident, "never-used-id"), headers)
    return status, json.loads(json.dumps(answer).replace("never-used-id", ident))


def test_another_principal_cannot_read_stop_or_detect_a_run(
    alice_running: tuple[str, threading.Thread, list[Any]],
) -> None:
    base, reader, frames = alice_running
    for method, path, ident in [
        ("GET", "/agent/runs/alice-run3/events", "alice-run3"),
        ("GET", "/agent/runs/alice-run3/events?after=1", "alice-run3"),
        ("POST", "/agent/runs/alice-run3/stop", "alice-run3"),
        ("GET", "/agent/threads/alice:t1/events", "alice:t1"),
        ("GET", "/agent/threads/alice:t1/events?history=full", "alice:t1"),
    ]:
        got = _answer(base, method, path, BOB)
        assert got[0] == 404, (path, got)
        assert got == _unknown(base, method, path, BOB, ident), path  # no existence oracle
    reader.join(60)  # hang bound
    assert frames[-1].type == "RUN_FINISHED", frames[-1]
    assert "outcome" not in frames[-1].event, "Bob's stop reached Alice's run"
    assert deltas(frames) == [f"{i}," for i in range(40)]


def test_the_same_ids_from_another_principal_are_another_run(
    alice_running: tuple[str, threading.Thread, list[Any]],
) -> None:
    """Bob's POST with Alice's run id and thread id starts a run of his own (no 409 to tell him
    hers exists), and neither sees the other's."""
    base, reader, _frames = alice_running
    bob = post(f"{base}/agent", body("alice-run3", "alice:t1", count=3, text="bob's"), headers=BOB)
    assert bob.status == 200, bob
    assert bob.frames[-1].type == "RUN_FINISHED" and deltas(bob.frames) == ["0,", "1,", "2,"]
    # Bob reads back his own run under that id: his input, not Alice's.
    mine = stream(f"{base}/agent/runs/alice-run3/events", headers=BOB).frames
    started = next(f.event for f in mine if f.type == "RUN_STARTED")
    assert started["input"]["messages"][-1]["content"] == "bob's"
    assert "alice's secret" not in json.dumps([f.event for f in mine])
    # Alice's resume still reads hers, whole, and her thread holds only her run.
    reader.join(60)  # hang bound
    hers = stream(f"{base}/agent/runs/alice-run3/events", headers=ALICE).frames
    started = next(f.event for f in hers if f.type == "RUN_STARTED")
    assert started["input"]["messages"][-1]["content"] == "alice's secret"
    assert deltas(hers) == [f"{i}," for i in range(40)]
    thread = stream(f"{base}/agent/threads/alice:t1/events?history=full", headers=ALICE).frames
    assert "bob's" not in json.dumps([f.event for f in thread])


def test_a_principal_stops_and_resumes_its_own_run(durable: str) -> None:
    frames: list[Any] = []
    reader = threading.Thread(
        target=lambda: frames.extend(
            post(
                f"{durable}/agent", body("r-own", "t-own", count=60, delay=0.1), headers=ALICE
            ).frames
        )
    )
    reader.start()
    wait_for(
        lambda: (
            len(frames) >= 3
            or _answer(durable, "GET", "/agent/runs/r-own/events?after=x", ALICE)[0] != 404
        )
    )
    status, answer = _answer(durable, "POST", "/agent/runs/r-own/stop", ALICE)
    assert status == 202 and answer["threadId"] == "t-own", answer
    reader.join(60)  # hang bound
    assert frames[-1].type == "RUN_FINISHED"
    assert frames[-1].event["outcome"] == {"type": "cancelled"}
    resumed = stream(f"{durable}/agent/runs/r-own/events", headers=ALICE).frames
    assert resumed[0].type == "RUN_STARTED" and resumed[-1].event == frames[-1].event


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/agent"),
        ("GET", "/agent/runs/r1/events"),
        ("POST", "/agent/runs/r1/stop"),
        ("GET", "/agent/threads/t1/events"),
        ("GET", "/agent/capabilities"),
    ],
)
def test_no_principal_no_answer(durable: str, method: str, path: str) -> None:
    content = body("r1", "t1") if path == "/agent" else None
    response = httpx.request(
        method, durable + path, content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 403, response.text
    assert response.json()["error"].startswith("not allowed to ")


def test_without_a_store_the_hook_is_asked_too(live: Callable[[Any], str]) -> None:
    """Before, `authorize=` was accepted without a store and never asked: a deny-all hook served
    full runs."""
    asked: list[tuple[str, Any, Any]] = []

    async def deny_all(headers: Any, action: Any, thread_id: Any, run_id: Any) -> None:
        asked.append((action, thread_id, run_id))
        return None

    base = live(agui.AgentApp(paced, path="/agent", authorize=deny_all, console=True))
    answer = post(f"{base}/agent", body("r1", "t1", count=3))
    assert answer.status == 403 and answer.frames == []
    assert httpx.get(f"{base}/agent/capabilities").status_code == 403
    assert httpx.get(f"{base}/agent/console").status_code == 403
    assert asked == [("start", "t1", "r1"), ("capabilities", None, None), ("console", None, None)]
    allowed = live(agui.AgentApp(paced, path="/agent", authorize=authorize))
    assert post(f"{allowed}/agent", body("r1", "t1", count=2), headers=BOB).frames[-1].type == (
        "RUN_FINISHED"
    )
    assert post(f"{allowed}/agent", body("r1", "t1", count=2)).status == 403


def test_true_is_an_anonymous_namespace_apart_from_named_ones(
    store_url: str, live: Callable[[Any], str]
) -> None:
    """A hook written before principals returns True: allowed, in a namespace of its own, so an
    anonymous caller cannot reach a named principal's runs by guessing the store's keys."""

    async def mixed(headers: Any, action: Any, thread_id: Any, run_id: Any) -> str | bool | None:
        return TOKENS.get(headers.get("authorization", "")) or True

    base = live(agui.AgentApp(paced, path="/agent", store=store_url, authorize=mixed))
    assert post(f"{base}/agent", body("r1", "t1", count=2), headers=ALICE).status == 200
    assert _answer(base, "GET", "/agent/runs/r1/events", NOBODY)[0] == 404
    import hashlib

    key = hashlib.sha256(b"alice").hexdigest()[:32] + "/r1"
    assert _answer(base, "GET", f"/agent/runs/{key.replace('/', '%2F')}/events", NOBODY)[0] == 404
    anonymous = post(f"{base}/agent", body("r2", "t2", count=2))
    assert anonymous.status == 200 and anonymous.frames[-1].type == "RUN_FINISHED"
    assert _answer(base, "GET", "/agent/runs/r2/events", ALICE)[0] == 404


def test_a_hook_that_answers_nonsense_is_a_500_and_logged(
    live: Callable[[Any], str], caplog: pytest.LogCaptureFixture
) -> None:
    async def odd(headers: Any, action: Any, thread_id: Any, run_id: Any) -> Any:
        return 42

    base = live(agui.AgentApp(paced, path="/agent", store="memory://", authorize=odd))
    answer = post(f"{base}/agent", body("r1", "t1"))
    assert answer.status == 500
    assert json.loads(answer.body) == {"error": "the authorization check failed"}
    assert any("a principal is a non-empty string" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("thread_id", "run_id", "pointers"),
    [("", "r1", ["/threadId"]), ("t1", "", ["/runId"]), ("", "", ["/threadId", "/runId"])],
)
def test_a_durable_run_needs_ids(
    live: Callable[[Any], str], thread_id: str, run_id: str, pointers: list[str]
) -> None:
    """An empty id cannot be resumed, connected to or stopped: refused before it is stored."""
    base = live(agui.AgentApp(paced, path="/agent", store="memory://"))
    answer = post(f"{base}/agent", body(run_id, thread_id))
    assert answer.status == 400
    problems = json.loads(answer.body)["problems"]
    assert [(p["pointer"], p["kind"]) for p in problems] == [(p, "empty") for p in pointers]
    plain = live(agui.AgentApp(paced, path="/agent"))  # without a store nothing is kept: served
    assert (
        post(f"{plain}/agent", body(run_id, thread_id, count=1)).frames[-1].type == "RUN_FINISHED"
    )
