"""The ASGI server: one Agent at one path, streamed as Server-Sent Events (or as protobuf frames
when the request asks for them: Accept naming application/vnd.ag-ui.event+proto).

`AgentApp(agent)` runs on its own under uvicorn or mounts into Starlette / FastAPI
(`app.mount("/agent", AgentApp(agent))`). It validates the request before any event is sent and
wraps every run in a correct lifecycle: RUN_STARTED first, exactly one RUN_FINISHED or RUN_ERROR
last, whatever the agent does.

Three tasks serve a run: the producer drives the agent and queues frames, the sender writes them
(taking everything already queued at once and coalescing it into writes, so nothing waits), and a
watcher reads the ASGI `receive` channel for `http.disconnect` and stops the run when the client
leaves (uvicorn does not raise on a send after a disconnect). A keep-alive comment goes out after
`keepalive` seconds of silence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from agui_generated import (
    DecodeError,
    Problem,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    UnknownEvent,
)

from agui.agent.protocol import Agent, InputValidator
from agui.errors import AguiError, EncodeError
from agui.stream.lifecycle import INVALID_EVENT, run_error, run_lifecycle, run_started
from agui.wire.codec import decode
from agui.wire.proto import PROTO_MEDIA_TYPE, accepts_proto, proto_frame
from agui.wire.sse import KEEPALIVE, sse_frame

__all__ = ["AgentApp"]

log = logging.getLogger("agui.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_TERMINAL = frozenset((RunFinishedEvent, RunErrorEvent))
_STREAM_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
# Exactly the media type, no parameters: the TypeScript client compares the string exactly.
_PROTO_HEADERS = [
    (b"content-type", PROTO_MEDIA_TYPE.encode()),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_VARY = (b"vary", b"accept")
_WRITE_BYTES = 64 * 1024  # coalesce queued frames into writes of at most about this size
_MAX_LISTED_PROBLEMS = 50


class _BadRequest(AguiError):
    """A request refused before any event is sent; answered with `status` and a JSON body."""

    def __init__(self, status: int, error: str, problems: tuple[Problem, ...] = ()) -> None:
        self.status, self.error, self.problems = status, error, problems


class AgentApp:
    """An ASGI application serving `agent` (see the module docstring).

    path: the one path served (None: any path, for mounting). max_body_bytes: the largest request
    body accepted (413 beyond). keepalive: seconds of silence before a keep-alive comment (None: off).
    strict_input: decode the body strictly (unknown members rejected) instead of tolerantly.
    protobuf: answer with the binary transport when the Accept header names
    application/vnd.ag-ui.event+proto with a q above 0 (wildcards do not count); False: always SSE.
    A binary stream has no keep-alive (the format has no frame that means nothing).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        path: str | None = None,
        max_body_bytes: int = 8 * 1024 * 1024,
        keepalive: float | None = 15.0,
        strict_input: bool = False,
        queue_size: int = 1024,
        protobuf: bool = True,
    ) -> None:
        self.agent = agent
        self.path = path
        self.max_body_bytes = max_body_bytes
        self.keepalive = keepalive
        self.strict_input = strict_input
        self.queue_size = queue_size
        self.protobuf = protobuf
        self._validator = agent if isinstance(agent, InputValidator) else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            run_input = await self._request(scope, receive)
        except _BadRequest as bad:
            await _json_response(send, bad.status, _error_body(bad), bad.status == 405)
            return
        if run_input is None:  # the client left while sending its body
            return
        binary = self.protobuf and any(
            k.lower() == b"accept" and accepts_proto(v) for k, v in scope["headers"]
        )
        await self._respond(run_input, receive, send, binary)

    # ── the request ──────────────────────────────────────────────────────────
    async def _request(self, scope: Scope, receive: Receive) -> RunAgentInput | None:
        if self.path is not None and self.path not in (scope["path"], _relative(scope)):
            raise _BadRequest(
                404, f"nothing is served at {scope['path']}; the agent is at {self.path}"
            )
        if scope["method"] != "POST":
            raise _BadRequest(405, "only POST is allowed: send a RunAgentInput as JSON")
        headers = {k.lower(): v for k, v in scope["headers"]}
        media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if media != b"application/json" and not media.endswith(b"+json"):
            raise _BadRequest(415, "the body must be JSON (Content-Type: application/json)")
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _BadRequest(413, f"the body is larger than {self.max_body_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _BadRequest(413, f"the body is larger than {self.max_body_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        warnings: list[Problem] = []
        try:
            run_input = decode(
                b"".join(chunks), RunAgentInput, strict=self.strict_input, warnings=warnings
            )
        except DecodeError as exc:
            raise _BadRequest(400, "the body is not a valid RunAgentInput", exc.problems) from None
        for warning in warnings:
            log.warning("request body: %s", warning)
        # An agent with a validate(input) method can refuse a run before the stream opens.
        refused = tuple(self._validator.validate(run_input)) if self._validator else ()
        if refused:
            raise _BadRequest(400, "the agent cannot run this input", refused)
        return run_input

    # ── the stream ───────────────────────────────────────────────────────────
    async def _respond(
        self, run_input: RunAgentInput, receive: Receive, send: Send, binary: bool = False
    ) -> None:
        headers = _PROTO_HEADERS if binary else _STREAM_HEADERS
        if self.protobuf:
            headers = [*headers, _VARY]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        outbox = _Outbox(self.queue_size)
        clock = _Clock()
        producer = asyncio.create_task(self._produce(run_input, outbox, binary))
        sender = asyncio.create_task(_send_frames(outbox, send, clock))
        watcher = asyncio.create_task(_wait_for_disconnect(receive))
        tasks = [producer, sender, watcher]
        if self.keepalive is not None and not binary:
            tasks.append(asyncio.create_task(_keep_alive(outbox, clock, self.keepalive)))
        try:
            await asyncio.wait((sender, watcher), return_when=asyncio.FIRST_COMPLETED)
            if watcher.done() and not sender.done():
                log.info(
                    "client disconnected from run %s; the agent is cancelled", run_input.run_id
                )
        finally:
            for task in tasks:
                task.cancel()
            for result in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(result, Exception):
                    log.error("streaming run %s failed", run_input.run_id, exc_info=result)

    async def _produce(
        self, run_input: RunAgentInput, outbox: _Outbox, binary: bool = False
    ) -> None:
        """Drive the agent through the run lifecycle; queue its frames; None marks the end."""
        put = outbox.put
        frame_of = proto_frame if binary else sse_frame
        sent = False
        stream = run_lifecycle(self.agent, run_input)
        try:
            async for event in stream:
                if binary and type(event) is UnknownEvent:
                    # an event of a type the binary form has no arm for cannot be sent
                    log.warning(
                        "run %s: dropped an event of unknown type %r (no protobuf form)",
                        run_input.run_id,
                        event.type,
                    )
                    continue
                try:
                    frame = frame_of(event)
                except EncodeError:
                    log.exception(
                        "run %s: the agent sent an event that cannot be encoded", run_input.run_id
                    )
                    if not sent:  # the RUN_STARTED itself could not be written
                        await put(frame_of(run_started(run_input)))
                    await put(
                        frame_of(run_error("The agent produced an invalid event.", INVALID_EVENT))
                    )
                    await put(None)
                    return
                sent = True
                await put(frame)
                if type(event) in _TERMINAL:
                    # End the response now: the client is done even if the agent is not. The
                    # lifecycle drops (and logs) whatever the agent still yields.
                    await put(None)
        finally:
            await stream.aclose()


class _Outbox:
    """The frames queued for the sender: the producer appends one at a time (waiting while `limit`
    are queued), the sender takes everything queued at once.

    A list and two events rather than an asyncio.Queue: a queue costs several method calls per
    frame on each side, about a sixth of the server's time on a fast stream of small events.
    """

    __slots__ = ("_drained", "_filled", "_frames", "_limit")

    def __init__(self, limit: int) -> None:
        self._frames: list[bytes | None] = []
        self._limit = max(1, limit)
        self._filled = asyncio.Event()  # set when frames may be waiting
        self._drained = asyncio.Event()  # set when there may be room
        self._drained.set()

    def empty(self) -> bool:
        return not self._frames

    def put_nowait(self, frame: bytes | None) -> None:
        """Queue a frame regardless of the limit (the keep-alive, into an empty outbox)."""
        self._frames.append(frame)
        self._filled.set()

    async def put(self, frame: bytes | None) -> None:
        while len(self._frames) >= self._limit:
            self._drained.clear()
            await self._drained.wait()
        self._frames.append(frame)
        self._filled.set()

    async def take(self) -> list[bytes | None]:
        """Everything queued, in order; waits until there is something."""
        while not self._frames:
            self._filled.clear()
            await self._filled.wait()
        frames, self._frames = self._frames, []
        self._drained.set()
        return frames


class _Clock:
    """When the sender last wrote, for the keep-alive task."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last = asyncio.get_running_loop().time()


async def _send_frames(outbox: _Outbox, send: Send, clock: _Clock) -> None:
    """Write what is queued, joined into writes of about _WRITE_BYTES, until the None frame."""
    loop = asyncio.get_running_loop()
    done = False
    while not done:
        chunks: list[bytes] = []
        size = 0
        for frame in await outbox.take():
            if frame is None:
                done = True
                break
            chunks.append(frame)
            size += len(frame)
            if size >= _WRITE_BYTES:
                await _send_body(send, chunks)
                clock.last = loop.time()
                chunks, size = [], 0
        if chunks:
            await _send_body(send, chunks)
            clock.last = loop.time()
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _send_body(send: Send, chunks: list[bytes]) -> None:
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def _keep_alive(outbox: _Outbox, clock: _Clock, interval: float) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(max(0.0, clock.last + interval - loop.time()))
        if loop.time() - clock.last >= interval and outbox.empty():
            outbox.put_nowait(KEEPALIVE)
            clock.last = loop.time()


async def _wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _json_response(send: Send, status: int, body: dict[str, Any], allow_post: bool) -> None:
    headers = [(b"content-type", b"application/json")]
    if allow_post:
        headers.append((b"allow", b"POST"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": orjson.dumps(body), "more_body": False})


def _error_body(bad: _BadRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"error": bad.error}
    if bad.problems:
        listed = bad.problems[:_MAX_LISTED_PROBLEMS]
        body["problems"] = [
            {"pointer": p.pointer, "kind": p.kind, "message": p.message} for p in listed
        ]
        if len(bad.problems) > len(listed):
            body["more"] = len(bad.problems) - len(listed)
    return body


def _relative(scope: Scope) -> str:
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path
