"""The integration matrix's record: the outcome of every test marked `matrix(CHECK)`, by check.

With AGUI_MATRIX_OUT=PATH (set by `nox -s integrations` for each framework) the outcomes go to
PATH as JSON at the end of the run, with the framework's name and installed versions, for
`python -m tests.integrations.matrix` to put in docs/integrations.md. A check run more than once
(parametrized) is passed only when every one of its runs passed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

OUT = os.environ.get("AGUI_MATRIX_OUT")
_outcomes: dict[str, str] = {}
_native: dict[str, str] = {}
_frameworks: list[Any] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "matrix(check): a column of the integration matrix")
    config.addinivalue_line(
        "markers", "native(check): a column of the matrix's table of the native endpoints"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        framework = getattr(getattr(item, "cls", None), "framework", None)
        if framework is None:
            continue
        if framework not in _frameworks:
            _frameworks.append(framework)
        mark = item.get_closest_marker("matrix")
        reason = framework.known_failures.get(str(mark.args[0])) if mark else None
        if reason is not None:  # strict: a check that starts to pass must leave the list
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    native = item.get_closest_marker("native")
    if native is not None and (report.when == "call" or report.failed):
        check = str(native.args[0])
        framework = getattr(getattr(item, "cls", None), "framework", None)
        known = framework is not None and check in framework.native_fails
        seen = (
            "failed"
            if report.failed
            else "skipped"
            if report.skipped
            else "fails"
            if known
            else "passed"
        )
        if _native.get(check) != "failed":
            _native[check] = seen
    mark = item.get_closest_marker("matrix")
    if mark is None or (report.when != "call" and not (report.failed or report.skipped)):
        return report
    check = str(mark.args[0])
    outcome = (
        "passed"
        if report.passed
        else "xfailed"
        if hasattr(report, "wasxfail")
        else "skipped"
        if report.skipped
        else "failed"
    )
    if report.when == "call" or outcome != "passed":
        previous = _outcomes.get(check)
        if previous is None or previous == "passed" or outcome == "failed":
            _outcomes[check] = outcome
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    if OUT is None or not _frameworks:
        return
    (framework,) = _frameworks  # one framework per session: each has its own virtualenv
    record = {
        "name": framework.name,
        "versions": framework.versions(),
        "checks": _outcomes,
        "native": _native,
    }
    Path(OUT).parent.mkdir(parents=True, exist_ok=True)
    Path(OUT).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
