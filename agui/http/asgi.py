"""The ASGI primitives every endpoint of agui.http shares: the types of the interface, a request
refused before anything is streamed (`BadRequest`) and its JSON answer, the path and the query of a
request, the writes of a response's body, and the ASGI lifespan protocol."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from typing import Any
from urllib.parse import parse_qs

import orjson
from agui_generated import Problem

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ALLOW_POST = ((b"allow", b"POST"),)
ALLOW_GET = ((b"allow", b"GET"),)
RETRY_AFTER = ((b"retry-after", b"1"),)
CLOSE = ((b"connection", b"close"),)
_MAX_LISTED_PROBLEMS = 50


class BadRequest(Exception):
    """A request refused before any event is sent; answered with `status`, a JSON body and the
    extra `headers` (Allow, Retry-After, Connection: close). `details`: more members of the
    body, after `error` (a quota's limit and usage). An internal signal, answered by the server:
    no AguiError, which is what callers catch."""

    def __init__(
        self,
        status: int,
        error: str,
        problems: tuple[Problem, ...] = (),
        headers: tuple[tuple[bytes, bytes], ...] = (),
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.status, self.error, self.problems, self.headers = status, error, problems, headers
        self.details = details


async def json_response(
    send: Send, status: int, body: dict[str, Any], extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    headers = [(b"content-type", b"application/json"), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": orjson.dumps(body), "more_body": False})


def error_body(bad: BadRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"error": bad.error}
    if bad.details:
        body.update(bad.details)
    if bad.problems:
        listed = bad.problems[:_MAX_LISTED_PROBLEMS]
        body["problems"] = [
            {"pointer": p.pointer, "kind": p.kind, "message": p.message} for p in listed
        ]
        if len(bad.problems) > len(listed):
            body["more"] = len(bad.problems) - len(listed)
    return body


def relative_path(scope: Scope) -> str:
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def query_params(scope: Scope) -> dict[str, str]:
    """The request's query parameters, each by its last value."""
    raw = scope.get("query_string", b"")
    pairs = parse_qs(raw.decode("latin-1"), keep_blank_values=True)
    return {key: values[-1] for key, values in pairs.items()}


async def send_body(send: Send, chunks: list[bytes]) -> None:
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def answer_lifespan(
    receive: Receive, send: Send, context: contextlib.AbstractAsyncContextManager[None]
) -> None:
    """Answer the ASGI lifespan protocol: `context` entered at the startup, exited at the
    shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await context.__aenter__()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await context.__aexit__(None, None, None)
            await send({"type": "lifespan.shutdown.complete"})
            return


Lifespan = Callable[[Any], contextlib.AbstractAsyncContextManager[Any]]


def nested_lifespan(outer: Lifespan, inner: Lifespan) -> Lifespan:
    """A Starlette lifespan: `outer`'s (the application's, whose state it yields), with
    `inner` entered inside it."""

    @contextlib.asynccontextmanager
    async def nested(app: Any) -> AsyncIterator[Any]:
        async with outer(app) as state, inner(app):
            yield state

    return nested
