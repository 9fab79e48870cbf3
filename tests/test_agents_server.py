"""agui.AgentServer: several agents on one server (each at /NAME, its own capabilities, one store
shared with a namespace per agent), GET /agents, and the health checks /healthz and /readyz of
agui.http.health, on the server and on a lone AgentApp; served by uvicorn on 127.0.0.1.

The shared store here is memory://; tests/durable/test_agents_shared_store.py runs the same over
a real redis-server, stopped and restarted, and under `agui serve`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import agui
from agui.http.agents import RESERVED_NAMES
from agui.store import StoreUnavailable, open_log
from tests.conftest import live_server
from tests.durable.agents import paced
from tests.durable.support import body, deltas, post, stream, types


class Speaker:
    """An agent that says `NAME:` and the user's words, and declares `NAME` as its identity."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.capabilities = agui.AgentCapabilities(
            identity=agui.IdentityCapabilities(name=name, description=f"the {name} agent")
        )

    async def __call__(self, run: agui.RunAgentInput) -> AsyncIterator[Any]:
        words = run.messages[-1].content if run.messages else ""
        message_id = f"{run.run_id}:m"
        yield agui.TextMessageStartEvent(message_id=message_id, role="assistant")
        yield agui.TextMessageContentEvent(message_id=message_id, delta=f"{self.name}:{words}")
        yield agui.TextMessageEndEvent(message_id=message_id)


def said(frames: Any) -> str:
    return "".join(deltas(frames))


def get(url: str, **options: Any) -> httpx.Response:
    return httpx.get(url, timeout=30, **options)


# ── several agents ───────────────────────────────────────────────────────────────────────────


def test_each_agent_is_served_at_its_name_with_its_own_capabilities() -> None:
    """Two agents: each answers its own runs at /NAME, and GET /agents lists both in the order
    given, with their paths and each one's own declaration."""
    server = agui.AgentServer({"alpha": Speaker("alpha"), "beta": Speaker("beta")})
    with live_server(server) as base:
        for name in ("alpha", "beta"):
            answer = post(f"{base}/{name}", body("r1", text="hi"), resumes=False)
            assert answer.status == 200
            assert said(answer.frames) == f"{name}:hi"
            assert types(answer.frames)[-1] == "RUN_FINISHED"
        listing = get(f"{base}/agents")
        capabilities = {
            name: get(f"{base}/{name}/capabilities").json() for name in ("alpha", "beta")
        }
    assert listing.status_code == 200
    assert listing.headers["content-type"] == "application/json"
    agents = listing.json()["agents"]
    assert [(a["name"], a["path"]) for a in agents] == [("alpha", "/alpha"), ("beta", "/beta")]
    for agent in agents:
        assert agent["capabilities"] == capabilities[agent["name"]]
        assert agent["capabilities"]["identity"]["name"] == agent["name"]
        assert agent["capabilities"]["transport"]["streaming"] is True


def test_the_same_ids_on_two_agents_are_two_runs() -> None:
    """One memory store shared: the same thread and run ids started on both agents are two runs
    (no 409), each resumed, connected to and listed in the store apart from the other."""
    server = agui.AgentServer({"a": Speaker("a"), "b": Speaker("b")}, store="memory://")
    with live_server(server) as base:
        for name in ("a", "b"):
            answer = post(f"{base}/{name}", body("same-run", "same-thread", text="x"))
            assert answer.status == 200, answer.body
            assert said(answer.frames) == f"{name}:x"
        resumed = {n: stream(f"{base}/{n}/runs/same-run/events") for n in ("a", "b")}
        connected = {n: stream(f"{base}/{n}/threads/same-thread/events?history=full") for n in "ab"}
    for name in ("a", "b"):
        assert said(resumed[name].frames) == f"{name}:x"
        assert said(connected[name].frames) == f"{name}:x"
        assert types(resumed[name].frames)[-1] == "RUN_FINISHED"
    assert server.store is not None
    for key in ("a/same-run", "b/same-run"):
        assert asyncio.run(server.store.get_run(key)) is not None


def test_one_agent_cannot_read_or_stop_another_agents_run() -> None:
    """A run started on agent a is unknown to agent b: its resume and its stop on b are answered
    exactly as those of an id never used, and the run goes on on a."""
    server = agui.AgentServer({"a": paced, "b": paced}, store="memory://")
    with live_server(server) as base:
        started = post(f"{base}/a", body("only-a", count=200, delay=0.02), stop_after=2)
        assert started.status == 200
        other = {
            "resume": stream(f"{base}/b/runs/only-a/events"),
            "stop": httpx.post(f"{base}/b/runs/only-a/stop", timeout=30),
            "connect": stream(f"{base}/b/threads/t1/events"),
        }
        never = {
            "resume": stream(f"{base}/b/runs/never-used/events"),
            "stop": httpx.post(f"{base}/b/runs/never-used/stop", timeout=30),
            "connect": stream(f"{base}/b/threads/never-used/events"),
        }
        stopped = httpx.post(f"{base}/a/runs/only-a/stop", timeout=30)
        rest = stream(f"{base}/a/runs/only-a/events")
    for action in ("resume", "stop", "connect"):
        mine, theirs = other[action], never[action]
        if isinstance(mine, httpx.Response):
            statuses, errors = (mine.status_code, theirs.status_code), (mine.json(), theirs.json())
        else:
            statuses = (mine.status, theirs.status)
            errors = (json.loads(mine.body), json.loads(theirs.body))
        assert statuses == (404, 404), action
        assert errors[0]["error"].replace("only-a", "ID").replace("t1", "ID") == errors[1][
            "error"
        ].replace("never-used", "ID"), action
    assert stopped.status_code == 202  # still going on a: b's stop did not reach it
    assert rest.frames[-1].event["type"] == "RUN_FINISHED"
    assert rest.frames[-1].event["outcome"]["type"] == "cancelled"


def test_an_agent_stops_its_run_and_not_the_other_agents() -> None:
    """The same run id going on both agents: stopping it on a ends a's (cancelled) while b's
    finishes with every event."""
    server = agui.AgentServer({"a": paced, "b": paced}, store="memory://")
    with live_server(server) as base:
        for name in ("a", "b"):
            post(f"{base}/{name}", body("shared", count=40, delay=0.05), stop_after=2)
        assert httpx.post(f"{base}/a/runs/shared/stop", timeout=30).status_code == 202
        a = stream(f"{base}/a/runs/shared/events")
        b = stream(f"{base}/b/runs/shared/events")
    assert a.frames[-1].event["outcome"]["type"] == "cancelled"
    assert len(deltas(a.frames)) < 40
    assert b.frames[-1].event["type"] == "RUN_FINISHED"
    assert "outcome" not in b.frames[-1].event
    assert len(deltas(b.frames)) == 40


def test_principals_are_namespaced_within_each_agent() -> None:
    """With an authorize hook, the store keys an id by agent, then by principal: alice's run on
    a is unknown to bob on a, and to alice on b."""

    async def authorize(headers: Any, action: str, thread: Any, run: Any) -> str | None:
        return headers.get("x-user")

    server = agui.AgentServer({"a": paced, "b": paced}, store="memory://", authorize=authorize)
    alice, bob = {"x-user": "alice"}, {"x-user": "bob"}
    with live_server(server) as base:
        assert post(f"{base}/a", body("r", count=2), headers=alice).status == 200
        mine = stream(f"{base}/a/runs/r/events", headers=alice)
        bobs = stream(f"{base}/a/runs/r/events", headers=bob)
        other_agent = stream(f"{base}/b/runs/r/events", headers=alice)
    assert deltas(mine.frames) == ["0,", "1,"]
    assert bobs.status == other_agent.status == 404


def test_unknown_paths_are_404_and_metrics_is_left_free() -> None:
    """A path that is no agent's is a JSON 404 pointing at /agents; /metrics is not taken (no
    agent can be named so)."""
    server = agui.AgentServer({"a": Speaker("a")})
    with live_server(server) as base:
        missing = httpx.post(f"{base}/nobody", content=body("r"), timeout=30)
        metrics = get(f"{base}/metrics")
        root = get(f"{base}/")
        listing = httpx.post(f"{base}/agents", timeout=30)
    assert missing.status_code == metrics.status_code == root.status_code == 404
    assert "/agents" in missing.json()["error"]
    assert listing.status_code == 405
    assert "metrics" in RESERVED_NAMES


def test_the_servers_metrics_count_each_agent_under_its_name() -> None:
    """With metrics=True (a registry of the test's own), every agent reports into it under its
    name, and GET /metrics at the server's root serves it (parsed by prometheus-client)."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    server = agui.AgentServer(
        {"alpha": Speaker("alpha"), "beta": Speaker("beta")}, metrics=registry
    )
    with live_server(server) as base:
        for run in range(2):
            post(f"{base}/alpha", body(f"a{run}"), resumes=False)
        post(f"{base}/beta", body("b0"), resumes=False)
        answer = get(f"{base}/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    ended = {
        (sample.labels["agent"], sample.labels["outcome"]): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
        if sample.name == "agui_runs_ended_total"
    }
    assert ended[("alpha", "success")] == 2 and ended[("beta", "success")] == 1


@pytest.mark.parametrize(
    ("agents", "options", "message"),
    [
        ({}, {}, "at least one agent"),
        ({"agents": paced}, {}, "path of the server"),
        ({"metrics": paced}, {}, "path of the server"),
        ({"a/b": paced}, {}, "not an agent name"),
        ({"": paced}, {}, "not an agent name"),
        ({"-a": paced}, {}, "not an agent name"),
        ({"a": paced}, {"path": "/x"}, "each agent is at /NAME"),
        ({"a": agui.AgentApp(paced, path="/elsewhere")}, {}, "not /a"),
    ],
)
def test_what_cannot_be_served_is_refused(
    agents: dict[str, Any], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        agui.AgentServer(agents, **options)


def test_an_agentapp_given_twice_or_with_cors_of_its_own_is_refused() -> None:
    app = agui.AgentApp(paced)
    with pytest.raises(ValueError, match="given twice"):
        agui.AgentServer({"a": app, "b": app})
    with pytest.raises(ValueError, match="cors_origins to the AgentServer only"):
        agui.AgentServer(
            {"a": agui.AgentApp(paced, cors_origins=["http://x.test"])},
            cors_origins=["http://y.test"],
        )
    with pytest.raises(TypeError, match="agent 'a'"):
        agui.AgentServer({"a": 42})  # type: ignore[dict-item]


def test_an_agentapp_keeps_its_settings_and_gets_its_path() -> None:
    """An AgentApp given with no path is served at /NAME with its own settings (here its own
    store, in its agent's namespace)."""
    own = agui.AgentApp(paced, store="memory://", max_active_runs=3)
    server = agui.AgentServer({"own": own, "plain": Speaker("plain")})
    assert own.path == "/own"
    assert server.apps["own"] is own
    assert server.apps["plain"].store is None
    with live_server(server) as base:
        assert post(f"{base}/own", body("r", count=1)).status == 200
        assert stream(f"{base}/own/runs/r/events").frames[-1].type == "RUN_FINISHED"
        agents = get(f"{base}/agents").json()["agents"]
    assert own.store is not None
    assert asyncio.run(own.store.get_run("own/r")) is not None
    assert agents[0]["capabilities"]["transport"].get("resumable") is True
    assert "resumable" not in agents[1]["capabilities"]["transport"]


def test_agents_lists_what_the_caller_may_read() -> None:
    """An agent whose hook refuses the caller is left out of /agents; refused by all, the
    answer is the refusal."""

    async def only_alice(headers: Any, action: str, thread: Any, run: Any) -> str | None:
        return "alice" if headers.get("x-user") == "alice" else None

    async def anyone(headers: Any, action: str, thread: Any, run: Any) -> bool:
        return True

    server = agui.AgentServer(
        {
            "private": agui.AgentApp(Speaker("private"), authorize=only_alice),
            "public": agui.AgentApp(Speaker("public"), authorize=anyone),
        }
    )
    locked = agui.AgentServer({"a": paced}, authorize=only_alice)
    with live_server(server) as base, live_server(locked) as locked_base:
        alice = get(f"{base}/agents", headers={"x-user": "alice"}).json()["agents"]
        bob = get(f"{base}/agents", headers={"x-user": "bob"}).json()["agents"]
        refused = get(f"{locked_base}/agents")
    assert [a["name"] for a in alice] == ["private", "public"]
    assert [a["name"] for a in bob] == ["public"]
    assert refused.status_code == 403
    assert refused.json() == {"error": "not allowed to capabilities here"}


def test_cors_covers_every_route_of_the_server() -> None:
    """cors_origins on the server: a page of that origin reads /agents and runs an agent."""
    server = agui.AgentServer({"a": Speaker("a")}, cors_origins=["http://front.test"])
    origin = {"origin": "http://front.test"}
    with live_server(server) as base:
        preflight = httpx.options(
            f"{base}/a",
            headers={**origin, "access-control-request-method": "POST"},
            timeout=30,
        )
        listing = get(f"{base}/agents", headers=origin)
    assert preflight.status_code == 200
    assert listing.headers["access-control-allow-origin"] == "http://front.test"


# ── health ───────────────────────────────────────────────────────────────────────────────────


def test_health_and_readiness_while_serving_and_draining() -> None:
    """/healthz and /readyz are 200 while the server serves; once its shutdown began /readyz is
    503 (draining) and /healthz stays 200, while new runs get 503."""
    server = agui.AgentServer({"a": paced}, store="memory://")
    with live_server(server) as base:
        before = (get(f"{base}/healthz"), get(f"{base}/readyz"))
        server.shutdown(60.0)
        after = (get(f"{base}/healthz"), get(f"{base}/readyz"))
        listing = get(f"{base}/agents")
        refused = httpx.post(
            f"{base}/a", content=body("r"), headers={"content-type": "application/json"}
        )
    assert [r.status_code for r in before] == [200, 200]
    assert [r.json() for r in before] == [{"status": "ok"}] * 2
    assert after[0].status_code == 200 and after[0].json() == {"status": "ok"}
    assert after[1].status_code == 503
    assert after[1].json() == {"status": "unavailable", "reason": "the server is shutting down"}
    assert refused.status_code == 503
    assert listing.status_code == 503


def test_readiness_follows_an_agents_own_shutdown() -> None:
    """The shutdown of one of the server's AgentApps (what uvicorn's signal tells each app)
    makes the server's /readyz 503 too."""
    server = agui.AgentServer({"a": Speaker("a"), "b": Speaker("b")})
    with live_server(server) as base:
        assert get(f"{base}/readyz").status_code == 200
        server.apps["b"].shutdown(60.0)
        assert get(f"{base}/readyz").status_code == 503


def test_a_lone_agentapp_answers_health_beside_its_path() -> None:
    """An AgentApp with a path of its own (what `agui serve MODULE:ATTR` builds) answers
    /healthz and /readyz; HEAD too; other methods 405; one at path None (mounted, every path
    its agent's) does not."""
    app = agui.AgentApp(paced, path="/agent", store="memory://")
    anywhere = agui.AgentApp(paced)
    with live_server(app) as base, live_server(anywhere) as any_base:
        healthz, readyz = get(f"{base}/healthz"), get(f"{base}/readyz")
        head = httpx.head(f"{base}/readyz", timeout=30)
        posted = httpx.post(f"{base}/healthz", timeout=30)
        mounted = get(f"{any_base}/healthz")
        app.shutdown(60.0)
        draining = get(f"{base}/readyz")
    assert healthz.json() == readyz.json() == {"status": "ok"}
    assert head.status_code == 200 and head.content == b""
    assert posted.status_code == 405
    assert mounted.status_code == 405  # the agent's run endpoint, which takes POST only
    assert draining.status_code == 503


def test_an_agent_served_at_healthz_keeps_its_path() -> None:
    """An agent whose path is /healthz is the agent's: a POST there runs it."""
    app = agui.AgentApp(Speaker("h"), path="/healthz")
    with live_server(app) as base:
        answer = post(f"{base}/healthz", body("r", text="x"), resumes=False)
        ready = get(f"{base}/readyz")
    assert said(answer.frames) == "h:x"
    assert ready.status_code == 200


class _Down:
    """An event log whose probe fails until `up` (a stand-in for what only its probe shows)."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self.up = False
        self.probes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    async def probe(self) -> None:
        self.probes += 1
        if not self.up:
            raise StoreUnavailable("SQLite store '/secret/path/runs.db': disk I/O error")


def test_readiness_names_no_internal_detail(caplog: pytest.LogCaptureFixture) -> None:
    """While the store's probe fails, /readyz is 503 with a fixed reason (no path, host or
    error text), the failure is logged once, and the app's store health says so; once the
    probe works, 200 and healthy again."""
    down = _Down(open_log("memory://"))
    server = agui.AgentServer({"a": paced, "b": paced}, store=down)  # type: ignore[arg-type]
    with live_server(server) as base:
        failing = [get(f"{base}/readyz") for _ in range(3)]
        durable = server.apps["a"]._durable
        assert durable is not None and not durable.healthy
        down.up = True
        back = get(f"{base}/readyz")
        assert durable.healthy
    for answer in failing:
        assert answer.status_code == 503
        assert answer.json() == {"status": "unavailable", "reason": "the event log does not answer"}
        assert "secret" not in answer.text and "I/O" not in answer.text
    assert back.status_code == 200
    logged = [r for r in caplog.records if "the event log failed" in r.getMessage()]
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].exc_info is None
    assert down.probes >= 4


# ── inside FastAPI ───────────────────────────────────────────────────────────────────────────


def test_include_in_fastapi_under_a_prefix() -> None:
    """include_in(api, "/v1"): every route of each agent under /v1/NAME, /v1/agents listing
    those paths, the health checks, and the server's lifespan (the store opened from its URL
    closed at the end)."""
    fastapi = pytest.importorskip("fastapi")
    api = fastapi.FastAPI()

    @api.get("/mine")
    def mine() -> dict[str, str]:
        return {"mine": "yes"}

    server = agui.AgentServer({"a": paced, "b": Speaker("b")}, store="memory://")
    server.include_in(api, "/v1")
    with live_server(api) as base:
        ran = post(f"{base}/v1/a", body("r", count=3))
        resumed = stream(f"{base}/v1/a/runs/r/events")
        spoke = post(f"{base}/v1/b", body("r", text="x"))
        agents = get(f"{base}/v1/agents").json()["agents"]
        ready = get(f"{base}/v1/readyz")
        own = get(f"{base}/mine")
        unknown = get(f"{base}/v1/a/runs/r/nothing")
    assert deltas(ran.frames) == deltas(resumed.frames) == ["0,", "1,", "2,"]
    assert said(spoke.frames) == "b:x"
    assert [a["path"] for a in agents] == ["/v1/a", "/v1/b"]
    assert ready.json() == {"status": "ok"}
    assert own.json() == {"mine": "yes"}
    assert unknown.status_code == 404
    assert server.store is not None
    assert server.store._closed  # type: ignore[attr-defined]  # the lifespan closed it


class _Hanging:
    """An event log whose probe never answers (a Redis that accepts connections and says
    nothing), counting the probes."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self.probes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    async def probe(self) -> None:
        self.probes += 1
        await asyncio.sleep(3600)


def test_a_store_that_does_not_answer_is_not_ready_and_is_probed_once_at_a_time() -> None:
    """A probe that hangs: /readyz is 503 once PROBE_TIMEOUT passes, and checks coming at the
    same time share one probe instead of each sending its own."""
    hanging = _Hanging(open_log("memory://"))
    server = agui.AgentServer({"a": paced}, store=hanging)  # type: ignore[arg-type]

    async def checks(base: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:  # hang bound
            return list(await asyncio.gather(*(client.get(f"{base}/readyz") for _ in range(5))))

    with live_server(server) as base:
        answers = asyncio.run(checks(base))
    assert [a.status_code for a in answers] == [503] * 5
    assert all(
        a.json() == {"status": "unavailable", "reason": "the event log does not answer"}
        for a in answers
    )
    assert hanging.probes == 1


def test_an_agent_whose_capabilities_fail_is_listed_without_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """/agents still lists the other agents, and this one without capabilities (logged)."""

    class Broken:
        def capabilities(self) -> agui.AgentCapabilities:
            raise RuntimeError("no declaration today")

        async def __call__(self, run: agui.RunAgentInput) -> AsyncIterator[Any]:
            yield agui.StateSnapshotEvent(snapshot={})

    server = agui.AgentServer({"ok": Speaker("ok"), "broken": Broken()})
    with live_server(server) as base:
        agents = get(f"{base}/agents").json()["agents"]
    assert [a["name"] for a in agents] == ["ok", "broken"]
    assert "capabilities" in agents[0] and "capabilities" not in agents[1]
    assert any("agent 'broken'" in r.getMessage() for r in caplog.records)
