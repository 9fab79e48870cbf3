"""Cross-origin calls (`AgentApp(cors_origins=...)`, `AgentServer(cors_origins=...)`): the origins
allowed, checked, and an ASGI app behind Starlette's CORSMiddleware."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from agui.errors import require_extra
from agui.http.asgi import ASGIApp

log = logging.getLogger("agui.server")

_ORIGIN = re.compile(r"[a-z][a-z0-9+.-]*://[^/?#\s]+")

CORS_REQUEST_HEADERS = ("Content-Type", "Accept", "Authorization", "Last-Event-ID", "Agui-Resume")
"""The request headers a page on another origin may send (`cors_origins`): the run's JSON body,
the transport it asks for, a bearer token, and the cursor a durable stream resumes after."""
CORS_EXPOSED_HEADERS = ("Retry-After", "Agui-Resumable")
"""The response headers such a page may read beyond the safelisted ones (Content-Type among
them): when to retry a refused run, and whether a cut stream can be resumed."""


def checked_origins(origins: Iterable[str]) -> tuple[str, ...]:
    """The origins CORS allows, checked: "*" or scheme://host[:port] (what a browser sends in
    Origin: no path, no trailing slash); ValueError otherwise."""
    if isinstance(origins, str):
        origins = (origins,)
    checked = tuple(dict.fromkeys(origins))
    for origin in checked:
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"{origin!r} is not an origin: give scheme://host[:port] as a browser sends it in "
                'Origin, such as "http://localhost:3000" (no path, no trailing slash), or "*" '
                "for any"
            )
    return checked


def with_cors(app: ASGIApp, origins: tuple[str, ...]) -> ASGIApp:
    """`app` behind Starlette's CORSMiddleware, allowing `origins`."""
    require_extra("server", "cors_origins (Starlette's CORSMiddleware)", ("starlette",))
    from starlette.middleware.cors import CORSMiddleware

    if "*" in origins:
        log.warning(
            "CORS: web pages of any origin may call this agent (cors_origins '*'); outside "
            "development, name the front end's origin"
        )
    return CORSMiddleware(
        app,
        allow_origins=origins,
        allow_methods=("GET", "POST", "DELETE"),  # DELETE: a thread (agui.http.threads)
        allow_headers=CORS_REQUEST_HEADERS,
        expose_headers=CORS_EXPOSED_HEADERS,
    )
