"""The dev console: a page in the browser to talk to an agent and watch its runs.

`AgentApp(agent, console=True)` serves it at `GET {path}/console` (`agui serve` turns it on). The
page is the files next to this module, package data served as they are: `index.html`,
`console.css` and the ES modules `*.js` (hand-written, no build step, no framework); nothing is
fetched from anywhere but the app's own origin, so it works offline. It talks to the agent like
any client: `POST {path}` read as Server-Sent Events, `GET {path}/capabilities`, and with a store
the durable routes. One more file is made here, `events.json`: the protocol version the page declares in its
inputs, and for each event type of the protocol its members, and which are required, read from
the generated models, so the page can say what a tolerant client strips from an event.

Every answer carries a strict Content-Security-Policy (`CONTENT_SECURITY_POLICY`: scripts,
styles and connections of the app's own origin only, no inline script or style, no eval), and
`X-Content-Type-Options: nosniff`; each file has an ETag, so a reload costs a 304.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Any

__all__ = ["CONTENT_SECURITY_POLICY", "Console"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page's policy: nothing inline, nothing evaluated, nothing from another origin."""

_TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".json": b"application/json",
    ".svg": b"image/svg+xml",
}
_PAGE = "index.html"
_NAME = re.compile(r"[a-z][a-z0-9-]*\.[a-z]+")
_SUFFIX = "/console"

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Console:
    """The console's files, read once, and the answer to a request for one of them."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, bytes, bytes]] = {}  # name -> (type, body, etag)
        for entry in resources.files(__package__).iterdir():
            suffix = "." + entry.name.rpartition(".")[2]
            if entry.is_file() and suffix in _TYPES and _NAME.fullmatch(entry.name):
                self._add(entry.name, entry.read_bytes())
        from agui_generated import PROTOCOL_VERSION

        table = {"protocolVersion": PROTOCOL_VERSION, "events": event_members()}
        self._add("events.json", json.dumps(table, sort_keys=True).encode())

    def _add(self, name: str, body: bytes) -> None:
        etag = b'"' + hashlib.sha256(body).hexdigest()[:20].encode() + b'"'
        self.files[name] = (_TYPES["." + name.rpartition(".")[2]], body, etag)

    def file_for(self, path: str, base: str | None) -> str | None:
        """The file a GET of `path` asks for ("" for `{base}/console/`), or None when the path is
        not the console's. `base` is the agent's path (None: any path, the console at any path
        ending in /console)."""
        if base is None:
            # the folder is the segment before the file's name, which may itself start with
            # "console" (console.css)
            if path.endswith(_SUFFIX) or path.endswith(_SUFFIX + "/"):
                at = path.rindex(_SUFFIX)
            else:
                folder, _, name = path.rpartition("/")
                if not folder.endswith(_SUFFIX) or name not in self.files:
                    return None
                return name
        else:
            at = len(base.rstrip("/"))
            if not path.startswith(base.rstrip("/") + _SUFFIX):
                return None
        rest = path[at + len(_SUFFIX) :]
        if rest == "":
            return _PAGE
        if rest == "/":
            return ""
        if not rest.startswith("/"):
            return None
        name = rest[1:]
        return name if "/" not in name else None

    async def serve(self, name: str, scope: MutableMapping[str, Any], send: Send) -> None:
        """Answer a GET or HEAD for `name` (from `file_for`)."""
        security = [
            (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
        ]
        if name == "":  # {path}/console/: the page's relative links need {path}/console
            headers = [(b"location", b"../console"), (b"content-length", b"0"), *security]
            await send({"type": "http.response.start", "status": 308, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        found = self.files.get(name)
        if found is None:
            body = json.dumps({"error": f"the console has no file {name!r}"}).encode()
            headers = [(b"content-type", b"application/json"), *security]
            await send({"type": "http.response.start", "status": 404, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        kind, body, etag = found
        headers = [
            (b"content-type", kind),
            (b"cache-control", b"no-cache"),
            (b"etag", etag),
            *security,
        ]
        asked = dict(scope.get("headers") or ()).get(b"if-none-match")
        status = (
            304 if asked is not None and etag in [tag.strip() for tag in asked.split(b",")] else 200
        )
        if status == 304 or scope.get("method") == "HEAD":
            body = b""
        if status == 200:
            headers.append((b"content-length", str(len(found[1])).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def event_members() -> dict[str, dict[str, list[str]]]:
    """For each event type, its members as they are on the wire: {"required": [...],
    "optional": [...]} (`type` is neither: every event has it). A constant member (the `role` of
    REASONING_MESSAGE_START) is required."""
    import attrs
    from agui_generated.codec import TAGS

    table: dict[str, dict[str, list[str]]] = {}
    for tag, model in TAGS["Event"].items():
        required: list[str] = []
        optional: list[str] = []
        for field in attrs.fields(model):
            wire = field.metadata.get("wire", field.name)
            (required if field.default is attrs.NOTHING else optional).append(wire)
        for name, hint in vars(model).get("__annotations__", {}).items():
            if name != "type" and "ClassVar" in str(hint):  # a constant member ("role")
                head, *rest = name.split("_")
                required.append(head + "".join(part.title() for part in rest))
        table[tag] = {"required": required, "optional": optional}
    return table
