"""What agui prints, and where.

The warnings a caller gets as data (a tolerant decode's, a conversation's) are log records only:
an application that configured no logging sees nothing of them on stderr, one that did sees them
through its handlers. What an operator must act on (a failing agent's traceback, an event the
lifecycle refused) reaches stderr under plain uvicorn with no logging configured, through the
fallback handler on the "agui" logger, and is written once, by the application's handler, once
logging is configured (logging.basicConfig in the module, or uvicorn's --log-config).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from .usage.support import Server

ROOT = Path(__file__).resolve().parent.parent

TOLERANT = """
{setup}
import agui

pipeline = agui.Pipeline()
pipeline.run([
    b'{{"type":"RUN_STARTED","threadId":"t","runId":"r","futureProp":1}}',
    b'{{"type":"FUTURE_EVENT"}}',
    b'{{"type":"RUN_FINISHED","threadId":"t","runId":"r"}}',
])
assert [w.kind for w in pipeline.warnings] == ["stripped", "dropped_event"], pipeline.warnings
print("warned", len(pipeline.warnings))
"""


def python(code: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter importing this checkout's agui."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "generated")])
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_a_tolerant_decode_with_warnings_prints_nothing() -> None:
    """With no logging configured, warnings stay in the `warnings` list: stderr is empty."""
    done = python(TOLERANT.format(setup=""))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "warned 2\n"
    assert done.stderr == ""


def test_an_application_that_configures_logging_sees_the_warnings() -> None:
    """The warnings are still logged on "agui.stream" for whoever configures logging."""
    done = python(TOLERANT.format(setup="import logging; logging.basicConfig()"))
    assert done.returncode == 0, done.stderr
    assert "WARNING:agui.stream:event 1:" in done.stderr
    assert "WARNING:agui.stream:event 2: Dropping unrecognised event 'FUTURE_EVENT'" in done.stderr


# ── what an operator sees under plain uvicorn ───────────────────────────────────────────────────

FAILING = """
{setup}
import agui


async def agent(run: agui.RunAgentInput):
    if run.thread_id == "refused":
        # content of a message never started: the lifecycle refuses it (RUN_ERROR INVALID_EVENT)
        yield agui.TextMessageContentEvent(message_id="never-started", delta="x")
        return
    raise RuntimeError("the ledger is locked (sentinel 4711)")
    yield


app = agui.AgentApp(agent, path="/agent")
"""

LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"f": {"format": "CONFIGURED %(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        "h": {"class": "logging.StreamHandler", "formatter": "f", "stream": "ext://sys.stderr"}
    },
    "root": {"handlers": ["h"], "level": "INFO"},
}
"""An application's logging configuration, as `uvicorn --log-config log.json` reads it."""

RUN_FIELDS = "agent=agent thread=t-fail run=r-fail code=AGENT_ERROR"
"""The fields every line about a run ends with (agui.observe.runlog.about_run)."""
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
FAILED = {
    "nothing configured": TIME + " ERROR agui.agent: the agent failed: " + RUN_FIELDS,
    "logging.basicConfig": "ERROR:agui.agent:the agent failed: " + RUN_FIELDS,
    "uvicorn --log-config": "CONFIGURED ERROR agui.agent: the agent failed: " + RUN_FIELDS,
}
"""How the failing agent's record starts, by how logging is configured: the fallback's format
(time, level, logger), basicConfig's, the configuration's."""


def served_stderr(tmp_path: Path, how: str) -> str:
    """The failing agent served by `uvicorn failing:app`, configured `how`; one run that fails
    and one whose event is refused; everything the server wrote on stderr."""
    setup = "import logging\nlogging.basicConfig()" if how == "logging.basicConfig" else ""
    (tmp_path / "failing.py").write_text(FAILING.format(setup=setup))
    words = ["uvicorn", "failing:app", "--port", "{port}"]
    if how == "uvicorn --log-config":
        (tmp_path / "log.json").write_text(json.dumps(LOG_CONFIG))
        words += ["--log-config", "log.json"]
    server = Server(words, tmp_path, ["Uvicorn running on http://127.0.0.1:{port} "])
    try:
        server.wait_ready()
        for thread, run_id, code in (
            ("t-fail", "r-fail", "AGENT_ERROR"),
            ("refused", "r-refused", "INVALID_EVENT"),
        ):
            run = {"threadId": thread, "runId": run_id, "messages": []}
            answer = httpx.post(f"{server.base}/agent", json=run, timeout=30)
            assert answer.status_code == 200 and code in answer.text, answer.text
    finally:
        _, stderr = server.stop()
    return stderr


@pytest.mark.parametrize("how", list(FAILED))
def test_a_failing_agent_and_a_refused_event_reach_stderr_once(tmp_path: Path, how: str) -> None:
    """Under plain uvicorn the failing agent's traceback (its exception's text, "Traceback") and
    the refused event's record are on stderr, with no logging configured as with it, exactly
    once each: the fallback writes them only when no handler of the application's would."""
    stderr = served_stderr(tmp_path, how)
    lines = stderr.splitlines()
    assert [line for line in lines if re.fullmatch(FAILED[how], line)], stderr
    assert stderr.count("the agent failed") == 1, stderr
    assert stderr.count("Traceback (most recent call last):") == 1, stderr
    assert stderr.count("RuntimeError: the ledger is locked (sentinel 4711)") == 1, stderr
    refused = [line for line in lines if "the agent sent an event a client" in line]
    assert len(refused) == 1, stderr
    assert "TEXT_MESSAGE_CONTENT" in refused[0] and "ERROR" in refused[0]
    assert refused[0].endswith("agent=agent thread=refused run=r-refused code=INVALID_EVENT")


FALLBACK = """
import asyncio, logging, sys
{setup}
import agui


async def agent(run):
    logging.getLogger("agui.server").warning("a warning %s", "w-4711")
    raise RuntimeError("e-4711")
    yield


asyncio.run(agui.Conversation().run(agent, "hi"))
"""


def test_a_null_handler_does_not_silence_the_fallback() -> None:
    """A NullHandler (on the root logger, or on "agui") handles nothing, so the fallback still
    writes: it stands in for a handler that would write, not for any handler."""
    setup = "logging.getLogger().addHandler(logging.NullHandler())\n"
    setup += "logging.getLogger('agui').addHandler(logging.NullHandler())"
    done = python(FALLBACK.format(setup=setup))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("WARNING agui.server: a warning w-4711") == 1, done.stderr
    assert done.stderr.count("RuntimeError: e-4711") == 1, done.stderr


def test_the_fallback_writes_what_the_configured_handlers_leave_out() -> None:
    """A root handler taking errors only: the warning it does not take comes from the fallback,
    the error from that handler alone."""
    setup = "handler = logging.StreamHandler(sys.stderr)\nhandler.setLevel(logging.ERROR)\n"
    setup += "handler.setFormatter(logging.Formatter('ROOT %(levelname)s %(message)s'))\n"
    setup += "logging.getLogger().addHandler(handler)"
    done = python(FALLBACK.format(setup=setup))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("a warning w-4711") == 1, done.stderr
    assert "WARNING agui.server: a warning w-4711" in done.stderr
    assert done.stderr.count("RuntimeError: e-4711") == 1, done.stderr
    assert "ROOT ERROR the agent failed: thread=" in done.stderr


def test_the_agui_logger_s_level_silences_it() -> None:
    """The documented way to print nothing without configuring logging: raise the "agui"
    logger's level."""
    done = python(FALLBACK.format(setup="logging.getLogger('agui').setLevel(logging.CRITICAL)"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
