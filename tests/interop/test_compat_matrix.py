"""Pre-1.0 peers over real HTTP on 127.0.0.1.

The client matrix: real releases of the official TypeScript client (@ag-ui/client 0.0.35, 0.0.40,
0.0.45, 0.0.52, 0.0.59 under npm aliases, and 1.0.0; tests/interop/package.json) run the demo
agent (plain, and with forwardedProps.interrupt) and a model agent (a fake OpenAI server behind
it) served by AgentApp: each run completes with the assistant's text (or, interrupted, its tool
call) in the client's messages and nothing on its console, except the one known message of
0.0.45 - 0.0.52 (KNOWN_BUG). Pinned eras and compat="off" are run too: off, 0.0.35 and 0.0.40
fail as they did before the translation existed.

Legacy servers read by agui.Conversation: @ag-ui/encoder 0.0.35 and 0.0.45 servers emitting
their era's events (ts_legacy_server.mjs), and an ag-ui-protocol 1.0.0 server served as its
integrations serve it (FastAPI + EventEncoder); the messages are compared with those the official
1.0 client derives from the same server.

Runs only with AGUI_INTEROP=1 (`nox -s interop`), like the rest of tests/interop.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from agui_generated import UserMessage

import agui
from agui.cli.demo import DemoAgent
from agui.http.server import AgentApp
from agui.model import ModelAgent, OpenAIChatModel
from tests.conftest import live_server
from tests.fake_openai import MODEL as FAKE_MODEL, SECRET, FakeOpenAI, reply as fake_reply
from tests.interop.test_interop import node_server

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

HERE = Path(__file__).resolve().parent
WORK = HERE.parent.parent / ".interop"
TIMEOUT = 60.0

RELEASES = {
    "0.0.35": "client-0-0-35",
    "0.0.40": "client-0-0-40",
    "0.0.45": "client-0-0-45",
    "0.0.52": "client-0-0-52",
    "0.0.59": "client-0-0-59",
    "1.0.0": "client-1-0-0",
}
KNOWN_BUG = "a.applyPatch is not a function"
"""@ag-ui/client 0.0.45 - 0.0.52 bundle fast-json-patch so that its applyPatch is undefined: every
STATE_DELTA logs "Failed to apply state patch: ... a.applyPatch is not a function" (console.warn)
and leaves the state as it was. Their bug, whatever the server sends; tolerated for those
releases, and only that message."""
BUGGY = frozenset({"0.0.45", "0.0.52"})


# ── fixtures ───────────────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH, and AGUI_INTEROP=1 requires it")
    for release, package in RELEASES.items():
        manifest = WORK / "node_modules" / package / "package.json"
        if not manifest.is_file():
            pytest.fail(
                f"{package} is not installed under {WORK}: copy tests/interop/package*.json there "
                "and run `npm ci --prefix .interop` (or `nox -s interop`)"
            )
        installed = json.loads(manifest.read_text())["version"]
        assert installed == release, f"{package} is {installed}, not {release}"
    for script in (
        "ts_era_client.mjs",
        "ts_legacy_server.mjs",
        "ts_client.mjs",
        "console_capture.mjs",
    ):
        shutil.copy(HERE / script, WORK / script)
    return found


@contextmanager
def serving(app: Any) -> Iterator[str]:
    with live_server(app, lifespan="off") as base:
        yield base + "/agent"


def ts(node: str, release: str, url: str, message: str, forwarded: Any = None) -> Any:
    """One run with the given release of the official client; its report."""
    command = [node, str(WORK / "ts_era_client.mjs"), RELEASES[release], url, "--message", message]
    if forwarded is not None:
        command += ["--forwarded", json.dumps(forwarded)]
    env = {k: v for k, v in os.environ.items() if k != "SUPPRESS_TRANSFORMATION_WARNINGS"}
    done = subprocess.run(
        command, cwd=WORK, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, f"ts_era_client.mjs exited {done.returncode}: {done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def unexpected(release: str, report: Any) -> list[str]:
    """What the client wrote to its console, but the known bug of its release."""
    return [w for w in report["warnings"] if not (release in BUGGY and KNOWN_BUG in w)]


def assistant_text(report: Any) -> str:
    return "".join(
        m.get("content") or "" for m in report["messages"] if m.get("role") == "assistant"
    )


def tool_calls(report: Any) -> list[str]:
    return [
        call["function"]["name"]
        for m in report["messages"]
        if m.get("role") == "assistant"
        for call in m.get("toolCalls") or []
    ]


@pytest.fixture(scope="module")
def demo_servers() -> Iterator[dict[str, str]]:
    """The demo agent behind AgentApp, with each compat setting the matrix uses."""
    settings = ["auto", "off", "0.0.35", "0.0.40", "0.0.45", "0.0.52", "0.0.59"]
    with _many(
        {s: AgentApp(DemoAgent(delay=0), path="/agent", compat=s) for s in settings}
    ) as urls:
        yield urls


@contextmanager
def _many(apps: dict[str, Any]) -> Iterator[dict[str, str]]:
    urls: dict[str, str] = {}
    contexts = []
    try:
        for name, app in apps.items():
            context = serving(app)
            urls[name] = context.__enter__()
            contexts.append(context)
        yield urls
    finally:
        for context in reversed(contexts):
            context.__exit__(None, None, None)


async def weather(city: str) -> dict[str, Any]:
    """The weather in a city, in degrees Celsius."""
    return {"city": city, "celsius": 21}


# ── the client matrix ──────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_release_runs_the_demo_agent(node: str, release: str, demo_servers: Any) -> None:
    report = ts(node, release, demo_servers["auto"], "hi")
    assert report["error"] is None, report["error"]
    assert report["ok"] is True
    assert unexpected(release, report) == [], "\n".join(report["warnings"])
    assert "You said: hi (2 characters)." in assistant_text(report)
    assert "count_characters" in tool_calls(report)
    roles = [m["role"] for m in report["messages"]]
    if release == "1.0.0":  # the 1.0 stream, unchanged: reasoning and activity messages
        assert {"reasoning", "activity"} <= set(roles)
    else:  # the oldest era: neither exists there
        assert not {"reasoning", "activity"} & set(roles)


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_release_runs_the_demo_agent_to_an_interrupt(
    node: str, release: str, demo_servers: Any
) -> None:
    report = ts(node, release, demo_servers["auto"], "hi", {"interrupt": True})
    assert report["error"] is None, report["error"]
    assert unexpected(release, report) == [], "\n".join(report["warnings"])
    assert tool_calls(report) == ["count_characters"]  # the call awaiting approval
    if release == "1.0.0":
        assert report["outcome"] == "interrupt"
        assert [i["reason"] for i in report["pendingInterrupts"]] == ["tool_call"]


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_release_runs_a_model_agent(node: str, release: str) -> None:
    fake = FakeOpenAI()
    with serving(fake) as fake_url:
        base = fake_url.removesuffix("/agent") + "/v1"
        model = OpenAIChatModel(FAKE_MODEL, base_url=base, api_key=SECRET)
        agent = ModelAgent(model, system="Be brief.", tools=[weather], steps=True)
        fake.add(
            fake_reply(
                reasoning="I need the weather.", calls=[("call_w", "weather", {"city": "Paris"})]
            ),
            fake_reply("It is 21 degrees in Paris."),
        )
        with serving(AgentApp(agent, path="/agent")) as url:
            report = ts(node, release, url, "Weather in Paris?")
    assert report["error"] is None, report["error"]
    assert unexpected(release, report) == [], "\n".join(report["warnings"])
    assert "It is 21 degrees in Paris." in assistant_text(report)
    assert tool_calls(report) == ["weather"]


@pytest.mark.parametrize("release", ["0.0.35", "0.0.40", "0.0.45", "0.0.52", "0.0.59"])
def test_each_release_runs_against_its_own_pinned_era(
    node: str, release: str, demo_servers: Any
) -> None:
    """A deployment that pins its front end's release keeps what that release takes: 0.0.45 on
    get reasoning messages (and activity, from 0.0.41), 0.0.40 gets THINKING_* events."""
    report = ts(node, release, demo_servers[release], "hi")
    assert report["error"] is None, report["error"]
    assert unexpected(release, report) == [], "\n".join(report["warnings"])
    assert "You said: hi (2 characters)." in assistant_text(report)
    roles = {m["role"] for m in report["messages"]}
    if release in ("0.0.45", "0.0.52", "0.0.59"):
        assert {"reasoning", "activity"} <= roles
        assert "REASONING_START" in report["events"]
    if release == "0.0.40":
        assert "THINKING_START" in report["events"]


@pytest.mark.parametrize("release", ["0.0.35", "0.0.40"])
def test_without_the_translation_the_oldest_releases_fail(
    node: str, release: str, demo_servers: Any
) -> None:
    """compat="off": the 1.0 stream, as before: 0.0.35 and 0.0.40 refuse the whole run (zod
    invalid_union_discriminator on the first event type they do not know)."""
    report = ts(node, release, demo_servers["off"], "hi")
    assert report["ok"] is False
    assert "invalid_union_discriminator" in report["error"]


@pytest.mark.parametrize("release", ["0.0.45", "0.0.52", "0.0.59", "1.0.0"])
def test_without_the_translation_newer_releases_still_run(
    node: str, release: str, demo_servers: Any
) -> None:
    report = ts(node, release, demo_servers["off"], "hi")
    assert report["error"] is None, report["error"]
    assert unexpected(release, report) == [], "\n".join(report["warnings"])


def test_a_0_0_35_stream_runs_on_every_release(node: str, demo_servers: Any) -> None:
    """The oldest era's stream (what "auto" sends every client without protocolVersion) is
    accepted by every release, not only 0.0.35: pinned to 0.0.35, 1.0.0 reads it too."""
    for release in RELEASES:
        report = ts(node, release, demo_servers["0.0.35"], "hi")
        assert report["error"] is None, (release, report["error"])
        assert unexpected(release, report) == [], (release, report["warnings"])


# ── legacy servers, read by agui.Conversation and by the official 1.0 client ─────────────────

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def comparable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with what only says "nothing yet" removed (an empty toolCalls list) and the ids
    a client mints for THINKING_* (random UUIDs, in both clients) numbered in order."""
    minted: dict[str, str] = {}
    out = []
    for message in messages:
        message = {k: v for k, v in message.items() if v != []}
        if _UUID.match(str(message.get("id"))):
            message["id"] = minted.setdefault(message["id"], f"<minted {len(minted) + 1}>")
        out.append(message)
    return out


def agui_read(url: str, message: str) -> agui.Conversation:
    conversation = agui.Conversation(
        "thread-ts-era", messages=[UserMessage(id="user-ts-1", content=message)], keep_events=True
    )
    asyncio.run(conversation.run(agui.HttpAgent(url)))
    return conversation


@pytest.mark.parametrize("encoder", ["encoder-0-0-35", "encoder-0-0-45"])
def test_a_legacy_encoder_server_is_read_as_the_1_0_client_reads_it(
    node: str, encoder: str
) -> None:
    with node_server(node, "ts_legacy_server.mjs", encoder) as url:
        ours = agui_read(url, "Weather in Paris?")
        theirs = ts(node, "1.0.0", url, "Weather in Paris?")
    assert theirs["error"] is None, theirs["error"]
    assert ours.failures == []
    assert comparable(ours.messages_json()) == comparable(theirs["messages"])
    roles = [m["role"] for m in ours.messages_json()]
    assert roles == ["user", "reasoning", "assistant", "tool", "assistant"]
    assert ours.messages_json()[1]["content"] == "The user wants the weather."
    legacy = [w for w in ours.warnings if w.kind == "legacy"]
    assert len(legacy) >= 5  # each THINKING_* event, the title
    if encoder == "encoder-0-0-45":  # the snapshot's binary part, upgraded by both
        image = ours.messages_json()[0]["content"][1]
        assert image["type"] == "image" and image["metadata"] == {"filename": "dot.png"}
    # the 1.0 client warned about each conversion; ours are the warnings above
    assert any("[ag-ui][compat]" in w for w in theirs["warnings"])


def test_an_ag_ui_protocol_server_is_read_as_the_1_0_client_reads_it(node: str) -> None:
    from tests.interop.ag_ui_protocol_server import app  # needs ag-ui-protocol and FastAPI

    with serving(app) as url:
        ours = agui_read(url, "Weather in Paris?")
        theirs = ts(node, "1.0.0", url, "Weather in Paris?")
    assert theirs["error"] is None and theirs["warnings"] == [], theirs
    assert ours.failures == [] and ours.warnings == []
    assert comparable(ours.messages_json()) == comparable(theirs["messages"])
    assert [m["role"] for m in ours.messages_json()] == [
        "user",
        "reasoning",
        "assistant",
        "tool",
        "assistant",
    ]
    assert ours.state == theirs["state"] == {"city": "Paris"}
