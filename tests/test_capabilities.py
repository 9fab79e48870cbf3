"""Capability discovery, over real HTTP: `GET {path}/capabilities` answers the agent's
AgentCapabilities as JSON, strictly decodable.

- AgentApp fills in the transport it serves (streaming; httpBinary when protobuf is on;
  resumable with a store) in place of the agent's own, and keeps the agent's other fields;
- an agent declares the rest through agui.agent.protocol.CapabilitySource: an attribute, a sync
  method or an async one, asked on every request; a declaration that is not an AgentCapabilities
  is refused when the app is built (an attribute) or answered with 500 (a method);
- ModelAgent declares its tools, reasoning, approvals and max_steps; a plain agent declares
  nothing, so only the transport is sent (absent = unknown);
- the route: GET only, 404 elsewhere, under a mount and a FastAPI route, with a store too;
- `HttpAgent.capabilities()` / `capabilities_sync()` read it (tolerantly or strictly; the
  errors of a 404, of an answer that is not JSON or not capabilities, of a server that cannot be
  reached), an AgentApp serving an HttpAgent passes the remote declaration on, and
  `agui capabilities URL` prints it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import httpx
import pytest

import agui
from agui import AgentApp, HttpAgent
from agui.agent.protocol import CapabilitySource
from agui.cli.demo import DemoAgent
from agui.cli.main import main
from agui.model import ModelAgent, ScriptedModel, tool
from agui.model.scripted import say

from .conftest import run_input
from .test_docs import DOCS, EXAMPLE_URL, block_containing, run_example

Serve = Callable[[Any], str]
JSON = {"content-type": "application/json"}


async def plain(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta="hi")
    yield agui.TextMessageEndEvent(message_id="m")


def read(url: str, path: str = "/agent/capabilities") -> dict[str, Any]:
    """GET the capabilities; check the answer is a strictly valid AgentCapabilities; its JSON."""
    response = httpx.get(url + path, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-cache"
    agui.decode(response.content, agui.AgentCapabilities, strict=True)
    value: dict[str, Any] = response.json()
    return value


STREAMING = {"streaming": True, "httpBinary": True}


# ── what is declared ───────────────────────────────────────────────────────────────────────────


def test_a_plain_agent_declares_nothing_but_the_transport(serve: Serve) -> None:
    url = serve(AgentApp(plain, path="/agent"))
    assert read(url) == {"transport": STREAMING}


@pytest.mark.parametrize(
    ("options", "transport"),
    [
        ({"protobuf": False}, {"streaming": True}),
        ({"store": "memory://"}, {"streaming": True, "httpBinary": True, "resumable": True}),
        ({"protobuf": False, "store": "memory://"}, {"streaming": True, "resumable": True}),
    ],
    ids=["sse-only", "store", "sse-only-store"],
)
def test_the_transport_is_what_the_app_serves(
    serve: Serve, options: dict[str, Any], transport: dict[str, Any]
) -> None:
    url = serve(AgentApp(plain, path="/agent", **options))
    assert read(url) == {"transport": transport}


def test_the_demo_agent_declares_its_tool_reasoning_approvals_and_limit(serve: Serve) -> None:
    url = serve(AgentApp(DemoAgent(), path="/agent"))
    declared = read(url)
    tools = declared.pop("tools")
    assert [t["name"] for t in tools.pop("items")] == ["count_characters"]
    assert tools == {"supported": True, "parallelCalls": True, "clientProvided": True}
    assert declared == {
        "transport": STREAMING,
        "reasoning": {"supported": True, "streaming": True},
        "execution": {"maxIterations": 4},
        "humanInTheLoop": {
            "supported": True,
            "approvals": True,
            "interrupts": True,
            "approveWithEdits": True,
        },
    }


def lookup(city: str) -> str:
    """Look a city up."""
    return city


def book(city: str) -> str:
    """Book a table."""
    return city


def test_a_model_agent_declares_its_server_tools_with_their_schemas(serve: Serve) -> None:
    model = ScriptedModel([say("ok")])
    agent = ModelAgent(model, tools=[lookup, tool(book, requires_approval=True)], max_steps=3)
    declared = read(serve(AgentApp(agent, path="/agent")))
    assert declared["tools"]["items"] == [
        {"name": s.name, "description": s.description, "parameters": s.parameters}
        for s in agent.tools.values()
    ]
    assert declared["tools"]["items"][1]["description"] == "Book a table."
    assert declared["execution"] == {"maxIterations": 3}
    assert declared["humanInTheLoop"]["approvals"] is True


def test_a_model_agent_without_approvals_says_so(serve: Serve) -> None:
    agent = ModelAgent(ScriptedModel([say("ok")]), tools=[lookup])
    declared = read(serve(AgentApp(agent, path="/agent")))
    assert declared["humanInTheLoop"] == {"approvals": False, "interrupts": False}
    assert declared["execution"] == {"maxIterations": 10}


def test_a_model_agent_declares_what_it_is_now(serve: Serve) -> None:
    agent = ModelAgent(ScriptedModel([say("ok")]))
    url = serve(AgentApp(agent, path="/agent"))
    assert read(url)["tools"]["items"] == []
    agent.max_steps = 7
    agent.tools["book"] = tool(book, requires_approval=True)
    declared = read(url)
    assert [t["name"] for t in declared["tools"]["items"]] == ["book"]
    assert declared["execution"] == {"maxIterations": 7}
    assert declared["humanInTheLoop"]["interrupts"] is True


IDENTITY = agui.IdentityCapabilities(name="Echo", type="agui", version="1.2.0")


class Attribute:
    """Declares its capabilities as an attribute, with a transport of its own."""

    capabilities = agui.AgentCapabilities(
        identity=IDENTITY,
        transport=agui.TransportCapabilities(
            streaming=False, http_binary=False, resumable=True, websocket=True
        ),
        state=agui.StateCapabilities(snapshots=True),
    )

    def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
        return plain(input)


class SyncMethod:
    def __init__(self) -> None:
        self.asked = 0

    def capabilities(self) -> agui.AgentCapabilities:
        self.asked += 1
        return agui.AgentCapabilities(custom={"asked": self.asked})

    def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
        return plain(input)


class AsyncMethod(SyncMethod):
    async def capabilities(self) -> agui.AgentCapabilities:  # type: ignore[override]
        await asyncio.sleep(0)
        return super().capabilities()


def test_the_app_owns_the_transport_and_keeps_the_rest_of_a_declaration(serve: Serve) -> None:
    agent = Attribute()
    assert isinstance(agent, CapabilitySource)
    declared = read(serve(AgentApp(agent, path="/agent")))
    assert declared == {
        "identity": {"name": "Echo", "type": "agui", "version": "1.2.0"},
        # the agent said no streaming, no binary, resumable: the app serves otherwise
        "transport": {"streaming": True, "websocket": True, "httpBinary": True},
        "state": {"snapshots": True},
    }


@pytest.mark.parametrize("agent_class", [SyncMethod, AsyncMethod], ids=["sync", "async"])
def test_a_method_is_asked_on_every_request(serve: Serve, agent_class: type[SyncMethod]) -> None:
    agent = agent_class()
    assert isinstance(agent, CapabilitySource)
    url = serve(AgentApp(agent, path="/agent"))
    assert read(url) == {"transport": STREAMING, "custom": {"asked": 1}}
    assert read(url) == {"transport": STREAMING, "custom": {"asked": 2}}


def test_a_function_agent_can_carry_a_declaration(serve: Serve) -> None:
    async def echo(run: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield agui.TextMessageChunkEvent(message_id="m", delta="hi")

    echo.capabilities = agui.AgentCapabilities(identity=IDENTITY)  # type: ignore[attr-defined]
    declared = read(serve(AgentApp(echo, path="/agent")))
    assert declared["identity"]["name"] == "Echo"


def test_a_declaration_that_is_no_capabilities_is_refused_when_the_app_is_built() -> None:
    class Wrong:
        def __init__(self) -> None:
            self.capabilities = {"tools": {"supported": True}}  # the wire form, not the model

        def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
            return plain(input)

    with pytest.raises(
        TypeError, match=r"capabilities are a dict: declare an agui\.AgentCapabilities"
    ):
        AgentApp(Wrong())


def test_a_method_that_fails_or_answers_something_else_is_a_500(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    class Failing:
        def __init__(self) -> None:
            self.answer: Any = None

        def capabilities(self) -> Any:
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

        def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
            return plain(input)

    agent = Failing()
    url = serve(AgentApp(agent, path="/agent"))
    for answer, logged in (
        (RuntimeError("the registry is down"), "the registry is down"),
        ({"tools": {}}, "the agent's capabilities are a dict: declare an agui.AgentCapabilities"),
    ):
        agent.answer = answer
        caplog.clear()
        with caplog.at_level(logging.ERROR, "agui.server"):
            response = httpx.get(url + "/agent/capabilities", timeout=10)
        assert response.status_code == 500
        assert response.json() == {"error": "the agent's capabilities could not be read"}
        assert "registry" not in response.text
        assert "the agent's capabilities could not be read" in caplog.text
        exc_info = caplog.records[0].exc_info
        assert exc_info is not None and logged in str(exc_info[1])


# ── the route ──────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("store", [None, "memory://"], ids=["no-store", "store"])
def test_only_get_reads_the_capabilities(serve: Serve, store: str | None) -> None:
    url = serve(AgentApp(plain, path="/agent", store=store))
    with httpx.Client(timeout=10) as client:
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            response = client.request(method, url + "/agent/capabilities")
            assert response.status_code == 405, (method, response.text)
            assert response.headers["allow"] == "GET"
            assert response.json() == {"error": "read the capabilities with GET"}
        assert client.get(url + "/agent/capabilities/").status_code == 404
        assert client.get(url + "/other/capabilities").status_code == 404
        assert client.get(url + "/capabilities").status_code == 404
        # the agent's own path still takes runs only
        assert client.get(url + "/agent").status_code == 405


def test_a_trailing_slash_of_the_path_does_not_matter(serve: Serve) -> None:
    url = serve(AgentApp(plain, path="/agent/"))
    assert read(url) == {"transport": STREAMING}


def test_inside_fastapi_and_under_a_mount(serve: Serve) -> None:
    from fastapi import FastAPI

    api = FastAPI()
    app = AgentApp(plain)
    api.add_route("/agent", app, methods=["POST"])
    api.add_route("/agent/capabilities", app, methods=["GET"])
    api.mount("/v1", AgentApp(plain, path="/run", protobuf=False))
    url = serve(api)
    assert read(url) == {"transport": STREAMING}
    assert read(url, "/v1/run/capabilities") == {"transport": {"streaming": True}}
    run = httpx.post(url + "/agent", content=agui.encode(run_input()), headers=JSON, timeout=10)
    assert run.status_code == 200


def test_while_the_server_shuts_down_it_is_a_503(serve: Serve) -> None:
    app = AgentApp(plain, path="/agent")
    url = serve(app)
    app.shutdown()
    response = httpx.get(url + "/agent/capabilities", timeout=10)
    assert response.status_code == 503


# ── HttpAgent ──────────────────────────────────────────────────────────────────────────────────


def test_httpagent_reads_them_async_and_sync(serve: Serve) -> None:
    url = serve(AgentApp(DemoAgent(), path="/agent")) + "/agent"
    declared = asyncio.run(HttpAgent(url).capabilities())
    assert isinstance(declared, agui.AgentCapabilities)
    assert declared.transport == agui.TransportCapabilities(streaming=True, http_binary=True)
    assert declared.execution == agui.ExecutionCapabilities(max_iterations=4)
    assert declared.tools is not None and declared.tools.items is not None
    assert [t.name for t in declared.tools.items] == ["count_characters"]
    assert HttpAgent(url).capabilities_sync() == declared
    assert HttpAgent(url + "/").capabilities_sync() == declared  # a trailing slash is dropped


def test_httpagent_uses_its_clients_and_headers(serve: Serve) -> None:
    seen: list[str | None] = []

    class Recording:
        def capabilities(self) -> agui.AgentCapabilities:
            return agui.AgentCapabilities()

        def __call__(self, input: agui.RunAgentInput) -> AsyncIterator[Any]:
            return plain(input)

    async def authorized(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", ()))
        if scope["type"] == "http":
            seen.append(headers.get(b"authorization", b"").decode() or None)
        await inner(scope, receive, send)

    inner = AgentApp(Recording(), path="/agent")
    url = serve(authorized) + "/agent"
    agent = HttpAgent(url, headers={"authorization": "Bearer t"})
    assert agent.capabilities_sync() == agui.AgentCapabilities(
        transport=agui.TransportCapabilities(streaming=True, http_binary=True)
    )

    async def with_client() -> agui.AgentCapabilities:
        async with httpx.AsyncClient() as client:
            return await HttpAgent(
                url, client=client, headers={"authorization": "x"}
            ).capabilities()

    asyncio.run(with_client())
    with httpx.Client() as sync_client:
        HttpAgent(url, sync_client=sync_client).capabilities_sync()
    assert seen == ["Bearer t", "x", None]


def fixed(status: int, content_type: str, body: bytes) -> Any:
    """An ASGI app that answers every request with this status, content type and body."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-type", content_type.encode())] if content_type else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def test_httpagent_tolerates_unknown_members_and_strict_refuses_them(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    body = b'{"tools": {"supported": true, "futureFlag": 1}, "newArea": {}}'
    url = serve(fixed(200, "application/json", body)) + "/agent"
    with caplog.at_level(logging.WARNING, "agui.client"):
        declared = HttpAgent(url).capabilities_sync()
    assert declared == agui.AgentCapabilities(tools=agui.ToolsCapabilities(supported=True))
    assert "futureFlag" in caplog.text and "newArea" in caplog.text
    with pytest.raises(agui.StreamError, match="not a valid AgentCapabilities") as caught:
        HttpAgent(url, strict=True).capabilities_sync()
    assert caught.value.problems


@pytest.mark.parametrize(
    ("status", "content_type", "body", "error", "match"),
    [
        (
            404,
            "application/json",
            b'{"error": "nothing here"}',
            agui.HttpError,
            "HTTP 404: nothing",
        ),
        (200, "text/html", b"<html></html>", agui.StreamError, "got text/html"),
        (200, "", b"{}", agui.StreamError, "got no content type"),
        (
            200,
            "application/json",
            b'{"tools": {"supported": "yes"}}',
            agui.StreamError,
            "/tools/supported",
        ),
        (200, "application/json", b"[]", agui.StreamError, "not a valid AgentCapabilities"),
    ],
    ids=["404", "html", "no-type", "wrong-type", "not-an-object"],
)
def test_httpagent_says_what_is_wrong_with_an_answer(
    serve: Serve, status: int, content_type: str, body: bytes, error: type[Exception], match: str
) -> None:
    url = serve(fixed(status, content_type, body)) + "/agent"
    with pytest.raises(error, match=match):
        HttpAgent(url).capabilities_sync()
    with pytest.raises(error, match=match):
        asyncio.run(HttpAgent(url).capabilities())


def test_httpagent_names_a_server_that_cannot_be_reached() -> None:
    url = "http://127.0.0.1:9/agent"
    with pytest.raises(agui.TransportError, match=r"127\.0\.0\.1:9/agent/capabilities"):
        HttpAgent(url, timeout=2).capabilities_sync()
    with pytest.raises(agui.TransportError, match="Cannot connect"):
        asyncio.run(HttpAgent(url, timeout=2).capabilities())


def test_an_app_serving_an_httpagent_passes_the_declaration_on(serve: Serve) -> None:
    remote = serve(AgentApp(DemoAgent(), path="/agent", store="memory://")) + "/agent"
    proxy = serve(AgentApp(HttpAgent(remote), path="/agent", protobuf=False))
    direct = read(remote.removesuffix("/agent"))
    proxied = read(proxy)
    assert direct["transport"]["resumable"] is True
    assert proxied == {**direct, "transport": {"streaming": True}}


# ── agui capabilities ──────────────────────────────────────────────────────────────────────────


def test_the_command_prints_them(serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    url = serve(AgentApp(DemoAgent(), path="/agent")) + "/agent"
    assert main(["capabilities", url]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith('{\n  "transport": {\n    "streaming": true,')
    assert json.loads(printed) == read(url.removesuffix("/agent"))
    assert main(["capabilities", url, "--compact", "--strict", "--timeout", "5"]) == 0
    compact = capsys.readouterr().out
    assert compact.count("\n") == 1 and json.loads(compact) == json.loads(printed)


def test_the_command_fails_with_one_line(serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    url = serve(fixed(404, "application/json", b'{"error": "no such agent"}')) + "/agent"
    assert main(["capabilities", url]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"agui capabilities: HTTP 404: no such agent (from {url}/capabilities)\n"
    assert main(["capabilities", "http://127.0.0.1:9/agent", "--timeout", "2"]) == 1
    assert capsys.readouterr().err.startswith("agui capabilities: Cannot connect to ")
    assert main(["capabilities", url, "--timeout", "0"]) == 2
    assert "--timeout must be a positive number" in capsys.readouterr().err


def test_the_declaration_round_trips_through_attrs() -> None:
    declared = DemoAgent().capabilities()
    assert agui.decode(agui.encode(declared), agui.AgentCapabilities, strict=True) == declared
    assert attrs.evolve(declared, identity=IDENTITY).identity == IDENTITY


# ── the docs' examples ─────────────────────────────────────────────────────────────────────────


def test_the_docs_examples_declare_and_read(
    serve: Serve, capsys: pytest.CaptureFixture[str]
) -> None:
    server = run_example(block_containing(DOCS / "serving.md", "class Echo:"), "echo", capsys)
    base = serve(server["app"])
    assert read(base) == {
        "identity": {"name": "Echo", "description": "Says hello back."},
        "transport": STREAMING,
        "tools": {"supported": False},
    }
    client = block_containing(DOCS / "calling.md", "capabilities_sync()")
    run_example(client.replace(EXAMPLE_URL, base), "capabilities", capsys, agui=agui)
