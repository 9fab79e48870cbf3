"""The dev console (agui.console) in a real browser: headless Chromium (Debian's, driven by
Playwright for Python) opens the page `agui serve` prints, on the server's own origin.

- The page and its files carry the strict Content-Security-Policy, index.html has no inline
  script or style, and the page loads with nothing on the browser console and no CSP violation.
- A message to the demo agent: its answer text, the count_characters tool call with its result,
  the state tree with the last STATE_DELTA's paths highlighted, the timeline (filter, an event's
  JSON) and the run's usage.
- The interrupt variant (forwardedProps {"interrupt": true}): the interrupt is shown; approving it
  runs the next run with the resume answer, which finishes with the counted answer.
- A recorded stream (JSON Lines of a real run, then its SSE capture) opens into the timeline.
- A 100,000-event run (an agent streaming one message in 100,000 deltas) shows its whole text,
  every event is in the run, and the page drew the message while it streamed (seen growing in
  several animation frames, not drawn once at the end). How fast, and the longest main-thread
  task, are figures of the console benchmark (benchmarks/console.py, `nox -s bench`).
- An HTTP error answering the POST (the agent's `validate` refuses the message, AgentApp answers
  400 with a JSON problem body): the status, the server's error and the problem are shown as text,
  the run as refused, and the next message is answered.
- Stop without a store: the page shows the run disconnected with Send usable again, and
  the agent on the server is cancelled (it writes a marker file on CancelledError/GeneratorExit).
- The JS logic (JSON Patch, the SSE parser, the run reducer) under `node --test`
  (tests/browser/console.test.mjs), when node is on PATH.

A screenshot of each step goes to .browser/screenshots/console-*.png; the chat's one is copied to
docs/images/console.png when that file is missing (AGUI_CONSOLE_SCREENSHOT=1: always). Without
Chromium or Playwright the tests are skipped, unless AGUI_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import subprocess
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT
from ..test_cli_serve import Served
from .test_cross_origin import CHROMIUM, SCREENSHOTS, WORK, browser, playwright, unavailable  # noqa: F401  (fixtures)

HERE = Path(__file__).resolve().parent
DOCS_IMAGE = ROOT / "docs" / "images" / "console.png"
WAIT_MS = 30_000
RUN_HANG_MS = 120_000
"""A hang bound: how long the 100,000-event run may take to show its final text (about a second)."""
EVENTS = 100_000
"""The deltas of the big run."""

VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
window.__longtasks = [];
try {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__longtasks.push([entry.startTime, entry.duration]);
  }).observe({ type: "longtask", buffered: true });
} catch (e) {}
"""

BIG_AGENT = f"""
import agui

COUNT = {EVENTS}


async def agent(run: agui.RunAgentInput):
    yield agui.TextMessageStartEvent(message_id="big", role="assistant")
    for i in range(COUNT - 1):
        yield agui.TextMessageContentEvent(message_id="big", delta=f"w{{i}} ")
    yield agui.TextMessageContentEvent(message_id="big", delta="THE END.")
    yield agui.TextMessageEndEvent(message_id="big")
"""


def expected_big_text() -> str:
    return "".join(f"w{i} " for i in range(EVENTS - 1)) + "THE END."


# ── what the tests need ────────────────────────────────────────────────────────────────────────


class Console:
    """`agui serve` (the demo agent, or what `args` name) with its console URL."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.served = Served("--port", "0", *args, cwd=cwd)
        self.agent = self.served.url()
        line = self.served.line()
        assert line is not None and line.startswith("console: "), self.served.stderr
        self.url = line.removeprefix("console: ").strip()

    def stop(self) -> None:
        self.served.stop()


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Any]:
    running: list[Console] = []

    def start(*args: str, cwd: Path = tmp_path) -> Console:
        running.append(Console(*args, cwd=cwd))
        return running[-1]

    yield start
    for served in running:
        served.stop()


class Page:
    """The console opened in the browser, with what its console and the CSP reported."""

    def __init__(self, browser: Any, url: str, name: str) -> None:  # noqa: F811
        self.name = name
        self.console: list[str] = []
        self.page = page = browser.new_page()
        page.set_viewport_size({"width": 1400, "height": 900})
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))
        page.add_init_script(VIOLATIONS)
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)

    def shot(self, step: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"console-{self.name}-{step}.png"
        self.page.screenshot(path=str(path))
        return path

    def send(self, text: str, forwarded: Any = None) -> None:
        if forwarded is not None:
            self.page.click(".composer summary")
            self.page.fill("#forwarded", json.dumps(forwarded))
        self.page.fill("#message", text)
        self.page.click("#send")

    def wait_text(self, selector: str, text: str) -> None:
        self.page.wait_for_function(
            "([s, t]) => [...document.querySelectorAll(s)].some((e) => e.textContent.includes(t))",
            arg=[selector, text],
            timeout=WAIT_MS,
        )

    def idle(self) -> None:
        self.page.wait_for_function(
            "() => !aguiConsole.current().busy && !document.getElementById('send').disabled",
            timeout=WAIT_MS,
        )

    def clean(self) -> None:
        """Nothing on the browser console, no CSP violation."""
        errors = [line for line in self.console if not line.startswith(("log:", "debug:"))]
        assert errors == [], errors
        assert self.page.evaluate("window.__violations") == []


@pytest.fixture
def chromium() -> None:
    if not Path(CHROMIUM).is_file():
        unavailable(f"Chromium is not at {CHROMIUM}")


# ── the page's files ───────────────────────────────────────────────────────────────────────────


class _Scripts(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self.sources: list[str] = []
        self.styles: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if any(name.startswith("on") for name in found):
            self.inline.append(f"<{tag}> handler")
        if "style" in found:
            self.styles.append(tag)
        if tag == "style":
            self.styles.append("<style>")
        if tag == "script":
            self._in_script = True
            if found.get("src"):
                self.sources.append(str(found["src"]))
                assert found.get("type") == "module"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data)


def test_the_page_has_no_inline_script_and_its_files_a_strict_policy(console: Any) -> None:
    served = console()
    assert served.url == served.agent + "/console"
    with urllib.request.urlopen(served.url) as response:
        page = response.read().decode()
        policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    parser = _Scripts()
    parser.feed(page)
    assert parser.inline == [] and parser.styles == []
    assert parser.sources == ["console/main.js"]
    files = sorted(
        p.name for p in (ROOT / "agui" / "console").iterdir() if p.suffix in (".js", ".css")
    )
    for name in [*files, "events.json"]:
        with urllib.request.urlopen(f"{served.url}/{name}") as response:
            assert response.headers["content-security-policy"] == policy, name
            assert response.headers["x-content-type-options"] == "nosniff"
            body = response.read().decode()
        assert "http://" not in body.replace("http://www.w3.org", "") or name == "events.json", name
        assert "https://" not in body, f"{name} refers to another origin"


# ── in the browser ─────────────────────────────────────────────────────────────────────────────


def test_a_message_to_the_demo_agent(browser: Any, console: Any) -> None:  # noqa: F811
    served = console()
    page = Page(browser, served.url, "chat")
    page.wait_text("#capabilities-summary", "tools: yes")
    page.shot("opened")
    page.send("hello console")
    page.wait_text("#chat .msg.assistant", "You said: hello console (13 characters).")
    page.idle()
    p = page.page
    call = p.inner_text("[data-tool-call]")
    assert "count_characters" in call and '{"text":"hello console"}' in call
    assert "→ " in call and "done" in call
    assert p.locator("#chat details.msg.reasoning").count() == 1
    assert p.locator("#chat details.msg.reasoning[open]").count() == 0  # collapsed
    assert p.locator("#chat .msg.activity").count() >= 1
    state = p.inner_text("#state")
    assert "echoes" in state and "last" in state
    assert p.locator("#state .changed").count() >= 1
    assert "STATE_DELTA changed" in p.inner_text("#changed")
    runs = p.inner_text("#runs")
    assert "success" in runs and "82 total (scripted demo)" in runs
    assert p.locator("#timeline .row:not([hidden])").count() > 10
    p.select_option("#filter", "TOOL_CALL_RESULT")
    rows = p.locator("#timeline .row:not([hidden])")
    assert rows.count() == 1 and "TOOL_CALL_RESULT" in rows.first.inner_text()
    rows.first.click()
    shown = p.inner_text("#event-json")
    assert '"type": "TOOL_CALL_RESULT"' in shown and '"content": "13"' in shown
    p.select_option("#filter", "")
    assert p.inner_text("#warnings") == ""  # the demo's stream is clean
    # several threads in the session: a new one is empty, the first one is kept
    first = p.evaluate("aguiConsole.current().id")
    p.click("#new-thread")
    p.wait_for_function("() => document.querySelectorAll('#threads option').length === 2")
    p.wait_for_function("() => !document.querySelector('#chat .msg.assistant')")
    p.select_option("#threads", first)
    page.wait_text("#chat .msg.assistant", "You said: hello console (13 characters).")
    assert p.locator("#timeline .row:not([hidden])").count() > 10
    page.shot("answered")
    if not DOCS_IMAGE.exists() or os.environ.get("AGUI_CONSOLE_SCREENSHOT") == "1":
        DOCS_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SCREENSHOTS / "console-chat-answered.png", DOCS_IMAGE)
    page.clean()


def test_the_interrupt_variant_is_approved(browser: Any, console: Any) -> None:  # noqa: F811
    served = console()
    page = Page(browser, served.url, "interrupt")
    page.send("count me", forwarded={"interrupt": True})
    page.wait_text(".interrupt", "Allow the assistant to call count_characters?")
    p = page.page
    card = p.inner_text(".interrupt")
    assert "tool_call" in card
    assert p.input_value(".interrupt .edit-args") == '{"text":"count me"}'
    assert p.locator(".interrupt fieldset input[type=checkbox][name=approved]").count() == 1
    assert "interrupted" in p.inner_text("#runs")
    page.idle()
    page.shot("pending")
    p.click(".interrupt button.approve")
    page.wait_text("#chat .msg.assistant", "You said: count me (8 characters).")
    page.idle()
    sent = p.evaluate("aguiConsole.current().runs[1].input")
    assert sent["resume"] == [
        {
            "interruptId": sent["resume"][0]["interruptId"],
            "status": "resolved",
            "payload": {"approved": True},
        }
    ]
    assert p.locator(".interrupt").count() == 0
    page.shot("approved")
    page.clean()


def _record(agent: str, message: str) -> list[str]:
    """The events of a real run of the demo, as the JSON texts of its SSE frames."""
    body = {
        "threadId": "recorded",
        "runId": "recorded-1",
        "protocolVersion": "1.0",
        "messages": [{"id": "u1", "role": "user", "content": message}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    request = urllib.request.Request(
        agent,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "accept": "text/event-stream"},
    )
    with urllib.request.urlopen(request) as response:
        text = response.read().decode()
    return [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize("form", ["jsonl", "sse"])
def test_a_recorded_stream_opens_into_the_timeline(
    browser: Any,  # noqa: F811
    console: Any,
    tmp_path: Path,
    form: str,
) -> None:
    served = console()
    events = _record(served.agent, "from a file")
    file = tmp_path / f"run.{form}"
    if form == "jsonl":
        file.write_text("\n".join(events) + "\n")
    else:
        file.write_text("".join(f"data: {e}\n\n" for e in events))
    page = Page(browser, served.url, f"recorded-{form}")
    served.stop()  # from here on no server: the page has what it needs
    page.page.set_input_files("#open", str(file))
    page.wait_text("#chat .msg.info", f"{len(events)} events")
    p = page.page
    assert f"run.{form} (recording)" in p.inner_text("#threads")
    assert "You said: from a file (11 characters)." in p.inner_text("#chat")
    assert p.locator("#timeline .row:not([hidden])").count() > 10
    assert p.evaluate("aguiConsole.current().events.map((e) => e.type)") == [
        json.loads(e)["type"] for e in events
    ]
    p.select_option("#filter", "RUN_STARTED")
    assert p.locator("#timeline .row:not([hidden])").first.inner_text().split()[:1] == ["0"]
    assert "echoes" in p.inner_text("#state")
    assert p.inner_text("#warnings") == ""
    page.shot("opened")
    page.clean()


def test_a_100000_event_run(browser: Any, console: Any, tmp_path: Path) -> None:  # noqa: F811
    """The run comes through whole, and the page draws the message as it streams: checked once
    per animation frame, the message is seen at several sizes before its end. (A page that read
    the whole stream in one task, or drew it once at the end, would show it whole at the first
    look.) No figure: the console benchmark times this run."""
    (tmp_path / "big_agent.py").write_text(textwrap.dedent(BIG_AGENT))
    served = console("big_agent:agent")
    page = Page(browser, served.url, "big")
    seen = page.page.evaluate(
        """(bound) => new Promise((resolve) => {
            // the message's size as drawn: its blocks, and the text nodes of the last one (the
            // console appends one text node per frame that has new text)
            const sizes = new Set();
            const check = () => {
              const text = document.querySelector("#chat .msg.assistant .text");
              const last = text && text.lastElementChild && text.lastElementChild.lastChild;
              if (last && last.data && last.data.endsWith("THE END.")) {
                resolve({ length: text.textContent.length, sizes_before_the_end: sizes.size });
              } else {
                if (last) sizes.add(`${text.childElementCount}/${text.lastElementChild.childNodes.length}`);
                requestAnimationFrame(check);
              }
            };
            setTimeout(() => resolve({ timed_out: true, sizes_before_the_end: sizes.size }), bound);
            document.getElementById("message").value = "go";
            document.getElementById("send").click();
            requestAnimationFrame(check);
        })""",
        RUN_HANG_MS,
    )
    assert "timed_out" not in seen, "the final text was not shown"  # hang bound
    page.idle()
    p = page.page
    events = p.evaluate("aguiConsole.current().events.length")
    assert events == EVENTS + 4  # RUN_STARTED, START, the deltas, END, RUN_FINISHED
    assert seen["length"] == len(expected_big_text()), seen
    assert (
        p.evaluate("document.querySelector('#chat .msg.assistant .text').textContent")
        == expected_big_text()
    )
    assert seen["sizes_before_the_end"] >= 2, seen  # drawn while it streamed
    page.shot("done")
    page.clean()


# ── the JS logic, under node ───────────────────────────────────────────────────────────────────


def test_the_console_modules_under_node() -> None:
    node = shutil.which("node")
    if node is None:
        unavailable("node is not on PATH (it runs tests/browser/console.test.mjs)")
        raise AssertionError("unreachable")
    # the modules are ES modules in .js files without a package.json: node 20 reads them as such
    # with --experimental-detect-module, later releases by default
    flag = ["--experimental-detect-module"]
    if subprocess.run([node, *flag, "-e", ""], capture_output=True).returncode != 0:
        flag = []
    done = subprocess.run(
        [node, *flag, "--test", str(HERE / "console.test.mjs")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ── durable runs: connect, resume, stop ────────────────────────────────────────────────────────

SLOW_AGENT = """
import asyncio

import agui


async def agent(run: agui.RunAgentInput):
    count = int(run.forwarded_props.get("count", 300))
    yield agui.TextMessageStartEvent(message_id=f"slow-{run.run_id}", role="assistant")
    for i in range(count):
        yield agui.TextMessageContentEvent(message_id=f"slow-{run.run_id}", delta=f"{i} ")
        await asyncio.sleep(0.01)
    yield agui.TextMessageEndEvent(message_id=f"slow-{run.run_id}")
"""


def test_connect_to_a_thread_of_a_durable_store(browser: Any, console: Any) -> None:  # noqa: F811
    served = console("--store", "memory://")
    first = Page(browser, served.url, "durable-first")
    first.send("keep me")
    first.wait_text("#chat .msg.assistant", "You said: keep me (7 characters).")
    first.idle()
    thread = first.page.evaluate("aguiConsole.current().id")
    other = Page(browser, served.url, "durable-connect")
    other.page.fill("#connect-id", thread)
    other.page.click("#connect")
    other.wait_text("#chat .msg.assistant", "You said: keep me (7 characters).")
    other.idle()
    p = other.page
    assert "keep me" in p.inner_text("#chat .msg.user")
    assert "echoes" in p.inner_text("#state")
    assert f"{thread} (connected)" in p.inner_text("#threads")
    assert "MESSAGES_SNAPSHOT" in p.evaluate("aguiConsole.current().events.map((e) => e.type)")
    other.shot("connected")
    first.clean()
    other.clean()
    p.fill("#connect-id", "no-such-thread")  # an HTTP error, shown plainly
    p.click("#connect")
    other.wait_text("#chat .msg.error", "HTTP 404")
    assert "no-such-thread (connected)" in p.inner_text("#threads")
    other.console[:] = [line for line in other.console if "404" not in line]
    other.clean()


def test_a_dropped_stream_is_resumed(browser: Any, console: Any, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    served = console("slow_agent:agent", "--store", "memory://")
    page = Page(browser, served.url, "resume")
    page.send("go", forwarded={"count": 300})
    page.wait_text("#chat .msg.assistant", "20 ")
    p = page.page
    p.evaluate("aguiConsole.dropConnection()")
    page.idle()
    assert "dropped" in p.inner_text("#runs")
    assert p.is_enabled("#resume")
    page.shot("dropped")
    p.click("#resume")
    page.wait_text("#chat .msg.assistant", "299 ")
    page.idle()
    text = p.inner_text("#chat .msg.assistant .text")
    assert text.split() == [str(i) for i in range(300)]  # no gap, no duplicate
    assert "success" in p.inner_text("#runs")
    page.shot("resumed")
    page.clean()


def test_a_durable_run_is_stopped(browser: Any, console: Any, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    served = console("slow_agent:agent", "--store", "memory://")
    page = Page(browser, served.url, "stop")
    page.send("go", forwarded={"count": 3000})
    page.wait_text("#chat .msg.assistant", "20 ")
    page.page.click("#stop")
    # The run's stream can end (cancelled) before the stop request's answer is read, so the
    # note is waited for rather than expected at idle.
    page.wait_text("#chat", "stop: HTTP 202")
    page.idle()
    p = page.page
    assert "cancelled" in p.inner_text("#runs")
    assert "2999 " not in p.inner_text("#chat .msg.assistant")
    page.shot("stopped")
    page.clean()


@pytest.mark.parametrize("how", ["edited", "form-declined"])
def test_an_interrupt_answered_with_edited_arguments_or_the_form(
    browser: Any,  # noqa: F811
    console: Any,
    how: str,
) -> None:
    served = console()
    page = Page(browser, served.url, f"interrupt-{how}")
    page.send("count me", forwarded={"interrupt": True})
    page.wait_text(".interrupt", "Allow the assistant to call count_characters?")
    page.idle()
    p = page.page
    if how == "edited":
        p.fill(".interrupt .edit-args", '{"text": "something else"}')
        p.click(".interrupt button.approve")
        expected = {"approved": True, "editedArgs": {"text": "something else"}}
    else:
        p.click(".interrupt details.form summary")
        # the demo's responseSchema: `approved` a checkbox, `editedArgs` (an object without
        # properties) a raw JSON box, left empty
        assert p.locator(".interrupt textarea[name=editedArgs]").count() == 1
        assert not p.is_checked(".interrupt input[name=approved]")
        page.shot("form")
        p.click(".interrupt button.submit")
        expected = {"approved": False}
    page.idle()
    sent = p.evaluate("aguiConsole.current().runs[1].input.resume")
    assert sent == [
        {"interruptId": sent[0]["interruptId"], "status": "resolved", "payload": expected}
    ]
    answer = p.locator("#chat .msg.assistant .text").last.inner_text()
    if how == "edited":
        assert "(14 characters)" in answer, answer
    else:
        assert "characters" not in answer or "not" in answer, answer
    page.shot("answered")
    page.clean()


FAILING_AGENT = """
import agui


async def agent(run: agui.RunAgentInput):
    yield agui.TextMessageStartEvent(message_id="m1", role="assistant")
    yield agui.TextMessageContentEvent(message_id="m1", delta="about to fail")
    raise RuntimeError("the agent broke")
"""


def test_a_run_error_is_shown_plainly(
    browser: Any,  # noqa: F811
    console: Any,
    tmp_path: Path,
) -> None:
    (tmp_path / "failing_agent.py").write_text(FAILING_AGENT)
    served = console("failing_agent:agent")
    page = Page(browser, served.url, "errors")
    page.send("go")
    page.wait_text("#chat .msg.error", "RUN_ERROR")
    page.idle()
    p = page.page
    assert "about to fail" in p.inner_text("#chat .msg.assistant")
    assert "error" in p.inner_text("#runs")
    p.click(".composer summary")
    p.fill("#forwarded", "[not json")
    p.click("#send")
    page.wait_text("#chat .msg.error", "forwardedProps is not JSON")
    page.shot("shown")
    page.clean()


PICKY_AGENT = """
import agui


class Picky:
    \"\"\"Refuses (validate, before the stream opens) a last user message containing "forbidden";
    answers any other.\"\"\"

    def validate(self, run: agui.RunAgentInput) -> list[agui.Problem]:
        last = len(run.messages) - 1
        message = run.messages[last]
        if message.role == "user" and "forbidden" in str(message.content):
            return [agui.Problem(f"/messages/{last}/content", "refused", "no forbidden words here")]
        return []

    async def __call__(self, run: agui.RunAgentInput):
        text = run.messages[-1].content
        yield agui.TextMessageStartEvent(message_id=f"a-{run.run_id}", role="assistant")
        yield agui.TextMessageContentEvent(message_id=f"a-{run.run_id}", delta=f"allowed: {text}")
        yield agui.TextMessageEndEvent(message_id=f"a-{run.run_id}")


agent = Picky()
"""


def test_an_http_error_answering_the_post_is_shown_plainly(
    browser: Any,  # noqa: F811
    console: Any,
    tmp_path: Path,
) -> None:
    (tmp_path / "picky_agent.py").write_text(PICKY_AGENT)
    served = console("picky_agent:agent")
    page = Page(browser, served.url, "refused")
    page.send("a forbidden word")
    page.wait_text("#chat .msg.error", "HTTP 400")
    page.idle()
    p = page.page
    shown = p.locator("#chat .msg.error").last.inner_text()
    # the status, the server's error and the agent's problem, as text rather than the JSON body
    assert "HTTP 400 Bad Request: the agent cannot run this input" in shown, shown
    assert "/messages/0/content: no forbidden words here (refused)" in shown, shown
    assert '"error"' not in shown, shown
    assert p.locator("#chat .msg.assistant").count() == 0
    row = p.locator("#runs tr").last
    assert row.get_attribute("class") == "run-refused"
    assert row.locator(".run-status").inner_text() == "refused"
    assert "last run refused" in p.inner_text("#status")
    page.shot("shown")
    # the page is still usable: the next message is sent and answered
    assert p.is_enabled("#send")
    page.send("a fine word")
    page.wait_text("#chat .msg.assistant", "allowed: a fine word")
    page.idle()
    assert [r.inner_text() for r in p.locator("#runs .run-status").all()] == ["refused", "success"]
    page.shot("then-answered")
    # Chromium reports the 400 on the browser console itself ("Failed to load resource")
    page.console[:] = [line for line in page.console if "status of 400" not in line]
    page.clean()


STREAMING_AGENT = """
import asyncio
from pathlib import Path

import agui

MARKER = Path({marker!r})


async def agent(run: agui.RunAgentInput):
    \"\"\"A text delta every 100 ms for 60 s; writes MARKER when the server cancels it.\"\"\"
    message = f"slow-{{run.run_id}}"
    yield agui.TextMessageStartEvent(message_id=message, role="assistant")
    try:
        for i in range(600):
            yield agui.TextMessageContentEvent(message_id=message, delta=f"{{i}} ")
            await asyncio.sleep(0.1)
    except (asyncio.CancelledError, GeneratorExit) as exc:
        MARKER.write_text(type(exc).__name__)
        raise
    yield agui.TextMessageEndEvent(message_id=message)
"""


def test_stop_without_a_store_closes_the_connection(
    browser: Any,  # noqa: F811
    console: Any,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "cancelled"
    (tmp_path / "streaming_agent.py").write_text(STREAMING_AGENT.format(marker=str(marker)))
    served = console("streaming_agent:agent")  # no --store
    page = Page(browser, served.url, "stop-no-store")
    page.send("go")
    page.wait_text("#chat .msg.assistant", "5 ")
    p = page.page
    assert p.is_disabled("#send") and p.is_enabled("#stop")
    assert not marker.exists()
    p.click("#stop")
    # the run is shown as stopped, and Send can be used again (in milliseconds; WAIT_MS is a hang
    # bound, and the agent's own run would last 60 s)
    p.wait_for_function(
        """() => {
          const run = aguiConsole.current().runs[0];
          return run.status === "disconnected"
            && document.querySelector("#runs .run-status").textContent === "disconnected"
            && !document.getElementById("send").disabled
            && document.getElementById("stop").disabled;
        }""",
        timeout=WAIT_MS,
    )
    assert "stopped: the console closed the connection" in p.inner_text("#chat .msg.info")
    assert "last run disconnected" in p.inner_text("#status")
    assert p.inner_text("#runs tr td:nth-child(4)").endswith(" ms")  # its duration: it is over
    # the server saw the disconnect: the agent was cancelled
    deadline = time.monotonic() + WAIT_MS / 1000
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the agent was not cancelled: " + "".join(served.served.stderr)
    shown = p.inner_text("#chat .msg.assistant")
    time.sleep(0.5)  # nothing more arrives
    assert p.inner_text("#chat .msg.assistant") == shown
    assert "599 " not in shown
    page.shot("stopped")
    page.clean()


# ── the stored threads (the thread API) ──────────────────────────────────────────────────────


def test_the_thread_picker_lists_the_stored_threads_and_opens_one(
    browser: Any,  # noqa: F811
    console: Any,
) -> None:
    """With a store, the picker lists the caller's threads from GET {path}/threads, newest
    first, with the last run's outcome; picking one connects to it (its history in the chat).
    Without a store the picker stays hidden."""
    served = console("--store", "memory://")
    first = Page(browser, served.url, "stored-first")
    first.send("older thread")
    first.wait_text("#chat .msg.assistant", "You said: older thread")
    first.idle()
    older = first.page.evaluate("aguiConsole.current().id")
    first.page.click("#new-thread")
    first.send("newer thread")
    first.wait_text("#chat .msg.assistant", "You said: newer thread")
    first.idle()
    newer = first.page.evaluate("aguiConsole.current().id")
    other = Page(browser, served.url, "stored-picker")
    p = other.page
    p.wait_for_selector("#stored-group:not([hidden])", timeout=WAIT_MS)
    listed = p.evaluate("[...document.querySelectorAll('#stored option')].map((o) => o.value)")
    assert listed == ["", newer, older]
    labels = p.inner_text("#stored")
    assert f"{newer} · success" in labels and f"{older} · success" in labels
    other.shot("listed")
    p.select_option("#stored", older)
    other.wait_text("#chat .msg.assistant", "You said: older thread")
    other.idle()
    assert "older thread" in p.inner_text("#chat .msg.user")
    assert f"{older} (connected)" in p.inner_text("#threads")
    assert p.evaluate("aguiConsole.current().id") == older
    other.shot("opened")
    # A run of this page puts its thread first once it ends.
    p.click("#new-thread")
    other.send("newest of all")
    other.wait_text("#chat .msg.assistant", "You said: newest of all")
    other.idle()
    newest = p.evaluate("aguiConsole.current().id")
    p.wait_for_function(
        "(id) => document.querySelectorAll('#stored option')[1]?.value === id",
        arg=newest,
        timeout=WAIT_MS,
    )
    first.clean()
    other.clean()
    plain = console("--port", "0")  # no store: no thread API
    page = Page(browser, plain.url, "stored-none")
    assert page.page.evaluate("document.getElementById('stored-group').hidden") is True
    page.clean()
