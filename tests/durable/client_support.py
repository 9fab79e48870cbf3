"""What the client's durable tests run against: `TinyLog`, a durable server in miniature (a run's
events kept in a list, sent with `id:`, resumable at `GET {path}/runs/{runId}/events`), and
`CuttingProxy`, a TCP proxy on loopback that cuts connections after a given number of bytes of
the answer, as a dropped mobile link does.

TinyLog is deliberately simple (cursors are the event's number, "1", "2", ...), so the client's
tests do not depend on the real server; the same tests also run against AgentApp with a store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, unquote

import orjson

import agui

Script = Callable[[agui.RunAgentInput], list[dict[str, Any]]]


def long_script(input: agui.RunAgentInput, *, texts: int = 3, deltas: int = 40) -> list[Any]:
    """A run of a few hundred events: text messages streamed in many deltas, a tool call with its
    result, a state snapshot and deltas, and RUN_FINISHED."""
    thread, run = input.thread_id, input.run_id
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "STATE_SNAPSHOT", "snapshot": {"count": 0, "words": []}},
    ]
    for t in range(texts):
        message = f"{run}-text-{t}"
        events.append({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"})
        for d in range(deltas):
            events.append(
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": f"w{t}.{d} "}
            )
            if d % 10 == 0:
                events.append(
                    {
                        "type": "STATE_DELTA",
                        "delta": [
                            {"op": "replace", "path": "/count", "value": t * deltas + d},
                            {"op": "add", "path": "/words/-", "value": f"w{t}.{d}"},
                        ],
                    }
                )
        events.append({"type": "TEXT_MESSAGE_END", "messageId": message})
    call = f"{run}-call"
    events += [
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "lookup"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": '{"q":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": '"x"}'},
        {"type": "TOOL_CALL_END", "toolCallId": call},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"{run}-result",
            "toolCallId": call,
            "content": "42",
        },
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
    ]
    return events


class TinyLog:
    """An ASGI durable server in miniature, at `path`:

    * POST {path}: the run's events (from `script(input)`) are produced in the background, one
      every `pace` seconds, into the run's log; the answer is the live tail, every frame with
      `id: <n>` (unless `ids` is False: a server without a store). `end_after`: the POST's answer
      ends cleanly after that many frames, the run going on.
    * GET {path}/runs/{runId}/events: the events after `Last-Event-ID` (or `?after=`), then live
      until the terminal event; 404 for an unknown run.
    * POST {path}/runs/{runId}/stop: 202, 409 once the run ended, 404 for an unknown run.

    `requests` lists every request as (method, path, Last-Event-ID or after).
    """

    def __init__(
        self,
        script: Script = long_script,
        *,
        ids: bool = True,
        pace: float = 0.0,
        end_after: int | None = None,
        path: str = "/agent",
        resumable: bool = True,
    ) -> None:
        self.script = script
        self.ids = ids
        self.resumable = resumable
        self.pace = pace
        self.end_after = end_after
        self.path = path
        self.logs: dict[str, list[bytes]] = {}
        self.done: set[str] = set()
        self.stopped: set[str] = set()
        self.requests: list[tuple[str, str, str | None]] = []
        self._changed: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method, path = scope["method"], scope["path"]
        headers = dict(scope["headers"])
        after = headers.get(b"last-event-id", b"").decode() or None
        query = parse_qs(scope.get("query_string", b"").decode())
        if after is None and "after" in query:
            after = query["after"][0]
        self.requests.append((method, path, after))
        parts = path[len(self.path) :].split("/")
        if method == "POST" and path == self.path:
            run_input = agui.decode(body, agui.RunAgentInput)
            self._start(run_input)
            await self._tail(send, run_input.run_id, None, limit=self.end_after)
        elif method == "GET" and len(parts) == 4 and parts[1] == "runs" and parts[3] == "events":
            run_id = unquote(parts[2])
            if run_id not in self.logs:
                await _json(send, 404, {"error": f"Unknown run {run_id}"})
            else:
                await self._tail(send, run_id, after, limit=None)
        elif method == "POST" and len(parts) == 4 and parts[1] == "runs" and parts[3] == "stop":
            run_id = unquote(parts[2])
            if run_id not in self.logs:
                await _json(send, 404, {"error": f"Unknown run {run_id}"})
            elif run_id in self.done:
                await _json(send, 409, {"error": f"Run {run_id} has already finished"})
            else:
                self.stopped.add(run_id)
                await _json(send, 202, {"runId": run_id, "status": "stopping"})
        else:
            await _json(send, 404, {"error": "Not found"})

    def _start(self, run_input: agui.RunAgentInput) -> None:
        run_id = run_input.run_id
        self.logs[run_id] = []
        self._changed[run_id] = asyncio.Event()
        events = [orjson.dumps(e) for e in self.script(run_input)]
        task = asyncio.get_running_loop().create_task(self._produce(run_id, run_input, events))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _produce(
        self, run_id: str, run_input: agui.RunAgentInput, events: list[bytes]
    ) -> None:
        log = self.logs[run_id]
        for index, event in enumerate(events):
            if run_id in self.stopped and index < len(events) - 1:
                finished = {"type": "RUN_FINISHED", "threadId": run_input.thread_id}
                finished |= {"runId": run_id, "outcome": {"type": "cancelled"}}
                log.append(orjson.dumps(finished))
                break
            log.append(event)
            self._changed[run_id].set()
            if self.pace:
                await asyncio.sleep(self.pace)
            elif index % 50 == 49:
                await asyncio.sleep(0)
        self.done.add(run_id)
        self._changed[run_id].set()

    async def _tail(self, send: Any, run_id: str, after: str | None, *, limit: int | None) -> None:
        if after is not None and not (after.isdigit() and int(after) <= len(self.logs[run_id])):
            await _json(send, 400, {"error": f"Unknown event id {after}"})
            return
        headers = [(b"content-type", b"text/event-stream")]
        if self.resumable:
            headers.append((b"agui-resumable", b"1"))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        log, changed = self.logs[run_id], self._changed[run_id]
        at = 0 if after is None else int(after)
        sent = 0
        while True:
            changed.clear()
            while at < len(log) and (limit is None or sent < limit):
                at += 1
                sent += 1
                head = f"id: {at}\n".encode() if self.ids else b""
                await send(
                    {
                        "type": "http.response.body",
                        "body": head + b"data: " + log[at - 1] + b"\n\n",
                        "more_body": True,
                    }
                )
            if (run_id in self.done and at == len(log)) or (limit is not None and sent >= limit):
                break
            await changed.wait()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _json(send: Any, status: int, body: dict[str, Any]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": orjson.dumps(body)})


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 in its own thread, in front of `upstream` ("http://host:port...").
    The i-th connection it accepts is cut (both sides aborted) after `cuts[i]` bytes of the answer
    (0: before any byte); connections past the list, or with None, are passed through whole.
    `url(original)` is the original URL with the proxy's address. `connections` counts those
    accepted."""

    def __init__(self, upstream: str, cuts: Sequence[int | None] = ()) -> None:
        authority = upstream.split("://", 1)[1].split("/", 1)[0]
        host, _, port = authority.rpartition(":")
        self.upstream = (host, int(port))
        self.cuts = list(cuts)
        self.connections = 0
        self._handlers: set[asyncio.Task[None]] = set()
        """The handlers of open connections, held: once a client has closed its side (an idle
        pooled connection it closes), nothing else refers to the handler's task, which the
        garbage collector would then destroy while it waits for the server."""
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def url(self, original: str) -> str:
        scheme, rest = original.split("://", 1)
        _, slash, path = rest.partition("/")
        return f"{scheme}://127.0.0.1:{self.port}{slash}{path}"

    def __enter__(self) -> CuttingProxy:
        self._thread.start()
        server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop
        ).result(10)
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            self._server.close()
            await self._server.wait_closed()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            await self._relay(reader, writer)
        finally:
            self._handlers.discard(handler)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = self.connections
        self.connections += 1
        limit = self.cuts[index] if index < len(self.cuts) else None
        if limit == 0:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return

        def cut() -> None:
            writer.transport.abort()
            up_writer.transport.abort()

        async def upstream() -> None:
            try:
                while data := await reader.read(65536):
                    up_writer.write(data)
                    await up_writer.drain()
            except (ConnectionError, OSError):
                pass

        async def downstream() -> None:
            passed = 0
            try:
                while data := await up_reader.read(65536):
                    if limit is not None and passed + len(data) >= limit:
                        writer.write(data[: limit - passed])
                        await writer.drain()
                        return
                    passed += len(data)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass

        pump = asyncio.ensure_future(upstream())
        try:
            await downstream()
        except asyncio.CancelledError:
            pass  # the proxy is closing (a handler that ends cancelled is logged as an error)
        finally:
            cut()
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)


@contextmanager
def proxied(url: str, cuts: Sequence[int | None]) -> Iterator[tuple[str, CuttingProxy]]:
    """A CuttingProxy in front of `url`; yields the URL through it and the proxy."""
    with CuttingProxy(url, cuts) as proxy:
        yield proxy.url(url), proxy
