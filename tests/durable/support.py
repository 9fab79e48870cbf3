"""Helpers for the durable-runs tests: request bodies for the `paced` agent, an SSE reader that can
hang up after N events, `agui serve` processes, and a fault hook that cuts a response.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from agui import SSEDecoder

HERE = Path(__file__).resolve().parent
AGUI = Path(sys.executable).parent / "agui"
STARTUP = 60.0
"""Seconds an `agui serve` process may take to print its "serving" line."""
JSON = {"content-type": "application/json"}


def body(
    run_id: str,
    thread_id: str = "t1",
    *,
    count: int = 10,
    delay: float = 0.0,
    every: int = 1,
    state: bool = False,
    text: str = "hi",
    history: list[dict[str, Any]] | None = None,
) -> bytes:
    """A RunAgentInput for the `paced` agent: `history` then one user message."""
    messages = [*(history or []), {"id": f"user-{run_id}", "role": "user", "content": text}]
    return json.dumps(
        {
            "threadId": thread_id,
            "runId": run_id,
            "messages": messages,
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {"count": count, "delay": delay, "every": every, "state": state},
        }
    ).encode()


class Frame(NamedTuple):
    id: str | None
    event: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.event["type"])


class Answer(NamedTuple):
    status: int
    headers: httpx.Headers
    frames: list[Frame]
    body: bytes
    """The body of an answer that is not an event stream."""
    broken: bool = False
    """The connection broke before the end of the response."""


def stream(
    url: str,
    *,
    method: str = "GET",
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    stop_after: int | None = None,
    timeout: float = 30.0,
) -> Answer:
    """Send the request and read the SSE answer, hanging up after `stop_after` events (None: to
    the end)."""
    frames: list[Frame] = []
    with (
        httpx.Client(timeout=timeout) as client,
        client.stream(
            method, url, content=content, headers={**(JSON if content else {}), **(headers or {})}
        ) as response,
    ):
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return Answer(response.status_code, response.headers, [], response.read())
        decoder = SSEDecoder()
        try:
            for chunk in response.iter_raw():
                for message in decoder.feed(chunk):
                    frames.append(Frame(message.id, json.loads(message.data)))
                    if stop_after is not None and len(frames) >= stop_after:
                        return Answer(response.status_code, response.headers, frames, b"")
        except (httpx.RemoteProtocolError, httpx.ReadError):
            return Answer(response.status_code, response.headers, frames, b"", broken=True)
        for message in decoder.close():
            frames.append(Frame(message.id, json.loads(message.data)))
        return Answer(response.status_code, response.headers, frames, b"")


RESUMES = {"agui-resume": "1"}
"""What a client that resumes cut streams sends with its POST (agui's HttpAgent does): the run
goes on when the client leaves (AgentApp's detach)."""


def post(url: str, content: bytes, *, resumes: bool = True, **options: Any) -> Answer:
    """POST a run as a client that resumes cut streams (`resumes=False`: as one that does not,
    such as @ag-ui/client, whose run is stopped when it leaves)."""
    headers = {**(RESUMES if resumes else {}), **(options.pop("headers", None) or {})}
    return stream(url, method="POST", content=content, headers=headers, **options)


def deltas(frames: list[Frame]) -> list[str]:
    return [f.event["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT"]


def types(frames: list[Frame]) -> list[str]:
    return [f.type for f in frames]


def wait_for(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(interval)


class Tail(threading.Thread):
    """A response read in a thread (a run's POST, a resume, a connect), its frames as they come
    with the time each arrived."""

    def __init__(self, method: str, url: str, content: bytes | None = None) -> None:
        super().__init__(daemon=True)
        self.method, self.url, self.content = method, url, content
        self.frames: list[Frame] = []
        self.times: list[float] = []
        self.done = threading.Event()
        self.broken = False
        self.start()

    def run(self) -> None:
        decoder = SSEDecoder()
        try:
            with (
                httpx.Client(timeout=60) as client,
                client.stream(
                    self.method, self.url, content=self.content, headers=JSON
                ) as response,
            ):
                for chunk in response.iter_raw():
                    for message in decoder.feed(chunk):
                        self.frames.append(Frame(message.id, json.loads(message.data)))
                        self.times.append(time.monotonic())
        except (httpx.RemoteProtocolError, httpx.ReadError):
            self.broken = True
        finally:
            self.done.set()

    def wait(self, timeout: float = 30.0) -> list[Frame]:
        assert self.done.wait(timeout), f"the response did not end: {self.frames[-3:]}"
        return self.frames


class Served:
    """`agui serve ARGS` in a subprocess with this folder as --app-dir; its stderr is read line
    by line in a thread."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        environ["PYTHONUNBUFFERED"] = "1"
        environ.update(env or {})
        self.proc = subprocess.Popen(
            [str(AGUI), "serve", "--app-dir", str(HERE), "--port", "0", *args],
            cwd=HERE,
            env=environ,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.url = self._url()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.stderr.append(line)
                self.lines.put(line)
        self.lines.put(None)

    def _url(self) -> str:
        """The base URL of the "serving" line, path included (waits for it)."""
        while True:
            line = self.lines.get(timeout=STARTUP)
            assert line is not None, "agui serve exited: " + "".join(self.stderr)
            if line.startswith("{"):  # --log-format json
                line = json.loads(line)["message"]
            found = re.search(r"http://\S+", line)
            if line.startswith("serving ") and found:
                return found.group(0)

    def kill(self) -> None:
        """kill -9."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(STARTUP)

    def stop(self, sig: int = signal.SIGINT) -> int:
        """SIGINT (Ctrl-C) or `sig`; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(STARTUP)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(STARTUP)
        return self.proc.returncode


def served_processes() -> Iterator[Any]:
    """A fixture body: `start(*args, env=...)` starts `agui serve`; all are stopped at the end."""
    running: list[Served] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Served:
        running.append(Served(*args, env=env))
        return running[-1]

    yield start
    for one in running:
        one.stop()


class CutAfter:
    """A fault hook for tests: the ASGI app `app`, whose first `times` responses are cut (the
    connection closed without the end of the response) after `events` SSE events have been
    written; for a client's transparent resume."""

    def __init__(self, app: Any, events: int, times: int = 1) -> None:
        self.app = app
        self.events = events
        self.times = times

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.times <= 0:
            await self.app(scope, receive, send)
            return
        self.times -= 1
        sent = 0
        cut = False

        class Cut(Exception):
            pass

        async def cutting(message: Any) -> None:
            nonlocal sent, cut
            if cut:
                raise Cut
            if message["type"] == "http.response.body":
                body: bytes = message.get("body", b"")
                count = body.count(b"\n\n")
                if sent + count >= self.events and message.get("more_body", False):
                    # write up to the end of event number `events`, then hang up
                    keep = body
                    for _ in range(count - (sent + count - self.events)):
                        keep = keep[keep.index(b"\n\n") + 2 :]
                    head = body[: len(body) - len(keep)]
                    cut = True
                    await send({**message, "body": head})
                    raise Cut
                sent += count
            await send(message)

        try:
            await self.app(scope, receive, cutting)
        except Cut:
            return  # returning without ending the response makes uvicorn close the connection
