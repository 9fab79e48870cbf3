"""The checks every framework of the integration matrix passes through agui, written once.

A framework's test module (tests/integrations/test_<key>.py) describes its example, a module
under examples/ whose `agent` attribute is the framework's agent made an agui agent (the
recipe of docs/integrations/<key>.md), in a `Framework`, and subclasses `MatrixChecks`:

    FRAMEWORK = Framework(key="pydantic_ai", name="PydanticAI", ...)

    class TestPydanticAI(MatrixChecks):
        framework = FRAMEWORK

Each check serves the example as a user does, `agui serve MODULE:agent --app-dir examples` in a
subprocess on a free loopback port (the nox session's fresh virtualenv holds the framework's
pinned releases and nothing else of the other frameworks'), and reads it with the clients users
have: `agui.Conversation` through `HttpAgent`, and the official TypeScript client 1.0.0 and
0.0.59 (tests/interop's scripts, the packages under .interop/). Checks that only some frameworks
can have (an approval, the native endpoint's events) are written in the framework's module and
marked `@pytest.mark.matrix("...")` as these are, so the matrix records them too.

The shared checks that need no store of their own run against one server per framework (a
class-scoped fixture, `agui serve ... --store memory://`): a framework's imports are paid twice
per session, not once per check. A shared check the framework cannot pass is named in
`Framework.known_failures` with the reason: it runs as a strict xfail (a fix shows as a failure
to update), and the table marks it ⚠️ with the reason on the framework's page.

Every test marked `matrix(CHECK)` has its outcome recorded under the framework and the check
(tests/integrations/conftest.py); `nox -s integrations` writes them to .integrations/<key>.json
and `python -m tests.integrations.matrix` turns every such file into the table of
docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Literal

import attrs
import httpx
import pytest

import agui
from agui.stream.lifecycle import AGENT_FAILED
from tests.integrations import REQUIRED
from tests.usage.support import STARTUP, Server

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"
INTEROP = ROOT / "tests" / "interop"
WORK = ROOT / ".interop"
RESULTS = ROOT / ".integrations"
DOCS = ROOT / "docs" / "integrations.md"
TIMEOUT = 120.0
"""A hang bound for one client run (a framework's first run imports a lot)."""

RELEASES = {"1.0.0": "@ag-ui/client", "0.0.59": "client-0-0-59"}
"""The releases of the official client every framework is read by, by their names under
.interop/node_modules (0.0.59 is the one CopilotKit's runtime 1.75 bundles)."""

CHECKS = (
    "two turns, memory store",
    "two turns, sqlite store",
    "TS client 1.0.0",
    "TS client 0.0.59",
    "resume after a cut",
    "approval",
    "capabilities",
    "tool exception withheld",
    "native endpoint parity",
)
"""The matrix's columns, in order; a check a framework's module does not mark is "n/a"."""


@attrs.frozen
class Framework:
    """What the shared checks need to know of a framework's example."""

    key: str
    """The example module's name under examples/ (`agui serve KEY:agent`), the test module's
    suffix, the nox parametrization and the docs page: "pydantic_ai"."""
    name: str
    """As people write it: "PydanticAI"."""
    packages: tuple[str, ...]
    """The distributions whose installed versions the matrix shows ("pydantic-ai-slim")."""
    question: str
    """A first message that makes the example's model call its tool."""
    answer: str
    """Text the assistant's last message of that run holds."""
    tool: str
    """The name of the tool the example's model calls."""
    follow_up: str
    """The second turn's message."""
    follow_up_answer: str
    """Text the assistant's last message of the second run holds."""
    failing_question: str
    """A message that makes the tool raise an exception whose text holds `secret`."""
    secret: str = "hunter2-db-password"
    """What the failing tool's exception says, which must never reach a client."""
    tool_errors: Literal["raise", "model"] = "raise"
    """What the framework does with a tool's exception: "raise", the run fails (RUN_ERROR);
    "model", the error goes back to the model as the tool's result and the run goes on."""
    capabilities: dict[str, Any] = attrs.field(factory=dict)
    """Members GET /capabilities must answer (as wire JSON, a subset of the answer) besides
    transport: what the framework's agent declares."""
    serve_args: tuple[str, ...] = ()
    """More `agui serve` options the example's recipe uses."""
    module: str | None = None
    """The example module's name under examples/ when it is not `key`: a key that is the
    framework's own package name ("pydantic_ai") would shadow the package, since `agui serve
    --app-dir examples` puts examples/ first on sys.path."""
    startup: float = STARTUP
    """Seconds `agui serve` may take to say it listens: the framework's imports included."""
    tool_tracebacks: bool = False
    """The framework logs a failing tool's exception with its traceback itself (on the server's
    stderr, the operator's view): such tracebacks are allowed, only those, each ending in the
    failing tool's `secret`."""
    native_fails: dict[str, str] = attrs.field(factory=dict)
    """NATIVE_CHECKS the framework's own endpoint fails, each with a part of what is seen when
    it does (the check asserts the failure and that text: a native endpoint that starts to pass
    fails the run until it is removed from here)."""
    known_failures: dict[str, str] = attrs.field(factory=dict)
    """Shared checks (names of CHECKS) the framework does not pass, each with the reason (a
    strict xfail: a check that starts to pass fails the run until it is removed from here)."""

    def versions(self) -> dict[str, str]:
        return {name: importlib.metadata.version(name) for name in self.packages}


def load_example(framework: Framework) -> ModuleType:
    """examples/MODULE.py imported afresh (a new module object each call: an example's agent may
    keep sessions or approvals in memory), registered in sys.modules under its name, since some
    frameworks read a tool's string annotations in its module's namespace."""
    name = framework.module or framework.key
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ── serving the example ────────────────────────────────────────────────────────────────────────


@contextmanager
def serving(framework: Framework, *options: str, log: list[str] | None = None) -> Iterator[Server]:
    """`agui serve KEY:agent --app-dir examples OPTIONS` on a free port, listening: the
    server (its `.stderr` grows as it logs). On exit it is stopped with Ctrl-C, must exit
    cleanly without a traceback (but a failing tool's, for a framework that logs them), and what
    it wrote on stderr is added to `log`."""
    words = [
        "agui",
        "serve",
        f"{framework.module or framework.key}:agent",
        "--app-dir",
        str(EXAMPLES),
        "--port",
        "{port}",
        "--no-console",
        *framework.serve_args,
        *options,
    ]
    ready = ["serving ", "at http://127.0.0.1:{port}/agent"]
    server = Server(words, ROOT, ready, startup=framework.startup)
    try:
        server.wait_ready()
        yield server
    finally:
        code, stderr = server.stop()
        if log is not None:
            log.append(stderr)
    # 130: agui serve stopped by Ctrl-C. What it logged is the operator's view: no traceback.
    assert code in (0, 130), f"agui serve exited {code}:\n{stderr}"
    assert unexpected_tracebacks(framework, stderr) == [], stderr


@contextmanager
def served(framework: Framework, *options: str, log: list[str] | None = None) -> Iterator[str]:
    """`serving`, for the agent's URL."""
    with serving(framework, *options, log=log) as server:
        yield server.base + "/agent"


TRACEBACK = "Traceback (most recent call last):"
CHAINED = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
"""What Python prints between the tracebacks of a chain of exceptions: one traceback, judged by
its last exception (ADK wraps a failing tool's exception and logs the chain)."""


def unexpected_tracebacks(framework: Framework, stderr: str) -> list[str]:
    """The tracebacks of `stderr` that are not allowed: every one, unless the framework logs its
    failing tools' (`tool_tracebacks`), then those that do not end in the tool's secret (a chain
    of exceptions counts as one traceback, ending in its last exception)."""
    found = []
    chunks = stderr.split(TRACEBACK)[1:]
    for index, chunk in enumerate(chunks):
        if index + 1 < len(chunks) and chunk.rstrip().endswith(CHAINED):
            continue  # a link of a chain: the chain's last traceback is judged
        lines = chunk.splitlines()[1:]
        body = [lines[0]] if lines else []
        for line in lines[1:]:  # the frames are indented; the exception's line is not
            body.append(line)
            if line and not line.startswith((" ", "\t")):
                break
        allowed = framework.tool_tracebacks and bool(body) and framework.secret in body[-1]
        if not allowed:
            found.append(TRACEBACK + "\n" + "\n".join(body))
    return found


def run_turns(url: str, thread: str, *messages: str) -> agui.Conversation:
    """One Conversation through one HttpAgent, a run per message, each checked a success."""

    async def go() -> agui.Conversation:
        conversation = agui.Conversation(thread_id=thread)
        async with agui.HttpAgent(url, timeout=TIMEOUT) as agent:
            for message in messages:
                result = await conversation.run(agent, message)
                assert result is not None
                assert result.outcome == "success", (result.error_code, result.error_message)
        return conversation

    return asyncio.run(go())


def texts(messages: list[dict[str, Any]], role: str) -> list[str]:
    """The string content of the messages of `role`, in order."""
    return [m["content"] for m in messages if m.get("role") == role and m.get("content")]


# ── the official TypeScript client ─────────────────────────────────────────────────────────────


def node() -> str:
    """node, with the pinned client releases under .interop/ and the scripts beside them."""
    found = shutil.which("node")
    missing = "node is not on PATH" if found is None else None
    for release, package in RELEASES.items():
        manifest = WORK / "node_modules" / package / "package.json"
        if missing is None and not manifest.is_file():
            missing = f"{package} is not under {WORK}"
        elif missing is None:
            assert json.loads(manifest.read_text())["version"] == release, package
    if found is None or missing is not None:
        if REQUIRED:
            pytest.fail(f"AGUI_REQUIRE_INTEGRATIONS=1, but {missing}")
        pytest.skip(f"{missing} (`nox -s integrations` installs it)")
    for script in ("ts_client.mjs", "ts_era_client.mjs", "console_capture.mjs"):
        shutil.copy(INTEROP / script, WORK / script)
    return found


def ts_run(release: str, url: str, message: str, thread: str) -> dict[str, Any]:
    """One run of the official client `release`: the report its script prints."""
    args = (
        ["ts_client.mjs", url]
        if release == "1.0.0"
        else ["ts_era_client.mjs", RELEASES[release], url]
    )
    env = {k: v for k, v in os.environ.items() if k != "SUPPRESS_TRANSFORMATION_WARNINGS"}
    done = subprocess.run(
        [node(), *args, "--message", message, "--thread", thread],
        cwd=WORK,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,  # hang bound
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


# ── raw streams ────────────────────────────────────────────────────────────────────────────────


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """(id, event JSON) of each SSE frame of `lines` (comments and keep-alives skipped)."""
    frame_id: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield frame_id, json.loads("\n".join(data))
            frame_id, data = None, []
        elif line.startswith("id:"):
            frame_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def run_body(thread: str, run: str, message: str) -> dict[str, Any]:
    """A RunAgentInput as wire JSON, with one user message, from a 1.0 client (as agui's and
    the official 1.0 client's requests are: a pre-1.0 client cannot resume)."""
    return {
        "protocolVersion": agui.PROTOCOL_VERSION,
        "threadId": thread,
        "runId": run,
        "messages": [{"id": f"{run}-user", "role": "user", "content": message}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def events_of(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every event of one run, read whole over SSE."""
    with (
        httpx.Client(timeout=TIMEOUT) as client,
        client.stream("POST", url, json=body, headers={"accept": "text/event-stream"}) as response,
    ):
        assert response.status_code == 200, response.read()
        return [event for _, event in sse_events(response.iter_lines())]


IDS = (
    "threadId",
    "runId",
    "parentRunId",
    "messageId",
    "toolCallId",
    "parentMessageId",
    "id",
    "entityId",  # REASONING_ENCRYPTED_VALUE's message or tool call
)


def normalized(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with timestamps, rawEvent and a RAW event's `event` (the framework's own object,
    with its own ids and clocks) removed, every id replaced by its order of first appearance
    ("#0", "#1", ...) and any other string equal to an id seen before (a state member or a tool
    argument naming a message, say) replaced likewise, so two runs of one script compare equal."""
    seen: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key in ("timestamp", "rawEvent"):
                    continue
                if key in IDS and isinstance(item, str):
                    out[key] = seen.setdefault(item, f"#{len(seen)}")
                else:
                    out[key] = walk(item)
            return out
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, str) and value in seen:
            return seen[value]
        return value

    def event(item: dict[str, Any]) -> dict[str, Any]:
        if item.get("type") == "RAW":
            item = {k: v for k, v in item.items() if k != "event"}
        out: dict[str, Any] = walk(item)
        return out

    return [event(item) for item in events]


# ── the checks ─────────────────────────────────────────────────────────────────────────────────


class MatrixChecks:
    """The checks every framework passes (see the module)."""

    framework: ClassVar[Framework]

    @pytest.fixture(scope="class")
    @classmethod
    def shared(cls) -> Iterator[Server]:
        """The example served once with a memory store for the checks that need no other: each
        uses threads and runs of its own."""
        with serving(cls.framework, "--store", "memory://") as server:
            yield server

    @pytest.mark.parametrize(
        "store",
        [
            pytest.param("memory", marks=pytest.mark.matrix("two turns, memory store")),
            pytest.param("sqlite", marks=pytest.mark.matrix("two turns, sqlite store")),
        ],
    )
    def test_two_turns_with_a_store(self, store: str, tmp_path: Path, shared: Server) -> None:
        """Two turns on one thread, each run kept; the second sees the first (the framework is
        handed the whole history agui's store and the client keep), and a new client that
        connects to the thread holds the same messages."""
        fw = self.framework
        with ExitStack() as stack:
            if store == "memory":
                url = shared.base + "/agent"
            else:
                db = f"sqlite:///{tmp_path / 'runs.db'}"
                url = stack.enter_context(served(fw, "--store", db))
            ran = run_turns(url, f"thread-{store}", fw.question, fw.follow_up)
            kept = agui.Conversation(thread_id=f"thread-{store}")
            asyncio.run(kept.connect(agui.HttpAgent(url, timeout=TIMEOUT)))
        messages = ran.messages_json()
        assert texts(messages, "user") == [fw.question, fw.follow_up]
        answers = texts(messages, "assistant")
        assert any(fw.answer in text for text in answers), answers
        assert fw.follow_up_answer in answers[-1], answers
        calls = [c["function"]["name"] for m in messages for c in m.get("toolCalls", [])]
        assert fw.tool in calls, messages
        assert ran.warnings == []
        assert texts(kept.messages_json(), "user") == [fw.question, fw.follow_up]
        assert texts(kept.messages_json(), "assistant")[-1] == answers[-1]

    @pytest.mark.parametrize(
        "release",
        [
            pytest.param("1.0.0", marks=pytest.mark.matrix("TS client 1.0.0")),
            pytest.param("0.0.59", marks=pytest.mark.matrix("TS client 0.0.59")),
        ],
    )
    def test_the_typescript_client(self, release: str, shared: Server) -> None:
        """The official client runs it with nothing to warn about, and holds the tool call and
        the answer."""
        fw = self.framework
        report = ts_run(release, shared.base + "/agent", fw.question, f"thread-ts-{release}")
        assert report["error"] is None and report["ok"] is True, report
        assert report["warnings"] == []
        assert report["events"][0] == "RUN_STARTED" and report["events"][-1] == "RUN_FINISHED"
        messages = report["messages"]
        calls = [c["function"]["name"] for m in messages for c in m.get("toolCalls") or []]
        assert fw.tool in calls, messages
        assert any(fw.answer in text for text in texts(messages, "assistant")), messages

    @pytest.mark.matrix("resume after a cut")
    def test_a_cut_stream_is_resumed(self, shared: Server) -> None:
        """With a store, a client that reads three frames and drops the connection (having said
        it resumes) gets the rest of the run from the frame after its last: together what an
        uncut run sends, nothing lost, nothing twice."""
        fw = self.framework
        url = shared.base + "/agent"
        whole = events_of(url, run_body("thread-whole", "run-whole", fw.question))
        body = run_body("thread-cut", "run-cut", fw.question)
        head: list[dict[str, Any]] = []
        cursor = None
        with (
            httpx.Client(timeout=TIMEOUT) as client,
            client.stream(
                "POST", url, json=body, headers={"accept": "text/event-stream", "agui-resume": "1"}
            ) as response,
        ):
            assert response.headers.get("agui-resumable") == "1"
            for frame_id, event in sse_events(response.iter_lines()):
                head.append(event)
                cursor = frame_id
                if len(head) == 3:
                    break
        assert cursor is not None
        with (
            httpx.Client(timeout=TIMEOUT) as client,
            client.stream(
                "GET",
                f"{url}/runs/run-cut/events",
                headers={"accept": "text/event-stream", "last-event-id": cursor},
            ) as response,
        ):
            assert response.status_code == 200, response.read()
            tail = [event for _, event in sse_events(response.iter_lines())]
        assert tail, "nothing after the cut"
        assert tail[-1]["type"] == "RUN_FINISHED"
        assert normalized(head + tail) == normalized(whole)

    @pytest.mark.matrix("capabilities")
    def test_capabilities(self, shared: Server) -> None:
        """GET /capabilities answers agui's transport merged with what the framework declares."""
        fw = self.framework
        answer = httpx.get(f"{shared.base}/agent/capabilities", timeout=STARTUP).json()
        assert "transport" in answer
        for key, wanted in fw.capabilities.items():
            assert key in answer, answer
            have = answer[key]
            if isinstance(wanted, dict):
                assert {k: have.get(k) for k in wanted} == wanted, answer
            else:
                assert have == wanted, answer

    @pytest.mark.matrix("tool exception withheld")
    def test_an_exception_in_a_tool_stays_out_of_the_client(self, shared: Server) -> None:
        """A tool that raises with a secret in its message. A framework that fails the run: the
        client's RUN_ERROR has agui's generic message, and the secret is in the server's log
        (the operator needs it). One that hands the error to the model: the run finishes. In
        neither does any event carry the secret (a tool's result neither)."""
        fw = self.framework
        url = shared.base + "/agent"
        events = events_of(url, run_body("thread-fail", "run-fail", fw.failing_question))
        errors = [e for e in events if e["type"] == "RUN_ERROR"]
        leaked = [e for e in events if fw.secret in json.dumps(e)]
        assert leaked == [], leaked  # nowhere: not in RUN_ERROR, nor in a tool's result
        if fw.tool_errors == "raise":
            assert [e["type"] for e in events][-1] == "RUN_ERROR", events[-1]
            assert errors[-1]["message"] == AGENT_FAILED, errors[-1]
            assert shared.logged(fw.secret), "".join(shared.stderr)  # it follows the stream
        else:
            assert errors == [] and events[-1]["type"] == "RUN_FINISHED", events[-1]


# ── the framework's own endpoint ─────────────────────────────────────────────────────────────

NATIVE_CHECKS = (
    "TS client 1.0.0",
    "TS client 0.0.59",
    "resume after a cut",
    "tool exception withheld",
)
"""The columns of the second table: the same clients against the framework's own endpoint."""


def _native_client(release: str) -> Any:
    def check(fw: Framework, url: str) -> tuple[bool, str]:
        report = ts_run(release, url, fw.question, f"thread-native-ts-{release}")
        messages = report.get("messages") or []
        calls = [c["function"]["name"] for m in messages for c in m.get("toolCalls") or []]
        answered = any(fw.answer in text for text in texts(messages, "assistant"))
        ok = report["ok"] is True and not report["warnings"] and fw.tool in calls and answered
        return ok, json.dumps({k: report.get(k) for k in ("ok", "error", "warnings")})

    return check


def _native_resume(fw: Framework, url: str) -> tuple[bool, str]:
    body = run_body("thread-native-cut", "run-native-cut", fw.question)
    cursor = None
    with (
        httpx.Client(timeout=TIMEOUT) as client,
        client.stream(
            "POST", url, json=body, headers={"accept": "text/event-stream", "agui-resume": "1"}
        ) as response,
    ):
        for count, (frame_id, _) in enumerate(sse_events(response.iter_lines()), 1):
            cursor = frame_id
            if count == 3:
                break
    if cursor is None:
        return False, "no frame ids (SSE `id:`) to resume from"
    again = httpx.get(
        f"{url}/runs/run-native-cut/events",
        headers={"accept": "text/event-stream", "last-event-id": cursor},
        timeout=TIMEOUT,
    )
    return again.status_code == 200, f"GET {{path}}/runs/{{runId}}/events: {again.status_code}"


def _native_tool_exception(fw: Framework, url: str) -> tuple[bool, str]:
    body = run_body("thread-native-fail", "run-native-fail", fw.failing_question)
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(url, json=body, headers={"accept": "text/event-stream"})
    errors = [
        json.dumps(event)
        for _, event in sse_events(iter(response.text.splitlines()))
        if event.get("type") == "RUN_ERROR"
    ]
    leaked = [error for error in errors if fw.secret in error]
    return not leaked and fw.secret not in response.text, "; ".join(leaked) or response.text[-300:]


NATIVE = {
    "TS client 1.0.0": _native_client("1.0.0"),
    "TS client 0.0.59": _native_client("0.0.59"),
    "resume after a cut": _native_resume,
    "tool exception withheld": _native_tool_exception,
}


class NativeChecks:
    """The clients of MatrixChecks against the framework's own AG-UI endpoint, for the matrix's
    second table (what agui adds): a framework module that has one defines a `native_url`
    fixture (the endpoint served as the framework documents it, on a free loopback port) and
    adds this class to its test class. What the endpoint fails is declared in
    `Framework.native_fails` and asserted, so the table shows what was seen."""

    framework: ClassVar[Framework]

    @pytest.mark.parametrize(
        "check", [pytest.param(check, marks=pytest.mark.native(check)) for check in NATIVE_CHECKS]
    )
    def test_the_native_endpoint(self, check: str, native_url: str) -> None:
        fw = self.framework
        ok, seen = NATIVE[check](fw, native_url)
        known = fw.native_fails.get(check)
        if known is None:
            assert ok, seen
        else:
            assert not ok, f"the native endpoint passes {check!r} now: drop it from native_fails"
            assert known in seen, seen


# ── the table in the docs ─────────────────────────────────────────────────────────────────────

BEGIN = "<!-- matrix: begin (python -m tests.integrations.matrix writes this table) -->"
END = "<!-- matrix: end -->"
NATIVE_BEGIN = "<!-- native: begin (python -m tests.integrations.matrix writes this table) -->"
NATIVE_END = "<!-- native: end -->"
MARKS = {"passed": "✅", "failed": "❌", "xfailed": "⚠️", "skipped": "⏭", None: "n/a"}
"""⚠️: a known failure, its reason on the framework's page (`Framework.known_failures`)."""


NATIVE_MARKS = {"passed": "✅", "fails": "❌", "failed": "❗", "skipped": "⏭", None: "n/a"}
"""❌: the native endpoint fails the check (verified; `Framework.native_fails`); ❗: the check
itself failed in the last run."""


def table(results: list[dict[str, Any]], native: bool = False) -> str:
    """The markdown table of the recorded results, a row per framework: through agui, or
    (`native`) through the framework's own endpoint."""
    checks, marks, key = (
        (NATIVE_CHECKS, NATIVE_MARKS, "native") if native else (CHECKS, MARKS, "checks")
    )
    head = ["Framework", "Versions", *checks]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for result in sorted(results, key=lambda r: r["name"].lower()):
        versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items())
        cells = [marks[result.get(key, {}).get(check)] for check in checks]
        rows.append("| " + " | ".join([result["name"], versions, *cells]) + " |")
    return "\n".join(rows)


def _rewrite(text: str, begin: str, end: str, made: list[str], fresh: set[str]) -> str:
    before, rest = text.split(begin, 1)
    current, after = rest.split(end, 1)
    kept = [
        line for line in current.strip().splitlines()[2:] if line.split("|")[1].strip() not in fresh
    ]
    rows = sorted(made[2:] + kept, key=lambda line: line.split("|")[1].strip().lower())
    return f"{before}{begin}\n" + "\n".join(made[:2] + rows) + f"\n{end}{after}"


def write_docs() -> str:
    """docs/integrations.md with its tables' rows remade from every .integrations/*.json (the
    frameworks with no such file keep their rows): the tables."""
    results = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    fresh = {r["name"] for r in results}
    text = DOCS.read_text()
    text = _rewrite(text, BEGIN, END, table(results).splitlines(), fresh)
    text = _rewrite(text, NATIVE_BEGIN, NATIVE_END, table(results, True).splitlines(), fresh)
    DOCS.write_text(text)
    return (
        text.split(BEGIN, 1)[1].split(END, 1)[0]
        + text.split(NATIVE_BEGIN, 1)[1].split(NATIVE_END, 1)[0]
    )


if __name__ == "__main__":
    sys.stdout.write(write_docs() + "\n")
