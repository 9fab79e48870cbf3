"""The conformance runner: load the cases of cases/*.json, run each one, compare with its `expect`.

A case is one JSON file (the format is described in README.md beside this file):

    {"description": "...", "input": {...}?, "stream": [...], "expect": {...}, "ts": {...}?}

Every case runs two ways, and both must meet `expect`:

* replay: the frame data of `stream`, as bytes, through `Conversation.consume`;
* http: a tiny ASGI app under a real uvicorn answers the POST with the frames verbatim as SSE
  (`data: <text>\\n\\n`), consumed by `Conversation.run(HttpAgent(url), input=...)`.

In both, the conversation starts from the input's messages and state (as `agui run --input` does,
and as an official TypeScript agent built with the input's messages and state does), so a
MESSAGES_SNAPSHOT reconciles against them and a STATE_DELTA patches them.

    python -m tests.conformance.runner [NAME ...]   # run cases (default: all), print mismatches
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from agui_generated import DecodeError

import agui
from agui.errors import StreamError
from agui.stream.conversation import Conversation

__all__ = [
    "CASES",
    "DEFAULT_INPUT",
    "Case",
    "CaseFormatError",
    "check",
    "frames",
    "load_case",
    "load_cases",
    "run_http",
    "run_replay",
    "sse_app",
]

CASES = Path(__file__).resolve().parent / "cases"
DEFAULT_INPUT: dict[str, Any] = {"threadId": "t1", "runId": "r1", "messages": []}
"""The RunAgentInput of a case that gives none."""

OUTCOMES = ("completed", "interrupt", "error", "failed")
CASE_KEYS = {"description", "input", "stream", "expect", "ts"}
EXPECT_KEYS = {
    "outcome",
    "error",
    "eventTypes",
    "messages",
    "messageIds",
    "state",
    "warnings",
    "pendingInterrupts",
}
REJECTIONS = (StreamError, DecodeError)
"""What a client-side rejection raises; anything else escaping a run is a bug, not an outcome."""


class CaseFormatError(ValueError):
    """A case file does not follow the format."""


@attrs.frozen
class Case:
    """One conformance case, as loaded from its file."""

    name: str
    """The file name without .json (kebab-case)."""
    description: str
    input: dict[str, Any]
    """The RunAgentInput wire JSON (DEFAULT_INPUT when the file gives none)."""
    stream: list[Any]
    """Event JSON objects, or strings sent as the raw data text of their frame."""
    expect: dict[str, Any]
    ts: dict[str, Any] | None = None
    """{"agree": false, "reason": ...} when the official TypeScript client 1.0.0 differs."""


# ── loading ──────────────────────────────────────────────────────────────────────────────────


def _require(condition: bool, name: str, problem: str) -> None:
    if not condition:
        raise CaseFormatError(f"{name}: {problem}")


def load_case(path: Path) -> Case:
    """Load and check one case file; raises CaseFormatError when it breaks the format."""
    name = path.stem
    data = json.loads(path.read_text(encoding="utf-8"))
    _require(isinstance(data, dict), name, "a case is a JSON object")
    _require(not set(data) - CASE_KEYS, name, f"unknown keys {sorted(set(data) - CASE_KEYS)}")
    _require(
        isinstance(data.get("description"), str) and bool(data["description"]),
        name,
        "description must be a non-empty string",
    )
    _require(isinstance(data.get("stream"), list), name, "stream must be an array")
    for item in data["stream"]:
        _require(
            isinstance(item, dict) or (isinstance(item, str) and "\n" not in item),
            name,
            "a stream element is an event object or a one-line string",
        )
    run_input = data.get("input", DEFAULT_INPUT)
    _require(isinstance(run_input, dict), name, "input must be an object")
    expect = data.get("expect")
    _require(isinstance(expect, dict), name, "expect must be an object")
    assert isinstance(expect, dict)
    _require(
        not set(expect) - EXPECT_KEYS, name, f"unknown expect keys {set(expect) - EXPECT_KEYS}"
    )
    _require(
        expect.get("outcome") in OUTCOMES,
        name,
        "expect.outcome is completed, interrupt, error or failed",
    )
    _require(
        "error" in expect and (expect["error"] is None or isinstance(expect["error"], str)),
        name,
        "expect.error is a string or null",
    )
    for key in ("eventTypes", "messageIds", "pendingInterrupts"):
        if key in expect:
            _require(
                isinstance(expect[key], list) and all(isinstance(v, str) for v in expect[key]),
                name,
                f"expect.{key} is an array of strings",
            )
    if "messages" in expect:
        _require(
            isinstance(expect["messages"], list)
            and all(
                isinstance(m, dict) and isinstance(m.get("id"), str) for m in expect["messages"]
            ),
            name,
            "expect.messages is an array of objects with an id",
        )
    if "warnings" in expect:
        _require(
            isinstance(expect["warnings"], list)
            and all(
                isinstance(w, dict)
                and set(w) == {"kind", "message"}
                and all(isinstance(v, str) for v in w.values())
                for w in expect["warnings"]
            ),
            name,
            "expect.warnings is an array of {kind, message} strings",
        )
    ts = data.get("ts")
    if ts is not None:
        _require(
            isinstance(ts, dict)
            and set(ts) == {"agree", "reason"}
            and ts["agree"] is False
            and isinstance(ts["reason"], str)
            and bool(ts["reason"]),
            name,
            'ts is {"agree": false, "reason": "..."}',
        )
    return Case(name, data["description"], run_input, data["stream"], expect, ts)


def load_cases(directory: Path = CASES) -> list[Case]:
    """Every case of `directory`, sorted by name."""
    return [load_case(path) for path in sorted(directory.glob("*.json"))]


# ── running ──────────────────────────────────────────────────────────────────────────────────


def frames(case: Case) -> list[bytes]:
    """The data text of each frame: an event as compact JSON, a string as it is."""
    return [
        item.encode()
        if isinstance(item, str)
        else json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode()
        for item in case.stream
    ]


def _start(case: Case) -> tuple[agui.RunAgentInput, Conversation]:
    """The case's input (which must be valid) and a conversation seeded with its history. The
    corpus describes what a client holds once it processed the stream, a rejected or cut run's
    partial output included (as the official clients keep it), hence keep_partial: the
    conversation's own default rolls such a run back for its next input."""
    run_input = agui.decode_json(case.input, agui.RunAgentInput, strict=True)
    seed: dict[str, Any] = {} if run_input.state is None else {"state": run_input.state}
    return run_input, Conversation(
        run_input.thread_id,
        messages=run_input.messages,
        keep_events=True,
        keep_partial=True,
        **seed,
    )


def run_replay(case: Case) -> dict[str, Any]:
    """Replay the frames through the whole pipeline; the conversation's summary."""
    _, conversation = _start(case)
    try:
        conversation.consume(frames(case))
    except REJECTIONS:
        pass  # recorded in the summary
    return conversation.summary()


def sse_app(body: bytes) -> Callable[..., Any]:
    """An ASGI app answering every POST with `body` as text/event-stream (others: 405)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def run_http(case: Case, serve: Callable[[Any], str]) -> dict[str, Any]:
    """Serve the frames verbatim over real HTTP (`serve(app)` returns the app's URL) and run the
    conversation against it with HttpAgent; the conversation's summary."""
    run_input, conversation = _start(case)
    body = b"".join(b"data: " + data + b"\n\n" for data in frames(case))
    url = serve(sse_app(body))
    try:
        asyncio.run(conversation.run(agui.HttpAgent(url), input=run_input))
    except REJECTIONS:
        pass  # recorded in the summary
    return conversation.summary()


# ── comparing ────────────────────────────────────────────────────────────────────────────────


def _same(want: Any, got: Any) -> bool:
    """JSON equality that tells true from 1 (Python's == does not)."""
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want is got
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and want.keys() == got.keys()
            and all(_same(v, got[k]) for k, v in want.items())
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(want) == len(got)
            and all(_same(w, g) for w, g in zip(want, got, strict=True))
        )
    return bool(type(want) is type(got) and want == got) or (
        isinstance(want, int | float) and isinstance(got, int | float) and want == got
    )


def _subset(want: Any, got: Any) -> bool:
    """`got` has every key of the object `want` with a matching value (objects recursively,
    arrays element by element at the same length, anything else by equality)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            k in got and _subset(v, got[k]) for k, v in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(want) == len(got)
            and all(_subset(w, g) for w, g in zip(want, got, strict=True))
        )
    return _same(want, got)


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def check(expect: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """Compare a summary with a case's `expect`; one string per mismatch ([] = it passes)."""
    problems: list[str] = []
    error = summary["error"]
    if summary["outcome"] != expect["outcome"]:
        problems.append(
            f"outcome: expected {expect['outcome']!r}, got {summary['outcome']!r} "
            f"(error: {error!r})"
        )
    if expect["error"] is None:
        if error is not None:
            problems.append(f"error: expected none, got {error!r}")
    elif error is None or expect["error"] not in error:
        problems.append(f"error: expected a text containing {expect['error']!r}, got {error!r}")
    if "eventTypes" in expect and expect["eventTypes"] != summary["eventTypes"]:
        problems.append(
            f"eventTypes: expected {_show(expect['eventTypes'])}, got {_show(summary['eventTypes'])}"
        )
    messages = summary["messages"]
    by_id = {m.get("id"): m for m in messages}
    for want in expect.get("messages", ()):
        got = by_id.get(want["id"])
        if got is None:
            problems.append(f"messages: no message with id {want['id']!r}")
        elif not _subset(want, got):
            problems.append(f"messages: expected {_show(want)} within {_show(got)}")
    if "messageIds" in expect:
        ids = [m.get("id") for m in messages]
        if ids != expect["messageIds"]:
            problems.append(f"messageIds: expected {_show(expect['messageIds'])}, got {_show(ids)}")
    if "state" in expect and not _same(expect["state"], summary["state"]):
        problems.append(f"state: expected {_show(expect['state'])}, got {_show(summary['state'])}")
    if "warnings" in expect:
        warnings = summary["warnings"]
        if not expect["warnings"] and warnings:
            problems.append(f"warnings: expected none, got {_show(warnings)}")
        for want in expect["warnings"]:
            if not any(
                w["kind"] == want["kind"] and want["message"] in w["message"] for w in warnings
            ):
                problems.append(f"warnings: no {_show(want)} among {_show(warnings)}")
    if "pendingInterrupts" in expect:
        ids = [i["id"] for i in summary["pendingInterrupts"]]
        if ids != expect["pendingInterrupts"]:
            problems.append(
                f"pendingInterrupts: expected {_show(expect['pendingInterrupts'])}, got {_show(ids)}"
            )
    return problems


# ── command line ─────────────────────────────────────────────────────────────────────────────


def main(argv: list[str]) -> int:
    """Run the named cases (default: all) both ways; print each mismatch; exit 1 if any."""
    from tests.conftest import _Apps, live_server

    cases = [c for c in load_cases() if not argv or c.name in argv]
    apps = _Apps()
    failing = 0
    with live_server(apps) as base:
        for case in cases:
            runs = (
                ("replay", run_replay(case)),
                ("http", run_http(case, lambda app: base + apps.add(app))),
            )
            for mode, summary in runs:
                problems = check(case.expect, summary)
                failing += bool(problems)
                for problem in problems:
                    print(f"{case.name} [{mode}]: {problem}")
    print(f"{len(cases)} cases, {failing} failing runs")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
