"""The `agui validate` command line, run as a real subprocess.

Every run must print one well-formed JSON result line per document and never a traceback, whatever
the input; exit 0 when every document passed, 1 when any failed, 2 for an unknown --as definition.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agui_generated._runtime import MAX_JSON_DEPTH

from .conftest import FIXTURES

QUICK = 15.0
"""A hang bound: seconds a run on hostile input may take before the test fails (each takes well
under one second on a developer machine; a run that chokes on its input takes far longer)."""

MIB = 1024 * 1024


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: bytes
    seconds: float

    @property
    def lines(self) -> list[bytes]:
        return self.stdout.splitlines()

    @property
    def results(self) -> list[dict[str, Any]]:
        out = [json.loads(line) for line in self.lines]
        for result in out:
            _check_shape(result)
        return out


def validate(*args: str | Path, stdin: bytes = b"") -> Run:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "agui", "validate", *map(str, args)],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    run = Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
    assert b"Traceback" not in run.stdout + run.stderr, run.stderr.decode(errors="replace")
    return run


def _check_shape(result: dict[str, Any]) -> None:
    """The documented result line: file, line, ok, errors, warnings, and wire exactly when ok
    (and item, for an item of a JSON array)."""
    assert type(result["ok"]) is bool
    expected = {"file", "line", "ok", "errors", "warnings"} | ({"wire"} if result["ok"] else set())
    assert set(result) - {"item"} == expected
    assert type(result["file"]) is str
    assert result["line"] is None or type(result["line"]) is int
    assert (result["errors"] == []) is result["ok"]
    for problem in result["errors"] + result["warnings"]:
        assert set(problem) == {"pointer", "kind", "message"}
        assert all(type(v) is str for v in problem.values())
        assert problem["message"]


def _problems(items: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(p["pointer"], p["kind"]) for p in items]


def _only_failure(run: Run, kind: str, pointer: str = "") -> dict[str, Any]:
    """Exactly one result line, failed with `kind` at `pointer`; exit 1."""
    assert run.code == 1, run.stderr
    [result] = run.results
    assert result["ok"] is False
    assert (pointer, kind) in _problems(result["errors"])
    return result


def _canonical(fixture: Path) -> bytes:
    expect = fixture.with_name(fixture.stem + ".expect.json")
    return (expect if expect.exists() else fixture).read_bytes().rstrip(b"\n")


# ── valid documents ──────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("name", ["every-field", "minimal", "keys-out-of-order"])
def test_valid_event_file_is_ok_and_wire_is_the_canonical_bytes(name: str) -> None:
    """A valid event file: ok, exit 0, and `wire` is byte for byte the canonical encoding (the
    fixture itself, or its .expect.json when the input is not canonical)."""
    fixture = FIXTURES / "TextMessageStartEvent" / "valid" / f"{name}.json"
    run = validate(fixture)
    assert run.code == 0, run.stderr
    [result] = run.results
    assert result["ok"] is True and result["warnings"] == []
    [line] = run.lines
    assert line.endswith(b',"wire":' + _canonical(fixture) + b"}")
    assert result["wire"] == json.loads(_canonical(fixture))


def test_json_lines_on_stdin_give_one_result_each_in_order() -> None:
    """Without FILE, each non-blank stdin line is a document with its own result line, in input
    order; one failure makes the exit code 1 but does not stop the others."""
    docs = [
        b'{"type":"TEXT_MESSAGE_START","messageId":"m1"}',
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi"}',
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1"}',
        b'{"messageId":"m1","type":"TEXT_MESSAGE_END"}',
    ]
    run = validate(stdin=b"\n".join(docs) + b"\n\n")
    assert run.code == 1
    results = run.results
    assert [r["ok"] for r in results] == [True, True, False, True]
    assert results[0]["wire"] == {"type": "TEXT_MESSAGE_START", "messageId": "m1"}
    assert results[1]["wire"]["delta"] == "hi"
    assert ("/delta", "missing") in _problems(results[2]["errors"])
    assert run.lines[3].endswith(b'"wire":{"type":"TEXT_MESSAGE_END","messageId":"m1"}}')


def test_all_valid_stdin_exits_zero() -> None:
    """Exit 0 when every document passed."""
    stdin = (
        b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}\n{"type":"STEP_STARTED","stepName":"s"}'
    )
    run = validate(stdin=stdin)
    assert run.code == 0, run.stderr
    assert [r["ok"] for r in run.results] == [True, True]


def test_jsonl_file_holds_one_document_per_line(tmp_path: Path) -> None:
    """A .jsonl FILE is read line by line like stdin; other files are one document each."""
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_bytes(
        b'{"type":"STEP_STARTED","stepName":"a"}\n\n{"type":"STEP_STARTED"}\n'
        b'{"type":"STEP_FINISHED","stepName":"a"}\n'
    )
    single = tmp_path / "one.json"
    single.write_bytes(b'{\n  "type": "STEP_FINISHED",\n  "stepName": "b"\n}\n')
    run = validate(jsonl, single)
    assert run.code == 1
    results = run.results
    assert [r["ok"] for r in results] == [True, False, True, True]
    assert ("/stepName", "missing") in _problems(results[1]["errors"])
    assert results[3]["wire"] == {"type": "STEP_FINISHED", "stepName": "b"}


@pytest.mark.parametrize("name", ["every-field", "minimal", "multimodal-user"])
def test_as_run_agent_input(name: str) -> None:
    """--as DEFINITION validates against that definition instead of Event."""
    fixture = FIXTURES / "RunAgentInput" / "valid" / f"{name}.json"
    run = validate("--as", "RunAgentInput", fixture)
    assert run.code == 0, run.stderr
    [result] = run.results
    assert result["ok"] is True
    assert run.lines[0].endswith(b',"wire":' + _canonical(fixture) + b"}")
    # the same document is no event
    _only_failure(validate(fixture), "missing", "/type")


# ── tolerant versus strict ───────────────────────────────────────────────────────────────────

UNKNOWN_MEMBER = b'{"type":"TEXT_MESSAGE_START","messageId":"m1","futureField":{"x":1}}\n'


def test_unknown_member_tolerant_is_ok_with_a_warning(tmp_path: Path) -> None:
    """Tolerant (default): an unknown member is removed with a warning naming it; ok, exit 0."""
    doc = tmp_path / "doc.json"
    doc.write_bytes(UNKNOWN_MEMBER)
    run = validate(doc)
    assert run.code == 0, run.stderr
    [result] = run.results
    assert result["ok"] is True
    assert _problems(result["warnings"]) == [("/futureField", "unknown_property")]
    assert result["wire"] == {"type": "TEXT_MESSAGE_START", "messageId": "m1"}


def test_unknown_member_strict_fails(tmp_path: Path) -> None:
    """--strict: an unknown member is an error of kind unknown_property at its pointer; exit 1."""
    doc = tmp_path / "doc.json"
    doc.write_bytes(UNKNOWN_MEMBER)
    result = _only_failure(validate("--strict", doc), "unknown_property", "/futureField")
    assert "futureField" in result["errors"][0]["message"]


UNKNOWN_TYPE = b'{"type":"FUTURE_EVENT","payload":{"a":[1,2.5,null]},"n":1}'


def test_unknown_event_type_tolerant_is_ok_and_forwarded_whole() -> None:
    """Tolerant: an event of an unknown type is ok with an unknown_tag warning at /type, and is
    passed on whole (its wire is the document as received)."""
    run = validate(stdin=UNKNOWN_TYPE + b"\n")
    assert run.code == 0, run.stderr
    [result] = run.results
    assert result["ok"] is True
    assert _problems(result["warnings"]) == [("/type", "unknown_tag")]
    assert run.lines[0].endswith(b',"wire":' + UNKNOWN_TYPE + b"}")


def test_unknown_event_type_strict_fails() -> None:
    """--strict: an unknown event type fails with unknown_tag at /type."""
    _only_failure(validate("--strict", stdin=UNKNOWN_TYPE), "unknown_tag", "/type")


# ── usage errors ─────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "name",
    [
        "NoSuchDefinition",
        "event",
        "decode",
        "TAGS",
        "Role",
        "Problem",
        "JsonPointer",
        "UnknownEvent",
    ],
)
def test_unknown_as_definition_exits_2(name: str) -> None:
    """--as with a name that is no definition of the spec: exit 2, a message naming it on
    stderr, nothing on stdout, no traceback."""
    run = validate("--as", name, stdin=b'{"type":"STEP_STARTED","stepName":"s"}\n')
    assert run.code == 2
    assert run.stdout == b""
    assert b"unknown definition" in run.stderr and name.encode() in run.stderr
    assert b"; the definitions are: " in run.stderr and b"StepStartedEvent" in run.stderr


@pytest.mark.parametrize(
    ("name", "nearest"),
    [
        ("stepstartedevent", "StepStartedEvent"),
        ("StepStarted", "StepStartedEvent"),
        ("ToolCal", "ToolCall"),
        ("UserMesage", "UserMessage"),
    ],
)
def test_an_unknown_definition_names_the_nearest_ones(name: str, nearest: str) -> None:
    run = validate("--as", name, stdin=b'{"type":"STEP_STARTED","stepName":"s"}\n')
    assert run.code == 2
    message = run.stderr.decode()
    assert f"unknown definition {name!r} (did you mean " in message
    assert nearest in message.split("(did you mean ", 1)[1].split("?)")[0]


def test_missing_file_is_an_error_result(tmp_path: Path) -> None:
    """A FILE that cannot be read is a failed result (kind io) naming it; the other files are
    still validated."""
    good = FIXTURES / "TextMessageStartEvent" / "valid" / "minimal.json"
    missing = tmp_path / "no-such-file.json"
    run = validate(good, missing, good)
    assert run.code == 1
    results = run.results
    assert [r["ok"] for r in results] == [True, False, True]
    assert _problems(results[1]["errors"]) == [("", "io")]
    assert "no-such-file.json" in results[1]["errors"][0]["message"]


# ── hostile input ────────────────────────────────────────────────────────────────────────────


def _hostile(case: str, tmp_path: Path) -> tuple[list[str | Path], bytes]:
    """The arguments and stdin of one hostile-input case."""
    path = tmp_path / "doc.json"
    if case == "not-json":
        path.write_bytes(b'{"type":')
    elif case == "empty-file":
        path.write_bytes(b"")
    elif case == "binary-file":
        path.write_bytes(b"\xff\xfe\x00\x80\xc3\x28garbage\x9f")
    elif case == "binary-stdin":
        return [], b"\xff\xfe\x80\xc3\x28\n"
    elif case == "empty-stdin":
        return [], b""
    elif case == "blank-stdin":
        return [], b"\n  \n\t\n"
    elif case == "deep-array":
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    elif case == "ten-mb-string":
        path.write_bytes(b'"' + b"a" * 10_000_000 + b'"')
    elif case == "33-mib-file":
        path.write_bytes(b'"' + b"a" * (33 * MIB) + b'"')
    else:  # pragma: no cover
        raise AssertionError(case)
    return [path], b""


@pytest.mark.parametrize(
    ("case", "kind", "pointer"),
    [
        ("not-json", "json", ""),
        ("empty-file", "json", ""),
        ("binary-file", "json", ""),
        ("binary-stdin", "json", ""),
        ("empty-stdin", "json", ""),
        ("blank-stdin", "json", ""),
        ("deep-array", "json", ""),
        ("ten-mb-string", "type", ""),
        ("33-mib-file", "too_large", ""),
    ],
)
def test_hostile_input_gives_one_clear_error(
    case: str, kind: str, pointer: str, tmp_path: Path
) -> None:
    """Garbage in: exactly one failed result line with the expected kind, exit 1, no traceback,
    quickly, and a short output that does not echo the input back."""
    args, stdin = _hostile(case, tmp_path)
    run = validate(*args, stdin=stdin)
    _only_failure(run, kind, pointer)
    assert run.seconds < QUICK  # hang bound
    assert len(run.stdout) < 2000


def test_oversized_stdin_line_is_skipped_and_reading_goes_on() -> None:
    """A stdin line over 32 MiB is reported too_large, and the line after it is still read."""
    stdin = b'"' + b"a" * (33 * MIB) + b'"\n{"type":"STEP_STARTED","stepName":"s"}\n'
    run = validate(stdin=stdin)
    assert run.code == 1
    results = run.results
    assert [r["ok"] for r in results] == [False, True]
    assert _problems(results[0]["errors"]) == [("", "too_large")]
    assert run.seconds < QUICK  # hang bound


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for i in range(depth - 1):
        value = {f"k{i}": value}
    return value


def _deep_pointer(at: str, depth: int) -> str:
    """The pointer of the innermost object of `_nested(depth)` held at `at`."""
    return at + "".join(f"/k{i}" for i in reversed(range(depth - 1)))


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, MAX_JSON_DEPTH - 1])
def test_deeply_nested_metadata_is_valid_and_kept_whole(depth: int, tmp_path: Path) -> None:
    """Opaque JSON (metadata) nested up to the limit (MAX_JSON_DEPTH levels, which encoding
    takes too) is kept as is: ok with no error or warning, exit 0, and `wire` is the event in
    spec order."""
    doc = tmp_path / "deep.json"
    event = {"type": "TEXT_MESSAGE_START", "messageId": "m1", "metadata": _nested(depth)}
    doc.write_text(json.dumps(event))
    run = validate(doc)
    assert run.code == 0, run.stdout[:500] + run.stderr[-500:]
    [result] = run.results
    assert result["ok"] is True
    assert result["errors"] == [] and result["warnings"] == []
    canonical = {"type": event["type"], "metadata": event["metadata"], "messageId": "m1"}
    [line] = run.lines
    assert line.endswith(b',"wire":' + json.dumps(canonical, separators=(",", ":")).encode() + b"}")
    assert run.seconds < QUICK  # hang bound


def test_metadata_nested_one_level_deeper_is_a_depth_error(tmp_path: Path) -> None:
    """One level past the limit is refused, at the object one level too deep."""
    doc = tmp_path / "deep.json"
    event = {
        "type": "TEXT_MESSAGE_START",
        "messageId": "m1",
        "metadata": _nested(MAX_JSON_DEPTH + 1),
    }
    doc.write_text(json.dumps(event))
    result = _only_failure(validate(doc), "depth", _deep_pointer("/metadata", MAX_JSON_DEPTH + 1))
    assert len(result["errors"]) == 1


def test_deeply_nested_unknown_event_is_forwarded_whole(tmp_path: Path) -> None:
    """The same for an event of an unknown type, which tolerant mode forwards whole (so the
    event itself is the any-JSON value, its metadata one level down): ok with the one
    unknown_tag warning at /type, exit 0, and `wire` is the document as received; one level
    more is a depth error."""
    too_deep = {"type": "FUTURE_EVENT", "metadata": _nested(MAX_JSON_DEPTH)}
    (tmp_path / "too-deep.json").write_text(json.dumps(too_deep))
    refused = _only_failure(
        validate(tmp_path / "too-deep.json"), "depth", _deep_pointer("/metadata", MAX_JSON_DEPTH)
    )
    assert len(refused["errors"]) == 1
    doc = tmp_path / "deep.json"
    document = json.dumps(
        {"type": "FUTURE_EVENT", "metadata": _nested(MAX_JSON_DEPTH - 1)}, separators=(",", ":")
    )
    doc.write_text(document)
    run = validate(doc)
    assert run.code == 0, run.stdout[:500] + run.stderr[-500:]
    [result] = run.results
    assert result["ok"] is True and result["errors"] == []
    assert _problems(result["warnings"]) == [("/type", "unknown_tag")]
    [line] = run.lines
    assert line.endswith(b',"wire":' + document.encode() + b"}")
    assert run.seconds < QUICK  # hang bound
