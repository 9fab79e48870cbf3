"""Durable runs: the event log a server with a store keeps every run in.

* `base`: the contract every backend provides (`EventLog`), the run record, cursors, retention.
* `memory`: `memory://`, one process (the embedded default).
* `sqlite`: `sqlite:///PATH`, one machine, survives a restart.
* `redis`: `redis://HOST:PORT/DB`, many workers and machines (`pip install 'agui-spec[redis]'`).

`open_log(url)` picks the backend by the URL's scheme and imports only that one.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

from agui.errors import MissingExtraError, missing_modules, require_extra

from .base import (
    Cursor,
    EventBatch,
    EventLog,
    ExactEvents,
    NumberedCursors,
    Retention,
    RunExists,
    RunRecord,
    RunStatus,
    StoredEvent,
    StoreError,
    StoreUnavailable,
    ThreadBusy,
    ThreadSummary,
    UnknownRun,
    Usage,
)

__all__ = [
    "Cursor",
    "EventBatch",
    "EventLog",
    "ExactEvents",
    "NumberedCursors",
    "Retention",
    "RunExists",
    "RunRecord",
    "RunStatus",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "ThreadBusy",
    "ThreadSummary",
    "UnknownRun",
    "Usage",
    "open_log",
]

SCHEMES = ("memory", "sqlite", "redis", "rediss")
"""The URL schemes open_log knows."""


def open_log(url: str, *, retention: Retention | None = None) -> EventLog:
    """The event log at `url`: `memory://`, `sqlite:///PATH` (a relative PATH after the three
    slashes, an absolute one after four: `sqlite:////var/lib/agui/runs.db`), or
    `redis://[:PASSWORD@]HOST:PORT/DB` (also `rediss://` for TLS; a `?prefix=NAME:` query names
    the keys' prefix, `agui:` by default). `retention` says what the log keeps (the defaults of
    `Retention` otherwise). Raises StoreError for an unknown scheme or a URL the backend cannot
    use, and for `redis://` when the redis extra is not installed."""
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise StoreError(f"not a store URL: {url!r} ({error})") from None
    scheme = parts.scheme.lower()
    if scheme == "memory":
        if parts.netloc or parts.path or parts.query:
            raise StoreError(f"memory:// takes nothing after the scheme: {url!r}")
        from .memory import MemoryLog

        return MemoryLog(retention)
    if scheme == "sqlite":
        if parts.netloc or not parts.path.startswith("/") or len(parts.path) < 2:
            raise StoreError(f"a SQLite store URL is sqlite:///PATH: {url!r}")
        if parts.query:
            raise StoreError(f"a SQLite store URL takes no query: {url!r}")
        path = parts.path[1:]
        if path == ":memory:":
            raise StoreError("sqlite:///:memory: is not supported: use memory://")
        from .sqlite import SQLiteLog

        return SQLiteLog(path, retention)
    if scheme in ("redis", "rediss"):
        query = parse_qs(parts.query, keep_blank_values=True)
        prefix = query.pop("prefix", ["agui:"])[-1]
        if query:
            raise StoreError(f"a Redis store URL takes only ?prefix=: {url!r}")
        if not parts.hostname:
            raise StoreError(f"a Redis store URL is redis://HOST:PORT/DB: {url!r}")
        try:
            _ = parts.port
        except ValueError:
            raise StoreError(f"not a port in {url!r}") from None
        database = parts.path.lstrip("/")
        if database and not database.isdigit():
            raise StoreError(f"a Redis database is a number: {url!r}")
        try:
            require_extra("redis", "a redis:// store")
            from .redis import RedisLog
        except MissingExtraError as missing:
            raise StoreError(str(missing)) from None
        except ImportError as error:  # installed, but not a redis-py this backend can use
            raise StoreError(
                f"redis:// needs the redis extra: pip install 'agui-spec[redis]' ({error})"
            ) from None
        if missing_modules(("hiredis",)):
            logging.getLogger("agui.store").warning(
                "redis:// without hiredis: replies are parsed in pure Python, slower; "
                "pip install 'agui-spec[redis]' brings it"
            )
        plain = parts._replace(query="").geturl()
        return RedisLog(plain, retention, prefix=prefix)
    known = ", ".join(f"{name}://" for name in SCHEMES)
    raise StoreError(f"unknown store URL scheme in {url!r} (known: {known})")
