"""Extending the protocol takes a spec edit and a regeneration, and no edit in agui/.

A fork of spec/ (in a temporary folder) gains an event, PROGRESS (ProgressEvent: `label`, and
`percent` from 0 to 100), and a usage counter, TokenUsage.audioTokens. `python -m codegen --spec
--out` generates the fork's tree beside it; then, in a subprocess whose PYTHONPATH puts the fork's
agui_generated ahead of the repository's (so agui/ is the repository's, unchanged), a ModelAgent
behind AgentApp under uvicorn streams two model rounds, each reporting the new counter, plus a
ProgressEvent; the client (Conversation over HttpAgent: chunk expansion, verification, the
reducer) takes the run as a success with the event delivered and the counter summed, and `python
-m agui replay --summary` reads a recorded stream of it as completed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.ledger import numbers
from codegen.load import read_spec
from codegen.model import build

from .conftest import ROOT

EVENT, TAG = "ProgressEvent", "PROGRESS"
COUNTER, COUNTER_PY = "audioTokens", "audio_tokens"
SPEC_FILES = ("agui.yaml", "spec-format.schema.json", "proto-ledger.txt")
TIMEOUT = 120


def extend(spec: dict[str, Any]) -> dict[str, Any]:
    """The fork's edit of the spec, as a user would make it in the YAML."""
    definitions = spec["definitions"]
    assert EVENT not in definitions and TAG not in definitions["EventType"]["values"]
    assert not any(f.rstrip("?") == COUNTER for f in definitions["TokenUsage"]["fields"])
    definitions["EventType"]["values"][TAG] = "Reports how far a long task has come."
    definitions["Event"]["members"].append(EVENT)
    definitions["TokenUsage"]["fields"][f"{COUNTER}?"] = {
        "type": "int",
        "min": 0,
        "max": 9007199254740991,
        "doc": "The share of inputTokens and outputTokens that was audio.",
    }
    progress = {
        "kind": "object",
        "tag": TAG,
        "with": ["BaseEvent", "Attributable"],
        "doc": "How far a long task has come, for a progress bar.",
        "fields": {
            "label": {"type": "str", "doc": "What is being done."},
            "percent?": {"type": "int", "min": 0, "max": 100, "doc": "How much of it is done."},
        },
    }
    ordered: dict[str, Any] = {}  # the definitions' order is the generated code's
    for name, definition in definitions.items():
        if name == "Event":
            ordered[EVENT] = progress
        ordered[name] = definition
    return {**spec, "definitions": ordered}


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the extended spec/ and the tree generated from it."""
    base = tmp_path_factory.mktemp("fork")
    (base / "spec").mkdir()
    for name in SPEC_FILES:
        shutil.copyfile(ROOT / "spec" / name, base / "spec" / name)
    spec_file = base / "spec" / "agui.yaml"
    spec = yaml.safe_load(spec_file.read_text("utf-8"))
    spec_file.write_text(
        yaml.safe_dump(extend(spec), sort_keys=False, allow_unicode=True, width=100), "utf-8"
    )
    repo_ledger = (ROOT / "spec" / "proto-ledger.txt").read_bytes()
    command = [sys.executable, "-m", "codegen", "--spec", str(spec_file)]
    made = subprocess.run(
        [*command, "--out", str(base / "generated")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert (ROOT / "spec" / "proto-ledger.txt").read_bytes() == repo_ledger
    check = [*command, "--out", str(base / "generated"), "--check"]
    fresh = subprocess.run(check, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    assert fresh.returncode == 0, fresh.stderr
    return base


def forked(fork: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Python with the fork's generated packages ahead of the repository's."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fork / "generated"), str(ROOT)])}
    return subprocess.run(
        [sys.executable, *args],
        cwd=fork,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_the_fork_numbers_its_additions_in_the_ledger_beside_its_spec(fork: Path) -> None:
    ledger = (fork / "spec" / "proto-ledger.txt").read_text("utf-8").splitlines()
    original = (ROOT / "spec" / "proto-ledger.txt").read_text("utf-8").splitlines()
    added = set(ledger) - set(original)
    # the next official number free in EventType (one past the spec's last official event type;
    # a fork's extensions are numbered from extensionNumbers up), marked unshipped
    start = build(read_spec((ROOT / "spec" / "agui.yaml").read_text("utf-8"))).extension_numbers
    event_types = [
        n
        for s, n in numbers("\n".join(original)).items()
        if s.startswith("EventType.") and n < start
    ]
    assert f"EventType.{TAG} = {max(event_types) + 1} (unshipped)" in added
    assert any(line.startswith(f"Usage.{COUNTER_PY} = ") for line in added)
    assert {
        f"{EVENT}.label = 3 string (unshipped)",
        f"{EVENT}.percent = 4 int64 (unshipped)",
    } <= added
    assert set(original) <= set(ledger)
    assert "class ProgressEvent:" in (fork / "generated/agui_generated/models.py").read_text()


SERVE_AND_READ = '''
import asyncio, json, sys

import httpx

import agui
import agui_generated
from agui.model import Finish, ModelAgent, ScriptedModel
from agui.model.scripted import call, say
from agui_generated import ProgressEvent, TokenUsage
from tests.conftest import live_server

COUNTER = sys.argv[2]


def usage(n):
    return TokenUsage(provider="scripted", model="fork", input_tokens=n, **{COUNTER: n})


def lookup(q: str) -> str:
    """Looks something up."""
    return f"found {q}"


def model_agent():
    script = [
        [*call("lookup", {"q": "x"}), Finish("tool_calls", usage(2))],
        [*say("All done."), Finish("stop", usage(5))],
    ]
    return ModelAgent(ScriptedModel(script), tools=[lookup])


class WithProgress:
    """The model agent, with a PROGRESS event after RUN_STARTED."""

    def validate(self, input):
        return model_agent().validate(input)

    async def __call__(self, input):
        async for event in model_agent()(input):
            yield event
            if isinstance(event, agui.RunStartedEvent):
                yield ProgressEvent(label="looking", percent=50)


with live_server(agui.AgentApp(WithProgress())) as url:
    conversation = agui.Conversation(keep_events=True)
    result = asyncio.run(conversation.run(agui.HttpAgent(url), "hi"))
    run = agui.RunAgentInput(  # a 1.0 request: a 0.0.x client would not get the new event
        thread_id="t2",
        run_id="r2",
        protocol_version=agui.PROTOCOL_VERSION,
        messages=(agui.UserMessage(id="u", content="hi"),),
    )
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    with httpx.stream("POST", url, content=agui.encode(run), headers=headers) as response:
        recording = b"".join(response.iter_bytes())
with open(sys.argv[1], "wb") as fh:
    fh.write(recording)

try:
    agui.decode(b'{"type": "PROGRESS", "label": "x", "percent": 101}')
    bounded = False
except agui.DecodeError:
    bounded = True
finished = [e for e in conversation.events if isinstance(e, agui.RunFinishedEvent)]
print(json.dumps({
    "generated": agui_generated.__file__,
    "agui": agui.__file__,
    "outcome": result.outcome,
    "summary": conversation.summary()["outcome"],
    "types": [str(e.type) for e in conversation.events],
    "progress": [agui.to_json(e) for e in conversation.events if isinstance(e, ProgressEvent)],
    "usage": [agui.to_json(u) for u in result.usage or ()],
    "finished": [agui.to_json(u) for e in finished for u in e.usage or ()],
    "bounded": bounded,
}))
'''


def test_a_new_event_and_usage_counter_flow_through_server_client_and_cli(fork: Path) -> None:
    script, recording = fork / "serve_and_read.py", fork / "run.sse"
    script.write_text(SERVE_AND_READ, "utf-8")
    proc = forked(fork, str(script), str(recording), COUNTER_PY)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["generated"] == str(fork / "generated" / "agui_generated" / "__init__.py")
    assert seen["agui"] == str(ROOT / "agui" / "__init__.py")

    assert (seen["outcome"], seen["summary"]) == ("success", "completed")
    assert seen["progress"] == [{"type": TAG, "label": "looking", "percent": 50}]
    assert seen["types"][:2] == ["RUN_STARTED", TAG]
    assert seen["types"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in seen["types"]  # two rounds: the tool call, then the answer
    summed = {"provider": "scripted", "model": "fork", "inputTokens": 7, COUNTER: 7}
    assert seen["usage"] == seen["finished"] == [summed]
    assert seen["bounded"]  # percent's 0..100 is checked by the fork's decoder

    assert b'"type":"PROGRESS"' in recording.read_bytes()
    replayed = forked(fork, "-m", "agui", "replay", str(recording), "--summary")
    assert replayed.returncode == 0, replayed.stderr
    summary = json.loads(replayed.stdout)
    assert summary["outcome"] == "completed"
    assert TAG in summary["eventTypes"]
    assert summary["eventTypes"][-1] == "RUN_FINISHED"


def test_agui_names_neither_the_new_event_nor_the_new_counter() -> None:
    """No edit in agui/ was needed: nothing there knows the extension."""
    pattern = re.compile(rf"Progress|{TAG}|{COUNTER}|{COUNTER_PY}")
    named = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "agui").rglob("*.py"))
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert named == []
