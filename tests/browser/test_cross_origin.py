"""A front end on another origin, in a real browser: headless Chromium (Debian's, driven by
Playwright for Python, which downloads no browser) opens a page served from one loopback port,
and the page runs the official TypeScript client (@ag-ui/client 1.0.0, served to it as ES modules
with an import map: tests/browser/page.html) against `agui serve` on another port.

- Without `--cors-origin` the browser refuses the run: the preflight gets no CORS answer, the
  console reports the CORS policy, the client's fetch fails and the POST never reaches the agent.
- With `--cors-origin <the page's origin>` the run completes: the assistant's text is in the page,
  the page reads the agent's capabilities, and nothing is logged on the console. With a store the
  page also reads the run's events again after their first id (Last-Event-ID, which the browser
  asks the server about first).

The npm packages come from tests/browser/package-lock.json, installed with `npm ci` into the
git-ignored .browser/ (again when the lock changes). A screenshot of each step goes to
.browser/screenshots/. Without Chromium (/usr/bin/chromium, or AGUI_CHROMIUM), npm or Playwright
the tests are skipped with the reason, unless AGUI_REQUIRE_BROWSER=1 (as .ci/run sets): then they
fail.
"""

from __future__ import annotations

import filecmp
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest

from ..conftest import ROOT
from ..test_cli_serve import Served

HERE = Path(__file__).resolve().parent
WORK = ROOT / ".browser"
"""Where the npm packages are installed and the screenshots saved (git-ignored)."""
SCREENSHOTS = WORK / "screenshots"
CHROMIUM = os.environ.get("AGUI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RUN_SECONDS = 30.0
"""How long the page may take to load the client and finish its run (a few seconds at most)."""


def unavailable(reason: str) -> None:
    """Skip with the reason; fail instead when AGUI_REQUIRE_BROWSER=1."""
    if os.environ.get("AGUI_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, and AGUI_REQUIRE_BROWSER=1 requires the browser tests")
    pytest.skip(reason)


# ── what the tests need ────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The page's npm packages, as tests/browser/package-lock.json pins them."""
    lock = HERE / "package-lock.json"
    installed = WORK / "package-lock.json"
    modules = WORK / "node_modules"
    if (
        installed.is_file()
        and filecmp.cmp(lock, installed, shallow=False)
        and (modules / "@ag-ui" / "client" / "package.json").is_file()
    ):
        return modules
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not on PATH (it installs the page's @ag-ui/client)")
        raise AssertionError("unreachable")
    WORK.mkdir(exist_ok=True)
    installed.unlink(missing_ok=True)
    shutil.copy(HERE / "package.json", WORK / "package.json")
    shutil.copy(lock, installed)
    done = subprocess.run(
        [npm, "ci", "--prefix", str(WORK), "--no-audit", "--no-fund", "--ignore-scripts"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        installed.unlink(missing_ok=True)
        pytest.fail(f"npm ci failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return modules


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """Playwright's sync API, for this module only: it keeps an event loop running on the main
    thread while it is started, where the other tests' asyncio.run() would refuse to run."""
    if not Path(CHROMIUM).is_file():
        unavailable(
            f"Chromium is not at {CHROMIUM} (apt-get install chromium; AGUI_CHROMIUM names another)"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Playwright for Python is not installed (pip install playwright)")
        raise
    with sync_playwright() as driver:
        yield driver


@pytest.fixture
def browser(playwright: Any, tmp_path: Path) -> Iterator[Any]:
    """A fresh Chromium (its own user-data-dir), headless, talking to nothing but loopback."""
    context = playwright.chromium.launch_persistent_context(
        str(tmp_path / "profile"),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
    )
    try:
        yield context
    finally:
        context.close()


class _PageFiles(http.server.SimpleHTTPRequestHandler):
    """The page, its script, and node_modules: a module path without its extension (the ES
    builds import "./internal/Observable") is redirected to the file, `.js` or `/index.js`,
    as node resolves it, so the browser resolves the module's own imports from there."""

    modules: Path

    def translate_path(self, path: str) -> str:
        route = unquote(urlsplit(path).path)
        if route in ("/", "/index.html"):
            return str(HERE / "page.html")
        if route == "/page.js":
            return str(HERE / "page.js")
        if route.startswith("/node_modules/"):
            found = (self.modules / route.removeprefix("/node_modules/")).resolve()
            if found.is_relative_to(self.modules.resolve()):
                return str(found)
        return str(HERE / "missing")

    def send_head(self) -> Any:
        route = unquote(urlsplit(self.path).path)
        target = Path(self.translate_path(self.path))
        if route.startswith("/node_modules/") and not target.is_file():
            for suffix, file in ((".js", target.with_name(target.name + ".js")),
                                 ("/index.js", target / "index.js")):  # fmt: skip
                if file.is_file():
                    self.send_response(302)
                    self.send_header("Location", quote(route + suffix))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
        return super().send_head()

    def guess_type(self, path: Any) -> str:
        if str(path).endswith((".js", ".mjs")):
            return "text/javascript"
        return super().guess_type(path)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def page_server(node_modules: Path) -> Iterator[str]:
    """The page's own origin: http://127.0.0.1:PORT."""
    handler = type("Files", (_PageFiles,), {"modules": node_modules})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def agent_server(tmp_path: Path) -> Iterator[Any]:
    """`start(*options)`: `agui serve` (the demo agent) on another loopback port; its URL."""
    running: list[Served] = []

    def start(*options: str) -> str:
        running.append(Served("--port", "0", *options, cwd=tmp_path))
        return running[-1].url()

    yield start
    for served in running:
        served.stop()


class Visit:
    """The page, opened on the page's origin against the agent: what the console, the network
    and the page showed."""

    def __init__(self, browser: Any, origin: str, agent: str, name: str, resume: bool) -> None:
        self.name = name
        self.console: list[str] = []
        self.failed: list[str] = []
        self.methods: list[str] = []
        self.page = page = browser.new_page()
        page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))
        page.on("requestfailed", lambda r: self.failed.append(f"{r.method} {r.url}: {r.failure}"))
        page.on("request", lambda r: self.methods.append(f"{r.method} {r.url}"))
        query = f"?agent={quote(agent, safe='')}" + ("&resume=1" if resume else "")
        page.goto(origin + "/" + query)
        self.shot("opened")
        page.wait_for_function(
            "['done', 'error'].includes(document.getElementById('status').dataset.state)",
            timeout=RUN_SECONDS * 1000,
        )
        self.shot("finished")

    def shot(self, step: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{self.name}-{step}.png"), full_page=True)

    def text(self, element: str) -> str:
        value: str = self.page.inner_text(f"#{element}")
        return value.strip()


# ── the tests ──────────────────────────────────────────────────────────────────────────────────


def test_without_cors_origin_the_browser_refuses_the_run(
    browser: Any, page_server: str, agent_server: Any
) -> None:
    agent = agent_server()
    visit = Visit(browser, page_server, agent, "refused", resume=False)
    assert visit.text("status") == "error", visit.console
    assert visit.text("error") == "TypeError: Failed to fetch"
    assert visit.text("answer") == ""
    blocked = [line for line in visit.console if "blocked by CORS policy" in line]
    assert blocked, visit.console
    assert f"from origin '{page_server}'" in blocked[0]
    assert "preflight" in blocked[0]
    assert any(line.startswith(f"POST {agent}:") for line in visit.failed), visit.failed


@pytest.mark.parametrize("store", [False, True], ids=["plain", "store"])
def test_with_cors_origin_the_run_completes_in_the_browser(
    browser: Any, page_server: str, agent_server: Any, store: bool
) -> None:
    options = ["--cors-origin", page_server] + (["--store", "memory://"] if store else [])
    agent = agent_server(*options)
    visit = Visit(browser, page_server, agent, "store" if store else "completed", resume=store)
    assert visit.text("status") == "done", (visit.text("error"), visit.console)
    assert visit.text("answer") == "You said: hello from the browser (22 characters)."
    assert visit.console == []
    assert visit.failed == []
    capabilities = json.loads(visit.text("capabilities"))
    assert capabilities["transport"]["streaming"] is True
    assert capabilities["transport"].get("resumable") is (True if store else None)
    assert [t["name"] for t in capabilities["tools"]["items"]] == ["count_characters"]
    if store:
        resumed = visit.text("resumed")
        assert resumed.startswith("after ") and resumed.endswith("ending RUN_FINISHED"), resumed
    assert f"POST {agent}" in visit.methods
