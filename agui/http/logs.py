"""Logs for an operator: a JSON formatter for log pipelines, and uvicorn logging configurations
that include agui's loggers.

`agui serve --log-format json` (AGUI_LOG_FORMAT=json) writes every line, uvicorn's and agui's, as
one JSON object on stderr. Under plain uvicorn the same comes from its logging configuration:
`uvicorn module:app --log-config logging.json`, a file holding `log_config("json")` (or a
configuration of your own naming `agui.http.logs.JsonFormatter`), or `uvicorn.run(app,
log_config=log_config("json"))`.

Each object has `time` (UTC, ISO 8601 with milliseconds), `level`, `logger` and `message`; a
record with an `agui` attribute has those fields too: the line a run's end logs (agent, thread,
run, outcome, code, events, duration, client, trace) and every other line about a run
(agui.observe.runlog.about_run: agent, thread, run, and code when the server ended the run
with one); uvicorn's access lines have `client`, `method`, `path`, `status`; an error logged with its exception has `exception`, the traceback.
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any, Literal

import orjson

__all__ = ["LOG_FORMATS", "JsonFormatter", "log_config"]

LOG_FORMATS = ("text", "json")
"""The values of `agui serve --log-format`."""

_RESERVED = frozenset(("time", "level", "logger", "message", "exception", "stack"))


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON (see the module docstring); never a newline inside it."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "agui", None)
        if isinstance(fields, dict):
            line.update((k, v) for k, v in fields.items() if k not in _RESERVED)
        elif record.name == "uvicorn.access" and isinstance(record.args, tuple):
            if len(record.args) == 5:
                client, method, path, _, status = record.args
                line.update(client=client, method=method, path=path, status=status)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(line, default=str).decode()


def _utc(created: float) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{seconds}.{int(created % 1 * 1000):03d}Z"


def log_config(log_format: Literal["text", "json"] = "text", level: str = "info") -> dict[str, Any]:
    """uvicorn's logging configuration (uvicorn.config.LOGGING_CONFIG) with agui's loggers at
    `level` on its default handler (stderr), every line in `log_format`: text as uvicorn writes
    it, json through JsonFormatter. For `uvicorn --log-config FILE` (write it as JSON) or
    `uvicorn.run(..., log_config=...)`."""
    from uvicorn.config import LOGGING_CONFIG

    if log_format not in LOG_FORMATS:
        raise ValueError(f"the log format is text or json, not {log_format!r}")
    config = copy.deepcopy(LOGGING_CONFIG)
    numeric = "DEBUG" if level.lower() == "trace" else level.upper()
    config["loggers"]["agui"] = {"handlers": ["default"], "level": numeric, "propagate": False}
    if log_format == "json":
        for name in ("default", "access"):
            config["formatters"][name] = {"()": "agui.http.logs.JsonFormatter"}
    return config
