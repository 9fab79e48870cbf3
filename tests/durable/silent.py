"""`silent:app` for `agui serve` (this folder is the `--app-dir`): the `paced` agent at /agent on
a Redis store whose every timeout is AGUI_TEST_TIMEOUT seconds (connect, socket, XREAD BLOCK,
health check, TCP keep-alive), with SSE keep-alive comments as often and a lease of
AGUI_TEST_LEASE seconds. AGUI_TEST_STORE is the store's URL (`redis://...?prefix=NAME:`)."""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlsplit

from agents import paced  # type: ignore[import-not-found]  # the --app-dir module

import agui
from agui.store.redis import RedisLog


def _app() -> agui.AgentApp | None:
    url = os.environ.get("AGUI_TEST_STORE")
    if not url:
        return None
    timeout = float(os.environ["AGUI_TEST_TIMEOUT"])
    parts = urlsplit(url)
    prefix = parse_qs(parts.query).get("prefix", ["agui:"])[-1]
    log = RedisLog(
        parts._replace(query="").geturl(),
        prefix=prefix,
        connect_timeout=timeout,
        socket_timeout=timeout,
        block=timeout,
        health_check_interval=timeout,
        keepalive=timeout,
    )
    return agui.AgentApp(
        paced,
        path="/agent",
        store=log,
        lease_seconds=float(os.environ["AGUI_TEST_LEASE"]),
        keepalive=timeout,
    )


app = _app()
