"""Lines about a run: each ends with the run's fields (agent, thread, run, code...) as key=value
pairs, and carries the same fields in the record's `agui` attribute, members of the JSON object
agui.http.logs.JsonFormatter writes. The run lifecycle (agui.stream) and the server (agui.http)
both log through it, so it sits below both. Code that runs inside a run without knowing the
server's view of it (a model agent, an adapter) asks `run_fields`: the fields the server set for
the run's task, else the thread and run it names."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import orjson

__all__ = ["RUN_FIELDS", "about_run", "logfmt", "run_fields"]

RUN_FIELDS: ContextVar[Mapping[str, object] | None] = ContextVar("agui_run_fields", default=None)
"""The fields of the run the current task executes (agent, thread, run), set by the server in the
context of the task that runs the agent; None outside a served run."""


def run_fields(thread: str | None = None, run: str | None = None) -> Mapping[str, object]:
    """What a line about the current run carries: the server's fields for the run this task
    executes (RUN_FIELDS), else `thread` and `run` (an agent run without a server)."""
    fields = RUN_FIELDS.get()
    return {"thread": thread, "run": run} if fields is None else fields


_PLAIN = re.compile(r"[A-Za-z0-9_.:/@+-]+")


def logfmt(fields: Mapping[str, object]) -> str:
    """`fields` as key=value pairs; a value as it is when plain, else as a JSON string (no space,
    quote, newline or control character of a client's id can forge another field or line), None
    as `-`."""
    return " ".join(f"{key}={_value(value)}" for key, value in fields.items())


def _value(value: object) -> str:
    if value is None:
        return "-"
    text = str(value)
    if _PLAIN.fullmatch(text):
        return text
    return orjson.dumps(text).decode()


def about_run(
    logger: logging.Logger,
    level: int,
    fields: Mapping[str, object],
    message: str,
    *args: object,
    exc_info: Any = None,
) -> None:
    """Log a line about a run: `message % args`, then `: ` and the run's `fields` (agent, thread,
    run, code...) as key=value, so a text log has them; the same fields in the record's `agui`
    attribute, members of the JsonFormatter's object."""
    if logger.isEnabledFor(level):
        logger.log(
            level,
            f"{message}: %s",
            *args,
            logfmt(fields),
            exc_info=exc_info,
            extra={"agui": dict(fields)},
            stacklevel=2,
        )
