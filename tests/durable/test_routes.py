"""A server with a store, one worker (uvicorn on loopback, the memory or SQLite log): the routes
and their refusals, detached runs, connect, stop, authorize, the limits, protobuf, lost runs."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui.http.durable import HISTORY_RUN_SUFFIX, RUN_LOST
from agui.store import RunRecord, open_log
from agui.store.memory import MemoryLog
from agui.wire.proto import PROTO_MEDIA_TYPE, ProtoFrameDecoder, decode_proto
from tests.conftest import live_server

from .agents import paced
from .support import JSON, CutAfter, Frame, Tail, body, deltas, post, stream, types, wait_for

Live = Callable[[Any], str]


def app(**options: Any) -> agui.AgentApp:
    return agui.AgentApp(paced, path="/agent", **({"store": "memory://"} | options))


def error_of(answer: Any, status: int) -> str:
    assert answer.status == status, answer
    assert answer.headers["content-type"] == "application/json"
    assert not answer.frames
    error: str = json.loads(answer.body)["error"]
    return error


# ── a run detached from its request ───────────────────────────────────────────────────────────


def test_the_post_streams_the_run_with_cursors(live: Live) -> None:
    url = live(app())
    answer = post(f"{url}/agent", body("r1", count=5))
    assert answer.status == 200
    assert answer.headers["content-type"] == "text/event-stream"
    assert types(answer.frames) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * 5,
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    ids = [f.id for f in answer.frames]
    assert all(ids) and len(set(ids)) == len(ids)
    assert answer.frames[0].event["runId"] == "r1"


def test_the_client_leaving_does_not_stop_the_run(live: Live) -> None:
    url = live(app())
    first = post(f"{url}/agent", body("r1", count=20, delay=0.05), stop_after=2)
    assert len(first.frames) == 2
    whole = stream(f"{url}/agent/runs/r1/events")  # follows the run to its end
    assert deltas(whole.frames) == [f"{i}," for i in range(20)]
    assert whole.frames[-1].type == "RUN_FINISHED"
    assert whole.frames[:2] == first.frames


def test_a_cut_connection_is_resumed_where_it_broke(live: Live) -> None:
    """The fault hook (support.CutAfter) closes the connection after 7 events; the client resumes
    after the last id it got."""
    url = live(CutAfter(app(), events=7))
    cut = post(f"{url}/agent", body("r1", count=30, delay=0.01))
    assert len(cut.frames) == 7 and cut.broken
    rest = stream(f"{url}/agent/runs/r1/events", headers={"last-event-id": cut.frames[-1].id or ""})
    assert deltas(cut.frames + rest.frames) == [f"{i}," for i in range(30)]
    assert rest.frames[-1].type == "RUN_FINISHED"


# ── connect ───────────────────────────────────────────────────────────────────────────────────


def assistant(run_id: str, count: int) -> dict[str, Any]:
    return {
        "id": f"{run_id}:m",
        "role": "assistant",
        "content": "".join(f"{i}," for i in range(count)),
    }


def user(run_id: str) -> dict[str, Any]:
    return {"id": f"user-{run_id}", "role": "user", "content": "hi"}


def hydrate(frames: list[Frame]) -> agui.Reducer:
    """What a client makes of a stream: the whole pipeline (chunks, verification, reducer)."""
    pipeline = agui.Pipeline()
    pipeline.run([json.dumps(f.event).encode() for f in frames])
    assert not pipeline.warnings, pipeline.warnings
    return pipeline.reducer


def test_connect_gives_the_compacted_history_then_the_live_run(live: Live) -> None:
    url = live(app())
    post(f"{url}/agent", body("r1", count=3, state=True))
    history = [user("r1"), assistant("r1", 3)]
    post(f"{url}/agent", body("r2", count=4, history=history))
    live_run = Tail(
        "POST",
        f"{url}/agent",
        body("r3", count=30, delay=0.05, history=[*history, user("r2"), assistant("r2", 4)]),
    )
    wait_for(lambda: len(live_run.frames) >= 5)
    connected = stream(f"{url}/agent/threads/t1/events")
    assert connected.status == 200
    frames = connected.frames
    assert types(frames[:4]) == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert frames[0].event == {
        "type": "RUN_STARTED",
        "threadId": "t1",
        "runId": "t1" + HISTORY_RUN_SUFFIX,
    }
    assert all(f.id is None for f in frames[:4])  # the history has no cursors
    assert frames[1].event["messages"] == [
        user("r1"),
        assistant("r1", 3),
        user("r2"),
        assistant("r2", 4),
        user("r3"),
    ]
    # r1 set the state; r2's and r3's inputs sent {} back
    assert frames[2].event["snapshot"] == {}
    # then the live run, from its start, with its cursors, to its end
    rest = frames[4:]
    assert rest == live_run.wait()
    reducer = hydrate(frames)
    assert [m.id for m in reducer.messages] == [
        "user-r1",
        "r1:m",
        "user-r2",
        "r2:m",
        "user-r3",
        "r3:m",
    ]
    assert reducer.messages[-1].content == "".join(f"{i}," for i in range(30))


def test_connect_keeps_the_last_state_and_outcome(live: Live) -> None:
    url = live(app())
    post(f"{url}/agent", body("r1", count=2, state=True))
    frames = stream(f"{url}/agent/threads/t1/events").frames
    assert frames[2].event["snapshot"] == {"run": "r1", "count": 2}
    assert types(frames) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    reducer = hydrate(frames)
    assert reducer.state == {"run": "r1", "count": 2}
    assert [m.id for m in reducer.messages] == ["user-r1", "r1:m"]


def test_history_full_replays_every_stored_event(live: Live) -> None:
    url = live(app())
    one = post(f"{url}/agent", body("r1", count=3)).frames
    two = post(f"{url}/agent", body("r2", count=2, history=[user("r1"), assistant("r1", 3)])).frames
    full = stream(f"{url}/agent/threads/t1/events?history=full")
    assert [f.event for f in full.frames] == [f.event for f in one + two]
    assert all(f.id is None for f in full.frames)  # finished runs: replayed without cursors
    # each stored RUN_STARTED carries its input, so the user's messages are in the replay too
    assert one[0].event["input"]["runId"] == "r1"
    assert [m.id for m in hydrate(full.frames).messages] == ["user-r1", "r1:m", "user-r2", "r2:m"]


def test_connect_refusals(live: Live) -> None:
    url = live(app())
    error_of(stream(f"{url}/agent/threads/nobody/events"), 404)
    post(f"{url}/agent", body("r1", count=1))
    error_of(stream(f"{url}/agent/threads/t1/events?history=some"), 400)


# ── stop ──────────────────────────────────────────────────────────────────────────────────────


def test_stop_ends_the_run_cancelled_with_what_is_open_closed(live: Live) -> None:
    url = live(app())
    tail = Tail("POST", f"{url}/agent", body("r1", count=1000, delay=0.02))
    wait_for(lambda: len(tail.frames) >= 5)
    asked = time.monotonic()
    stopped = httpx.post(f"{url}/agent/runs/r1/stop")
    assert stopped.status_code == 202
    assert stopped.json() == {"runId": "r1", "threadId": "t1", "status": "stopping"}
    frames = tail.wait()
    assert tail.times[-1] - asked < 1.0
    assert types(frames)[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert frames[-1].event["outcome"] == {"type": "cancelled"}
    assert frames[-2].event["messageId"] == "r1:m"
    assert stream(f"{url}/agent/runs/r1/events").frames == frames  # as stored
    hydrate(frames)
    # stopping it again: it has ended
    assert error_of_response(httpx.post(f"{url}/agent/runs/r1/stop"), 409)
    assert error_of_response(httpx.post(f"{url}/agent/runs/nope/stop"), 404)


def error_of_response(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error: str = response.json()["error"]
    return error


# ── one run per thread, run ids ───────────────────────────────────────────────────────────────


def test_a_second_run_on_a_busy_thread_is_409(live: Live) -> None:
    url = live(app())
    tail = Tail("POST", f"{url}/agent", body("r1", count=40, delay=0.02))
    wait_for(lambda: tail.frames)
    error = error_of(post(f"{url}/agent", body("r2", count=1)), 409)
    assert "t1" in error
    assert post(f"{url}/agent", body("r3", "t2", count=1)).status == 200  # another thread
    tail.wait()
    assert post(f"{url}/agent", body("r2", count=1)).status == 200  # once the first ended
    error_of(post(f"{url}/agent", body("r2", "t3", count=1)), 409)  # a run id used already


def test_exclusive_threads_off_lets_runs_share_a_thread(live: Live) -> None:
    url = live(app(exclusive_threads=False))
    tail = Tail("POST", f"{url}/agent", body("r1", count=40, delay=0.02))
    wait_for(lambda: tail.frames)
    assert post(f"{url}/agent", body("r2", count=1)).status == 200
    tail.wait()


# ── authorize ─────────────────────────────────────────────────────────────────────────────────


class CountingLog:
    """A memory log that records which of its methods were called."""

    def __init__(self) -> None:
        self.log = MemoryLog()
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.log, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if name not in ("expired", "prune"):  # the sweep's
                self.calls.append(name)
            return method(*args, **kwargs)

        return call


@pytest.mark.parametrize("action", ["start", "resume", "connect", "stop"])
def test_authorize_refuses_each_endpoint_before_reading_the_log(action: str, live: Live) -> None:
    asked: list[tuple[Any, ...]] = []

    async def authorize(headers: Any, what: str, thread_id: Any, run_id: Any) -> bool:
        asked.append((headers.get("authorization"), what, thread_id, run_id))
        return what != action

    counting = CountingLog()
    url = live(app(store=counting, authorize=authorize))
    assert post(f"{url}/agent", body("r0", count=1)).status == 200 or action == "start"
    counting.calls.clear()
    asked.clear()
    auth = {"authorization": "Bearer x"}
    answer: Any
    if action == "start":
        answer = post(f"{url}/agent", body("r1", count=1), headers=auth)
    elif action == "resume":
        answer = stream(f"{url}/agent/runs/r0/events", headers=auth)
    elif action == "connect":
        answer = stream(f"{url}/agent/threads/t1/events", headers=auth)
    else:
        response = httpx.post(f"{url}/agent/runs/r0/stop", headers=auth)
        answer = type(
            "A",
            (),
            {
                "status": response.status_code,
                "headers": response.headers,
                "frames": [],
                "body": response.content,
            },
        )
    assert "not allowed" in error_of(answer, 403)
    assert counting.calls == []
    expected = {
        "start": ("t1", "r1"),
        "resume": (None, "r0"),
        "connect": ("t1", None),
        "stop": (None, "r0"),
    }[action]
    assert asked == [("Bearer x", action, *expected)]


def test_authorize_allowing_serves_every_endpoint(live: Live) -> None:
    seen: list[str] = []

    async def authorize(headers: Any, action: str, thread_id: Any, run_id: Any) -> bool:
        seen.append(action)
        return True

    url = live(app(authorize=authorize))
    assert post(f"{url}/agent", body("r1", count=1)).status == 200
    assert stream(f"{url}/agent/runs/r1/events").status == 200
    assert stream(f"{url}/agent/threads/t1/events").status == 200
    assert httpx.post(f"{url}/agent/runs/r1/stop").status_code == 409
    assert seen == ["start", "resume", "connect", "stop"]


# ── refusals ──────────────────────────────────────────────────────────────────────────────────


def test_unknown_runs_cursors_paths_and_methods(live: Live) -> None:
    url = live(app())
    error_of(stream(f"{url}/agent/runs/nope/events"), 404)
    error_of(stream(f"{url}/agent/runs/nope/events", headers={"last-event-id": "3"}), 404)
    post(f"{url}/agent", body("r1", count=2))
    assert "cursor" in error_of(stream(f"{url}/agent/runs/r1/events?after=999"), 400)
    error_of(stream(f"{url}/agent/runs/r1/events", headers={"last-event-id": "x y"}), 400)
    error_of(stream(f"{url}/other/runs/r1/events"), 404)
    error_of(stream(f"{url}/agent/runs/r1/other"), 404)
    error_of(stream(f"{url}/nothing"), 404)
    answer = stream(f"{url}/agent")
    assert error_of(answer, 405) and answer.headers["allow"] == "POST"
    answer = post(f"{url}/agent/runs/r1/events", b"{}")
    assert error_of(answer, 405) and answer.headers["allow"] == "GET"
    response = httpx.get(f"{url}/agent/runs/r1/stop")
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    # an input the agent cannot take is refused as without a store
    error_of(post(f"{url}/agent", b'{"threadId": 1}'), 400)


def test_ids_are_percent_decoded(live: Live) -> None:
    url = live(agui.AgentApp(paced, store="memory://"))  # path None: any prefix
    post(f"{url}/any", body("a/b c", "t/1", count=1))
    answer = stream(f"{url}/any/runs/a%2Fb%20c/events")
    assert answer.status == 200 and answer.frames[0].event["runId"] == "a/b c"
    assert stream(f"{url}/x/threads/t%2F1/events").status == 200


# ── the limits ────────────────────────────────────────────────────────────────────────────────


def test_past_the_cap_a_run_gets_503_with_retry_after(live: Live) -> None:
    url = live(app(max_active_runs=2))
    tails = [
        Tail("POST", f"{url}/agent", body(f"r{i}", f"t{i}", count=20, delay=0.05)) for i in (1, 2)
    ]
    wait_for(lambda: all(t.frames for t in tails))
    refused = post(f"{url}/agent", body("r3", "t3", count=1))
    assert "retry later" in error_of(refused, 503)
    assert refused.headers["retry-after"] == "1"
    for tail in tails:
        tail.wait()
    assert post(f"{url}/agent", body("r3", "t3", count=1)).status == 200
    # the refused run was never started
    error_of(stream(f"{url}/agent/threads/t9/events"), 404)


def test_past_the_cap_without_a_store(live: Live) -> None:
    url = live(agui.AgentApp(paced, path="/agent", max_active_runs=1))
    tail = Tail("POST", f"{url}/agent", body("r1", count=20, delay=0.05))
    wait_for(lambda: tail.frames)
    refused = post(f"{url}/agent", body("r2", count=1))
    error_of(refused, 503)
    assert refused.headers["retry-after"] == "1"
    tail.wait()


def test_max_run_seconds_stops_a_detached_run(live: Live) -> None:
    url = live(app(max_run_seconds=0.3))
    first = post(f"{url}/agent", body("r1", count=1000, delay=0.02), stop_after=1)
    assert first.frames[0].type == "RUN_STARTED"
    frames = stream(f"{url}/agent/runs/r1/events").frames
    assert frames[-1].event["type"] == "RUN_ERROR"
    assert frames[-1].event["code"] == "TIMEOUT"


@pytest.mark.parametrize("store", [None, "memory://"])
def test_a_trickled_body_gets_408_and_the_connection_closed(store: Any, live: Live) -> None:
    url = live(agui.AgentApp(paced, path="/agent", store=store, body_timeout=0.5))
    host, port = url.removeprefix("http://").split(":")
    payload = body("r1", count=1)
    started = time.monotonic()  # before the server can start its clock
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            b"POST /agent HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(payload)}\r\n\r\n".encode()
        )
        answer = b""
        sent = 0
        sock.settimeout(0.1)
        for byte in payload:  # one byte every 0.1 s: the body would take many seconds
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sent += 1
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            answer += chunk
            if b"\r\n\r\n" in answer:
                break
        elapsed = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        # The answer came while the body was still arriving (the server did not wait for all of
        # it), and not before body_timeout (a lower bound: slowness cannot break it).
        assert sent < len(payload), (sent, len(payload))
        assert 0.4 < elapsed
        assert b"connection: close" in answer.lower()
        sock.settimeout(5)
        while True:  # the server closes the connection
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break


# ── protobuf ──────────────────────────────────────────────────────────────────────────────────


def proto_events(response: httpx.Response) -> list[Any]:
    decoder = ProtoFrameDecoder()
    messages = decoder.feed(response.content)
    decoder.close()
    return [decode_proto(m) for m in messages]


def test_the_binary_transport_replays_the_same_run(live: Live) -> None:
    url = live(app())
    accept = {"accept": PROTO_MEDIA_TYPE, **JSON}
    response = httpx.post(f"{url}/agent", content=body("r1", count=5), headers=accept)
    assert response.headers["content-type"] == PROTO_MEDIA_TYPE
    events = proto_events(response)
    sse = stream(f"{url}/agent/runs/r1/events").frames
    # The same events; RUN_STARTED's input compared as the binary form carries it (empty lists
    # and integral floats do not survive protobuf: docs/divergences.md).
    assert [json.loads(agui.encode(e)) for e in events[1:]] == [f.event for f in sse[1:]]
    stored_start = agui.decode_json(sse[0].event)
    assert events[0] == agui.decode_proto(agui.encode_proto(stored_start))
    resumed = httpx.get(
        f"{url}/agent/runs/r1/events",
        headers={"accept": PROTO_MEDIA_TYPE, "last-event-id": sse[3].id or ""},
    )
    assert [json.loads(agui.encode(e)) for e in proto_events(resumed)] == [f.event for f in sse[4:]]
    connected = httpx.get(f"{url}/agent/threads/t1/events", headers={"accept": PROTO_MEDIA_TYPE})
    assert [e.type.value for e in proto_events(connected)] == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]


# ── the shutdown, lost runs ───────────────────────────────────────────────────────────────────


def test_the_shutdown_ends_a_detached_run_in_the_log(live: Live) -> None:
    served = app()
    url = live(served)
    tail = Tail("POST", f"{url}/agent", body("r1", count=1000, delay=0.02))
    wait_for(lambda: len(tail.frames) >= 3)
    served.shutdown(0.2)
    frames = tail.wait(5)
    assert frames[-1].event["type"] == "RUN_ERROR"
    assert frames[-1].event["code"] == "SERVER_SHUTDOWN"
    assert error_of(post(f"{url}/agent", body("r2", "t2")), 503)


def dead_run(path: Path, run_id: str, lease: float) -> None:
    """A run in the SQLite log at `path` whose worker is gone (no event, the lease ends in
    `lease` seconds)."""

    async def main() -> None:
        log = open_log(f"sqlite:///{path}")
        now = time.time()
        record = RunRecord(
            thread_id="t1",
            run_id=run_id,
            status="running",
            owner="gone",
            started_at=now,
            lease_until=now + lease,
        )
        await log.start_run(record, body(run_id), exclusive=True)
        await log.aclose()

    asyncio.run(main())


def test_a_tail_of_a_lost_run_ends_in_run_lost(tmp_path: Path, live: Live) -> None:
    """The response following the silent run sees its lease run out and closes it. The server's
    own lease is an hour, so its sweep (every half lease at the soonest) cannot be what closes
    the run within the bound."""
    path = tmp_path / "runs.db"
    url = live(agui.AgentApp(paced, path="/agent", store=f"sqlite:///{path}", lease_seconds=3600))
    dead_run(path, "r1", lease=0.5)
    tail = Tail("GET", f"{url}/agent/runs/r1/events")
    assert tail.done.wait(120), "the tail of the lost run did not end"  # hang bound
    frames = tail.frames
    assert not tail.broken
    # nothing was stored before the loss: the run is opened for the client
    assert frames[0] == Frame(None, {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"})
    assert frames[1].event["type"] == "RUN_ERROR" and frames[1].event["code"] == RUN_LOST
    assert frames[1].id is not None
    assert len(frames) == 2


def test_the_sweep_closes_a_lost_run_nobody_follows(tmp_path: Path, live: Live) -> None:
    path = tmp_path / "runs.db"
    live(agui.AgentApp(paced, path="/agent", store=f"sqlite:///{path}", lease_seconds=0.5))
    dead_run(path, "r1", lease=0.0)

    def closed() -> bool:
        async def status() -> Any:
            log = open_log(f"sqlite:///{path}")
            try:
                return await log.get_run("r1")
            finally:
                await log.aclose()

        record = asyncio.run(status())
        return record is not None and record.status == "finished"

    wait_for(closed, timeout=5, interval=0.1)


def test_a_stop_reaches_a_lost_run(tmp_path: Path, live: Live) -> None:
    """Nobody executes the run any more: the stop closes it as lost."""
    path = tmp_path / "runs.db"
    url = live(agui.AgentApp(paced, path="/agent", store=f"sqlite:///{path}", lease_seconds=60))
    dead_run(path, "r1", lease=0.0)
    assert httpx.post(f"{url}/agent/runs/r1/stop").status_code == 202
    frames = stream(f"{url}/agent/runs/r1/events").frames
    assert frames[-1].event["code"] == RUN_LOST


# ── what the lifecycle makes of an agent, stored ──────────────────────────────────────────────


async def failing(run: agui.RunAgentInput) -> Any:
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    raise RuntimeError("the secret reason")


async def huge(run: agui.RunAgentInput) -> Any:
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")
    yield agui.TextMessageContentEvent(message_id="m", delta="x" * (11 * 1024 * 1024))


async def quiet(run: agui.RunAgentInput) -> Any:
    await asyncio.sleep(0.6)
    yield agui.TextMessageStartEvent(message_id="m", role="assistant")


@pytest.mark.parametrize(
    ("agent", "code"), [(failing, "AGENT_ERROR"), (huge, "INVALID_EVENT")], ids=["raises", "huge"]
)
def test_a_failing_run_ends_in_run_error_stored(agent: Any, code: str, live: Live) -> None:
    url = live(agui.AgentApp(agent, path="/agent", store="memory://"))
    streamed = post(f"{url}/agent", body("r1")).frames
    assert types(streamed) == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    assert streamed[-1].event["code"] == code
    assert "secret" not in json.dumps(streamed[-1].event)
    assert stream(f"{url}/agent/runs/r1/events").frames == streamed


def test_keep_alives_while_the_run_is_silent(live: Live) -> None:
    url = live(agui.AgentApp(quiet, path="/agent", store="memory://", keepalive=0.2))
    with httpx.Client(timeout=10) as client:
        raw = client.post(f"{url}/agent", content=body("r1"), headers=JSON).content
    assert raw.startswith(b": keep-alive\n\n")
    assert raw.count(b"id: ") == 4


def test_the_server_s_end_stores_the_end_of_its_runs(tmp_path: Path) -> None:
    """The server stops (its lifespan's shutdown) while a run nobody follows goes on: the run
    ends in RUN_ERROR SERVER_SHUTDOWN, in the log."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with live_server(agui.AgentApp(paced, path="/agent", store=store)) as url:
        left = post(f"{url}/agent", body("r1", count=1000, delay=0.02), stop_after=3)
        assert len(left.frames) == 3

    async def events() -> list[Any]:
        log = open_log(store)
        try:
            return [json.loads(e.data) async for e in log.read("r1")]
        finally:
            await log.aclose()

    stored = asyncio.run(events())
    assert stored[-1]["type"] == "RUN_ERROR" and stored[-1]["code"] == "SERVER_SHUTDOWN"


def test_an_sse_id_cannot_hold_a_line_end() -> None:
    assert agui.wire.sse.sse_data_frame(b"{}", "7") == b"id: 7\ndata: {}\n\n"
    for bad in ("a\nb", "a\rb", "a\0b"):
        with pytest.raises(ValueError, match="CR, LF or NUL"):
            agui.wire.sse.sse_data_frame(b"{}", bad)
    event = agui.RunStartedEvent(thread_id="t", run_id="r")
    assert agui.sse_frame(event, "1-0.3").startswith(b"id: 1-0.3\ndata: {")
