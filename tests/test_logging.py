"""Warnings are data and log records, never printed by the library: the "agui" logger carries a
NullHandler, so an application that configured no logging sees nothing on stderr (Python's "last
resort" handler would print them otherwise), and one that did sees them through its handlers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
