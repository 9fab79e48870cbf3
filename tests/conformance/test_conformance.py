"""The conformance suite: every case of cases/*.json, replayed and over real HTTP.

The format and what each `expect` key means are in README.md beside this file; the runner is
runner.py. Two test ids per case: `<name>-replay` and `<name>-http`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import ROOT
from .runner import CASES, Case, check, load_cases, run_http, run_replay

ALL = load_cases()
MODES = ("replay", "http")


@pytest.mark.parametrize(
    ("case", "mode"),
    [pytest.param(case, mode, id=f"{case.name}-{mode}") for case in ALL for mode in MODES],
)
def test_case(case: Case, mode: str, serve: Callable[[Any], str]) -> None:
    """The case's stream, run through the whole client, gives what the case expects."""
    summary = run_replay(case) if mode == "replay" else run_http(case, serve)
    problems = check(case.expect, summary)
    assert not problems, f"{case.name} ({mode}): {case.description}\n" + "\n".join(problems)


def test_the_suite_is_large_enough() -> None:
    """At least 60 cases, every file loads, and every name is kebab-case."""
    assert len(ALL) >= 60
    assert len(ALL) == len(list(CASES.glob("*.json")))
    for case in ALL:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", case.name), case.name


def test_known_divergences_are_documented() -> None:
    """Every case the TypeScript client is known to disagree with is named, with its reason, in
    the Known divergences page (docs/divergences.md)."""
    page = (ROOT / "docs" / "divergences.md").read_text(encoding="utf-8")
    section = page.split("# Known divergences", 1)[1]
    for case in ALL:
        if case.ts is not None:
            assert f"`{case.name}`" in section, case.name


# ── the runner's comparison itself ───────────────────────────────────────────────────────────

SUMMARY: dict[str, Any] = {
    "outcome": "completed",
    "error": None,
    "events": [],
    "eventTypes": ["RUN_STARTED", "RUN_FINISHED"],
    "messages": [
        {"id": "a", "role": "assistant", "content": "hi", "metadata": {"k": {"x": 1, "y": 2}}},
        {"id": "t", "role": "tool", "content": [{"type": "text", "text": "ok"}], "toolCallId": "c"},
    ],
    "state": {"n": 1, "flag": True},
    "warnings": [{"kind": "stripped", "message": "removed unknown member 'x'", "pointer": "/x"}],
    "pendingInterrupts": [{"id": "i1", "reason": "r"}],
}


@pytest.mark.parametrize(
    ("expect", "mismatches"),
    [
        ({}, 0),
        ({"messages": [{"id": "a", "metadata": {"k": {"y": 2}}}]}, 0),  # objects: subset
        ({"messages": [{"id": "t", "content": [{"type": "text"}]}]}, 0),  # arrays: same length
        ({"messages": [{"id": "t", "content": []}]}, 1),
        ({"messages": [{"id": "a", "content": "hi!"}]}, 1),
        ({"messages": [{"id": "zz"}]}, 1),
        ({"messageIds": ["a", "t"]}, 0),
        ({"messageIds": ["t", "a"]}, 1),
        ({"state": {"n": 1, "flag": True}}, 0),
        ({"state": {"n": 1}}, 1),  # state: exact
        ({"state": {"n": 1, "flag": 1}}, 1),  # true is not 1
        ({"state": None}, 1),
        ({"warnings": [{"kind": "stripped", "message": "'x'"}]}, 0),
        ({"warnings": [{"kind": "dropped_event", "message": "'x'"}]}, 1),
        ({"warnings": []}, 1),  # present and empty: no warning allowed
        ({"pendingInterrupts": ["i1"]}, 0),
        ({"pendingInterrupts": []}, 1),
        ({"eventTypes": ["RUN_STARTED"]}, 1),
        ({"outcome": "failed"}, 1),
        ({"error": "boom"}, 1),
    ],
)
def test_check(expect: dict[str, Any], mismatches: int) -> None:
    """Each expect key is compared as README.md says."""
    full = {"outcome": "completed", "error": None, **expect}
    assert len(check(full, SUMMARY)) == mismatches, check(full, SUMMARY)


def test_check_error_is_a_substring() -> None:
    """A failed summary matches an error substring; null demands no error."""
    failed = {**SUMMARY, "outcome": "failed", "error": "Cannot send 'RUN_FINISHED' while ..."}
    assert check({"outcome": "failed", "error": "while"}, failed) == []
    assert len(check({"outcome": "failed", "error": None}, failed)) == 1
