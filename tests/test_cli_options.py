"""The command line's inputs and options (issue 20, item 9), run as real subprocesses:

* `agui run --header 'Name: value'` (repeatable) and `--binary` (the protobuf transport);
* the thread of an interrupted run is saved in the state directory (`$XDG_STATE_HOME/agui/
  threads`) or at `--thread-file`, never in the working or the temporary directory, and a thread
  file the command saved is removed once the thread went on; old ones are pruned;
* `agui replay -` reads standard input;
* `agui validate` recognises what a file holds (JSON Lines whatever its name, a JSON array, an
  SSE capture, one document) and names the file and the line of every document;
* `import agui.cli.run` loads none of the heavy modules it does not need at import, `agui replay`
  never loads httpx, `agui --version` and `agui --help` load nothing of the protocol, and
  `agui run` nothing it does not use (a fresh interpreter's sys.modules, not a timing; the
  start-up's time is benchmarks/imports.py's).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import agui
from agui.cli.demo import DemoAgent

from .conftest import ROOT

Serve = Callable[[Any], str]
SUBPROCESS = 60.0
RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def agui_cli(
    *args: str | Path, cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`agui ARGS` from `cwd`, whose state directory is cwd/state and temporary one cwd/tmp."""
    (cwd / "tmp").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "NO_COLOR")}
    env |= {"XDG_STATE_HOME": str(cwd / "state"), "TMPDIR": str(cwd / "tmp")}
    done = subprocess.run(
        [sys.executable, "-m", "agui", *map(str, args)],
        input=stdin,
        capture_output=True,
        timeout=SUBPROCESS,
        check=False,
        env=env,
        cwd=cwd,
    )
    assert b"Traceback" not in done.stdout + done.stderr, done.stderr.decode()
    return done


async def hello(run_input: agui.RunAgentInput) -> AsyncIterator[Any]:
    yield agui.TextMessageChunkEvent(message_id="a", delta="hello")


class Recording:
    """An ASGI app in front of another that records each request's headers and the content
    type of each answer."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers: list[dict[str, str]] = []
        self.answered: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                found = dict(message.get("headers", []))
                self.answered.append(found.get(b"content-type", b"").decode())
            await send(message)

        await self.app(scope, receive, sending)


# ── agui run --header, --binary ───────────────────────────────────────────────────────────────


def test_header_is_sent_and_repeatable(serve: Serve, tmp_path: Path) -> None:
    app = Recording(agui.AgentApp(hello))
    url = serve(app)
    done = agui_cli(
        "run",
        url,
        "--header",
        "Authorization: Bearer s3cret",
        "--header",
        "X-Trace:  one two ",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"hello\n"
    [sent] = app.headers
    assert sent["authorization"] == "Bearer s3cret"
    assert sent["x-trace"] == "one two"


@pytest.mark.parametrize("header", ["no colon", ": no name", "Bad Name: x"])
def test_a_bad_header_is_a_usage_error(tmp_path: Path, header: str) -> None:
    done = agui_cli("run", "http://127.0.0.1:9/agent", "--header", header, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    [line] = done.stderr.decode().splitlines()
    assert line.startswith("agui run: --header takes 'Name: value'")


def test_binary_asks_for_protobuf_and_reads_it(serve: Serve, tmp_path: Path) -> None:
    app = Recording(agui.AgentApp(hello))
    url = serve(app)
    binary = agui_cli("run", url, "--binary", "--json", cwd=tmp_path)
    plain = agui_cli("run", url, "--json", cwd=tmp_path)
    assert binary.returncode == 0, binary.stderr
    assert "application/vnd.ag-ui.event+proto" in app.headers[0]["accept"]
    assert app.answered[0].startswith("application/vnd.ag-ui.event+proto")
    assert app.answered[1].startswith("text/event-stream")
    assert [json.loads(x)["type"] for x in binary.stdout.splitlines()] == [
        json.loads(x)["type"] for x in plain.stdout.splitlines()
    ]


def test_connect_stop_and_capabilities_send_headers_too(serve: Serve, tmp_path: Path) -> None:
    """A protected agent (its hook names the caller from a bearer token) can be run, connected
    to, stopped and asked for its capabilities with --header; without it each is refused (403),
    and connect's --binary asks for protobuf."""

    async def by_token(
        headers: Mapping[str, str], action: str, thread_id: str | None, run_id: str | None
    ) -> str | None:
        return "alice" if headers.get("authorization") == "Bearer s3cret" else None

    app = Recording(agui.AgentApp(hello, store="memory://", authorize=by_token))
    url = serve(app)
    token = ("--header", "Authorization: Bearer s3cret")
    ran = agui_cli("run", url, "--json", *token, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    started = json.loads(ran.stdout.splitlines()[0])
    thread, run = started["threadId"], started["runId"]
    connected = agui_cli("connect", url, thread, "--json", "--binary", *token, cwd=tmp_path)
    assert connected.returncode == 0, connected.stderr
    assert "application/vnd.ag-ui.event+proto" in app.headers[-1]["accept"]
    assert app.answered[-1].startswith("application/vnd.ag-ui.event+proto")
    assert b"hello" in connected.stdout
    declared = agui_cli("capabilities", url, "--compact", *token, cwd=tmp_path)
    assert declared.returncode == 0, declared.stderr
    assert json.loads(declared.stdout)["transport"]["resumable"] is True
    stopped = agui_cli("stop", url, run, *token, cwd=tmp_path)  # found, and already over
    assert stopped.returncode == 1 and b"HTTP 409" in stopped.stderr, stopped.stderr
    for command in (["connect", url, thread], ["capabilities", url], ["stop", url, run]):
        refused = agui_cli(*command, cwd=tmp_path)
        assert refused.returncode == 1 and b"HTTP 403" in refused.stderr, (command, refused)


# ── thread files ──────────────────────────────────────────────────────────────────────────────


def interrupt(url: str, tmp_path: Path, *more: str) -> tuple[list[str], Path]:
    """An interrupted demo run: the command it prints, and the thread file it names."""
    done = agui_cli(
        "run",
        url,
        "--message",
        "hi",
        "--forwarded-props",
        '{"interrupt": true}',
        *more,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    answer = json.loads(lines[lines.index(next(x for x in lines if x.startswith("To answer"))) + 1])
    (tmp_path / "answers.json").write_text(json.dumps(answer))
    command = shlex.split(lines[-1])
    return command, Path(command[command.index("--input") + 1])


def test_a_thread_is_saved_in_the_state_directory_and_removed_when_done(
    serve: Serve, tmp_path: Path
) -> None:
    url = serve(agui.AgentApp(DemoAgent(delay=0)))
    threads = tmp_path / "state" / "agui" / "threads"
    threads.mkdir(parents=True)
    stale = threads / "old-thread.json"
    stale.write_text("{}")
    week = time.time() - 8 * 86400
    os.utime(stale, (week, week))
    recent = threads / "recent-thread.json"
    recent.write_text("{}")
    command, thread = interrupt(url, tmp_path)
    assert thread.parent == threads and thread.is_file()
    assert thread.stat().st_mode & 0o777 == 0o600
    assert not stale.exists() and recent.exists()  # older than THREAD_FILE_DAYS: pruned
    assert list((tmp_path / "tmp").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.json", "state", "tmp"]
    resumed = agui_cli(*command[1:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr == b"agui run: completed\n"
    assert not thread.exists()
    assert recent.exists()


def test_thread_file_puts_it_where_it_says_and_leaves_it(serve: Serve, tmp_path: Path) -> None:
    url = serve(agui.AgentApp(DemoAgent(delay=0)))
    chosen = tmp_path / "mine.json"
    command, thread = interrupt(url, tmp_path, "--thread-file", str(chosen))
    assert thread == chosen and chosen.is_file()
    assert not (tmp_path / "state").exists()
    assert agui_cli(*command[1:], cwd=tmp_path).returncode == 0
    assert chosen.is_file()  # the user's file: never removed


# ── agui replay - ─────────────────────────────────────────────────────────────────────────────


def sse(*events: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


@pytest.mark.parametrize("form", ["sse", "jsonl"])
def test_replay_dash_reads_standard_input(tmp_path: Path, form: str) -> None:
    events = [RUN, {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"}, DONE]
    stdin = (
        sse(*events) if form == "sse" else b"".join(json.dumps(e).encode() + b"\n" for e in events)
    )
    done = agui_cli("replay", "-", "--summary", cwd=tmp_path, stdin=stdin)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["outcome"] == "completed"
    assert summary["messages"] == [{"id": "m", "role": "assistant", "content": "hi"}]


# ── agui validate: what a file holds, and where each document is ──────────────────────────────

STEP = {"type": "STEP_STARTED", "stepName": "s"}
BAD = {"type": "STEP_STARTED"}


def results(done: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def where(done: subprocess.CompletedProcess[bytes]) -> list[tuple[Any, ...]]:
    return [(r["file"], r["line"], r.get("item"), r["ok"]) for r in results(done)]


def test_validate_reads_json_lines_whatever_the_name(tmp_path: Path) -> None:
    """A file not named .jsonl holding JSON Lines is one document per line, not one document."""
    (tmp_path / "events.txt").write_text(
        json.dumps(STEP) + "\n\n" + json.dumps(BAD) + "\n" + json.dumps(STEP) + "\n"
    )
    done = agui_cli("validate", "events.txt", cwd=tmp_path)
    assert done.returncode == 1
    assert where(done) == [
        ("events.txt", 1, None, True),
        ("events.txt", 3, None, False),
        ("events.txt", 4, None, True),
    ]


def test_validate_reads_an_sse_capture(tmp_path: Path) -> None:
    capture = (
        b": connected\n\n"
        + sse(RUN)
        + b"id: 7\nevent: message\ndata: "
        + json.dumps(BAD).encode()
        + b"\n\n: keep-alive\n\n"
        + sse(DONE)
    )
    (tmp_path / "capture.sse").write_bytes(capture)
    done = agui_cli("validate", "capture.sse", cwd=tmp_path)
    assert done.returncode == 1
    assert where(done) == [
        ("capture.sse", 3, None, True),
        ("capture.sse", 5, None, False),
        ("capture.sse", 11, None, True),
    ]
    piped = agui_cli("validate", cwd=tmp_path, stdin=capture)
    assert [(f, line) for f, line, _, _ in where(piped)] == [("-", 3), ("-", 5), ("-", 11)]


def test_validate_reads_one_document_an_array_and_names_each(tmp_path: Path) -> None:
    (tmp_path / "pretty.json").write_text("\n" + json.dumps(STEP, indent=2) + "\n")
    (tmp_path / "list.json").write_text(json.dumps([STEP, BAD]))
    (tmp_path / "broken.json").write_text('{\n  "type": ')
    done = agui_cli(
        "validate", "pretty.json", "list.json", "broken.json", "-", cwd=tmp_path, stdin=b""
    )
    assert where(done) == [
        ("pretty.json", 2, None, True),
        ("list.json", 1, 1, True),
        ("list.json", 1, 2, False),
        ("broken.json", 1, None, False),
        ("-", None, None, False),
    ]
    assert results(done)[3]["errors"][0]["kind"] == "json"
    assert "no JSON document in standard input" in results(done)[4]["errors"][0]["message"]


# ── what importing the command line loads ─────────────────────────────────────────────────────

NOT_AT_IMPORT = (
    "httpx",
    "asyncio",
    "jsonpatch",
    "cattrs",
    "google.protobuf",
    "uvicorn",
    "agui.http.client",
    "agui.stream.conversation",
    "agui.stream.pipeline",
    "agui.wire.codec",
    "agui_generated.models",
    "agui_generated.codec",
    "agui_generated.proto_wire",
)
"""What `import agui.cli.run` must not load: the modules its commands need when they run."""


def loaded_after(code: str) -> set[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "generated"), *filter(None, [env.get("PYTHONPATH")])]
    )
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS,
        check=False,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == n or m.startswith(n + ".") for n in names))


def test_import_agui_cli_run_loads_nothing_it_does_not_need() -> None:
    loaded = loaded_after("import agui.cli.run")
    assert "agui.cli.run" in loaded
    assert not _heavy(loaded, NOT_AT_IMPORT)


def test_agui_replay_loads_no_http_client(tmp_path: Path) -> None:
    (tmp_path / "run.jsonl").write_text(json.dumps(RUN) + "\n" + json.dumps(DONE) + "\n")
    code = (
        "import sys\nfrom agui.cli.main import main\n"
        f"assert main(['replay', {str(tmp_path / 'run.jsonl')!r}, '--summary']) == 0"
    )
    loaded = loaded_after(code)
    assert "agui.stream.conversation" in loaded  # it ran
    assert not _heavy(loaded, ("httpx", "agui.http", "uvicorn", "google.protobuf"))


EVERYTHING_HEAVY = (
    "httpx",
    "httpcore",
    "anyio",
    "asyncio",
    "uvicorn",
    "starlette",
    "orjson",
    "attrs",
    "cattrs",
    "jsonpatch",
    "regress",
    "google.protobuf",
    "pydantic",
    "prometheus_client",
    "opentelemetry",
    "agui_generated.models",
    "agui_generated.codec",
    "agui_generated.proto_wire",
    "agui.http",
    "agui.stream",
    "agui.wire",
)
"""What `agui --help` and `agui --version` must not load: nothing of the protocol, the server or
the client."""


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_load_nothing_heavy(option: str) -> None:
    code = (
        "import contextlib, io\nfrom agui.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main([{option!r}])"
    )
    loaded = loaded_after(code)
    assert "agui.cli.main" in loaded
    assert not _heavy(loaded, EVERYTHING_HEAVY)
    if option == "--help":  # the version is read (importlib.metadata) only when asked for
        assert "importlib.metadata" not in loaded


NOT_FOR_A_RUN = (
    "uvicorn",
    "starlette",
    "cattrs",
    "jsonpatch",
    "google.protobuf",
    "pydantic",
    "prometheus_client",
    "opentelemetry",
    "click",  # httpx's command line (httpx._main), which agui never calls
    "pygments",
    "importlib.metadata",  # the version, for --version only
    "agui.store",
    "agui.http.threads",
    "agui.http.server",
    "agui_generated.converter",
    "agui_generated.proto_wire",
)
"""What `agui run` (a plain SSE run, no deltas) must not load."""


def test_agui_run_loads_only_what_it_uses(serve: Serve) -> None:
    url = serve(agui.AgentApp(hello))
    code = (
        "import contextlib, io\nfrom agui.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert main(['run', {url!r}]) == 0\n"
        "assert out.getvalue() == 'hello\\n', out.getvalue()\n"
        "import sys\n"  # httpx imported without its command line, which stays importable
        "assert sys.modules.get('httpx._main', 'absent') is not None"
    )
    loaded = loaded_after(code)
    assert {"httpx", "agui.http.client", "agui_generated.codec"} <= loaded  # it ran
    assert not _heavy(loaded, NOT_FOR_A_RUN)
