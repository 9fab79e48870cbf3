"""Releases of the official client against a fork whose snapshot carries extensions: a content part
of its own, and members of its own in an official message and content part.

tests/fork/overlay.yaml (the fork `nox -s fork` proves) adds LocationPart to the ContentPart
union; `python -m codegen --spec --out` generates that fork into a temporary folder, and
tests/interop/extension_part_server.py serves, with the fork's packages first on its PYTHONPATH,
an agent whose MESSAGES_SNAPSHOT holds a user message with a text part and a location part, and
a user message with the fork's replyTo and an image part with its altText.

* `compat="0.0.59"` (CopilotKit's runtime 1.75), and each release of the matrix with its own era:
  the era removes the part (no 0.0.x release reads one: their content part union is closed), and
  the real client completes the run with the user's text and the assistant's;
* `compat="off"` (the 1.0 stream, as it is): the same client fails the whole run with zod's
  `invalid_union_discriminator`, which is what the era's rule is for;
* the default (`auto`, the 0.0.35 era, read by 0.0.35 too): the user's content is its text;
* @ag-ui/client 1.0.0 (which declares its version, so gets the stream as it is) removes the part
  itself, with a console warning, and completes the run;
* members the fork adds to an official message and content part (UserMessage.replyTo,
  ImagePart.altText) are sent as they are: every release strips them (0.0.x silently, as zod does
  with a member its non-strict objects do not list; 1.0.0 with a warning) and completes the run.

Runs only with AGUI_INTEROP=1 (`nox -s interop`), like the rest of tests/interop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.fork.run import merge
from tests.interop.test_compat_matrix import RELEASES, node, ts

__all__ = ["node"]  # the fixture (node, the aliased releases installed), used by name

pytestmark = pytest.mark.skipif(
    os.environ.get("AGUI_INTEROP") != "1",
    reason="interop tests run under `nox -s interop` (AGUI_INTEROP=1)",
)

SERVER = ROOT / "tests" / "interop" / "extension_part_server.py"
PRE_1_0 = [release for release in RELEASES if release != "1.0.0"]
"""Every 0.0.x release of the matrix, each served its own era (`compat=` the release)."""


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated packages of tests/fork/overlay.yaml's fork."""
    base = tmp_path_factory.mktemp("extension_fork")
    (base / "spec").mkdir()
    spec = yaml.safe_load((ROOT / "spec" / "agui.yaml").read_text("utf-8"))
    overlay = yaml.safe_load((ROOT / "tests" / "fork" / "overlay.yaml").read_text("utf-8"))
    if "LocationPart" not in spec["definitions"]:  # under `nox -s fork` the spec has it already
        spec = merge(spec, overlay)
    (base / "spec" / "agui.yaml").write_text(
        yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100), "utf-8"
    )
    (base / "spec" / "proto-ledger.txt").write_text(
        (ROOT / "spec" / "proto-ledger.txt").read_text("utf-8"), "utf-8"
    )
    spec_file, out = str(base / "spec" / "agui.yaml"), str(base / "generated")
    made = subprocess.run(
        [sys.executable, "-m", "codegen", "--spec", spec_file, "--out", out],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return base / "generated"


@contextmanager
def serve(fork: Path, compat: str) -> Iterator[str]:
    """extension_part_server.py with the fork's packages first: its URL, until the block ends."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fork), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), compat],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout = proc.stdout
        assert stdout is not None
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)
        if not ready or not ready[0].strip():
            proc.kill()
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"extension_part_server.py did not start: {err.strip()}")
        yield f"http://127.0.0.1:{json.loads(ready[0])['port']}/agent"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture(scope="module")
def servers(fork: Path) -> Iterator[dict[str, str]]:
    urls: dict[str, str] = {}
    contexts = []
    try:
        for compat in (*PRE_1_0, "off", "auto"):
            context = serve(fork, compat)
            urls[compat] = context.__enter__()
            contexts.append(context)
        yield urls
    finally:
        for context in reversed(contexts):
            context.__exit__(None, None, None)


def user_content(report: Any) -> Any:
    (user,) = [m for m in report["messages"] if m.get("role") == "user" and m["id"] == "user-1"]
    return user["content"]


@pytest.mark.parametrize("release", PRE_1_0)
def test_each_release_completes_a_run_whose_snapshot_has_an_extension_part(
    node: str, servers: dict[str, str], release: str
) -> None:
    report = ts(node, release, servers[release], "hi")
    assert report["error"] is None, report["error"]
    assert report["warnings"] == []
    assert "MESSAGES_SNAPSHOT" in report["events"]
    # 0.0.35 - 0.0.40 take a string, the others parts: the text part stays either way
    assert user_content(report) in ("Meet me here", [{"type": "text", "text": "Meet me here"}])
    texts = [m.get("content") for m in report["messages"] if m.get("role") == "assistant"]
    assert texts == ["On my way", "See you there"]


def test_without_the_era_0_0_59_fails_the_run_on_the_part(
    node: str, servers: dict[str, str]
) -> None:
    report = ts(node, "0.0.59", servers["off"], "hi")
    assert report["error"] is not None
    assert "invalid_union_discriminator" in json.dumps(report["error"])


def test_the_1_0_client_removes_the_part_itself_with_a_warning(
    node: str, servers: dict[str, str]
) -> None:
    """What docs/compatibility.md says of a 1.0 front end: the stream is not touched for it."""
    report = ts(node, "1.0.0", servers["off"], "hi")
    assert report["error"] is None, report["error"]
    assert user_content(report) == [{"type": "text", "text": "Meet me here"}]
    assert any("Removed unrecognised material" in w for w in report["warnings"]), report
    # so are the members a fork adds to an official message and content part
    assert "replyTo" not in answer(report) and "altText" not in json.dumps(answer(report))
    for member in ("/messages/2/replyTo", "/messages/2/content/1/altText"):
        assert any(f"material at '{member}'" in w for w in report["warnings"]), report


@pytest.mark.parametrize("release", ["0.0.35", "0.0.59"])
def test_the_default_gives_every_release_the_text(
    node: str, servers: dict[str, str], release: str
) -> None:
    report = ts(node, release, servers["auto"], "hi")
    assert report["error"] is None, report["error"]
    assert user_content(report) == "Meet me here"


def answer(report: Any) -> Any:
    """The user's answer (user-2): the fork's replyTo, and an image part with its altText."""
    (message,) = [m for m in report["messages"] if m["id"] == "user-2"]
    return message


@pytest.mark.parametrize("release", PRE_1_0)
def test_each_release_drops_the_extension_members_of_a_message_and_a_part(
    node: str, servers: dict[str, str], release: str
) -> None:
    """No 0.0.x release declares its messages or content parts strict (only the outcomes): zod
    strips a member it does not know, so the era sends them as they are, and the run completes
    with the message and the part as its era gives them."""
    report = ts(node, release, servers[release], "hi")
    assert report["error"] is None and report["warnings"] == [], report
    message = answer(report)
    assert "replyTo" not in message and "altText" not in json.dumps(message)
    content = message["content"]
    if isinstance(content, str):  # 0.0.35 - 0.0.40: the text; the image left out
        assert content == "This one"
    else:  # a legacy binary part (0.0.45), the image part (0.0.50 on)
        assert [part["type"] for part in content] in (["text", "binary"], ["text", "image"])
