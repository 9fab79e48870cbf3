"""Quotas per principal (AgentApp's max_principal_bytes and max_principal_threads), on every
backend, over real uvicorn: a start that would take a principal beyond either is refused with
429 before the run starts, its JSON body naming the limit and the usage; another principal is
served; deleting a thread makes room. At the issue's scale (memory://, 40 runs of 7 MiB states,
a 50 MB quota), the server grows by about the quota (tracemalloc)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import agui

from .agents import paced
from .support import RESUMES

TOKENS = {"Bearer alice": "alice", "Bearer bob": "bob"}
ALICE = {"authorization": "Bearer alice"}
BOB = {"authorization": "Bearer bob"}


async def authorize(headers: Any, action: str, thread_id: Any, run_id: Any) -> str | None:
    return TOKENS.get(headers.get("authorization", ""))


def run_body(run_id: str, thread_id: str, state_bytes: int = 0) -> bytes:
    """A RunAgentInput for `paced` (two deltas) whose state holds `state_bytes` of text."""
    return json.dumps(
        {
            "threadId": thread_id,
            "runId": run_id,
            "messages": [{"id": f"u-{run_id}", "role": "user", "content": "hi"}],
            "state": {"blob": "x" * state_bytes},
            "tools": [],
            "context": [],
            "forwardedProps": {"count": 2},
        }
    ).encode()


def start(client: httpx.Client, base: str, content: bytes, who: dict[str, str]) -> httpx.Response:
    """POST a run and read its whole answer (the run's stream, or the refusal)."""
    headers = {"content-type": "application/json", **RESUMES, **who}
    return client.post(f"{base}/agent", content=content, headers=headers)


def ended(response: httpx.Response) -> bool:
    return response.status_code == 200 and "RUN_FINISHED" in response.text


@pytest.fixture
def client() -> Any:
    with httpx.Client(timeout=60) as client:
        yield client


def test_a_principal_beyond_its_bytes_gets_429_naming_the_limit(
    store_url: str, live: Callable[[Any], str], client: httpx.Client
) -> None:
    quota = 100_000
    app = agui.AgentApp(
        paced, path="/agent", store=store_url, authorize=authorize, max_principal_bytes=quota
    )
    base = live(app)
    answers = [start(client, base, run_body(f"a{n}", f"t{n}", 20_000), ALICE) for n in range(6)]
    # each run holds its ~20 kB input once (its RUN_STARTED's copy is not stored): four fit in
    # 100 kB, where two would if the input were stored twice
    assert [ended(a) for a in answers] == [True] * 4 + [False] * 2
    refused = answers[4]
    assert refused.status_code == 429
    body = refused.json()
    assert body["limit"] == "max-principal-bytes"
    assert body["limit_bytes"] == quota
    assert 4 * 20_000 < body["used_bytes"] <= quota < body["used_bytes"] + body["input_bytes"]
    assert "max-principal-bytes" in body["error"]
    # refused before the run started: nothing of it is stored
    assert client.get(f"{base}/agent/threads/t4", headers=ALICE).status_code == 404
    assert client.get(f"{base}/agent/runs/a4/events", headers=ALICE).status_code == 404
    # another principal is served
    assert ended(start(client, base, run_body("b0", "t0", 20_000), BOB))
    # deleting a thread makes room
    assert client.delete(f"{base}/agent/threads/t0", headers=ALICE).status_code == 200
    assert ended(start(client, base, run_body("a9", "t9", 20_000), ALICE))
    again = start(client, base, run_body("a10", "t10", 20_000), ALICE)
    assert again.status_code == 429 and again.json()["limit"] == "max-principal-bytes"


def test_a_principal_beyond_its_threads_gets_429_naming_the_limit(
    store_url: str, live: Callable[[Any], str], client: httpx.Client
) -> None:
    app = agui.AgentApp(
        paced, path="/agent", store=store_url, authorize=authorize, max_principal_threads=2
    )
    base = live(app)
    assert ended(start(client, base, run_body("a1", "t1"), ALICE))
    assert ended(start(client, base, run_body("a2", "t2"), ALICE))
    refused = start(client, base, run_body("a3", "t3"), ALICE)
    assert refused.status_code == 429
    body = refused.json()
    assert body["limit"] == "max-principal-threads"
    assert body["limit_threads"] == 2
    assert body["used_threads"] == 2
    assert "max-principal-threads" in body["error"]
    # a thread it keeps takes another run; another principal is served
    assert ended(start(client, base, run_body("a4", "t1"), ALICE))
    assert ended(start(client, base, run_body("b1", "t3"), BOB))
    # deleting a thread makes room for a new one
    assert client.delete(f"{base}/agent/threads/t2", headers=ALICE).status_code == 200
    assert ended(start(client, base, run_body("a5", "t3"), ALICE))


def test_without_a_hook_every_caller_is_one_principal(
    live: Callable[[Any], str], client: httpx.Client
) -> None:
    app = agui.AgentApp(paced, path="/agent", store="memory://", max_principal_threads=1)
    base = live(app)
    assert ended(start(client, base, run_body("a1", "t1"), ALICE))
    refused = start(client, base, run_body("b1", "t2"), BOB)
    assert refused.status_code == 429
    assert refused.json()["used_threads"] == 1


def test_40_runs_of_7_mib_states_grow_a_memory_server_by_about_the_quota(
    live: Callable[[Any], str], client: httpx.Client
) -> None:
    """The issue's case: one principal posts 40 runs on new threads, each with a 7 MiB state.
    Without quotas the server grew by 613 MiB (15 MiB a run: its input twice)."""
    quota = 50_000_000
    app = agui.AgentApp(
        paced, path="/agent", store="memory://", authorize=authorize, max_principal_bytes=quota
    )
    base = live(app)
    assert ended(start(client, base, run_body("warm", "warm"), BOB))  # imports, first buffers
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        statuses = []
        for n in range(40):
            answer = start(client, base, run_body(f"a{n}", f"t{n}", 7 * 1024 * 1024), ALICE)
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                assert answer.json()["limit"] == "max-principal-bytes"
            del answer
        assert ended(start(client, base, run_body("b1", "b1"), BOB))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 6 runs of 7.3 MB fit in 50 MB, each holding its input once
    assert statuses == [200] * 6 + [429] * 34
    assert grown < quota * 1.1, grown


def test_agui_client_does_not_try_a_quota_refusal_again(live: Callable[[Any], str]) -> None:
    """A 429 naming a `limit` lasts (a rate limit's would pass): HttpAgent raises it after one try,
    where it tries a plain 429 again (tests/test_client_production.py)."""
    posts: list[str] = []

    async def counting(headers: Any, action: str, thread_id: Any, run_id: Any) -> str | None:
        if action == "start":
            posts.append(run_id)
        return "alice"

    app = agui.AgentApp(
        paced, path="/agent", store="memory://", authorize=counting, max_principal_threads=1
    )
    base = live(app)
    agent = agui.HttpAgent(f"{base}/agent", max_retries=2)
    first = agui.decode(run_body("r1", "t1"), agui.RunAgentInput)
    second = agui.decode(run_body("r2", "t2"), agui.RunAgentInput)
    events = list(agent.run_sync(first))
    assert type(events[-1]).__name__ == "RunFinishedEvent"
    with pytest.raises(agui.HttpError) as refused:
        list(agent.run_sync(second))
    assert refused.value.status == 429 and refused.value.attempts == 1
    assert "max-principal-threads" in refused.value.message
    assert posts == ["r1", "r2"]
