"""The thread API of a server with a store (agui.http.threads), on every backend, over real
uvicorn, with two principals: GET {path}/threads (newest first, by page, bounded), GET
{path}/threads/{id} (connect's compact history), DELETE {path}/threads/{id} (a live run stopped
first, then every stored event removed: 404 everywhere afterwards). Principal A never sees or
deletes B's threads, and B's id answers A exactly as an id never used."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import agui

from .agents import paced
from .support import body, post, stream, wait_for

TOKENS = {"Bearer alice-token": "alice", "Bearer bob-token": "bob"}
ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}
ASKED: list[tuple[str, Any, Any]] = []


async def authorize(headers: Any, action: str, thread_id: Any, run_id: Any) -> str | None:
    ASKED.append((action, thread_id, run_id))
    return TOKENS.get(headers.get("authorization", ""))


def call(base: str, method: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    response = httpx.request(method, base + path, headers=headers, timeout=60)
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text[:200]


@pytest.fixture
def server(store_url: str, live: Callable[[Any], str]) -> str:
    return live(agui.AgentApp(paced, path="/agent", store=store_url, authorize=authorize))


def run(base: str, run_id: str, thread_id: str, who: dict[str, str], **options: Any) -> None:
    answer = post(f"{base}/agent", body(run_id, thread_id, **options), headers=who)
    assert answer.status == 200 and answer.frames[-1].type == "RUN_FINISHED", answer


def test_each_principal_lists_its_own_threads_newest_first(server: str) -> None:
    run(server, "a1", "t-old", ALICE, count=2)
    run(server, "a2", "t-new", ALICE, count=2, text="alice's newest")
    run(server, "b1", "t-bob", BOB, count=2)
    status, page = call(server, "GET", "/agent/threads", ALICE)
    assert status == 200, page
    assert [t["threadId"] for t in page["threads"]] == ["t-new", "t-old"]
    assert "next" not in page
    newest = page["threads"][0]
    assert newest["runs"] == 1
    assert newest["lastRun"]["runId"] == "a2"
    assert newest["lastRun"]["status"] == "finished"
    assert newest["lastRun"]["outcome"] == "success"
    assert newest["updatedAt"] == newest["lastRun"]["finishedAt"]
    assert newest["lastRun"]["startedAt"] <= newest["lastRun"]["finishedAt"]
    status, page = call(server, "GET", "/agent/threads", BOB)
    assert [t["threadId"] for t in page["threads"]] == ["t-bob"]
    # A thread's new run puts it first.
    run(server, "a3", "t-old", ALICE, count=1)
    _, page = call(server, "GET", "/agent/threads", ALICE)
    assert [t["threadId"] for t in page["threads"]] == ["t-old", "t-new"]
    assert page["threads"][0]["runs"] == 2


def test_pages_and_their_bounds(server: str) -> None:
    for n in range(5):
        run(server, f"r{n}", f"t{n}", ALICE, count=1)
    seen: list[str] = []
    path = "/agent/threads?limit=2"
    pages = 0
    while True:
        status, page = call(server, "GET", path, ALICE)
        assert status == 200, page
        pages += 1
        seen += [t["threadId"] for t in page["threads"]]
        if "next" not in page:
            break
        path = f"/agent/threads?limit=2&before={page['next']}"
    assert seen == ["t4", "t3", "t2", "t1", "t0"]
    assert pages == 3
    for query, pointer in [
        ("limit=0", "/limit"),
        ("limit=101", "/limit"),
        ("limit=ten", "/limit"),
        ("limit=-1", "/limit"),
        ("before=abc", "/before"),
        ("before=0", "/before"),
    ]:
        status, answer = call(server, "GET", f"/agent/threads?{query}", ALICE)
        assert status == 400, (query, answer)
        assert [p["pointer"] for p in answer["problems"]] == [pointer], answer
        assert pointer[1:] in answer["problems"][0]["message"]
    status, answer = call(server, "GET", "/agent/threads?limit=100", ALICE)
    assert status == 200 and len(answer["threads"]) == 5


def test_reading_a_thread_gives_connects_history(server: str) -> None:
    run(server, "a1", "t1", ALICE, count=3, text="first")
    history = [
        {"id": "user-a1", "role": "user", "content": "first"},
        {"id": "a1:m", "role": "assistant", "content": "0,1,2,"},
    ]
    run(server, "a2", "t1", ALICE, count=2, text="second", history=history)
    status, thread = call(server, "GET", "/agent/threads/t1", ALICE)
    assert status == 200, thread
    assert thread["threadId"] == "t1"
    assert [(m["role"], m["content"]) for m in thread["messages"]] == [
        ("user", "first"),
        ("assistant", "0,1,2,"),
        ("user", "second"),
        ("assistant", "0,1,"),
    ]
    assert [(r["runId"], r["status"], r["outcome"]) for r in thread["runs"]] == [
        ("a1", "finished", "success"),
        ("a2", "finished", "success"),
    ]
    # The same messages connect's compact history gives.
    frames = stream(f"{server}/agent/threads/t1/events", headers=ALICE).frames
    snapshot = next(f.event for f in frames if f.type == "MESSAGES_SNAPSHOT")
    assert snapshot["messages"] == thread["messages"]


def test_another_principals_thread_is_unknown_exactly_as_a_never_used_id(server: str) -> None:
    run(server, "b1", "bob-thread", BOB, count=2, text="bob's secret")
    for method, path in [
        ("GET", "/agent/threads/bob-thread"),
        ("DELETE", "/agent/threads/bob-thread"),
    ]:
        got = call(server, method, path, ALICE)
        never = call(server, method, path.replace("bob-thread", "never-used"), ALICE)
        assert got[0] == 404, got
        assert got == (
            never[0],
            json.loads(json.dumps(never[1]).replace("never-used", "bob-thread")),
        )
        assert "bob's secret" not in json.dumps(got)
    # Alice's DELETE removed nothing of Bob's.
    status, thread = call(server, "GET", "/agent/threads/bob-thread", BOB)
    assert status == 200 and thread["messages"][0]["content"] == "bob's secret"
    _, page = call(server, "GET", "/agent/threads", BOB)
    assert [t["threadId"] for t in page["threads"]] == ["bob-thread"]


def test_a_deleted_thread_404s_everywhere(server: str) -> None:
    run(server, "a1", "t1", ALICE, count=2)
    run(server, "a2", "t1", ALICE, count=2)
    run(server, "a3", "t2", ALICE, count=2)
    status, answer = call(server, "DELETE", "/agent/threads/t1", ALICE)
    assert (status, answer) == (200, {"threadId": "t1", "deletedRuns": 2, "stoppedRuns": 0})
    for method, path in [
        ("GET", "/agent/threads/t1"),
        ("DELETE", "/agent/threads/t1"),
        ("GET", "/agent/threads/t1/events"),
        ("GET", "/agent/runs/a1/events"),
        ("GET", "/agent/runs/a2/events"),
        ("POST", "/agent/runs/a2/stop"),
    ]:
        got = call(server, method, path, ALICE)
        assert got[0] == 404, (path, got)
    _, page = call(server, "GET", "/agent/threads", ALICE)
    assert [t["threadId"] for t in page["threads"]] == ["t2"]
    assert call(server, "GET", "/agent/runs/a3/events", ALICE)[0] == 200


def test_deleting_a_thread_with_a_live_run_stops_it_first(server: str) -> None:
    frames: list[Any] = []

    def follow() -> None:
        answer = post(f"{server}/agent", body("live", "t1", count=400, delay=0.05), headers=ALICE)
        frames.extend(answer.frames)

    reader = threading.Thread(target=follow)
    reader.start()
    wait_for(lambda: len(frames) > 0 or call(server, "GET", "/agent/threads", ALICE)[1]["threads"])
    _, page = call(server, "GET", "/agent/threads", ALICE)
    assert page["threads"][0]["lastRun"]["status"] == "running"
    assert "outcome" not in page["threads"][0]["lastRun"]
    # a second follower: a resume of the run from its start
    rejoined: list[Any] = []
    reading = threading.Event()

    def rejoin_run() -> None:
        decoder = agui.SSEDecoder()
        with httpx.stream(
            "GET", f"{server}/agent/runs/live/events", headers=ALICE, timeout=60
        ) as response:
            for chunk in response.iter_raw():
                for message in decoder.feed(chunk):
                    rejoined.append(json.loads(message.data))
                    reading.set()

    rejoin = threading.Thread(target=rejoin_run)
    rejoin.start()
    assert reading.wait(30)  # hang bound: it follows the run before the DELETE
    status, answer = call(server, "DELETE", "/agent/threads/t1", ALICE)
    assert (status, answer) == (200, {"threadId": "t1", "deletedRuns": 1, "stoppedRuns": 1})
    reader.join(60)  # hang bound
    rejoin.join(60)  # hang bound
    for got in ([f.event for f in frames], rejoined):
        assert got, "a follower got nothing"
        last = got[-1]
        assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "cancelled", last
    assert call(server, "GET", "/agent/runs/live/events", ALICE)[0] == 404
    assert call(server, "GET", "/agent/threads/t1", ALICE)[0] == 404


def test_the_hook_is_asked_with_the_new_actions(server: str) -> None:
    run(server, "a1", "t1", ALICE, count=1)
    ASKED.clear()
    call(server, "GET", "/agent/threads", ALICE)
    call(server, "GET", "/agent/threads/t1", ALICE)
    call(server, "DELETE", "/agent/threads/t1", ALICE)
    assert ASKED == [("list", None, None), ("connect", "t1", None), ("delete", "t1", None)]
    for method, path in [
        ("GET", "/agent/threads"),
        ("GET", "/agent/threads/t1"),
        ("DELETE", "/agent/threads/t1"),
    ]:
        assert call(server, method, path, {})[0] == 403, path


def test_wrong_methods_are_refused(server: str) -> None:
    status, _ = call(server, "POST", "/agent/threads", ALICE)
    assert status == 405
    response = httpx.put(f"{server}/agent/threads/t1", headers=ALICE, timeout=30)
    assert response.status_code == 405 and response.headers["allow"] == "GET, DELETE"


def test_a_thread_id_with_a_slash_is_one_id(store_url: str, live: Callable[[Any], str]) -> None:
    base = live(agui.AgentApp(paced, path="/agent", store=store_url))
    run(base, "r1", "a/b", {}, count=1)
    _, page = call(base, "GET", "/agent/threads", {})
    assert [t["threadId"] for t in page["threads"]] == ["a/b"]
    assert call(base, "GET", "/agent/threads/a%2Fb", {})[0] == 200
    assert call(base, "DELETE", "/agent/threads/a%2Fb", {})[1]["deletedRuns"] == 1


def _digest(name: str) -> str:
    """The namespace prefix of a principal (agui.http.access): what the store's keys hold."""
    import hashlib

    return hashlib.sha256(name.encode()).hexdigest()[:32] + "/"


# Not memory: nothing outside the process (the 404s are tested above)
@pytest.mark.parametrize("store_url", ["sqlite", "redis"], indirect=True)
def test_a_deleted_thread_leaves_nothing_in_the_store(
    store_url: str, live: Callable[[Any], str]
) -> None:
    """Through the HTTP API, on the store itself: SQLite's rows read with sqlite3, Redis' keys
    and members with a plain client. Nothing mentions the deleted thread's runs or its secret;
    Bob's thread with the same ids is all there."""
    base = live(agui.AgentApp(paced, path="/agent", store=store_url, authorize=authorize))
    run(base, "gone-run-1", "gone-thread", ALICE, count=3, text="alice's erasable secret")
    run(base, "gone-run-2", "gone-thread", ALICE, count=3, text="alice's erasable secret")
    run(base, "gone-run-1", "gone-thread", BOB, count=1, text="bob's")
    alice = _digest("alice")

    def mentions() -> list[str]:
        if store_url.startswith("sqlite"):
            import sqlite3

            path = store_url.split("sqlite:///", 1)[1]
            with sqlite3.connect(path) as db:
                tables = [
                    t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
                ]
                rows = [repr(row) for t in tables for row in db.execute(f"SELECT * FROM {t}")]
            return [row for row in rows if alice in row or "erasable" in row]
        import redis

        parts = httpx.URL(store_url)
        prefix = store_url.split("prefix=", 1)[1]
        client = redis.Redis(host=parts.host, port=parts.port or 6379)
        found: list[str] = []
        try:
            for key in client.scan_iter(match=f"{prefix}*"):
                kind = client.type(key).decode()
                values: list[bytes] = [key]
                if kind == "hash":
                    values += client.hgetall(key).values()
                elif kind == "zset":
                    values += client.zrange(key, 0, -1)
                elif kind == "set":
                    values += client.smembers(key)
                elif kind == "stream":
                    values += [v for _, fields in client.xrange(key) for v in fields.values()]
                if any(alice.encode() in v or b"erasable" in v for v in values):
                    found.append(key.decode())
        finally:
            client.close()
        return found

    assert mentions()
    status, answer = call(base, "DELETE", "/agent/threads/gone-thread", ALICE)
    assert (status, answer["deletedRuns"]) == (200, 2), answer
    assert mentions() == []
    status, thread = call(base, "GET", "/agent/threads/gone-thread", BOB)
    assert status == 200 and thread["messages"][0]["content"] == "bob's"


# Not memory: one process, no other worker
@pytest.mark.parametrize("store_url", ["sqlite", "redis"], indirect=True)
def test_a_run_on_another_worker_is_stopped_before_the_delete(
    store_url: str, live: Callable[[Any], str]
) -> None:
    """Two workers share the store; the run executes on one, the DELETE goes to the other: the
    run ends cancelled for its client, then the thread is gone from both."""
    one = live(agui.AgentApp(paced, path="/agent", store=store_url, authorize=authorize))
    two = live(agui.AgentApp(paced, path="/agent", store=store_url, authorize=authorize))
    frames: list[Any] = []

    def follow() -> None:
        answer = post(f"{one}/agent", body("far", "t1", count=400, delay=0.05), headers=ALICE)
        frames.extend(answer.frames)

    reader = threading.Thread(target=follow)
    reader.start()
    wait_for(lambda: call(two, "GET", "/agent/threads", ALICE)[1]["threads"])
    status, answer = call(two, "DELETE", "/agent/threads/t1", ALICE)
    assert (status, answer) == (200, {"threadId": "t1", "deletedRuns": 1, "stoppedRuns": 1})
    reader.join(60)  # hang bound
    assert frames and frames[-1].type == "RUN_FINISHED", frames[-1:]
    assert frames[-1].event["outcome"]["type"] == "cancelled"
    for base in (one, two):
        assert call(base, "GET", "/agent/threads/t1", ALICE)[0] == 404
        assert call(base, "GET", "/agent/runs/far/events", ALICE)[0] == 404


def test_two_deletes_at_once_delete_once(server: str) -> None:
    """Of two DELETEs racing for a thread with a live run, one deletes it (200), the other
    answers as for an unknown thread (404), whichever comes first."""
    threading.Thread(
        target=post,
        args=(f"{server}/agent", body("live", "t1", count=400, delay=0.05)),
        kwargs={"headers": ALICE},
        daemon=True,
    ).start()
    wait_for(lambda: call(server, "GET", "/agent/threads", ALICE)[1]["threads"])
    answers: list[tuple[int, Any]] = []
    racers = [
        threading.Thread(
            target=lambda: answers.append(call(server, "DELETE", "/agent/threads/t1", ALICE))
        )
        for _ in range(2)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)  # hang bound
    assert sorted(status for status, _ in answers) == [200, 404], answers
    assert call(server, "GET", "/agent/threads/t1", ALICE)[0] == 404
