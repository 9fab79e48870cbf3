"""Front ends on another origin, over real HTTP: AgentApp's `cors_origins` and `agui serve
--cors-origin` (the browser's side is tests/browser).

- Without the option the preflight (`OPTIONS /agent` with Origin and
  Access-Control-Request-Method) is a 405 and no response carries CORS headers, so a browser
  refuses the page;
- with it the preflight is answered for the allowed origins only (POST and GET; Content-Type,
  Accept, Authorization and Last-Event-ID among the request headers), and every answer to an
  allowed origin carries the CORS headers: the run's stream, its errors, the capabilities and,
  with a store, the durable routes;
- "*" allows any origin, with a warning; what is not an origin is refused;
- `agui serve --cors-origin` (repeatable) serves it; with an ASGI app, or a malformed origin, it is
  refused before the server starts.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui
from agui import AgentApp
from agui.http.server import CORS_EXPOSED_HEADERS, CORS_REQUEST_HEADERS

from .conftest import run_input
from .test_cli_serve import AGUI, Served

Serve = Callable[[Any], str]
PAGE = "http://localhost:3000"
BODY = agui.encode(run_input())


async def echo(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta="hello")
    yield agui.TextMessageEndEvent(message_id="m")


def preflight(
    url: str, method: str = "POST", origin: str = PAGE, headers: str = "content-type"
) -> httpx.Response:
    """What a browser sends before a cross-origin request that is not simple."""
    return httpx.options(
        url,
        headers={
            "origin": origin,
            "access-control-request-method": method,
            "access-control-request-headers": headers,
        },
        timeout=10,
    )


def post(url: str, origin: str = PAGE, body: bytes = BODY) -> httpx.Response:
    headers = {"origin": origin, "content-type": "application/json", "accept": "text/event-stream"}
    return httpx.post(url, content=body, headers=headers, timeout=10)


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def allowed_by_browser(response: httpx.Response, origin: str = PAGE) -> None:
    """The response lets a page of `origin` read it."""
    assert response.headers.get("access-control-allow-origin") in (origin, "*"), response.headers


# ── without the option ─────────────────────────────────────────────────────────────────────────


def test_without_cors_the_preflight_is_refused_and_nothing_allows_the_page(serve: Serve) -> None:
    url = serve(AgentApp(echo, path="/agent", store="memory://")) + "/agent"
    response = preflight(url)
    assert response.status_code == 405
    assert cors_headers(response) == {}
    run = post(url)
    assert run.status_code == 200
    assert cors_headers(run) == {}
    assert cors_headers(httpx.get(url + "/capabilities", headers={"origin": PAGE})) == {}


# ── with it ────────────────────────────────────────────────────────────────────────────────────


def test_the_preflight_of_a_run_is_answered(serve: Serve) -> None:
    url = serve(AgentApp(echo, path="/agent", cors_origins=[PAGE])) + "/agent"
    response = preflight(url, headers="content-type,accept,authorization,last-event-id")
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == PAGE
    assert response.headers["access-control-allow-methods"] == "GET, POST, DELETE"  # a thread
    allowed = {
        h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")
    }
    assert {"content-type", "accept", "authorization", "last-event-id"} <= allowed
    assert "origin" in response.headers["vary"].lower()
    assert int(response.headers["access-control-max-age"]) > 0


def test_the_run_carries_the_cors_headers_and_streams_as_before(serve: Serve) -> None:
    url = serve(AgentApp(echo, path="/agent", cors_origins=[PAGE])) + "/agent"
    run = post(url)
    assert run.status_code == 200
    assert run.headers["content-type"] == "text/event-stream"
    assert run.headers["access-control-allow-origin"] == PAGE
    assert run.headers["access-control-expose-headers"] == "Retry-After, Agui-Resumable"
    vary = {v.strip().lower() for v in run.headers["vary"].split(",")}
    assert vary == {"accept", "origin"}
    assert b'"delta":"hello"' in run.content and b"RUN_FINISHED" in run.content


def test_errors_carry_them_too_so_the_page_can_read_them(serve: Serve) -> None:
    url = serve(AgentApp(echo, path="/agent", cors_origins=[PAGE], max_active_runs=1)) + "/agent"
    bad = post(url, body=b'{"threadId": 1}')
    assert bad.status_code == 400
    allowed_by_browser(bad)
    assert httpx.get(url + "/elsewhere", headers={"origin": PAGE}).status_code == 404


def test_another_origin_is_refused(serve: Serve) -> None:
    url = (
        serve(AgentApp(echo, path="/agent", cors_origins=[PAGE, "http://127.0.0.1:5173"]))
        + "/agent"
    )
    assert preflight(url, origin="http://127.0.0.1:5173").status_code == 200
    for origin in ("http://evil.example", "http://localhost:3001", "https://localhost:3000"):
        response = preflight(url, origin=origin)
        assert response.status_code == 400
        assert "access-control-allow-origin" not in response.headers
        assert "access-control-allow-origin" not in post(url, origin=origin).headers


def test_a_header_outside_the_list_is_refused(serve: Serve) -> None:
    url = serve(AgentApp(echo, path="/agent", cors_origins=[PAGE])) + "/agent"
    assert preflight(url, headers="content-type,x-custom").status_code == 400
    assert preflight(url, method="PUT").status_code == 400  # DELETE is allowed: a thread


def test_the_capabilities_and_the_durable_routes_get_it(serve: Serve) -> None:
    url = serve(AgentApp(echo, path="/agent", store="memory://", cors_origins=[PAGE])) + "/agent"
    capabilities = httpx.get(url + "/capabilities", headers={"origin": PAGE}, timeout=10)
    assert capabilities.status_code == 200
    allowed_by_browser(capabilities)
    run = post(url)
    assert run.status_code == 200
    allowed_by_browser(run)
    last = next(line for line in run.text.splitlines() if line.startswith("id:"))[3:].strip()
    events = f"{url}/runs/run-1/events"
    # resuming sends Last-Event-ID, which is no safelisted header: the browser asks first
    assert preflight(events, method="GET", headers="last-event-id,accept").status_code == 200
    resumed = httpx.get(events, headers={"origin": PAGE, "last-event-id": last}, timeout=10)
    assert resumed.status_code == 200
    allowed_by_browser(resumed)
    thread = httpx.get(f"{url}/threads/thread-1/events", headers={"origin": PAGE}, timeout=10)
    assert thread.status_code == 200
    allowed_by_browser(thread)
    assert preflight(f"{url}/runs/run-1/stop").status_code == 200
    stop = httpx.post(f"{url}/runs/run-1/stop", headers={"origin": PAGE}, timeout=10)
    assert stop.status_code == 409  # already finished, and the page may read why
    allowed_by_browser(stop)


def test_a_refused_run_exposes_retry_after(serve: Serve) -> None:
    app = AgentApp(echo, path="/agent", cors_origins=[PAGE])
    url = serve(app) + "/agent"
    app.shutdown()
    refused = post(url)
    assert refused.status_code == 503
    allowed_by_browser(refused)
    assert "Retry-After" in refused.headers["access-control-expose-headers"]


def test_any_origin_is_allowed_with_a_warning(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "agui.server"):
        app = AgentApp(echo, path="/agent", cors_origins=["*"])
    assert "any origin may call this agent" in caplog.text
    url = serve(app) + "/agent"
    response = preflight(url, origin="http://anything.example:1234")
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    assert post(url, origin="http://anything.example").headers["access-control-allow-origin"] == "*"


def test_the_lists_are_the_documented_ones() -> None:
    assert CORS_REQUEST_HEADERS == (
        "Content-Type",
        "Accept",
        "Authorization",
        "Last-Event-ID",
        "Agui-Resume",
    )
    assert CORS_EXPOSED_HEADERS == ("Retry-After", "Agui-Resumable")
    app = AgentApp(echo, cors_origins=iter([PAGE, PAGE, "*"]))
    assert app.cors_origins == (PAGE, "*")
    assert AgentApp(echo).cors_origins == ()
    assert AgentApp(echo, cors_origins=PAGE).cors_origins == (PAGE,)


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost:3000/",
        "localhost:3000",
        "http://localhost:3000/app",
        "",
        "null",
        " http://a",
    ],
)
def test_what_is_not_an_origin_is_refused(origin: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        AgentApp(echo, cors_origins=[origin])


# ── agui serve --cors-origin ───────────────────────────────────────────────────────────────────


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "corsmod.py").write_text(
        "import agui\n\n"
        "async def echo(run):\n"
        '    yield agui.TextMessageChunkEvent(message_id="m", delta="hello")\n\n'
        'app = agui.AgentApp(echo, path="/run")\n'
    )
    return tmp_path


def test_agui_serve_answers_the_preflight_with_the_option(app_dir: Path) -> None:
    served = Served(
        "corsmod:echo", "--port", "0", "--cors-origin", PAGE, "--cors-origin", "http://a:1",
        "--store", "memory://", cwd=app_dir,
    )  # fmt: skip
    try:
        url = served.url()
        assert served.serving.rstrip().endswith(f"(CORS: {PAGE}, http://a:1)")
        assert preflight(url).headers["access-control-allow-origin"] == PAGE
        assert preflight(url, origin="http://a:1").status_code == 200
        assert preflight(url, origin="http://b:1").status_code == 400
        allowed_by_browser(post(url))
        allowed_by_browser(httpx.get(url + "/capabilities", headers={"origin": PAGE}))
    finally:
        served.stop()
    assert "Traceback" not in "".join(served.stderr)


def test_agui_serve_without_it_refuses_the_preflight(app_dir: Path) -> None:
    served = Served("corsmod:echo", "--port", "0", cwd=app_dir)
    try:
        url = served.url()
        assert "CORS" not in served.serving
        assert preflight(url).status_code == 405
    finally:
        served.stop()


def test_agui_serve_warns_about_any_origin(app_dir: Path) -> None:
    served = Served("--port", "0", "--cors-origin", "*", cwd=app_dir)
    try:
        url = served.url()
        assert preflight(url, origin="http://x:9").headers["access-control-allow-origin"] == "*"
    finally:
        served.stop()
    warned = [line for line in served.stderr if "any origin" in line]
    assert len(warned) == 1, warned  # AgentApp's warning, once (not also the command's own)
    assert (
        warned[0]
        .rstrip()
        .endswith(
            "WARNING agui.server: CORS: web pages of any origin may call this agent (cors_origins "
            "'*'); outside development, name the front end's origin"
        )
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["corsmod:app", "--cors-origin", PAGE],
            "corsmod:app is an ASGI app: --cors-origin is for",
        ),
        (["--cors-origin", PAGE + "/"], "--cors-origin: 'http://localhost:3000/' is not an origin"),
    ],
    ids=["asgi-app", "not-an-origin"],
)
def test_agui_serve_refuses_what_it_cannot_serve(
    app_dir: Path, args: list[str], message: str
) -> None:
    done = subprocess.run(
        [str(AGUI), "serve", "--port", "0", *args],
        cwd=app_dir,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("agui serve: " + message), done.stderr
    assert done.stderr.count("\n") == 1


def test_the_option_is_in_the_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agui", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "--cors-origin ORIGIN" in done.stdout
