"""tests/crosscheck/run.py decides: a divergence not in the baseline fails the run, the baseline
passes it, a stale entry warns (fails with --strict); a peer given with `--peer` speaks the
protocol of tests/crosscheck/peers.py and is compared like the built-in ones; `--against` checks
another SDK's captured events; a fork's extension fixtures get a verdict per peer.

The runs need node (the example peer is a node script, not an SDK) and, for the built-in zod
peer, the npm packages under .crosscheck/ (`nox -s crosscheck` or `nox -s tests` installs them):
without them these tests are skipped, unless AGUI_REQUIRE_INTEROP=1 (CI) makes that a failure.
The pydantic peers need ag-ui-protocol, which the test environment does not have; `nox -s
crosscheck` runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

CROSSCHECK = ROOT / "tests" / "crosscheck"
RUN = CROSSCHECK / "run.py"
EXAMPLE = CROSSCHECK / "example_peer.mjs"
sys.path.insert(0, str(CROSSCHECK))

import baseline as baseline_file  # noqa: E402
import peers  # noqa: E402
from extensions import Extensions  # noqa: E402
from run import Document, asked_as, verdict  # noqa: E402

REQUIRED = os.environ.get("AGUI_REQUIRE_INTEROP") == "1"


def _missing(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"AGUI_REQUIRE_INTEROP=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        _missing("node is not on PATH (the crosscheck's peers run under it)")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def zod_installed(node: str) -> None:
    if not (ROOT / ".crosscheck" / "node_modules" / "@ag-ui" / "core").is_dir():
        _missing(
            "@ag-ui/core is not installed under .crosscheck/ (copy tests/crosscheck/package*.json "
            "there and run `npm ci --prefix .crosscheck`, or `nox -s crosscheck`)"
        )


def crosscheck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


QUICK = "TextMessageStartEvent,ToolCall,RunAgentInput,StateSnapshotEvent"
"""The definitions the baseline test looks at (a quicker run than every fixture)."""


def example(node: str, baseline: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return crosscheck(
        "--peers", "example", "--peer", f"example={node} {EXAMPLE}", "--baseline", str(baseline),
        "--report", str(baseline.with_name("report.json")), *args,
    )  # fmt: skip


def empty_baseline(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text('{"reasons": {}, "divergences": []}\n')
    return path


# ── the example peer, from nothing to a baseline ──────────────────────────────


def test_a_peer_given_with_peer_is_compared_and_its_divergences_fail_without_a_baseline(
    node: str, tmp_path: Path
) -> None:
    done = example(node, empty_baseline(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    summary = out.split("──")[0]
    assert "example" in summary and " new " in summary  # the summary comes first
    row = next(line.split() for line in summary.splitlines() if line.strip().startswith("example"))
    assert row[0] == "example" and int(row[4]) > 0  # documents, agreed, known, new
    # what a pass-through peer does wrong, each found and named
    assert "example: accepts an invalid document: unknown_property" in out
    assert "example: reorders object keys" in out
    assert "TextMessageStartEvent/valid/keys-out-of-order.json" in out
    assert "example: has no schema for ToolCall" in out
    assert "NEW divergences" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["new"] and all(d["peer"] == "example" for d in report["new"])


def test_the_baseline_passes_the_run_and_a_stale_entry_warns_or_fails_with_strict(
    node: str, tmp_path: Path
) -> None:
    path = empty_baseline(tmp_path)
    done = example(node, path, "--update-baseline", "--definitions", QUICK)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(path.read_text())
    entries = data["divergences"]
    # a definition the peer lacks is one entry for all its documents
    lacks = [e for e in entries if e["kind"] == "has no schema for ToolCall"]
    assert [e["fixture"] for e in lacks] == ["*"]
    assert all(e["reason"] in data["reasons"] for e in entries)

    done = example(node, path, "--strict", "--definitions", QUICK)
    assert done.returncode == 0, done.stdout
    assert "NEW" not in done.stdout and "stale" not in done.stdout.split("──")[-1].lower()

    # one entry out: that divergence is new again
    gone = next(e for e in entries if e["kind"] == "reorders object keys")
    data["divergences"] = [e for e in entries if e is not gone]
    path.write_text(json.dumps(data))
    done = example(node, path, "--definitions", QUICK)
    assert done.returncode == 1
    assert "1  example: reorders object keys" in done.stdout

    # one entry that never occurs: stale, a warning; with --strict a failure
    bogus = {**gone, "fixture": "TextMessageStartEvent/valid/minimal.json"}
    data["divergences"] = [*entries, bogus]
    path.write_text(json.dumps(data))
    done = example(node, path, "--definitions", QUICK)
    assert done.returncode == 0, done.stdout
    assert "stale baseline entries (1, warning)" in done.stdout
    assert "TextMessageStartEvent/valid/minimal.json: reorders object keys" in done.stdout
    done = example(node, path, "--strict", "--definitions", QUICK)
    assert done.returncode == 1
    assert "stale baseline entries (1, FAIL (--strict))" in done.stdout


def test_a_peer_that_breaks_the_protocol_is_a_failure_of_the_peer(tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text("import sys\nsys.stdin.read()\nprint('{\"ok\": true}')\n")
    done = crosscheck(
        "--peers", "silent", "--peer", f"silent={sys.executable} {script}",
        "--baseline", str(empty_baseline(tmp_path)), "--definitions", "ToolCall",
        "--report", str(tmp_path / "report.json"),
    )  # fmt: skip
    assert done.returncode == 2
    assert "peer silent did not run: answered 1 lines for" in done.stderr


def test_the_committed_baseline_holds_for_the_zod_peer(zod_installed: None, tmp_path: Path) -> None:
    done = crosscheck("--peers", "zod", "--strict", "--report", str(tmp_path / "report.json"))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    row = next(line.split() for line in done.stdout.splitlines() if line.startswith("  zod "))
    assert row[4] == "0" and row[5] == "0"  # new, stale


def test_every_committed_divergence_has_a_reason() -> None:
    known = baseline_file.read(baseline_file.PATH)
    assert known.entries
    unexplained = [k for k, r in known.entries.items() if r == baseline_file.UNEXPLAINED]
    assert not unexplained
    for reason in set(known.entries.values()):
        assert len(known.text(reason)) > 20, reason


# ── the protocol ──────────────────────────────────────────────────────────────


def test_a_request_line_carries_the_document_with_its_numbers_as_written() -> None:
    line = peers.request_line("StateSnapshotEvent", '{"snapshot": {"x": 1.0, "s": "\u2028é"}}')
    assert line.endswith("\n") and line.isascii() and line.count("\n") == 1
    item = json.loads(line)
    assert item["definition"] == "StateSnapshotEvent"
    assert '"document":{"snapshot":{"x":1.0,' in line
    assert item["document"]["snapshot"]["s"] == "\u2028é"
    not_json = peers.request_line("Event", "{NaN}")
    assert "document" not in json.loads(not_json) and json.loads(not_json)["text"] == "{NaN}"


def test_an_answer_is_read_with_its_numbers_as_written() -> None:
    assert peers.parse_answer('{"ok": true, "wire": {"a": 1, "b": 2.50}}', 1).wire == (
        '{"a":1,"b":2.50}'
    )
    assert peers.parse_answer('{"ok": true, "wire_text": "{\\"a\\": 1}"}', 1).wire == '{"a": 1}'
    rejected = peers.parse_answer('{"ok": false, "error": "unsupported: nope"}', 1)
    assert not rejected.ok and rejected.unsupported
    for bad in ("nope", '{"ok": "yes"}', '{"ok": true}'):
        with pytest.raises(peers.PeerFailure):
            peers.parse_answer(bad, 3)


# ── --against ─────────────────────────────────────────────────────────────────


def test_against_reports_every_event_agui_does_not_write_back_identically(tmp_path: Path) -> None:
    captured = tmp_path / "stream.jsonl"
    captured.write_text(
        '{"type":"RUN_STARTED","threadId":"t","runId":"r"}\n'
        '{"type":"TEXT_MESSAGE_CONTENT","delta":"hi","messageId":"m"}\n'
        "\n"
        '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}\n'
        '{"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n'
    )
    done = crosscheck("--against", str(captured))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "4 documents (Event): 2 identical, 1 written back differently, 1 rejected" in done.stdout
    assert "line 2: agui writes" in done.stdout and "reorders object keys" in done.stdout
    assert "line 4: agui rejects it" in done.stdout


def test_against_passes_a_stream_agui_writes_back_byte_for_byte(tmp_path: Path) -> None:
    folder = ROOT / "tests" / "fixtures" / "Event" / "valid"
    lines = [
        p.read_text().strip()
        for p in sorted(folder.glob("*.json"))
        if not p.name.endswith(".expect.json") and not p.with_name(p.stem + ".expect.json").exists()
    ]
    captured = tmp_path / "events.jsonl"
    captured.write_text("\n".join(lines) + "\n")
    done = crosscheck("--against", str(captured))
    assert done.returncode == 0, done.stdout
    assert f"{len(lines)} documents (Event): {len(lines)} identical" in done.stdout


# ── extensions: accept / strip / reject ───────────────────────────────────────


def test_an_extension_fixture_gets_a_verdict_never_a_comparison() -> None:
    from .test_fork_extensions import FORK

    extensions = Extensions(FORK)
    text = '{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant","language":"pt-BR"}'
    doc = Document("TextMessageStartEvent", "x/valid/language.json", text, True)
    doc.extensions = extensions.touched(doc.definition, json.loads(text))
    assert doc.extensions == ["TextMessageStartEvent.language"]

    kept = verdict("p", doc, peers.Outcome(True, text, None), extensions, text)
    assert (kept.verdict, kept.detail) == ("accept", "written back as agui writes it")
    stripped = text.replace(',"language":"pt-BR"', "")
    lost = verdict("p", doc, peers.Outcome(True, stripped, None), extensions, text)
    assert (lost.verdict, lost.detail) == ("strip", "drops TextMessageStartEvent.language")
    refused = verdict("p", doc, peers.Outcome(False, None, "language: unknown"), extensions, text)
    assert refused.verdict == "reject" and "rejects: language: unknown" in refused.detail
    unknown = verdict("p", doc, peers.Outcome(False, None, "unsupported: no"), extensions, None)
    assert unknown.verdict == "reject" and unknown.detail.startswith("has no schema")

    # a fork's new event is asked for as an Event, as a stream's reader meets it
    def asked(definition: str) -> str:
        return asked_as(Document(definition, "x", "{}", True), extensions)

    assert asked("LocationSharedEvent") == "Event"
    assert [asked(d) for d in ("TextMessageStartEvent", "LocationPart", "Event")] == [
        "TextMessageStartEvent",
        "LocationPart",
        "Event",
    ]


def test_the_example_of_docs_cross_sdk_is_the_example_peer() -> None:
    page = (ROOT / "docs" / "cross-sdk.md").read_text("utf-8")
    block = page.split("compares with this block -->\n```js\n", 1)[1].split("```", 1)[0]
    code = EXAMPLE.read_text("utf-8")
    assert code.endswith(block), "docs/cross-sdk.md shows another example peer than the file's"
    assert len(code.splitlines()) - len(block.splitlines()) <= 6  # only the header comment
